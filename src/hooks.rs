//! Test-only hooks into the timer's racy moments, and the regression tests
//! that use them. Compiled only for the crate's own unit tests, so normal
//! builds carry none of it.
//!
//! A race between two threads that a stress run hits once in thousands of
//! runs is made deterministic here by running the other side of the race at
//! the exact point where it did harm.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use crate::shard::{Common, Shared};

type ScheduleHook = Box<dyn Fn(&Arc<Shared>)>;

thread_local! {
    /// Runs in `Timer::try_schedule` on this thread, after the task went into
    /// the wheel and the shard's lock was released, before it returns.
    static AFTER_SCHEDULE_INSERT: RefCell<Option<ScheduleHook>> = const { RefCell::new(None) };
}

/// The timers (by the address of their `Common`) whose next driver turns
/// panic.
static PANIC_IN_TURN: Mutex<Vec<usize>> = Mutex::new(Vec::new());

pub(crate) fn after_schedule_insert(shared: &Arc<Shared>) {
    AFTER_SCHEDULE_INSERT.with(|hook| {
        if let Some(hook) = hook.borrow().as_ref() {
            hook(shared);
        }
    });
}

pub(crate) fn in_turn(common: &Common) {
    let id = common as *const Common as usize;
    let panics = PANIC_IN_TURN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&id);
    if panics {
        panic!("injected panic in a driver turn");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::shard::lock;
    use crate::{TaskHandle, Timer};

    fn on_schedule_insert(hook: impl Fn(&Arc<Shared>) + 'static) {
        AFTER_SCHEDULE_INSERT.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    }

    fn clear_schedule_hook() {
        AFTER_SCHEDULE_INSERT.with(|h| *h.borrow_mut() = None);
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
            let timer = Timer::new();
            on_schedule_insert(|shared| {
                // Let the task's microsecond pass on the real clock, then
                // turn the wheels as the alarm would.
                let due = std::time::Instant::now() + Duration::from_micros(5);
                while std::time::Instant::now() < due {
                    std::hint::spin_loop();
                }
                let waker = lock(&shared.common.alarm).as_ref().unwrap().waker.clone();
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
                let task = {
                    let state = shared.lock(0);
                    state.tasks.values().next().unwrap().clone()
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
            let far = tokio::spawn(
                timer.timeout(Duration::from_secs(3600), std::future::pending::<()>()),
            );
            let task = timer.schedule(Duration::from_secs(3600), || {});
            tokio::task::yield_now().await;
            let id = &*timer.shared.common as *const Common as usize;
            PANIC_IN_TURN.lock().unwrap().push(id);
            // Due in a millisecond: the alarm rings, the turn panics.
            let near = timer.sleep(Duration::from_millis(1));
            tokio::time::timeout(Duration::from_secs(10), near)
                .await
                .expect("the near timeout completed");
            PANIC_IN_TURN.lock().unwrap().retain(|&t| t != id);
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
            assert_eq!(
                timer.shared.common.turn_state.load(Ordering::SeqCst),
                crate::shard::IDLE
            );
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
}
