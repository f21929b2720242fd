//! Memory comes back: storage grows to the most timeouts held at once, is
//! reused after that, and [`Timer::shrink`] returns it when the timer idles.
//!
//! Storage is observed through `shrink`'s return value (the bytes it
//! freed): equal results mean equal capacity. The issue asks for batches of
//! a million; CI runs 200,000 per batch (set `HASHWHEEL_MEMORY_N` to run
//! more, e.g. `HASHWHEEL_MEMORY_N=1000000 cargo test --release --test memory`).

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Duration;

use common::{advance, MS};
use futures_util::task::noop_waker;
use hashwheel::Timer;

fn batch_size() -> usize {
    std::env::var("HASHWHEEL_MEMORY_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000)
}

fn one_shard() -> Timer {
    Timer::builder().shards(1).build().unwrap()
}

/// Creates `n` timeouts, registers each in the wheel, and cancels them all.
fn create_and_cancel(timer: &Timer, n: usize, waker: &Waker) {
    let mut cx = Context::from_waker(waker);
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        let mut t = timer.sleep(Duration::from_secs(60 + i as u64 % 3600));
        assert!(Pin::new(&mut t).poll(&mut cx).is_pending());
        held.push(t);
    }
    assert_eq!(timer.pending(), n);
    drop(held);
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn cancelled_timeouts_storage_is_reused_by_the_next_batches() {
    let n = batch_size();
    let waker = noop_waker();

    // One batch: the storage a burst of `n` needs.
    let once = one_shard();
    create_and_cancel(&once, n, &waker);
    let one_batch = once.shrink();
    assert!(
        one_batch >= n * 16,
        "{one_batch} bytes freed for {n} timeouts"
    );
    assert_eq!(once.shrink(), 0, "shrink gave everything back");

    // Three batches in a row without shrinking: the storage is reused, so
    // the capacity stays that of one batch.
    let many = one_shard();
    for _ in 0..3 {
        create_and_cancel(&many, n, &waker);
    }
    assert_eq!(many.shrink(), one_batch, "later batches grew the storage");

    // After a shrink the timer still works, from empty storage.
    create_and_cancel(&many, 1000, &waker);
    let mut t = tokio_test::task::spawn(many.sleep(MS));
    assert!(t.poll().is_pending());
    advance(MS).await;
    assert!(t.poll().is_ready());
}

/// Creates `n` timeouts due in 1 ms, lets them fire, and completes them.
async fn create_and_fire(timer: &Timer, n: usize) {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut held: Vec<_> = (0..n).map(|_| timer.sleep(MS)).collect();
    for t in &mut held {
        assert!(Pin::new(t).poll(&mut cx).is_pending());
    }
    advance(MS).await;
    assert_eq!(timer.pending(), 0);
    // Thousands of ready polls in one task poll: past tokio's cooperative
    // budget, which hashwheel's timeouts spend as tokio's `Sleep`s do.
    tokio::task::coop::unconstrained(async {
        for t in &mut held {
            assert!(Pin::new(t).poll(&mut cx).is_ready());
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn fired_timeouts_storage_is_reused_too() {
    let n = batch_size() / 4;
    let once = one_shard();
    create_and_fire(&once, n).await;
    let one_batch = once.shrink();
    assert!(one_batch >= n * 16);
    let many = one_shard();
    for _ in 0..3 {
        create_and_fire(&many, n).await;
    }
    assert_eq!(many.shrink(), one_batch, "later batches grew the storage");
}

#[tokio::test(start_paused = true)]
async fn storage_follows_the_peak_not_the_total() {
    let waker = noop_waker();
    // 100,000 timeouts in all, at most 10 at a time...
    let churned = one_shard();
    for _ in 0..10_000 {
        create_and_cancel(&churned, 10, &waker);
    }
    // ...hold as much storage as 10 at once.
    let ten = one_shard();
    create_and_cancel(&ten, 10, &waker);
    assert_eq!(churned.shrink(), ten.shrink());
}

#[tokio::test(start_paused = true)]
async fn shrink_keeps_live_timeouts() {
    let timer = one_shard();
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut held: Vec<_> = (0..10_000u64)
        .map(|i| timer.sleep(Duration::from_millis(1 + i % 50)))
        .collect();
    for t in &mut held {
        assert!(Pin::new(t).poll(&mut cx).is_pending());
    }
    // Drop all but a few hundred in the middle: the storage above them
    // goes, theirs stays.
    let kept: Vec<_> = held.drain(4_000..4_300).collect();
    drop(held);
    assert!(timer.shrink() > 0);
    assert_eq!(timer.pending(), 300);
    let mut kept: Vec<_> = kept.into_iter().map(tokio_test::task::spawn).collect();
    for t in &mut kept {
        assert!(t.poll().is_pending());
    }
    advance(Duration::from_millis(50)).await;
    tokio::task::coop::unconstrained(async {
        for t in &mut kept {
            assert!(t.is_woken());
            assert!(t.poll().is_ready());
        }
    })
    .await;
    assert_eq!(timer.pending(), 0);
}

/// Regression: `shrink` gave back the wheel's storage but not the map of
/// scheduled tasks, which kept the size of the largest burst of tasks.
#[tokio::test(start_paused = true)]
async fn shrink_returns_the_storage_of_cancelled_tasks() {
    let n = 50_000;
    let waker = noop_waker();
    let timeouts = one_shard();
    create_and_cancel(&timeouts, n, &waker);
    let tasks = one_shard();
    let handles: Vec<_> = (0..n)
        .map(|_| tasks.schedule(Duration::from_secs(60), || {}))
        .collect();
    for h in &handles {
        assert!(h.cancel());
    }
    assert_eq!(tasks.pending(), 0);
    // Tasks use the same wheel storage as timeouts, and a map besides.
    assert!(
        tasks.shrink() > timeouts.shrink(),
        "the task map was not shrunk"
    );
}

/// An interval's storage is its wheel entry and nothing else (its beat
/// lives in the entry and its deadline word, issue 36): `shrink` gives
/// back as much for a burst of dropped intervals as for as many timeouts,
/// and then everything.
#[tokio::test(start_paused = true)]
async fn shrink_returns_the_storage_of_dropped_intervals() {
    let n = 20_000;
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let timeouts = one_shard();
    create_and_cancel(&timeouts, n, &waker);
    let intervals = one_shard();
    let mut held: Vec<_> = (0..n)
        .map(|_| intervals.interval(Duration::from_secs(60)))
        .collect();
    tokio::task::coop::unconstrained(async {
        for interval in &mut held {
            // The first tick is at once; the second registers the interval.
            assert!(interval.poll_tick(&mut cx).is_ready());
            assert!(interval.poll_tick(&mut cx).is_pending());
        }
    })
    .await;
    assert_eq!(intervals.pending(), n);
    drop(held);
    assert_eq!(intervals.pending(), 0);
    let freed = intervals.shrink();
    assert!(
        freed >= n * 32,
        "{freed} bytes given back for {n} intervals"
    );
    assert_eq!(
        freed,
        timeouts.shrink(),
        "an interval holds more than a timeout's entry"
    );
    assert_eq!(intervals.shrink(), 0, "shrink gave everything back");
}

/// `Builder::capacity` reserves the storage up front: a timer that never
/// held a timeout has it to give back, and the reserved timeouts fit.
#[tokio::test(start_paused = true)]
async fn a_reserved_capacity_is_allocated_by_build() {
    let n = 10_000;
    let waker = noop_waker();
    let reserved = Timer::builder().shards(1).capacity(n).build().unwrap();
    let freed = reserved.shrink();
    assert!(freed >= n * 32, "{freed} bytes reserved for {n} timeouts");
    // Split across shards: each reserves its part.
    let split = Timer::builder().shards(4).capacity(n).build().unwrap();
    let freed = split.shrink();
    // Each shard reserves its quarter, to within a page of 256 entries.
    assert!(
        (n * 32..(n + 4 * 256) * 32).contains(&freed),
        "{freed} bytes reserved for {n} timeouts over 4 shards"
    );
    let timer = Timer::builder().shards(1).capacity(n).build().unwrap();
    create_and_cancel(&timer, n, &waker);
    assert!(timer.shrink() >= n * 32);
}
