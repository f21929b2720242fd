//! Timers without tokio: a `futures` thread pool and `block_on`, with a
//! thread-driven `Timer` and futures-timer's `Delay`.
//!
//! ```text
//! cargo run --no-default-features --features thread --example any_executor
//! ```
//!
//! (With tokio on too, `--features thread`, it runs the same: the timer has
//! its own thread either way.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::executor::{block_on, ThreadPool};
use futures::task::SpawnExt;
use hashwheel::{Delay, Timer};

fn main() {
    // One timer for the program, driven by a thread of its own.
    let timer = Timer::builder().driver_thread().build().unwrap();
    let pool = ThreadPool::builder().pool_size(2).create().unwrap();

    // A request-timeout wrapper, as a service would use it: 1,000 requests,
    // every tenth too slow for its 20 ms deadline.
    let timed_out = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let requests: Vec<_> = (0..1_000u64)
        .map(|i| {
            let (timer, timed_out) = (timer.clone(), timed_out.clone());
            pool.spawn_with_handle(async move {
                let work = if i % 10 == 0 { 50 } else { 1 };
                let request = Delay::new(Duration::from_millis(work));
                if timer
                    .timeout(Duration::from_millis(20), request)
                    .await
                    .is_err()
                {
                    timed_out.fetch_add(1, Ordering::Relaxed);
                }
            })
            .unwrap()
        })
        .collect();
    block_on(futures::future::join_all(requests));
    println!(
        "1,000 requests in {:?}: {} timed out (want 100)",
        start.elapsed(),
        timed_out.load(Ordering::Relaxed)
    );

    // A heartbeat, on the calling thread.
    block_on(async {
        use futures::StreamExt;
        let beats: Vec<Instant> = timer
            .interval(Duration::from_millis(5))
            .take(4)
            .collect()
            .await;
        println!("4 beats, {:?} apart", beats[1] - beats[0]);
    });

    // futures-timer's `Delay`, by its `use` line.
    let start = Instant::now();
    block_on(Delay::new(Duration::from_micros(500)));
    println!("Delay::new(500 µs) took {:?}", start.elapsed());
    println!("{:?}", timer.stats());
}
