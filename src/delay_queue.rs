//! A queue of values that come out when their deadline passes, each with a
//! key to remove or reset it: [`DelayQueue`], a drop-in for tokio-util's
//! `DelayQueue` on the hashed wheel.
//!
//! See [`DelayQueue`] for the details.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::time::{Instant, Sleep};

pub use crate::queue::Key;
use crate::queue::{delay_queue_common, Entry, Queue, QueueAlarm};

/// A queue of values, each yielded once its deadline has passed.
///
/// The same API as [`tokio_util::time::DelayQueue`] 0.7, so switching is a
/// change of `use` line: insert a value with [`insert`](Self::insert) or
/// [`insert_at`](Self::insert_at) and keep its [`Key`];
/// [`remove`](Self::remove) or [`reset`](Self::reset) it by key; take out
/// what expired through [`poll_expired`](Self::poll_expired) or the
/// [`Stream`] of [`Expired`] items. One owner (`&mut self`), no lock, no
/// `Arc`, no driver task: the queue wakes its task through one tokio timer
/// armed at its next deadline. It runs on [`tokio::time::Instant`], so
/// paused time (`start_paused`, `tokio::time::advance`) works.
///
/// Which one to use: a [`Timer`](crate::Timer) is shared by many tasks,
/// one future per timeout; a `DelayQueue` belongs to one task that keeps
/// many keyed deadlines (expiring caches, retry and rate-limit maps, session
/// tables); the [wheel](crate::wheel#examples) alone serves your own event loop.
///
/// # Timing and order
///
/// The queue is tokio-util's wheel, kept rule for rule: deadlines round up
/// to the millisecond from the queue's creation, and items come out in
/// tokio-util's order, those due at one millisecond too (which depends on
/// where its wheel stood when each went in: last in, first out within a
/// level's slot, reversed by each move down a level; a reset files the item
/// again, as a new one). An item never comes out before its deadline: the
/// queue arms tokio's timer at the deadline tokio-util's own `Sleep` would
/// wait for, and hands an item out once the clock has reached its
/// millisecond, like it subject to tokio's millisecond timer and to the
/// runtime's load. No absolute bound holds: measured on an idle runtime,
/// items came out <!--fig:delay-queue.p50-->1.12–1.18 ms after their
/// deadline at the median and up to about <!--fig:delay-queue.max-->2 ms
/// (tokio's `Sleep` about the same; tokio-util's `DelayQueue` about
/// <!--fig:delay-queue.tokio-util.p50-->2.0 ms and
/// <!--fig:delay-queue.tokio-util.max-->2.9 ms). An item whose deadline has
/// already passed when it is inserted (or reset), a zero delay included,
/// comes out on the next poll. Deadlines years away work, never early, and
/// none panics: a delay over about 30 years (`Duration::MAX`) is capped
/// there, as `Timer::sleep`'s (tokio's "far future"); an instant more than
/// 146 million years away (2^62 ms) never comes out.
///
/// # Keys
///
/// A [`Key`] names its item until the item leaves the queue (removed,
/// expired or cleared). Unlike tokio-util's, a key carries a 64-bit
/// generation that no other key of the process has had (see the
/// [wheel's Keys](crate::wheel#keys)): a stale key, or one from another
/// queue, never reaches another item that took its slot, however many
/// queues the process makes. [`try_remove`](Self::try_remove) and
/// [`try_deadline`](Self::try_deadline) return `None` for it, and
/// [`remove`](Self::remove), [`deadline`](Self::deadline),
/// [`reset`](Self::reset) and [`reset_at`](Self::reset_at) panic with a
/// message saying so.
///
/// # Differences from tokio-util's
///
/// * Extra methods: [`try_deadline`](Self::try_deadline) (`None` for a
///   stale key where [`deadline`](Self::deadline) panics, as tokio-util's
///   does).
/// * Deadlines over about two years out do not panic (tokio-util's panic
///   past 2^36 ms): items over 2^36 - 2^30 ms out wait beside the wheel
///   until it reaches them. A deadline already passed is due in the
///   millisecond that has begun (tokio-util rounds it up to the next:
///   they agree on the millisecond grid).
/// * Inserts, resets and removals never touch tokio's timer (tokio-util
///   resets its `Sleep` on most of them): they need no runtime, and cost a
///   store slot and a list link. The task is woken when an item is inserted
///   or reset before the time the timer is armed for, or when the last
///   item is removed.
///
/// # Examples
///
/// An expiring cache (see also `examples/ttl_cache.rs`):
///
/// ```
/// use hashwheel::delay_queue::{DelayQueue, Key};
/// use std::collections::HashMap;
/// use std::task::{ready, Context, Poll};
/// use std::time::Duration;
///
/// struct Cache {
///     entries: HashMap<String, (String, Key)>,
///     expirations: DelayQueue<String>,
/// }
///
/// const TTL: Duration = Duration::from_secs(30);
///
/// impl Cache {
///     fn insert(&mut self, key: String, value: String) {
///         let expiry = self.expirations.insert(key.clone(), TTL);
///         if let Some((_, old)) = self.entries.insert(key, (value, expiry)) {
///             self.expirations.remove(&old);
///         }
///     }
///
///     fn get(&mut self, key: &str) -> Option<&String> {
///         let (value, expiry) = self.entries.get(key)?;
///         self.expirations.reset(expiry, TTL);
///         Some(value)
///     }
///
///     fn poll_purge(&mut self, cx: &mut Context<'_>) -> Poll<()> {
///         while let Some(expired) = ready!(self.expirations.poll_expired(cx)) {
///             self.entries.remove(expired.get_ref());
///         }
///         Poll::Ready(())
///     }
/// }
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// # let mut cache = Cache { entries: HashMap::new(), expirations: DelayQueue::new() };
/// # cache.insert("a".into(), "1".into());
/// # assert_eq!(cache.get("a").map(String::as_str), Some("1"));
/// # tokio::time::sleep(TTL).await;
/// # std::future::poll_fn(|cx| cache.poll_purge(cx)).await;
/// # assert!(cache.get("a").is_none());
/// # }
/// ```
///
/// [`tokio_util::time::DelayQueue`]: https://docs.rs/tokio-util/0.7/tokio_util/time/struct.DelayQueue.html
pub struct DelayQueue<T> {
    queue: Queue<T, TokioAlarm>,
}

/// An item taken out of a [`DelayQueue`]: expired, or removed.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use futures_util::StreamExt;
/// use hashwheel::DelayQueue;
/// use std::time::Duration;
///
/// let mut queue = DelayQueue::new();
/// let key = queue.insert("foo", Duration::from_millis(5));
/// let mut expired = queue.next().await.unwrap();
/// assert_eq!(expired.key(), key);
/// expired.get_mut().to_string();
/// assert_eq!(*expired.get_ref(), "foo");
/// assert!(expired.deadline() <= tokio::time::Instant::now());
/// assert_eq!(expired.into_inner(), "foo");
/// # }
/// ```
pub struct Expired<T> {
    entry: Entry<T>,
}

impl<T: fmt::Debug> fmt::Debug for Expired<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expired")
            .field("data", &self.entry.data)
            .field("deadline", &self.deadline())
            .field("key", &self.entry.key)
            .finish()
    }
}

impl<T> Expired<T> {
    /// The value.
    ///
    /// # Examples
    ///
    /// See [`Expired`].
    #[must_use]
    pub fn get_ref(&self) -> &T {
        &self.entry.data
    }

    /// The value, mutably.
    ///
    /// # Examples
    ///
    /// See [`Expired`].
    #[must_use]
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.entry.data
    }

    /// The value, by value.
    ///
    /// # Examples
    ///
    /// See [`Expired`].
    #[must_use]
    pub fn into_inner(self) -> T {
        self.entry.data
    }

    /// The deadline the item had, rounded up to the millisecond (down to
    /// the millisecond that had begun, for an item already due when it went
    /// in; and, as tokio-util's, no earlier than where the queue's wheel
    /// stood then).
    ///
    /// # Examples
    ///
    /// See [`Expired`].
    #[must_use]
    pub fn deadline(&self) -> Instant {
        Instant::from_std(self.entry.deadline())
    }

    /// The key the item had.
    ///
    /// # Examples
    ///
    /// See [`Expired`].
    #[must_use]
    pub fn key(&self) -> Key {
        self.entry.key
    }
}

impl<T> DelayQueue<T> {
    /// An empty queue. It allocates no item until the first insert, and
    /// needs no runtime until it is polled.
    ///
    /// # Examples
    ///
    /// ```
    /// let queue: hashwheel::DelayQueue<u32> = hashwheel::DelayQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    #[must_use]
    pub fn new() -> DelayQueue<T> {
        DelayQueue {
            queue: Queue::new(),
        }
    }

    /// An empty queue with room for `capacity` items.
    ///
    /// # Panics
    ///
    /// As [`reserve`](Self::reserve): past `u32::MAX - 3` items; an
    /// allocation that fails aborts the process, as `Vec::with_capacity`'s
    /// does (at once where the room could never be had).
    ///
    /// # Examples
    ///
    /// ```
    /// let queue: hashwheel::DelayQueue<u32> = hashwheel::DelayQueue::with_capacity(10);
    /// assert_eq!(queue.capacity(), 10);
    /// ```
    #[must_use]
    pub fn with_capacity(capacity: usize) -> DelayQueue<T> {
        let mut queue = DelayQueue::new();
        queue.reserve(capacity);
        queue
    }

    /// Inserts `value`, to come out at `when`, and returns its key. If `when`
    /// has passed, it comes out on the next poll.
    ///
    /// # Panics
    ///
    /// If the queue already holds `u32::MAX - 3` items.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use tokio::time::{Duration, Instant};
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert_at("foo", Instant::now() + Duration::from_secs(5));
    /// assert_eq!(*queue.remove(&key).get_ref(), "foo");
    /// # }
    /// ```
    #[track_caller]
    pub fn insert_at(&mut self, value: T, when: Instant) -> Key {
        self.queue.insert_at(value, when.into_std())
    }

    /// Inserts `value`, to come out after `timeout`, and returns its key. A
    /// zero `timeout` makes it come out on the next poll, without waiting
    /// for the clock (an item inserted with a deadline already past, by
    /// [`insert_at`](Self::insert_at), too); one over about 30 years is
    /// capped there, as [`Timer::sleep`](crate::Timer::sleep)'s (tokio's
    /// "far future").
    ///
    /// # Panics
    ///
    /// If the queue already holds `u32::MAX - 3` items.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(*queue.remove(&key).get_ref(), "foo");
    /// # }
    /// ```
    #[track_caller]
    pub fn insert(&mut self, value: T, timeout: Duration) -> Key {
        self.queue.insert(value, timeout)
    }

    /// Takes out the next expired item, or registers the task to be woken
    /// when one expires. Returns `Ready(None)` while the queue is empty (an
    /// insert makes it yield items again).
    ///
    /// Items come out in deadline order; items already due when inserted or
    /// reset come out first. Cancel-safe: an item is only taken out when it
    /// is returned.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, at the first poll that waits (it arms
    /// tokio's timer; inserts, resets and polls that find an item due need
    /// no runtime): on another executor use
    /// [`hashwheel::async_io::DelayQueue`][async_io::DelayQueue_link].
    /// On a runtime without its time driver, as `tokio::time::sleep` does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// queue.insert("b", Duration::from_millis(20));
    /// queue.insert("a", Duration::from_millis(10));
    /// let first = poll_fn(|cx| queue.poll_expired(cx)).await.unwrap();
    /// assert_eq!(first.into_inner(), "a");
    /// # }
    /// ```
    #[cfg_attr(feature = "thread", doc = "", doc = "[async_io::DelayQueue_link]: crate::async_io::DelayQueue")]
    #[cfg_attr(not(feature = "thread"), doc = "", doc = "[async_io::DelayQueue_link]: https://docs.rs/hashwheel/latest/hashwheel/async_io/struct.DelayQueue.html")]
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.queue
            .poll_expired(cx)
            .map(|entry| entry.map(|entry| Expired { entry }))
    }

    /// The key of the item that comes out next, without taking it out or
    /// waiting for it: the one with the earliest deadline, and among equal
    /// deadlines the one [`poll_expired`](Self::poll_expired) returns first.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// queue.insert("foo", Duration::from_secs(10));
    /// let bar = queue.insert("bar", Duration::from_secs(5));
    /// queue.insert("baz", Duration::from_secs(15));
    /// assert_eq!(queue.peek(), Some(bar));
    /// # }
    /// ```
    #[must_use]
    pub fn peek(&self) -> Option<Key> {
        self.queue.peek()
    }

    /// The deadline of the item `key` names, rounded up to the millisecond
    /// (see [`Expired::deadline`]). An item that never comes out (its
    /// deadline too far to represent) reports an instant millions of years
    /// out.
    ///
    /// # Panics
    ///
    /// If `key` names no item of this queue (as tokio-util's does): its item
    /// was removed, expired or cleared, or the key is another queue's. See
    /// [`try_deadline`](Self::try_deadline).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let a = queue.insert("a", Duration::from_secs(5));
    /// let b = queue.insert("b", Duration::from_secs(10));
    /// assert!(queue.deadline(&a) < queue.deadline(&b));
    /// # }
    /// ```
    #[must_use]
    #[track_caller]
    pub fn deadline(&self, key: &Key) -> Instant {
        Instant::from_std(self.queue.deadline(key))
    }

    /// The deadline of the item `key` names, as [`deadline`](Self::deadline);
    /// `None` if the key names no item of this queue (hashwheel only:
    /// tokio-util has no such method).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let a = queue.insert("a", Duration::from_secs(5));
    /// assert_eq!(queue.try_deadline(&a), Some(queue.deadline(&a)));
    /// queue.remove(&a);
    /// assert_eq!(queue.try_deadline(&a), None);
    /// # }
    /// ```
    #[must_use]
    pub fn try_deadline(&self, key: &Key) -> Option<Instant> {
        self.queue.try_deadline(key).map(Instant::from_std)
    }

    /// Removes the item `key` names and returns it, with the deadline it had.
    ///
    /// # Panics
    ///
    /// If `key` names no item of this queue: its item was removed, expired
    /// or cleared, or the key is another queue's. See
    /// [`try_remove`](Self::try_remove).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(*queue.remove(&key).get_ref(), "foo");
    /// # }
    /// ```
    #[track_caller]
    pub fn remove(&mut self, key: &Key) -> Expired<T> {
        Expired {
            entry: self.queue.remove(key),
        }
    }

    /// Removes the item `key` names and returns it, with the deadline it had;
    /// `None` if `key` names no item of this queue.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(queue.try_remove(&key).unwrap().into_inner(), "foo");
    /// assert!(queue.try_remove(&key).is_none());
    /// # }
    /// ```
    pub fn try_remove(&mut self, key: &Key) -> Option<Expired<T>> {
        self.queue.try_remove(key).map(|entry| Expired { entry })
    }

    /// Moves the item `key` names to come out at `when` (on the next poll if
    /// `when` has passed).
    ///
    /// # Panics
    ///
    /// If `key` names no item of this queue (see [`remove`](Self::remove)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use tokio::time::{Duration, Instant};
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// let when = Instant::now() + Duration::from_secs(10);
    /// queue.reset_at(&key, when);
    /// assert!(queue.deadline(&key) >= when);
    /// # }
    /// ```
    #[track_caller]
    pub fn reset_at(&mut self, key: &Key, when: Instant) {
        self.queue.reset_at(key, when.into_std());
    }

    /// Moves the item `key` names to come out after `timeout` from now (on
    /// the next poll if `timeout` is zero).
    ///
    /// # Panics
    ///
    /// If `key` names no item of this queue (see [`remove`](Self::remove)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// queue.reset(&key, Duration::from_secs(10)); // now due in 10 s
    /// # }
    /// ```
    #[track_caller]
    pub fn reset(&mut self, key: &Key, timeout: Duration) {
        self.queue.reset(key, timeout);
    }
}

delay_queue_common!(
    path: "hashwheel::DelayQueue",
    open: [
        "# #[tokio::main(flavor = \"current_thread\")]",
        "# async fn main() {"
    ],
    close: "# }"
);

/// The tokio face's alarm: one `tokio::time::Sleep`, which needs the
/// runtime's timer.
struct TokioAlarm(Pin<Box<Sleep>>);

impl QueueAlarm for TokioAlarm {
    fn now() -> std::time::Instant {
        Instant::now().into_std()
    }

    fn armed_at(at: std::time::Instant) -> TokioAlarm {
        // The first call that needs the runtime (inserts and resets never
        // do): fail here, saying what is missing, rather than with
        // tokio's own "no reactor running", which names neither the queue
        // nor what to use instead.
        if tokio::runtime::Handle::try_current().is_err() {
            panic!("{NO_RUNTIME}");
        }
        TokioAlarm(Box::pin(tokio::time::sleep_until(Instant::from_std(at))))
    }

    fn reset(&mut self, at: std::time::Instant) {
        self.0.as_mut().reset(Instant::from_std(at));
    }

    fn poll_alarm(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        std::future::Future::poll(self.0.as_mut(), cx)
    }
}

/// The panic of a queue polled outside a tokio runtime.
const NO_RUNTIME: &str = "hashwheel::DelayQueue polled outside a tokio runtime: it waits on \
     tokio's timer, so poll it from a task of a runtime with its time driver enabled; \
     on another executor (smol, futures, a plain thread) use hashwheel::async_io::DelayQueue \
     (feature `thread`), which needs no runtime";
