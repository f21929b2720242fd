//! Paces a loop at 250 µs on a thread-driven timer with a 50 µs tick, and
//! prints how late each wake-up was (never early), as percentiles.
//!
//! ```text
//! cargo run --release --no-default-features --features thread --example precise
//! ```
//!
//! A timer inside tokio's runtime fires on tokio's 1 ms timer: about a
//! millisecond late for such a loop. This one has a thread of its own,
//! sleeping on a timerfd on Linux (no kernel timer slack).

use std::time::{Duration, Instant};

use hashwheel::Timer;

fn main() {
    const PERIOD: Duration = Duration::from_micros(250);
    const ROUNDS: u32 = 4_000; // one second
    let timer = Timer::builder()
        .tick(Duration::from_micros(50))
        .driver_thread()
        .build()
        .unwrap();
    let start = Instant::now();
    let mut late = Vec::with_capacity(ROUNDS as usize);
    futures::executor::block_on(async {
        for n in 1..=ROUNDS {
            let deadline = start + PERIOD * n;
            timer.sleep_until(deadline).await;
            let now = Instant::now();
            assert!(now >= deadline, "early");
            late.push(now - deadline);
        }
    });
    late.sort_unstable();
    let at = |p: f64| late[((late.len() - 1) as f64 * p) as usize];
    println!(
        "{ROUNDS} wake-ups every {PERIOD:?}: lateness p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.9),
        at(0.99),
        late[late.len() - 1]
    );
    let stats = timer.stats();
    println!(
        "driver wake-ups: {} for {ROUNDS} sleeps",
        stats.driver_wakeups
    );
}
