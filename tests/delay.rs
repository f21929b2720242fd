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

#[test]
fn zero_completes_at_once() {
    assert_eq!(Delay::new(Duration::ZERO).now_or_never(), Some(()));
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
