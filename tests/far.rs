//! Delays longer than one turn of the wheel, up to years and "never".

mod common;

use std::time::Duration;

use common::{advance, MS};
use hashwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn exact_multiples_of_the_span_fire_on_the_right_turn() {
    let timer = Timer::builder().wheel_size(16).build().unwrap();
    for turns in [1u64, 2, 3, 64, 65, 1000] {
        let delay = Duration::from_millis(16 * turns);
        let mut t = task::spawn(timer.sleep(delay));
        assert_pending!(t.poll());
        advance(delay - MS).await;
        assert_pending!(t.poll(), "{turns} turns: fired a tick early");
        advance(MS).await;
        assert_ready!(t.poll(), "{turns} turns: missed its turn");
    }
}

#[tokio::test(start_paused = true)]
async fn years_long_delays_fire_on_time() {
    let timer = Timer::new();
    let year = Duration::from_secs(365 * 86_400);
    let start = Instant::now();
    let mut short = task::spawn(timer.sleep(Duration::from_secs(1)));
    let mut long = task::spawn(timer.sleep(year * 2));
    assert_pending!(short.poll());
    assert_pending!(long.poll());
    advance(Duration::from_secs(1)).await;
    assert_ready!(short.poll());
    // Jump to just before the deadline, then over it.
    tokio::time::advance(year * 2 - Duration::from_secs(1) - MS).await;
    common::settle().await;
    assert_pending!(long.poll());
    advance(MS).await;
    assert_ready!(long.poll());
    assert_eq!(start.elapsed(), year * 2);
    // The wheel still fires short timers on time after two years.
    let before = Instant::now();
    timer.sleep(Duration::from_millis(3)).await;
    assert_eq!(before.elapsed(), Duration::from_millis(3));
}

/// A delay too long to keep (`Duration::MAX`, or one that overflows) is
/// tokio's "far future", about 30 years from now, through `sleep`,
/// `timeout`, `reset` and `schedule` alike; an instant given past the
/// wheel's range (146,000 years) stays never.
#[tokio::test(start_paused = true)]
async fn duration_max_and_overflow_are_tokios_thirty_years() {
    let thirty_years = Duration::from_secs(86_400 * 365 * 30);
    let timer = Timer::new();
    let start = Instant::now();
    let mut max = task::spawn(timer.sleep(Duration::MAX));
    assert_pending!(max.poll());
    let mut timeout = task::spawn(timer.timeout(Duration::MAX, std::future::pending::<()>()));
    assert_pending!(timeout.poll());
    let hundred_years = start + Duration::from_secs(86_400 * 365 * 100);
    let mut far = task::spawn(timer.sleep_until(hundred_years));
    assert_pending!(far.poll());
    let mut never = task::spawn(timer.sleep_until(start + Duration::from_secs(1 << 50)));
    assert_pending!(never.poll());
    let mut reset = timer.sleep(Duration::from_secs(1));
    reset.reset(Duration::MAX);
    let mut reset = task::spawn(reset);
    assert_pending!(reset.poll());
    let task = timer.schedule(Duration::MAX, || {});
    assert_eq!(Instant::from_std(task.deadline()), start + thirty_years);
    assert_eq!(Instant::from_std(max.deadline()), start + thirty_years);
    advance(Duration::from_secs(86_400 * 365 * 10)).await;
    assert_pending!(max.poll());
    assert_pending!(reset.poll());
    assert_eq!(timer.pending(), 6);
    // At 30 years: due, to the microsecond, and not a microsecond before.
    tokio::time::advance(thirty_years - Duration::from_secs(86_400 * 365 * 10) - MS).await;
    common::settle().await;
    assert_pending!(max.poll());
    advance(MS).await;
    assert_ready!(max.poll());
    assert!(assert_ready!(timeout.poll()).is_err());
    assert_ready!(reset.poll());
    assert!(task.is_expired());
    assert_pending!(far.poll());
    assert_pending!(never.poll());
    assert_eq!(timer.pending(), 2);
    drop((far, never));
    assert_eq!(timer.pending(), 0);
}

/// Issue 39: `Timer::sleep(Duration::MAX)` on a paused runtime with nothing
/// else to do never completed (it meant "never", so no timer was armed and
/// the runtime had nothing to auto-advance to), where tokio's completes
/// after its 30 years. tokio's own timeout is the watchdog: without the fix
/// the test fails rather than hangs.
#[tokio::test(start_paused = true)]
async fn sleep_duration_max_completes_on_a_paused_runtime_as_tokios_does() {
    let watchdog = Duration::from_secs(86_400 * 365 * 31);
    let timer = Timer::new();
    let start = Instant::now();
    tokio::time::timeout(watchdog, timer.sleep(Duration::MAX))
        .await
        .expect("Timer::sleep(Duration::MAX) never completed on a paused runtime");
    let ours = start.elapsed();
    let start = Instant::now();
    tokio::time::timeout(watchdog, tokio::time::sleep(Duration::MAX))
        .await
        .unwrap();
    assert_eq!(ours, start.elapsed(), "tokio's sleep(Duration::MAX)");
    // So do a reset to it and a callback scheduled that far.
    let mut idle = timer.sleep(Duration::from_secs(1));
    idle.reset(Duration::MAX);
    tokio::time::timeout(watchdog, idle).await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let _task = timer.schedule(Duration::MAX, move || tx.send(()).unwrap());
    tokio::time::timeout(watchdog, rx).await.unwrap().unwrap();
}

/// Regression: with a timeout pending at an instant past the wheel's range
/// ("never", which `sleep(Duration::MAX)` was too before issue 39), the
/// driver spun once the clock passed the timer's start + 30 years (31
/// years of paused time burnt a full core; 29 were fine): "never" armed
/// the alarm at a fixed instant 30 years out, and past it the driver
/// re-armed for the past on every turn. "Never" must stay never, however
/// long the uptime.
#[tokio::test(start_paused = true)]
async fn a_never_timeout_never_wakes_the_driver_however_long_the_uptime() {
    let timer = Timer::new();
    let beyond = Instant::now() + Duration::from_secs(1 << 50);
    let mut never = task::spawn(timer.sleep_until(beyond));
    assert_pending!(never.poll());
    let mut reset = timer.sleep(Duration::from_secs(1));
    reset.reset_at(beyond);
    let mut reset = task::spawn(reset);
    assert_pending!(reset.poll());
    for _ in 0..40 {
        advance(Duration::from_secs(86_400 * 365)).await;
    }
    assert_pending!(never.poll());
    assert_pending!(reset.poll());
    assert!(!never.is_woken() && !reset.is_woken());
    assert_eq!(
        timer.stats().driver_wakeups,
        0,
        "the driver woke for 'never'"
    );
    assert_eq!(timer.stats().alarm_arms, 0, "'never' armed the alarm");
    // Real timeouts keep working next to them after 40 years.
    let mut soon = task::spawn(timer.sleep(MS));
    assert_pending!(soon.poll());
    advance(MS).await;
    assert_ready!(soon.poll());
}
