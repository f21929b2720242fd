//! What the timer reports through `tracing`: a capturing subscriber records
//! each event's level and message.

mod common;

use std::time::Duration;

use common::advance;
use common::capture::Capture;
use hashwheel::{TaskExecutor, Timer};
use tracing::Level;

#[tokio::test(start_paused = true)]
async fn a_panicking_task_is_reported_with_warn() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    timer.schedule(Duration::from_millis(1), || panic!("boom"));
    advance(Duration::from_millis(1)).await;
    assert!(capture.has(Level::WARN, "hashwheel: a scheduled task panicked"));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_task_is_reported_with_warn_under_each_choice() {
    let inline = TaskExecutor::custom(|callback| callback());
    let queued = tokio::runtime::Handle::current();
    let spawned = TaskExecutor::custom(move |callback| drop(queued.spawn(async { callback() })));
    let choices = [
        TaskExecutor::spawn(),
        TaskExecutor::driver(),
        inline,
        spawned,
    ];
    for executor in choices {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let name = format!("{executor:?}");
        let timer = Timer::builder().task_executor(executor).build().unwrap();
        timer.schedule(Duration::from_millis(1), || panic!("boom"));
        advance(Duration::from_millis(1)).await;
        assert!(
            capture.has(Level::WARN, "hashwheel: a scheduled task panicked"),
            "{name}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_executor_is_reported_with_warn() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let executor = TaskExecutor::custom(|_| panic!("executor down"));
    let timer = Timer::builder().task_executor(executor).build().unwrap();
    timer.schedule(Duration::from_millis(1), || {});
    advance(Duration::from_millis(1)).await;
    assert!(capture.has(Level::WARN, "hashwheel: the task executor panicked"));
    assert!(!capture.has(Level::WARN, "hashwheel: a scheduled task panicked"));
}

#[tokio::test(start_paused = true)]
async fn a_driver_that_runs_late_warns_when_it_catches_up() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    let mut t = tokio_test::task::spawn(timer.sleep(Duration::from_millis(5)));
    assert!(t.poll().is_pending());
    common::settle().await;
    // One jump of 300 ms: the driver first runs 295 ticks after its plan,
    // as when a blocked worker starves it.
    advance(Duration::from_millis(300)).await;
    assert!(t.poll().is_ready());
    assert_eq!(timer.stats().late_ticks, 295);
    assert!(capture.has(Level::WARN, "hashwheel: driver ran late, catching up"));
}

#[tokio::test(start_paused = true)]
async fn stop_and_the_driver_lifecycle_are_debug_events() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    let _t = timer.sleep(Duration::from_secs(1));
    common::settle().await;
    assert!(capture.has(Level::DEBUG, "hashwheel: driver started"));
    timer.stop();
    common::settle().await;
    assert!(capture.has(
        Level::DEBUG,
        "hashwheel: timer stopped; cancelled what was pending"
    ));
    assert!(capture.has(Level::DEBUG, "hashwheel: driver ended"));
}

/// Netty's warning for thread-driven timers: the 65th live one in the
/// process warns (once), naming the fix.
#[cfg(feature = "thread")]
#[test]
fn too_many_thread_driven_timers_warn_once() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timers: Vec<Timer> = (0..70)
        .map(|_| Timer::builder().driver_thread().build().unwrap())
        .collect();
    let warned: Vec<String> = capture
        .messages(Level::WARN)
        .into_iter()
        .filter(|m| m.starts_with("hashwheel: too many thread-driven Timers"))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("share clones"), "names the fix");
    drop(timers);
}
