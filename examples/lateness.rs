//! How late timeouts fire, two ways: the timer's own figure
//! (`Stats::lateness`: deadline to the driver's wake) and the whole, as a
//! task sees it (the instant it resumes less its deadline, workload W12's
//! way). The gap between them is the runtime's scheduling delay after the
//! wake, which the timer cannot see.
//!
//! ```text
//! cargo run --release --example lateness
//! ```
//!
//! 1,000 tasks on a 2-worker runtime each sleep 50–2,000 µs in a loop for
//! 2 seconds on the default `Timer`.

use std::time::Duration;

use hashwheel::{Lateness, Timer};
use tokio::time::Instant;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    const TASKS: u64 = 1_000;
    const RUN: Duration = Duration::from_secs(2);
    let timer = Timer::new();
    let before = timer.stats().lateness;
    let end = Instant::now() + RUN;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let timer = timer.clone();
            tokio::spawn(async move {
                // What this task saw: a histogram of its own.
                let mut seen = Lateness::new();
                let mut x = task.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                while Instant::now() < end {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let d = Duration::from_micros(50 + x % 1_951);
                    let deadline = Instant::now() + d;
                    timer.sleep_until(deadline).await;
                    seen.record(Instant::now() - deadline);
                }
                seen
            })
        })
        .collect();
    let mut seen = Lateness::new();
    for task in tasks {
        seen.merge(&task.await.unwrap());
    }
    let timer_side = timer.stats().lateness.since(&before);
    let show = |what: &str, h: &Lateness| {
        println!(
            "{what:<34} {:>7} sleeps: p50 {:>9.3?}, p99 {:>9.3?}, max {:>9.3?}",
            h.count(),
            h.quantile(0.5),
            h.quantile(0.99),
            h.max()
        );
    };
    show("timer (Stats::lateness)", &timer_side);
    show("task (resumed - deadline)", &seen);
    let gap = |q: f64| seen.quantile(q).saturating_sub(timer_side.quantile(q));
    println!(
        "the runtime's scheduling delay after the wake: about {:.3?} at p50, {:.3?} at p99",
        gap(0.5),
        gap(0.99)
    );
}
