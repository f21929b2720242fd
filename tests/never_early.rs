//! A timeout fires at the first tick at or after its deadline, never before,
//! and under paused time within one tick after it.

mod common;

use std::time::Duration;

use common::{advance, MS};
use hashwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn fires_at_the_deadline_not_a_tick_before() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(10)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(9)).await;
    assert!(!t.is_woken());
    assert_pending!(t.poll());
    advance(MS).await;
    assert!(t.is_woken());
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn sub_tick_deadlines_round_up() {
    let timer = Timer::builder()
        .tick(Duration::from_millis(10))
        .build()
        .unwrap();
    let start = Instant::now();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(11)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(19)).await;
    assert_pending!(t.poll());
    advance(MS).await;
    assert_ready!(t.poll());
    assert_eq!(start.elapsed(), Duration::from_millis(20));
}

#[tokio::test(start_paused = true)]
async fn many_deadlines_each_within_one_tick() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..300u64 {
        // Spread over several turns of the 512-tick wheel, off tick boundaries.
        let delay = Duration::from_micros(i * 7_919 + 250);
        let timer = timer.clone();
        handles.push(tokio::spawn(async move {
            let deadline = Instant::now() + delay;
            timer.sleep(delay).await;
            (deadline, Instant::now())
        }));
    }
    for h in handles {
        let (deadline, fired) = h.await.unwrap();
        assert!(
            fired >= deadline,
            "fired early: {:?} before",
            deadline - fired
        );
        assert!(fired - deadline < MS, "late by {:?}", fired - deadline);
    }
    assert!(start.elapsed() > Duration::from_secs(2));
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn deadlines_on_bucket_and_round_edges() {
    let timer = Timer::builder().wheel_size(8).build().unwrap();
    for ms in [
        1u64,
        7,
        8,
        9,
        15,
        16,
        17,
        63,
        64,
        65,
        8 * 64,
        8 * 64 + 1,
        8 * 64 * 3,
    ] {
        let start = Instant::now();
        timer.sleep(Duration::from_millis(ms)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(ms), "delay {ms}ms");
    }
}

/// A paused runtime, and a timer built on it from outside
/// (`Builder::handle`).
fn paused_from_outside() -> (tokio::runtime::Runtime, Timer) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let timer = Timer::builder()
        .handle(rt.handle().clone())
        .build()
        .unwrap();
    (rt, timer)
}

/// [`paused_from_outside`], its clock advanced an hour (std's has not).
fn an_hour_ahead() -> (tokio::runtime::Runtime, Timer) {
    let (rt, timer) = paused_from_outside();
    rt.block_on(tokio::time::advance(Duration::from_secs(3600)));
    (rt, timer)
}

/// Issue 56, item 3: `Builder::handle`'s own pattern, a sleep made outside
/// the runtime's context (`rt.block_on(timer.sleep(d))`, and on a plain
/// thread) and awaited on a paused runtime an hour ahead of std's clock,
/// completes once the runtime's clock has passed its deadline, never
/// before. It read std's clock there, and completed after 0 ns of the
/// runtime's time (its `deadline()` 3,590 s in the past).
#[test]
fn a_sleep_made_outside_the_runtimes_context_reads_the_runtimes_clock() {
    let (rt, timer) = an_hour_ahead();
    let now = || rt.block_on(async { Instant::now() });
    let start = now();
    let sleep = timer.sleep(Duration::from_secs(10));
    assert!(sleep.deadline() >= (start + Duration::from_secs(10)).into_std());
    rt.block_on(sleep);
    assert_eq!(now() - start, Duration::from_secs(10), "made outside");
    // On another thread, with no runtime at all.
    let start = now();
    let made = std::thread::scope(|s| {
        s.spawn(|| {
            let timeout = timer.timeout(Duration::from_secs(5), std::future::pending::<()>());
            (timer.sleep(Duration::from_secs(3)), timeout)
        })
        .join()
        .unwrap()
    });
    let (sleep, timeout) = made;
    rt.block_on(sleep);
    assert_eq!(
        now() - start,
        Duration::from_secs(3),
        "made on a plain thread"
    );
    assert!(rt.block_on(timeout).is_err());
    assert_eq!(now() - start, Duration::from_secs(5));
    // In the runtime's `block_on`, outside any task, and in a task.
    let start = now();
    rt.block_on(async { timer.sleep(Duration::from_secs(2)).await });
    rt.block_on(async { tokio::spawn(timer.sleep(Duration::from_secs(2))).await })
        .unwrap();
    assert_eq!(now() - start, Duration::from_secs(4));
}

/// A reset made outside the runtime's context counts from the runtime's
/// clock, not std's.
#[test]
fn a_reset_made_outside_the_runtimes_context_counts_from_the_runtimes_clock() {
    let (rt, timer) = an_hour_ahead();
    let now = || rt.block_on(async { Instant::now() });
    let start = now();
    let mut sleep = timer.sleep(Duration::from_secs(60));
    sleep.reset(Duration::from_millis(20));
    rt.block_on(&mut sleep);
    assert_eq!(now() - start, Duration::from_millis(20));
}

/// A deadline given as an instant, made outside the runtime's context, is
/// due by the runtime's clock: a paused runtime's clock stays where it
/// was built while std's moves on, so by std's an instant just after the
/// runtime's now had passed, and the sleep completed at once, before the
/// runtime's clock reached it.
#[test]
fn an_instant_made_outside_the_runtimes_context_is_due_by_the_runtimes_clock() {
    let (rt, timer) = paused_from_outside();
    let now = || rt.block_on(async { Instant::now() });
    let deadline = now() + Duration::from_micros(1);
    let sleep = timer.sleep_until(deadline);
    rt.block_on(sleep);
    assert!(
        now() >= deadline,
        "completed before the runtime's clock reached it"
    );
}
