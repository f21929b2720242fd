//! [`Interval`]: a heartbeat on the wheel, like `tokio::time::Interval`.

use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures_core::Stream;

use crate::engine::clock::{Clock, FAR_FUTURE};
use crate::engine::coop;
use crate::engine::deadlines::{Deadlines, FAR, UNTAKEN};
use crate::error::{Error, StopReason};
use crate::timer::timeout::{Rearm, Timeout};

/// How late a tick may complete and still count as on time: tokio's 5 ms
/// (see [`tolerance`]).
const TOLERANCE_NS: i128 = 5_000_000;

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
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::Interval`]: https://docs.rs/tokio/latest/tokio/time/struct.Interval.html")]
#[must_use = "streams do nothing unless polled"]
pub struct Interval {
    /// The wheel entry (registered on the first poll, as an interval's):
    /// its deadline word says whether a tick waits and where the driver
    /// re-arms it, the entry holds the task's waker (see
    /// [`Deadlines`](crate::engine::deadlines) for the protocol). Nothing else of
    /// the interval is shared: a heartbeat touches the entry, its word and
    /// the task.
    timeout: Timeout,
    /// The waker the entry holds (a clone of it), once registered: a poll
    /// whose waker would wake the same task registers nothing and takes no
    /// lock.
    waker: Option<Waker>,
    /// The nominal instant of the next tick (the entry waits for it), in
    /// nanoseconds from the timer's start (see
    /// [`Clock::offset_of`](crate::engine::clock::Clock::offset_of)): exact, a
    /// tick's arithmetic in integers, for uptimes and deadlines as far as
    /// the timer's own (an `i64` of them ended at 292 years, where every
    /// tick came at once with the same instant).
    next: Nanos,
    /// The period and the flags, in 8 bytes (see [`Schedule`]).
    schedule: Schedule,
}

/// An offset in nanoseconds, an `i128` kept in two words: the interval
/// stays 8-byte aligned, 56 bytes in all.
#[derive(Clone, Copy)]
struct Nanos {
    low: u64,
    high: i64,
}

impl Nanos {
    #[inline]
    fn new(ns: i128) -> Nanos {
        Nanos {
            low: ns as u64,
            high: (ns >> 64) as i64,
        }
    }

    #[inline]
    fn get(self) -> i128 {
        i128::from(self.high) << 64 | i128::from(self.low)
    }
}

/// An [`Interval`]'s period in nanoseconds (30 years at most, as tokio
/// caps it: 60 bits), its missed-tick behaviour and whether its next tick
/// is due already, in one word: the interval lives in its task's future,
/// which every beat touches (56 bytes in all).
#[derive(Clone, Copy)]
struct Schedule(u64);

/// [`Schedule`]: the period.
const PERIOD: u64 = (1 << 60) - 1;
/// [`Schedule`]: where the [`MissedTickBehavior`] is (two bits).
const BEHAVIOR_SHIFT: u32 = 60;
/// [`Schedule`]: the next tick is due by a clock reading already taken: it
/// completes at once, without waiting for the driver (missed ticks in a
/// burst, a reset to a past instant).
const DUE_NOW: u64 = 1 << 63;
/// [`Schedule`]: on paused time (see `Clock`), a tick was taken and the
/// next one registers at the next poll, as `tokio::time::Interval`'s does
/// (the driver re-arms nothing there).
const REARM_AT_POLL: u64 = 1 << 62;

impl Schedule {
    fn new(period: Duration) -> Schedule {
        let ns = period.min(FAR_FUTURE).as_nanos() as u64;
        Schedule(ns & PERIOD)
    }

    #[inline]
    fn period(self) -> i128 {
        (self.0 & PERIOD) as i128
    }

    fn behavior(self) -> MissedTickBehavior {
        match (self.0 >> BEHAVIOR_SHIFT) & 0b11 {
            0 => MissedTickBehavior::Burst,
            1 => MissedTickBehavior::Delay,
            _ => MissedTickBehavior::Skip,
        }
    }

    fn set_behavior(&mut self, behavior: MissedTickBehavior) {
        let bits: u64 = match behavior {
            MissedTickBehavior::Burst => 0,
            MissedTickBehavior::Delay => 1,
            MissedTickBehavior::Skip => 2,
        };
        self.0 = (self.0 & !(0b11 << BEHAVIOR_SHIFT)) | bits << BEHAVIOR_SHIFT;
    }

    #[inline]
    fn due_now(self) -> bool {
        self.0 & DUE_NOW != 0
    }

    #[inline]
    fn set_due_now(&mut self, due: bool) {
        self.set(DUE_NOW, due);
    }

    /// Either [`due_now`](Self::due_now) or
    /// [`rearm_at_poll`](Self::rearm_at_poll).
    #[inline]
    fn due_now_or_rearm(self) -> bool {
        self.0 & (DUE_NOW | REARM_AT_POLL) != 0
    }

    #[inline]
    fn rearm_at_poll(self) -> bool {
        self.0 & REARM_AT_POLL != 0
    }

    #[inline]
    fn set_rearm_at_poll(&mut self, rearm: bool) {
        self.set(REARM_AT_POLL, rearm);
    }

    #[inline]
    fn set(&mut self, flag: u64, on: bool) {
        self.0 = if on { self.0 | flag } else { self.0 & !flag };
    }
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
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::MissedTickBehavior`]: https://docs.rs/tokio/latest/tokio/time/enum.MissedTickBehavior.html")]
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
    /// The tick after one that was due at `due` but completed late, at
    /// `now` (nanoseconds from the timer's start, as `period`).
    fn next(self, due: i128, now: i128, period: i128) -> i128 {
        match self {
            MissedTickBehavior::Burst => due.saturating_add(period),
            MissedTickBehavior::Delay => now.saturating_add(period),
            MissedTickBehavior::Skip => {
                let late = now.saturating_sub(due).max(0);
                now.saturating_add(period - late % period.max(1))
            }
        }
    }
}

impl Interval {
    /// An interval on `timeout`, whose deadline is `start`, ticking every
    /// `period` (30 years at most, as tokio's).
    pub(crate) fn new(timeout: Timeout, start: Instant, period: Duration) -> Interval {
        let next = timeout.clock().offset_of(start);
        Interval {
            timeout,
            waker: None,
            next: Nanos::new(next),
            schedule: Schedule::new(period),
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

    /// The next tick, or `None` once the timer is stopped; a ready poll
    /// spends a unit of tokio's cooperative budget, as tokio's `Interval`
    /// does (see `coop`).
    #[inline]
    fn poll_next_tick(&mut self, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        let coop = ready!(coop::poll_proceed(cx));
        let poll = self.poll_next_tick_now(cx);
        if poll.is_ready() {
            coop.made_progress();
        }
        poll
    }

    /// [`poll_next_tick`](Self::poll_next_tick) past the budget.
    ///
    /// In the steady state this is one atomic load and a comparison of
    /// wakers when the tick has not come, and one load, a clock read and
    /// one compare-and-swap when it has: the driver re-armed the entry for
    /// the tick after as it fired this one, and put the task's waker back
    /// in it after waking it.
    fn poll_next_tick_now(&mut self, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        if self.timeout.is_stopped() {
            return Poll::Ready(None);
        }
        // One test of the word for both flags (the steady state has
        // neither).
        if self.schedule.due_now_or_rearm() {
            if self.schedule.rearm_at_poll() {
                self.rearm_now();
            }
            if self.schedule.due_now() {
                self.schedule.set_due_now(false);
                let now = self.timeout.clock().now_offset();
                return Poll::Ready(Some(self.take(None, now)));
            }
        }
        if !self.timeout.is_registered() {
            if let Some(ready) = self.register(cx) {
                return Poll::Ready(ready);
            }
        }
        let slot = self.timeout.beat_slot();
        let word = slot.load(Ordering::Acquire);
        if word & UNTAKEN == 0 {
            return self.wait(cx);
        }
        // The tick came: take it, in the steady state with one
        // compare-and-swap on the word looked up once (its slot borrows
        // the timeout, which the fields written here are not).
        let due = self.next.get();
        // Read after the tick came: lateness is measured from the moment
        // the tick is taken, as tokio does.
        let clock = self.timeout.clock();
        let now = clock.now_offset();
        let next = due + self.schedule.period();
        if next > now
            && now <= due + self.tolerance()
            && Deadlines::take_beat_at(slot, word, self.after(next))
        {
            self.next = Nanos::new(next);
            return Poll::Ready(Some(clock.instant_at(due)));
        }
        Poll::Ready(Some(self.take(Some(word), now)))
    }

    /// No tick waits: registers `cx`'s waker unless the entry holds one of
    /// the same task, and looks at the word again if it did.
    #[inline]
    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        if !self
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            self.register_waker(cx.waker());
            // A tick that fired meanwhile woke the waker the entry had
            // then: look again.
            let word = self.timeout.beat_word();
            if word & UNTAKEN != 0 {
                let now = self.timeout.clock().now_offset();
                return Poll::Ready(Some(self.take(Some(word), now)));
            }
        }
        // A stop drains the entry and wakes its waker; one that came
        // before this registration woke the old one.
        if self.timeout.is_stopped() {
            return Poll::Ready(None);
        }
        Poll::Pending
    }

    /// The first poll, or the first since a reset before it: a tick whose
    /// instant has passed completes at once (`Some`), else the entry goes
    /// into the wheel with the task's waker (`None`), or the timer stopped
    /// (`Some(None)`).
    #[cold]
    #[inline(never)]
    fn register(&mut self, cx: &mut Context<'_>) -> Option<Option<Instant>> {
        let now = self.timeout.clock().now_offset();
        let next = self.next.get();
        if self.due(next, Clock::tick_at(next), now) {
            return Some(Some(self.take(None, now)));
        }
        let waker = cx.waker().clone();
        if !self
            .timeout
            .register_beat(waker.clone(), self.rearm_after(self.next.get()))
        {
            return Some(None);
        }
        self.waker = Some(waker);
        None
    }

    /// Puts `waker` in the entry, for the ticks to come (a poll from
    /// another task, or the first since the waker changed).
    #[cold]
    #[inline(never)]
    fn register_waker(&mut self, waker: &Waker) {
        // Cloned without the lock: a waker's clone is foreign code.
        let waker = waker.clone();
        if self.timeout.set_beat_waker(waker.clone()) {
            self.waker = Some(waker);
        }
    }

    /// Takes the tick due at `self.next` and schedules the one after by
    /// the missed-tick rules; returns the tick's instant. `fired`: the
    /// word the driver left as it fired the tick (and re-armed the entry
    /// for the next one on time). `now`: the clock, read after the tick
    /// came (lateness is measured from the moment the tick is taken, as
    /// tokio does).
    fn take(&mut self, fired: Option<u64>, now: i128) -> Instant {
        let due = self.next.get();
        let on_time = due + self.schedule.period();
        let next = if now > due + self.tolerance() {
            self.missed(due, now)
        } else {
            on_time
        };
        self.next = Nanos::new(next);
        if self.timeout.follows_tokio_ms() {
            // On paused time the next tick registers at the next poll, as
            // `tokio::time::Interval`'s does; a tick the driver did not
            // fire counts now, as `rearm` counts it.
            if fired.is_none() {
                self.timeout.count_tick();
            }
            self.schedule.set_rearm_at_poll(true);
            return self.timeout.clock().instant_at(due);
        }
        if let Some(word) = fired {
            // The driver re-armed the entry for `next` as it fired; leave
            // it the tick after, unless it fired again meanwhile (stalled:
            // not re-armed).
            if next == on_time && next > now && self.timeout.take_beat(word, self.after(next)) {
                return self.timeout.clock().instant_at(due);
            }
        }
        self.rearm(
            next,
            now,
            if fired.is_some() {
                Rearm::Fired
            } else {
                Rearm::Tick
            },
        );
        self.timeout.clock().instant_at(due)
    }

    /// The tick after one due at `due` that came late, at `now`, by the
    /// missed-tick behaviour.
    #[cold]
    #[inline(never)]
    fn missed(&self, due: i128, now: i128) -> i128 {
        tracing::trace!(
            late_ns = now - due,
            behavior = ?self.schedule.behavior(),
            "hashwheel: interval missed a tick"
        );
        let schedule = self.schedule;
        schedule.behavior().next(due, now, schedule.period())
    }

    /// How late a tick may be and still count as on time, in nanoseconds
    /// (see [`tolerance`]).
    #[inline]
    fn tolerance(&self) -> i128 {
        tolerance(self.timeout.tick_us())
    }

    /// The tick the driver re-arms the entry at once the tick at `next`
    /// fires: a period later's.
    #[inline]
    fn after(&self, next: i128) -> u64 {
        Clock::tick_at(next + self.schedule.period())
    }

    /// The tick the driver re-arms the entry at once the tick at `next`
    /// fires ([`after`](Self::after)), as the entry is registered or
    /// re-armed under the lock. On paused time none: the tick is out of
    /// the word's reach ([`FAR`]), so that the driver fires the entry
    /// without re-arming it, as it fires a re-arm tick too far for the
    /// word, and the task re-arms it as it polls for the next tick, where
    /// `tokio::time::Interval` registers it (see `take`).
    #[inline]
    fn rearm_after(&self, next: i128) -> u64 {
        if self.timeout.follows_tokio_ms() {
            FAR
        } else {
            self.after(next)
        }
    }

    /// Moves the entry to `next` under the lock, clearing what the driver
    /// left in the word (an untaken tick that this consumes, a stall); a
    /// `next` already past by `now` completes without the driver.
    #[inline(never)]
    fn rearm(&mut self, next: i128, now: i128, why: Rearm) {
        // The entry gives its waker up when a re-arm tick too far for the
        // word fires it: a clone of the handle's goes back (cloned without
        // the lock).
        let waker = if self.timeout.is_registered() {
            self.waker.clone()
        } else {
            None
        };
        let tick = Clock::tick_at(next);
        let due = self.due(next, tick, now);
        let passed = due && self.timeout.follows_tokio_ms();
        self.timeout
            .rearm_beat(tick, self.rearm_after(next), waker, why, passed);
        self.schedule.set_due_now(due);
    }

    /// On paused time, the poll after a tick was taken: the next tick
    /// registers now, as `tokio::time::Interval`'s does (see `take`).
    #[cold]
    #[inline(never)]
    fn rearm_now(&mut self) {
        self.schedule.set_rearm_at_poll(false);
        let now = self.timeout.clock().now_offset();
        self.rearm(self.next.get(), now, Rearm::Fired);
    }

    /// Whether the tick at `next` (the wheel's `tick`) is due by `now`, so
    /// that it completes without the driver: its instant has come; on
    /// paused time, by tokio's rule, where a tick (a `tokio::time::Sleep`
    /// registered as the interval is polled) completes at once only once
    /// the runtime's timer has processed its millisecond (see
    /// [`Timeout::passed`]).
    #[inline]
    fn due(&self, next: i128, tick: u64, now: i128) -> bool {
        if self.timeout.follows_tokio_ms() {
            self.timeout.passed(tick)
        } else {
            next <= now
        }
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
        let now = self.timeout.clock().now_offset();
        self.reset_to(now.saturating_add(self.schedule.period()), now);
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
        let now = self.timeout.clock().now_offset();
        self.reset_to(now, now);
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
        let now = self.timeout.clock().now_offset();
        let after = after.min(FAR_FUTURE).as_nanos() as i128;
        self.reset_to(now.saturating_add(after), now);
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
        let clock = self.timeout.clock();
        let next = clock.offset_of(deadline.into());
        let now = clock.now_offset();
        self.reset_to(next, now);
    }

    /// Restarts the schedule at `next`, at `now` (both offsets from the
    /// timer's start).
    fn reset_to(&mut self, next: i128, now: i128) {
        self.schedule.set_rearm_at_poll(false);
        self.next = Nanos::new(next);
        self.rearm(next, now, Rearm::Reset);
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
        Duration::from_nanos(self.schedule.period() as u64)
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
        self.schedule.behavior()
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
        self.schedule.set_behavior(behavior);
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
            .field("next", &self.timeout.clock().instant_at(self.next.get()))
            .field("period", &self.period())
            .field("missed_tick_behavior", &self.schedule.behavior())
            .finish_non_exhaustive()
    }
}

/// How late a tick may complete and still count as on time, in
/// nanoseconds, on a timer of a tick of `tick_us` microseconds: tokio's
/// 5 ms, and with a tick over 1 ms, what it adds to the lateness of the
/// runtime's 1 ms (a timeout on time may then fire up to a tick after its
/// deadline, where tokio's fires within a millisecond). With the default
/// 1 ms tick a timeout fires when tokio's `Sleep` would, so the tolerance
/// is tokio's own: it used to be 5 ms plus a tick, and a tick taken 5.5 ms
/// late counted as on time where tokio's counted it missed.
fn tolerance(tick_us: u64) -> i128 {
    let extra_us = tick_us.saturating_sub(1_000);
    TOLERANCE_NS + i128::from(extra_us) * 1_000
}
