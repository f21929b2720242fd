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

/// A reset to a later deadline takes no lock: the entry stays where it
/// was, and the driver re-files it when the old deadline comes due,
/// without waking the task. Everything the handle and the timer report is
/// exact meanwhile.
#[tokio::test(start_paused = true)]
async fn reset_later_is_exact_before_and_after_the_old_deadline() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(10)));
    assert_pending!(t.poll());
    for i in 1..=5u64 {
        t.reset_at(start + Duration::from_millis(10 + 7 * i));
        assert_eq!(
            Instant::from_std(t.deadline()),
            start + Duration::from_millis(10 + 7 * i)
        );
    }
    assert_eq!((timer.pending(), timer.stats().reset), (1, 5));
    // The old deadline passes: re-filed, not fired, not woken.
    advance(Duration::from_millis(30)).await;
    assert!(!t.is_woken());
    assert!(!t.is_expired());
    assert_eq!(
        Instant::from_std(t.deadline()),
        start + Duration::from_millis(45)
    );
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.reset), (1, 0, 5));
    // Extended again after the re-file, then due: fired once, at 50 ms.
    t.reset_at(start + Duration::from_millis(50));
    advance(Duration::from_millis(19)).await;
    assert!(!t.is_woken());
    advance(MS).await;
    assert!(t.is_woken());
    assert!(t.is_expired());
    assert_ready!(t.poll());
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    let s = timer.stats();
    assert_eq!((s.pending, s.fired, s.reset), (0, 1, 6));
}

/// Later, then earlier than the first deadline: the earlier reset takes the
/// lock and moves the entry, wherever the extension left it.
#[tokio::test(start_paused = true)]
async fn reset_later_then_earlier_fires_at_the_earlier() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(20)));
    assert_pending!(t.poll());
    t.reset(Duration::from_millis(40));
    t.reset(Duration::from_millis(5));
    advance(Duration::from_millis(4)).await;
    assert!(!t.is_woken());
    advance(MS).await;
    assert!(t.is_woken());
    assert_ready!(t.poll());
}

/// An extension past what the deadline word holds (years) goes through
/// the lock, and is exact too.
#[tokio::test(start_paused = true)]
async fn reset_later_by_years_is_exact() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(20)));
    assert_pending!(t.poll());
    let far = Instant::now() + Duration::from_secs(86_400 * 365 * 10);
    t.reset_at(far);
    assert_eq!(Instant::from_std(t.deadline()), far);
    advance(Duration::from_millis(100)).await;
    assert!(!t.is_woken());
    assert_eq!(timer.pending(), 1);
    drop(t);
    assert_eq!(timer.pending(), 0);
}
