//! Wakers run outside the lock: a waker may create and drop timeouts.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use common::advance;
use hashwheel::{Timeout, Timer};

struct Reentrant {
    timer: Timer,
    held: Mutex<Vec<Timeout>>,
    wakes: AtomicUsize,
}

impl Wake for Reentrant {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        // Drop the timeouts we hold (one of them is the one that fired)...
        let old = std::mem::take(&mut *self.held.lock().unwrap());
        drop(old);
        // ...and create and register new ones, from inside `wake`.
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fresh = self.timer.sleep(Duration::from_millis(1));
        assert!(Pin::new(&mut fresh).poll(&mut cx).is_pending());
        self.held.lock().unwrap().push(fresh);
        let _scheduled = self.timer.schedule(Duration::from_millis(1), || {});
    }
}

#[tokio::test(start_paused = true)]
async fn waker_that_drops_and_creates_timeouts_does_not_deadlock() {
    let timer = Timer::new();
    let state = Arc::new(Reentrant {
        timer: timer.clone(),
        held: Mutex::new(Vec::new()),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(state.clone());
    let mut cx = Context::from_waker(&waker);
    let mut first = timer.sleep(Duration::from_millis(1));
    assert!(Pin::new(&mut first).poll(&mut cx).is_pending());
    state.held.lock().unwrap().push(first);
    for _ in 0..5 {
        advance(Duration::from_millis(1)).await;
    }
    assert!(state.wakes.load(Ordering::SeqCst) >= 4);
    state.held.lock().unwrap().clear();
    advance(Duration::from_millis(2)).await;
    assert_eq!(timer.pending(), 0);
}
