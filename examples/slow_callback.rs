//! A `schedule` callback that blocks for 300 ms, due at 10 ms, and two
//! 50 ms sleeps elsewhere in the program (one `tokio::time`, one hashwheel),
//! under each `TaskExecutor`, on a 2-worker runtime. Prints when each sleep
//! completed: on the driver the callback holds up the runtime's timer
//! processing, so both sleeps wait for it; spawned (the default) or on
//! `spawn_blocking` they complete on time.
//!
//! ```text
//! cargo run --release --example slow_callback
//! ```

use std::time::Duration;

use hashwheel::{TaskExecutor, Timer};
use tokio::time::Instant;

const BLOCK: Duration = Duration::from_millis(300);
const SLEEP: Duration = Duration::from_millis(50);

async fn one_run(name: &str, executor: TaskExecutor) {
    let timer = Timer::builder().task_executor(executor).build().unwrap();
    let (done, finished) = tokio::sync::oneshot::channel();
    let start = Instant::now();
    timer.schedule(Duration::from_millis(10), move || {
        std::thread::sleep(BLOCK); // a synchronous write, a slow lock...
        let _ = done.send(());
    });
    let tokio_sleep = tokio::spawn(async move {
        tokio::time::sleep(SLEEP).await;
        start.elapsed()
    });
    let wheel = timer.clone();
    let hashwheel_sleep = tokio::spawn(async move {
        wheel.sleep(SLEEP).await;
        start.elapsed()
    });
    let tokio_took = tokio_sleep.await.unwrap();
    let hashwheel_took = hashwheel_sleep.await.unwrap();
    finished.await.unwrap();
    println!(
        "{name:<24} tokio::time::sleep(50 ms) took {:>6.1} ms, hashwheel sleep(50 ms) {:>6.1} ms",
        tokio_took.as_secs_f64() * 1e3,
        hashwheel_took.as_secs_f64() * 1e3,
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Warm up the runtime's threads.
        tokio::time::sleep(Duration::from_millis(20)).await;
        for _ in 0..3 {
            one_run("driver (inline)", TaskExecutor::driver()).await;
            one_run("spawn (the default)", TaskExecutor::spawn()).await;
            let runtime = tokio::runtime::Handle::current();
            let blocking = TaskExecutor::custom(move |callback| {
                runtime.spawn_blocking(callback);
            });
            one_run("custom (spawn_blocking)", blocking).await;
        }
    });
}
