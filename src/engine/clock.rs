//! The timer's clock, and the conversions between its instants and the
//! wheel's ticks (microseconds since the timer's start).
//!
//! A timer driven by a runtime reads tokio's clock
//! (`tokio::time::Instant::now`, which paused time moves); a thread-driven
//! one reads std's. The driver picks (see `alarm`); everything above reads
//! the clock through here and never asks which it is. Below the shard
//! state: it imports nothing of the crate but the wheel's range.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::wheel::raw::NEVER;

/// The wheel's time unit in nanoseconds: a microsecond.
pub(crate) const UNIT_NS: u64 = 1_000;

/// About 30 years: how far out tokio puts "never".
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// An instant [`FAR_FUTURE`] out, as tokio uses for "never".
pub(crate) fn far_future(from: Instant) -> Instant {
    from + FAR_FUTURE
}

/// The grid of far deadlines of `hashwheel::async_io`'s timer, in
/// microseconds of the timer's clock: a quarter millisecond, at most 0.25%
/// of their wait. (W9 on smol, 100,000 connections: a 1 ms grid cost half
/// the CPU of this one but doubled the lateness tail on a loaded machine;
/// this one is a quarter of async-io's CPU with its tail.)
pub(crate) const FAR_GRID_US: u64 = 250;

/// `tick` rounded up to a multiple of `grid` (1: as it is); [`NEVER`]
/// stays never.
#[inline]
pub(crate) fn on_grid(tick: u64, grid: u64) -> u64 {
    if grid <= 1 || tick >= NEVER {
        return tick;
    }
    // [`FAR_GRID_US`] by a constant, which the compiler turns into a
    // multiplication: this is a schedule path.
    let up = if grid == FAR_GRID_US {
        tick.div_ceil(FAR_GRID_US) * FAR_GRID_US
    } else {
        tick.div_ceil(grid).saturating_mul(grid)
    };
    up.min(NEVER)
}

/// Which clock a timer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// tokio's: paused time moves it (a timer driven by a runtime).
    #[cfg(feature = "tokio")]
    Tokio,
    /// std's monotonic clock (a thread-driven timer).
    #[cfg(feature = "thread")]
    Std,
}

impl Source {
    /// The time by this clock, as a std `Instant`.
    #[inline]
    pub(crate) fn now(self) -> Instant {
        match self {
            #[cfg(feature = "tokio")]
            Source::Tokio => tokio::time::Instant::now().into_std(),
            #[cfg(feature = "thread")]
            Source::Std => Instant::now(),
        }
    }
}

/// The runtime timer's resolution, in the clock's microseconds: it rings
/// on whole milliseconds since the runtime's start.
pub(crate) const RUNTIME_MS_US: u64 = 1_000;

/// A timer's clock: where its ticks start, how long they are, and which
/// clock it reads.
///
/// # Paused time
///
/// A clock started on tokio's paused time starts on one of the runtime
/// timer's milliseconds (see `alarm/runtime.rs`), and then, for as long
/// as the runtime's time stays paused, *follows tokio's millisecond*:
/// the driver turns at the runtime timer's last millisecond rather than
/// at the microsecond ([`turn_tick`](Self::turn_tick)), and a deadline
/// completes at its first poll only once the runtime's timer has
/// processed its millisecond, as a `tokio::time::Sleep` does (see
/// `Common::passed`). On paused time a program tells every instant apart,
/// and `hashwheel::time` then gives the instants `tokio::time` gives; on
/// the real clock deadlines keep the microsecond.
#[derive(Debug)]
pub(crate) struct Clock {
    source: Source,
    /// The instant of tick 0. Ticks are the wheel's time unit, the
    /// microsecond ([`UNIT_NS`]): deadlines keep that resolution, so the
    /// timer adds no rounding of its own to the runtime's 1 ms.
    start: Instant,
    /// The tick in microseconds: the width of a bucket and, above 1 ms, the
    /// unit the driver batches by (see `alarm`).
    pub(crate) tick_us: u64,
    /// `start` is one of the runtime timer's milliseconds (found on paused
    /// time, see above).
    #[cfg(feature = "tokio")]
    on_tokio_grid: bool,
    /// Follows the runtime timer's millisecond (see above): the runtime's
    /// time is paused, as last seen. Only ever set with `on_tokio_grid`.
    follows_tokio_ms: AtomicBool,
    /// The runtime whose clock a timer driven by one reads (see
    /// [`now`](Self::now)): the one it was built in.
    #[cfg(feature = "tokio")]
    runtime: Option<tokio::runtime::Handle>,
}

impl Clock {
    /// A clock that starts now, by `source` (for tokio's, the current
    /// runtime's).
    pub(crate) fn new(source: Source, tick_us: u64) -> Clock {
        Clock {
            source,
            start: source.now(),
            tick_us,
            #[cfg(feature = "tokio")]
            on_tokio_grid: false,
            follows_tokio_ms: AtomicBool::new(false),
            #[cfg(feature = "tokio")]
            runtime: match source {
                Source::Tokio => tokio::runtime::Handle::try_current().ok(),
                #[cfg(feature = "thread")]
                Source::Std => None,
            },
        }
    }

    /// A clock by tokio's paused time that starts at `start`, one of the
    /// runtime timer's milliseconds at or before now, and follows that
    /// millisecond (see [Paused time](Clock#paused-time)).
    #[cfg(feature = "tokio")]
    pub(crate) fn starting_on_tokio_grid(start: Instant, tick_us: u64) -> Clock {
        Clock {
            source: Source::Tokio,
            start,
            tick_us,
            on_tokio_grid: true,
            follows_tokio_ms: AtomicBool::new(true),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Whether the clock follows the runtime timer's millisecond (see
    /// [Paused time](Clock#paused-time)): one relaxed load.
    #[inline]
    pub(crate) fn follows_tokio_ms(&self) -> bool {
        self.follows_tokio_ms.load(Ordering::Relaxed)
    }

    /// Whether the clock starts on the runtime timer's millisecond, and
    /// can follow it.
    #[cfg(feature = "tokio")]
    #[inline]
    pub(crate) fn on_tokio_grid(&self) -> bool {
        self.on_tokio_grid
    }

    /// Follows the runtime timer's millisecond or not, as the runtime's
    /// time is `paused` or not; a clock not started on it never does.
    #[cfg(feature = "tokio")]
    pub(crate) fn set_follows_tokio_ms(&self, paused: bool) {
        if self.on_tokio_grid && paused != self.follows_tokio_ms() {
            self.follows_tokio_ms.store(paused, Ordering::Relaxed);
        }
    }

    /// The tick a driver turns at, by the clock reading `now`: `now`
    /// itself, or, following the runtime timer's millisecond, the last
    /// one of those (what a `tokio::time::Sleep` due by then has fired
    /// at).
    #[inline]
    pub(crate) fn turn_tick(&self, now: u64) -> u64 {
        if self.follows_tokio_ms() {
            now - now % RUNTIME_MS_US
        } else {
            now
        }
    }

    /// The time by the clock: for a timer driven by a runtime, by that
    /// runtime's clock (paused or not) wherever the caller is (see
    /// [`runtime_now`](Self::runtime_now)).
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        match self.source {
            #[cfg(feature = "tokio")]
            Source::Tokio => self.runtime_now(),
            #[cfg(feature = "thread")]
            Source::Std => Instant::now(),
        }
    }

    /// tokio's clock as the timer's runtime reads it. Outside that
    /// runtime's context tokio's clock is std's, which a paused runtime's
    /// is not: a sleep made there (`rt.block_on(timer.sleep(d))`, a plain
    /// thread) took its deadline from std's clock and completed early by
    /// the runtime's (issue 56). In a task, the clock of the task's
    /// runtime, as tokio reads it (a thread-local look-up more); elsewhere
    /// (a `block_on`'s future, a plain thread, the runtime's own timer
    /// processing), the timer's runtime's, through its context.
    #[cfg(feature = "tokio")]
    #[inline]
    fn runtime_now(&self) -> Instant {
        if tokio::task::try_id().is_some() {
            return tokio::time::Instant::now().into_std();
        }
        self.runtime_now_outside_a_task()
    }

    /// [`runtime_now`](Self::runtime_now) outside a task: in the timer's
    /// runtime's context, entered where the caller is not in it (an `Arc`
    /// count up and down to look, and again to enter). Where tokio's
    /// thread-local context is gone (a thread's exit), std's clock, as
    /// tokio's own reading gives there, rather than `Handle::enter`'s panic.
    #[cfg(feature = "tokio")]
    #[inline(never)]
    fn runtime_now_outside_a_task(&self) -> Instant {
        use tokio::runtime::Handle;
        let enter = match (Handle::try_current(), &self.runtime) {
            (Ok(current), Some(ours)) => current.id() != ours.id(),
            (Err(err), Some(_)) => err.is_missing_context(),
            (_, None) => false,
        };
        let _entered = self.runtime.as_ref().filter(|_| enter).map(Handle::enter);
        tokio::time::Instant::now().into_std()
    }

    /// Which clock it reads.
    #[inline]
    pub(crate) fn source(&self) -> Source {
        self.source
    }

    /// The time by the clock, in microseconds since the timer's start,
    /// rounded down: what is due at or before it has passed.
    pub(crate) fn now_tick(&self) -> u64 {
        self.now_tick_of(self.now())
    }

    /// [`now_tick`](Self::now_tick) by the clock reading `now`.
    #[inline]
    pub(crate) fn now_tick_of(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.start);
        micros_floor(since).unwrap_or(u64::MAX)
    }

    /// `delay` from now, rounded up to the microsecond: [`tick_of`](Self::tick_of)
    /// of `now + delay`, with one `Instant` subtraction instead of an
    /// addition and a subtraction (this is the schedule and reset path).
    ///
    /// A delay too long to keep (one that overflows, `Duration::MAX`, or
    /// reaches [`NEVER`], over 146,000 years) is [`FAR_FUTURE`] from now,
    /// as tokio's: on a paused runtime, auto-advance gets there as it gets
    /// to tokio's, where "never" would leave a task that awaits it with
    /// nothing else to wake it hanging for ever.
    pub(crate) fn tick_after(&self, delay: Duration) -> u64 {
        self.tick_after_from(self.now(), delay)
    }

    /// [`tick_after`](Self::tick_after) from the clock reading `now`.
    #[inline]
    pub(crate) fn tick_after_from(&self, now: Instant, delay: Duration) -> u64 {
        let since = now.saturating_duration_since(self.start);
        match since.checked_add(delay).and_then(micros_ceil) {
            Some(tick) if tick < NEVER => tick,
            _ => self.far_tick(since),
        }
    }

    /// The tick of now plus `delay`, rounded up to a multiple of `grid`
    /// microseconds (1: not rounded), and that instant (to the nanosecond;
    /// `None` if the sum overflows), from one clock reading: the tick
    /// [`tick_of`](Self::tick_of) gives that instant, without its
    /// subtraction, so [`NEVER`] past the wheel's range or on an overflow
    /// (where [`tick_after`](Self::tick_after) puts a delay too long to
    /// keep [`FAR_FUTURE`] out).
    #[inline]
    pub(crate) fn deadline_after(&self, delay: Duration, grid: u64) -> (u64, Option<Instant>) {
        self.deadline_after_from(self.now(), delay, grid)
    }

    /// [`deadline_after`](Self::deadline_after) from the clock reading
    /// `now`.
    #[inline]
    pub(crate) fn deadline_after_from(
        &self,
        now: Instant,
        delay: Duration,
        grid: u64,
    ) -> (u64, Option<Instant>) {
        let Some(deadline) = now.checked_add(delay) else {
            return (NEVER, None);
        };
        let since = now.saturating_duration_since(self.start);
        let tick = match since.checked_add(delay) {
            Some(since) => tick_ceil(since),
            None => NEVER,
        };
        (on_grid(tick, grid), Some(deadline))
    }

    /// The tick [`FAR_FUTURE`] after `since` (the time since the start):
    /// where a delay too long to keep goes.
    #[cold]
    pub(crate) fn far_tick(&self, since: Duration) -> u64 {
        since.checked_add(FAR_FUTURE).map_or(NEVER, tick_ceil)
    }

    /// `instant` in nanoseconds from the start, negative before it, exact
    /// (an `i128` of them spans every instant and `Duration`): how an
    /// [`Interval`](crate::Interval) keeps its next tick, with the
    /// arithmetic of a tick in integers.
    #[inline]
    pub(crate) fn offset_of(&self, instant: Instant) -> i128 {
        match instant.checked_duration_since(self.start) {
            Some(after) => after.as_nanos() as i128,
            None => -(self.start.saturating_duration_since(instant).as_nanos() as i128),
        }
    }

    /// The time by the clock as an [`offset_of`](Self::offset_of) the
    /// start (the clock never reads before it).
    #[inline]
    pub(crate) fn now_offset(&self) -> i128 {
        self.now().saturating_duration_since(self.start).as_nanos() as i128
    }

    /// The instant `offset` nanoseconds from the start (see
    /// [`offset_of`](Self::offset_of)); past what an `Instant` holds, the
    /// far future.
    #[inline]
    pub(crate) fn instant_at(&self, offset: i128) -> Instant {
        let ns = offset.unsigned_abs();
        // Within 584 years of the start (every interval's tick), in 64
        // bits: a `u64` divided by a constant is a multiplication, where a
        // `u128` is divided by a call to `__udivti3` (W9's heartbeat made
        // two, about 5% of its CPU, issue 48).
        let duration = match u64::try_from(ns) {
            Ok(ns) => Some(Duration::from_nanos(ns)),
            Err(_) => u64::try_from(ns / 1_000_000_000)
                .ok()
                .map(|secs| Duration::new(secs, (ns % 1_000_000_000) as u32)),
        };
        let instant = duration.and_then(|d| {
            if offset >= 0 {
                self.start.checked_add(d)
            } else {
                self.start.checked_sub(d)
            }
        });
        instant.unwrap_or_else(|| far_future(self.start))
    }

    /// The tick of the instant `offset` nanoseconds from the start:
    /// [`tick_of`](Self::tick_of) of [`instant_at`](Self::instant_at), in
    /// integers.
    #[inline]
    pub(crate) fn tick_at(offset: i128) -> u64 {
        if offset <= 0 {
            0
        } else {
            // In 64 bits where it fits (see `instant_at`).
            match u64::try_from(offset) {
                Ok(ns) => ns.div_ceil(UNIT_NS).min(NEVER),
                Err(_) => {
                    let ticks = (offset as u128).div_ceil(u128::from(UNIT_NS));
                    u64::try_from(ticks).unwrap_or(NEVER).min(NEVER)
                }
            }
        }
    }

    /// `deadline`, rounded up to the microsecond.
    pub(crate) fn tick_of(&self, deadline: Instant) -> u64 {
        match deadline.checked_duration_since(self.start) {
            None => 0,
            // Exact past 584 years too (where `u64` nanoseconds end): a
            // deadline saturated there would fire early.
            Some(since) => tick_ceil(since),
        }
    }

    /// The instant of time `tick` (microseconds since the start).
    pub(crate) fn instant_of(&self, tick: u64) -> Instant {
        self.start
            .checked_add(Duration::from_micros(tick))
            .filter(|_| tick < NEVER)
            .unwrap_or_else(|| far_future(self.start))
    }
}

/// `d` in whole microseconds, rounded down; `None` past `u64::MAX` of them
/// (585,000 years).
#[inline]
fn micros_floor(d: Duration) -> Option<u64> {
    d.as_secs()
        .checked_mul(1_000_000)?
        .checked_add(u64::from(d.subsec_micros()))
}

/// The tick `d` after the start: [`micros_ceil`], [`NEVER`] at most.
#[inline]
fn tick_ceil(d: Duration) -> u64 {
    micros_ceil(d).map_or(NEVER, |tick| tick.min(NEVER))
}

/// `d` in microseconds, rounded up; `None` past `u64::MAX` of them.
#[inline]
fn micros_ceil(d: Duration) -> Option<u64> {
    let part = d.subsec_nanos().div_ceil(UNIT_NS as u32);
    d.as_secs()
        .checked_mul(1_000_000)?
        .checked_add(u64::from(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversions against the exact 128-bit arithmetic, at the edges
    /// of a microsecond, a second and the `u64` range.
    #[test]
    fn micros_round_as_division_does() {
        let nanos = [0u64, 1, 999, 1_000, 1_001, 999_999_999];
        let secs = [
            0u64,
            1,
            59,
            18_446_744_073_709,
            18_446_744_073_710,
            u64::MAX,
        ];
        for &s in &secs {
            for &n in &nanos {
                let d = Duration::new(s, n as u32);
                let exact = d.as_nanos();
                assert_eq!(micros_floor(d), u64::try_from(exact / 1_000).ok(), "{d:?}");
                assert_eq!(
                    micros_ceil(d),
                    u64::try_from(exact.div_ceil(1_000)).ok(),
                    "{d:?}"
                );
            }
        }
    }

    /// An offset and its instant convert both ways to the nanosecond,
    /// before the start too, and its tick is the instant's.
    #[test]
    fn offsets_round_trip_and_tick_as_instants_do() {
        #[cfg(feature = "thread")]
        let source = Source::Std;
        #[cfg(not(feature = "thread"))]
        let source = Source::Tokio;
        let clock = Clock::new(source, 1_000);
        for ns in [
            -5_000_000_001i128,
            -1_000,
            -1,
            0,
            1,
            999,
            1_000,
            1_001,
            86_400_000_000_007,
            // Past 292 years (an `i64` of nanoseconds) and 584 (a `u64`).
            300 * 365 * 86_400_000_000_000 + 7,
            600 * 365 * 86_400_000_000_000 + 7,
            // Either side of the 64-bit arithmetic's edge.
            i128::from(u64::MAX) - 1,
            i128::from(u64::MAX),
            i128::from(u64::MAX) + 1,
            -i128::from(u64::MAX),
            -i128::from(u64::MAX) - 1,
        ] {
            let instant = clock.instant_at(ns);
            assert_eq!(clock.offset_of(instant), ns);
            assert_eq!(Clock::tick_at(ns), clock.tick_of(instant), "{ns} ns");
        }
        assert!(clock.now_offset() >= 0);
    }

    #[test]
    fn on_grid_rounds_up_to_a_multiple_and_keeps_never() {
        assert_eq!(on_grid(0, 1_000), 0);
        assert_eq!(on_grid(1, 1_000), 1_000);
        assert_eq!(on_grid(1_000, 1_000), 1_000);
        assert_eq!(on_grid(1_001, 1_000), 2_000);
        assert_eq!(on_grid(1_234_567, 1), 1_234_567);
        assert_eq!(on_grid(1_234_567, 0), 1_234_567);
        assert_eq!(on_grid(NEVER, 1_000), NEVER);
        assert_eq!(on_grid(NEVER - 1, 1_000), NEVER, "never past NEVER");
        for grid in [250, 1_000, 7] {
            for tick in [5u64, 999, 12_345_678, NEVER / 3] {
                let up = on_grid(tick, grid);
                assert!(up >= tick && up - tick < grid && up % grid == 0, "{tick}");
            }
        }
    }
}
