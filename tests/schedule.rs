//! Netty-style callbacks.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{advance, MS};
use hashwheel::Timer;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn runs_once_on_the_driver_after_the_deadline() {
    let timer = Timer::new();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let log = ran.clone();
    let handle = timer.schedule(Duration::from_millis(10), move || {
        log.lock().unwrap().push(Instant::now());
    });
    assert_eq!(timer.pending(), 1);
    advance(Duration::from_millis(9)).await;
    assert!(ran.lock().unwrap().is_empty());
    assert!(!handle.is_expired());
    advance(MS).await;
    assert_eq!(
        *ran.lock().unwrap(),
        vec![start + Duration::from_millis(10)]
    );
    assert!(handle.is_expired());
    assert!(!handle.cancel());
    advance(Duration::from_secs(5)).await;
    assert_eq!(ran.lock().unwrap().len(), 1);
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_task_does_not_stop_the_driver() {
    let timer = Timer::new();
    let count = Arc::new(AtomicUsize::new(0));
    timer.schedule(Duration::from_millis(1), || panic!("boom"));
    let c = count.clone();
    timer.schedule(Duration::from_millis(1), move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    let c = count.clone();
    timer.schedule(Duration::from_millis(5), move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    advance(Duration::from_millis(10)).await;
    assert_eq!(count.load(Ordering::SeqCst), 2);
    // Timeouts still fire too.
    timer.sleep(Duration::from_millis(3)).await;
    assert!(!timer.is_stopped());
}

#[tokio::test(start_paused = true)]
async fn cancel_before_the_deadline_prevents_the_run() {
    let timer = Timer::new();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let handle = timer.schedule(Duration::from_millis(10), move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    let clone = handle.clone();
    drop(handle);
    advance(Duration::from_millis(5)).await;
    assert!(clone.cancel());
    assert!(clone.is_cancelled());
    assert_eq!(timer.pending(), 0);
    advance(Duration::from_millis(10)).await;
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_zero_delay_task_runs_on_the_next_tick_not_inline() {
    let timer = Timer::new();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    timer.schedule(Duration::ZERO, move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(count.load(Ordering::SeqCst), 0, "ran inline on the caller");
    advance(MS).await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn pending_tasks_outlive_every_timer_handle() {
    let timer = Timer::new();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let handle = timer.schedule(Duration::from_millis(20), move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    drop(timer);
    advance(Duration::from_millis(20)).await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert!(handle.is_expired());
}
