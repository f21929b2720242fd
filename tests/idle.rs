//! The driver sleeps: no wake-ups while nothing is pending, and only the
//! wake-ups needed to reach a far timeout.

mod common;

use std::time::Duration;

use hashwheel::Timer;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn nothing_pending_means_no_wakeups_for_hours() {
    let timer = Timer::new();
    tokio::time::advance(Duration::from_secs(3 * 3600)).await;
    common::settle().await;
    assert_eq!(timer.driver_wakeups(), 0);

    // After some work, idle again: quiet again.
    timer.sleep(Duration::from_millis(5)).await;
    let after_work = timer.driver_wakeups();
    assert!(after_work >= 1);
    tokio::time::advance(Duration::from_secs(3 * 3600)).await;
    common::settle().await;
    assert_eq!(timer.driver_wakeups(), after_work);
}

#[tokio::test(start_paused = true)]
async fn one_far_timeout_wakes_the_driver_rarely() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_secs(3600)));
    assert_pending!(t.poll());
    for _ in 0..60 {
        tokio::time::advance(Duration::from_secs(59)).await;
        common::settle().await;
    }
    assert_pending!(t.poll());
    // One turn of the round ring is 512 * 512 ticks (~262 s): the driver
    // looks at the far entry once per turn, no more.
    let wakeups = timer.driver_wakeups();
    assert!(wakeups <= 3600 / 262 + 2, "{wakeups} wake-ups in an hour");
    tokio::time::advance(Duration::from_secs(60)).await;
    common::settle().await;
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn cancelling_everything_leaves_at_most_one_stale_wakeup() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_secs(10)));
    assert_pending!(t.poll());
    common::settle().await;
    drop(t);
    tokio::time::advance(Duration::from_secs(3600)).await;
    common::settle().await;
    assert!(timer.driver_wakeups() <= 1);
}
