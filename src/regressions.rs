//! Regression tests that need the crate's insides: races made deterministic
//! with the hooks of `hooks`, and a panic injected into a driver turn. The
//! one unit-test file that is not pure arithmetic: these cannot be reached
//! from `tests/`. `.ci/run` also runs them in a release build.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::hooks;
use crate::shard::Shared;
use crate::{TaskExecutor, TaskHandle, Timer};

fn on_schedule_insert(hook: impl Fn(&Arc<Shared>) + 'static) {
    hooks::on_schedule_insert(Some(Box::new(hook)));
}

fn clear_schedule_hook() {
    hooks::on_schedule_insert(None);
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Issue 15: `stop` drained a task that `try_schedule` had put in the
/// wheel but not yet counted, and released a count never taken
/// ("attempt to subtract with overflow" in `Common::tasks_done`).
#[test]
fn stop_between_a_schedules_insert_and_its_return_releases_the_count_once() {
    current_thread().block_on(async {
        let timer = Timer::new();
        on_schedule_insert(|shared| {
            let tasks = shared.stop();
            assert_eq!(tasks.len(), 1);
        });
        let handle = timer.schedule(Duration::from_secs(1), || {});
        clear_schedule_hook();
        assert!(handle.is_cancelled());
        assert!(handle.take_task().is_some());
        assert_eq!(timer.shared.common.tasks_kept(), (0, false));
        assert_eq!(timer.pending(), 0);
    });
}

/// The same race with the driver running the task on another worker
/// the moment the shard's lock is released: the driver released the
/// count first, inside the runtime's timer processing (a debug build
/// of tokio aborts the process there).
#[test]
fn a_turn_between_a_schedules_insert_and_its_return_runs_the_task_once() {
    current_thread().block_on(async {
        // The callback runs in the turn itself, so the test sees it ran.
        let timer = Timer::builder()
            .task_executor(TaskExecutor::driver())
            .build()
            .unwrap();
        on_schedule_insert(|shared| {
            // Let the task's microsecond pass on the real clock, then
            // turn the wheels as the alarm would.
            let due = std::time::Instant::now() + Duration::from_micros(5);
            while std::time::Instant::now() < due {
                std::hint::spin_loop();
            }
            let waker = shared.common.alarm.as_runtime().unwrap().waker().unwrap();
            waker.wake();
        });
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let handle = timer.schedule(Duration::ZERO, move || flag.store(true, Ordering::SeqCst));
        clear_schedule_hook();
        assert!(ran.load(Ordering::SeqCst), "the turn ran the task");
        assert!(handle.is_expired());
        assert!(!timer.is_stopped());
        assert_eq!(timer.shared.common.tasks_kept(), (0, false));
        assert_eq!(timer.stats().fired, 1);
    });
}

/// The same race with a handle cancelling the task first.
#[test]
fn a_cancel_between_a_schedules_insert_and_its_return_releases_the_count_once() {
    current_thread().block_on(async {
        let timer = Timer::new();
        on_schedule_insert(|shared| {
            // The one task, on the shard of this thread.
            let task = {
                let state = shared.lock(shared.current_shard());
                let task = state.tasks.values().next().unwrap().clone();
                task
            };
            assert!(TaskHandle::new(task).cancel());
        });
        let handle = timer.schedule(Duration::from_secs(1), || {});
        clear_schedule_hook();
        assert!(handle.is_cancelled());
        assert!(!handle.cancel());
        assert_eq!(timer.shared.common.tasks_kept(), (0, false));
        assert_eq!(timer.stats().cancelled, 1);
        assert_eq!(timer.pending(), 0);
    });
}

/// Issue 15: nothing of the driver's unwinds into the runtime. A panic
/// in a turn (injected here) would abort a debug build of tokio and
/// kill a worker of a release build; instead the timer stops with a
/// reason, every pending timeout completes, and the runtime goes on.
#[test]
fn a_panic_in_a_turn_stops_the_timer_and_completes_every_timeout() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let timer = Timer::new();
        let far =
            tokio::spawn(timer.timeout(Duration::from_secs(3600), std::future::pending::<()>()));
        let task = timer.schedule(Duration::from_secs(3600), || {});
        tokio::task::yield_now().await;
        hooks::panic_in_turns(&timer.shared.common, true);
        // Due in a millisecond: the alarm rings, the turn panics.
        let near = timer.sleep(Duration::from_millis(1));
        tokio::time::timeout(Duration::from_secs(10), near)
            .await
            .expect("the near timeout completed");
        hooks::panic_in_turns(&timer.shared.common, false);
        assert!(timer.is_stopped());
        let err = tokio::time::timeout(Duration::from_secs(10), far)
            .await
            .expect("the far timeout completed")
            .unwrap()
            .unwrap_err();
        assert!(err.is_timer_stopped());
        assert!(err.to_string().contains("driver panicked"), "{err}");
        let err = timer.try_sleep(Duration::from_secs(1)).unwrap_err();
        assert!(err.to_string().contains("driver panicked"), "{err}");
        assert!(task.is_cancelled());
        assert!(task.take_task().is_some());
        assert_eq!(timer.pending(), 0);
        // Both workers still run tasks and the runtime's own timers.
        let workers: Vec<_> = (0..4)
            .map(|_| tokio::spawn(tokio::time::sleep(Duration::from_millis(1))))
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        // A new timer on the same runtime works.
        let fresh = Timer::new();
        fresh.sleep(Duration::from_millis(1)).await;
        assert_eq!(fresh.stats().fired, 1);
    });
}

/// The thread driver contains a panic in its turn as the tokio driver does:
/// the timer stops with the reason, every pending timeout completes, and
/// the thread ends.
#[cfg(feature = "thread")]
#[test]
fn a_panic_in_a_thread_drivers_turn_stops_the_timer_and_completes_every_timeout() {
    use futures_util::FutureExt;

    let timer = Timer::builder().driver_thread().build().unwrap();
    let mut far = timer.timeout(Duration::from_secs(3600), std::future::pending::<()>());
    assert!((&mut far).now_or_never().is_none());
    let task = timer.schedule(Duration::from_secs(3600), || {});
    hooks::panic_in_turns(&timer.shared.common, true);
    let mut near = timer.sleep(Duration::from_millis(1));
    assert!((&mut near).now_or_never().is_none());
    let start = std::time::Instant::now();
    while !timer.is_stopped() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    hooks::panic_in_turns(&timer.shared.common, false);
    assert!(timer.is_stopped(), "the panic stopped the timer");
    assert_eq!(
        (&mut near).now_or_never(),
        Some(()),
        "the near one completed"
    );
    let err = far.now_or_never().expect("completed").unwrap_err();
    assert!(err.is_timer_stopped());
    assert!(err.to_string().contains("driver panicked"), "{err}");
    assert!(task.is_cancelled());
    assert_eq!(timer.pending(), 0);
    // A new thread-driven timer works.
    let fresh = Timer::builder().driver_thread().build().unwrap();
    let mut t = fresh.sleep(Duration::from_millis(1));
    let start = std::time::Instant::now();
    while (&mut t).now_or_never().is_none() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(fresh.stats().fired, 1);
}
