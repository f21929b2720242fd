//! What spawns a due callback on a runtime ([`TaskExecutor::spawn`]): the
//! runtime's handle, and the guards that stop a timer whose runtime shut
//! down (the driver's, or the one a thread-driven timer spawns on).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::Notify;

use super::{run_caught, Callback, Kind, TaskExecutor};
use crate::engine::shard::{panic_message, stop, Common, Shard, Shared, TaskInner};
use crate::error::StopReason;

/// The runtime a [`TaskRunner`](super::TaskRunner) spawns its callbacks on,
/// if any.
pub(crate) struct Spawner {
    /// `None` on a thread driver without a runtime (which never has
    /// [`TaskExecutor::spawn`]: its builder refuses it).
    handle: Option<Handle>,
    /// Whether a spawned callback that its runtime drops unrun keeps its
    /// closure for its handles (a thread-driven timer: that runtime is not
    /// the driver's, see [`Spawner::watch`]) rather than dropping it (a
    /// runtime-driven timer, which stops with its runtime and frees what
    /// its tasks own).
    hand_back: bool,
    /// The guard task on the spawn runtime of a thread-driven timer, ended
    /// as this is dropped (see [`Spawner::watch`]).
    watch: Option<Watch>,
}

impl Spawner {
    /// The runtime that drives the timer.
    pub(crate) fn runtime(handle: Handle) -> Spawner {
        Spawner {
            handle: Some(handle),
            hand_back: false,
            watch: None,
        }
    }

    /// A thread-driven timer's: the runtime it was built in, if any.
    #[cfg_attr(not(feature = "thread"), allow(dead_code))]
    pub(crate) fn thread(handle: Option<Handle>) -> Spawner {
        Spawner {
            handle,
            hand_back: true,
            watch: None,
        }
    }

    /// Spawns `callback` of `task` on the runtime; hands it back where
    /// there is none.
    pub(super) fn spawn(&self, task: &Arc<TaskInner>, callback: Callback) -> Option<Callback> {
        let Some(handle) = &self.handle else {
            return Some(callback);
        };
        let spawned = Spawned {
            task: task.clone(),
            callback: Some(callback),
            hand_back: self.hand_back,
        };
        drop(handle.spawn(async move {
            let mut spawned = spawned;
            if let Some(callback) = spawned.callback.take() {
                spawned.task.handed();
                run_caught(callback);
            }
        }));
        None
    }

    /// See [`TaskRunner::turned`](super::TaskRunner::turned): a turn that
    /// spawned one callback on a multi-thread runtime spawns an empty task
    /// beside it, so that another worker wakes for the runtime's timers.
    pub(super) fn turned(&self, spawned: usize) {
        if let Some(handle) = &self.handle {
            if spawned == 1 && handle.runtime_flavor() != RuntimeFlavor::CurrentThread {
                drop(handle.spawn(async {}));
            }
        }
    }

    /// On a thread-driven timer that spawns its callbacks on a runtime
    /// ([`TaskExecutor::spawn`]): a guard task on that runtime, which stops
    /// the timer ([`StopReason::SpawnRuntimeGone`]) when the runtime drops
    /// it, shutting down, so that no callback is accepted that could never
    /// run. The pending tasks come back to their handles with their
    /// closures, as from [`Timer::stop`](crate::Timer::stop). The guard
    /// ends with the driver's thread, which drops this runner once the
    /// timer is stopped or gone. A runtime already shut down drops it at
    /// once: the timer starts stopped.
    #[cfg_attr(not(feature = "thread"), allow(dead_code))]
    pub(super) fn watch(&mut self, executor: &TaskExecutor, shared: &Shared) {
        let (Kind::Spawn, Some(handle)) = (&executor.kind, &self.handle) else {
            return;
        };
        let guard = StopOnDrop::new(
            shared,
            StopReason::SpawnRuntimeGone,
            "spawn runtime's guard",
        );
        let ended = Arc::new(Notify::new());
        self.watch = Some(Watch(ended.clone()));
        drop(handle.spawn(async move {
            ended.notified().await;
            drop(guard);
        }));
    }
}


/// A due callback spawned on a runtime. A runtime that shuts down drops
/// the tasks it has not run (and drops at once those spawned after): the
/// callback then comes back to its handles, cancelled, rather than being
/// lost with its task marked expired (issue 26).
struct Spawned {
    task: Arc<TaskInner>,
    /// Taken when the task runs.
    callback: Option<Callback>,
    /// See [`Spawner::hand_back`].
    hand_back: bool,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let Some(callback) = self.callback.take() else {
            return; // it ran
        };
        // A runtime-driven timer stops with its runtime and frees what its
        // tasks own (see `shard::stop`); a thread-driven one goes on, and
        // hands the closure back.
        let kept = self.hand_back.then_some(callback);
        self.task.hand_back(kept);
    }
}

/// Ends the guard task of [`Spawner::watch`] as the runner is dropped
/// (the driver's thread ended).
struct Watch(Arc<Notify>);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// Stops a timer for `reason` when dropped, unless it already stopped or
/// is gone: held by a guard task on a runtime the timer depends on (the
/// one that drives it, or the one its callbacks are spawned on), which the
/// runtime drops as it shuts down. `name` says whose guard it is in the
/// debug events ("driver": "hashwheel: driver ended").
pub(crate) struct StopOnDrop {
    common: Weak<Common>,
    shards: Box<[Weak<Shard>]>,
    reason: StopReason,
    name: &'static str,
}

impl StopOnDrop {
    /// A guard over `shared`'s timer.
    pub(crate) fn new(shared: &Shared, reason: StopReason, name: &'static str) -> StopOnDrop {
        let (common, shards) = shared.driver_parts();
        StopOnDrop {
            common: Arc::downgrade(&common),
            shards,
            reason,
            name,
        }
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let name = self.name;
        let Some(common) = self.common.upgrade() else {
            let why = "every timer handle and timeout dropped";
            tracing::debug!(why, "hashwheel: {name} ended");
            return;
        };
        if common.is_stopped() {
            tracing::debug!(why = "timer stopped", "hashwheel: {name} ended");
            return;
        }
        let reason = self.reason;
        tracing::debug!(?reason, "hashwheel: {name} ended; stopping the timer");
        // The runtime drops this while it shuts down: a panic must not
        // unwind into it (a panic in a drop during unwinding aborts).
        let stopped = catch_unwind(AssertUnwindSafe(|| {
            stop(
                &common,
                self.shards.iter().filter_map(Weak::upgrade),
                reason,
            );
        }));
        if let Err(panic) = stopped {
            tracing::error!(
                panic = panic_message(&*panic),
                ?reason,
                "hashwheel: stopping the timer as a runtime shut down panicked"
            );
        }
    }
}

