//! Where the callbacks of [`Timer::schedule`](crate::Timer::schedule) run:
//! [`TaskExecutor`], chosen on the [`Builder`](crate::Builder).

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::engine::shard::{panic_message, TaskInner};

// What spawns a due callback on a runtime ([`TaskExecutor::spawn`]): with
// tokio, the runtime's handle and the guards that stop a timer whose
// runtime shut down; without, nothing.
cfg_tokio! {
    mod spawn;

    pub(crate) use spawn::{Spawner, StopOnDrop};
}
#[cfg(not(feature = "tokio"))]
pub(crate) use no_spawn::Spawner;

/// A scheduled callback, as an executor receives it.
pub(crate) type Callback = Box<dyn FnOnce() + Send + 'static>;

/// A user's executor (see [`TaskExecutor::custom`]).
type Custom = dyn Fn(Callback) + Send + Sync + 'static;

/// Where the callbacks of [`Timer::schedule`](crate::Timer::schedule) run
/// once they are due: the counterpart of the `taskExecutor` of Netty's
/// `HashedWheelTimer`. Set it with
/// [`Builder::task_executor`](crate::Builder::task_executor).
///
/// The timer finds a callback due while it turns its wheels, inside the
/// runtime's own timer processing on one of its threads, where every other
/// timeout of the timer, and the program's `tokio::time` sleeps, are
/// processed too. What it does with the callback there:
///
/// | choice | where the callback runs | cost | a slow callback delays |
/// |---|---|---|---|
/// | [`spawn`][TaskExecutor::spawn_link] (the default) | a new task on the runtime that runs the timer's driver | one task spawn per callback | its own worker only (on a multi-thread runtime); the others go on |
/// | [`driver`](TaskExecutor::driver) | right there, inline | nothing added | every timeout of the timer due after it, and the runtime's own timers processed after it |
/// | [`custom`](TaskExecutor::custom) | wherever your executor puts it (`spawn_blocking`, a thread pool, a channel) | what your executor costs | what your executor lets it delay |
///
/// On a timer driven by its own thread
/// ([`Builder::driver_thread`][Builder::driver_thread_link], or feature
/// `thread` without `tokio`) the default is [`driver`](TaskExecutor::driver),
/// as Netty's: the callback runs on the timer's thread, and **a callback
/// that blocks delays every timeout of the timer** until it returns. Give
/// such a timer [`custom`](TaskExecutor::custom) for callbacks that may
/// block (a thread pool, a channel to a worker); [`spawn`][TaskExecutor::spawn_link]
/// there spawns on the runtime the timer was built in (or
/// [`Builder::handle`][Builder::handle_link]'s).
///
/// Pick [`driver`](TaskExecutor::driver) for callbacks that only flip a
/// flag, notify or send on a channel: it saves a spawn per callback. Keep
/// the default for anything that might take a while, and hand callbacks that
/// block (a synchronous write, a `std` lock held by a slow thread, a long
/// computation) to `spawn_blocking` with [`custom`](TaskExecutor::custom):
/// on a current-thread runtime a spawned callback that blocks still blocks
/// the runtime's only thread.
///
/// Under every choice a callback that panics is caught and reported with
/// `tracing::warn!`, and the timer goes on. Spawned callbacks and callbacks
/// handed to an executor may run in any order, and concurrently; those run
/// on the driver run one after another, in no set order among those due in
/// the same turn. The choice applies to callbacks that come due, not to
/// those the caller runs itself: [`TaskHandle::run`](crate::TaskHandle::run)
/// and [`TaskHandle::take_task`](crate::TaskHandle::take_task) on the tasks
/// [`Timer::stop`](crate::Timer::stop) returns run where the caller says.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::{TaskExecutor, Timer};
/// use std::time::Duration;
///
/// // Cheap callbacks: run them on the driver, saving a spawn each.
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let timer = Timer::builder().task_executor(TaskExecutor::driver()).build().unwrap();
/// timer.schedule(Duration::from_millis(5), move || tx.send("ping").unwrap());
/// assert_eq!(rx.recv().await, Some("ping"));
/// # }
/// ```
#[cfg_attr(feature = "tokio", doc = "", doc = "[TaskExecutor::spawn_link]: TaskExecutor::spawn")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[TaskExecutor::spawn_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.TaskExecutor.html#method.spawn")]
#[cfg_attr(feature = "thread", doc = "", doc = "[Builder::driver_thread_link]: crate::Builder::driver_thread")]
#[cfg_attr(not(feature = "thread"), doc = "", doc = "[Builder::driver_thread_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread")]
#[cfg_attr(feature = "tokio", doc = "", doc = "[Builder::handle_link]: crate::Builder::handle")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[Builder::handle_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.handle")]
#[doc(alias = "taskExecutor")]
#[derive(Clone, Default)]
pub struct TaskExecutor {
    kind: Kind,
}

#[derive(Clone, Default)]
enum Kind {
    /// Never made without tokio ([`TaskExecutor::spawn`] needs it).
    #[cfg_attr(feature = "tokio", default)]
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    Spawn,
    #[cfg_attr(not(feature = "tokio"), default)]
    Driver,
    Custom(Arc<Custom>),
}

impl TaskExecutor {
    /// Each callback runs in a task of its own, spawned on the runtime that
    /// runs the timer's driver ([`Builder::handle`](crate::Builder::handle),
    /// or the runtime the timer was built in): the default.
    ///
    /// The driver only spawns the callback and goes on, so a slow callback
    /// delays neither the timer's other timeouts nor the runtime's timers.
    /// On a multi-thread runtime a callback that blocks holds one worker
    /// while the others go on; on a current-thread runtime it still blocks
    /// the runtime's only thread (hand such callbacks to `spawn_blocking`
    /// with [`custom`](TaskExecutor::custom)). It costs a task spawn per
    /// callback: measured on a current-thread runtime, a callback's whole
    /// round trip (schedule, come due, run) took about 4,000 instructions
    /// against 2,000 on the driver, and 1.1 to 1.35 times the CPU time.
    ///
    /// A callback spawned and not yet run when its runtime shuts down is
    /// dropped by the runtime, as any task: its
    /// [`TaskHandle`](crate::TaskHandle) then reports
    /// [`is_cancelled`](crate::TaskHandle::is_cancelled), never
    /// [`is_expired`](crate::TaskHandle::is_expired). On a runtime-driven
    /// timer the timer stops with that runtime and frees the closure. On a
    /// thread-driven timer ([`Builder::driver_thread`][Builder::driver_thread_link])
    /// the runtime is only where callbacks run, and the timer may outlive
    /// it: when it shuts down the timer stops, as
    /// [`Timer::stop`](crate::Timer::stop) does, and says why
    /// (`Error::is_stopped`, "the runtime its callbacks were spawned on
    /// (TaskExecutor::spawn) has shut down"). Every task that never ran,
    /// pending or dropped unrun by the runtime, comes back to its handles
    /// cancelled with its closure, for
    /// [`TaskHandle::run`](crate::TaskHandle::run) or
    /// [`TaskHandle::take_task`](crate::TaskHandle::take_task); a due
    /// callback either runs or comes back.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::{TaskExecutor, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().task_executor(TaskExecutor::spawn()).build().unwrap();
    /// let (tx, rx) = tokio::sync::oneshot::channel();
    /// timer.schedule(Duration::from_millis(5), move || tx.send(()).unwrap());
    /// rx.await.unwrap();
    /// # }
    /// ```
    #[cfg_attr(feature = "thread", doc = "", doc = "[Builder::driver_thread_link]: crate::Builder::driver_thread")]
    #[cfg_attr(not(feature = "thread"), doc = "", doc = "[Builder::driver_thread_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread")]
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    #[must_use]
    pub fn spawn() -> TaskExecutor {
        TaskExecutor { kind: Kind::Spawn }
    }

    /// Each callback runs on the driver, inside the runtime's timer
    /// processing, as soon as it is found due: the cheapest choice, and the
    /// one for callbacks that only flip a flag, notify or send on a channel.
    ///
    /// Such a callback must be short and must never block: until it returns,
    /// the timer's other timeouts due after it wait, and so do the runtime's
    /// own timers (every `tokio::time` sleep of the program) processed after
    /// it. A callback that blocks for 300 ms makes a `tokio::time::sleep`
    /// due meanwhile elsewhere in the program 300 ms late.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::{TaskExecutor, Timer};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().task_executor(TaskExecutor::driver()).build().unwrap();
    /// let done = Arc::new(AtomicBool::new(false));
    /// let flag = done.clone();
    /// timer.schedule(Duration::from_millis(5), move || flag.store(true, Ordering::SeqCst));
    /// timer.sleep(Duration::from_millis(10)).await;
    /// assert!(done.load(Ordering::SeqCst));
    /// # }
    /// ```
    #[must_use]
    pub fn driver() -> TaskExecutor {
        TaskExecutor { kind: Kind::Driver }
    }

    /// Each callback is handed to `executor`, called on the driver, inside
    /// the runtime's timer processing: `executor` should only pass the
    /// callback on (to `spawn_blocking`, a thread pool, a channel), never run
    /// it there. A callback that panics where `executor` runs it is still
    /// caught and reported; an `executor` that panics itself is caught and
    /// reported too (and the callback it was given is lost), so it never
    /// unwinds into the timer.
    ///
    /// `executor` is called from the runtime's threads, outside any task:
    /// to spawn on a runtime, capture its [`Handle`] rather than relying on
    /// [`Handle::current`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// use hashwheel::{TaskExecutor, Timer};
    /// use std::time::Duration;
    ///
    /// // Callbacks that block run on tokio's blocking pool.
    /// let runtime = tokio::runtime::Handle::current();
    /// let blocking = TaskExecutor::custom(move |callback| {
    ///     runtime.spawn_blocking(callback);
    /// });
    /// let timer = Timer::builder().task_executor(blocking).build().unwrap();
    /// let (tx, rx) = tokio::sync::oneshot::channel();
    /// timer.schedule(Duration::from_millis(5), move || {
    ///     std::thread::sleep(Duration::from_millis(20)); // delays nothing else
    ///     tx.send(()).unwrap();
    /// });
    /// rx.await.unwrap();
    /// # }
    /// ```
    #[cfg_attr(feature = "tokio", doc = "", doc = "[`Handle`]: tokio::runtime::Handle")]
    #[cfg_attr(feature = "tokio", doc = "", doc = "[`Handle::current`]: tokio::runtime::Handle::current")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`Handle`]: https://docs.rs/tokio/latest/tokio/runtime/struct.Handle.html")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`Handle::current`]: https://docs.rs/tokio/latest/tokio/runtime/struct.Handle.html#method.current")]
    #[must_use]
    pub fn custom<F>(executor: F) -> TaskExecutor
    where
        F: Fn(Box<dyn FnOnce() + Send + 'static>) + Send + Sync + 'static,
    {
        TaskExecutor {
            kind: Kind::Custom(Arc::new(executor)),
        }
    }

    /// Binds the choice to what spawns on a runtime (see [`Spawner`]):
    /// the driver's runtime, the one a thread-driven timer was built in, or
    /// none.
    pub(crate) fn bind(self, spawner: Spawner) -> TaskRunner {
        TaskRunner {
            executor: self,
            spawner,
        }
    }

    /// Whether this is [`spawn`](TaskExecutor::spawn), which needs a runtime.
    #[cfg(all(feature = "thread", feature = "tokio"))]
    pub(crate) fn is_spawn(&self) -> bool {
        matches!(self.kind, Kind::Spawn)
    }
}

impl fmt::Debug for TaskExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.kind {
            Kind::Spawn => "spawn",
            Kind::Driver => "driver",
            Kind::Custom(_) => "custom",
        };
        f.debug_tuple("TaskExecutor")
            .field(&format_args!("{name}"))
            .finish()
    }
}

/// A [`TaskExecutor`] and the runtime its spawned callbacks run on: what the
/// driver hands each due callback to.
pub(crate) struct TaskRunner {
    executor: TaskExecutor,
    spawner: Spawner,
}

impl TaskRunner {
    /// Runs or hands off the callback of `task`, which just came due
    /// (`DUE`), marking it expired as it runs or its executor takes it;
    /// returns whether it spawned a task for it. Never unwinds, whatever
    /// the callback or the executor does.
    #[inline]
    pub(crate) fn run(&self, task: Arc<TaskInner>) -> bool {
        let Some(callback) = task.take_task() else {
            task.handed();
            return false;
        };
        match &self.executor.kind {
            Kind::Driver => {
                task.handed();
                run_caught(callback);
            }
            Kind::Spawn => {
                if let Some(callback) = self.spawner.spawn(&task, callback) {
                    // No runtime to spawn on: run it here.
                    task.handed();
                    run_caught(callback);
                    return false;
                }
                // Queued on a live runtime, or already run; unless the
                // runtime dropped it (it is shutting down), which handed it
                // back cancelled first.
                task.handed();
                return true;
            }
            Kind::Custom(executor) => {
                task.handed();
                let callback: Callback = Box::new(move || run_caught(callback));
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| executor(callback))) {
                    tracing::warn!(
                        panic = panic_message(&*panic),
                        "hashwheel: the task executor panicked"
                    );
                }
            }
        }
        false
    }

    /// The driver's turn is over, and it spawned `spawned` callbacks.
    ///
    /// On a multi-thread runtime, the worker that turned the wheels (in
    /// its park, inside the runtime's timer processing) keeps what it
    /// spawned in its own queue and runs it next, and it wakes no other
    /// worker for a single task. If that callback then blocks, no worker
    /// is left to process the runtime's timers: every timeout of the
    /// program would wait for the callback. With two tasks or more queued
    /// the worker wakes another, which then processes the timers while
    /// this one runs the callback; so a turn that spawned one callback
    /// spawns an empty task beside it.
    pub(crate) fn turned(&self, spawned: usize) {
        self.spawner.turned(spawned);
    }

    /// On a thread-driven timer that spawns its callbacks on a runtime: a
    /// guard task there that stops the timer when that runtime shuts down
    /// (see [`Spawner::watch`]).
    #[cfg(all(feature = "thread", feature = "tokio"))]
    pub(crate) fn watch(&mut self, shared: &crate::engine::shard::Shared) {
        self.spawner.watch(&self.executor, shared);
    }
}

/// Runs `callback`, catching and reporting a panic.
#[inline(always)]
pub(crate) fn run_caught(callback: Callback) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(callback)) {
        tracing::warn!(
            panic = panic_message(&*panic),
            "hashwheel: a scheduled task panicked"
        );
    }
}

/// Without tokio nothing spawns: [`TaskExecutor::spawn`] does not exist.
#[cfg(not(feature = "tokio"))]
mod no_spawn {
    /// Nothing to spawn on.
    pub(crate) struct Spawner;

    impl Spawner {
        /// No runtime.
        pub(crate) fn none() -> Spawner {
            Spawner
        }

        pub(crate) fn turned(&self, _spawned: usize) {}

        /// Hands `callback` back: there is no runtime to spawn it on.
        pub(crate) fn spawn(
            &self,
            _task: &std::sync::Arc<crate::engine::shard::TaskInner>,
            callback: super::Callback,
        ) -> Option<super::Callback> {
            Some(callback)
        }
    }
}
