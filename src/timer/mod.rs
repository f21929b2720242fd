// Floor 3, the handle (docs/ARCHITECTURE.md): it imports the engine, the
// wheel and the leaf types; no face.
//! The [`Timer`] handle and its [`Builder`]. The state they share with the
//! driver lives in the engine (`engine/shard.rs`).

mod builder;
#[cfg(feature = "tokio")]
pub(crate) mod current;
pub mod deadline;
pub(crate) mod interval;
#[cfg(all(test, feature = "tokio"))]
mod regressions;
pub(crate) mod task;
pub(crate) mod timeout;

use std::fmt;
use std::future::IntoFuture;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::shard::{far_future, Shared, TaskInner};
use crate::error::Error;
use crate::stats::Stats;
use crate::timer::interval::Interval;
use crate::timer::task::TaskHandle;
use crate::timer::timeout::{Timeout, WithTimeout};
use crate::wheel::raw::NEVER;

pub use builder::Builder;
#[cfg(feature = "tokio")]
pub(crate) use builder::NO_TIME_DRIVER;

/// A hashed wheel timer: a cheap, cloneable handle to a set of wheels turned
/// inside the runtime's own timer processing, or on a thread of its own
/// ([`Builder::driver_thread`], feature `thread`).
///
/// Where tokio's timer is implicit (the runtime's time driver, reached by
/// the free functions of [`tokio::time`]), hashwheel's is a value: its
/// methods are those functions. [`sleep`](Timer::sleep) is
/// [`tokio::time::sleep`], [`timeout`](Timer::timeout) is
/// [`tokio::time::timeout`], [`interval`](Timer::interval) is
/// [`tokio::time::interval`], and so on.
///
/// Create timeouts with [`sleep`](Timer::sleep) and friends, wrap futures
/// with [`timeout`](Timer::timeout), run callbacks with
/// [`schedule`](Timer::schedule). Clones share the same wheels. The driver
/// task ends when the timer is [stopped](Timer::stop), or when every
/// `Timer`, [`Timeout`] and pending task is gone.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let timer = Timer::new();
/// timer.sleep(Duration::from_millis(50)).await;
/// assert_eq!(timer.pending(), 0);
/// # }
/// ```
#[cfg_attr(not(feature = "thread"), doc = "", doc = "[`Builder::driver_thread`]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time`]: https://docs.rs/tokio/latest/tokio/time/index.html")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::sleep`]: https://docs.rs/tokio/latest/tokio/time/fn.sleep.html")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::timeout`]: https://docs.rs/tokio/latest/tokio/time/fn.timeout.html")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::interval`]: https://docs.rs/tokio/latest/tokio/time/fn.interval.html")]
#[derive(Clone)]
pub struct Timer {
    pub(crate) shared: Arc<Shared>,
}

impl Timer {
    /// A timer with a 1 ms tick, 512 buckets and no pending limit, driven on
    /// the current tokio runtime.
    ///
    /// One `Timer` per runtime: the driver runs on this runtime, and when the
    /// runtime shuts down the timer stops for good (a `static` `Timer`
    /// shared by several `#[tokio::test]`s, each with its own runtime, stops
    /// with the first).
    ///
    /// And not one per connection or request: each `Timer` has its own
    /// wheels, driver, runtime timer and guard task, where clones are cheap
    /// and share them. As Netty does, the 65th live `Timer` of one runtime
    /// warns, naming the fix, once per process: a line on stderr
    /// (`eprintln!`, so that a program without a `tracing` subscriber sees
    /// it) and a `tracing::warn!` with the same text. A timer
    /// counts from [`Builder::build`] (or `new`) until it stops (by
    /// [`stop`](Timer::stop) or the shutdown of its runtime) or until its
    /// last `Timer` clone, [`Timeout`], [`Interval`] and pending task is
    /// gone, whichever comes first; clones count once.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, or on a runtime without a time driver (built
    /// without `enable_time()` or `enable_all()`), with the message of the
    /// error [`Builder::build`] returns (under `panic = "abort"` the latter
    /// aborts with tokio's message: see [`Builder::build`]). Use [`Timer::builder`] with
    /// [`Builder::handle`] to pick a runtime instead, or with
    /// [`Builder::driver_thread`] for a timer with a thread of its own.
    ///
    /// Without the feature `tokio` (the feature `thread` alone) every timer
    /// is thread-driven: `new` starts the timer's driver thread (see
    /// [`Builder::driver_thread`]), and panics only if the OS refuses it a
    /// thread (or, on Linux, a timerfd).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::new();
    /// assert_eq!(timer.wheel_size(), 512);
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`Builder::handle`]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.handle")]
    #[cfg_attr(not(feature = "thread"), doc = "", doc = "[`Builder::driver_thread`]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread")]
    #[track_caller]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Timer {
        match Timer::builder().build() {
            Ok(timer) => timer,
            Err(err) => panic!("{err}"),
        }
    }

    /// A [`Builder`] with the defaults of [`Timer::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().wheel_size(64).build().unwrap();
    /// assert_eq!(timer.wheel_size(), 64);
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A [`Timeout`] that completes `delay` from now: the counterpart of
    /// [`tokio::time::sleep`].
    ///
    /// The deadline is kept to the microsecond: the timeout never completes
    /// early, and on a light load completes when a `tokio::time::Sleep` with
    /// the same deadline would (the runtime's timer has a 1 ms resolution),
    /// or, with a [tick](Builder::tick) over 1 ms, at most a tick after its
    /// deadline, batched with others (under load, up to a tick later):
    /// see [Lateness](crate#lateness) for the figures on the real clock.
    /// A zero `delay` completes on the first poll. On paused time a timer
    /// of a tick under 2 ms fires as tokio's timer does: a deadline when
    /// that timer processes its millisecond, rounded up, and a zero or past
    /// one at its first poll once that timer has processed its millisecond
    /// (see `hashwheel::time`). A `delay` too long to
    /// keep (`Duration::MAX`, or one whose deadline overflows or lies over
    /// 146,000 years out) completes about 30 years from now, tokio's "far
    /// future", as `tokio::time::sleep`'s does: on a paused runtime with
    /// nothing else to do, auto-advance gets there (where "never" would
    /// leave the task hanging), and on the real clock it is as good as
    /// never. [`reset`](Timeout::reset), [`timeout`](Timer::timeout) and
    /// [`schedule`](Timer::schedule) take such a delay alike.
    ///
    /// # Panics
    ///
    /// If the timer is stopped or at its [`max_pending`](Builder::max_pending)
    /// limit; [`try_sleep`](Timer::try_sleep) returns those as errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let start = tokio::time::Instant::now();
    /// timer.sleep(Duration::from_millis(100)).await;
    /// assert!(start.elapsed() >= Duration::from_millis(100));
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::sleep`]: https://docs.rs/tokio/latest/tokio/time/fn.sleep.html")]
    #[track_caller]
    pub fn sleep(&self, delay: Duration) -> Timeout {
        unwrap(self.try_sleep(delay))
    }

    /// A [`Timeout`] that completes at `deadline`: the counterpart of
    /// [`tokio::time::sleep_until`]. A deadline at or before now completes
    /// on the first poll, without registering in the wheel (on paused time,
    /// once the runtime's timer has processed its millisecond, as
    /// [`sleep`](Timer::sleep) says).
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep).
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
    /// let deadline = Instant::now() + Duration::from_secs(1);
    /// timer.sleep_until(deadline).await;
    /// assert!(Instant::now() >= deadline);
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::sleep_until`]: https://docs.rs/tokio/latest/tokio/time/fn.sleep_until.html")]
    #[track_caller]
    pub fn sleep_until(&self, deadline: impl Into<Instant>) -> Timeout {
        unwrap(self.try_sleep_until(deadline))
    }

    /// Like [`sleep`](Timer::sleep), but returns an error instead of
    /// panicking.
    ///
    /// # Errors
    ///
    /// [`Error::is_stopped`] after [`stop`](Timer::stop);
    /// [`Error::is_at_capacity`] at the [`max_pending`](Builder::max_pending)
    /// limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let first = timer.try_sleep(Duration::from_secs(1)).unwrap();
    /// assert!(timer.try_sleep(Duration::from_secs(1)).unwrap_err().is_at_capacity());
    /// drop(first);
    /// assert!(timer.try_sleep(Duration::from_secs(1)).is_ok());
    /// # }
    /// ```
    pub fn try_sleep(&self, delay: Duration) -> Result<Timeout, Error> {
        let tick = self.shared.common.clock.tick_after(delay);
        self.timeout_at_tick(tick, delay.is_zero())
    }

    /// Like [`sleep_until`](Timer::sleep_until), but returns an error instead
    /// of panicking.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::new();
    /// timer.stop();
    /// let err = timer.try_sleep_until(tokio::time::Instant::now()).unwrap_err();
    /// assert!(err.is_stopped());
    /// # }
    /// ```
    pub fn try_sleep_until(&self, deadline: impl Into<Instant>) -> Result<Timeout, Error> {
        let deadline = deadline.into();
        let due = deadline <= self.shared.now();
        self.timeout_at_tick(self.shared.common.clock.tick_of(deadline), due)
    }

    /// A timeout at `tick`; `due` if its deadline is not after the instant
    /// it is created: it then completes on its first poll and never
    /// registers (zero delays and past deadlines cost no trip through the
    /// driver).
    fn timeout_at_tick(&self, tick: u64, due: bool) -> Result<Timeout, Error> {
        Timeout::on_shard(&self.shared.shards[self.shared.current_shard()], tick, due)
    }

    /// Runs `fut` with a deadline `delay` from now: resolves to its output,
    /// or to [`Elapsed`](crate::Elapsed) if the deadline comes first.
    ///
    /// The counterpart of [`tokio::time::timeout`]. It returns a
    /// [`WithTimeout`], tokio's [`Timeout<F>`][tokio::time::Timeout_link]: in
    /// hashwheel the name [`Timeout`] belongs to the sleep future.
    ///
    /// The future is polled before the deadline is checked, so a future that
    /// is ready in time wins a tie.
    ///
    /// Made inside a [deadline scope](crate::deadline), it ends by the
    /// scope's deadline at the latest, with
    /// [`Elapsed::is_inherited`](crate::Elapsed::is_inherited) `true` if
    /// that came first (so do [`timeout_at`](Timer::timeout_at) and the
    /// `try_` forms).
    ///
    /// # Errors
    ///
    /// [`Elapsed`](crate::Elapsed) once the deadline passes. If the timer
    /// stops first, by [`stop`](Timer::stop) or because the runtime that ran
    /// its driver shut down, the deadline can never pass: the future resolves
    /// at once to an `Elapsed` with
    /// [`is_timer_stopped`](crate::Elapsed::is_timer_stopped) true, whose
    /// message says why ("the runtime that ran this timer's driver has shut
    /// down; build one Timer per runtime").
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep); [`try_timeout`](Timer::try_timeout)
    /// returns those as errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// assert_eq!(timer.timeout(Duration::from_secs(1), async { 7 }).await, Ok(7));
    /// let slow = timer.sleep(Duration::from_secs(5));
    /// assert!(timer.timeout(Duration::from_secs(1), slow).await.is_err());
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::timeout`]: https://docs.rs/tokio/latest/tokio/time/fn.timeout.html")]
    #[cfg_attr(feature = "tokio", doc = "", doc = "[tokio::time::Timeout_link]: tokio::time::Timeout")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[tokio::time::Timeout_link]: https://docs.rs/tokio/latest/tokio/time/struct.Timeout.html")]
    #[track_caller]
    pub fn timeout<F: IntoFuture>(&self, delay: Duration, fut: F) -> WithTimeout<F::IntoFuture> {
        WithTimeout::new(fut.into_future(), self.sleep(delay))
    }

    /// Runs `fut` with a deadline: as [`timeout`](Timer::timeout), at an
    /// instant. The counterpart of [`tokio::time::timeout_at`].
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep); [`try_timeout_at`](Timer::try_timeout_at)
    /// returns those as errors.
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
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// let res = timer.timeout_at(deadline, std::future::pending::<()>()).await;
    /// assert!(res.is_err());
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::timeout_at`]: https://docs.rs/tokio/latest/tokio/time/fn.timeout_at.html")]
    #[track_caller]
    pub fn timeout_at<F: IntoFuture>(
        &self,
        deadline: impl Into<Instant>,
        fut: F,
    ) -> WithTimeout<F::IntoFuture> {
        WithTimeout::new(fut.into_future(), self.sleep_until(deadline))
    }

    /// Like [`timeout`](Timer::timeout), but returns an error instead of
    /// panicking: the form for servers that set a [`max_pending`](Builder::max_pending)
    /// limit and would rather turn a request away than panic.
    ///
    /// On an error `fut` is dropped without being polled.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep): [`Error::is_at_capacity`] at the
    /// [`max_pending`](Builder::max_pending) limit, [`Error::is_stopped`]
    /// after [`stop`](Timer::stop) or once the runtime that ran the driver
    /// has shut down. The returned future itself fails with
    /// [`Elapsed`](crate::Elapsed), as [`timeout`](Timer::timeout)'s does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let first = timer.try_timeout(Duration::from_secs(1), async { 1 }).unwrap();
    /// let second = timer.try_timeout(Duration::from_secs(1), async { 2 });
    /// assert!(second.err().unwrap().is_at_capacity());
    /// assert_eq!(first.await, Ok(1)); // its place is free again
    /// assert_eq!(timer.try_timeout(Duration::from_secs(1), async { 3 }).unwrap().await, Ok(3));
    /// # }
    /// ```
    pub fn try_timeout<F: IntoFuture>(
        &self,
        delay: Duration,
        fut: F,
    ) -> Result<WithTimeout<F::IntoFuture>, Error> {
        let timeout = self.try_sleep(delay)?;
        Ok(WithTimeout::new(fut.into_future(), timeout))
    }

    /// Like [`timeout_at`](Timer::timeout_at), but returns an error instead
    /// of panicking. On an error `fut` is dropped without being polled.
    ///
    /// # Errors
    ///
    /// As [`try_timeout`](Timer::try_timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// timer.stop();
    /// let deadline = Instant::now() + Duration::from_secs(1);
    /// let res = timer.try_timeout_at(deadline, async { 1 });
    /// assert!(res.err().unwrap().is_stopped());
    /// # }
    /// ```
    pub fn try_timeout_at<F: IntoFuture>(
        &self,
        deadline: impl Into<Instant>,
        fut: F,
    ) -> Result<WithTimeout<F::IntoFuture>, Error> {
        let timeout = self.try_sleep_until(deadline)?;
        Ok(WithTimeout::new(fut.into_future(), timeout))
    }

    /// Runs `task` once after `delay`, Netty style: the counterpart of
    /// Netty's `HashedWheelTimer.newTimeout`; tokio has none (spawn a task
    /// that sleeps).
    ///
    /// When the task is due, the driver hands it to the timer's
    /// [`TaskExecutor`](crate::TaskExecutor) ([`Builder::task_executor`]): by default it is
    /// spawned as a task of its own on the runtime that runs the driver, so
    /// a slow task delays nothing else; with [`TaskExecutor::driver`](crate::TaskExecutor::driver) it
    /// runs inline on the driver, inside the runtime's timer processing (the
    /// cheapest, but it must be short: it delays every timeout due after
    /// it, the runtime's own timers included); with
    /// [`TaskExecutor::custom`](crate::TaskExecutor::custom) it goes to your executor. Under every
    /// choice a task that panics is caught and reported with
    /// `tracing::warn!`; the timer goes on. Dropping the returned
    /// [`TaskHandle`] does not cancel the task; [`TaskHandle::cancel`] does.
    /// A pending task keeps the driver running even after every `Timer` is
    /// dropped.
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep); [`try_schedule`](Timer::try_schedule)
    /// returns errors instead.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let ran = Arc::new(AtomicBool::new(false));
    /// let flag = ran.clone();
    /// let handle = timer.schedule(Duration::from_millis(5), move || flag.store(true, Ordering::SeqCst));
    /// timer.sleep(Duration::from_millis(10)).await;
    /// assert!(ran.load(Ordering::SeqCst));
    /// assert!(handle.is_expired());
    /// # }
    /// ```
    #[track_caller]
    pub fn schedule<F>(&self, delay: Duration, task: F) -> TaskHandle
    where
        F: FnOnce() + Send + 'static,
    {
        unwrap(self.try_schedule(delay, task))
    }

    /// Like [`schedule`](Timer::schedule), but returns an error instead of
    /// panicking. The task runs where the timer's [`TaskExecutor`](crate::TaskExecutor) says, as
    /// with `schedule`.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let handle = timer.try_schedule(Duration::from_secs(1), || println!("tick")).unwrap();
    /// assert!(handle.cancel());
    /// # }
    /// ```
    pub fn try_schedule<F>(&self, delay: Duration, task: F) -> Result<TaskHandle, Error>
    where
        F: FnOnce() + Send + 'static,
    {
        let (tick, deadline) = match self.shared.common.clock.deadline_after(delay, 1) {
            (tick, Some(deadline)) if tick < NEVER => (tick, deadline),
            // A delay too long to keep runs tokio's "far future" out, as
            // `sleep`'s (see `Clock::tick_after`).
            _ => {
                let far = far_future(self.shared.now());
                (self.shared.common.clock.tick_of(far), far)
            }
        };
        let shard = self.shared.current_shard();
        self.shared.acquire(shard)?;
        // The keep-alive count is taken before the task is in the wheel: from
        // the moment the lock is released, the driver may run it, or `stop`
        // or a handle cancel it, and each of those releases the count.
        self.shared.task_added();
        let inner = {
            let mut state = self.shared.lock(shard);
            if let Some(reason) = self.shared.common.stop_reason() {
                drop(state);
                self.shared.release(shard, 1);
                self.shared.tasks_done(1);
                return Err(Error::stopped(reason));
            }
            let key = state.wheel.vacant_key();
            let inner = Arc::new(TaskInner::new(
                Arc::downgrade(&self.shared),
                shard,
                key,
                deadline,
                Box::new(task),
            ));
            let inserted = self.shared.shards[shard].insert(&mut state, tick, true, None);
            debug_assert_eq!(inserted, key);
            state.tasks.insert(key, inner.clone());
            inner
        };
        #[cfg(all(test, feature = "tokio"))]
        crate::engine::hooks::after_schedule_insert(&self.shared);
        self.shared.note_deadline(tick);
        Ok(TaskHandle::new(inner))
    }

    /// How many timeouts and tasks are pending (neither fired nor
    /// cancelled), and intervals alive (not dropped).
    ///
    /// Exact once concurrent operations finish: dropping a [`Timeout`]
    /// lowers it before `drop` returns. A timeout counts from its creation,
    /// whether or not it was polled yet; an [`Interval`] from its creation
    /// to its drop, whether or not its task keeps up with its ticks (see
    /// [`Stats`] for how the counts balance). Zero once the timer is
    /// stopped.
    /// In a child forked from the timer's process, a shard whose lock a
    /// thread of the parent held at the fork (held for ever, there) is left
    /// out rather than waited for.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let t = timer.sleep(Duration::from_secs(1));
    /// assert_eq!(timer.pending(), 1);
    /// drop(t);
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    pub fn pending(&self) -> usize {
        self.shared.pending()
    }

    /// Stops the timer: cancels every pending timeout and task, ends the
    /// driver, and returns the tasks that never ran (marked cancelled).
    ///
    /// Each returned task keeps its closure, as Netty's `stop()` does: run
    /// it with [`TaskHandle::run`], or take it with
    /// [`TaskHandle::take_task`] to run it elsewhere; dropping the handles
    /// drops the closures. This is the same under every [`TaskExecutor`](crate::TaskExecutor):
    /// the executor gets only tasks that came due, and the caller of `run`
    /// or `take_task` decides where these run. Tasks already handed to the
    /// executor (expired) are not returned, even if they have not run yet.
    ///
    /// Every pending [`Timeout`] is woken and completes, with
    /// [`Timeout::is_cancelled`] true. Afterwards [`sleep`](Timer::sleep) and
    /// [`schedule`](Timer::schedule) panic and their `try_` forms return an
    /// error with [`Error::is_stopped`]. Stopping again returns nothing.
    ///
    /// The shutdown of the runtime that runs the driver stops the timer the
    /// same way, for good; the errors and panics then say so.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let task = timer.schedule(Duration::from_secs(1), || unreachable!());
    /// let never_ran = timer.stop();
    /// assert_eq!(never_ran.len(), 1);
    /// assert!(task.is_cancelled());
    /// assert!(timer.is_stopped());
    /// # }
    /// ```
    pub fn stop(&self) -> Vec<TaskHandle> {
        self.shared
            .stop()
            .into_iter()
            .map(TaskHandle::new)
            .collect()
    }

    /// Whether the timer was stopped, by [`stop`](Timer::stop) or by the
    /// shutdown of the runtime that ran its driver.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::new();
    /// assert!(!timer.is_stopped());
    /// # }
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.shared.is_stopped()
    }

    /// The tick: the width of a bucket and the driver's unit of batching
    /// (see [`Builder::tick`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// assert_eq!(hashwheel::Timer::new().tick(), std::time::Duration::from_millis(1));
    /// # }
    /// ```
    pub fn tick(&self) -> Duration {
        self.shared.tick
    }

    /// The number of buckets in each wheel (a power of two).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().wheel_size(100).build().unwrap();
    /// assert_eq!(timer.wheel_size(), 128);
    /// # }
    /// ```
    pub fn wheel_size(&self) -> usize {
        self.shared.wheel_size
    }

    /// Gives memory back: each wheel's storage for timeouts that are gone.
    /// Storage grows to the most timeouts ever held at once and is reused
    /// after that; call this when a burst is over. Returns the bytes freed.
    ///
    /// Storage comes in pages of up to 256 entries, keyed by slot. This
    /// gives back, in each shard, the storage above the highest slot still
    /// in use, in whole pages past the first 256 slots (all of it when
    /// nothing is pending), and the pages of the interval and
    /// scheduled-task tables that hold none. It keeps the slots below a live entry (a timeout
    /// keeps its slot while it lives: nothing moves) and the deadline words
    /// (8 bytes per slot, up to the highest slot ever used), which handles
    /// read without the lock. O(slots) under each shard's lock in turn.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut burst: Vec<_> = (0..1000).map(|_| timer.sleep(Duration::from_secs(9))).collect();
    /// for t in &mut burst {
    ///     futures_util::poll!(t); // registers it
    /// }
    /// drop(burst);
    /// assert!(timer.shrink() > 0);
    /// # }
    /// ```
    pub fn shrink(&self) -> usize {
        (0..self.shared.shards.len())
            .map(|shard| {
                let mut state = self.shared.lock(shard);
                state.wheel.shrink() + state.tasks.shrink()
            })
            .sum()
    }

    /// How many times the driver woke up to turn the wheels. A timer with
    /// nothing pending never wakes it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// tokio::time::sleep(Duration::from_secs(3600)).await;
    /// assert_eq!(timer.driver_wakeups(), 0);
    /// # }
    /// ```
    pub fn driver_wakeups(&self) -> u64 {
        self.shared.common.wakeups.load(Ordering::Relaxed)
    }

    /// A snapshot of the timer's counters: see [`Stats`].
    ///
    /// The counters are kept per shard, mostly under locks the operations
    /// take anyway, so they cost next to nothing to keep; this method locks
    /// each shard briefly to read them. In a child forked from the timer's
    /// process, a shard whose lock a thread of the parent held at the fork
    /// gives only what it counts without the lock (see
    /// [`pending`](Timer::pending)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// timer.sleep(Duration::from_millis(5)).await;
    /// drop(timer.sleep(Duration::from_secs(5)));
    /// let stats = timer.stats();
    /// assert_eq!(stats.fired, 1);
    /// assert_eq!(stats.cancelled, 1);
    /// assert_eq!(stats.pending, 0);
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }
}

impl Timer {
    /// An [`Interval`] that ticks every `period`, the first tick at once.
    ///
    /// Same as [`interval_at(Instant::now(), period)`](Timer::interval_at).
    /// The counterpart of [`tokio::time::interval`].
    ///
    /// # Panics
    ///
    /// If `period` is zero, the timer is stopped, or it is at its
    /// [`max_pending`](crate::Builder::max_pending) limit;
    /// [`try_interval`](Timer::try_interval) returns those as errors.
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
    /// let start = Instant::now();
    /// let mut interval = timer.interval(Duration::from_millis(10));
    /// assert_eq!(interval.tick().await, start.into_std()); // at once
    /// assert_eq!(interval.tick().await, (start + Duration::from_millis(10)).into_std());
    /// assert_eq!(interval.tick().await, (start + Duration::from_millis(20)).into_std());
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::interval`]: https://docs.rs/tokio/latest/tokio/time/fn.interval.html")]
    #[track_caller]
    pub fn interval(&self, period: Duration) -> Interval {
        unwrap(self.try_interval(period))
    }

    /// An [`Interval`] whose first tick is at `start`, then one every
    /// `period`: the counterpart of [`tokio::time::interval_at`].
    ///
    /// # Panics
    ///
    /// As [`interval`](Timer::interval);
    /// [`try_interval_at`](Timer::try_interval_at) returns errors instead.
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
    /// let start = Instant::now() + Duration::from_secs(1);
    /// let mut interval = timer.interval_at(start, Duration::from_secs(5));
    /// assert_eq!(interval.tick().await, start.into_std());
    /// assert_eq!(interval.tick().await, (start + Duration::from_secs(5)).into_std());
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::interval_at`]: https://docs.rs/tokio/latest/tokio/time/fn.interval_at.html")]
    #[track_caller]
    pub fn interval_at(&self, start: impl Into<Instant>, period: Duration) -> Interval {
        unwrap(self.try_interval_at(start, period))
    }

    /// Like [`interval`](Timer::interval), but returns an error instead of
    /// panicking.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_config`] for a zero period; otherwise as
    /// [`try_sleep`](Timer::try_sleep).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let err = timer.try_interval(Duration::ZERO).unwrap_err();
    /// assert!(err.is_invalid_config());
    /// assert!(timer.try_interval(Duration::from_secs(1)).is_ok());
    /// # }
    /// ```
    pub fn try_interval(&self, period: Duration) -> Result<Interval, Error> {
        self.try_interval_at(self.shared.now(), period)
    }

    /// Like [`interval_at`](Timer::interval_at), but returns an error
    /// instead of panicking.
    ///
    /// # Errors
    ///
    /// As [`try_interval`](Timer::try_interval).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// timer.stop();
    /// let err = timer.try_interval_at(Instant::now(), Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_stopped());
    /// # }
    /// ```
    pub fn try_interval_at(
        &self,
        start: impl Into<Instant>,
        period: Duration,
    ) -> Result<Interval, Error> {
        let start = start.into();
        if period.is_zero() {
            return Err(Error::invalid_config("interval period must be non-zero"));
        }
        // Not completed at creation even if `start` has passed: the
        // interval holds its entry for good, and counts as pending.
        let timeout = self.timeout_at_tick(self.shared.common.clock.tick_of(start), false)?;
        Ok(Interval::new(timeout, start, period))
    }
}

impl Timer {
    /// [`sleep`](Timer::sleep), and the clock reading its deadline counts
    /// from (a `Delay`'s fork check takes it as a sign of life of its
    /// thread: see `delay::renew`).
    #[cfg(feature = "thread")]
    #[track_caller]
    #[inline]
    pub(crate) fn sleep_read(&self, delay: Duration) -> (Timeout, Instant) {
        let clock = &self.shared.common.clock;
        let now = clock.now();
        let tick = clock.tick_after_from(now, delay);
        (unwrap(self.timeout_at_tick(tick, delay.is_zero())), now)
    }

    /// [`sleep`](Timer::sleep), and the deadline it computed: now plus
    /// `delay`, to the nanosecond (`None` if that overflows: the timeout
    /// then never completes), kept rounded up to the microsecond and up to
    /// a grid of `grid` microseconds from the timer's start (1: none; never
    /// early), so that timeouts set alike share the driver's turns; and
    /// the clock reading it counts from (see [`sleep_read`](Timer::sleep_read)).
    #[cfg(feature = "thread")]
    #[track_caller]
    #[inline]
    pub(crate) fn sleep_exact_read(
        &self,
        delay: Duration,
        grid: u64,
    ) -> (Timeout, Option<Instant>, Instant) {
        let clock = &self.shared.common.clock;
        let now = clock.now();
        let (tick, deadline) = clock.deadline_after_from(now, delay, grid);
        let timeout = unwrap(self.timeout_at_tick(tick, delay.is_zero()));
        (timeout, deadline, now)
    }

}

#[cfg(feature = "tokio")]
impl Timer {
    /// [`sleep`](Timer::sleep), and the deadline it computed: now plus
    /// `delay`, to the nanosecond; `None` if that overflows (the timeout
    /// then never completes). The timeout keeps it rounded up to the
    /// microsecond.
    #[track_caller]
    #[inline]
    pub(crate) fn sleep_exact(&self, delay: Duration) -> (Timeout, Option<Instant>) {
        let (tick, deadline) = self.shared.common.clock.deadline_after(delay, 1);
        (
            unwrap(self.timeout_at_tick(tick, delay.is_zero())),
            deadline,
        )
    }

    /// `Err` with why the timer stopped, if it did.
    pub(crate) fn check_running(&self) -> Result<(), Error> {
        match self.shared.common.stop_reason() {
            Some(reason) => Err(Error::stopped(reason)),
            None => Ok(()),
        }
    }

    /// A timeout that never elapses, and never arms the driver (it
    /// completes only at the timer's stop): `tokio::time::timeout`'s for a
    /// duration too long to add to now (it has no `Sleep` at all). For
    /// `hashwheel::time` only: the `Timer` API's longest delay is tokio's
    /// "far future", 30 years.
    #[track_caller]
    pub(crate) fn sleep_never(&self) -> Timeout {
        unwrap(self.timeout_at_tick(NEVER, false))
    }

    /// Whether `self` and `other` are handles to the same timer.
    pub(crate) fn same(&self, other: &Timer) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("tick", &self.shared.tick)
            .field("wheel_size", &self.shared.wheel_size)
            .field("shards", &self.shared.shards.len())
            .field("pending", &self.pending())
            .field("stopped", &self.is_stopped())
            .finish_non_exhaustive()
    }
}

#[track_caller]
fn unwrap<T>(res: Result<T, Error>) -> T {
    match res {
        Ok(value) => value,
        Err(err) => panic!("hashwheel: {err}"),
    }
}
