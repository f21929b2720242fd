//! No driver thread is left behind: it ends on `stop()`, and once the last
//! handle to its timer (`Timer`, timeout, interval, pending task) is gone.
//!
//! Counted from outside, by name, in `/proc/self/task` (Linux): one test in
//! a binary of its own, so that no other test's timer has a thread.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

mod common;
use common::driver_threads;

use futures::executor::block_on;
use hashwheel::Timer;

/// Waits (bounded, generously) until `n` driver threads are left.
fn until_threads(n: usize) -> usize {
    let start = Instant::now();
    while driver_threads() != n && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(2));
    }
    driver_threads()
}

fn thread_timer() -> Timer {
    Timer::builder().driver_thread().build().unwrap()
}

#[test]
fn the_driver_thread_ends_on_stop_and_with_the_last_handle() {
    assert_eq!(driver_threads(), 0);

    // The last `Timer` dropped, idle: the thread ends.
    let timer = thread_timer();
    assert_eq!(until_threads(1), 1);
    block_on(timer.sleep(Duration::from_millis(3)));
    let clone = timer.clone();
    drop(timer);
    assert_eq!(until_threads(1), 1, "a clone keeps it");
    drop(clone);
    assert_eq!(until_threads(0), 0, "the last handle ends it");

    // With a timer pending in the wheel: a timeout keeps the timer (and
    // its thread) until it is dropped.
    let timer = thread_timer();
    let mut t = timer.sleep(Duration::from_secs(3600));
    assert!(futures::FutureExt::now_or_never(&mut t).is_none());
    drop(timer);
    assert_eq!(until_threads(1), 1, "the pending timeout keeps it");
    drop(t);
    assert_eq!(until_threads(0), 0);

    // A pending task keeps it too, until it ran; the callback then drops
    // the last reference on the driver's own thread.
    let timer = thread_timer();
    let (tx, rx) = std::sync::mpsc::channel();
    timer.schedule(Duration::from_millis(5), move || tx.send(()).unwrap());
    drop(timer);
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(until_threads(0), 0, "ended after its last task ran");

    // `stop()`, with handles still around.
    let timer = thread_timer();
    let _t = timer.sleep(Duration::from_secs(3600));
    assert_eq!(until_threads(1), 1);
    timer.stop();
    assert_eq!(until_threads(0), 0, "stop ends it");

    // Many timers come and go: none stays.
    for _ in 0..50 {
        let timer = thread_timer();
        block_on(timer.sleep(Duration::from_micros(200)));
    }
    assert_eq!(until_threads(0), 0);
}
