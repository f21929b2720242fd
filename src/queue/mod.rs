// Floor 3, beside the handle (docs/ARCHITECTURE.md): the queue's core
// imports the wheel and the engine's clock and budget; no face.
//! The keyed delay queue's core, shared by its two faces: tokio-util's
//! [`DelayQueue`](crate::DelayQueue) (tokio's clock and `Sleep`) and the
//! executor-free [`async_io::DelayQueue`](crate::async_io::DelayQueue)
//! (std's clock, the thread driver).
//!
//! The queue is a [`Wheel`] of 125 µs ticks that its one owner turns as it
//! polls, and one [`QueueAlarm`] armed at the earliest tick: the seam where the
//! two faces differ. Everything else (the tick maths, the wake-ups, the
//! keys) lives here once. It imports only the wheel.

use std::fmt;
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::engine::clock::{far_future, FAR_FUTURE};
use crate::engine::coop;
use crate::wheel::{self, Wheel};

/// The queue's tick, in nanoseconds: deadlines round up to it. It divides
/// tokio's millisecond, so a deadline on whole milliseconds stays exact, and
/// the rounding adds at most an eighth of tokio's own resolution.
const TICK_NS: u32 = 125_000;
const TICKS_PER_SEC: u64 = 1_000_000_000 / TICK_NS as u64;
/// 1024 buckets of 125 µs: one turn of the wheel is 128 ms, and its round
/// ring of 1024 slots spans 131 s, so most deadlines are never looked at
/// before they come due (later ones once per 131 s). 8 KiB of list heads.
const BUCKETS: usize = 1024;
const RING: usize = 1024;

/// What a queue face supplies: its clock, and one alarm that wakes the
/// owning task at an instant of that clock.
pub(crate) trait QueueAlarm: Sized {
    /// The time by the face's clock, as a std `Instant` (tokio's paused
    /// clock converts to one exactly).
    fn now() -> Instant;

    /// An alarm armed at `at`, made by the first poll that waits. It may
    /// panic where the face needs a context the caller lacks (tokio's
    /// runtime), naming the queue.
    fn armed_at(at: Instant) -> Self;

    /// Moves the alarm to `at`, earlier or later.
    fn reset(&mut self, at: Instant);

    /// Ready once the clock has reached the instant it is armed at.
    fn poll_alarm(&mut self, cx: &mut Context<'_>) -> Poll<()>;
}

/// Names an item of a delay queue while it is in the queue.
///
/// Returned by the queue's `insert` and `insert_at`; the same type names
/// the items of both queues, [`hashwheel::DelayQueue`][DelayQueue_link]
/// and [`hashwheel::async_io::DelayQueue`][async_io::DelayQueue_link]. A
/// key whose item has left, or from another queue, never names another item
/// (see [`DelayQueue`][DelayQueue_link]'s [Keys][keys_link]).
/// Twelve bytes (tokio-util's: 8, an index alone). Its `Debug` reads like
/// tokio-util's: `Key { index: 0 }` (the slot; the generation that makes it
/// unique is left out).
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "tokio")]
/// use hashwheel::DelayQueue;
/// # #[cfg(not(feature = "tokio"))]
/// # use hashwheel::async_io::DelayQueue;
/// use std::time::Duration;
///
/// let mut queue = DelayQueue::new();
/// let key = queue.insert("foo", Duration::from_secs(5));
/// assert_eq!(queue.remove(&key).into_inner(), "foo");
/// assert!(queue.try_remove(&key).is_none());
/// ```
#[cfg_attr(feature = "tokio", doc = "", doc = "[DelayQueue_link]: crate::DelayQueue")]
#[cfg_attr(feature = "tokio", doc = "", doc = "[keys_link]: crate::DelayQueue#keys")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[keys_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.DelayQueue.html#keys")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[DelayQueue_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.DelayQueue.html")]
#[cfg_attr(feature = "thread", doc = "", doc = "[async_io::DelayQueue_link]: crate::async_io::DelayQueue")]
#[cfg_attr(not(feature = "thread"), doc = "", doc = "[async_io::DelayQueue_link]: https://docs.rs/hashwheel/latest/hashwheel/async_io/struct.DelayQueue.html")]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(wheel::Key);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("index", &self.0.index())
            .finish()
    }
}

/// An item taken out of the queue, as both faces' `Expired` hold it.
pub(crate) struct Entry<T> {
    pub(crate) data: T,
    /// The queue's start and the item's tick: the deadline, computed only
    /// when asked for.
    start: Instant,
    tick: u64,
    pub(crate) key: Key,
}

impl<T> Entry<T> {
    /// The deadline the item had, rounded up to the queue's 125 µs tick.
    pub(crate) fn deadline(&self) -> Instant {
        instant_of(self.start, self.tick)
    }
}

/// Whole ticks to cover `d`, rounded up (saturating: never).
#[inline]
fn ceil_ticks(d: Duration) -> u64 {
    let part = d.subsec_nanos().div_ceil(TICK_NS);
    d.as_secs()
        .saturating_mul(TICKS_PER_SEC)
        .saturating_add(u64::from(part))
}

/// Whole ticks in `d`, rounded down.
#[inline]
fn floor_ticks(d: Duration) -> u64 {
    let part = d.subsec_nanos() / TICK_NS;
    d.as_secs()
        .saturating_mul(TICKS_PER_SEC)
        .saturating_add(u64::from(part))
}

/// The instant tick `tick` after `start` begins.
fn instant_of(start: Instant, tick: u64) -> Instant {
    let nanos = (tick % TICKS_PER_SEC) as u32 * TICK_NS;
    let since = Duration::new(tick / TICKS_PER_SEC, nanos);
    start
        .checked_add(since)
        .unwrap_or_else(|| far_future(start))
}

#[track_caller]
fn stale(method: &str) -> ! {
    panic!(
        "hashwheel: DelayQueue::{method} with a key that names no item of this queue: \
         its item was removed, expired or cleared, or the key is another queue's"
    )
}

/// The queue: one owner (`&mut self`), no lock, no `Arc`, no driver task;
/// it wakes its task through one [`QueueAlarm`] armed at its next deadline.
pub(crate) struct Queue<T, A> {
    wheel: Wheel<T>,
    /// Tick 0 begins here.
    start: Instant,
    /// The last tick seen begun on the clock: everything at or before it is
    /// due, so polling up to it needs no clock read.
    now: u64,
    /// The alarm, armed at `armed`; made on the first poll that needs it.
    alarm: Option<A>,
    /// The tick `alarm` is armed at; `u64::MAX` while nothing is armed.
    armed: u64,
    /// The task that polled last: woken when an item is inserted or reset
    /// before `armed`, or when the last item leaves.
    waker: Option<Waker>,
}

impl<T, A: QueueAlarm> Queue<T, A> {
    pub(crate) fn new() -> Queue<T, A> {
        Queue {
            wheel: Wheel::with_shape(BUCKETS, RING),
            start: A::now(),
            now: 0,
            alarm: None,
            armed: u64::MAX,
            waker: None,
        }
    }

    #[track_caller]
    pub(crate) fn insert_at(&mut self, value: T, when: Instant) -> Key {
        let tick = self.tick_of(when);
        self.insert_tick(value, tick)
    }

    #[track_caller]
    pub(crate) fn insert(&mut self, value: T, timeout: Duration) -> Key {
        let tick = self.tick_after(timeout);
        self.insert_tick(value, tick)
    }

    #[track_caller]
    fn insert_tick(&mut self, value: T, tick: u64) -> Key {
        let key = self.wheel.insert(tick, value);
        self.wake_if_before(tick);
        Key(key)
    }

    /// The next item due, `None` when the queue is empty. Each item handed
    /// out spends a unit of tokio's cooperative budget, as a message from
    /// one of tokio's channels does (see `coop`; tokio-util's queue spends
    /// one for each deadline it moves its clock to, which is never more),
    /// so that a loop draining a burst lets the runtime's other tasks run.
    #[inline]
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Entry<T>>> {
        let coop = ready!(coop::poll_proceed(cx));
        let poll = self.poll_due(cx);
        if let Poll::Ready(Some(_)) = poll {
            coop.made_progress();
        }
        poll
    }

    fn poll_due(&mut self, cx: &mut Context<'_>) -> Poll<Option<Entry<T>>> {
        if !self
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            self.waker = Some(cx.waker().clone());
        }
        loop {
            if let Some(expired) = self.wheel.poll(self.now) {
                return Poll::Ready(Some(self.entry(expired)));
            }
            if self.wheel.is_empty() {
                self.armed = u64::MAX;
                return Poll::Ready(None);
            }
            // Nothing due by the last clock read: read it again.
            let now = self.now_tick();
            if now > self.now {
                self.now = now;
                continue;
            }
            let Some(next) = self.wheel.next_tick() else {
                // Only items that never come out: inserts and resets wake.
                self.armed = u64::MAX;
                return Poll::Pending;
            };
            if self.arm(next).poll_alarm(cx).is_pending() {
                return Poll::Pending;
            }
            // The alarm fired, so the clock has reached `next`.
            let now = self.now_tick();
            if now <= self.now {
                // Not with either clock; but never spin here.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.now = now;
        }
    }

    pub(crate) fn peek(&self) -> Option<Key> {
        self.wheel.peek().map(Key)
    }

    #[track_caller]
    pub(crate) fn deadline(&self, key: &Key) -> Instant {
        match self.try_deadline(key) {
            Some(deadline) => deadline,
            None => stale("deadline"),
        }
    }

    pub(crate) fn try_deadline(&self, key: &Key) -> Option<Instant> {
        self.wheel
            .tick(key.0)
            .map(|tick| instant_of(self.start, tick))
    }

    #[track_caller]
    pub(crate) fn remove(&mut self, key: &Key) -> Entry<T> {
        match self.try_remove(key) {
            Some(entry) => entry,
            None => stale("remove"),
        }
    }

    pub(crate) fn try_remove(&mut self, key: &Key) -> Option<Entry<T>> {
        let expired = self.wheel.remove_entry(key.0)?;
        if self.wheel.is_empty() {
            // A task waiting on the stream sees it end.
            self.wake();
        }
        Some(self.entry(expired))
    }

    #[track_caller]
    pub(crate) fn reset_at(&mut self, key: &Key, when: Instant) {
        let tick = self.tick_of(when);
        self.reset_tick(key, tick, "reset_at");
    }

    #[track_caller]
    pub(crate) fn reset(&mut self, key: &Key, timeout: Duration) {
        let tick = self.tick_after(timeout);
        self.reset_tick(key, tick, "reset");
    }

    #[track_caller]
    fn reset_tick(&mut self, key: &Key, tick: u64, method: &str) {
        if !self.wheel.reset(key.0, tick) {
            stale(method);
        }
        self.wake_if_before(tick);
    }

    pub(crate) fn clear(&mut self) {
        let had_items = !self.wheel.is_empty();
        self.wheel.clear();
        self.armed = u64::MAX;
        if had_items {
            self.wake();
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.wheel.capacity()
    }

    pub(crate) fn len(&self) -> usize {
        self.wheel.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    #[track_caller]
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.wheel.reserve(additional);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.wheel.shrink_to_fit();
    }

    pub(crate) fn compact(&mut self) {
        self.wheel.compact();
    }

    /// The first tick at or after `when`.
    fn tick_of(&self, when: Instant) -> u64 {
        let tick = match when.checked_duration_since(self.start) {
            Some(since) => ceil_ticks(since),
            None => 0,
        };
        if tick <= self.now {
            // Due by the last clock reading already.
            return tick;
        }
        let now = A::now();
        if when <= now {
            // Due now, if within the tick that has begun: it comes out at
            // once, not at the tick's end.
            return tick.min(floor_ticks(now.saturating_duration_since(self.start)));
        }
        tick
    }

    /// The first tick at or after `timeout` from now, the delay capped at
    /// about 30 years, as `Timer::sleep`'s (tokio's "far future"); the tick
    /// that has begun for a zero delay, so that the item comes out at once
    /// (tokio-util's promise).
    fn tick_after(&self, timeout: Duration) -> u64 {
        let since = A::now().saturating_duration_since(self.start);
        if timeout.is_zero() {
            return floor_ticks(since);
        }
        ceil_ticks(since + timeout.min(FAR_FUTURE))
    }

    /// The last tick that has begun by the clock.
    fn now_tick(&self) -> u64 {
        floor_ticks(A::now().saturating_duration_since(self.start))
    }

    /// The alarm, armed at `tick`.
    fn arm(&mut self, tick: u64) -> &mut A {
        let moved = std::mem::replace(&mut self.armed, tick) != tick;
        match self.alarm {
            Some(ref mut alarm) => {
                if moved {
                    alarm.reset(instant_of(self.start, tick));
                }
                alarm
            }
            None => self.alarm.insert(A::armed_at(instant_of(self.start, tick))),
        }
    }

    #[inline]
    fn wake_if_before(&mut self, tick: u64) {
        if tick < self.armed && self.waker.is_some() {
            self.wake();
        }
    }

    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    fn entry(&self, expired: wheel::Expired<T>) -> Entry<T> {
        Entry {
            start: self.start,
            tick: expired.tick,
            key: Key(expired.key),
            data: expired.value,
        }
    }
}

/// What the two `DelayQueue` faces (tokio's, `crate::DelayQueue`, and the
/// executor-free one, `crate::async_io::DelayQueue`) share word for word
/// but their doc examples' setup: `clear`, `capacity`, `len`, `is_empty`,
/// `reserve`, `shrink_to_fit`, `compact` and the `Unpin`, `Default`,
/// `Stream` and `Debug` impls, written once. Each face calls it with its
/// path (`path`), the lines that open a doc example's async block (`open`)
/// and the one that closes it (`close`); the face's module imports `fmt`,
/// `Pin`, `Context`, `Poll` and `Stream`, and its queue is a
/// `crate::queue::Queue` in the field `queue`.
macro_rules! delay_queue_common {
    (path: $path:literal, open: [$($open:literal),+], close: $close:literal) => {
        impl<T> DelayQueue<T> {
            /// Removes every item, keeping the capacity; every key becomes stale, and
            /// [`poll_expired`](Self::poll_expired) returns `Ready(None)`.
            ///
            /// # Examples
            ///
            /// ```
            $(#[doc = $open])+
            #[doc = concat!("use ", $path, ";")]
            /// use std::time::Duration;
            ///
            /// let mut queue = DelayQueue::new();
            /// queue.insert("foo", Duration::from_secs(5));
            /// queue.clear();
            /// assert!(queue.is_empty());
            #[doc = $close]
            /// ```
            pub fn clear(&mut self) {
                self.queue.clear();
            }

            /// How many items the queue holds without allocating.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let queue: ", $path, "<i32> = ", $path, "::with_capacity(10);")]
            /// assert_eq!(queue.capacity(), 10);
            /// ```
            #[must_use]
            pub fn capacity(&self) -> usize {
                self.queue.capacity()
            }

            /// How many items the queue holds, expired or not.
            ///
            /// # Examples
            ///
            /// ```
            $(#[doc = $open])+
            #[doc = concat!("use ", $path, ";")]
            /// use std::time::Duration;
            ///
            /// let mut queue = DelayQueue::new();
            /// queue.insert(3, Duration::from_secs(5));
            /// assert_eq!(queue.len(), 1);
            #[doc = $close]
            /// ```
            #[must_use]
            pub fn len(&self) -> usize {
                self.queue.len()
            }

            /// Whether the queue holds no item (expired or not).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let queue: ", $path, "<()> = ", $path, "::new();")]
            /// assert!(queue.is_empty());
            /// ```
            #[must_use]
            pub fn is_empty(&self) -> bool {
                self.queue.is_empty()
            }

            /// Makes room for at least `additional` more items.
            ///
            /// # Panics
            ///
            /// If the queue would hold more than `u32::MAX - 3` items. An
            /// allocation that fails aborts the process, as `Vec::reserve`'s
            /// does (at once where the room could never be had: it is asked
            /// for in one allocation first).
            ///
            /// # Examples
            ///
            /// ```
            $(#[doc = $open])+
            #[doc = concat!("use ", $path, ";")]
            /// use std::time::Duration;
            ///
            /// let mut queue = DelayQueue::new();
            /// queue.insert("hello", Duration::from_secs(10));
            /// queue.reserve(10);
            /// assert!(queue.capacity() >= 11);
            #[doc = $close]
            /// ```
            #[track_caller]
            pub fn reserve(&mut self, additional: usize) {
                self.queue.reserve(additional);
            }

            /// Gives back the memory of free slots at the end of the queue's storage,
            /// in whole pages of 256 past the first 256 slots (all of it when
            /// the queue is empty). Items do not move; see
            /// [`compact`](Self::compact).
            ///
            /// # Examples
            ///
            /// ```
            $(#[doc = $open])+
            #[doc = concat!("use ", $path, ";")]
            /// use std::time::Duration;
            ///
            /// let mut queue = DelayQueue::with_capacity(100);
            /// let key = queue.insert("a", Duration::from_secs(1));
            /// queue.remove(&key);
            /// queue.shrink_to_fit();
            /// assert_eq!(queue.capacity(), 0);
            #[doc = $close]
            /// ```
            pub fn shrink_to_fit(&mut self) {
                self.queue.shrink_to_fit();
            }

            /// Moves items into free slots and gives back the rest, so that the
            /// capacity is the length (in whole pages of 256 items past the
            /// first 256). Keys stay valid. O(len).
            ///
            /// # Examples
            ///
            /// ```
            $(#[doc = $open])+
            #[doc = concat!("use ", $path, ";")]
            /// use std::time::Duration;
            ///
            /// let mut queue = DelayQueue::with_capacity(10);
            /// let _a = queue.insert(5, Duration::from_secs(5));
            /// let b = queue.insert(10, Duration::from_secs(10));
            /// let c = queue.insert(15, Duration::from_secs(15));
            /// queue.remove(&b);
            /// queue.compact();
            /// assert_eq!(queue.capacity(), 2);
            /// assert_eq!(queue.remove(&c).into_inner(), 15);
            #[doc = $close]
            /// ```
            pub fn compact(&mut self) {
                self.queue.compact();
            }
        }

        // The queue never pins its values (they sit in a `Vec`), so it
        // moves freely whatever `T` is, as tokio-util's does.
        impl<T> Unpin for DelayQueue<T> {}

        impl<T> Default for DelayQueue<T> {
            fn default() -> DelayQueue<T> {
                DelayQueue::new()
            }
        }

        impl<T> Stream for DelayQueue<T> {
            type Item = Expired<T>;

            fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
                self.get_mut().poll_expired(cx)
            }
        }

        impl<T> fmt::Debug for DelayQueue<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct("DelayQueue")
                    .field("len", &self.len())
                    .field("peek", &self.peek())
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use delay_queue_common;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_round_deadlines_up_and_the_clock_down() {
        let d = |s, n| Duration::new(s, n);
        assert_eq!(ceil_ticks(d(0, 0)), 0);
        assert_eq!(ceil_ticks(d(0, 1)), 1);
        assert_eq!(ceil_ticks(d(0, 125_000)), 1);
        assert_eq!(ceil_ticks(d(0, 125_001)), 2);
        assert_eq!(ceil_ticks(d(1, 999_999_999)), 16_000);
        assert_eq!(ceil_ticks(Duration::MAX), u64::MAX);
        assert_eq!(floor_ticks(d(0, 124_999)), 0);
        assert_eq!(floor_ticks(d(2, 250_000)), 16_002);
        assert_eq!(floor_ticks(Duration::MAX), u64::MAX);
        for ns in [
            0u64,
            1,
            124_999,
            125_000,
            999_999_999,
            1_000_000_001,
            5 << 40,
        ] {
            let d = Duration::from_nanos(ns);
            let (c, f) = (ceil_ticks(d), floor_ticks(d));
            assert!(u128::from(c) * 125_000 >= d.as_nanos(), "ceil below {ns}");
            assert!(u128::from(f) * 125_000 <= d.as_nanos(), "floor above {ns}");
            assert!(c - f <= 1);
        }
    }
}
