//! The [`Timer`] handle and its [`Builder`]. The state they share with the
//! driver lives in the shard state (`shard.rs`).

use std::fmt;
use std::future::IntoFuture;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::time::Instant;

#[cfg(feature = "tokio")]
use tokio::runtime::Handle;

#[cfg(feature = "tokio")]
use crate::alarm::runtime::RuntimeAlarm;
#[cfg(feature = "thread")]
use crate::alarm::sleeper::Sleeper;
use crate::alarm::Alarm;
#[cfg(feature = "tokio")]
use crate::driver;
use crate::error::Error;
use crate::executor::TaskExecutor;
use crate::interval::Interval;
use crate::shard::{far_future, shard_bytes, Shared, TaskInner, UNIT_NS};
use crate::stats::Stats;
use crate::task::TaskHandle;
#[cfg(feature = "thread")]
use crate::thread_driver;
use crate::timeout::{Timeout, WithTimeout};
use crate::wheel::raw::{MAX_ENTRIES, NEVER};

/// The smallest tick of a timer driven by a runtime (whose timer has a
/// resolution of 1 ms); shorter ones are a configuration error.
const MIN_TICK: Duration = Duration::from_millis(1);
/// The smallest tick of a thread-driven timer; shorter ones are a
/// configuration error.
#[cfg(feature = "thread")]
const MIN_THREAD_TICK: Duration = Duration::from_micros(10);
/// The largest wheel: 2^20 buckets, about 8.2 MiB a shard (see
/// [`Builder::wheel_size`]). Netty allows 2^30, but it keeps far deadlines
/// in their buckets, counting rounds; here the round ring holds them, so a
/// larger wheel would only save a far deadline's move from the ring, at
/// 8 bytes a bucket per shard, allocated whole at build.
const MAX_WHEEL_SIZE: usize = 1 << 20;
/// The most a timer may allocate at build, holding nothing, over all its
/// shards (see [`Builder::shards`]): a timer the builder accepts never
/// costs gigabytes unasked.
const MAX_BUILD_BYTES: usize = 64 << 20;
/// Of [`MAX_BUILD_BYTES`], what is kept for the timer's own state beside
/// its shards (its common state and driver, a few KiB).
const COMMON_BYTES: usize = 64 << 10;
/// Slots in each shard's round ring (see the `wheel` module): bounded so a
/// huge wheel does not get a huge ring too.
const MAX_RING: usize = 4096;
const MIN_RING: usize = 64;
/// [`Builder::build`]'s error on a runtime without a time driver (which
/// `hashwheel::time` turns into tokio's panic).
#[cfg(feature = "tokio")]
pub(crate) const NO_TIME_DRIVER: &str =
    "the runtime has no time driver: build it with enable_time() or enable_all()";
/// Shards are numbered with 16 bits in a [`Timeout`].
pub(crate) const MAX_SHARDS: usize = 1 << 16;

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
#[derive(Clone)]
pub struct Timer {
    pub(crate) shared: Arc<Shared>,
}

/// Configures a [`Timer`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let timer = Timer::builder()
///     .tick(Duration::from_millis(10))
///     .wheel_size(1000) // rounded up to 1024
///     .max_pending(100_000)
///     .build()
///     .unwrap();
/// assert_eq!(timer.wheel_size(), 1024);
/// assert_eq!(timer.tick(), Duration::from_millis(10));
/// # }
/// ```
///
/// Its methods are `#[must_use]`: a chain that never reaches
/// [`build`](Builder::build) builds nothing, and the compiler says so.
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # fn main() {
/// hashwheel::Timer::builder().tick(std::time::Duration::from_millis(10));
/// # }
/// ```
#[derive(Clone)]
pub struct Builder {
    tick: Duration,
    wheel_size: usize,
    max_pending: Option<usize>,
    shards: Option<usize>,
    capacity: usize,
    #[cfg(feature = "tokio")]
    handle: Option<Handle>,
    /// `None`: the driver's default ([`TaskExecutor::spawn`] on a runtime,
    /// [`TaskExecutor::driver`] on a thread).
    task_executor: Option<TaskExecutor>,
    /// Driven by a thread of its own rather than a runtime.
    #[cfg(feature = "thread")]
    thread: bool,
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
    /// A zero `delay` completes on the first poll. A `delay` too long to
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
    #[track_caller]
    pub fn sleep(&self, delay: Duration) -> Timeout {
        unwrap(self.try_sleep(delay))
    }

    /// A [`Timeout`] that completes at `deadline`: the counterpart of
    /// [`tokio::time::sleep_until`]. A deadline at or before now completes
    /// on the first poll, without registering in the wheel.
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
        let tick = self.shared.common.tick_after(delay);
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
        self.timeout_at_tick(self.shared.tick_of(deadline), due)
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
    /// [`WithTimeout`], tokio's [`Timeout<F>`](tokio::time::Timeout): in
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
    /// [`TaskExecutor`] ([`Builder::task_executor`]): by default it is
    /// spawned as a task of its own on the runtime that runs the driver, so
    /// a slow task delays nothing else; with [`TaskExecutor::driver`] it
    /// runs inline on the driver, inside the runtime's timer processing (the
    /// cheapest, but it must be short: it delays every timeout due after
    /// it, the runtime's own timers included); with
    /// [`TaskExecutor::custom`] it goes to your executor. Under every
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
    /// panicking. The task runs where the timer's [`TaskExecutor`] says, as
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
                (self.shared.tick_of(far), far)
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
        crate::hooks::after_schedule_insert(&self.shared);
        self.shared.note_deadline(tick);
        Ok(TaskHandle::new(inner))
    }

    /// How many timeouts and tasks are pending: neither fired nor cancelled.
    ///
    /// Exact once concurrent operations finish: dropping a [`Timeout`]
    /// lowers it before `drop` returns. A timeout counts from its creation,
    /// whether or not it was polled yet. Zero once the timer is stopped.
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
    /// drops the closures. This is the same under every [`TaskExecutor`]:
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
        let timeout = self.timeout_at_tick(self.shared.tick_of(start), false)?;
        Ok(Interval::new(timeout, start, period))
    }
}

impl Timer {
    /// [`sleep`](Timer::sleep), and the deadline it computed: now plus
    /// `delay`, to the nanosecond; `None` if that overflows (the timeout
    /// then never completes). The timeout keeps it rounded up to the
    /// microsecond, and up to a grid of `grid` microseconds from the
    /// timer's start (1: none; never early), so that timeouts set alike
    /// share the driver's turns.
    #[track_caller]
    #[inline]
    pub(crate) fn sleep_exact_on(&self, delay: Duration, grid: u64) -> (Timeout, Option<Instant>) {
        let (tick, deadline) = self.shared.common.clock.deadline_after(delay, grid);
        (
            unwrap(self.timeout_at_tick(tick, delay.is_zero())),
            deadline,
        )
    }
}

#[cfg(feature = "tokio")]
impl Timer {
    /// [`sleep_exact_on`](Timer::sleep_exact_on) without a grid.
    #[track_caller]
    #[inline]
    pub(crate) fn sleep_exact(&self, delay: Duration) -> (Timeout, Option<Instant>) {
        self.sleep_exact_on(delay, 1)
    }

    /// `Err` with why the timer stopped, if it did.
    pub(crate) fn check_running(&self) -> Result<(), Error> {
        match self.shared.common.stop_reason() {
            Some(reason) => Err(Error::stopped(reason)),
            None => Ok(()),
        }
    }

    /// A timeout of `fut` that never elapses, and never arms the driver:
    /// `tokio::time::timeout`'s for a duration too long to add to now (it
    /// has no `Sleep` at all). For `hashwheel::time` only: the `Timer`
    /// API's longest delay is tokio's "far future", 30 years.
    #[track_caller]
    pub(crate) fn timeout_never<F: IntoFuture>(&self, fut: F) -> WithTimeout<F::IntoFuture> {
        WithTimeout::new(
            fut.into_future(),
            unwrap(self.timeout_at_tick(NEVER, false)),
        )
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

/// Whether the runtime of `handle` has a time driver, which the driver task
/// sleeps on. Without one the driver would panic on its first sleep and the
/// timer stop itself, so that every timeout completed at once.
///
/// tokio 1.x has no query for this (the `Debug` of `Handle` is opaque, and
/// `RuntimeMetrics` says nothing of the drivers). Creating a `Sleep` (which
/// registers only when polled) panics without a time driver, so the check
/// creates one under `catch_unwind`: the panic hook reports tokio's message
/// as the check runs, and a `panic = "abort"` build aborts with it, as
/// `Builder::build` documents.
#[cfg(feature = "tokio")]
fn has_time_driver(handle: &Handle) -> bool {
    let _runtime = handle.enter();
    std::panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_ok()
}

/// What [`Builder::build`] checked and worked out, for either driver.
struct Plan {
    tick: Duration,
    tick_us: u64,
    wheel_size: usize,
    ring: usize,
    shards: usize,
    /// Entries reserved on each shard ([`Builder::capacity`]).
    per_shard: usize,
    max_pending: Option<usize>,
}

impl Plan {
    /// The shared state of a timer with `alarm`, with the room
    /// [`Builder::capacity`] asked for reserved on every shard.
    fn shared(&self, alarm: Alarm) -> Arc<Shared> {
        let shared = Shared::new(
            self.tick,
            self.tick_us,
            self.wheel_size,
            self.ring,
            self.shards,
            self.max_pending,
            alarm,
        );
        if self.per_shard > 0 {
            for shard in shared.shards.iter() {
                shard.lock().wheel.reserve(self.per_shard);
                shard.deadlines.reserve(self.per_shard);
            }
        }
        shared
    }
}

#[track_caller]
fn unwrap<T>(res: Result<T, Error>) -> T {
    match res {
        Ok(value) => value,
        Err(err) => panic!("hashwheel: {err}"),
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Builder");
        d.field("tick", &self.tick)
            .field("wheel_size", &self.wheel_size)
            .field("max_pending", &self.max_pending)
            .field("shards", &self.shards);
        #[cfg(feature = "tokio")]
        d.field("handle", &self.handle);
        d.field("task_executor", &self.executor());
        #[cfg(feature = "thread")]
        d.field("driver_thread", &self.is_thread());
        d.finish()
    }
}

impl Builder {
    /// Whether the timer will be thread-driven.
    fn is_thread(&self) -> bool {
        #[cfg(all(feature = "thread", feature = "tokio"))]
        return self.thread;
        #[cfg(not(feature = "tokio"))]
        return true;
        #[cfg(not(feature = "thread"))]
        return false;
    }

    /// The executor chosen, or the driver's default.
    fn executor(&self) -> TaskExecutor {
        match &self.task_executor {
            Some(executor) => executor.clone(),
            None if self.is_thread() => TaskExecutor::driver(),
            None => TaskExecutor::default(),
        }
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: 1 ms tick, 512 buckets, no pending limit, one shard per
    /// CPU, the current runtime, callbacks spawned as tasks
    /// ([`TaskExecutor::spawn`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Builder::new().build().unwrap();
    /// assert_eq!(timer.tick(), std::time::Duration::from_millis(1));
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn new() -> Builder {
        Builder {
            tick: MIN_TICK,
            wheel_size: 512,
            max_pending: None,
            shards: None,
            capacity: 0,
            #[cfg(feature = "tokio")]
            handle: None,
            task_executor: None,
            #[cfg(feature = "thread")]
            thread: false,
        }
    }

    /// The tick: the width of a bucket, and the driver's unit of batching.
    ///
    /// Deadlines keep their microseconds whatever the tick. With the
    /// default 1 ms (the runtime timer's own resolution) the timer adds no
    /// rounding: a timeout fires when a `tokio::time::Sleep` with the same
    /// deadline would, under load too. A coarser tick batches: the driver
    /// turns at most once per tick, a timeout fires at most one tick late
    /// (never early), and far fewer wake-ups serve many timeouts: the knob
    /// that trades lateness for CPU. A thread-driven timer turns on
    /// multiples of the tick since it was built. A runtime's timer rings
    /// only on its own whole milliseconds (counted from the runtime's
    /// start), so a timer driven by one turns on those, once per whole
    /// millisecond of the tick: a 2 or 2.5 ms tick every 2 ms, a 1.5 ms
    /// tick every millisecond as a 1 ms tick does (a turn every 1.5 ms
    /// could not keep every timeout within 1.5 ms of its deadline). On W9
    /// (heartbeats, BENCHMARKS.md) a 2 ms tick parks the runtime two fifths
    /// less often and costs 0.71–0.92× `tokio::time`'s CPU at 10,000 and
    /// 100,000 connections (1 ms: level with tokio's to a tenth dearer),
    /// with heartbeats 1.0–1.1 ms late at the median, as tokio's, and
    /// 0.2–0.4 ms later than tokio's at the p99 (1 ms: 0.6× tokio's).
    ///
    /// A timer driven by a runtime takes ticks from 1 ms (the runtime
    /// timer's resolution); a thread-driven one
    /// ([`Builder::driver_thread`], feature `thread`) from 10 µs, for
    /// sub-millisecond timers. [`build`](Builder::build) fails with
    /// [`Error::is_invalid_config`] for a tick under its driver's minimum
    /// (the message names `driver_thread()` for a runtime's) or zero, and
    /// never changes the tick it is given: [`Timer::tick`] returns it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().tick(Duration::from_millis(100)).build().unwrap();
    /// assert_eq!(timer.tick(), Duration::from_millis(100));
    /// assert!(hashwheel::Timer::builder().tick(Duration::ZERO).build().is_err());
    /// let sub_ms = hashwheel::Timer::builder().tick(Duration::from_micros(500)).build();
    /// assert!(sub_ms.unwrap_err().to_string().contains("driver_thread()"));
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn tick(mut self, tick: Duration) -> Builder {
        self.tick = tick;
        self
    }

    /// The number of buckets per wheel, rounded up to a power of two; 1 to
    /// 2^20 (1,048,576). One turn of the wheel spans `tick * wheel_size`;
    /// deadlines further out wait in a ring of rounds, so a larger wheel
    /// only saves them a move from the ring to their bucket.
    ///
    /// # Memory
    ///
    /// Each shard (see [`shards`](Builder::shards)) allocates its wheel
    /// whole at [`build`](Builder::build): 8 bytes and a bit per list (its
    /// two ends: a list keeps its entries in the order they came, which
    /// keeps the order in which tasks are woken). A bucket of a wheel of up
    /// to 2^16 buckets is 16 lists (split in four, and four rounds in the
    /// first level): 130 bytes; of 2^17 or 2^18 buckets, 4 lists (32.5
    /// bytes); of 2^19 or more, one (8.1 bytes). So a shard's wheel takes
    /// 65 KiB at the default 512 buckets and at most about 8.2 MiB (at
    /// 2^16, 2^18 and 2^20 buckets), on top of about 16 KiB for the shard
    /// itself: 83 KiB a shard by default. Timeouts
    /// take their own storage as they come (see [`capacity`](Builder::capacity)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().wheel_size(300).build().unwrap();
    /// assert_eq!(timer.wheel_size(), 512);
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn wheel_size(mut self, buckets: usize) -> Builder {
        self.wheel_size = buckets;
        self
    }

    /// The most timeouts and tasks that may be pending at once. The `try_`
    /// methods fail with [`Error::is_at_capacity`] beyond it; a place frees
    /// up as soon as one fires or is cancelled.
    ///
    /// A [`Timeout::reset`] of a timeout that already fired never fails: it
    /// counts as pending again even past the limit.
    ///
    /// # Errors
    ///
    /// [`build`](Builder::build) fails with [`Error::is_invalid_config`]
    /// for 0: a timer that may hold nothing would refuse every timeout.
    /// Leave `max_pending` unset for no limit (Netty's `maxPendingTimeouts`
    /// of 0 means that; here it is the default).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().max_pending(2).build().unwrap();
    /// let _a = timer.try_sleep(Duration::from_secs(1)).unwrap();
    /// let _b = timer.try_schedule(Duration::from_secs(1), || {}).unwrap();
    /// assert!(timer.try_sleep(Duration::from_secs(1)).unwrap_err().is_at_capacity());
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn max_pending(mut self, max: usize) -> Builder {
        self.max_pending = Some(max);
        self
    }

    /// Reserves room for `timeouts` timeouts up front, split evenly across
    /// the shards (each reserves `timeouts / shards`, rounded up): the
    /// storage of their entries and their deadline words is allocated by
    /// [`build`](Builder::build) rather than by the inserts that first need
    /// it, like [`DelayQueue::with_capacity`](crate::DelayQueue::with_capacity).
    /// Defaults to 0.
    ///
    /// Threads spread over the shards, so on a multi-thread runtime the
    /// split matches the load; a timer used from one thread fills one
    /// shard, so give it [`shards(1)`](Builder::shards) to reserve it all
    /// there. Growing past the reservation is cheap either way: storage
    /// grows a page (256 entries) at a time, never copies what it holds,
    /// and no insert allocates more than a few pages' worth (8 KiB each),
    /// however many timeouts the shard holds. [`Timer::shrink`] gives back
    /// what is not in use, reserved or not. Intervals and scheduled tasks
    /// take a little more, allocated as they come.
    ///
    /// # Errors
    ///
    /// A shard holds at most `u32::MAX - 3` (4,294,967,292) timeouts:
    /// [`build`](Builder::build) fails with [`Error::is_invalid_config`] if
    /// `timeouts.div_ceil(shards)` is more than that, and reserves up to
    /// exactly that (about 40 bytes per timeout; an allocation that fails
    /// aborts, as `Vec::with_capacity`'s does).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().shards(1).capacity(10_000).build().unwrap();
    /// let held: Vec<_> = (0..10_000).map(|_| timer.sleep(Duration::from_secs(9))).collect();
    /// # drop(held);
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn capacity(mut self, timeouts: usize) -> Builder {
        self.capacity = timeouts;
        self
    }

    /// How many wheels (each with its own lock) to spread threads over.
    /// Defaults to the number of CPUs, as many as fit the bound below; 1 to
    /// 65,536.
    ///
    /// # Memory
    ///
    /// Every shard allocates its wheel and its own state at
    /// [`build`](Builder::build), 83 KiB with the default wheel and up to
    /// about 8.2 MiB with a large one (see [`wheel_size`](Builder::wheel_size)),
    /// and a timer allocates at most 64 MiB at build, all shards together,
    /// holding nothing: about 785 shards of the default wheel, at least
    /// 7 of any. `build` fails past that with [`Error::is_invalid_config`],
    /// naming how many fit; the default is lowered to fit (64 CPUs' shards
    /// fit wheels of up to 4,096 buckets, and 7 fit any). A
    /// [`capacity`](Builder::capacity) you reserve comes on top.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().shards(1).build().unwrap();
    /// # drop(timer);
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn shards(mut self, shards: usize) -> Builder {
        self.shards = Some(shards);
        self
    }

    /// The runtime whose timer turns the wheels (and that runs the driver's
    /// guard task). Defaults to the current one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// // Built outside any runtime: the driver runs on `rt`.
    /// let timer = hashwheel::Timer::builder().handle(rt.handle().clone()).build().unwrap();
    /// rt.block_on(timer.sleep(Duration::from_millis(1)));
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn handle(mut self, handle: Handle) -> Builder {
        self.handle = Some(handle);
        self
    }

    /// Where the callbacks of [`Timer::schedule`] run once due: spawned as
    /// tasks on the driver's runtime ([`TaskExecutor::spawn`], the default),
    /// inline on the driver ([`TaskExecutor::driver`], the cheapest, for
    /// callbacks that never block), or handed to an executor of yours
    /// ([`TaskExecutor::custom`], `spawn_blocking` for callbacks that block).
    /// See [`TaskExecutor`] for the trade-off; Netty's `taskExecutor`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::{TaskExecutor, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().task_executor(TaskExecutor::driver()).build().unwrap();
    /// let task = timer.schedule(Duration::from_millis(5), || println!("on the driver"));
    /// timer.sleep(Duration::from_millis(5)).await;
    /// assert!(task.is_expired());
    /// # }
    /// ```
    #[doc(alias = "taskExecutor")]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn task_executor(mut self, executor: TaskExecutor) -> Builder {
        self.task_executor = Some(executor);
        self
    }

    /// Drives the timer on a thread of its own, Netty's worker thread,
    /// rather than inside a tokio runtime's timer: its timeouts, intervals
    /// and callbacks then work from any executor or plain thread, with no
    /// runtime at all. Without the feature `tokio` this is the only driver,
    /// and [`build`](Builder::build) picks it anyway.
    ///
    /// The thread sleeps until the next tick with work (none while nothing
    /// is pending, none on an empty tick), wakes what expired, and ends once
    /// the timer is [stopped](Timer::stop) or its last `Timer`, timeout,
    /// interval and pending task is gone. Its clock is std's
    /// (`std::time::Instant`): **tokio's paused time does not move it**.
    /// Its [`tick`](Builder::tick) may go down to 10 µs for sub-millisecond
    /// timers (a runtime-driven timer's stops at 1 ms): on Linux the thread
    /// sleeps on a timerfd, which the kernel does not delay by its 50 µs of
    /// timer slack; elsewhere on `std`'s condition variable. A finer tick
    /// costs more wake-ups only when deadlines are that close together: the
    /// thread turns at most once per tick, and only on ticks with work.
    ///
    /// A library meant for any executor should call `driver_thread()`
    /// rather than rely on the thread-only build's default: when another
    /// crate in the same program turns the feature `tokio` on, a plain
    /// [`build`](Builder::build) (and [`Timer::new`]) drives the timer on
    /// the current tokio runtime instead, and fails outside one.
    ///
    /// Callbacks of [`Timer::schedule`] run on the driver's thread by
    /// default ([`TaskExecutor::driver`], as Netty's): a callback that
    /// blocks delays every timeout of the timer until it returns. Pass
    /// [`TaskExecutor::custom`] for callbacks that may block.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // No runtime: the timer has its own thread.
    /// let timer = hashwheel::Timer::builder()
    ///     .tick(Duration::from_micros(50))
    ///     .driver_thread()
    ///     .build()
    ///     .unwrap();
    /// let start = std::time::Instant::now();
    /// futures::executor::block_on(timer.sleep(Duration::from_millis(2)));
    /// assert!(start.elapsed() >= Duration::from_millis(2));
    /// ```
    #[cfg(feature = "thread")]
    #[cfg_attr(docsrs, doc(cfg(feature = "thread")))]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn driver_thread(mut self) -> Builder {
        self.thread = true;
        self
    }

    /// Builds the timer and spawns its driver.
    ///
    /// The 65th live timer of one runtime warns once per process, on stderr
    /// and through `tracing` (and so does the 65th live driver thread of
    /// the process): share one `Timer` per runtime (see [`Timer::new`]).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_config`], with a message naming the value, for a
    /// zero tick or one under the driver's minimum (1 ms on a runtime, where
    /// the message names [`driver_thread()`](Builder::driver_thread); 10 µs
    /// on a thread), a `max_pending` of 0, a wheel size of 0 or above 2^20,
    /// a tick so long that
    /// one turn of the wheel overflows, a shard count of 0 or above 65,536
    /// or more shards than fit in 64 MiB (see [`shards`](Builder::shards)),
    /// no runtime (called outside one without [`handle`](Builder::handle)),
    /// or a runtime without a time driver (built without `enable_time()` or
    /// `enable_all()`).
    ///
    /// # Panics
    ///
    /// Under `panic = "abort"`, on a runtime without a time driver: the
    /// process aborts with tokio's message ("A Tokio 1.x context was found,
    /// but timers are disabled") instead of returning the error. tokio 1.x
    /// offers no way to ask whether a runtime has its time driver (not
    /// `Handle`, not `RuntimeMetrics`, whose `Debug` is opaque too): the
    /// check creates a `tokio::time::Sleep`, which panics without one, and
    /// catches the panic, which only an unwinding build can do (the panic
    /// hook prints tokio's message as the check runs). With
    /// `panic = "abort"`, build runtimes with `enable_time()` or
    /// `enable_all()`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = hashwheel::Timer::builder().wheel_size(0).build().unwrap_err();
    /// assert!(err.is_invalid_config());
    /// # }
    /// ```
    pub fn build(self) -> Result<Timer, Error> {
        if self.tick.is_zero() {
            return Err(Error::invalid_config("tick must be non-zero, got 0ns"));
        }
        #[cfg(feature = "thread")]
        let thread = self.is_thread();
        #[cfg(feature = "thread")]
        let min_tick = if thread { MIN_THREAD_TICK } else { MIN_TICK };
        #[cfg(not(feature = "thread"))]
        let min_tick = MIN_TICK;
        if self.tick < min_tick {
            return Err(Error::invalid_config(if min_tick == MIN_TICK {
                format!(
                    "a runtime-driven timer's tick must be at least 1ms (the runtime timer's \
                     resolution), got {:?}; for sub-millisecond ticks (from 10µs) drive the \
                     timer on a thread of its own with Builder::driver_thread() (feature `thread`)",
                    self.tick
                )
            } else {
                format!(
                    "a thread-driven timer's tick must be at least 10µs, got {:?}",
                    self.tick
                )
            }));
        }
        let tick = self.tick;
        if self.max_pending == Some(0) {
            return Err(Error::invalid_config(
                "max_pending must be at least 1, got 0: the timer would refuse every timeout \
                 (for no limit, leave max_pending unset)",
            ));
        }
        if self.wheel_size == 0 || self.wheel_size > MAX_WHEEL_SIZE {
            return Err(Error::invalid_config(format!(
                "wheel size must be between 1 and 2^20 (1048576), got {}",
                self.wheel_size
            )));
        }
        let wheel_size = self.wheel_size.next_power_of_two();
        let tick_ns = u64::try_from(tick.as_nanos()).ok();
        let span = tick.checked_mul(wheel_size as u32);
        let (Some(tick_ns), Some(_)) = (tick_ns, span) else {
            return Err(Error::invalid_config(format!(
                "tick of {tick:?} times {wheel_size} buckets overflows the wheel's span"
            )));
        };
        let ring = wheel_size.clamp(MIN_RING, MAX_RING);
        let tick_us = tick_ns.div_ceil(UNIT_NS);
        // What each shard allocates now, and how many fit the bound: at
        // least 7, since a shard takes at most about 8.2 MiB.
        let shard_bytes = shard_bytes(wheel_size, tick_us, ring);
        let fit = (MAX_BUILD_BYTES - COMMON_BYTES) / shard_bytes;
        let shards = match self.shards {
            Some(n) if n == 0 || n > MAX_SHARDS => {
                return Err(Error::invalid_config(format!(
                    "shards must be between 1 and 65536, got {n}"
                )))
            }
            Some(n) if n > fit => {
                return Err(Error::invalid_config(format!(
                    "{n} shards of a {wheel_size}-bucket wheel would allocate {} MiB at build, \
                     holding nothing ({} KiB a shard); a timer allocates at most 64 MiB: \
                     {fit} shards at most, or a smaller wheel_size",
                    (n * shard_bytes) >> 20,
                    shard_bytes >> 10,
                )))
            }
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get().min(fit)),
        };
        let per_shard = self.capacity.div_ceil(shards);
        if per_shard > MAX_ENTRIES {
            return Err(Error::invalid_config(format!(
                "a capacity of {} over {shards} shards is more than a shard holds ({MAX_ENTRIES})",
                self.capacity
            )));
        }
        let plan = Plan {
            tick,
            tick_us,
            wheel_size,
            ring,
            shards,
            per_shard,
            max_pending: self.max_pending,
        };
        #[cfg(feature = "thread")]
        if thread {
            return self.build_thread(&plan);
        }
        #[cfg(feature = "tokio")]
        {
            self.build_runtime(&plan)
        }
        #[cfg(not(feature = "tokio"))]
        unreachable!("without tokio every timer is thread-driven")
    }

    /// [`build`](Self::build) for a timer driven by a runtime.
    #[cfg(feature = "tokio")]
    fn build_runtime(self, plan: &Plan) -> Result<Timer, Error> {
        let executor = self.executor();
        let handle = match self.handle {
            Some(handle) => handle,
            None => Handle::try_current().map_err(|_| {
                Error::invalid_config(
                    "no tokio runtime: build the timer inside one, or pass Builder::handle",
                )
            })?,
        };
        if !has_time_driver(&handle) {
            return Err(Error::invalid_config(NO_TIME_DRIVER));
        }
        // The clock starts by the runtime's time (paused or not), also when
        // built outside the runtime with `Builder::handle`: read outside it,
        // tokio's clock is std's, which a paused runtime's is not.
        let shared = {
            let _entered = handle.enter();
            plan.shared(Alarm::Runtime(RuntimeAlarm::new()))
        };
        driver::start(&handle, &shared, executor);
        Ok(Timer { shared })
    }

    /// [`build`](Self::build) for a thread-driven timer.
    #[cfg(feature = "thread")]
    fn build_thread(self, plan: &Plan) -> Result<Timer, Error> {
        let executor = self.executor();
        #[cfg(feature = "tokio")]
        let runner = {
            let handle = self.handle.or_else(|| Handle::try_current().ok());
            if executor.is_spawn() && handle.is_none() {
                return Err(Error::invalid_config(
                    "TaskExecutor::spawn on a thread-driven timer needs a tokio runtime: \
                     build it inside one, or pass Builder::handle",
                ));
            }
            executor.bind_thread(handle)
        };
        #[cfg(not(feature = "tokio"))]
        let runner = executor.bind_thread();
        let sleeper = Sleeper::new().map(Arc::new).map_err(|err| {
            Error::invalid_config(format!("the driver's alarm could not be created: {err}"))
        })?;
        let shared = plan.shared(Alarm::Thread(sleeper.clone()));
        thread_driver::start(&shared, sleeper, runner).map_err(|err| {
            Error::invalid_config(format!("the driver's thread could not be started: {err}"))
        })?;
        Ok(Timer { shared })
    }
}
