//! The thread driver (feature `thread`, `Builder::driver_thread`): timeouts,
//! intervals and callbacks from any executor or none, on the real clock.
//!
//! Real-clock tests: they assert order and never-early, with generous
//! bounds for "it came", never tight timings (the bench measures those).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use futures::executor::{block_on, ThreadPool};
use futures::task::SpawnExt;
use futures::StreamExt;
use hashwheel::{TaskExecutor, Timer};

/// "It came", generously: a loaded CI machine may stall a thread for long.
const SOON: Duration = Duration::from_secs(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn thread_timer(tick: Duration) -> Timer {
    Timer::builder()
        .tick(tick)
        .shards(2)
        .driver_thread()
        .build()
        .unwrap()
}

/// A cheap deterministic pseudo-random sequence (xorshift).
fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed | 1;
    move |n| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

#[test]
fn builds_and_fires_without_any_runtime() {
    let timer = thread_timer(ms(1));
    let start = Instant::now();
    block_on(timer.sleep(ms(20)));
    assert!(start.elapsed() >= ms(20), "early: {:?}", start.elapsed());
    assert_eq!(timer.pending(), 0);
    assert_eq!(timer.stats().fired, 1);
}

#[test]
fn with_timeout_on_block_on_expires_exactly_at_or_after_its_deadline() {
    let timer = thread_timer(ms(1));
    let start = Instant::now();
    let res = block_on(timer.timeout(ms(15), futures::future::pending::<()>()));
    assert!(res.is_err());
    assert!(start.elapsed() >= ms(15));
    let ok = block_on(timer.timeout(ms(500), async { 7 }));
    assert_eq!(ok.unwrap(), 7);
}

/// Never early, at every tick from 10 µs to 1 ms (issue 23 item 5), on the
/// real clock: sequential sleeps of random lengths, each measured.
#[test]
fn never_early_at_ticks_from_10us_to_1ms() {
    for tick in [us(10), us(50), us(100), us(250), ms(1)] {
        let timer = thread_timer(tick);
        assert_eq!(timer.tick(), tick, "ticks from 10 µs are honoured");
        let mut next = rng(tick.as_nanos() as u64);
        for _ in 0..60 {
            let d = us(next(1_500));
            let start = Instant::now();
            block_on(timer.sleep(d));
            let took = start.elapsed();
            assert!(took >= d, "tick {tick:?}: slept {took:?} for {d:?}");
            assert!(took < SOON, "tick {tick:?}: {d:?} never came");
        }
        // And by deadline, in order, from one thread.
        let base = Instant::now();
        let deadlines: Vec<Instant> = (0..20).map(|i| base + us(100 + 97 * i)).collect();
        for &deadline in &deadlines {
            block_on(timer.sleep_until(deadline));
            assert!(Instant::now() >= deadline, "tick {tick:?}: early");
        }
    }
}

/// Issue 27: a tick under 10 µs quietly became 10 µs; it is an error, and
/// 10 µs itself is kept.
#[test]
fn a_tick_below_10us_is_an_error() {
    let err = Timer::builder()
        .tick(Duration::from_nanos(9_999))
        .driver_thread()
        .build()
        .unwrap_err();
    assert!(err.is_invalid_config());
    assert_eq!(
        err.to_string(),
        "invalid timer configuration: a thread-driven timer's tick must be at least 10µs, \
         got 9.999µs"
    );
    let timer = Timer::builder()
        .tick(us(10))
        .driver_thread()
        .build()
        .unwrap();
    assert_eq!(timer.tick(), us(10));
    assert!(Timer::builder()
        .tick(Duration::ZERO)
        .driver_thread()
        .build()
        .is_err());
}

#[test]
fn plain_threads_each_blocking_on_their_own_sleeps() {
    let timer = thread_timer(us(100));
    let handles: Vec<_> = (0..8u64)
        .map(|t| {
            let timer = timer.clone();
            thread::spawn(move || {
                let mut next = rng(t + 1);
                for _ in 0..25 {
                    let d = us(next(3_000));
                    let start = Instant::now();
                    block_on(timer.sleep(d));
                    assert!(start.elapsed() >= d, "early");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(timer.pending(), 0);
}

/// 10,000 concurrent timeouts on a 2-thread `futures` pool: each completes
/// exactly once, none early.
#[test]
fn ten_thousand_concurrent_timeouts_on_a_futures_thread_pool() {
    const N: usize = 10_000;
    let timer = thread_timer(ms(1));
    let pool = ThreadPool::builder().pool_size(2).create().unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let mut next = rng(42);
    for i in 0..N {
        let d = ms(1 + next(200));
        let (timer, done, tx) = (timer.clone(), done.clone(), tx.clone());
        pool.spawn(async move {
            let start = Instant::now();
            timer.sleep(d).await;
            let took = start.elapsed();
            assert!(took >= d, "timeout {i} early: {took:?} < {d:?}");
            if done.fetch_add(1, Ordering::SeqCst) + 1 == N {
                tx.send(()).unwrap();
            }
        })
        .unwrap();
    }
    rx.recv_timeout(SOON * 3).expect("every timeout completed");
    assert_eq!(done.load(Ordering::SeqCst), N, "exactly once each");
    let stats = timer.stats();
    assert_eq!(stats.fired, N as u64);
    assert_eq!(stats.pending, 0);
    // Batched: far fewer turns than timeouts.
    assert!(stats.driver_wakeups < N as u64, "{stats:?}");
}

/// Inside a tokio runtime too (a thread-driven timer works there, on the
/// real clock), and from tokio tasks on 2 workers.
#[test]
fn works_inside_a_tokio_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let timer = thread_timer(us(50));
    let tasks: Vec<_> = (0..100u64)
        .map(|i| {
            let timer = timer.clone();
            rt.spawn(async move {
                let d = us(200 + 37 * i);
                let start = Instant::now();
                timer.sleep(d).await;
                assert!(start.elapsed() >= d);
            })
        })
        .collect();
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(timer.stats().fired, 100);
}

#[test]
fn drop_cancels() {
    let timer = thread_timer(ms(1));
    let t = timer.sleep(ms(30));
    let mut polled = timer.sleep(ms(30));
    // Registered in the wheel by a poll.
    assert!(futures::FutureExt::now_or_never(&mut polled).is_none());
    assert_eq!(timer.pending(), 2);
    drop(t);
    drop(polled);
    assert_eq!(timer.pending(), 0);
    let ran = Arc::new(AtomicUsize::new(0));
    let flag = ran.clone();
    let task = timer.schedule(ms(20), move || {
        flag.fetch_add(1, Ordering::SeqCst);
    });
    assert!(task.cancel());
    block_on(timer.sleep(ms(60)));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a cancelled task never runs");
    let stats = timer.stats();
    assert_eq!(stats.cancelled, 3, "{stats:?}");
}

#[test]
fn reset_both_ways() {
    let timer = thread_timer(us(100));
    // Later: not before the new deadline.
    let mut t = timer.sleep(ms(5));
    assert!(futures::FutureExt::now_or_never(&mut t).is_none());
    let start = Instant::now();
    t.reset(ms(40));
    block_on(&mut t);
    assert!(start.elapsed() >= ms(40), "fired at the old deadline");
    // Earlier: a timer armed for an hour wakes for the new deadline.
    let mut t = timer.sleep(Duration::from_secs(3600));
    assert!(futures::FutureExt::now_or_never(&mut t).is_none());
    let start = Instant::now();
    t.reset(ms(10));
    block_on(&mut t);
    let took = start.elapsed();
    assert!(took >= ms(10) && took < SOON, "{took:?}");
    // After it fired, a reset makes it pending again.
    t.reset(ms(5));
    let start = Instant::now();
    block_on(&mut t);
    assert!(start.elapsed() >= ms(5));
}

/// The classic lost wake-up: the driver sleeps for a far deadline, and a
/// nearer one comes in from another thread. It must wake for it.
#[test]
fn a_new_earliest_deadline_wakes_the_sleeping_driver() {
    let timer = thread_timer(us(50));
    let mut far = timer.sleep(Duration::from_secs(3600));
    assert!(futures::FutureExt::now_or_never(&mut far).is_none());
    thread::sleep(ms(5)); // the driver is asleep for the far one
    for i in 0..50u64 {
        let timer = timer.clone();
        let d = us(100 + 13 * i);
        let took = thread::spawn(move || {
            let start = Instant::now();
            block_on(timer.sleep(d));
            start.elapsed()
        })
        .join()
        .unwrap();
        assert!(took >= d && took < SOON, "{took:?} for {d:?}");
    }
    drop(far);
}

#[test]
fn callbacks_run_on_the_driver_thread_by_default() {
    let timer = thread_timer(ms(1));
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let task = timer.schedule(ms(10), move || {
        tx.send((thread::current().name().map(String::from), Instant::now()))
            .unwrap();
    });
    let (name, at) = rx.recv_timeout(SOON).unwrap();
    assert_eq!(name.as_deref(), Some("hashwheel-timer"));
    assert!(at - start >= ms(10));
    assert!(task.is_expired());
    // A custom executor gets them instead.
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let custom = Timer::builder()
        .driver_thread()
        .task_executor(TaskExecutor::custom(move |callback| {
            counter.fetch_add(1, Ordering::SeqCst);
            thread::spawn(callback);
        }))
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    custom.schedule(ms(2), move || tx.send(()).unwrap());
    rx.recv_timeout(SOON).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
fn interval_ticks_in_order_never_early() {
    let timer = thread_timer(us(100));
    let start = Instant::now();
    let period = ms(3);
    let ticks: Vec<Instant> = block_on(timer.interval(period).take(6).collect());
    for (n, tick) in ticks.iter().enumerate() {
        assert_eq!(*tick, ticks[0] + period * n as u32, "nominal instants");
    }
    assert!(start.elapsed() >= period * 5, "early");
}

#[test]
fn stop_completes_what_is_pending_and_ends_the_timer() {
    let timer = thread_timer(ms(1));
    let mut t = timer.sleep(Duration::from_secs(3600));
    assert!(futures::FutureExt::now_or_never(&mut t).is_none());
    let waiter = {
        let timer = timer.clone();
        thread::spawn(move || block_on(timer.timeout(ms(3_600_000), std::future::pending::<()>())))
    };
    thread::sleep(ms(10));
    let tasks = timer.stop();
    assert!(tasks.is_empty());
    assert!(t.is_expired() || futures::FutureExt::now_or_never(&mut t).is_some());
    let res = waiter.join().unwrap();
    assert!(res.is_err(), "the timeout completed when the timer stopped");
    assert!(timer.try_sleep(ms(1)).unwrap_err().is_stopped());
}

/// With nothing pending the driver never wakes; with one far timer, once
/// at most (its arm), not on every tick.
#[test]
fn idle_costs_no_wake_ups() {
    let timer = thread_timer(us(50));
    thread::sleep(ms(100));
    assert_eq!(timer.stats().driver_wakeups, 0, "idle");
    let mut far = timer.sleep(Duration::from_secs(3600));
    assert!(futures::FutureExt::now_or_never(&mut far).is_none());
    thread::sleep(ms(100));
    let woke = timer.stats().driver_wakeups;
    assert!(woke <= 1, "{woke} wake-ups with one far timer");
    // Work on a few ticks: one turn per tick with work, not per tick.
    for _ in 0..5 {
        block_on(timer.sleep(ms(2)));
    }
    let turns = timer.stats().driver_wakeups - woke;
    assert!((5..=15).contains(&turns), "{turns} turns for 5 sleeps");
    drop(far);
}

#[test]
fn timer_and_futures_are_send_sync_unpin() {
    fn assert_send_sync<T: Send + Sync + Unpin>() {}
    assert_send_sync::<Timer>();
    assert_send_sync::<hashwheel::Timeout>();
    assert_send_sync::<hashwheel::Interval>();
}

/// With tokio on too: `TaskExecutor::spawn` on a thread-driven timer needs
/// a runtime to spawn on (the current one at build, or `Builder::handle`),
/// and is an error without one.
#[cfg(feature = "tokio")]
#[test]
fn spawned_callbacks_on_a_thread_driven_timer_need_a_runtime() {
    let err = Timer::builder()
        .driver_thread()
        .task_executor(TaskExecutor::spawn())
        .build()
        .unwrap_err();
    assert!(err.is_invalid_config());
    assert!(err.to_string().contains("needs a tokio runtime"), "{err}");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("spawned-here")
        .build()
        .unwrap();
    let timer = Timer::builder()
        .driver_thread()
        .handle(rt.handle().clone())
        .task_executor(TaskExecutor::spawn())
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    timer.schedule(ms(2), move || {
        tx.send(thread::current().name().map(String::from)).unwrap();
    });
    let name = rx.recv_timeout(SOON).unwrap();
    assert_eq!(name.as_deref(), Some("spawned-here"), "ran on the runtime");
}
