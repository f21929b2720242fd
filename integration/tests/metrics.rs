//! `MetricsExporter` (feature `metrics`): what a Prometheus exporter serves
//! from a timer's `Stats`, recorded under paused time. In the workspace
//! member `hashwheel-integration` (the exporter stays out of the crate's own
//! dev-dependencies).

use std::time::Duration;

use hashwheel::{MetricsExporter, Stats, Timer};
use metrics_exporter_prometheus::PrometheusBuilder;

/// The value of the line of `text` that starts with `series` and a space.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn records_counters_gauges_and_the_lateness_of_each_interval() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let timer = Timer::new();
    let mut exporter = MetricsExporter::new("hw").label("timer", "t1");

    // Two timeouts 500 µs late (the runtime's timer rings on the
    // millisecond), one cancelled, one pending.
    timer.sleep(Duration::from_micros(1_500)).await;
    timer.sleep(Duration::from_micros(1_500)).await;
    drop(timer.sleep(Duration::from_secs(5)));
    let _pending = timer.sleep(Duration::from_secs(5));
    metrics::with_local_recorder(&recorder, || exporter.record(&timer.stats()));
    handle.run_upkeep();
    let text = handle.render();
    let l = "{timer=\"t1\"}";
    assert_eq!(value(&text, &format!("hw_pending{l}")), 1.0, "{text}");
    assert_eq!(value(&text, &format!("hw_fired_total{l}")), 2.0);
    assert_eq!(value(&text, &format!("hw_cancelled_total{l}")), 1.0);
    assert!(value(&text, &format!("hw_driver_wakeups_total{l}")) >= 2.0);
    assert_eq!(value(&text, &format!("hw_lateness_seconds_count{l}")), 2.0);
    assert_eq!(value(&text, &format!("hw_lateness_max_seconds{l}")), 0.0005);
    let p50 = value(&text, "hw_lateness_seconds{timer=\"t1\",quantile=\"0.5\"}");
    assert!((p50 - 0.0005).abs() < 0.0005 / 32.0, "{text}");
    assert!(text.contains("# HELP hw_lateness_seconds"), "{text}");

    // The next call adds only what fired since: one more, on time.
    timer.sleep(Duration::from_millis(2)).await;
    metrics::with_local_recorder(&recorder, || exporter.record(&timer.stats()));
    handle.run_upkeep();
    let text = handle.render();
    assert_eq!(
        value(&text, &format!("hw_lateness_seconds_count{l}")),
        3.0,
        "{text}"
    );
    assert_eq!(value(&text, &format!("hw_fired_total{l}")), 3.0);
}

#[test]
#[should_panic(expected = "not an earlier snapshot")]
fn a_snapshot_older_than_the_last_one_panics() {
    let old = Stats::default();
    let mut newer = old;
    newer.lateness.record(Duration::from_millis(1));
    let mut exporter = MetricsExporter::new("hw");
    exporter.record(&newer);
    exporter.record(&old);
}

#[test]
#[should_panic(expected = "prefix of the metric names is empty")]
fn an_empty_prefix_panics() {
    let _ = MetricsExporter::new("");
}
