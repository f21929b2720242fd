//! The timer's clock, and the conversions between its instants and the
//! wheel's ticks (microseconds since the timer's start).
//!
//! A timer driven by a runtime reads tokio's clock
//! (`tokio::time::Instant::now`, which paused time moves); a thread-driven
//! one reads std's. The driver picks (see `alarm`); everything above reads
//! the clock through here and never asks which it is. Below the shard
//! state: it imports nothing of the crate but the wheel's range.

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

/// A timer's clock: where its ticks start, how long they are, and which
/// clock it reads.
#[derive(Debug)]
pub(crate) struct Clock {
    source: Source,
    /// The instant of tick 0. Ticks are the wheel's time unit, the
    /// microsecond ([`UNIT_NS`]): deadlines keep that resolution, so the
    /// timer adds no rounding of its own to the runtime's 1 ms.
    start: Instant,
    /// The tick in microseconds: the width of a bucket and, above 1 ms, the
    /// grid the alarm rings on (batching).
    pub(crate) tick_us: u64,
}

impl Clock {
    /// A clock that starts now, by `source`.
    pub(crate) fn new(source: Source, tick_us: u64) -> Clock {
        Clock {
            source,
            start: source.now(),
            tick_us,
        }
    }

    /// The time by the clock.
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        self.source.now()
    }

    /// The time by the clock, in microseconds since the timer's start,
    /// rounded down: what is due at or before it has passed.
    #[inline]
    pub(crate) fn now_tick(&self) -> u64 {
        micros_floor(self.now().saturating_duration_since(self.start))
    }

    /// `delay` from now, rounded up to the microsecond: [`tick_of`](Self::tick_of)
    /// of `now + delay`, with one `Instant` subtraction instead of an
    /// addition and a subtraction (this is the schedule and reset path).
    /// A sum that overflows means [`NEVER`].
    #[inline]
    pub(crate) fn tick_after(&self, delay: Duration) -> u64 {
        let since = self.now().saturating_duration_since(self.start);
        match since.checked_add(delay) {
            Some(since) => micros_ceil(since).min(NEVER),
            None => NEVER,
        }
    }

    /// `deadline`, rounded up to the microsecond.
    pub(crate) fn tick_of(&self, deadline: Instant) -> u64 {
        match deadline.checked_duration_since(self.start) {
            None => 0,
            // Exact past 584 years too (where `u64` nanoseconds end): a
            // deadline saturated there would fire early.
            Some(since) => micros_ceil(since).min(NEVER),
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

/// `d` in whole microseconds, rounded down; `u64::MAX` past that (585,000
/// years).
#[inline]
fn micros_floor(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000)
        .and_then(|us| us.checked_add(u64::from(d.subsec_micros())))
        .unwrap_or(u64::MAX)
}

/// `d` in microseconds, rounded up; `u64::MAX` past that.
#[inline]
fn micros_ceil(d: Duration) -> u64 {
    let part = d.subsec_nanos().div_ceil(UNIT_NS as u32);
    d.as_secs()
        .checked_mul(1_000_000)
        .and_then(|us| us.checked_add(u64::from(part)))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversions against the exact 128-bit arithmetic, at the edges
    /// of a microsecond, a second and the `u64` range.
    #[test]
    fn micros_round_as_division_does() {
        let nanos = [0u64, 1, 999, 1_000, 1_001, 999_999_999, 1_000_000_000];
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
                let d = Duration::new(s, 0) + Duration::from_nanos(n.min(999_999_999));
                let exact = d.as_nanos();
                let floor = u64::try_from(exact / 1_000).unwrap_or(u64::MAX);
                let ceil = u64::try_from(exact.div_ceil(1_000)).unwrap_or(u64::MAX);
                assert_eq!(micros_floor(d), floor, "{d:?}");
                assert_eq!(micros_ceil(d), ceil, "{d:?}");
            }
        }
    }
}
