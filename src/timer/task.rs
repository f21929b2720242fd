//! Scheduled callbacks: [`Timer::schedule`](crate::Timer::schedule) and
//! their [`TaskHandle`].

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::engine::shard::{TaskInner, CANCELLED, EXPIRED, PENDING};

/// A handle to a callback scheduled with
/// [`Timer::schedule`](crate::Timer::schedule): the counterpart of Netty's
/// `Timeout` (tokio has none).
///
/// Cheap to clone. Dropping it does **not** cancel the task: call
/// [`cancel`](TaskHandle::cancel).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let handle = timer.schedule(Duration::from_secs(1), || println!("too late"));
/// assert!(handle.cancel());
/// assert!(handle.is_cancelled());
/// assert!(!handle.is_expired());
/// # }
/// ```
#[derive(Clone)]
pub struct TaskHandle {
    inner: Arc<TaskInner>,
}

impl TaskHandle {
    pub(crate) fn new(inner: Arc<TaskInner>) -> TaskHandle {
        TaskHandle { inner }
    }

    /// Cancels the task if it has not come due yet. Returns `false` if it
    /// already came due (it ran, runs, or was handed to the timer's
    /// [`TaskExecutor`](crate::TaskExecutor) and waits there: a spawned
    /// task cannot be called back), or was cancelled before. The same under
    /// every `TaskExecutor`: a cancelled task never reaches it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let handle = timer.schedule(Duration::from_secs(1), || {});
    /// assert!(handle.cancel());
    /// assert!(!handle.cancel());
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    pub fn cancel(&self) -> bool {
        let inner = &self.inner;
        let Some(shared) = inner.shared.upgrade() else {
            return false;
        };
        {
            // In a forked child whose parent held the lock at the fork the
            // task is out of reach for good: not cancelled.
            let Some(mut state) = shared.shards[inner.shard].lock_unless_forked() else {
                return false;
            };
            if inner.state.load(Ordering::Acquire) != PENDING {
                return false;
            }
            state.wheel.remove(inner.key);
            state.tasks.remove(inner.key);
            state.counts.cancelled += 1;
            shared.shards[inner.shard].release_locked(&mut state, 1);
            inner.mark_cancelled();
        }
        shared.tasks_done(1);
        // The callback may own anything: drop it outside the lock.
        drop(inner.take_task());
        true
    }

    /// Takes back the closure of a task that [`Timer::stop`] cancelled
    /// before it ran, to run it now or elsewhere: the counterpart of
    /// Netty's `Timeout.task()` on what `stop()` returns.
    ///
    /// `None` if the task is still pending, ran, was cancelled with
    /// [`cancel`](TaskHandle::cancel) (which drops the closure), or was taken
    /// already, through this handle or a clone: a closure comes back once.
    /// When the runtime that ran the driver shuts down, the timer stops
    /// without handing tasks back and drops their closures, so this is
    /// `None` then too. A thread-driven timer whose callbacks are spawned on
    /// a runtime ([`TaskExecutor::spawn`][TaskExecutor::spawn_link]) that
    /// shuts down hands back, here, every task that never ran: those
    /// pending, and those its runtime dropped unrun. The closure lives until it is taken or every handle
    /// to the task is dropped. The timer's
    /// [`TaskExecutor`](crate::TaskExecutor) plays no part: the closure
    /// runs wherever its taker runs it.
    ///
    /// [`Timer::stop`]: crate::Timer::stop
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let handle = timer.schedule(Duration::from_secs(1), || println!("flushed"));
    /// assert!(handle.take_task().is_none(), "pending: the timer runs it");
    /// for task in timer.stop() {
    ///     // Run what never ran, elsewhere.
    ///     let closure = task.take_task().unwrap();
    ///     tokio::task::spawn_blocking(closure).await.unwrap();
    /// }
    /// assert!(handle.take_task().is_none(), "taken already");
    /// # }
    /// ```
    #[cfg_attr(feature = "tokio", doc = "", doc = "[TaskExecutor::spawn_link]: crate::TaskExecutor::spawn")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[TaskExecutor::spawn_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.TaskExecutor.html#method.spawn")]
    pub fn take_task(&self) -> Option<Box<dyn FnOnce() + Send + 'static>> {
        if self.is_cancelled() {
            self.inner.take_task()
        } else {
            None
        }
    }

    /// Runs, here and now on the caller, a task that [`Timer::stop`]
    /// cancelled before it ran; returns whether it ran. As
    /// [`take_task`](TaskHandle::take_task) followed by a call: `false`
    /// for a task still pending, one that ran, one cancelled with
    /// [`cancel`](TaskHandle::cancel), or one taken or run already. A panic
    /// in the task is not caught. It runs on the caller whatever the timer's
    /// [`TaskExecutor`](crate::TaskExecutor) (which gets only tasks that
    /// come due).
    ///
    /// [`Timer::stop`]: crate::Timer::stop
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let flushed = Arc::new(AtomicUsize::new(0));
    /// let count = flushed.clone();
    /// timer.schedule(Duration::from_secs(60), move || {
    ///     count.fetch_add(1, Ordering::SeqCst);
    /// });
    /// // Shutting down: run what never ran instead of losing it.
    /// let never_ran = timer.stop();
    /// assert!(never_ran.iter().all(|task| task.run()));
    /// assert_eq!(flushed.load(Ordering::SeqCst), 1);
    /// assert!(!never_ran[0].run(), "a task runs once");
    /// # }
    /// ```
    pub fn run(&self) -> bool {
        match self.take_task() {
            Some(task) => {
                task();
                true
            }
            None => false,
        }
    }

    /// Whether the deadline passed and the task came due: it ran, is
    /// running, or was handed to the timer's
    /// [`TaskExecutor`](crate::TaskExecutor) and waits there to run (a
    /// spawned task runs when the runtime gets to it). A spawned task that
    /// its runtime drops unrun, shutting down, turns
    /// [cancelled](TaskHandle::is_cancelled) instead: this never claims a
    /// callback that did not run. Between its deadline and its hand-off
    /// (a moment, on the driver) a task is neither expired nor cancelled,
    /// and [`cancel`](TaskHandle::cancel) returns `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let handle = timer.schedule(Duration::from_millis(1), || {});
    /// assert!(!handle.is_expired());
    /// timer.sleep(Duration::from_millis(5)).await;
    /// assert!(handle.is_expired());
    /// # }
    /// ```
    pub fn is_expired(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == EXPIRED
    }

    /// Whether the task was cancelled, by [`cancel`](TaskHandle::cancel) or
    /// by the timer stopping, or came due and was dropped unrun by the
    /// runtime it was spawned on
    /// ([`TaskExecutor::spawn`][TaskExecutor::spawn_link]) as that
    /// runtime shut down.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let handle = timer.schedule(Duration::from_secs(1), || {});
    /// timer.stop();
    /// assert!(handle.is_cancelled());
    /// # }
    /// ```
    #[cfg_attr(feature = "tokio", doc = "", doc = "[TaskExecutor::spawn_link]: crate::TaskExecutor::spawn")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[TaskExecutor::spawn_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.TaskExecutor.html#method.spawn")]
    pub fn is_cancelled(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == CANCELLED
    }

    /// The instant the task was scheduled for (about 30 years out for a
    /// delay that overflows).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let handle = timer.schedule(Duration::from_secs(1), || {});
    /// assert_eq!(handle.deadline(), (Instant::now() + Duration::from_secs(1)).into_std());
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.inner.deadline
    }
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("deadline", &self.inner.deadline)
            .field("expired", &self.is_expired())
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}
