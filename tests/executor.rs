//! Where `schedule` callbacks run: every schedule path under each
//! `TaskExecutor` (spawned as tasks, the default; on the driver; handed to a
//! user's executor), panics contained under each, and a callback that
//! blocks stalling nothing under the default.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::{advance, settle, MS};
use hashwheel::{TaskExecutor, Timer};
use tokio::time::Instant;

/// One of the choices, with how many callbacks it was handed where we can
/// count them (the user's executor).
struct Choice {
    name: &'static str,
    executor: TaskExecutor,
    handed: Arc<AtomicUsize>,
}

/// Every choice. The user's executor counts what it gets and runs it at
/// once, on the driver: deterministic under paused time.
fn choices() -> Vec<Choice> {
    let handed = Arc::new(AtomicUsize::new(0));
    let count = handed.clone();
    let custom = TaskExecutor::custom(move |callback| {
        count.fetch_add(1, Ordering::SeqCst);
        callback();
    });
    vec![
        Choice {
            name: "spawn",
            executor: TaskExecutor::spawn(),
            handed: Arc::default(),
        },
        Choice {
            name: "driver",
            executor: TaskExecutor::driver(),
            handed: Arc::default(),
        },
        Choice {
            name: "custom",
            executor: custom,
            handed,
        },
    ]
}

fn timer(choice: &Choice) -> Timer {
    Timer::builder()
        .task_executor(choice.executor.clone())
        .build()
        .unwrap()
}

fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    (count, move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn the_choices_debug_by_name_and_the_default_spawns() {
    assert_eq!(
        format!("{:?}", TaskExecutor::spawn()),
        "TaskExecutor(spawn)"
    );
    assert_eq!(
        format!("{:?}", TaskExecutor::driver()),
        "TaskExecutor(driver)"
    );
    assert_eq!(
        format!("{:?}", TaskExecutor::custom(|_| {})),
        "TaskExecutor(custom)"
    );
    assert_eq!(
        format!("{:?}", TaskExecutor::default()),
        "TaskExecutor(spawn)"
    );
    let builder = format!("{:?}", Timer::builder());
    assert!(
        builder.contains("task_executor: TaskExecutor(spawn)"),
        "{builder}"
    );
}

#[tokio::test(start_paused = true)]
async fn schedule_runs_once_after_the_deadline_under_each_choice() {
    for choice in choices() {
        let timer = timer(&choice);
        let ran = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let log = ran.clone();
        let handle = timer.schedule(Duration::from_millis(10), move || {
            log.lock().unwrap().push(Instant::now());
        });
        advance(Duration::from_millis(9)).await;
        assert!(ran.lock().unwrap().is_empty(), "{}: early", choice.name);
        advance(MS).await;
        assert_eq!(
            *ran.lock().unwrap(),
            vec![start + Duration::from_millis(10)],
            "{}",
            choice.name
        );
        assert!(handle.is_expired(), "{}", choice.name);
        assert!(!handle.cancel(), "{}", choice.name);
        advance(Duration::from_secs(1)).await;
        assert_eq!(ran.lock().unwrap().len(), 1, "{}", choice.name);
        assert_eq!(timer.pending(), 0, "{}", choice.name);
    }
    // The user's executor got its one callback.
    let choice = choices().pop().unwrap();
    let timer = timer(&choice);
    timer.schedule(MS, || {});
    advance(MS).await;
    assert_eq!(choice.handed.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_spawned_callback_runs_in_a_task_and_the_others_outside_any() {
    for choice in choices() {
        let timer = timer(&choice);
        let in_task = Arc::new(Mutex::new(None));
        let seen = in_task.clone();
        timer.schedule(MS, move || {
            *seen.lock().unwrap() = Some(tokio::task::try_id().is_some());
        });
        advance(MS).await;
        let expected = choice.name == "spawn";
        assert_eq!(*in_task.lock().unwrap(), Some(expected), "{}", choice.name);
    }
}

#[test]
fn spawned_callbacks_run_on_the_runtime_of_the_driver() {
    let (rt, timer) = common::timer_on_its_own_runtime();
    let (tx, rx) = mpsc::channel();
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Scheduled from another runtime: the callback still runs on the
    // driver's.
    other.block_on(async {
        timer.schedule(MS, move || {
            tx.send(tokio::runtime::Handle::current().id()).unwrap();
        });
    });
    // The runtime runs the spawned callback only while something drives
    // it: drive it until the callback reports (on a loaded machine the
    // callback and a 5 ms sleep can come due in the same turn, and a lone
    // `block_on(sleep)` may return before the spawned task ran).
    let ran_on = rt.block_on(async {
        let start = std::time::Instant::now();
        loop {
            if let Ok(id) = rx.try_recv() {
                break id;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the callback never ran"
            );
            timer.sleep(MS).await;
        }
    });
    assert_eq!(ran_on, rt.handle().id());
}

#[tokio::test(start_paused = true)]
async fn try_schedule_runs_and_fails_after_stop_under_each_choice() {
    for choice in choices() {
        let timer = timer(&choice);
        let (count, task) = counter();
        let handle = timer.try_schedule(Duration::from_millis(3), task).unwrap();
        advance(Duration::from_millis(3)).await;
        assert_eq!(count.load(Ordering::SeqCst), 1, "{}", choice.name);
        assert!(handle.is_expired(), "{}", choice.name);
        timer.stop();
        let err = timer.try_schedule(MS, || {}).unwrap_err();
        assert!(err.is_stopped(), "{}", choice.name);
    }
}

#[tokio::test(start_paused = true)]
async fn cancel_keeps_the_task_from_the_executor_under_each_choice() {
    for choice in choices() {
        let timer = timer(&choice);
        let (count, task) = counter();
        let handle = timer.schedule(Duration::from_millis(10), task);
        advance(Duration::from_millis(5)).await;
        assert!(handle.cancel(), "{}", choice.name);
        assert!(handle.is_cancelled(), "{}", choice.name);
        assert!(
            handle.take_task().is_none(),
            "{}: cancel drops it",
            choice.name
        );
        advance(Duration::from_millis(10)).await;
        assert_eq!(count.load(Ordering::SeqCst), 0, "{}", choice.name);
        assert_eq!(choice.handed.load(Ordering::SeqCst), 0, "{}", choice.name);
        assert_eq!(timer.pending(), 0, "{}", choice.name);
    }
}

#[tokio::test(start_paused = true)]
async fn stopped_tasks_run_and_are_taken_on_the_caller_under_each_choice() {
    for choice in choices() {
        let timer = timer(&choice);
        let (run_count, run_task) = counter();
        let (take_count, take_task) = counter();
        let ran_here = Arc::new(Mutex::new(None));
        let (_, due) = counter();
        let due = timer.schedule(MS, due);
        advance(MS).await;
        let handed_before = choice.handed.load(Ordering::SeqCst);
        let here = std::thread::current().id();
        let seen = ran_here.clone();
        let to_run = timer.schedule(Duration::from_secs(60), move || {
            *seen.lock().unwrap() = Some(std::thread::current().id());
            run_task();
        });
        let to_take = timer.schedule(Duration::from_secs(60), take_task);
        assert!(to_run.take_task().is_none(), "{}: pending", choice.name);
        assert!(!to_run.run(), "{}: pending", choice.name);

        let never_ran = timer.stop();
        assert_eq!(
            never_ran.len(),
            2,
            "{}: the due task is not returned",
            choice.name
        );
        assert!(due.is_expired(), "{}", choice.name);
        assert!(to_run.is_cancelled() && to_take.is_cancelled());
        assert!(to_run.run(), "{}", choice.name);
        assert!(!to_run.run(), "{}: runs once", choice.name);
        assert_eq!(run_count.load(Ordering::SeqCst), 1, "{}", choice.name);
        assert_eq!(*ran_here.lock().unwrap(), Some(here), "{}", choice.name);
        let closure = to_take.take_task().expect("the closure comes back");
        assert!(to_take.take_task().is_none(), "{}: once", choice.name);
        assert_eq!(take_count.load(Ordering::SeqCst), 0, "{}", choice.name);
        closure();
        assert_eq!(take_count.load(Ordering::SeqCst), 1, "{}", choice.name);
        // Nothing that stop returned went to the executor.
        advance(Duration::from_secs(120)).await;
        assert_eq!(
            choice.handed.load(Ordering::SeqCst),
            handed_before,
            "{}",
            choice.name
        );
        assert_eq!(run_count.load(Ordering::SeqCst), 1, "{}", choice.name);
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_callback_is_contained_under_each_choice() {
    for choice in choices() {
        let timer = timer(&choice);
        let (count, task) = counter();
        timer.schedule(MS, || panic!("boom"));
        let after = timer.schedule(MS, task);
        let (later_count, later) = counter();
        timer.schedule(Duration::from_millis(5), later);
        advance(Duration::from_millis(10)).await;
        assert_eq!(count.load(Ordering::SeqCst), 1, "{}", choice.name);
        assert_eq!(later_count.load(Ordering::SeqCst), 1, "{}", choice.name);
        assert!(after.is_expired(), "{}", choice.name);
        // Timeouts still fire too, and the timer is not stopped.
        timer.sleep(Duration::from_millis(3)).await;
        assert!(!timer.is_stopped(), "{}", choice.name);
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_executor_does_not_unwind_into_the_driver() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let executor = TaskExecutor::custom(move |callback| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("executor down");
        }
        callback();
    });
    let timer = Timer::builder().task_executor(executor).build().unwrap();
    let (lost, first) = counter();
    let (count, second) = counter();
    timer.schedule(MS, first);
    timer.schedule(Duration::from_millis(2), second);
    advance(Duration::from_millis(5)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(lost.load(Ordering::SeqCst), 0, "its callback is lost");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    timer.sleep(Duration::from_millis(3)).await;
    assert!(!timer.is_stopped());
}

#[tokio::test(start_paused = true)]
async fn a_callback_that_panics_on_the_users_executor_is_caught_there() {
    // The executor runs callbacks later, on a task of its own: the panic
    // is caught inside the callback it was given.
    let handle = tokio::runtime::Handle::current();
    let executor = TaskExecutor::custom(move |callback| {
        handle.spawn(async move { callback() });
    });
    let timer = Timer::builder().task_executor(executor).build().unwrap();
    let (count, task) = counter();
    timer.schedule(MS, || panic!("boom"));
    timer.schedule(MS, task);
    advance(Duration::from_millis(2)).await;
    settle().await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    timer.sleep(Duration::from_millis(3)).await;
}

/// Runs `scenario` on a thread of its own; fails if it does not finish
/// within `limit` of real time (a hang becomes a failure, not a stuck run).
fn with_watchdog(limit: Duration, scenario: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        scenario();
        done.send(()).unwrap();
    });
    match finished.recv_timeout(limit) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung for {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the scenario panicked"),
    }
}

/// Two callbacks, the first blocking until the second, due later, has
/// run: only completes if a blocked callback leaves the timer turning.
fn first_blocks_until_second_runs(executor: Option<TaskExecutor>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut builder = Timer::builder();
        if let Some(executor) = executor {
            builder = builder.task_executor(executor);
        }
        let timer = builder.build().unwrap();
        let (second_ran, wait_for_second) = mpsc::channel::<()>();
        let (first_done, first_finished) = tokio::sync::oneshot::channel();
        let first = timer.schedule(MS, move || {
            wait_for_second.recv().unwrap();
            first_done.send(()).unwrap();
        });
        let second = timer.schedule(Duration::from_millis(10), move || {
            second_ran.send(()).unwrap();
        });
        first_finished.await.unwrap();
        assert!(first.is_expired() && second.is_expired());
    });
}

#[test]
fn a_blocking_callback_does_not_stall_the_next_with_the_default() {
    with_watchdog(Duration::from_secs(60), || {
        first_blocks_until_second_runs(None)
    });
}

#[test]
fn a_blocking_callback_does_not_stall_the_next_on_spawn_blocking() {
    with_watchdog(Duration::from_secs(60), || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let _runtime = rt.enter();
        let handle = rt.handle().clone();
        let executor = TaskExecutor::custom(move |callback| {
            handle.spawn_blocking(callback);
        });
        let timer = Timer::builder()
            .handle(rt.handle().clone())
            .task_executor(executor)
            .build()
            .unwrap();
        let (second_ran, wait_for_second) = mpsc::channel::<()>();
        let (first_done, first_finished) = mpsc::channel();
        timer.schedule(MS, move || {
            wait_for_second.recv().unwrap();
            first_done.send(()).unwrap();
        });
        timer.schedule(Duration::from_millis(10), move || {
            second_ran.send(()).unwrap();
        });
        // Even with one worker: the blocking pool holds the first.
        first_finished.recv().unwrap();
    });
}

/// Issue 26, found 2, on a runtime-driven timer: a callback spawned as its
/// runtime shuts down, which the runtime drops unrun, is cancelled, not
/// expired (its closure is freed with the runtime's other tasks).
#[test]
fn a_spawned_callback_its_runtime_drops_unrun_is_cancelled_not_expired() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let (ran, callback) = counter();
    let (handle, freed) = rt.block_on(async {
        let timer = Timer::builder()
            .task_executor(TaskExecutor::spawn())
            .build()
            .unwrap();
        let owned = Arc::new(());
        let freed = Arc::downgrade(&owned);
        let handle = timer.schedule(5 * MS, move || {
            let _owned = owned;
            callback();
        });
        // Due in the same turn as the callback: `block_on` returns before
        // the runtime gets to the spawned task.
        timer.sleep(5 * MS).await;
        (handle, freed)
    });
    assert!(handle.is_expired(), "spawned, not run yet: {handle:?}");
    drop(rt);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(!handle.is_expired(), "claims a callback that never ran");
    assert!(handle.is_cancelled());
    assert!(freed.upgrade().is_none(), "the closure is freed");
}
