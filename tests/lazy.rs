//! Lazy cancellation (issue 54): a timeout dropped long after it was
//! polled (its entry cold, see `Shard::may_drop_lazily`) leaves its entry
//! in the wheel for the driver to reclaim. What it still promises: it never
//! fires nor wakes its task, `pending()` stops counting it at once, and
//! what it holds is bounded and visible (`Stats::unreclaimed`): reclaimed
//! by its deadline at the latest (sooner, looking ahead of the clock), a
//! shard's never more than its live entries plus 64, none once a shard has
//! nothing live left; its waker (its task's allocation) goes at the drop.
//! A timeout dropped while its entry is still warm is taken out at
//! once.

#![cfg(feature = "tokio")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;

use common::{advance, cool, counting_waker, settle, CountingWaker};
use hashwheel::{Timeout, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A timer of one shard on the current runtime (every timeout of a test
/// on it).
fn one_shard() -> Timer {
    Timer::builder().shards(1).build().unwrap()
}

/// `n` timeouts of `timer`, due `first`, `first + step`, ..., each polled
/// once (registered) with `waker`.
fn registered(
    timer: &Timer,
    n: u64,
    first: Duration,
    step: Duration,
    waker: &Waker,
) -> Vec<Timeout> {
    let mut cx = Context::from_waker(waker);
    (0..n)
        .map(|i| {
            let mut t = timer.sleep(first + step * i as u32);
            assert!(Pin::new(&mut t).poll(&mut cx).is_pending());
            t
        })
        .collect()
}

/// The wakers of `counter` held out of the test's sight: besides the
/// test's own two references (the counter and its `Waker`).
fn held(counter: &Arc<CountingWaker>) -> usize {
    Arc::strong_count(counter) - 2
}

#[tokio::test(start_paused = true)]
async fn a_cold_drop_is_left_for_the_driver_never_fires_and_lets_its_waker_go_at_once() {
    let timer = one_shard();
    let (counter, waker) = counting_waker();
    let mut dropped = registered(&timer, 1, ms(100), ms(0), &waker);
    let (_, other) = counting_waker();
    let live = registered(&timer, 1, Duration::from_secs(10), ms(0), &other);
    cool(&timer);
    let before = timer.stats();
    drop(dropped.pop());
    let s = timer.stats();
    assert_eq!(s.pending, 1, "pending() stops counting it at once");
    assert_eq!(s.cancelled, before.cancelled + 1, "cancelled at once");
    assert_eq!(s.unreclaimed, 1, "left in the wheel");
    assert_eq!(held(&counter), 0, "its waker (its task) let go at the drop");
    assert_eq!(s.created, s.fired + s.cancelled + s.pending as u64);
    // Its deadline comes: reclaimed, not fired, its waker never woken.
    advance(ms(100)).await;
    let s = timer.stats();
    assert_eq!(s.unreclaimed, 0);
    assert_eq!((s.fired, s.cancelled), (before.fired, before.cancelled + 1));
    assert_eq!(counter.wakes(), 0, "a dropped timeout never wakes its task");
    assert_eq!(held(&counter), 0);
    assert_eq!(s.created, s.fired + s.cancelled + s.pending as u64);
    drop(live);
}

/// W10's request timeout: dropped microseconds after it was polled, its
/// entry still in the cache, it is taken out at once (its key is the next
/// timeout's).
#[tokio::test(start_paused = true)]
async fn a_warm_drop_is_taken_out_at_once() {
    let timer = one_shard();
    let (counter, waker) = counting_waker();
    let (_, other) = counting_waker();
    let _live = registered(&timer, 1, Duration::from_secs(10), ms(0), &other);
    for _ in 0..100 {
        drop(registered(
            &timer,
            1,
            Duration::from_secs(30),
            ms(0),
            &waker,
        ));
        assert_eq!(timer.stats().unreclaimed, 0);
        assert_eq!(held(&counter), 0);
    }
    // Cooled, then polled again: it is the last poll's registration that
    // counts, and a timeout polled once registers once.
    let mut warm = registered(&timer, 1, Duration::from_secs(30), ms(0), &waker);
    drop(warm.pop());
    assert_eq!(timer.stats().unreclaimed, 0);
}

/// The bound: at every drop, a shard's dropped entries not reclaimed yet
/// are at most its live entries plus 64; past that, drops take their
/// entries out at once.
#[tokio::test(start_paused = true)]
async fn dropped_entries_never_outnumber_live_ones_by_more_than_64() {
    let timer = one_shard();
    let (_, waker) = counting_waker();
    let live = registered(&timer, 10, Duration::from_secs(60), ms(1), &waker);
    let mut dropped = registered(&timer, 200, Duration::from_secs(30), ms(1), &waker);
    cool(&timer);
    let mut most = 0;
    while let Some(t) = dropped.pop() {
        drop(t);
        // Live: the 10 and those not dropped yet, all registered. A drop
        // that leaves more (a drop taking its entry out at once lowers
        // the live count too) has the driver sweep them out at once.
        settle().await;
        let s = timer.stats();
        assert!(s.unreclaimed <= s.pending + 64, "{s:?}");
        most = most.max(s.unreclaimed);
    }
    assert!(most > 64, "some were left for the driver");
    assert!(timer.stats().unreclaimed <= 10 + 64);
    drop(live);
}

/// W14: read timeouts dropped seconds before their deadlines, one after
/// another. The driver reclaims them in a pass ahead of its clock, up to
/// the first live entry, in the turn for the first of them: not a turn for
/// each, and its alarm is then armed for live work.
#[tokio::test(start_paused = true)]
async fn the_driver_reclaims_dropped_timeouts_ahead_of_its_clock_in_one_turn() {
    let timer = one_shard();
    let (counter, waker) = counting_waker();
    let mut dropped = registered(&timer, 1_000, Duration::from_secs(1), ms(1), &waker);
    let (_, other) = counting_waker();
    let live = registered(&timer, 1_000, Duration::from_secs(5), ms(1), &other);
    cool(&timer);
    dropped.clear();
    assert_eq!(timer.stats().unreclaimed, 1_000);
    let turns = timer.stats().driver_wakeups;
    advance(Duration::from_secs(1)).await;
    let s = timer.stats();
    assert_eq!(
        s.unreclaimed, 0,
        "all reclaimed at the first one's deadline"
    );
    assert_eq!(s.driver_wakeups - turns, 1, "in one turn");
    assert_eq!(s.pending, 1_000);
    // The next turns are for the live timeouts (and the start of their
    // round, where the wheel moves them into its buckets), none for a
    // dropped one.
    advance(ms(3_999)).await;
    assert_eq!(timer.stats().fired, 0);
    advance(ms(1)).await;
    assert_eq!(timer.stats().fired, 1);
    assert!(
        timer.stats().driver_wakeups - turns <= 3,
        "{:?}",
        timer.stats()
    );
    assert_eq!(counter.wakes(), 0);
    assert_eq!(held(&counter), 0);
    drop(live);
}

/// Live entries that fire may leave a shard with more dropped entries than
/// the bound allows (or none live): the turn sweeps them out.
#[tokio::test(start_paused = true)]
async fn a_turn_that_leaves_too_few_live_entries_sweeps_the_dropped_ones() {
    let timer = one_shard();
    let (_, waker) = counting_waker();
    let firing = registered(&timer, 100, ms(10), ms(0), &waker);
    let kept = registered(&timer, 5, Duration::from_secs(60), ms(0), &waker);
    let mut dropped = registered(&timer, 150, Duration::from_secs(30), ms(1), &waker);
    cool(&timer);
    dropped.clear();
    assert_eq!(timer.stats().unreclaimed, 150);
    // The 100 fire: 5 live left against 150 dropped.
    advance(ms(10)).await;
    drop(firing);
    let s = timer.stats();
    assert_eq!(s.pending, 5);
    assert_eq!(s.unreclaimed, 0, "{s:?}");
    drop(kept);
}

/// A shard whose last live timeout goes holds no dropped ones after the
/// driver's next turn, and on paused time that turn comes at once and
/// leaves nothing armed: the idle runtime's clock stays put.
#[tokio::test(start_paused = true)]
async fn an_idle_shard_keeps_no_dropped_timeouts_nor_moves_the_paused_clock() {
    let timer = one_shard();
    let (counter, waker) = counting_waker();
    let mut dropped = registered(&timer, 20, Duration::from_secs(30), ms(1), &waker);
    cool(&timer);
    dropped.clear();
    assert_eq!(timer.pending(), 0);
    settle().await;
    assert_eq!(timer.stats().unreclaimed, 0);
    assert_eq!(held(&counter), 0);
    let start = tokio::time::Instant::now();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(ms(30));
        tx.send(()).unwrap();
    });
    rx.await.unwrap();
    sender.join().unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO, "the clock jumped");
}

/// `stop()` with dropped entries in the wheel: they count as cancelled
/// once (at their drop), are never woken, and are gone.
#[tokio::test(start_paused = true)]
async fn stop_treats_dropped_timeouts_as_cancelled() {
    let timer = one_shard();
    let (counter, waker) = counting_waker();
    let mut dropped = registered(&timer, 10, Duration::from_secs(30), ms(1), &waker);
    let (live_counter, live_waker) = counting_waker();
    let mut live = registered(&timer, 1, Duration::from_secs(60), ms(0), &live_waker);
    cool(&timer);
    dropped.clear();
    let before = timer.stats();
    assert_eq!(before.unreclaimed, 10);
    timer.stop();
    let s = timer.stats();
    assert_eq!(s.unreclaimed, 0);
    assert_eq!(s.cancelled, before.cancelled + 1, "the live one only");
    assert_eq!((counter.wakes(), held(&counter)), (0, 0));
    assert_eq!(live_counter.wakes(), 1);
    let mut cx = Context::from_waker(&live_waker);
    assert!(Pin::new(&mut live[0]).poll(&mut cx).is_ready());
    assert!(live[0].is_cancelled());
    drop(live);
    let s = timer.stats();
    assert_eq!(s.created, s.fired + s.cancelled);
}

/// The keys of reclaimed entries are used again, by timeouts that fire at
/// their own deadlines; a handle's generation keeps a later entry at its
/// key apart from it.
#[tokio::test(start_paused = true)]
async fn reclaimed_keys_serve_new_timeouts() {
    let timer = one_shard();
    let (_, waker) = counting_waker();
    let live = registered(&timer, 1, Duration::from_secs(60), ms(0), &waker);
    for round in 0..3u32 {
        let mut dropped = registered(&timer, 50, ms(5), ms(0), &waker);
        cool(&timer);
        dropped.clear();
        assert_eq!(timer.stats().unreclaimed, 50, "round {round}");
        advance(ms(5)).await;
        assert_eq!(timer.stats().unreclaimed, 0, "round {round}");
        let (counter, fresh_waker) = counting_waker();
        let mut fresh = registered(&timer, 50, ms(7), ms(0), &fresh_waker);
        advance(ms(7)).await;
        assert_eq!(counter.wakes(), 50);
        let mut cx = Context::from_waker(&fresh_waker);
        for t in &mut fresh {
            assert!(Pin::new(&mut *t).poll(&mut cx).is_ready());
            assert!(t.is_expired());
        }
    }
    assert_eq!(timer.pending(), 1);
    drop(live);
}

/// On the real clock, with a thread-driven timer: a dropped timeout is
/// reclaimed by its deadline (a turn comes for it, or for the live entry
/// behind it), and its waker let go.
#[cfg(feature = "thread")]
#[test]
fn on_the_real_clock_a_dropped_timeout_is_reclaimed_by_its_deadline() {
    let timer = Timer::builder().driver_thread().shards(1).build().unwrap();
    let (counter, waker) = counting_waker();
    let mut dropped = registered(&timer, 10, ms(20), ms(1), &waker);
    let (_, other) = counting_waker();
    let live = registered(&timer, 1, Duration::from_secs(60), ms(0), &other);
    cool(&timer);
    dropped.clear();
    assert_eq!(timer.stats().unreclaimed, 10);
    let start = std::time::Instant::now();
    while timer.stats().unreclaimed > 0 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(ms(1));
    }
    assert_eq!(timer.stats().unreclaimed, 0);
    assert_eq!((counter.wakes(), held(&counter)), (0, 0));
    drop(live);
}
