//! A timer's statistics exported to the `metrics` facade, and what a
//! Prometheus exporter serves from them: 2,000 simulated connections with a
//! 100 ms heartbeat and request timeouts, for 3 seconds; every second,
//! `MetricsExporter::record` takes `Timer::stats()` and the example prints
//! the Prometheus text (`metrics-exporter-prometheus`, rendered here rather
//! than served over HTTP).
//!
//! ```text
//! cargo run -p hashwheel-integration --example metrics [-- SECONDS]
//! ```
//!
//! Lateness here is the timer's part (deadline to wake); see the example
//! `lateness` for the task's whole.

use std::time::Duration;

use hashwheel::{MetricsExporter, Timer};
use metrics_exporter_prometheus::PrometheusBuilder;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .map_or(3, |s| s.parse().expect("SECONDS: a whole number"));
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .expect("the first metrics recorder of the process");

    let timer = Timer::new();
    for conn in 0..2_000u64 {
        let timer = timer.clone();
        tokio::spawn(async move {
            let mut heartbeat = timer.interval(Duration::from_millis(100));
            let mut idle = timer.sleep(Duration::from_secs(30));
            loop {
                heartbeat.tick().await;
                idle.reset(Duration::from_secs(30));
                // A request that completes in time, and every seventh one
                // that times out.
                let work = Duration::from_millis(if conn % 7 == 0 { 20 } else { 1 });
                let _ = timer
                    .timeout(Duration::from_millis(10), tokio::time::sleep(work))
                    .await;
            }
        });
    }

    let mut exporter = MetricsExporter::new("hashwheel").label("timer", "connections");
    let mut every = timer.interval(Duration::from_secs(1));
    every.tick().await;
    for second in 1..=seconds {
        every.tick().await;
        exporter.record(&timer.stats());
        // A Prometheus server would scrape this from an HTTP endpoint
        // (`PrometheusBuilder::install` serves one).
        prometheus.run_upkeep();
        println!("# after {second} s");
        print!("{}", prometheus.render());
    }
}
