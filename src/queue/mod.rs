// Floor 3, beside the handle (docs/ARCHITECTURE.md): the queue's core
// imports the wheel and the engine's clock and budget; no face.
//! The keyed delay queue's core, shared by its two faces: tokio-util's
//! [`DelayQueue`](crate::DelayQueue) (tokio's clock and `Sleep`) and the
//! executor-free [`async_io::DelayQueue`](crate::async_io::DelayQueue)
//! (std's clock, the thread driver).
//!
//! The queue is tokio-util's: its wheel ([`Levels`], in milliseconds from
//! the queue's start) and its `DelayQueue`'s steps around it, kept step for
//! step (`tokio-util/src/time/delay_queue.rs`), so that items come out in
//! its order (issue 56): which of the items due at one millisecond comes
//! out first depends on where its wheel stood when each was inserted, and
//! that on where its `Sleep` stood at each poll. Its `Sleep` is a
//! deadline here ([`Queue::delay`]), which one [`QueueAlarm`] waits for:
//! the seam where the two faces differ. It imports the wheel's store and
//! keys, and the engine's clock and budget.

mod levels;

use std::fmt;
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::engine::clock::{far_future, FAR_FUTURE};
use crate::engine::coop;
use crate::wheel;
use levels::Levels;

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
    /// The queue's start and the item's millisecond: the deadline,
    /// computed only when asked for.
    start: Instant,
    ms: u64,
    pub(crate) key: Key,
}

impl<T> Entry<T> {
    /// The deadline the item had, rounded up to the millisecond.
    pub(crate) fn deadline(&self) -> Instant {
        instant_of(self.start, self.ms)
    }
}

/// `d` in whole milliseconds, rounded up (saturating).
#[inline]
fn ms_up(d: Duration) -> u64 {
    let part = d.subsec_nanos().div_ceil(1_000_000);
    d.as_secs()
        .saturating_mul(1_000)
        .saturating_add(u64::from(part))
}

/// `d` in whole milliseconds, rounded down (saturating).
#[inline]
fn ms_down(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1_000)
        .saturating_add(u64::from(d.subsec_millis()))
}

/// The instant millisecond `ms` after `start` begins; past what an
/// `Instant` holds, the far future.
fn instant_of(start: Instant, ms: u64) -> Instant {
    start
        .checked_add(Duration::from_millis(ms))
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
/// it wakes its task through one [`QueueAlarm`], armed at its `delay`.
pub(crate) struct Queue<T, A> {
    levels: Levels<T>,
    /// Millisecond 0 begins here.
    start: Instant,
    /// tokio-util's `delay`, the deadline of its `Sleep`: the millisecond
    /// its poll waits for before it moves its wheel on (`None`: nothing in
    /// the wheel).
    delay: Option<u64>,
    /// tokio-util's `wheel_now`: where its last `Sleep` that came due was
    /// set, which its poll moves the wheel up to.
    wheel_now: u64,
    /// The last millisecond seen begun on the clock: a `delay` at or
    /// before it has come, with no clock read.
    seen: u64,
    /// The alarm, armed at `armed`; made on the first poll that waits.
    alarm: Option<A>,
    /// The millisecond `alarm` is armed at; `u64::MAX` while nothing is.
    armed: u64,
    /// The task that polled last: woken as tokio-util's is, when an item
    /// is inserted before `delay`, reset to a time already past, or the
    /// last item leaves; and when `delay` moves before `armed`.
    waker: Option<Waker>,
}

impl<T, A: QueueAlarm> Queue<T, A> {
    pub(crate) fn new() -> Queue<T, A> {
        Queue {
            levels: Levels::new(),
            start: A::now(),
            delay: None,
            wheel_now: 0,
            seen: 0,
            alarm: None,
            armed: u64::MAX,
            waker: None,
        }
    }

    #[track_caller]
    pub(crate) fn insert_at(&mut self, value: T, when: Instant) -> Key {
        let when = self.normalize(when);
        self.insert_ms(value, when)
    }

    /// `timeout` from now, capped at about 30 years, as `Timer::sleep`'s
    /// (tokio's "far future"; tokio-util's panics past about two).
    #[track_caller]
    pub(crate) fn insert(&mut self, value: T, timeout: Duration) -> Key {
        let when = self.after(timeout);
        self.insert_ms(value, when)
    }

    /// tokio-util's `insert_at`: the item goes into the wheel, and where
    /// it is due before `delay`, `delay` moves to it and the task is woken.
    #[track_caller]
    fn insert_ms(&mut self, value: T, when: u64) -> Key {
        let key = self.levels.insert(when, value);
        if when - self.levels.elapsed() > levels::REACH {
            // A far item, not tokio-util's (it panics): `delay` waits for
            // the wheel to reach it.
            let next = self.levels.poll_at();
            self.set_delay(next);
        } else if self
            .delay
            .map_or(true, |delay| delay.max(self.levels.elapsed()) > when)
        {
            self.wake();
            self.delay = Some(when);
        }
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
        if !self
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            self.waker = Some(cx.waker().clone());
        }
        let poll = self.poll_due(cx).map(|item| item.map(|item| self.entry(item)));
        if let Poll::Ready(Some(_)) = poll {
            coop.made_progress();
        }
        poll
    }

    /// tokio-util's `poll_idx`: the stack of due items first; then, each
    /// time its `delay` has come, the wheel moved up to it, and `delay`
    /// set to where the wheel has work next.
    fn poll_due(&mut self, cx: &mut Context<'_>) -> Poll<Option<(wheel::Key, u64, T)>> {
        if let Some(item) = self.levels.pop_due() {
            return Poll::Ready(Some(item));
        }
        loop {
            if let Some(delay) = self.delay {
                if !self.has_come(delay, cx) {
                    return Poll::Pending;
                }
                self.wheel_now = delay;
            }
            let item = self.levels.poll(self.wheel_now.max(self.levels.elapsed()));
            self.delay = self.levels.poll_at();
            if item.is_some() {
                return Poll::Ready(item);
            }
            if self.delay.is_none() {
                return Poll::Ready(None);
            }
        }
    }

    /// Whether the clock has reached millisecond `ms`; if not, the alarm
    /// is armed at it, polled with `cx`, and the task woken when it comes.
    fn has_come(&mut self, ms: u64, cx: &mut Context<'_>) -> bool {
        if ms <= self.seen {
            return true;
        }
        self.seen = self.now_ms();
        if ms <= self.seen {
            return true;
        }
        if self.arm(ms).poll_alarm(cx).is_pending() {
            return false;
        }
        // The alarm rang: the clock has reached `ms`.
        self.seen = self.now_ms();
        if ms <= self.seen {
            return true;
        }
        // Not with either clock; but never spin here.
        cx.waker().wake_by_ref();
        false
    }

    /// The last millisecond that has begun by the clock.
    fn now_ms(&self) -> u64 {
        ms_down(A::now().saturating_duration_since(self.start))
    }

    pub(crate) fn peek(&self) -> Option<Key> {
        self.levels.peek().map(Key)
    }

    #[track_caller]
    pub(crate) fn deadline(&self, key: &Key) -> Instant {
        match self.try_deadline(key) {
            Some(deadline) => deadline,
            None => stale("deadline"),
        }
    }

    pub(crate) fn try_deadline(&self, key: &Key) -> Option<Instant> {
        self.levels
            .when(key.0)
            .map(|ms| instant_of(self.start, ms))
    }

    #[track_caller]
    pub(crate) fn remove(&mut self, key: &Key) -> Entry<T> {
        match self.try_remove(key) {
            Some(entry) => entry,
            None => stale("remove"),
        }
    }

    /// tokio-util's `remove`: where the item's leaving changes where the
    /// wheel has work next, `delay` moves there; the last item's leaving
    /// wakes the task (the stream ends).
    pub(crate) fn try_remove(&mut self, key: &Key) -> Option<Entry<T>> {
        let before = self.levels.poll_at();
        let removed = self.levels.remove(key.0)?;
        let after = self.levels.poll_at();
        if before != after {
            self.set_delay(after);
        }
        if self.levels.is_empty() {
            self.wake();
        }
        Some(self.entry(removed))
    }

    #[track_caller]
    pub(crate) fn reset_at(&mut self, key: &Key, when: Instant) {
        let when = self.normalize(when);
        self.reset_ms(key, when, "reset_at");
    }

    #[track_caller]
    pub(crate) fn reset(&mut self, key: &Key, timeout: Duration) {
        let when = self.after(timeout);
        self.reset_ms(key, when, "reset");
    }

    /// tokio-util's `reset_at`: the item filed again, `delay` set to where
    /// the wheel has work next, and the task woken if the item is due.
    #[track_caller]
    fn reset_ms(&mut self, key: &Key, when: u64, method: &str) {
        let Some(due) = self.levels.reset(key.0, when) else {
            stale(method)
        };
        let next = self.levels.poll_at();
        self.set_delay(next);
        if due {
            self.wake();
        }
    }

    /// Sets `delay`, waking the task where that is before the alarm (as
    /// tokio-util's `Sleep::reset` moves its wake-up earlier).
    fn set_delay(&mut self, delay: Option<u64>) {
        self.delay = delay;
        if let Some(delay) = delay {
            self.wake_if_before(delay);
        }
    }

    /// Wakes the task if millisecond `ms` is before the alarm, which the
    /// next poll then arms there.
    fn wake_if_before(&mut self, ms: u64) {
        if ms < self.armed {
            self.armed = u64::MAX;
            self.wake();
        }
    }

    pub(crate) fn clear(&mut self) {
        let had_items = !self.levels.is_empty();
        self.levels.clear();
        self.delay = None;
        self.armed = u64::MAX;
        if had_items {
            self.wake();
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.levels.capacity()
    }

    pub(crate) fn len(&self) -> usize {
        self.levels.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    #[track_caller]
    pub(crate) fn reserve(&mut self, additional: usize) {
        assert!(
            self.len().saturating_add(additional) <= wheel::raw::MAX_ENTRIES,
            "hashwheel: a DelayQueue cannot hold more than {} items",
            wheel::raw::MAX_ENTRIES
        );
        self.levels.reserve(additional);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.levels.shrink_to_fit();
    }

    pub(crate) fn compact(&mut self) {
        self.levels.compact();
    }

    /// [`normalize`](Self::normalize) of `timeout` from now (one clock
    /// read).
    fn after(&mut self, timeout: Duration) -> u64 {
        let since = A::now().saturating_duration_since(self.start);
        self.seen = self.seen.max(ms_down(since));
        let ms = if timeout.is_zero() {
            ms_down(since)
        } else {
            ms_up(since.saturating_add(timeout.min(FAR_FUTURE)))
        };
        ms.max(self.levels.elapsed())
    }

    /// tokio-util's `normalize_deadline`: `when` in milliseconds from the
    /// start, rounded up, and no earlier than the wheel has processed. One
    /// thing more: a deadline that has passed (a zero delay included) is
    /// due in the millisecond that has begun, where tokio-util rounds it up
    /// to the next (they agree on the millisecond grid): it comes out on
    /// the next poll, with no alarm (and outside a runtime: issue 43).
    fn normalize(&mut self, when: Instant) -> u64 {
        let mut ms = match when.checked_duration_since(self.start) {
            Some(since) => ms_up(since),
            None => 0,
        };
        if ms > self.seen {
            let now = A::now();
            if when <= now {
                self.seen = ms_down(now.saturating_duration_since(self.start));
                ms = ms.min(self.seen);
            }
        }
        ms.max(self.levels.elapsed())
    }

    /// The alarm, armed at millisecond `ms`.
    fn arm(&mut self, ms: u64) -> &mut A {
        let moved = std::mem::replace(&mut self.armed, ms) != ms;
        match self.alarm {
            Some(ref mut alarm) => {
                if moved {
                    alarm.reset(instant_of(self.start, ms));
                }
                alarm
            }
            None => self.alarm.insert(A::armed_at(instant_of(self.start, ms))),
        }
    }

    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    fn entry(&self, (key, ms, data): (wheel::Key, u64, T)) -> Entry<T> {
        Entry {
            start: self.start,
            ms,
            key: Key(key),
            data,
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
    fn milliseconds_round_as_tokio_utils() {
        let d = |s, n| Duration::new(s, n);
        assert_eq!(ms_up(d(0, 0)), 0);
        assert_eq!(ms_up(d(0, 1)), 1);
        assert_eq!(ms_up(d(0, 1_000_000)), 1);
        assert_eq!(ms_up(d(0, 1_000_001)), 2);
        assert_eq!(ms_up(d(1, 999_999_999)), 2_000);
        assert_eq!(ms_up(Duration::MAX), u64::MAX);
        assert_eq!(ms_down(d(0, 999_999)), 0);
        assert_eq!(ms_down(d(2, 1_000_000)), 2_001);
        assert_eq!(ms_down(Duration::MAX), u64::MAX);
    }
}
