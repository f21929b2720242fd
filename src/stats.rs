//! [`Stats`]: counters a [`Timer`](crate::Timer) keeps about itself.

/// A snapshot of a timer's counters, from [`Timer::stats`](crate::Timer::stats).
///
/// Every count is over the timer's life and covers timeouts and scheduled
/// tasks alike. The counters are cheap enough to leave on: each shard keeps
/// its own, under the lock its operations take anyway.
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
/// let stats = timer.stats();
/// assert_eq!((stats.pending, stats.fired, stats.reset), (0, 1, 1));
/// println!("{stats:?}");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Timeouts and tasks neither fired nor cancelled: as
    /// [`Timer::pending`](crate::Timer::pending).
    pub pending: usize,
    /// Timeouts and tasks that reached their deadline (including those
    /// created or reset to a deadline already past), and interval ticks.
    pub fired: u64,
    /// Timeouts and tasks cancelled while pending: dropped, cancelled by
    /// hand, or drained by [`Timer::stop`](crate::Timer::stop).
    pub cancelled: u64,
    /// Calls to [`Timeout::reset`](crate::Timeout::reset) and
    /// [`Timeout::reset_at`](crate::Timeout::reset_at) on a timeout that was
    /// not cancelled, and re-arms of an [`Interval`](crate::Interval) that
    /// its task made (a reset, or a tick taken late); the driver's own
    /// re-arm of an interval as it fires a tick is none.
    pub reset: u64,
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
    pub longest_turn: std::time::Duration,
}
