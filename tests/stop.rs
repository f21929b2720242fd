//! `Timer::stop` cancels everything and ends the driver.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::advance;
use hashwheel::Timer;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn stop_wakes_pending_timeouts_and_returns_unrun_tasks() {
    let timer = Timer::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let done = timer.schedule(Duration::from_millis(1), move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    advance(Duration::from_millis(1)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    let r = ran.clone();
    let later = timer.schedule(Duration::from_secs(5), move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    let mut polled = task::spawn(timer.sleep(Duration::from_secs(5)));
    assert_pending!(polled.poll());
    let mut unpolled = task::spawn(timer.sleep(Duration::from_secs(5)));
    assert_eq!(timer.pending(), 3);

    let never_ran = timer.stop();
    assert_eq!(never_ran.len(), 1);
    assert!(never_ran[0].is_cancelled());
    assert!(later.is_cancelled());
    assert!(!later.cancel());
    assert!(done.is_expired() && !done.is_cancelled());
    assert!(timer.is_stopped());
    assert_eq!(timer.pending(), 0);

    assert!(polled.is_woken());
    assert_ready!(polled.poll());
    assert!(polled.is_cancelled());
    assert!(!polled.is_expired());
    assert_ready!(unpolled.poll());
    assert!(unpolled.is_cancelled());

    advance(Duration::from_secs(10)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 1, "a stopped task ran");
    assert!(timer.stop().is_empty(), "stopping twice returns nothing");
}

#[tokio::test(start_paused = true)]
async fn after_stop_new_timeouts_are_refused() {
    let timer = Timer::new();
    timer.stop();
    assert!(timer
        .try_sleep(Duration::from_secs(1))
        .unwrap_err()
        .is_stopped());
    assert!(timer
        .try_schedule(Duration::from_secs(1), || {})
        .unwrap_err()
        .is_stopped());
    let panic = std::panic::catch_unwind(|| timer.sleep(Duration::from_secs(1))).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert_eq!(msg, "hashwheel: timer is stopped");
}

#[tokio::test(start_paused = true)]
async fn reset_after_stop_stays_cancelled() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(1)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(1)).await;
    assert_ready!(t.poll());
    timer.stop();
    t.reset(Duration::from_millis(5));
    assert_ready!(t.poll());
    assert_eq!(timer.pending(), 0);
}

#[test]
fn stop_ends_the_driver_task() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timer = rt.block_on(async {
        let timer = Timer::new();
        let t = timer.sleep(Duration::from_millis(1));
        t.await;
        timer
    });
    assert_eq!(rt.metrics().num_alive_tasks(), 1, "the driver runs");
    timer.stop();
    rt.block_on(common::settle());
    assert_eq!(rt.metrics().num_alive_tasks(), 0, "the driver ended");
}

#[test]
fn dropping_every_handle_ends_the_driver_task() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timer = rt.block_on(async { Timer::new() });
    let timeout = timer.sleep(Duration::from_secs(1));
    drop(timer);
    rt.block_on(common::settle());
    assert_eq!(rt.metrics().num_alive_tasks(), 1, "a Timeout keeps it");
    drop(timeout);
    rt.block_on(common::settle());
    assert_eq!(rt.metrics().num_alive_tasks(), 0);
}
