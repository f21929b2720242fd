//! Zero delays and past deadlines complete at once.

mod common;

use std::time::Duration;

use common::{advance, MS};
use hashwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn zero_delay_is_ready_on_first_poll_on_a_tick_boundary() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::ZERO));
    assert_ready!(t.poll());
    assert!(t.is_expired());
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn zero_delay_mid_tick_completes_by_the_next_tick() {
    let timer = Timer::new();
    advance(Duration::from_micros(300)).await;
    let mut t = task::spawn(timer.sleep(Duration::ZERO));
    if t.poll().is_pending() {
        advance(MS).await;
        assert!(t.is_woken());
        assert_ready!(t.poll());
    }
}

#[tokio::test(start_paused = true)]
async fn past_deadline_is_ready_after_the_driver_caught_up() {
    let timer = Timer::new();
    let past = Instant::now();
    // Keep the driver busy so its cursor moves past `past`.
    let _keep = timer.sleep(Duration::from_secs(60));
    advance(Duration::from_millis(50)).await;
    let mut t = task::spawn(timer.sleep_until(past));
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn past_deadline_with_sleeping_driver_fires_on_the_next_tick() {
    let timer = Timer::new();
    tokio::time::advance(Duration::from_secs(5)).await;
    let before = Instant::now();
    let mut t = task::spawn(timer.sleep_until(before - Duration::from_secs(1)));
    if t.poll().is_pending() {
        common::settle().await;
        assert!(t.is_woken(), "the driver must be woken by the insert");
        assert_ready!(t.poll());
    }
    assert_eq!(
        Instant::now(),
        before,
        "completed without waiting for time to pass"
    );
}

#[tokio::test(start_paused = true)]
async fn timeout_wrapper_passes_ready_futures_and_times_out_slow_ones() {
    let timer = Timer::new();
    assert_eq!(timer.timeout(Duration::ZERO, async { 1 }).await, Ok(1));
    let mut t = task::spawn(timer.timeout(Duration::from_millis(5), std::future::pending::<()>()));
    assert_pending!(t.poll());
    advance(Duration::from_millis(5)).await;
    let err = assert_ready!(t.poll()).unwrap_err();
    assert_eq!(err.to_string(), "deadline has elapsed");
}
