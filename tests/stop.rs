//! `Timer::stop` cancels everything and ends the driver.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{advance, MS};
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
    let err = timer
        .try_timeout(Duration::from_secs(1), std::future::ready(()))
        .unwrap_err();
    assert!(err.is_stopped() && !err.is_at_capacity());
    assert_eq!(err.to_string(), "timer is stopped");
    // Past deadlines too, which never enter the wheel.
    let now = tokio::time::Instant::now();
    assert!(timer
        .try_timeout_at(now, std::future::ready(()))
        .unwrap_err()
        .is_stopped());
    let panic = std::panic::catch_unwind(|| timer.sleep(Duration::from_secs(1))).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert_eq!(msg, "hashwheel: timer is stopped");
    let panic = std::panic::catch_unwind(|| drop(timer.timeout(Duration::from_secs(1), async {})))
        .unwrap_err();
    assert_eq!(panic_message(panic), "hashwheel: timer is stopped");
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

const RUNTIME_GONE: &str = "timer is stopped: the runtime that ran this timer's driver has \
                            shut down; build one Timer per runtime";

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic.downcast_ref::<String>().unwrap().clone()
}

/// Regression: a timer whose runtime had shut down refused new timeouts
/// with a bare "timer is stopped", which did not say why.
#[test]
fn a_timer_that_outlived_its_runtime_says_why_it_stopped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timer = rt.block_on(async { Timer::new() });
    drop(rt);
    assert!(timer.is_stopped());
    let err = timer.try_sleep(Duration::from_secs(5)).unwrap_err();
    assert!(err.is_stopped());
    assert_eq!(err.to_string(), RUNTIME_GONE);
    let err = timer
        .try_schedule(Duration::from_secs(5), || {})
        .unwrap_err();
    assert_eq!(err.to_string(), RUNTIME_GONE);
    let panic = std::panic::catch_unwind(|| timer.sleep(Duration::from_secs(5))).unwrap_err();
    assert_eq!(panic_message(panic), format!("hashwheel: {RUNTIME_GONE}"));
    let err = timer
        .try_timeout(Duration::from_secs(5), std::future::ready(()))
        .unwrap_err();
    assert_eq!(err.to_string(), RUNTIME_GONE);
    let err = timer
        .try_timeout_at(std::time::Instant::now(), std::future::ready(()))
        .unwrap_err();
    assert_eq!(err.to_string(), RUNTIME_GONE);
    // A stop afterwards changes nothing: the first reason stays.
    assert!(timer.stop().is_empty());
    assert_eq!(
        timer.try_sleep(Duration::ZERO).unwrap_err().to_string(),
        RUNTIME_GONE
    );
}

/// Regression: a `static` timer shared by several `#[tokio::test]`s (one
/// runtime each) panicked in the second test with "timer is stopped".
#[test]
fn a_static_timer_shared_by_two_test_runtimes_panics_naming_the_cause() {
    static TIMER: std::sync::OnceLock<Timer> = std::sync::OnceLock::new();
    let first_test = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    };
    first_test().block_on(async {
        let timer = TIMER.get_or_init(Timer::new);
        timer.sleep(Duration::from_millis(5)).await;
    });
    let panic = first_test()
        .block_on(async {
            let timer = TIMER.get_or_init(Timer::new);
            tokio::spawn(async move { timer.sleep(Duration::from_millis(5)).await })
                .await
                .unwrap_err()
        })
        .into_panic();
    let msg = panic_message(panic);
    assert!(msg.ends_with("build one Timer per runtime"), "{msg}");
}

/// A `timeout` cut short by `stop` is told apart from a deadline that
/// passed.
#[tokio::test(start_paused = true)]
async fn a_timeout_cut_short_by_stop_is_not_a_deadline_that_passed() {
    let timer = Timer::new();
    let err = timer
        .timeout(Duration::from_millis(5), std::future::pending::<()>())
        .await
        .unwrap_err();
    assert!(!err.is_timer_stopped());
    assert_eq!(err.to_string(), "deadline has elapsed");

    let mut fut = task::spawn(timer.timeout(Duration::from_secs(5), std::future::pending::<()>()));
    assert_pending!(fut.poll());
    let mut unpolled =
        task::spawn(timer.timeout(Duration::from_secs(5), std::future::pending::<()>()));
    timer.stop();
    assert!(fut.is_woken());
    for fut in [&mut fut, &mut unpolled] {
        let err = assert_ready!(fut.poll()).unwrap_err();
        assert!(err.is_timer_stopped());
        assert_eq!(err.to_string(), "timer stopped before the deadline");
    }
}

/// Regression: when the runtime that ran the driver shut down, a held
/// `timeout` completed at once with an `Elapsed` like any other, though no
/// deadline had passed.
#[test]
fn a_timeout_cut_short_by_runtime_shutdown_says_why() {
    let (driver_rt, timer) = common::timer_on_its_own_runtime();
    let mut fut = task::spawn(timer.timeout(Duration::from_secs(5), std::future::pending::<()>()));
    assert_pending!(fut.poll());
    drop(driver_rt);
    assert!(fut.is_woken());
    let err = assert_ready!(fut.poll()).unwrap_err();
    assert!(err.is_timer_stopped());
    assert_eq!(
        err.to_string(),
        "timer stopped before the deadline: the runtime that ran this timer's driver has \
         shut down; build one Timer per runtime"
    );
}

/// Regression: `stop` returned handles whose closures were already dropped,
/// so the tasks that never ran could not be run (Netty's `stop()` hands them
/// back to run).
#[tokio::test(start_paused = true)]
async fn tasks_that_stop_hands_back_can_be_run_once() {
    let timer = Timer::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = |n| {
        let ran = ran.clone();
        move || {
            ran.fetch_add(n, Ordering::SeqCst);
        }
    };
    let pending = timer.schedule(Duration::from_secs(5), counter(1));
    let cancelled = timer.schedule(Duration::from_secs(5), counter(10));
    let fired = timer.schedule(MS, counter(100));
    advance(MS).await;
    assert_eq!(ran.load(Ordering::SeqCst), 100);
    assert!(cancelled.cancel());
    assert!(
        pending.take_task().is_none(),
        "a pending task is the timer's"
    );
    assert!(!pending.run());

    let never_ran = timer.stop();
    assert_eq!(never_ran.len(), 1);
    assert!(!cancelled.run(), "cancel() dropped the closure");
    assert!(!fired.run(), "it ran already");
    assert!(never_ran[0].run());
    assert_eq!(ran.load(Ordering::SeqCst), 101);
    assert!(!never_ran[0].run(), "once");
    assert!(pending.take_task().is_none(), "through a clone too");
    assert_eq!(ran.load(Ordering::SeqCst), 101);
}

#[tokio::test(start_paused = true)]
async fn a_task_handed_back_by_stop_frees_its_closure_with_the_last_handle() {
    let timer = Timer::new();
    let token = Arc::new(());
    let held = token.clone();
    let handle = timer.schedule(Duration::from_secs(5), move || drop(held));
    let never_ran = timer.stop();
    assert_eq!(Arc::strong_count(&token), 2, "kept for the caller");
    drop(never_ran);
    assert_eq!(Arc::strong_count(&token), 2, "a handle is left");
    drop(handle);
    assert_eq!(Arc::strong_count(&token), 1);
}
