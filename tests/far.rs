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

#[tokio::test(start_paused = true)]
async fn duration_max_and_overflow_mean_never() {
    let timer = Timer::new();
    let mut never = task::spawn(timer.sleep(Duration::MAX));
    assert_pending!(never.poll());
    let far = Instant::now() + Duration::from_secs(86_400 * 365 * 100);
    let mut far = task::spawn(timer.sleep_until(far));
    assert_pending!(far.poll());
    let mut reset = timer.sleep(Duration::from_secs(1));
    reset.reset(Duration::MAX);
    let mut reset = task::spawn(reset);
    assert_pending!(reset.poll());
    advance(Duration::from_secs(86_400 * 365 * 10)).await;
    assert_pending!(never.poll());
    assert_pending!(reset.poll());
    assert_eq!(timer.pending(), 3);
    assert!(Instant::from_std(never.deadline()) > Instant::now());
    drop((never, far, reset));
    assert_eq!(timer.pending(), 0);
}

/// Regression: with a `sleep(Duration::MAX)` pending, the driver spun once
/// the clock passed the timer's start + 30 years (31 years of paused time
/// burnt a full core; 29 were fine): "never" armed the alarm at a fixed
/// instant 30 years out, and past it the driver re-armed for the past on
/// every turn. "Never" must stay never, however long the uptime.
#[tokio::test(start_paused = true)]
async fn a_never_timeout_never_wakes_the_driver_however_long_the_uptime() {
    let timer = Timer::new();
    let mut never = task::spawn(timer.sleep(Duration::MAX));
    assert_pending!(never.poll());
    let mut reset = timer.sleep(Duration::from_secs(1));
    reset.reset(Duration::MAX);
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
