//! Dropping or cancelling a timeout removes it at once.

mod common;

use std::time::Duration;

use common::advance;
use hashwheel::Timer;
use tokio_test::{assert_pending, task};

#[tokio::test(start_paused = true)]
async fn drop_lowers_pending_before_it_returns() {
    let timer = Timer::new();
    let unpolled = timer.sleep(Duration::from_secs(1));
    let mut polled = task::spawn(timer.sleep(Duration::from_secs(1)));
    assert_pending!(polled.poll());
    assert_eq!(timer.pending(), 2);
    drop(unpolled);
    assert_eq!(timer.pending(), 1);
    drop(polled);
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn cancel_returns_false_after_firing() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(5)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(5)).await;
    assert!(t.is_expired());
    assert_eq!(timer.pending(), 0);
    assert!(!t.into_inner().cancel());

    let pending = timer.sleep(Duration::from_millis(5));
    assert!(pending.cancel());
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn cancelled_timeouts_never_wake_their_task() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(5)));
    assert_pending!(t.poll());
    let (counter, waker) = common::counting_waker();
    let mut other = timer.sleep(Duration::from_millis(5));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut other).poll(&mut cx).is_pending());
    drop(other);
    advance(Duration::from_millis(10)).await;
    assert!(t.is_woken());
    assert_eq!(counter.wakes(), 0);
}

use std::future::Future;
