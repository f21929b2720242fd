//! [`Timer`]: async-io 2's `Timer` on the process's thread-driven timer.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

use crate::engine::clock::FAR_GRID_US;
use crate::delay::Delay;

/// A deadline set this far ahead or more is kept on a grid of
/// [`FAR_GRID_US`] (see [Precision](Timer#precision)).
const SLACK_FROM: Duration = Duration::from_millis(100);

/// The grid for a deadline set `ahead` of now (1: exact; far deadlines on
/// [`FAR_GRID_US`]).
#[inline]
fn grid(ahead: Duration) -> u64 {
    if ahead >= SLACK_FROM {
        FAR_GRID_US
    } else {
        1
    }
}

/// A future or stream that emits timed events: async-io 2's `Timer` (and
/// so `smol::Timer`), on hashwheel's wheel.
///
/// Timers are futures that output a single [`Instant`] when they fire: the
/// instant they were set for. Timers are also streams that can output
/// `Instant`s periodically, at `start`, `start + period`, ... After a stall
/// the stream catches up as async-io's does: every instant missed comes out
/// at once, in order, then the schedule goes on from the last.
///
/// A switch is the `use` line: `use hashwheel::async_io::Timer;` for
/// `use async_io::Timer;`. Every method of async-io's `Timer` is here with
/// its signature and behaviour: [`never`](Timer::never),
/// [`after`](Timer::after), [`at`](Timer::at),
/// [`interval`](Timer::interval), [`interval_at`](Timer::interval_at),
/// [`will_fire`](Timer::will_fire), the `set_*` methods (which keep the
/// waker of the task that polled it, as async-io's do) and
/// [`clear`](Timer::clear). A duration too long to add to now makes a timer
/// that never fires. It is `Unpin`, `Send` and `Sync`; dropping it
/// deregisters it.
///
/// # Precision
///
/// It runs on the process-wide thread-driven timer of
/// [`Delay`], and never fires before its instant. A short
/// wait is punctual: deadlines are kept to the microsecond, and a timer
/// fires within tens of microseconds after its instant (the timer's
/// 50 µs tick, and its thread's wake-up). A deadline set 100 ms or more
/// ahead ([`after`](Timer::after), [`set_after`](Timer::set_after), and
/// each instant of an interval of such a period) is kept on a 250 µs grid
/// instead: it fires up to 250 µs after its instant (0.25% of its wait at
/// most), so that the timeouts and heartbeats of many connections share
/// the driver's turns rather than waking it and the executor every 50 µs
/// (W9 on smol in BENCHMARKS.md). The instant a timer yields is always
/// the one it was set for. Where async-io's `Timer` compares the clock at
/// each poll, this one is ready once the driver has fired it.
///
/// # Inside a deadline scope
///
/// A `Timer` keeps its own deadline inside a
/// [deadline scope](crate::deadline), as [`Delay`] does: it is a sleep
/// (or a schedule), not a timeout, and yields the instant it was set for,
/// so none could say that the scope's deadline ended it. The scope itself
/// ends at its deadline and drops it; to size one to the time left, ask
/// [`deadline::remaining`](crate::deadline::remaining).
///
/// # Examples
///
/// Sleep for 1 second:
///
/// ```
/// use hashwheel::async_io::Timer;
/// use std::time::Duration;
///
/// # futures_lite::future::block_on(async {
/// Timer::after(Duration::from_secs(1)).await;
/// # });
/// ```
///
/// A heartbeat every 20 ms until an idle deadline at 50 ms:
///
/// ```
/// use futures_lite::{FutureExt, StreamExt};
/// use hashwheel::async_io::Timer;
/// use std::time::Duration;
///
/// # futures_lite::future::block_on(async {
/// let mut heartbeat = Timer::interval(Duration::from_millis(20));
/// let mut idle = Timer::after(Duration::from_millis(50));
/// let mut beats = 0;
/// loop {
///     let beat = async { heartbeat.next().await.is_some() };
///     if !beat.or(async { (&mut idle).await; false }).await {
///         break; // idle
///     }
///     beats += 1;
/// }
/// assert!(beats >= 2);
/// # });
/// ```
#[doc(alias = "sleep")]
#[doc(alias = "timeout")]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Timer {
    /// The next instant the timer fires at; `None` while it never will.
    when: Option<Instant>,
    /// The period: `Duration::MAX` for a timer that fires once (the next
    /// instant overflows).
    period: Duration,
    /// The timer's entry on the process's thread-driven timer, due at
    /// `when` while `when` is set; made with the first instant and kept,
    /// so that a re-set moves it and keeps the waker of the task that
    /// polled it. `None` only for a timer that never had an instant.
    delay: Option<Delay>,
}

impl Timer {
    /// Creates a timer that will never fire.
    ///
    /// # Examples
    ///
    /// This function may also be useful for creating a function with an
    /// optional timeout.
    ///
    /// ```
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::Timer;
    /// use futures_lite::prelude::*;
    /// use std::time::Duration;
    ///
    /// async fn run_with_timeout(timeout: Option<Duration>) {
    ///     let timer = timeout
    ///         .map(|timeout| Timer::after(timeout))
    ///         .unwrap_or_else(Timer::never);
    ///
    ///     run_lengthy_operation().or(timer).await;
    /// }
    /// # async fn run_lengthy_operation() -> std::time::Instant {
    /// #    std::time::Instant::now()
    /// # }
    ///
    /// // Times out after 5 seconds.
    /// run_with_timeout(Some(Duration::from_secs(5))).await;
    /// // Does not time out.
    /// run_with_timeout(None).await;
    /// # });
    /// ```
    pub fn never() -> Timer {
        Timer {
            when: None,
            period: Duration::MAX,
            delay: None,
        }
    }

    /// Creates a timer that emits an event once after the given duration of
    /// time.
    ///
    /// # Panics
    ///
    /// On the first use in a process, if the default timer's thread (or,
    /// on Linux, its timerfd) cannot be created (as [`Delay::new`](crate::Delay::new)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use std::time::Duration;
    ///
    /// # futures_lite::future::block_on(async {
    /// Timer::after(Duration::from_secs(1)).await;
    /// # });
    /// ```
    #[track_caller]
    #[inline]
    pub fn after(duration: Duration) -> Timer {
        Timer::once_after(duration, Duration::MAX)
    }

    /// Creates a timer that emits an event once at the given time instant.
    ///
    /// # Panics
    ///
    /// As [`after`](Timer::after).
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use std::time::{Duration, Instant};
    ///
    /// # futures_lite::future::block_on(async {
    /// let now = Instant::now();
    /// let when = now + Duration::from_secs(1);
    /// Timer::at(when).await;
    /// # });
    /// ```
    #[track_caller]
    pub fn at(instant: Instant) -> Timer {
        Timer::interval_at(instant, Duration::MAX)
    }

    /// Creates a timer that emits events periodically.
    ///
    /// # Panics
    ///
    /// As [`after`](Timer::after).
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use futures_lite::StreamExt;
    /// use std::time::{Duration, Instant};
    ///
    /// # futures_lite::future::block_on(async {
    /// let period = Duration::from_secs(1);
    /// Timer::interval(period).next().await;
    /// # });
    /// ```
    #[track_caller]
    pub fn interval(period: Duration) -> Timer {
        Timer::once_after(period, period)
    }

    /// Creates a timer that emits events periodically, starting at `start`.
    ///
    /// # Panics
    ///
    /// As [`after`](Timer::after).
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use futures_lite::StreamExt;
    /// use std::time::{Duration, Instant};
    ///
    /// # futures_lite::future::block_on(async {
    /// let start = Instant::now();
    /// let period = Duration::from_secs(1);
    /// Timer::interval_at(start, period).next().await;
    /// # });
    /// ```
    #[track_caller]
    pub fn interval_at(start: Instant, period: Duration) -> Timer {
        Timer {
            when: Some(start),
            period,
            delay: Some(Delay::until(start)),
        }
    }

    /// A timer first due `duration` from now, then every `period`: one
    /// clock reading, as `Delay::new` takes.
    #[track_caller]
    #[inline]
    fn once_after(duration: Duration, period: Duration) -> Timer {
        match Delay::new_exact(duration, grid(duration)) {
            (delay, Some(when)) => Timer {
                when: Some(when),
                period,
                delay: Some(delay),
            },
            // Past the end of `Instant`: never, as async-io's.
            (_, None) => Timer::never(),
        }
    }

    /// Indicates whether or not this timer will ever fire.
    ///
    /// [`never()`] will never fire, and timers created with [`after()`] or
    /// [`at()`] will fire if the duration is not too large.
    ///
    /// [`never()`]: Timer::never()
    /// [`after()`]: Timer::after()
    /// [`at()`]: Timer::at()
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::Timer;
    /// use futures_lite::prelude::*;
    /// use std::time::Duration;
    ///
    /// // `never` will never fire.
    /// assert!(!Timer::never().will_fire());
    ///
    /// // `after` will fire if the duration is not too large.
    /// assert!(Timer::after(Duration::from_secs(1)).will_fire());
    /// assert!(!Timer::after(Duration::MAX).will_fire());
    ///
    /// // However, once an `after` timer has fired, it will never fire again.
    /// let mut t = Timer::after(Duration::from_secs(1));
    /// assert!(t.will_fire());
    /// (&mut t).await;
    /// assert!(!t.will_fire());
    ///
    /// // Interval timers will fire periodically.
    /// let mut t = Timer::interval(Duration::from_secs(1));
    /// assert!(t.will_fire());
    /// t.next().await;
    /// assert!(t.will_fire());
    /// # });
    /// ```
    #[inline]
    pub fn will_fire(&self) -> bool {
        self.when.is_some()
    }

    /// Sets the timer to emit an event once after the given duration of
    /// time (keeping its period, as async-io's does).
    ///
    /// Note that resetting a timer is different from creating a new timer
    /// because [`set_after()`][`Timer::set_after()`] does not remove the
    /// waker associated with the task that is polling the timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use std::time::Duration;
    ///
    /// # futures_lite::future::block_on(async {
    /// let mut t = Timer::after(Duration::from_secs(1));
    /// t.set_after(Duration::from_millis(100));
    /// # });
    /// ```
    #[track_caller]
    pub fn set_after(&mut self, duration: Duration) {
        match Instant::now().checked_add(duration) {
            Some(instant) => self.set_on(instant, grid(duration)),
            // Overflow to never going off.
            None => self.clear(),
        }
    }

    /// Sets the timer to emit an event once at the given time instant
    /// (keeping its period, as async-io's does).
    ///
    /// Note that resetting a timer is different from creating a new timer
    /// because [`set_at()`][`Timer::set_at()`] does not remove the waker
    /// associated with the task that is polling the timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use std::time::{Duration, Instant};
    ///
    /// # futures_lite::future::block_on(async {
    /// let mut t = Timer::after(Duration::from_secs(1));
    ///
    /// let now = Instant::now();
    /// let when = now + Duration::from_secs(1);
    /// t.set_at(when);
    /// # });
    /// ```
    #[track_caller]
    pub fn set_at(&mut self, instant: Instant) {
        self.set_on(instant, 1);
    }

    /// Sets the next instant, its entry due on a grid of `grid` µs.
    #[track_caller]
    fn set_on(&mut self, instant: Instant, grid: u64) {
        self.when = Some(instant);
        match &mut self.delay {
            // Registered, it stays so with its waker, at the new instant
            // (in O(1); a later one without the lock).
            Some(delay) => delay.reset_at(instant, grid),
            None => {
                let mut delay = Delay::until(instant);
                if grid > 1 {
                    delay.reset_at(instant, grid);
                }
                self.delay = Some(delay);
            }
        }
    }

    /// Sets the timer to emit events periodically.
    ///
    /// Note that resetting a timer is different from creating a new timer
    /// because [`set_interval()`][`Timer::set_interval()`] does not remove
    /// the waker associated with the task that is polling the timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use futures_lite::StreamExt;
    /// use std::time::{Duration, Instant};
    ///
    /// # futures_lite::future::block_on(async {
    /// let mut t = Timer::after(Duration::from_secs(1));
    ///
    /// let period = Duration::from_secs(2);
    /// t.set_interval(period);
    /// # });
    /// ```
    #[track_caller]
    pub fn set_interval(&mut self, period: Duration) {
        match Instant::now().checked_add(period) {
            Some(instant) => {
                self.period = period;
                self.set_on(instant, grid(period));
            }
            // Overflow to never going off.
            None => self.clear(),
        }
    }

    /// Sets the timer to emit events periodically, starting at `start`.
    ///
    /// Note that resetting a timer is different from creating a new timer
    /// because [`set_interval_at()`][`Timer::set_interval_at()`] does not
    /// remove the waker associated with the task that is polling the timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use futures_lite::StreamExt;
    /// use std::time::{Duration, Instant};
    ///
    /// # futures_lite::future::block_on(async {
    /// let mut t = Timer::after(Duration::from_secs(1));
    ///
    /// let start = Instant::now();
    /// let period = Duration::from_secs(2);
    /// t.set_interval_at(start, period);
    /// # });
    /// ```
    #[track_caller]
    pub fn set_interval_at(&mut self, start: Instant, period: Duration) {
        self.period = period;
        self.set_at(start);
    }

    /// Clear any timeouts set on this timer. It will never fire again until
    /// a new interval or instant is set (which wakes the task that polled
    /// it, as async-io's does).
    ///
    /// # Examples
    ///
    /// ```
    /// use hashwheel::async_io::Timer;
    /// use std::time::Duration;
    ///
    /// let mut t = Timer::after(Duration::from_secs(1));
    /// t.clear();
    /// assert!(!t.will_fire());
    /// ```
    pub fn clear(&mut self) {
        self.when = None;
        if let Some(delay) = &mut self.delay {
            // Never: the entry and its waker stay for the next `set_*`.
            delay.reset(Duration::MAX);
        }
    }
}

impl Future for Timer {
    type Output = Instant;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
        match self.poll_next(cx) {
            Poll::Ready(Some(when)) => Poll::Ready(when),
            // The stream never ends: a timer that will not fire is pending.
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

impl Stream for Timer {
    type Item = Instant;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        let this = self.get_mut();
        let (Some(when), Some(delay)) = (this.when, this.delay.as_mut()) else {
            return Poll::Pending;
        };
        // The driver fires an entry at or after its instant, never before:
        // ready, the clock has reached `when`.
        ready!(delay.poll_timer(cx));
        match when.checked_add(this.period) {
            Some(next) => {
                this.when = Some(next);
                delay.reset_at(next, grid(this.period));
                // Registered again at once with this task's waker, as
                // async-io's re-registers: a `set_*` from elsewhere before
                // the next poll still wakes the task. Ready here (the next
                // instant has passed too, after a stall) leaves the entry
                // fired, and the next poll yields it at once: the catch-up.
                let _ = delay.poll_timer(cx);
            }
            None => this.when = None,
        }
        Poll::Ready(Some(when))
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("when", &self.when)
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}
