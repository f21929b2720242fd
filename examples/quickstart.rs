//! A tour of hashwheel: first the `tokio::time` way (`hashwheel::time`'s
//! free functions on the runtime's default timer, switched by a `use`
//! line), then a `Timer` handle: schedule, cancel, reset and fire timeouts,
//! wrap a future with a deadline, and run a Netty-style callback.
//!
//! Keep a handle when you want several timers, a configured `Builder`
//! (tick, wheel size, `max_pending`), its stats, callbacks or the `try_`
//! methods; the free functions are enough for code written against
//! `tokio::time`.
//!
//! Run with `cargo run --release --example quickstart`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hashwheel::Timer;
use tokio::time::Instant;

#[tokio::main]
async fn main() {
    // 0. The `tokio::time` way: the same free functions, on this runtime's
    //    default timer. Was: `use tokio::time::{sleep, timeout};`
    {
        use hashwheel::time::{sleep, timeout};
        let start = Instant::now();
        sleep(Duration::from_millis(5)).await;
        let res = timeout(Duration::from_millis(5), std::future::pending::<()>()).await;
        println!(
            "[{:>4} ms] hashwheel::time: slept 5 ms, then timed out: {}; default timer fired {}",
            start.elapsed().as_millis(),
            res.is_err(),
            Timer::current().stats().fired
        );
    }

    // A handle of your own: configured, with stats, callbacks and `stop`.
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .wheel_size(512)
        .build()
        .expect("valid configuration");
    let start = Instant::now();
    let since = move || start.elapsed().as_millis();
    println!("timer: {timer:?}");

    // 1. Sleep: a timeout is a future.
    timer.sleep(Duration::from_millis(20)).await;
    println!("[{:>4} ms] slept 20 ms", since());

    // 2. Schedule many, cancel half: dropping a timeout cancels it at once.
    let mut timeouts: Vec<_> = (1..=10)
        .map(|i| timer.sleep(Duration::from_millis(10 * i)))
        .collect();
    println!(
        "[{:>4} ms] scheduled 10 timeouts, pending = {}",
        since(),
        timer.pending()
    );
    let cancelled = timeouts
        .drain(5..)
        .map(|t| t.cancel())
        .filter(|&was_pending| was_pending)
        .count();
    println!(
        "[{:>4} ms] cancelled {cancelled}, pending = {}",
        since(),
        timer.pending()
    );
    for t in timeouts {
        t.await;
    }
    println!(
        "[{:>4} ms] the other 5 fired, pending = {}",
        since(),
        timer.pending()
    );

    // 3. Reset: an idle timeout pushed back by three "messages".
    let mut idle = timer.sleep(Duration::from_millis(30));
    for msg in 1..=3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        idle.reset(Duration::from_millis(30));
        println!(
            "[{:>4} ms] message {msg}: idle timeout reset to +30 ms",
            since()
        );
    }
    (&mut idle).await;
    println!(
        "[{:>4} ms] idle timeout fired (expired = {})",
        since(),
        idle.is_expired()
    );

    // 4. A request with a deadline.
    let slow = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        "response"
    };
    match timer.timeout(Duration::from_millis(25), slow).await {
        Ok(v) => println!("[{:>4} ms] got {v}", since()),
        Err(e) => println!("[{:>4} ms] request failed: {e}", since()),
    }
    let fast = async { "response" };
    let got = timer.timeout(Duration::from_millis(25), fast).await;
    println!("[{:>4} ms] fast request: {got:?}", since());

    // 5. Netty-style callbacks, spawned as tasks when due (or run on the
    //    driver, or on your executor: `Builder::task_executor`).
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let kept = timer.schedule(Duration::from_millis(5), move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    let r = runs.clone();
    let dropped = timer.schedule(Duration::from_millis(5), move || {
        r.fetch_add(100, Ordering::SeqCst);
    });
    dropped.cancel();
    timer.sleep(Duration::from_millis(10)).await;
    println!(
        "[{:>4} ms] callbacks: ran = {}, kept expired = {}, dropped cancelled = {}",
        since(),
        runs.load(Ordering::SeqCst),
        kept.is_expired(),
        dropped.is_cancelled()
    );

    // 6. Stop: pending timeouts complete as cancelled, tasks come back.
    let mut left = timer.sleep(Duration::from_secs(60));
    let _never = timer.schedule(Duration::from_secs(60), || {});
    let never_ran = timer.stop();
    (&mut left).await;
    println!(
        "[{:>4} ms] stopped: {} task(s) never ran, timeout cancelled = {}, driver wake-ups = {}",
        since(),
        never_ran.len(),
        left.is_cancelled(),
        timer.driver_wakeups()
    );
}
