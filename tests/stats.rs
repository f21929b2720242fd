//! `Timer::stats` counts what happened, exactly, under paused time.

mod common;

use std::time::Duration;

use common::{advance, settle, MS};
use futures::FutureExt;
use hashwheel::{Stats, Timer};
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn a_new_timer_counts_nothing() {
    let timer = Timer::new();
    assert_eq!(timer.stats(), Stats::default());
}

#[tokio::test(start_paused = true)]
async fn counts_fired_cancelled_reset_and_wakeups() {
    let timer = Timer::new();

    // Three timeouts due at 10 ms, registered by a poll.
    let mut due: Vec<_> = (0..3)
        .map(|_| task::spawn(timer.sleep(Duration::from_millis(10))))
        .collect();
    for t in &mut due {
        assert_pending!(t.poll());
    }
    // One far timeout, registered, and one never polled.
    let mut far = task::spawn(timer.sleep(Duration::from_secs(60)));
    assert_pending!(far.poll());
    let unpolled = timer.sleep(Duration::from_secs(60));
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.cancelled, s.reset), (5, 0, 0, 0));

    // Reset: twice registered, once unregistered.
    far.reset(Duration::from_secs(120));
    far.reset(Duration::from_secs(90));
    let mut unpolled = unpolled;
    unpolled.reset(Duration::from_secs(30));
    assert_eq!(timer.stats().reset, 3);

    // Cancel: one registered, one unregistered.
    drop(far);
    drop(unpolled);
    let s = timer.stats();
    assert_eq!((s.pending, s.cancelled), (3, 2));

    advance(Duration::from_millis(10)).await;
    for t in &mut due {
        assert!(t.is_woken());
        assert_ready!(t.poll());
    }
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.cancelled, s.reset), (0, 3, 2, 3));
    // The driver woke once for the 10 ms tick, and on time.
    assert!(s.driver_wakeups >= 1, "{s:?}");
    assert_eq!(s.late_ticks, 0, "{s:?}");

    // Nothing pending: the driver stays asleep.
    let before = timer.stats().driver_wakeups;
    advance(Duration::from_secs(3600)).await;
    assert_eq!(timer.stats().driver_wakeups, before);
}

#[tokio::test(start_paused = true)]
async fn resetting_into_the_past_counts_as_fired() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_secs(10)));
    assert_pending!(t.poll());
    advance(5 * MS).await;
    t.reset(Duration::ZERO);
    // A deadline at "now" rounds up to the next tick.
    advance(MS).await;
    assert_ready!(t.poll());
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.reset, s.cancelled), (0, 1, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn tasks_and_stop_are_counted() {
    let timer = Timer::new();
    let ran = timer.schedule(Duration::from_millis(2), || {});
    let cancelled = timer.schedule(Duration::from_secs(1), || {});
    let _drained = timer.schedule(Duration::from_secs(1), || {});
    let mut waiting = task::spawn(timer.sleep(Duration::from_secs(1)));
    assert_pending!(waiting.poll());
    assert!(cancelled.cancel());
    advance(2 * MS).await;
    assert!(ran.is_expired());
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.cancelled), (2, 1, 1));

    // Stopping drains the pending task and timeout.
    assert_eq!(timer.stop().len(), 1);
    settle().await;
    assert_ready!(waiting.poll());
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.cancelled), (0, 1, 3));
}

/// A timeout due at 10 ms that the driver fires at 50 ms: the clock jumps
/// past the deadline before the driver can run, as on a starved runtime
/// (it wakes at tick 50 for work planned at tick 10).
async fn fired_by_a_starved_driver(timer: &Timer) {
    let mut t = task::spawn(timer.sleep(Duration::from_millis(10)));
    assert_pending!(t.poll());
    settle().await;
    tokio::time::advance(Duration::from_millis(50)).await;
    settle().await;
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn a_driver_woken_late_reports_late_ticks() {
    let timer = Timer::new();
    fired_by_a_starved_driver(&timer).await;
    let s = timer.stats();
    // One wake-up (the insert's notification only moved the alarm), late.
    assert_eq!((s.fired, s.driver_wakeups, s.late_ticks), (1, 1, 40));
}

#[tokio::test(start_paused = true)]
async fn the_longest_driver_turn_is_kept_and_only_grows() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(MS));
    assert_pending!(t.poll());
    assert_eq!(timer.stats().longest_turn, Duration::ZERO, "no turn yet");
    advance(MS).await;
    assert_ready!(t.poll());
    let first = timer.stats().longest_turn;
    assert!(first > Duration::ZERO, "a turn took no time");
    // A turn that expires a thousand timeouts: the maximum never goes down.
    let mut many: Vec<_> = (0..1000).map(|_| task::spawn(timer.sleep(MS))).collect();
    for t in &mut many {
        assert_pending!(t.poll());
    }
    advance(MS).await;
    settle().await;
    // In one task poll a thousand ready timeouts would spend tokio's
    // cooperative budget, as tokio's `Sleep`s do: lift it.
    tokio::task::coop::unconstrained(async {
        for t in &mut many {
            assert_ready!(t.poll());
        }
    })
    .await;
    assert!(timer.stats().longest_turn >= first);
    assert!(timer.stats().driver_wakeups >= 2);
}

#[tokio::test(start_paused = true)]
async fn lateness_counts_each_fire_from_its_deadline_to_the_turn() {
    let timer = Timer::new();
    assert_eq!(timer.stats().lateness.count(), 0);
    // Fires on time (paused time: the runtime's timer rings at the
    // millisecond itself).
    timer.sleep(Duration::from_millis(10)).await;
    let s = timer.stats();
    assert_eq!((s.fired, s.lateness.count()), (1, 1));
    assert_eq!(s.lateness.max(), Duration::ZERO, "{s:?}");
    // 10.5 ms: the runtime's timer rings at its next whole millisecond,
    // 500 µs after the deadline (the timer was built on a millisecond).
    timer.sleep(Duration::from_micros(10_500)).await;
    let late = timer.stats().lateness.since(&s.lateness);
    assert_eq!(late.count(), 1);
    assert_eq!(late.max(), Duration::from_micros(500), "{late:?}");
    assert_eq!(late.quantile(0.5), Duration::from_micros(500));
    assert_eq!(timer.stats().lateness.max(), Duration::from_micros(500));
}

#[tokio::test(start_paused = true)]
async fn lateness_of_a_starved_driver_is_its_delay() {
    let timer = Timer::new();
    fired_by_a_starved_driver(&timer).await;
    let late = timer.stats().lateness;
    assert_eq!(late.count(), 1);
    // 40,000 µs is in the bucket 39,936..=40,959: the maximum is exact.
    assert_eq!(late.max(), Duration::from_millis(40), "{late:?}");
    assert_eq!(late.quantile(0.99), Duration::from_millis(40));
}

#[tokio::test(start_paused = true)]
async fn lateness_counts_interval_ticks_and_tasks_but_not_fires_on_the_spot() {
    let timer = Timer::new();
    let mut beat = timer.interval(Duration::from_millis(10));
    // The first tick completes at once (on the spot), as tokio's does.
    beat.tick().await;
    for _ in 0..5 {
        beat.tick().await;
    }
    let task = timer.schedule(Duration::from_millis(3), || {});
    advance(Duration::from_millis(3)).await;
    assert!(task.is_expired());
    // Already due when created: completes on its first poll, no driver.
    timer.sleep(Duration::ZERO).await;
    let s = timer.stats();
    // Five interval ticks and the task, through the driver; the zero
    // sleep's fire is counted in `fired` only, the first tick (on the
    // spot) in `ticks` only.
    assert_eq!(s.lateness.count(), 6, "{s:?}");
    assert_eq!((s.fired, s.ticks), (2, 6), "{s:?}");
    assert_eq!(s.lateness.max(), Duration::ZERO, "{s:?}");
}

/// Issue 39: `Lateness::record(Duration::MAX)` gave `quantile(1.0)` of
/// 4,294.97 s (the top of the histogram's buckets) but `max` of 1.8e13 s: a
/// value past the buckets read below itself. Past them a quantile reads as
/// the max, in a snapshot, its buckets and a difference alike.
#[test]
fn a_lateness_past_the_buckets_reads_as_the_max_in_quantiles() {
    for late in [
        Duration::MAX,
        Duration::from_secs(86_400),
        Duration::from_micros(1 << 32),
    ] {
        let mut h = hashwheel::Lateness::new();
        h.record(Duration::from_millis(3));
        let before = h;
        h.record(late);
        let late = Duration::from_micros(u64::try_from(late.as_micros()).unwrap_or(u64::MAX));
        assert_eq!(h.max(), late);
        assert_eq!(h.quantile(1.0), h.max(), "{late:?}");
        assert_eq!(h.quantile(0.75), h.max(), "{late:?}");
        assert!(h.quantile(0.5) <= Duration::from_micros(3_100));
        assert_eq!(h.buckets().last(), Some((late, 1)));
        let diff = h.since(&before);
        assert_eq!((diff.quantile(1.0), diff.max()), (late, late));
    }
}

/// The balance rule of `Stats`' docs (issue 43, item 5): over a mixed run
/// (sleeps and timeouts that fire, are dropped polled and unpolled, reset
/// before and after they fired, zero delays; scheduled tasks; intervals
/// that tick on time, stall and burst, are reset, and are dropped with a
/// fired tick untaken) `created == fired + cancelled + pending` at every
/// step, `pending` counts every live interval, `ticks` counts each tick
/// delivered, and `reset` only the resets made.
#[tokio::test(start_paused = true)]
async fn the_counts_balance_over_a_mixed_run() {
    fn balanced(timer: &Timer, step: &str) -> Stats {
        let s = timer.stats();
        assert_eq!(
            s.created,
            s.fired + s.cancelled + s.pending as u64,
            "{step}: {s:?}"
        );
        s
    }
    let timer = Timer::new();
    let period = 10 * MS;
    let mut on_time = timer.interval(period);
    let mut stalled = timer.interval(period);
    let mut untaken = timer.interval(period);
    let mut delivered = 0u64;
    for interval in [&mut on_time, &mut stalled, &mut untaken] {
        interval.tick().await;
        delivered += 1;
    }
    assert_eq!(balanced(&timer, "three intervals").pending, 3);
    // Each waits for its next tick (registered with its task's waker).
    for interval in [&mut on_time, &mut stalled, &mut untaken] {
        assert!(interval.tick().now_or_never().is_none());
    }

    let mut sleeps: Vec<_> = (1..=20u32)
        .map(|i| task::spawn(timer.sleep(i * MS)))
        .collect();
    for sleep in &mut sleeps[..10] {
        assert_pending!(sleep.poll());
    }
    let zero = timer.sleep(Duration::ZERO);
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let task_runs = runs.clone();
    let _task = timer.schedule(5 * MS, move || {
        task_runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    let cancelled_task = timer.schedule(60 * MS, || {});
    balanced(&timer, "made");
    sleeps.truncate(15); // five unpolled dropped
    assert!(cancelled_task.cancel());
    zero.await;
    balanced(&timer, "dropped and cancelled");

    // `stalled` is not polled for 55 ms: its ticks burst after.
    for _ in 0..5 {
        advance(period).await;
        on_time.tick().await;
        delivered += 1;
        for sleep in &mut sleeps {
            let _ = sleep.poll();
        }
        balanced(&timer, "ticking");
    }
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A sleep reset after it fired is pending again; one reset before.
    let mut again = task::spawn(timer.sleep(MS));
    assert_pending!(again.poll());
    advance(MS).await;
    assert_ready!(again.poll());
    again.reset(2 * MS);
    assert_pending!(again.poll());
    balanced(&timer, "a fired sleep reset");
    advance(5 * MS).await;
    assert_ready!(again.poll());
    let before_burst = balanced(&timer, "stalled");
    assert_eq!(
        before_burst.pending, 3,
        "every live interval, stalled or not"
    );
    // The burst: 5 missed ticks at once, then on schedule.
    let mut burst = 0;
    while stalled.tick().now_or_never().is_some() {
        burst += 1;
    }
    assert_eq!(burst, 5);
    delivered += burst;
    on_time.reset();
    stalled.reset_immediately();
    stalled.tick().await;
    delivered += 1;
    let s = balanced(&timer, "after the burst");
    // `untaken` was woken for its tick at 10 ms and never took it.
    assert_eq!(
        s.ticks,
        delivered + 1,
        "every tick delivered, and the untaken one"
    );
    drop(untaken);
    drop(sleeps);
    let s = balanced(&timer, "untaken dropped");
    assert_eq!(s.pending, 2);
    assert_eq!(s.reset, 3, "again, on_time, stalled");
    drop((on_time, stalled));
    let s = balanced(&timer, "all dropped");
    assert_eq!(s.pending, 0);
    timer.stop();
    balanced(&timer, "stopped");
}
