//! `hashwheel::Delay`, futures-timer 3's `Delay`: the same API, on any
//! executor, never early, exactly once. Real clock: bounds are generous.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use common::counting_waker;
use futures::executor::{block_on, ThreadPool};
use futures::task::SpawnExt;
use futures::FutureExt;
use hashwheel::Delay;

const SOON: Duration = Duration::from_secs(10);

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn the_api_of_futures_timer() {
    fn is_future<F: std::future::Future<Output = ()> + Unpin + Send + Sync + std::fmt::Debug>(
        f: F,
    ) -> F {
        f
    }
    let mut delay = is_future(Delay::new(ms(1)));
    delay.reset(ms(2));
    let start = Instant::now();
    block_on(&mut delay);
    assert!(start.elapsed() >= ms(2));
    assert!(format!("{delay:?}").starts_with("Delay"));
}

#[test]
fn never_early_sequentially_from_50us_to_2ms() {
    let mut x = 7u64;
    for _ in 0..150 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let d = us(50 + (x >> 33) % 1_950);
        let start = Instant::now();
        block_on(Delay::new(d));
        let took = start.elapsed();
        assert!(took >= d, "slept {took:?} for {d:?}");
        assert!(took < SOON);
    }
}

/// A zero delay is pending at its first poll, as futures-timer's is (its
/// helper thread fires even a zero delay), and wakes its task at once: it
/// is ready at the next poll. It used to be ready at once.
#[test]
fn a_zero_delay_is_pending_at_its_first_poll_and_ready_at_its_next() {
    let (wakes, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut zero = Delay::new(Duration::ZERO);
    assert_eq!(zero.poll_unpin(&mut cx), Poll::Pending);
    assert_eq!(wakes.wakes(), 1, "woken at once");
    assert_eq!(zero.poll_unpin(&mut cx), Poll::Ready(()));
    // Awaited, it completes.
    block_on(Delay::new(Duration::ZERO));
}

/// At most this many zero delays may pass before the other task runs:
/// one turn of the executor's queue.
const TURN: usize = 2;
/// Where a loop that never lets the other task run is cut short.
const CAP: usize = 1_000_000;

/// Awaits zero delays until `done` is set, at most [`CAP`] of them;
/// returns how many.
async fn zero_delays_until(done: &std::sync::atomic::AtomicBool) -> usize {
    let mut n = 0;
    while !done.load(Ordering::SeqCst) && n < CAP {
        Delay::new(Duration::ZERO).await;
        n += 1;
    }
    n
}

/// Issue 56, item 1: a loop of zero delays (a retry with zero backoff, or
/// `Delay::new(ZERO)` used as a yield) on a current-thread runtime, with
/// the task that ends it spawned first: the other task runs after one
/// delay, as with futures-timer's. A zero delay was ready at once and
/// spent no budget, so the loop never gave the thread up (capped at
/// 1,000,000, 3 of 3).
#[test]
fn a_loop_of_zero_delays_lets_other_tasks_run_on_a_current_thread_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let n = rt.block_on(async {
        let setter = done.clone();
        tokio::spawn(async move { setter.store(true, Ordering::SeqCst) });
        zero_delays_until(&done).await
    });
    assert!(n <= TURN, "the other task ran after {n} zero delays");
}

/// The same on `futures`' `LocalPool` (as on smol's executors): the task
/// spawned first runs after one zero delay of the loop.
#[test]
fn a_loop_of_zero_delays_lets_other_tasks_run_on_a_local_pool() {
    use futures::task::LocalSpawnExt;
    let mut pool = futures::executor::LocalPool::new();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let setter = done.clone();
    pool.spawner()
        .spawn_local(async move { setter.store(true, Ordering::SeqCst) })
        .unwrap();
    let n = pool.run_until(zero_delays_until(&done));
    assert!(n <= TURN, "the other task ran after {n} zero delays");
}

#[test]
fn exactly_once_and_drop_cancels() {
    let (waker, w) = counting_waker();
    let mut cx = Context::from_waker(&w);
    // Fires once: one wake, then ready (and stays ready).
    let mut delay = Delay::new(ms(3));
    assert!(delay.poll_unpin(&mut cx).is_pending());
    let start = Instant::now();
    while waker.wakes() == 0 && start.elapsed() < SOON {
        thread::sleep(us(200));
    }
    assert!(start.elapsed() < SOON);
    assert_eq!(delay.poll_unpin(&mut cx), Poll::Ready(()));
    assert_eq!(delay.poll_unpin(&mut cx), Poll::Ready(()));
    thread::sleep(ms(10));
    assert_eq!(waker.wakes(), 1, "woken exactly once");
    // Dropped while pending: never woken.
    let (dropped, w) = counting_waker();
    let mut delay = Delay::new(ms(3));
    assert!(delay.poll_unpin(&mut Context::from_waker(&w)).is_pending());
    drop(delay);
    thread::sleep(ms(20));
    assert_eq!(dropped.wakes(), 0, "a dropped delay never wakes");
}

#[test]
fn reset_both_ways_and_after_completion() {
    // Later.
    let mut delay = Delay::new(ms(2));
    assert!((&mut delay).now_or_never().is_none());
    let start = Instant::now();
    delay.reset(ms(30));
    block_on(&mut delay);
    assert!(start.elapsed() >= ms(30), "fired at the old deadline");
    // Earlier, from an hour.
    let mut delay = Delay::new(Duration::from_secs(3600));
    assert!((&mut delay).now_or_never().is_none());
    let start = Instant::now();
    delay.reset(ms(5));
    block_on(&mut delay);
    assert!(start.elapsed() >= ms(5) && start.elapsed() < SOON);
    // Completed, then reset: pending again.
    let start = Instant::now();
    delay.reset(ms(4));
    assert!((&mut delay).now_or_never().is_none());
    block_on(&mut delay);
    assert!(start.elapsed() >= ms(4));
}

#[test]
fn ten_thousand_concurrent_delays_on_a_futures_pool() {
    const N: usize = 10_000;
    let pool = ThreadPool::builder().pool_size(2).create().unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for i in 0..N {
        let (done, tx) = (done.clone(), tx.clone());
        let d = us(100 + (i as u64 * 7919) % 100_000);
        pool.spawn(async move {
            let start = Instant::now();
            Delay::new(d).await;
            assert!(start.elapsed() >= d, "delay {i} early");
            if done.fetch_add(1, Ordering::SeqCst) + 1 == N {
                tx.send(()).unwrap();
            }
        })
        .unwrap();
    }
    rx.recv_timeout(SOON * 3).expect("every delay completed");
    assert_eq!(done.load(Ordering::SeqCst), N);
}

#[test]
fn plain_threads_and_a_tokio_runtime() {
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            thread::spawn(move || {
                for i in 0..20 {
                    let d = us(100 + 53 * (t * 20 + i));
                    let start = Instant::now();
                    block_on(Delay::new(d));
                    assert!(start.elapsed() >= d);
                }
            })
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..50u64)
            .map(|i| {
                tokio::spawn(async move {
                    let d = us(200 + 31 * i);
                    let start = Instant::now();
                    Delay::new(d).await;
                    assert!(start.elapsed() >= d);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    for t in threads {
        t.join().unwrap();
    }
}
