//! [`Interval`]: a heartbeat on the wheel, like `tokio::time::Interval`.

use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

use crate::deadlines::{Schedule, AFTER_MASK, FAR};
use crate::error::{Error, StopReason};
use crate::shard::{far_future, Beat, STALLED, UNTAKEN};
use crate::timeout::Timeout;

/// How late a tick may complete and still count as on time: tokio's 5 ms
/// (see [`tolerance`]).
const TOLERANCE: Duration = Duration::from_millis(5);

/// How late a tick may complete and still count as on time on a timer of
/// tick `tick`: tokio's 5 ms, and with a tick over 1 ms, what it adds to
/// the lateness of the runtime's 1 ms (a timeout on time may then fire up
/// to a tick after its deadline, where tokio's fires within a
/// millisecond). With the default 1 ms tick a timeout fires when tokio's
/// `Sleep` would, so the tolerance is tokio's own: it used to be 5 ms plus
/// a tick, and a tick taken 5.5 ms late counted as on time where tokio's
/// counted it missed.
fn tolerance(tick: Duration) -> Duration {
    TOLERANCE + tick.saturating_sub(Duration::from_millis(1))
}

/// A stream of ticks, one every `period`, from
/// [`Timer::interval`](crate::Timer::interval) and
/// [`Timer::interval_at`](crate::Timer::interval_at).
///
/// The counterpart of [`tokio::time::Interval`]: one wheel entry
/// underneath, however long it runs, which the driver re-arms for the next
/// tick as it fires one, so that in the steady state
/// [`tick`](Interval::tick) takes no lock and inserts nothing. An interval
/// whose tick has not been taken yet is not re-armed: a task that stopped
/// calling `tick` is woken once, not once a period. It is `Unpin`, needs no
/// pinning, and implements [`Stream`] with `Item = Instant`.
///
/// Ticks are reported at their *nominal* instants (`start`, `start +
/// period`, ...): the value [`tick`](Interval::tick) returns is the instant
/// the tick was due, never later than when it completes. A tick completes at
/// or after its instant, never before, and as late as every hashwheel
/// deadline (see [Lateness](crate#lateness)).
///
/// When ticks are missed (the task polling the interval was busy, or the
/// runtime stalled), [`MissedTickBehavior`] decides what happens next; the
/// default is [`Burst`](MissedTickBehavior::Burst), as in tokio. A tick
/// counts as missed when it completes more than 5 ms after its instant, as
/// in tokio; on a timer of a tick over 1 ms, 5 ms plus what the tick has
/// over 1 ms (a timeout on time may fire up to a tick late).
///
/// # Timer stopped
///
/// If the timer is [stopped](crate::Timer::stop) (or its runtime shuts
/// down), no tick can come any more: [`tick`](Interval::tick) and
/// [`poll_tick`](Interval::poll_tick) panic rather than hang, as
/// [`Timer::sleep`](crate::Timer::sleep) does on a stopped timer, and the
/// stream ends: `poll_next` returns `Ready(None)`. Use the stream, or check
/// [`Timer::is_stopped`](crate::Timer::is_stopped), where a loop must
/// outlive the timer.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let mut heartbeat = timer.interval(Duration::from_secs(10));
/// let first = heartbeat.tick().await; // the first tick completes at once
/// let second = heartbeat.tick().await;
/// assert_eq!(second - first, Duration::from_secs(10));
/// # }
/// ```
///
/// As a [`Stream`]:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use futures_util::StreamExt;
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let ticks: Vec<_> = timer.interval(Duration::from_millis(100)).take(3).collect().await;
/// assert_eq!(ticks[2] - ticks[0], Duration::from_millis(200));
/// # }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Interval {
    /// The wheel entry (registered on the first poll, as an interval's).
    timeout: Timeout,
    /// What the driver and this handle share: the waker, whether a tick
    /// fired untaken, and the tick the driver re-arms the entry at; and the
    /// interval's fixed schedule (period, tolerance), kept there rather
    /// than here: the interval lives in its task's future, which every
    /// beat touches, and the beat is read on every tick anyway (see
    /// [`Beat`]).
    beat: Arc<Beat>,
    /// The nominal instant of the next tick; the entry waits for it.
    next: Instant,
    /// The next tick is due by a clock reading already taken: it completes
    /// at once, without waiting for the driver (missed ticks in a burst,
    /// a reset to a past instant).
    due_now: bool,
    behavior: MissedTickBehavior,
}

/// What an [`Interval`] does after it missed ticks.
///
/// Say the period is 10 ms, the interval started at 0 ms, and the task
/// polling it stalled from 12 ms to 35 ms, missing the ticks due at 20 and
/// 30 ms. The next ticks complete at:
///
/// | behaviour | ticks after the stall (ms) |
/// |-----------|----------------------------|
/// | [`Burst`](MissedTickBehavior::Burst) (default) | 35 (reports 20), 35 (reports 30), 40, 50, ... |
/// | [`Delay`](MissedTickBehavior::Delay) | 35 (reports 20), 45, 55, ... |
/// | [`Skip`](MissedTickBehavior::Skip) | 35 (reports 20), 40, 50, ... |
///
/// The counterpart of [`tokio::time::MissedTickBehavior`], with the same
/// semantics.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::MissedTickBehavior;
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let mut interval = timer.interval(Duration::from_secs(1));
/// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
/// interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Skip);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MissedTickBehavior {
    /// Catch up: the missed ticks complete at once, one after the other,
    /// then the schedule goes on at `start + n * period` as if nothing
    /// happened. The default. Suits work that must happen a fixed number
    /// of times.
    #[default]
    Burst,
    /// Start over: the next tick is one period after the late tick
    /// completed, and the schedule shifts by the delay. Suits "at least
    /// `period` between ticks", such as heartbeats that must not bunch up.
    Delay,
    /// Drop the missed ticks: the next tick is the next one due on the
    /// original schedule, `start + n * period`.
    Skip,
}

impl MissedTickBehavior {
    /// The instant of the tick after one that was due at `due` but
    /// completed late, at `now`.
    fn next(self, due: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => add(due, period),
            MissedTickBehavior::Delay => add(now, period),
            MissedTickBehavior::Skip => {
                let late = nanos(now - due);
                let period_ns = nanos(period);
                let into_period = Duration::from_nanos(late % period_ns);
                add(now, period - into_period)
            }
        }
    }
}

impl Interval {
    /// An interval on `timeout`, whose deadline is `start`, ticking every
    /// `period`.
    pub(crate) fn new(timeout: Timeout, start: Instant, period: Duration) -> Interval {
        let schedule = Schedule {
            period_ticks: timeout.whole_ticks(period).unwrap_or(0),
            period,
            tolerance_us: u32::try_from(tolerance(timeout.tick_len()).as_micros())
                .unwrap_or(u32::MAX),
        };
        let beat = Arc::new(Beat::new(timeout.tick_of(add(start, period)), schedule));
        Interval {
            timeout,
            beat,
            next: start,
            due_now: false,
            behavior: MissedTickBehavior::default(),
        }
    }

    /// Completes at the next tick and returns its nominal instant.
    ///
    /// The first tick completes at the interval's start (at once for
    /// [`Timer::interval`](crate::Timer::interval)).
    ///
    /// # Cancellation
    ///
    /// Cancel safe: dropping the future before it completes loses no tick;
    /// the next call picks up the same tick.
    ///
    /// # Panics
    ///
    /// If the timer is stopped (see [Timer stopped](Interval#timer-stopped)).
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
    /// let mut interval = timer.interval(Duration::from_millis(20));
    /// let start = Instant::now();
    /// for _ in 0..3 {
    ///     interval.tick().await;
    /// }
    /// assert_eq!(start.elapsed(), Duration::from_millis(40));
    /// # }
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready` with its nominal instant once it
    /// is due, else `Pending`, and `cx`'s waker is woken when it is due.
    ///
    /// Only the waker of the last call is woken, as with other futures.
    ///
    /// # Panics
    ///
    /// If the timer is stopped (see [Timer stopped](Interval#timer-stopped)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_millis(5));
    /// let first = poll_fn(|cx| interval.poll_tick(cx)).await;
    /// let second = poll_fn(|cx| interval.poll_tick(cx)).await;
    /// assert_eq!(second - first, Duration::from_millis(5));
    /// # }
    /// ```
    #[track_caller]
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        match self.poll_next_tick(cx) {
            Poll::Ready(Some(instant)) => Poll::Ready(instant),
            Poll::Ready(None) => {
                let reason = self.timeout.timer_stop_reason();
                let err = Error::stopped(reason.unwrap_or(StopReason::Stopped));
                panic!("hashwheel: {err}, no interval tick can come")
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// The next tick, or `None` once the timer is stopped.
    ///
    /// In the steady state this is one atomic load when the tick has not
    /// come (and the waker's registration), and one load, a clock read and
    /// one compare-and-swap when it has: the driver re-armed the entry for
    /// the tick after as it fired this one.
    fn poll_next_tick(&mut self, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        if self.timeout.is_stopped() {
            return Poll::Ready(None);
        }
        if self.due_now {
            self.due_now = false;
            return Poll::Ready(Some(self.take(false)));
        }
        if !self.timeout.is_registered() {
            // The first poll, or the first since a reset before it: a tick
            // whose instant has passed completes at once.
            if self.timeout.now() >= self.next {
                return Poll::Ready(Some(self.take(false)));
            }
            if !self.timeout.register_beat(&self.beat) {
                return Poll::Ready(None);
            }
        }
        if self.beat.state.load(Ordering::Acquire) & UNTAKEN == 0 {
            self.beat.waker.register(cx.waker());
            // Looked at again after the registration: a tick that fired
            // meanwhile was either seen here or woke the new waker.
            if self.beat.state.load(Ordering::Acquire) & UNTAKEN == 0 {
                if self.timeout.is_stopped() {
                    return Poll::Ready(None);
                }
                return Poll::Pending;
            }
        }
        Poll::Ready(Some(self.take(true)))
    }

    /// Takes the tick due at `self.next` and schedules the one after by
    /// the missed-tick rules; returns the tick's instant. `fired` if the
    /// driver fired it (and re-armed the entry for the next tick on time).
    fn take(&mut self, fired: bool) -> Instant {
        let due = self.next;
        // Read after the tick came: lateness is measured from the moment
        // the tick is taken, as tokio does.
        let now = self.timeout.now();
        let period = self.beat.schedule.period;
        let on_time = add(due, period);
        let next = if now > add(due, self.tolerance()) {
            tracing::trace!(
                late = ?(now - due),
                behavior = ?self.behavior,
                "hashwheel: interval missed a tick"
            );
            self.behavior.next(due, now, period)
        } else {
            on_time
        };
        self.next = next;
        if fired && next == on_time && next > now {
            // The steady state: the driver re-armed the entry for `next`
            // as it fired; leave it the tick after, unless it fired again
            // meanwhile (`STALLED`: not re-armed).
            let state = self.beat.state.load(Ordering::Acquire);
            if state & (UNTAKEN | STALLED) == UNTAKEN
                && self
                    .beat
                    .state
                    .compare_exchange(
                        state,
                        self.after_on_time(state, next),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
            {
                return due;
            }
        }
        self.rearm(next, now);
        due
    }

    /// How late a tick may be and still count as on time.
    fn tolerance(&self) -> Duration {
        Duration::from_micros(u64::from(self.beat.schedule.tolerance_us))
    }

    /// The tick the driver re-arms the entry at once the tick at `next`
    /// fires.
    fn after(&self, next: Instant) -> u64 {
        self.timeout.tick_of(add(next, self.beat.schedule.period))
    }

    /// [`after`](Self::after) for `next`, the tick after an on-time one,
    /// from the beat's `state`: its re-arm tick is that of `next` (every
    /// write of the state leaves `after` of the handle's next tick), so the
    /// one after is a period later, when the period is a whole number of
    /// ticks and that tick is past the timer's start (`tick_of` clamps
    /// earlier deadlines to 0) and short of the word's range.
    #[inline]
    fn after_on_time(&self, state: u64, next: Instant) -> u64 {
        let last = state & AFTER_MASK;
        match self.beat.schedule.period_ticks {
            period if period > 0 && last > 0 && period < FAR - last.min(FAR) => {
                debug_assert_eq!(last + period, self.after(next), "re-arm tick by sum");
                last + period
            }
            _ => self.after(next),
        }
    }

    /// Moves the entry to `next` under the lock and clears what the driver
    /// left in the beat (an untaken tick that this consumes, a stall); a
    /// `next` already past by `now` completes without the driver.
    fn rearm(&mut self, next: Instant, now: Instant) {
        let tick = self.timeout.tick_of(next);
        let after = self.after(next);
        let beat = &*self.beat;
        self.timeout.reset_tick_with(tick, false, |fired_now| {
            let state = if fired_now {
                // Fired by the reset itself: due at once, not re-armed.
                after | UNTAKEN | STALLED
            } else {
                after
            };
            beat.state.store(state, Ordering::Release);
        });
        self.due_now = next <= now;
    }

    /// Restarts the schedule: the next tick is one period from now.
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
    /// let mut interval = timer.interval(Duration::from_secs(10));
    /// interval.tick().await;
    /// tokio::time::sleep(Duration::from_secs(3)).await;
    /// interval.reset();
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, (now + Duration::from_secs(10)).into_std());
    /// # }
    /// ```
    pub fn reset(&mut self) {
        self.reset_at(add(self.timeout.now(), self.beat.schedule.period));
    }

    /// Restarts the schedule with a tick due now: the next
    /// [`tick`](Interval::tick) completes at once.
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
    /// let mut interval = timer.interval(Duration::from_secs(10));
    /// interval.tick().await;
    /// interval.reset_immediately();
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now.into_std());
    /// # }
    /// ```
    pub fn reset_immediately(&mut self) {
        self.reset_at(self.timeout.now());
    }

    /// Restarts the schedule with the next tick `after` from now.
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
    /// let mut interval = timer.interval(Duration::from_secs(10));
    /// interval.tick().await;
    /// interval.reset_after(Duration::from_secs(1));
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, (now + Duration::from_secs(1)).into_std());
    /// assert_eq!(interval.tick().await, (now + Duration::from_secs(11)).into_std());
    /// # }
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        self.reset_at(add(self.timeout.now(), after));
    }

    /// Restarts the schedule with the next tick at `deadline`, in O(1).
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
    /// let mut interval = timer.interval(Duration::from_secs(10));
    /// let at = Instant::now() + Duration::from_millis(1500);
    /// interval.reset_at(at);
    /// assert_eq!(interval.tick().await, at.into_std());
    /// # }
    /// ```
    pub fn reset_at(&mut self, deadline: impl Into<Instant>) {
        let deadline = deadline.into();
        self.next = deadline;
        let now = self.timeout.now();
        self.rearm(deadline, now);
    }

    /// The period between ticks.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let interval = timer.interval(Duration::from_secs(30));
    /// assert_eq!(interval.period(), Duration::from_secs(30));
    /// # }
    /// ```
    pub fn period(&self) -> Duration {
        self.beat.schedule.period
    }

    /// What the interval does after missed ticks; see
    /// [`MissedTickBehavior`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::MissedTickBehavior;
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let interval = timer.interval(Duration::from_secs(1));
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// # }
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.behavior
    }

    /// Sets what the interval does after missed ticks; see
    /// [`MissedTickBehavior`]. Takes effect at the next missed tick.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::MissedTickBehavior;
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut interval = timer.interval(Duration::from_secs(1));
    /// interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Delay);
    /// # }
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.behavior = behavior;
    }
}

impl Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_next_tick(cx)
    }
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("next", &self.next)
            .field("period", &self.beat.schedule.period)
            .field("missed_tick_behavior", &self.behavior)
            .finish_non_exhaustive()
    }
}

/// `instant + d`, or "never" (about 30 years out) on overflow.
fn add(instant: Instant, d: Duration) -> Instant {
    instant
        .checked_add(d)
        .unwrap_or_else(|| far_future(instant))
}

/// Whole nanoseconds, saturating; at least 1 so it can divide.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}
