//! [`Stats`]: counters a [`Timer`](crate::Timer) keeps about itself, and
//! the histogram of how late it fired timeouts ([`Lateness`]).

use std::fmt;
use std::time::Duration;

/// A snapshot of a timer's counters, from [`Timer::stats`](crate::Timer::stats).
///
/// Every count is over the timer's life. The counters are cheap enough to
/// leave on: each shard keeps its own, under the lock its operations take
/// anyway.
///
/// # How the counts balance
///
/// An *entry* is a timeout ([`Timeout`](crate::Timeout), and so a
/// [`WithTimeout`](crate::WithTimeout)'s deadline), a scheduled task, or an
/// [`Interval`](crate::Interval). Every entry that is
/// [`created`](Self::created) ends once, [`fired`](Self::fired) or
/// [`cancelled`](Self::cancelled), or is still [`pending`](Self::pending):
///
/// ```text
/// created == fired + cancelled + pending
/// ```
///
/// exactly, on a snapshot taken while no other thread creates, polls or
/// drops the timer's entries (a snapshot taken meanwhile may catch one
/// between two counts). A timeout reset after it fired is pending again:
/// it counts as created again, and fires (or is cancelled) again. An
/// interval is pending from its creation until it is dropped, when it
/// counts as cancelled, whatever its ticks: its ticks are counted apart,
/// in [`ticks`](Self::ticks). Once the timer is [stopped](crate::Timer::stop)
/// `pending` reads 0; the balance holds again once every timeout and
/// interval made before the stop has been dropped (each counts as
/// cancelled as it goes, if the stop had not already).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let mut t = timer.sleep(Duration::from_secs(1));
/// t.reset(Duration::from_millis(10));
/// t.await;
/// let mut heartbeat = timer.interval(Duration::from_millis(5));
/// heartbeat.tick().await;
/// heartbeat.tick().await;
/// drop(timer.sleep(Duration::from_secs(1)));
/// let stats = timer.stats();
/// assert_eq!((stats.pending, stats.fired, stats.reset), (1, 1, 1));
/// assert_eq!((stats.created, stats.cancelled, stats.ticks), (3, 1, 2));
/// assert_eq!(stats.created, stats.fired + stats.cancelled + stats.pending as u64);
/// println!("{stats:?}");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Timeouts and tasks neither fired nor cancelled, and intervals not
    /// dropped: as [`Timer::pending`](crate::Timer::pending).
    pub pending: usize,
    /// Entries made: timeouts, tasks and intervals created, and timeouts
    /// made pending again by a reset after they fired (see [How the counts
    /// balance](Self#how-the-counts-balance)).
    pub created: u64,
    /// Timeouts and tasks that reached their deadline (including those
    /// created or reset to a deadline already past). An interval's ticks
    /// are [`ticks`](Self::ticks).
    pub fired: u64,
    /// Timeouts and tasks cancelled while pending (dropped, cancelled by
    /// hand, or drained by [`Timer::stop`](crate::Timer::stop)), and
    /// intervals dropped.
    pub cancelled: u64,
    /// Calls to [`Timeout::reset`](crate::Timeout::reset) and
    /// [`Timeout::reset_at`](crate::Timeout::reset_at) on a timeout that was
    /// not cancelled, and to an [`Interval`](crate::Interval)'s `reset`,
    /// `reset_at`, `reset_after` and `reset_immediately`. Nothing else
    /// counts: a tick, late or not, is no reset.
    pub reset: u64,
    /// Interval ticks that came due: each one the driver fired for its
    /// interval's task, and each one the task completed without it (a
    /// missed tick caught up, a tick due at once). A task that keeps
    /// polling takes every one of them; a tick fired for an interval
    /// dropped before its task took it counts too.
    pub ticks: u64,
    /// Times the driver woke up to turn the wheels: as
    /// [`Timer::driver_wakeups`](crate::Timer::driver_wakeups).
    pub driver_wakeups: u64,
    /// Whole ticks the driver was behind the deadline it was armed for when
    /// it woke, summed over its wake-ups: the driver's own delay. The
    /// runtime's timer rings up to a millisecond or so after a deadline (it
    /// works in whole milliseconds, for `tokio::time::Sleep` too, and the
    /// OS rounds its sleep up), so with the default 1 ms tick a healthy
    /// runtime adds up to about one per wake-up (see
    /// [Lateness](crate#lateness) for the measured figures); many more per
    /// wake-up mean a starved runtime, whose timeouts fire late by as much.
    pub late_ticks: u64,
    /// Times the driver's alarm (one runtime timer per [`Timer`](crate::Timer))
    /// was armed or moved: once after a turn with work left, and once for
    /// an insert earlier than everything pending. Each may wake a parked
    /// worker of the runtime, so on a steady load it stays at about one
    /// per driver wake-up; resets and re-arms of timeouts that are not the
    /// earliest do not touch it. On the thread driver it counts each
    /// setting of its alarm (a `timerfd_settime` on Linux): while every
    /// tick has work the alarm rings on each tick from one setting, so it
    /// stays far below [`driver_wakeups`](Self::driver_wakeups).
    pub alarm_arms: u64,
    /// The longest single turn of the driver: the wall-clock time from its
    /// wake-up to the end of its turn, expiring, waking and handing on what
    /// was due on every shard, and re-arming (measured with
    /// [`std::time::Instant`], so paused tokio time does not stop it).
    /// Everything that waits on the runtime's timer waits that long behind
    /// it; a turn takes the shards' locks in batches of 32 expiries, so a
    /// long one is a large burst of expiries, not one stall. Zero before
    /// the first turn.
    pub longest_turn: Duration,
    /// How late the driver fired timeouts, interval ticks and tasks: from
    /// each deadline to the turn that woke it (see [`Lateness`] for what
    /// that includes and what it does not). Over the timer's life: take the
    /// [`since`](Lateness::since) of two snapshots for an interval.
    pub lateness: Lateness,
}

/// log2 of the sub-buckets per power of two: 32, so a bucket is at most
/// 1/32 (3.1%) of the values it holds wide.
const SUB_BITS: u32 = 5;
/// Sub-buckets per power of two.
const SUB: u64 = 1 << SUB_BITS;
/// Lateness from here on (2^32 µs, 71.6 minutes) counts in the last bucket;
/// [`Lateness::max`] keeps it exact.
const TOP_US: u64 = 1 << 32;
/// Buckets of a [`Lateness`]: 1 µs wide below 64 µs, then 32 per power of
/// two up to [`TOP_US`].
const BUCKETS: usize = bucket(TOP_US - 1) + 1;

/// The bucket of a lateness of `us` microseconds: `us` itself below 64,
/// then the top six bits of `us` after the shift that leaves them, plus 32
/// buckets per bit shifted out (past the table from [`TOP_US`] on).
#[inline]
const fn bucket(us: u64) -> usize {
    // The highest set bit of `us | 32` (at least 5), less 5.
    let shift = (63 - SUB_BITS) - (us | SUB).leading_zeros();
    ((shift as u64) << SUB_BITS) as usize + (us >> shift) as usize
}

/// The highest lateness, in microseconds, that bucket `i` of a histogram
/// whose largest value is `max_us` reports (in quantiles, buckets and a
/// difference's max): its top, or `max_us` where that is lower. The last
/// bucket reports `max_us` itself: it also holds everything from
/// [`TOP_US`] on, where its top would read below the values it holds.
const fn reported(i: usize, max_us: u64) -> u64 {
    let top = bounds(i).1;
    if i == BUCKETS - 1 || max_us < top {
        max_us
    } else {
        top
    }
}

/// The lowest and highest lateness, in microseconds, that bucket `i` holds.
const fn bounds(i: usize) -> (u64, u64) {
    let shift = ((i as u64) >> SUB_BITS).saturating_sub(1);
    let top = i as u64 - (shift << SUB_BITS);
    (top << shift, ((top + 1) << shift) - 1)
}

/// A histogram of how late the timer fired timeouts: [`Stats::lateness`].
///
/// Each time the driver fires a timeout, an interval's tick or a scheduled
/// task, it counts the time from the deadline to its turn's clock reading,
/// the instant it woke the waker or handed on the callback (rounded down
/// to the microsecond: a deadline reached within its microsecond counts as
/// 0). Counts are in log-linear buckets, as HdrHistogram keeps them: 1 µs
/// wide below 64 µs, then 32 per power of two, so that a
/// [`quantile`](Self::quantile) is at most 1/32 (3.1%) above the true
/// value, up to 2^32 µs (71 minutes; beyond, [`max`](Self::max) stays
/// exact and quantiles read as it).
///
/// # What it sees, and what it does not
///
/// It is the timer's part of the lateness: the driver's own delay (the
/// runtime's timer rings up to its millisecond after a deadline, a starved
/// runtime later, and a tick over 1 ms batches) up to the wake. The
/// runtime's scheduling delay after the wake, until the woken task runs
/// again, comes on top and is not the timer's to see. To measure the whole,
/// as a task sees it, take the instant the task resumes less its deadline
/// (workload W12's way), for example into a `Lateness` of your own with
/// [`record`](Self::record); the example `lateness` compares the two.
///
/// Timeouts that complete on the spot, with no trip through the driver (a
/// deadline already past when created, reset or first polled), count in
/// [`Stats::fired`] but not here.
///
/// # Cost
///
/// The driver counts into the histogram of each shard under the lock it
/// holds to expire there, from the one clock reading of its turn: a few
/// instructions per fire, no atomic. [`Timer::stats`](crate::Timer::stats)
/// adds the shards' histograms up (a few thousand additions per shard). A
/// `Lateness` is 7 KiB, and so is a [`Stats`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let before = timer.stats().lateness;
/// for ms in 1..=10 {
///     timer.sleep(Duration::from_millis(ms)).await;
/// }
/// // What fired since `before`, as a dashboard shows the last interval.
/// let last = timer.stats().lateness.since(&before);
/// assert_eq!(last.count(), 10);
/// // Paused time: the runtime's timer rings at each deadline exactly.
/// assert_eq!(last.quantile(0.99), Duration::ZERO);
/// assert_eq!(last.max(), Duration::ZERO);
///
/// // A histogram of your own, e.g. the lateness a task sees.
/// let mut seen = hashwheel::Lateness::new();
/// seen.record(Duration::from_micros(1_000));
/// seen.record(Duration::from_micros(1_500));
/// assert_eq!(seen.count(), 2);
/// // Within 1/32 above the true value.
/// assert!(seen.quantile(0.5) >= Duration::from_micros(1_000));
/// assert!(seen.quantile(0.5) <= Duration::from_micros(1_032));
/// assert_eq!(seen.max(), Duration::from_micros(1_500));
/// # }
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Lateness {
    counts: [u64; BUCKETS],
    /// The largest lateness recorded, in microseconds: exact for a
    /// snapshot, the highest bucket's bound in a difference.
    max_us: u64,
}

impl Lateness {
    /// An empty histogram.
    pub const fn new() -> Lateness {
        Lateness {
            counts: [0; BUCKETS],
            max_us: 0,
        }
    }

    /// Counts one lateness of `us` microseconds: the driver's hot path.
    #[inline]
    pub(crate) fn record_us(&mut self, us: u64) {
        // From `TOP_US` on, `bucket` runs past the table: the last bucket
        // takes those (and the index needs no bounds check).
        self.counts[bucket(us).min(BUCKETS - 1)] += 1;
        self.max_us = self.max_us.max(us);
    }

    /// Counts one lateness of `late` (rounded down to the microsecond).
    ///
    /// The timer records its own; this is for a histogram of your own, such
    /// as the lateness your tasks see after the runtime has scheduled them.
    pub fn record(&mut self, late: Duration) {
        self.record_us(u64::try_from(late.as_micros()).unwrap_or(u64::MAX));
    }

    /// How many lateness values it holds.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The lateness that a fraction `q` of the values are at or below (`q`
    /// from 0 to 1: 0.5 is the median, 0.99 the p99, 1 the maximum), as the
    /// highest value of its bucket: at most 1/32 above the true value (1 µs
    /// below 64 µs), never below it, and never above [`max`](Self::max), so
    /// `quantile(1.0)` is the max. Past 2^32 µs (71 minutes), where the
    /// buckets end, a quantile reads as the max. Zero when empty.
    ///
    /// # Panics
    ///
    /// If `q` is not within 0 to 1 (or is NaN).
    #[track_caller]
    pub fn quantile(&self, q: f64) -> Duration {
        assert!(
            (0.0..=1.0).contains(&q),
            "hashwheel: Lateness::quantile({q}): the fraction must be within 0 and 1"
        );
        let count = self.count();
        if count == 0 {
            return Duration::ZERO;
        }
        // The rank of the value, from 1: at least the first.
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_micros(reported(i, self.max_us));
            }
        }
        Duration::from_micros(self.max_us)
    }

    /// The largest lateness: exact in a snapshot from
    /// [`Timer::stats`](crate::Timer::stats) (and in a histogram filled by
    /// [`record`](Self::record)); in a difference from
    /// [`since`](Self::since), the highest value of the highest bucket with
    /// a count, at most 1/32 above the true one. Zero when empty.
    pub fn max(&self) -> Duration {
        Duration::from_micros(self.max_us)
    }

    /// What was counted after `earlier`, an earlier snapshot of the same
    /// timer, was taken: the lateness over an interval, as a dashboard
    /// shows it.
    ///
    /// # Panics
    ///
    /// If `earlier` holds a count that `self` does not (it is not an
    /// earlier snapshot of the same timer).
    #[track_caller]
    pub fn since(&self, earlier: &Lateness) -> Lateness {
        let mut diff = Lateness::new();
        for (i, (d, (&now, &then))) in diff
            .counts
            .iter_mut()
            .zip(self.counts.iter().zip(earlier.counts.iter()))
            .enumerate()
        {
            let Some(n) = now.checked_sub(then) else {
                panic!(
                    "hashwheel: Lateness::since: `earlier` holds {then} values of {} µs, \
                     more than this histogram's {now}: it is not an earlier snapshot \
                     of the same timer",
                    bounds(i).0
                );
            };
            *d = n;
            if n > 0 {
                diff.max_us = reported(i, self.max_us);
            }
        }
        diff
    }

    /// The buckets with a count, from the least late: the highest lateness
    /// each holds (as [`quantile`](Self::quantile) reports it, never above
    /// [`max`](Self::max)) and how many values it holds. For exporting the
    /// histogram to a metrics system of your own.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut h = hashwheel::Lateness::new();
    /// h.record(Duration::from_micros(3));
    /// h.record(Duration::from_micros(3));
    /// h.record(Duration::from_micros(700));
    /// let buckets: Vec<_> = h.buckets().collect();
    /// assert_eq!(buckets, [(Duration::from_micros(3), 2), (Duration::from_micros(700), 1)]);
    /// ```
    pub fn buckets(&self) -> impl Iterator<Item = (Duration, u64)> + '_ {
        let max = self.max_us;
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(move |(i, &n)| (Duration::from_micros(reported(i, max)), n))
    }

    /// Adds `other`'s counts to these: histograms kept apart (one per
    /// thread or task, say) into one.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (mut a, mut b) = (hashwheel::Lateness::new(), hashwheel::Lateness::new());
    /// a.record(Duration::from_micros(10));
    /// b.record(Duration::from_micros(20));
    /// a.merge(&b);
    /// assert_eq!((a.count(), a.max()), (2, Duration::from_micros(20)));
    /// ```
    pub fn merge(&mut self, other: &Lateness) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.max_us = self.max_us.max(other.max_us);
    }
}

impl Default for Lateness {
    fn default() -> Lateness {
        Lateness::new()
    }
}

impl fmt::Debug for Lateness {
    /// The count and a few quantiles, not the buckets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lateness")
            .field("count", &self.count())
            .field("p50", &self.quantile(0.5))
            .field("p99", &self.quantile(0.99))
            .field("p999", &self.quantile(0.999))
            .field("max", &self.max())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value from 0 to 2^32 µs lands in a bucket that holds it, the
    /// buckets tile the range without a gap, and the highest value of a
    /// bucket is at most 1/32 above any value in it.
    #[test]
    fn buckets_tile_the_range_within_one_32nd() {
        assert_eq!(BUCKETS, 896);
        let mut next = 0;
        for i in 0..BUCKETS {
            let (low, high) = bounds(i);
            assert_eq!(
                low,
                next,
                "bucket {i} starts where {} ended",
                i.wrapping_sub(1)
            );
            assert!(high >= low);
            assert_eq!(bucket(low), i, "low of {i}");
            assert_eq!(bucket(high), i, "high of {i}");
            // The relative error of reporting `high` for `low`.
            if low > 0 {
                assert!(
                    (high - low) as f64 / low as f64 <= 1.0 / 32.0,
                    "bucket {i}: {low}..={high}"
                );
            }
            if low < 64 {
                assert_eq!(high, low, "exact below 64 µs");
            }
            next = high + 1;
        }
        assert_eq!(next, TOP_US);
        // Seeded values across the range.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x >> 32) >> (x % 32);
            let (low, high) = bounds(bucket(v));
            assert!(low <= v && v <= high, "{v} in {low}..={high}");
        }
    }

    #[test]
    fn quantiles_within_one_bucket() {
        let mut h = Lateness::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.quantile(0.5), Duration::ZERO);
        assert_eq!(h.max(), Duration::ZERO);
        // 1..=10,000 µs, once each.
        for us in 1..=10_000 {
            h.record(Duration::from_micros(us));
        }
        assert_eq!(h.count(), 10_000);
        for (q, exact) in [
            (0.0, 1.0),
            (0.01, 100.0),
            (0.5, 5_000.0),
            (0.99, 9_900.0),
            (1.0, 10_000.0),
        ] {
            let got = h.quantile(q).as_micros() as f64;
            assert!(
                got >= exact && got <= exact * (1.0 + 1.0 / 32.0),
                "q {q}: {got} for {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), Duration::from_micros(10_000));
        assert_eq!(h.max(), Duration::from_micros(10_000));
        // Past the top: the last bucket, which reads as the max (exact).
        h.record(Duration::from_secs(86_400));
        assert_eq!(h.max(), Duration::from_secs(86_400));
        assert_eq!(h.quantile(1.0), Duration::from_secs(86_400));
        assert!(Duration::from_micros(TOP_US) < Duration::from_secs(86_400));
        h.record(Duration::MAX);
        assert_eq!(h.count(), 10_002);
        // Sub-microsecond lateness is 0.
        let mut z = Lateness::new();
        z.record(Duration::from_nanos(999));
        assert_eq!((z.count(), z.max()), (1, Duration::ZERO));
    }

    #[test]
    #[should_panic(expected = "within 0 and 1")]
    fn quantile_out_of_range_panics() {
        Lateness::new().quantile(1.5);
    }

    #[test]
    #[should_panic(expected = "within 0 and 1")]
    fn quantile_nan_panics() {
        Lateness::new().quantile(f64::NAN);
    }

    #[test]
    fn since_is_what_came_after() {
        let mut h = Lateness::new();
        for us in [5, 5, 300, 40_000] {
            h.record_us(us);
        }
        let before = h;
        for us in [7, 300, 301, 2_000] {
            h.record_us(us);
        }
        let diff = h.since(&before);
        assert_eq!(diff.count(), 4);
        assert_eq!(diff.quantile(0.25), Duration::from_micros(7));
        // 300 and 301 share a bucket of 8 µs (256..512 in 32 steps).
        assert_eq!(diff.quantile(0.5), Duration::from_micros(303));
        // The interval's max: the bucket of 2,000 (1,984..=2,015), not the
        // 40 ms of before.
        assert_eq!(diff.max(), Duration::from_micros(2_015));
        assert_eq!(h.since(&h), Lateness::new());
        let mut merged = before;
        merged.merge(&diff);
        assert_eq!(merged.count(), h.count());
        assert_eq!(merged.quantile(0.5), h.quantile(0.5));
    }

    #[test]
    #[should_panic(expected = "not an earlier snapshot")]
    fn since_a_later_snapshot_panics() {
        let mut h = Lateness::new();
        let before = h;
        h.record_us(10);
        before.since(&h);
    }
}
