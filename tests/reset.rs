//! Resetting moves a timeout, before and after it fired.

mod common;

use std::time::Duration;

use common::{advance, MS};
use hashwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn reset_later_before_firing() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(10)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(5)).await;
    t.reset(Duration::from_millis(10));
    advance(Duration::from_millis(9)).await;
    assert!(!t.is_woken());
    assert_pending!(t.poll());
    advance(MS).await;
    assert!(t.is_woken());
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn reset_earlier_wakes_the_driver() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_secs(3600)));
    assert_pending!(t.poll());
    common::settle().await;
    t.reset(Duration::from_millis(2));
    advance(Duration::from_millis(2)).await;
    assert!(t.is_woken());
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn reset_to_the_past_wakes_the_task_at_once() {
    let timer = Timer::new();
    let _other = timer.sleep(Duration::from_secs(60));
    advance(Duration::from_millis(20)).await;
    let mut t = task::spawn(timer.sleep(Duration::from_secs(10)));
    assert_pending!(t.poll());
    let before = Instant::now();
    t.reset_at(before - Duration::from_millis(10));
    common::settle().await;
    assert!(t.is_woken());
    assert_ready!(t.poll());
    assert_eq!(Instant::now(), before, "no time had to pass");
    assert_eq!(timer.pending(), 1);
}

#[tokio::test(start_paused = true)]
async fn reset_after_firing_can_be_awaited_again() {
    let timer = Timer::new();
    let mut t = timer.sleep(Duration::from_millis(3));
    for round in 0..5 {
        let start = Instant::now();
        (&mut t).await;
        assert!(t.is_expired());
        assert_eq!(timer.pending(), 0);
        if round > 0 {
            assert_eq!(start.elapsed(), Duration::from_millis(7));
        }
        t.reset(Duration::from_millis(7));
        assert!(!t.is_expired());
        assert_eq!(timer.pending(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn reset_an_unpolled_timeout() {
    let timer = Timer::new();
    let mut t = timer.sleep(Duration::from_secs(100));
    t.reset(Duration::from_millis(4));
    let start = Instant::now();
    t.await;
    assert_eq!(start.elapsed(), Duration::from_millis(4));
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_pattern_reset_on_every_message() {
    let timer = Timer::new();
    let mut idle = task::spawn(timer.sleep(Duration::from_millis(100)));
    assert_pending!(idle.poll());
    for _ in 0..50 {
        advance(Duration::from_millis(60)).await;
        assert_pending!(idle.poll());
        idle.reset(Duration::from_millis(100));
    }
    advance(Duration::from_millis(100)).await;
    assert_ready!(idle.poll());
}
