//! A schedule-exploring model of a due callback's hand-off to the runtime
//! it is spawned on (`TaskExecutor::spawn`; `src/engine/executor.rs`'s
//! `TaskRunner::run` and `Spawned`, `src/engine/shard.rs`'s task states), run with
//! shuttle:
//!
//! ```text
//! RUSTFLAGS="--cfg shuttle" cargo test --test shuttle_handoff --target-dir target/shuttle
//! ```
//!
//! As the other models do, the protocol is written out again with shuttle
//! threads, locks and atomics, in the real code's order. The driver takes
//! a due task out of the wheel under the shard's lock (`DUE`), spawns its
//! callback on the runtime, then marks it `EXPIRED` unless it came back.
//! The runtime runs what is queued (the spawned task marks it `EXPIRED`
//! and runs it) until it shuts down: it closes, then drops what it has not
//! run, and a spawn on a closed runtime drops the task at once; a dropped
//! task hands its callback back and marks the task `CANCELLED`. A user
//! thread drops the runtime (which returns once its workers are done, as
//! tokio's does) and then reads the handle.
//!
//! Checked in every schedule (issue 26, found 2):
//!
//! - exactly one end: the callback runs, or it comes back (closure back,
//!   `CANCELLED`), never both, never neither;
//! - `is_expired()` never claims a callback that did not run once the
//!   runtime is gone: read by the user after dropping it, `EXPIRED` means
//!   it ran (a task still on its way is `DUE`, neither expired nor
//!   cancelled).
//!
//! Deliberately broken variant, caught: the task marked `EXPIRED` under
//! the lock as it leaves the wheel (the order before the fix), which a
//! user reads after the runtime is gone while the driver still holds the
//! callback it is about to spawn on the closed runtime.
#![cfg(shuttle)]

mod common;

use common::shuttle as harness;
use shuttle::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;

/// `shard::PENDING`, `EXPIRED`, `CANCELLED`, `DUE`.
const PENDING: u8 = 0;
const EXPIRED: u8 = 1;
const CANCELLED: u8 = 2;
const DUE: u8 = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Correct,
    /// Marks the task `EXPIRED` as it leaves the wheel, before the spawn.
    ExpiredBeforeSpawn,
}

/// `TaskInner`: its state and its closure (a token here).
struct Task {
    state: AtomicU8,
    callback: Mutex<Option<()>>,
    ran: AtomicUsize,
}

impl Task {
    /// `TaskInner::handed`.
    fn handed(&self) {
        let _ = self.state.compare_exchange(DUE, EXPIRED, SeqCst, SeqCst);
    }

    /// `TaskInner::hand_back`.
    fn hand_back(&self, callback: ()) {
        *self.callback.lock().unwrap() = Some(callback);
        self.state.store(CANCELLED, SeqCst);
    }
}

/// `Spawned`: the callback on its way; dropped unrun, it comes back.
struct Spawned {
    task: Arc<Task>,
    callback: Option<()>,
}

impl Spawned {
    /// The spawned task's body.
    fn run(mut self) {
        if self.callback.take().is_some() {
            self.task.handed();
            self.task.ran.fetch_add(1, SeqCst);
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(callback) = self.callback.take() {
            self.task.hand_back(callback);
        }
    }
}

/// A runtime: a queue, closed at shutdown.
#[derive(Default)]
struct Runtime {
    queue: Mutex<(bool, Vec<Spawned>)>,
}

impl Runtime {
    /// `Handle::spawn`: queued, or dropped at once on a closed runtime.
    fn spawn(&self, spawned: Spawned) {
        let mut queue = self.queue.lock().unwrap();
        if queue.0 {
            drop(queue);
            drop(spawned);
        } else {
            queue.1.push(spawned);
        }
    }

    /// A worker runs one queued task; `false` once closed.
    fn run_one(&self) -> bool {
        let next = {
            let mut queue = self.queue.lock().unwrap();
            if queue.0 {
                return false;
            }
            queue.1.pop()
        };
        if let Some(spawned) = next {
            spawned.run();
        }
        true
    }

    /// The runtime's drop: closes, then drops what it did not run.
    fn shut_down(&self) {
        let unrun = {
            let mut queue = self.queue.lock().unwrap();
            queue.0 = true;
            std::mem::take(&mut queue.1)
        };
        drop(unrun);
    }
}

fn scenario(variant: Variant) {
    let task = Arc::new(Task {
        state: AtomicU8::new(PENDING),
        callback: Mutex::new(Some(())),
        ran: AtomicUsize::new(0),
    });
    let runtime = Arc::new(Runtime::default());
    let shard = Arc::new(Mutex::new(()));

    // The driver's turn: the task leaves the wheel due, then `deliver`.
    let driver = {
        let (task, runtime, shard) = (task.clone(), runtime.clone(), shard.clone());
        thread::spawn(move || {
            {
                let _lock = shard.lock().unwrap();
                let state = match variant {
                    Variant::Correct => DUE,
                    Variant::ExpiredBeforeSpawn => EXPIRED,
                };
                task.state.store(state, SeqCst);
            }
            // `TaskRunner::run`: take the callback, spawn it, mark it handed.
            let callback = task.callback.lock().unwrap().take();
            if let Some(callback) = callback {
                runtime.spawn(Spawned {
                    task: task.clone(),
                    callback: Some(callback),
                });
                task.handed();
            }
        })
    };
    // A worker of the runtime.
    let worker = {
        let runtime = runtime.clone();
        thread::spawn(move || {
            for _ in 0..3 {
                if !runtime.run_one() {
                    break;
                }
                thread::yield_now();
            }
        })
    };
    // The user drops the runtime (which closes it, drops what it did not
    // run, and waits for its workers to finish what they run), then reads
    // the handle.
    let user = {
        let (task, runtime) = (task.clone(), runtime.clone());
        thread::spawn(move || {
            runtime.shut_down();
            worker.join().unwrap();
            let state = task.state.load(SeqCst);
            if state == EXPIRED {
                assert_eq!(
                    task.ran.load(SeqCst),
                    1,
                    "is_expired() claims a callback that never ran, after its runtime is gone"
                );
            }
        })
    };
    driver.join().unwrap();
    user.join().unwrap();
    let ran = task.ran.load(SeqCst);
    let back = task.callback.lock().unwrap().is_some();
    let state = task.state.load(SeqCst);
    assert!(ran <= 1, "ran twice");
    assert!(
        (ran == 1) != back,
        "ran {ran}, came back {back}: one end each"
    );
    assert_eq!(state == EXPIRED, ran == 1, "EXPIRED exactly when it ran");
    assert_eq!(
        state == CANCELLED,
        back,
        "CANCELLED exactly when it came back"
    );
}

const ITERATIONS: usize = 3_000;
/// The schedulers' seed (`HASHWHEEL_SHUTTLE_SEED` picks others).
const SEED: u64 = 0x26;

#[test]
fn a_due_callback_runs_or_comes_back_and_is_never_expired_unrun() {
    harness::variant_holds(scenario, Variant::Correct, SEED, ITERATIONS);
}

#[test]
fn a_task_marked_expired_before_its_spawn_is_caught() {
    harness::variant_caught(scenario, Variant::ExpiredBeforeSpawn, SEED, ITERATIONS);
}
