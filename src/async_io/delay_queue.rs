//! [`DelayQueue`] on any executor: the keyed delay queue of
//! [`hashwheel::DelayQueue`][DelayQueue_link] (tokio-util's API) on std's
//! clock and the process's thread-driven timer, with no tokio.
//!
//! See [`DelayQueue`] for the details.
#![cfg_attr(feature = "tokio", doc = "", doc = "[DelayQueue_link]: crate::DelayQueue")]
#![cfg_attr(not(feature = "tokio"), doc = "", doc = "[DelayQueue_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.DelayQueue.html")]

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

use crate::delay::Delay;
pub use crate::queue::Key;
use crate::queue::{delay_queue_common, Entry, Queue, QueueAlarm};

/// A queue of values, each yielded once its deadline has passed, on any
/// executor: [`hashwheel::DelayQueue`][DelayQueue_link] without tokio.
///
/// The same methods as tokio-util's `DelayQueue` (and hashwheel's, which
/// shares this one's code): insert a value with [`insert`](Self::insert) or
/// [`insert_at`](Self::insert_at) and keep its [`Key`];
/// [`remove`](Self::remove) or [`reset`](Self::reset) it by key; take out
/// what expired through [`poll_expired`](Self::poll_expired) or the
/// [`Stream`] of [`Expired`] items. Instants are std's
/// [`Instant`]. One owner (`&mut self`), no lock, no
/// driver task: the queue wakes its task through one entry on the
/// process-wide thread-driven timer of [`Delay`], armed at
/// its next deadline. It needs no runtime: smol, `futures`' executors, a
/// plain thread's `block_on`, tokio too (where tokio's paused time does not
/// move it; use [`hashwheel::DelayQueue`][DelayQueue_link] there for
/// that).
///
/// # Timing
///
/// As [`hashwheel::DelayQueue`'s][DelayQueue_link]: tokio-util's wheel,
/// its millisecond and its order. An item never comes out before its
/// deadline: it comes out within tens of microseconds after its
/// millisecond (the thread-driven timer's 50 µs tick and its thread's
/// wake-up), on an executor that polls the task at once. An item whose
/// deadline has already passed when it is inserted (or reset) comes out on
/// the next poll. Deadlines years away work, never early, and none panics:
/// a delay over about 30 years (`Duration::MAX`) is capped there, as
/// `Timer::sleep`'s; an instant more than 146 million years away never
/// comes out.
///
/// # Keys
///
/// As [`hashwheel::DelayQueue`'s][keys_link]: a stale key, or one from
/// another queue, never reaches another item.
/// [`try_remove`](Self::try_remove) and [`try_deadline`](Self::try_deadline)
/// return `None` for it, and [`remove`](Self::remove),
/// [`deadline`](Self::deadline), [`reset`](Self::reset) and
/// [`reset_at`](Self::reset_at) panic with a message saying so.
///
/// # fork
///
/// The queue waits on a [`Delay`], which moves to a forked
/// child's own default timer at its first poll there: a queue polled in
/// the child works as in the parent.
///
/// # Examples
///
/// An expiring session table, purged by the task that owns it:
///
/// ```
/// use futures_lite::StreamExt;
/// use hashwheel::async_io::delay_queue::{DelayQueue, Key};
/// use std::collections::HashMap;
/// use std::time::Duration;
///
/// struct Sessions {
///     users: HashMap<u64, (String, Key)>,
///     expirations: DelayQueue<u64>,
/// }
///
/// const TTL: Duration = Duration::from_millis(20);
///
/// impl Sessions {
///     fn open(&mut self, id: u64, user: String) {
///         let expiry = self.expirations.insert(id, TTL);
///         if let Some((_, old)) = self.users.insert(id, (user, expiry)) {
///             self.expirations.remove(&old);
///         }
///     }
///
///     fn touch(&mut self, id: u64) -> Option<&String> {
///         let (user, expiry) = self.users.get(&id)?;
///         self.expirations.reset(expiry, TTL);
///         Some(user)
///     }
/// }
///
/// # futures_lite::future::block_on(async {
/// let mut sessions = Sessions { users: HashMap::new(), expirations: DelayQueue::new() };
/// sessions.open(1, "ada".into());
/// sessions.open(2, "brian".into());
/// assert!(sessions.touch(1).is_some());
/// // Both expire, and the table's owner removes them as they do.
/// while let Some(expired) = sessions.expirations.next().await {
///     sessions.users.remove(expired.get_ref());
/// }
/// assert!(sessions.users.is_empty());
/// # });
/// ```
#[cfg_attr(feature = "tokio", doc = "", doc = "[keys_link]: crate::DelayQueue#keys")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[keys_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.DelayQueue.html#keys")]
#[cfg_attr(feature = "tokio", doc = "", doc = "[DelayQueue_link]: crate::DelayQueue")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[DelayQueue_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.DelayQueue.html")]
pub struct DelayQueue<T> {
    queue: Queue<T, Delay>,
}

/// An item taken out of a [`DelayQueue`]: expired, or removed.
///
/// # Examples
///
/// ```
/// # futures_lite::future::block_on(async {
/// use futures_lite::StreamExt;
/// use hashwheel::async_io::DelayQueue;
/// use std::time::Duration;
///
/// let mut queue = DelayQueue::new();
/// let key = queue.insert("foo", Duration::from_millis(5));
/// let mut expired = queue.next().await.unwrap();
/// assert_eq!(expired.key(), key);
/// expired.get_mut().to_string();
/// assert_eq!(*expired.get_ref(), "foo");
/// assert!(expired.deadline() <= std::time::Instant::now());
/// assert_eq!(expired.into_inner(), "foo");
/// # });
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
        self.entry.deadline()
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
    /// needs no runtime, ever.
    ///
    /// # Examples
    ///
    /// ```
    /// let queue: hashwheel::async_io::DelayQueue<u32> = hashwheel::async_io::DelayQueue::new();
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
    /// let queue: hashwheel::async_io::DelayQueue<u32> = hashwheel::async_io::DelayQueue::with_capacity(10);
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert_at("foo", Instant::now() + Duration::from_secs(5));
    /// assert_eq!(*queue.remove(&key).get_ref(), "foo");
    /// # });
    /// ```
    #[track_caller]
    pub fn insert_at(&mut self, value: T, when: Instant) -> Key {
        self.queue.insert_at(value, when)
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(*queue.remove(&key).get_ref(), "foo");
    /// # });
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
    /// At the first poll that waits in a process, if the default timer's
    /// thread (or, on Linux, its timerfd) cannot be created (as
    /// [`Delay::new`](crate::Delay::new)).
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// queue.insert("b", Duration::from_millis(20));
    /// queue.insert("a", Duration::from_millis(10));
    /// let first = poll_fn(|cx| queue.poll_expired(cx)).await.unwrap();
    /// assert_eq!(first.into_inner(), "a");
    /// # });
    /// ```
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// queue.insert("foo", Duration::from_secs(10));
    /// let bar = queue.insert("bar", Duration::from_secs(5));
    /// queue.insert("baz", Duration::from_secs(15));
    /// assert_eq!(queue.peek(), Some(bar));
    /// # });
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let a = queue.insert("a", Duration::from_secs(5));
    /// let b = queue.insert("b", Duration::from_secs(10));
    /// assert!(queue.deadline(&a) < queue.deadline(&b));
    /// # });
    /// ```
    #[must_use]
    #[track_caller]
    pub fn deadline(&self, key: &Key) -> Instant {
        self.queue.deadline(key)
    }

    /// The deadline of the item `key` names, as [`deadline`](Self::deadline);
    /// `None` if the key names no item of this queue (hashwheel only:
    /// tokio-util has no such method).
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let a = queue.insert("a", Duration::from_secs(5));
    /// assert_eq!(queue.try_deadline(&a), Some(queue.deadline(&a)));
    /// queue.remove(&a);
    /// assert_eq!(queue.try_deadline(&a), None);
    /// # });
    /// ```
    #[must_use]
    pub fn try_deadline(&self, key: &Key) -> Option<Instant> {
        self.queue.try_deadline(key)
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(*queue.remove(&key).get_ref(), "foo");
    /// # });
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(queue.try_remove(&key).unwrap().into_inner(), "foo");
    /// assert!(queue.try_remove(&key).is_none());
    /// # });
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// let when = Instant::now() + Duration::from_secs(10);
    /// queue.reset_at(&key, when);
    /// assert!(queue.deadline(&key) >= when);
    /// # });
    /// ```
    #[track_caller]
    pub fn reset_at(&mut self, key: &Key, when: Instant) {
        self.queue.reset_at(key, when);
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
    /// # futures_lite::future::block_on(async {
    /// use hashwheel::async_io::DelayQueue;
    /// use std::time::Duration;
    ///
    /// let mut queue = DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// queue.reset(&key, Duration::from_secs(10)); // now due in 10 s
    /// # });
    /// ```
    #[track_caller]
    pub fn reset(&mut self, key: &Key, timeout: Duration) {
        self.queue.reset(key, timeout);
    }
}

delay_queue_common!(
    path: "hashwheel::async_io::DelayQueue",
    open: ["# futures_lite::future::block_on(async {"],
    close: "# });"
);

/// The executor-free face's alarm: a [`Delay`] on the process's
/// thread-driven timer (which a forked child moves to its own).
impl QueueAlarm for Delay {
    fn now() -> Instant {
        Instant::now()
    }

    fn armed_at(at: Instant) -> Delay {
        Delay::until(at)
    }

    fn reset(&mut self, at: Instant) {
        self.reset_at(at, 1);
    }

    fn poll_alarm(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_timer(cx)
    }
}
