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
    // created = fired + cancelled + pending; no interval ticked yet.
    assert_eq!(value(&text, &format!("hw_created_total{l}")), 4.0);
    assert_eq!(value(&text, &format!("hw_ticks_total{l}")), 0.0);
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

/// A recorder that counts what it is asked: registrations, operations, and
/// the samples they carry (one a call, `record_many`'s count for that).
#[derive(Default)]
struct Counting {
    calls: std::sync::atomic::AtomicU64,
    samples: std::sync::atomic::AtomicU64,
}

impl Counting {
    fn add(&self, samples: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.calls.fetch_add(1, Relaxed);
        self.samples.fetch_add(samples, Relaxed);
    }

    fn take(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.calls.swap(0, Relaxed), self.samples.swap(0, Relaxed))
    }
}

/// The handles of [`CountingRecorder`], counting into it.
struct Handle(std::sync::Arc<Counting>);

impl metrics::CounterFn for Handle {
    fn increment(&self, _: u64) {
        self.0.add(1);
    }
    fn absolute(&self, _: u64) {
        self.0.add(1);
    }
}

impl metrics::GaugeFn for Handle {
    fn increment(&self, _: f64) {
        self.0.add(1);
    }
    fn decrement(&self, _: f64) {
        self.0.add(1);
    }
    fn set(&self, _: f64) {
        self.0.add(1);
    }
}

impl metrics::HistogramFn for Handle {
    fn record(&self, _: f64) {
        self.0.add(1);
    }
    fn record_many(&self, _: f64, count: usize) {
        self.0.add(count as u64);
    }
}

struct CountingRecorder(std::sync::Arc<Counting>);

impl metrics::Recorder for CountingRecorder {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        self.0.add(0);
        metrics::Counter::from_arc(std::sync::Arc::new(Handle(self.0.clone())))
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        self.0.add(0);
        metrics::Gauge::from_arc(std::sync::Arc::new(Handle(self.0.clone())))
    }
    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        self.0.add(0);
        metrics::Histogram::from_arc(std::sync::Arc::new(Handle(self.0.clone())))
    }
}

/// Stats whose lateness histogram holds `fires` values, all 1.5 ms late
/// (one bucket), and as many fired.
fn stats_with(fires: u64) -> Stats {
    let mut one = hashwheel::Lateness::new();
    one.record(Duration::from_micros(1_500));
    let mut lateness = hashwheel::Lateness::new();
    // `fires` copies of `one`, by doubling.
    let mut power = one;
    let mut left = fires;
    while left > 0 {
        if left & 1 == 1 {
            lateness.merge(&power);
        }
        let copy = power;
        power.merge(&copy);
        left >>= 1;
    }
    assert_eq!(lateness.count(), fires);
    let mut stats = Stats::default();
    stats.fired = fires;
    stats.lateness = lateness;
    stats
}

/// Issue 37, item 5: `record` asks the recorder the same work however many
/// timeouts fired. Each bucket's count went to `Histogram::record_many`,
/// which the Prometheus recorder (and the trait's default) stores as one
/// sample per fire: 10,000,000 fires, 10,000,000 samples.
#[test]
fn record_costs_the_recorder_the_same_for_10_or_10_million_fires() {
    let counting = std::sync::Arc::new(Counting::default());
    let recorder = CountingRecorder(counting.clone());
    let mut costs = Vec::new();
    for fires in [10, 1_000, 100_000, 10_000_000] {
        let mut exporter = MetricsExporter::new("hw").label("timer", "t");
        metrics::with_local_recorder(&recorder, || exporter.record(&stats_with(fires)));
        costs.push((fires, counting.take()));
    }
    let (_, first) = costs[0];
    for &(fires, cost) in &costs {
        assert_eq!(
            cost, first,
            "{fires} fires: (calls, samples) {cost:?}, 10 fires: {first:?}"
        );
    }
    let (calls, samples) = first;
    assert!(
        calls <= 40 && samples <= 20,
        "{calls} calls carrying {samples} samples"
    );
}

/// With the Prometheus recorder (which held one sample per fire: 168 MB
/// and 26 s to render for 10,000,000; the cost itself is the bench
/// `metrics_export`'s): the text for 10 and for 10,000,000 fires has the
/// same series, the count and sum of each, and the same quantiles, within
/// the histogram's 1/32.
#[test]
fn the_prometheus_text_has_the_quantiles_count_and_sum_for_10_or_10_million_fires() {
    let mut sizes = Vec::new();
    for fires in [10, 10_000_000] {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let mut exporter = MetricsExporter::new("hw").label("timer", "t1");
        metrics::with_local_recorder(&recorder, || exporter.record(&stats_with(fires)));
        handle.run_upkeep();
        let text = handle.render();
        let l = "{timer=\"t1\"}";
        assert_eq!(
            value(&text, &format!("hw_lateness_seconds_count{l}")),
            fires as f64
        );
        assert_eq!(value(&text, &format!("hw_fired_total{l}")), fires as f64);
        for q in ["0", "0.5", "0.99", "1"] {
            let p = value(
                &text,
                &format!("hw_lateness_seconds{{timer=\"t1\",quantile=\"{q}\"}}"),
            );
            assert!(
                (p - 0.0015).abs() <= 0.0015 / 32.0,
                "quantile {q}: {p}\n{text}"
            );
        }
        let sum = value(&text, &format!("hw_lateness_seconds_sum{l}"));
        let exact = 0.0015 * fires as f64;
        assert!(
            sum >= exact && sum <= exact * (1.0 + 1.0 / 32.0),
            "sum {sum}"
        );
        sizes.push(text.len());
    }
    assert!(sizes[1] <= sizes[0] + 16, "{sizes:?} bytes");
}

/// Two timers recorded under the same labels sum: counters and the pending
/// gauge are added to (the fired total showed the larger of the two, where
/// the lateness count summed).
#[tokio::test(start_paused = true)]
async fn two_timers_under_the_same_labels_sum() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let (a, b) = (Timer::new(), Timer::new());
    let mut exporters = [
        MetricsExporter::new("hw").label("pool", "p"),
        MetricsExporter::new("hw").label("pool", "p"),
    ];
    a.sleep(Duration::from_millis(1)).await;
    for _ in 0..3 {
        b.sleep(Duration::from_millis(1)).await;
    }
    let _pending = (
        a.sleep(Duration::from_secs(9)),
        b.sleep(Duration::from_secs(9)),
    );
    let _more = b.sleep(Duration::from_secs(9));
    let record = |exporters: &mut [MetricsExporter; 2]| {
        metrics::with_local_recorder(&recorder, || {
            exporters[0].record(&a.stats());
            exporters[1].record(&b.stats());
        });
        handle.run_upkeep();
        handle.render()
    };
    let text = record(&mut exporters);
    let l = "{pool=\"p\"}";
    assert_eq!(value(&text, &format!("hw_fired_total{l}")), 4.0, "{text}");
    assert_eq!(value(&text, &format!("hw_lateness_seconds_count{l}")), 4.0);
    assert_eq!(value(&text, &format!("hw_pending{l}")), 3.0);
    // And again after more fired on one, and one pending was dropped.
    a.sleep(Duration::from_millis(1)).await;
    drop(_more);
    let text = record(&mut exporters);
    assert_eq!(value(&text, &format!("hw_fired_total{l}")), 5.0, "{text}");
    assert_eq!(value(&text, &format!("hw_lateness_seconds_count{l}")), 5.0);
    assert_eq!(value(&text, &format!("hw_pending{l}")), 2.0);
}
