//! Regression tests that need the crate's insides: races made deterministic
//! with the hooks of `hooks`, and a panic injected into a driver turn. The
//! one unit-test file that is not pure arithmetic: these cannot be reached
//! from `tests/`. `.ci/run` also runs them in a release build.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::engine::hooks;
use crate::engine::shard::Shared;
use crate::engine::executor::TaskExecutor;
use crate::timer::task::TaskHandle;
use crate::timer::Timer;

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
    // The stop flag is raised before the shards are drained (on the
    // driver's thread, which may not have run since on a loaded machine):
    // the near one completes soon after, not necessarily at once.
    let start = std::time::Instant::now();
    while (&mut near).now_or_never().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the near one completed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
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

/// Issue 26 (a look while there): a panic inside the alarm's reset or poll
/// (tokio's `Sleep` panics when polled as its runtime shuts down) left this
/// thread's `ARMING` flag set, so every later wake of a driver on this
/// thread was taken for its own arming and turned nothing.
#[test]
fn a_panic_while_arming_the_alarm_leaves_this_thread_able_to_turn() {
    use crate::engine::alarm::runtime::{arming, rung_while_arming};
    let caught = std::panic::catch_unwind(|| arming(|| panic!("injected while arming")));
    assert!(caught.is_err());
    assert!(!rung_while_arming(), "the thread is still taken for arming");
    assert!(!arming(|| false), "a later arming sees no stale ring");
}

/// Issue 26 (a look while there): a fired timeout reset (re-filed in the
/// wheel) took its count back only after the shard's lock was released, so
/// that meanwhile `pending()` missed it, an insert under `max_pending` got
/// its place, and a driver firing it again took the count below zero (a
/// false "at capacity"). The hook runs in that window.
#[test]
fn a_fired_timeout_reset_is_counted_before_its_lock_is_released() {
    use std::sync::Mutex;
    use std::task::Context;
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(async {
            let timer = Timer::builder().max_pending(1).shards(1).build().unwrap();
            let mut timeout = timer.sleep(Duration::from_millis(1));
            let waker = futures::task::noop_waker();
            let polled = std::pin::Pin::new(&mut timeout).poll(&mut Context::from_waker(&waker));
            assert!(polled.is_pending());
            // The driver fires it; it is not polled again.
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(timer.pending(), 0);
            let seen = Arc::new(Mutex::new(None));
            let (other, record) = (timer.clone(), seen.clone());
            hooks::on_reset_unlock(Some(Box::new(move || {
                let refused = other.try_sleep(Duration::from_millis(5)).is_err();
                *record.lock().unwrap() = Some((other.pending(), refused));
            })));
            timeout.reset(Duration::from_millis(10));
            hooks::on_reset_unlock(None);
            assert_eq!(
                *seen.lock().unwrap(),
                Some((1, true)),
                "(pending, at capacity)"
            );
            assert_eq!(timer.pending(), 1);
            timeout.await;
            assert_eq!(timer.pending(), 0);
        });
}

/// Issue 27 item 8: on a thread-driven timer a thread that finds a shard's
/// lock taken spins and yields before it sleeps on it (in W12 busy the
/// driver's batches put the runtime's workers to sleep there, with their
/// queued tasks); a runtime's timer keeps `std`'s lock as it is. The
/// contended path still takes the lock once it is released, poisoned or
/// not. (What the spin is worth is measured by W12, not here.)
#[cfg(feature = "thread")]
#[test]
fn a_thread_driven_timers_contended_shard_lock_is_taken_once_free_poisoned_or_not() {
    use futures_util::FutureExt;
    use std::sync::mpsc;

    current_thread().block_on(async {
        let timer = Timer::new();
        assert!(!timer.shared.shards[0].spins_on_contention());
    });
    let timer = Timer::builder().driver_thread().shards(1).build().unwrap();
    let shard = &timer.shared.shards[0];
    assert!(shard.spins_on_contention());
    for poison in [false, true] {
        if poison {
            let poisoner = std::thread::scope(|s| {
                s.spawn(|| {
                    let _guard = shard.lock();
                    panic!("poisons the shard's lock");
                })
                .join()
            });
            assert!(poisoner.is_err());
            drop(shard.lock());
        }
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let holder = s.spawn(move || {
                let guard = shard.lock();
                held_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                drop(guard);
            });
            held_rx.recv().unwrap();
            let waiter = s.spawn(|| {
                // Registers: takes the lock the holder keeps.
                let mut t = timer.sleep(Duration::from_secs(3600));
                assert!((&mut t).now_or_never().is_none());
                timer.pending()
            });
            // Past the spins and yields: the waiter sleeps on the lock.
            std::thread::sleep(Duration::from_millis(20));
            assert!(!waiter.is_finished(), "took a lock that was held");
            release_tx.send(()).unwrap();
            holder.join().unwrap();
            assert_eq!(waiter.join().unwrap(), 1, "registered once it got the lock");
        });
        assert_eq!(timer.pending(), 0, "dropped: cancelled");
    }
}

/// Issue 56 item 4: one thread-driven timer of two shards, a scope's
/// deadline on the first and the call clipped to it on the second (the
/// scope made on a thread of the first shard, its future first polled on
/// one of the second). The driver turns the shards in order and wakes what
/// each fired before it turns the next; the request's task, polled in its
/// wake (as an executor's other thread polls it while the driver goes on),
/// found its scope's deadline passed and the call not yet fired, and ended
/// with the scope's own `Elapsed`: the handler's answer was lost (3, 1 and
/// 1 of 100 answered in the issue). The scope's last poll ends the call
/// there, with the inherited `Elapsed`.
#[cfg(feature = "thread")]
#[test]
fn a_scope_polled_between_the_thread_drivers_shards_gives_the_handler_its_answer() {
    use std::pin::Pin;
    use std::sync::mpsc;
    use std::sync::Mutex;
    use std::task::{Context, Poll, Wake, Waker};

    type Request = Pin<Box<dyn Future<Output = Result<&'static str, crate::error::Elapsed>> + Send>>;

    /// A task polled wherever it is woken: on the driver's thread, between
    /// two shards of one turn.
    struct PolledInItsWake {
        request: Mutex<Option<Request>>,
        answered: mpsc::SyncSender<Result<&'static str, crate::error::Elapsed>>,
    }

    impl Wake for PolledInItsWake {
        fn wake(self: Arc<Self>) {
            let waker = Waker::from(self.clone());
            let mut request = self.request.lock().unwrap();
            let Some(fut) = request.as_mut() else { return };
            if let Poll::Ready(answer) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
                *request = None;
                self.answered.send(answer).unwrap();
            }
        }
    }

    /// Runs `f` on a new thread of `timer`'s shard `shard`.
    fn on_shard<T: Send>(timer: &Timer, shard: usize, f: impl FnOnce() -> T + Send) -> T {
        let mut f = Some(f);
        loop {
            let done = std::thread::scope(|s| {
                s.spawn(|| {
                    (timer.shared.current_shard() == shard).then(|| f.take().unwrap()())
                })
                .join()
                .unwrap()
            });
            if let Some(done) = done {
                return done;
            }
        }
    }

    let timer = Timer::builder().driver_thread().shards(2).build().unwrap();
    for round in 0..3 {
        let calls = timer.clone();
        let request: Request = on_shard(&timer, 0, || {
            Box::pin(timer.scope(Duration::from_millis(20), async move {
                match calls.timeout(Duration::from_secs(1), std::future::pending::<()>()).await {
                    Err(e) if e.is_inherited() => "out of time",
                    _ => "in time",
                }
            }))
        });
        let (answered, answer) = mpsc::sync_channel(1);
        let task = Arc::new(PolledInItsWake {
            request: Mutex::new(Some(request)),
            answered,
        });
        // The first poll, where the call is made, on the second shard.
        on_shard(&timer, 1, || task.wake_by_ref());
        assert_eq!(timer.pending(), 2, "round {round}: the scope's and its call's");
        let answer = answer.recv_timeout(Duration::from_secs(30)).expect("ended");
        assert_eq!(answer, Ok("out of time"), "round {round}");
        assert_eq!(timer.pending(), 0);
    }
}
