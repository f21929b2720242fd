//! A drop-in for [`tokio::time`]: the same free functions and types, on the
//! current runtime's default [`Timer`].
//!
//! Code written against `tokio::time` switches by its `use` lines: where it
//! says `use tokio::time::{sleep, timeout, Duration, Instant}` or calls
//! `tokio::time::sleep(..)`, say `hashwheel::time` instead. [`sleep`],
//! [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`] and
//! [`interval_at`] take tokio's arguments and return types with tokio's
//! names and methods ([`Sleep`], [`Timeout`], [`Interval`],
//! [`MissedTickBehavior`], [`error::Elapsed`]); [`Instant`] and
//! [`Duration`] are tokio's own, re-exported, and so are `pause`, `resume`
//! and `advance` with the feature `test-util` (which turns on tokio's), so
//! paused time works as before.
//!
//! # The default timer
//!
//! Each runtime gets its own default [`Timer`], built with the default
//! [`Builder`](crate::Builder) (1 ms tick, 512 buckets) the first time one
//! of these functions runs on it, and stopped when that runtime shuts down.
//! [`Timer::current`] returns it, for [`stats`](Timer::stats) or
//! [`pending`](Timer::pending); [`Timer::set_current`] installs a timer of
//! your own [`Builder`](crate::Builder) in its place, if called before any
//! of these functions runs on that runtime. The default is found by the
//! runtime's [`Id`], so runtimes one after another (a
//! `#[tokio::test]` each) and side by side each get theirs; a timer that has
//! stopped (its runtime shut down, or [`Timer::stop`] called) is never
//! handed out again, and the next call on that runtime builds a fresh one.
//!
//! Each call finds the runtime as `tokio::time::sleep` does (a clone of the
//! runtime's handle, which tokio's `sleep` pays too: tokio 1.x offers no way
//! to read the current runtime's id without it), then its timer in a
//! per-thread cache; the first call of a thread on a runtime takes a
//! process-wide lock once. A cache checked by anything cheaper (the task's
//! id, the worker's index) would hand out the wrong runtime's timer inside
//! `Handle::enter` or a `block_on` nested in `block_in_place`. Measured
//! (the repository's `BENCHMARKS.md`, "Micro-benchmarks": W1, a 30 s sleep
//! created, polled once and dropped on a current-thread runtime):
//! <!--fig:ops.w1.time-->81–82 ns per pair through [`sleep`] against
//! <!--fig:ops.w1.timer-->74 ns through [`Timer::sleep`]
//! (<!--fig:ops.w1.time.ratio-->1.10×, the lookup costs
//! <!--fig:ops.w1.lookup-->7–8 ns), and <!--fig:ops.w1.tokio-->504 ns
//! through `tokio::time::sleep` (boxed, as it must be to keep). The clone
//! writes a reference count that every worker of the runtime shares: with
//! request timeouts (W10 there, 1,000 tasks each looping
//! `timeout(30 s, f)`) it costs <!--fig:w10.ct.time-->1.04× a
//! [`Timer::timeout`] on a current-thread runtime, and on 16 workers of a
//! 16-core machine about <!--fig:w10.16w.time.over-timer.us-->1.9 µs a
//! request more (<!--fig:w10.16w.time-->2,235 against
//! <!--fig:w10.16w.timer-->364 ns: <!--fig:w10.16w.time.ratio-->6.1×, still
//! <!--fig:w10.16w.time.vs-tokio-->0.16× `tokio::time::timeout`'s, which
//! clones the same count).
//!
//! Keep a [`Timer`] handle instead (say [`Timer::current`], once per
//! connection) to skip the lookup on hot paths, or when you want several
//! timers (one per kind of deadline, each with its own tick), a configured
//! [`Builder`](crate::Builder) (tick, wheel size, `max_pending`), its
//! [`stats`](Timer::stats), Netty-style callbacks ([`Timer::schedule`]), or
//! the error-returning `try_` methods.
//!
//! # Panics
//!
//! Like tokio's, every function here panics outside a tokio runtime ("there
//! is no reactor running, must be called from the context of a Tokio 1.x
//! runtime") and on a runtime built without its time driver ("A Tokio 1.x
//! context was found, but timers are disabled. Call `enable_time` on the
//! runtime builder to enable timers."), and [`interval`] and
//! [`interval_at`] panic for a zero period ("`period` must be
//! non-zero."): tokio's messages word for word, so that tests written with
//! `#[should_panic(expected = ...)]` pass unchanged. `pause`, `resume`
//! and `advance` are tokio's own (feature `test-util`).
//! ([`Timer`]'s own methods panic with hashwheel's messages.)
//!
//! # Differences from `tokio::time`
//!
//! [`Sleep`] is `Unpin` (`tokio::pin!` and `Box::pin` still work);
//! deadlines are kept to the microsecond rather than rounded to tokio's
//! millisecond; a sleep on a stopped timer completes rather than panics.
//! `docs/MIGRATING.md` in the repository lists each difference with the
//! test that shows it.
//!
//! On paused time (`start_paused`, `tokio::time::pause`) every
//! task sees the values and instants `tokio::time` gives it: a deadline
//! completes when tokio's timer processes its millisecond, rounded up, off
//! the millisecond too (after an `advance` of microseconds), and a zero or
//! past deadline completes at its first poll only once that timer has
//! processed its millisecond, as tokio's `Sleep` does. The timer follows
//! the runtime timer's millisecond for as long as the runtime's time stays
//! paused; on the real clock deadlines keep the microsecond. Tasks woken
//! in one millisecond run in the order tokio's would but in a few cases
//! (a sleep reset before its first poll, an interval reset later while
//! pending): see `docs/MIGRATING.md`.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! // Was: use tokio::time::{interval, sleep, timeout, Duration};
//! use hashwheel::time::{interval, sleep, timeout, Duration};
//!
//! sleep(Duration::from_millis(10)).await;
//! let res = timeout(Duration::from_millis(50), async { 42 }).await;
//! assert_eq!(res, Ok(42));
//! let mut heartbeat = interval(Duration::from_secs(1));
//! heartbeat.tick().await;
//! assert_eq!(hashwheel::Timer::current().pending(), 1); // the interval's entry
//! # }
//! ```

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};


use crate::engine::clock::{far_future, FAR_FUTURE};
use crate::timer::current::with_current;
// What the docs here link to.
#[cfg(doc)]
use crate::timer::Timer;
#[cfg(doc)]
use tokio::runtime::Id;

pub use crate::timer::interval::MissedTickBehavior;
/// tokio's paused-time controls, re-exported (feature `test-util`, which
/// turns on tokio's).
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub use tokio::time::{advance, pause, resume};
pub use tokio::time::{Duration, Instant};

/// A future with a deadline: [`timeout`] and [`timeout_at`] return it.
/// Tokio's name for hashwheel's [`WithTimeout`](crate::WithTimeout), with
/// tokio's `get_ref`, `get_mut` and `into_inner`.
pub type Timeout<T> = crate::WithTimeout<T>;

/// Errors of the time functions, as [`tokio::time::error`].
pub mod error {
    pub use crate::error::Elapsed;
}

// The panic messages are tokio's own words, so that a test written
// against `tokio::time` (`#[should_panic(expected = ...)]`) passes
// unchanged. Outside a runtime: the `Display` of tokio's `TryCurrentError`,
// which is the message tokio panics with ("there is no reactor running,
// ...", or that its thread-local is gone).

/// What tokio's `interval` and `interval_at` panic with for a zero period.
const ZERO_PERIOD: &str = "`period` must be non-zero.";

/// tokio's `safe_delay` (tokio 1.54, `time/mod.rs`): a duration capped at
/// about 30 years ([`FAR_FUTURE`], tokio's figure), which tokio applies to
/// the duration of every [`sleep`], to an interval's period and to
/// `Interval::reset_after`, so that their deadlines are always instants
/// (and, under paused time, the runtime auto-advances to them rather than
/// waiting for ever). Its `timeout` is not capped: see [`timeout`].
fn safe_delay(duration: Duration) -> Duration {
    duration.min(FAR_FUTURE)
}

/// tokio's `sleep` deadline for a duration past [`FAR_FUTURE`]: now plus
/// [`safe_delay`] of it, about 30 years out, to the nanosecond.
#[cold]
fn capped_deadline() -> Instant {
    Instant::from_std(far_future(Instant::now().into_std()))
}

/// Waits until `duration` has elapsed: [`tokio::time::sleep`] on the
/// current runtime's default [`Timer`].
///
/// The deadline is now plus `duration`, capped at about 30 years (tokio's
/// `safe_delay`: 86,400 × 365 × 30 seconds), to the nanosecond as tokio's
/// [`Sleep::deadline`] reports it; the timer keeps it to the microsecond
/// and never fires early.
///
/// # Panics
///
/// Outside a tokio runtime, or on a runtime without a time driver.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{sleep, Duration, Instant};
///
/// let start = Instant::now();
/// sleep(Duration::from_millis(100)).await;
/// assert_eq!(start.elapsed(), Duration::from_millis(100));
/// # }
/// ```
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    if duration > FAR_FUTURE {
        return sleep_until(capped_deadline());
    }
    with_current(|timer| match timer.sleep_exact(duration) {
        (timeout, Some(deadline)) => Sleep::new(timeout, Instant::from_std(deadline)),
        // Now plus at most 30 years overflowed: tokio panics here too.
        (_, None) => panic!("overflow when adding duration to instant"),
    })
}

/// Waits until `deadline`: [`tokio::time::sleep_until`] on the current
/// runtime's default [`Timer`].
///
/// # Panics
///
/// Outside a tokio runtime, or on a runtime without a time driver.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{sleep_until, Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(100);
/// sleep_until(deadline).await;
/// assert_eq!(Instant::now(), deadline);
/// # }
/// ```
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    with_current(|timer| Sleep::new(timer.sleep_until(deadline), deadline))
}

/// Requires `future` to complete within `duration`: [`tokio::time::timeout`]
/// on the current runtime's default [`Timer`]. The future is polled first,
/// so one that is ready at the deadline still completes with `Ok`.
///
/// As tokio's, the duration is not capped at 30 years (unlike [`sleep`]'s):
/// the deadline is now plus `duration`, and a duration too long to add to
/// now (`Duration::MAX`) never elapses.
///
/// Made inside a [deadline scope](crate::deadline), it ends by the scope's
/// deadline at the latest, with [`Elapsed::is_inherited`](error::Elapsed::is_inherited)
/// `true` if that came first ([`timeout_at`] too).
///
/// # Panics
///
/// Outside a tokio runtime, or on a runtime without a time driver.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{timeout, Duration};
///
/// let never = std::future::pending::<()>();
/// assert!(timeout(Duration::from_millis(10), never).await.is_err());
/// assert_eq!(timeout(Duration::from_millis(10), async { 1 }).await, Ok(1));
/// # }
/// ```
#[track_caller]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    let future = future.into_future();
    crate::WithTimeout::new(future, timeout_after(duration))
}

/// The [`Timeout`](crate::Timeout) of [`timeout`]`(duration, ..)`: the
/// current runtime's look-up in one copy, not in each of the generic
/// function's (4 KiB of code each, W14: 3 instruction-cache misses a call).
#[track_caller]
fn timeout_after(duration: Duration) -> crate::Timeout {
    if duration > FAR_FUTURE {
        return match Instant::now().checked_add(duration) {
            Some(deadline) => with_current(|timer| timer.sleep_until(deadline)),
            // tokio's has no deadline then, and never elapses.
            None => with_current(crate::Timer::sleep_never),
        };
    }
    with_current(|timer| timer.sleep(duration))
}

/// Requires `future` to complete before `deadline`:
/// [`tokio::time::timeout_at`] on the current runtime's default [`Timer`].
///
/// # Panics
///
/// Outside a tokio runtime, or on a runtime without a time driver.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{timeout_at, Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(10);
/// let never = std::future::pending::<()>();
/// assert!(timeout_at(deadline, never).await.is_err());
/// assert_eq!(Instant::now(), deadline);
/// # }
/// ```
#[track_caller]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    let future = future.into_future();
    crate::WithTimeout::new(future, timeout_until(deadline))
}

/// The [`Timeout`](crate::Timeout) of [`timeout_at`]`(deadline, ..)`, as
/// [`timeout_after`].
#[track_caller]
fn timeout_until(deadline: Instant) -> crate::Timeout {
    with_current(|timer| timer.sleep_until(deadline))
}

/// An [`Interval`] that ticks at once, then every `period`:
/// [`tokio::time::interval`] on the current runtime's default [`Timer`].
/// A period over about 30 years is capped there, as tokio's (its
/// [`period`](Interval::period) says so).
///
/// # Panics
///
/// If `period` is zero (as tokio's), outside a tokio runtime, or on a
/// runtime without a time driver.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{interval, Duration, Instant};
///
/// let start = Instant::now();
/// let mut heartbeat = interval(Duration::from_millis(10));
/// heartbeat.tick().await; // at once
/// heartbeat.tick().await;
/// assert_eq!(start.elapsed(), Duration::from_millis(10));
/// # }
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    // Before the runtime is looked for, as tokio's.
    assert!(period > Duration::ZERO, "{ZERO_PERIOD}");
    Interval(with_current(|timer| timer.interval(safe_delay(period))))
}

/// An [`Interval`] that ticks first at `start`, then every `period`:
/// [`tokio::time::interval_at`] on the current runtime's default [`Timer`].
/// A period over about 30 years is capped there, as tokio's; `start` is
/// not.
///
/// # Panics
///
/// If `period` is zero (as tokio's), outside a tokio runtime, or on a
/// runtime without a time driver.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{interval_at, Duration, Instant};
///
/// let start = Instant::now() + Duration::from_millis(50);
/// let mut heartbeat = interval_at(start, Duration::from_millis(10));
/// assert_eq!(heartbeat.tick().await, start);
/// # }
/// ```
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "{ZERO_PERIOD}");
    Interval(with_current(|timer| {
        timer.interval_at(start, safe_delay(period))
    }))
}

/// The stream of [`interval`] and [`interval_at`]: tokio's `Interval`, on a
/// hashwheel [`Interval`](crate::Interval), with tokio's [`Instant`] where
/// the crate's returns `std::time::Instant` (the two convert losslessly,
/// paused time included). Each method is the crate `Interval`'s.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{interval_at, Duration, Instant};
///
/// let start = Instant::now() + Duration::from_millis(50);
/// let mut heartbeat = interval_at(start, Duration::from_millis(10));
/// assert_eq!(heartbeat.tick().await, start);
/// heartbeat.reset_at(start + Duration::from_millis(100));
/// assert_eq!(heartbeat.tick().await, start + Duration::from_millis(100));
/// assert_eq!(heartbeat.period(), Duration::from_millis(10));
/// # }
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Interval(crate::Interval);

impl Interval {
    /// Completes at the next tick and returns its nominal instant: see
    /// [`crate::Interval::tick`].
    pub async fn tick(&mut self) -> Instant {
        Instant::from_std(self.0.tick().await)
    }

    /// Polls for the next tick: see [`crate::Interval::poll_tick`].
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        self.0.poll_tick(cx).map(Instant::from_std)
    }

    /// The next tick a period from now: see [`crate::Interval::reset`].
    pub fn reset(&mut self) {
        self.0.reset();
    }

    /// The next tick now: see [`crate::Interval::reset_immediately`].
    pub fn reset_immediately(&mut self) {
        self.0.reset_immediately();
    }

    /// The next tick `after` from now, capped at about 30 years as tokio's:
    /// see [`crate::Interval::reset_after`].
    pub fn reset_after(&mut self, after: Duration) {
        self.0.reset_after(safe_delay(after));
    }

    /// The next tick at `deadline`: see [`crate::Interval::reset_at`].
    pub fn reset_at(&mut self, deadline: Instant) {
        self.0.reset_at(deadline);
    }

    /// The period between ticks: see [`crate::Interval::period`].
    pub fn period(&self) -> Duration {
        self.0.period()
    }

    /// What it does after missed ticks: see
    /// [`crate::Interval::missed_tick_behavior`].
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.0.missed_tick_behavior()
    }

    /// Sets what it does after missed ticks: see
    /// [`crate::Interval::set_missed_tick_behavior`].
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.0.set_missed_tick_behavior(behavior);
    }

    /// The crate's [`Interval`](crate::Interval) inside.
    pub fn into_inner(self) -> crate::Interval {
        self.0
    }
}

impl futures_core::Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        Pin::new(&mut self.get_mut().0)
            .poll_next(cx)
            .map(|tick| tick.map(Instant::from_std))
    }
}

/// The future of [`sleep`] and [`sleep_until`]: tokio's `Sleep`, on a
/// hashwheel [`Timeout`](crate::Timeout).
///
/// It has tokio's [`deadline`](Sleep::deadline),
/// [`is_elapsed`](Sleep::is_elapsed) and pinned [`reset`](Sleep::reset).
/// Unlike tokio's it is `Unpin`, so it needs no pinning to be kept in a
/// struct or polled by `&mut` (pinning it, as tokio code does, works too).
/// Dropping it cancels it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{sleep, Duration, Instant};
///
/// let idle = sleep(Duration::from_secs(30));
/// tokio::pin!(idle);
/// // A message came in: push the idle deadline back.
/// idle.as_mut().reset(Instant::now() + Duration::from_secs(30));
/// tokio::select! {
///     () = &mut idle => assert!(idle.is_elapsed()),
/// }
/// # }
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    inner: crate::Timeout,
    /// The deadline as given (or now plus the duration given), which
    /// [`deadline`](Sleep::deadline) returns as tokio's does; the timeout
    /// keeps it rounded up to the microsecond, and a deadline before the
    /// timer's start as that start.
    deadline: Instant,
}

impl Sleep {
    fn new(inner: crate::Timeout, deadline: Instant) -> Sleep {
        Sleep { inner, deadline }
    }

    /// The instant the sleep completes: the deadline given to
    /// [`sleep_until`] or the last [`reset`](Sleep::reset), or now plus
    /// the duration given to [`sleep`], to the nanosecond, as tokio's.
    /// (The timer fires it at the first microsecond at or after it; on
    /// paused time, when tokio's timer processes its millisecond.)
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::time::{sleep, sleep_until, Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let deadline = Instant::now() + Duration::from_nanos(1_500_001);
    /// assert_eq!(sleep_until(deadline).deadline(), deadline);
    /// let past = Instant::now() - Duration::from_millis(20);
    /// assert_eq!(sleep_until(past).deadline(), past);
    /// let before = Instant::now();
    /// let s = sleep(Duration::from_millis(10));
    /// assert!(s.deadline() >= before + Duration::from_millis(10));
    /// # }
    /// ```
    #[must_use]
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the sleep has completed: it was polled, and its deadline has
    /// been reached. A sleep never polled reports `false` whatever its
    /// deadline, as tokio's; so does one [`reset`](Sleep::reset) before
    /// its first poll or after it completed, until its next poll, where
    /// tokio's registers at the reset (see
    /// [`Timeout::is_expired`](crate::Timeout::is_expired)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::time::{sleep, Duration};
    ///
    /// let mut s = sleep(Duration::from_millis(5));
    /// assert!(!s.is_elapsed());
    /// (&mut s).await;
    /// assert!(s.is_elapsed());
    /// # }
    /// ```
    #[must_use]
    pub fn is_elapsed(&self) -> bool {
        self.inner.is_expired()
    }

    /// Moves the deadline to `deadline`, in O(1), whether the sleep is
    /// pending or has completed (it then becomes pending again). Takes
    /// `Pin<&mut Self>` as tokio's does; since `Sleep` is `Unpin`,
    /// `Pin::new(&mut sleep)` makes one.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::time::{sleep, Duration, Instant};
    ///
    /// let mut s = Box::pin(sleep(Duration::from_secs(60)));
    /// let soon = Instant::now() + Duration::from_millis(5);
    /// s.as_mut().reset(soon);
    /// s.await;
    /// assert_eq!(Instant::now(), soon);
    /// # }
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.deadline = deadline;
        this.inner.reset_at(deadline);
    }

    /// The hashwheel [`Timeout`](crate::Timeout) underneath, for its
    /// methods tokio's `Sleep` lacks ([`reset`](crate::Timeout::reset) by a
    /// `Duration`, [`cancel`](crate::Timeout::cancel),
    /// [`is_cancelled`](crate::Timeout::is_cancelled)). Its
    /// [`deadline`](crate::Timeout::deadline) is the timer's: this sleep's
    /// rounded up to the microsecond.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::time::{sleep, Duration};
    ///
    /// let timeout = sleep(Duration::from_secs(5)).into_timeout();
    /// assert!(timeout.cancel());
    /// # }
    /// ```
    pub fn into_timeout(self) -> crate::Timeout {
        self.inner
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().inner).poll(cx)
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("is_elapsed", &self.is_elapsed())
            .finish()
    }
}
