// Floor 1, the wheel (docs/ARCHITECTURE.md): it imports nothing of the
// crate.
//! The hashed wheel on its own: no clock, no runtime, no lock.
//!
//! [`Wheel`] is the data structure under hashwheel's `Timer` and
//! `DelayQueue` (feature `tokio`), for event loops that tokio does not
//! drive: mio or io_uring loops, game and simulation loops, embedded
//! schedulers. Time is a tick number that you choose and feed in: insert a
//! value at a tick and get a [`Key`]; [`remove`](Wheel::remove) or
//! [`reset`](Wheel::reset) it by key; ask for the [next tick with
//! work](Wheel::next_tick) to know how long to sleep; and take out what is
//! due with [`poll`](Wheel::poll). It builds without tokio
//! (`default-features = false`), with no dependency at all.
//!
//! # Ticks
//!
//! A tick is whatever unit suits the loop (a millisecond, a frame, a
//! simulation step), counted from zero. To never fire early, round a
//! deadline *up* to its tick and the clock *down* to the tick that has begun,
//! as below. A tick at or before the last one polled is due at once: the
//! next [`poll`](Wheel::poll) takes it out whatever tick it is given.
//! Ticks past [`MAX_TICK`] never come due (2^62 ticks: over 146,000 years
//! of microseconds); such entries stay until removed.
//!
//! # Keys
//!
//! A [`Key`] names one entry for as long as it is in the wheel, and never
//! another. Each carries a 64-bit generation that no other key of the
//! process has had: generations come from one process-wide counter, handed
//! to each wheel in blocks (16 at first, doubling up to 4,096). So a stale
//! key (its entry removed or polled out, the wheel cleared) or a key of
//! another wheel never reaches the entry that reuses its slot, however many
//! wheels the process makes and entries it inserts:
//! [`remove`](Wheel::remove), [`get`](Wheel::get) and [`tick`](Wheel::tick)
//! return `None` and [`reset`](Wheel::reset) returns `false`. The counter
//! would run out after 2^64 generations (2^60 wheels, or centuries of
//! inserts at any rate a machine reaches); should it ever, `insert` panics
//! rather than hand one out again.
//!
//! # Cost
//!
//! | operation | cost |
//! |---|---|
//! | [`insert`](Wheel::insert), [`remove`](Wheel::remove), [`reset`](Wheel::reset) | O(1): a slot of the store and a list push or unlink; an insert allocates at most one page of 256 entries (and, once every 262,144 entries, an 8 KiB chunk of the page directory) and never copies anything |
//! | [`poll`](Wheel::poll) | O(1) per entry taken out; empty ticks and rounds are skipped with occupancy bit sets |
//! | [`next_tick`](Wheel::next_tick) | O(1), plus a look at up to 64 entries of the next round's ring slot |
//! | [`peek`](Wheel::peek) | O(1) while the current round has entries; else a scan of ring slots |
//! | [`compact`](Wheel::compact) | O(len) |
//!
//! An entry takes 24 bytes plus the value, rounded up to 8 (24 in all for
//! `()`, 32 for a `u64`) in the wheel's store, and a key is 12 bytes
//! (`Option<Key>` too). The store keeps entries in pages (64, 64 and
//! 128 entries, then 256 each) that are allocated as the wheel
//! grows and never moved, reached through a directory of fixed-size chunks
//! (8 KiB each, never a table that doubles), so memory follows the entry
//! count to within a page and no insert stalls on a copy at any size. The
//! wheel itself is two arrays of `u32` list heads, buckets and ring slots
//! (2 KiB each by default), and the directory's first level, 2.5 KiB.
//!
//! # Examples
//!
//! A plain thread driving the wheel from [`std::time::Instant`], 1 ms ticks:
//!
//! ```
//! use hashwheel::wheel::Wheel;
//! use std::time::{Duration, Instant};
//!
//! let start = Instant::now();
//! // Deadlines round up to the tick, the clock rounds down: never early.
//! let tick_of = |at: Instant| at.duration_since(start).as_nanos().div_ceil(1_000_000) as u64;
//! let now_tick = || start.elapsed().as_millis() as u64;
//!
//! let mut wheel = Wheel::new();
//! wheel.insert(tick_of(Instant::now() + Duration::from_millis(5)), "five");
//! let two = wheel.insert(tick_of(Instant::now() + Duration::from_millis(2)), "two");
//! let gone = wheel.insert(tick_of(Instant::now() + Duration::from_millis(3)), "gone");
//! assert_eq!(wheel.remove(gone), Some("gone"));
//! assert_eq!(wheel.remove(gone), None, "a stale key does nothing");
//!
//! let mut fired = Vec::new();
//! while !wheel.is_empty() {
//!     // Sleep until the next tick with work (an I/O loop would use it as
//!     // its poll timeout), then take out everything due.
//!     if let Some(next) = wheel.next_tick() {
//!         let at = start + Duration::from_millis(next);
//!         std::thread::sleep(at.saturating_duration_since(Instant::now()));
//!     }
//!     while let Some(expired) = wheel.poll(now_tick()) {
//!         assert!(expired.tick <= now_tick(), "never early");
//!         fired.push((expired.key, expired.value));
//!     }
//! }
//! assert_eq!(fired, [(two, "two"), (fired[1].0, "five")]);
//! ```

mod bitset;
pub(crate) mod dir;
#[cfg(any(test, fuzzing))]
pub(crate) mod keyed_model;
pub(crate) mod keys;
#[cfg(any(test, fuzzing))]
pub(crate) mod model;
pub(crate) mod raw;
pub(crate) mod store;
#[cfg(any(test, fuzzing))]
pub(crate) mod store_model;

use std::fmt;
use std::num::NonZeroU32;

use keys::Keys;

/// The last tick that comes due: 2^62 − 3. Entries at later ticks never
/// come due; [`Wheel::tick`] reads them back as `u64::MAX`.
pub const MAX_TICK: u64 = raw::NEVER - 2;

/// The default number of buckets (ticks in one turn of the wheel) and of
/// round ring slots (turns of the wheel the ring covers).
const DEFAULT_SLOTS: usize = 512;

/// A hashed wheel of `T` values due at ticks, with generation-checked keys.
///
/// See the [module docs](self) for ticks, keys and costs.
///
/// # Examples
///
/// ```
/// use hashwheel::wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let a = wheel.insert(10, 'a');
/// let b = wheel.insert(3, 'b');
/// assert!(wheel.reset(a, 2));
///
/// assert!(wheel.poll(1).is_none());
/// assert_eq!(wheel.poll(5).map(|e| (e.key, e.value)), Some((a, 'a')));
/// assert_eq!(wheel.poll(5).map(|e| (e.key, e.tick)), Some((b, 3)));
/// assert!(wheel.poll(5).is_none());
/// assert!(wheel.is_empty());
/// ```
pub struct Wheel<T> {
    raw: raw::Wheel<Slot<T>>,
    /// Its keys' generations, and where `compact` moved their entries.
    keys: Keys,
}

/// What the wheel stores per entry: the value and its key's generation.
struct Slot<T> {
    generation: Generation,
    value: T,
}

/// A 64-bit generation as two halves, so that a [`Key`] is 12 bytes aligned
/// to 4 (a `u64` would make it 16) and a slot of `()` still fits the raw
/// wheel's 24-byte entry. The low half is never zero, which leaves
/// `Option<Key>` a niche.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Generation {
    high: u32,
    low: NonZeroU32,
}

impl Generation {
    /// `None` for the generations whose low half is zero: never handed out.
    fn new(generation: u64) -> Option<Generation> {
        let low = NonZeroU32::new(generation as u32)?;
        Some(Generation {
            high: (generation >> 32) as u32,
            low,
        })
    }
}

/// Names one entry of a [`Wheel`] while it is in the wheel.
///
/// Twelve bytes; `Option<Key>` too. No two keys handed out in one process
/// are equal, so a key whose entry has left (removed, polled out, cleared)
/// or that belongs to another wheel never names another entry: see the
/// [module docs](self#keys). Keys order arbitrarily (by slot), so they can
/// go in a `BTreeMap`.
///
/// # Examples
///
/// ```
/// use hashwheel::wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let key = wheel.insert(5, "a");
/// assert_eq!(wheel.remove(key), Some("a"));
/// let reused = wheel.insert(5, "b"); // may reuse the slot
/// assert_ne!(key, reused);
/// assert_eq!(wheel.get(key), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    index: u32,
    generation: Generation,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let generation =
            u64::from(self.generation.high) << 32 | u64::from(self.generation.low.get());
        f.debug_struct("Key")
            .field("index", &self.index)
            .field("generation", &generation)
            .finish()
    }
}

/// An entry that [`Wheel::poll`] took out of the wheel.
///
/// # Examples
///
/// ```
/// let mut wheel = hashwheel::wheel::Wheel::new();
/// let key = wheel.insert(7, "value");
/// let expired = wheel.poll(7).unwrap();
/// assert_eq!((expired.key, expired.tick, expired.value), (key, 7, "value"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expired<T> {
    /// The key the entry had.
    pub key: Key,
    /// The tick it was due at (earlier than the tick polled if it was
    /// inserted or reset at a tick already polled).
    pub tick: u64,
    /// Its value.
    pub value: T,
}

/// The raw wheel's tick for tick `tick`: one later, so that tick 0 is not
/// processed when the wheel is new (the raw wheel starts with tick 0 done).
#[inline]
fn raw_tick(tick: u64) -> u64 {
    tick.saturating_add(1).min(raw::NEVER)
}

#[inline]
fn public_tick(raw: u64) -> u64 {
    if raw >= raw::NEVER {
        u64::MAX
    } else {
        raw - 1
    }
}

impl<T> Wheel<T> {
    /// An empty wheel of 512 buckets and a round ring of 512 slots: ticks in
    /// the next 512 go straight to their bucket, the next 512 × 512 wait in
    /// the ring. It allocates no entries until the first insert.
    ///
    /// # Examples
    ///
    /// ```
    /// let wheel: hashwheel::wheel::Wheel<u32> = hashwheel::wheel::Wheel::new();
    /// assert!(wheel.is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Wheel<T> {
        Wheel::with_shape(DEFAULT_SLOTS, DEFAULT_SLOTS)
    }

    /// An empty wheel of `buckets` buckets and a round ring of `ring` slots.
    ///
    /// One turn of the wheel is `buckets` ticks; entries due within the
    /// current turn sit in their bucket, later ones in the ring slot of their
    /// turn, and move to their bucket when that turn begins. Entries more
    /// than `buckets × ring` ticks away are looked at once per turn of the
    /// ring, so size that span to cover most deadlines. Each bucket and
    /// slot costs 4 bytes.
    ///
    /// # Panics
    ///
    /// If `buckets` or `ring` is not a power of two.
    ///
    /// # Examples
    ///
    /// ```
    /// // 1 ms ticks: one turn is 1.024 s, the ring covers 17.5 minutes.
    /// let wheel: hashwheel::wheel::Wheel<()> = hashwheel::wheel::Wheel::with_shape(1024, 1024);
    /// # drop(wheel);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shape(buckets: usize, ring: usize) -> Wheel<T> {
        assert!(
            buckets.is_power_of_two() && ring.is_power_of_two(),
            "hashwheel: a wheel's buckets ({buckets}) and ring slots ({ring}) must be powers of two"
        );
        Wheel {
            raw: raw::Wheel::new(buckets, ring),
            keys: Keys::new(),
        }
    }

    /// Inserts `value` due at `tick` and returns its key. A tick at or before
    /// the last one polled is due at once.
    ///
    /// # Panics
    ///
    /// If the wheel already holds `u32::MAX - 3` entries.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// assert!(wheel.poll(100).is_none());
    /// let late = wheel.insert(50, "late"); // tick 100 was polled: due at once
    /// assert_eq!(wheel.poll(100).map(|e| e.key), Some(late));
    /// ```
    #[track_caller]
    pub fn insert(&mut self, tick: u64, value: T) -> Key {
        let generation = self.generation();
        let index = self
            .raw
            .insert_due(raw_tick(tick), Slot { generation, value });
        Key { index, generation }
    }

    /// Removes the entry `key` names and returns its value; `None` if the
    /// key is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, "a");
    /// assert_eq!(wheel.remove(key), Some("a"));
    /// assert_eq!(wheel.remove(key), None);
    /// ```
    pub fn remove(&mut self, key: Key) -> Option<T> {
        self.remove_entry(key).map(|expired| expired.value)
    }

    /// Removes the entry `key` names and returns it whole, with its key as
    /// handed out and its tick; `None` if the key is stale.
    #[cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]
    #[inline]
    pub(crate) fn remove_entry(&mut self, key: Key) -> Option<Expired<T>> {
        // One store lookup on the common path: the key names its slot.
        let same = |slot: &Slot<T>| slot.generation == key.generation;
        let (tick, slot) = match self.raw.remove_if(key.index, same) {
            Some(removed) => removed,
            None => {
                let at = self.find(key)?;
                let tick = self.raw.tick(at);
                (tick, self.raw.remove(at).1)
            }
        };
        self.forget(slot.generation);
        Some(Expired {
            key,
            tick: public_tick(tick),
            value: slot.value,
        })
    }

    /// Moves the entry `key` names to `tick` (due at once if `tick` is at or
    /// before the last tick polled). Returns `false`, and does nothing, if
    /// the key is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, "a");
    /// assert!(wheel.reset(key, 50));
    /// assert!(wheel.poll(10).is_none());
    /// assert_eq!(wheel.tick(key), Some(50));
    /// ```
    pub fn reset(&mut self, key: Key, tick: u64) -> bool {
        match self.find(key) {
            Some(at) => {
                self.raw.reset_due(at, raw_tick(tick));
                true
            }
            None => false,
        }
    }

    /// Takes out the next entry due at or before `now`: entries due at once
    /// first, then by tick. Entries of one tick come out **last in, first
    /// out** (as tokio-util's do; [`peek`](Self::peek) gives the same
    /// order): keep a sequence number in the value if your loop needs
    /// insertion order. Returns `None` once nothing more is due; call it
    /// until then.
    ///
    /// `now` only moves forward: a `now` below one already polled polls that
    /// one again.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// wheel.insert(2, "b");
    /// wheel.insert(1, "a");
    /// wheel.insert(9, "c");
    /// let due: Vec<_> = std::iter::from_fn(|| wheel.poll(5)).map(|e| e.value).collect();
    /// assert_eq!(due, ["a", "b"]);
    /// ```
    pub fn poll(&mut self, now: u64) -> Option<Expired<T>> {
        let (at, tick, slot) = self.raw.pop_due(raw_tick(now))?;
        let key = self.key_of(at, slot.generation);
        self.forget(slot.generation);
        Some(Expired {
            key,
            tick: public_tick(tick),
            value: slot.value,
        })
    }

    /// The next tick with work: [`poll`](Self::poll) takes out nothing before
    /// it. `None` when nothing can come due (the wheel is empty, or holds
    /// only entries past [`MAX_TICK`]).
    ///
    /// It is exact when the next entry is due in the current turn of the
    /// wheel, or in the next occupied ring slot when that slot is short
    /// (64 entries or fewer); otherwise it is the start of that ring slot's
    /// turn, where a poll moves the entries on and finds the exact tick.
    /// With entries due at once it is the last tick polled. Takes `&mut self`
    /// to forget lists that emptied, so that the loop is not woken for them.
    ///
    /// It may be **early, with nothing due**: when the next entry is more
    /// than a turn of the wheel away and its ring slot holds over 64
    /// entries (the start of that slot's turn), and for entries more than
    /// `buckets × ring` ticks away (those share ring slots with nearer
    /// turns: a loop that sleeps until `next_tick` wakes for them once per
    /// turn of the ring, polls nothing, and asks again). It is never late.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// assert_eq!(wheel.next_tick(), None);
    /// wheel.insert(40, ());
    /// wheel.insert(700, ());
    /// assert_eq!(wheel.next_tick(), Some(40));
    /// ```
    pub fn next_tick(&mut self) -> Option<u64> {
        // The raw wheel says `elapsed` (at least 1 then) for entries due at once.
        self.raw
            .next_expiration()
            .map(|tick| tick.saturating_sub(1))
    }

    /// The key of the entry [`poll`](Self::poll) takes out next once its
    /// tick comes, without taking it out: the one with the earliest tick.
    ///
    /// O(1) while the current turn of the wheel has entries; otherwise it
    /// scans ring slots (every entry, when all are a turn of the ring or
    /// more away).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// wheel.insert(10, "foo");
    /// let bar = wheel.insert(5, "bar");
    /// wheel.insert(15, "baz");
    /// assert_eq!(wheel.peek(), Some(bar));
    /// ```
    #[must_use]
    pub fn peek(&self) -> Option<Key> {
        let at = self.raw.peek()?;
        let generation = self.raw.get(at)?.generation;
        Some(self.key_of(at, generation))
    }

    /// The tick of the entry `key` names (`u64::MAX` past [`MAX_TICK`]);
    /// `None` if the key is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, ());
    /// assert_eq!(wheel.tick(key), Some(5));
    /// ```
    #[must_use]
    pub fn tick(&self, key: Key) -> Option<u64> {
        let at = self.find(key)?;
        Some(public_tick(self.raw.tick(at)))
    }

    /// The value of the entry `key` names; `None` if the key is stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, "a");
    /// assert_eq!(wheel.get(key), Some(&"a"));
    /// ```
    #[must_use]
    pub fn get(&self, key: Key) -> Option<&T> {
        let at = self.find(key)?;
        self.raw.get(at).map(|slot| &slot.value)
    }

    /// The value of the entry `key` names, mutably; `None` if the key is
    /// stale.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, 1);
    /// *wheel.get_mut(key).unwrap() += 1;
    /// assert_eq!(wheel.get(key), Some(&2));
    /// ```
    #[must_use]
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let at = self.find(key)?;
        self.raw.get_mut(at).map(|slot| &mut slot.value)
    }

    /// Whether `key` names an entry of this wheel.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, ());
    /// assert!(wheel.contains(key));
    /// wheel.clear();
    /// assert!(!wheel.contains(key));
    /// ```
    #[must_use]
    pub fn contains(&self, key: Key) -> bool {
        self.find(key).is_some()
    }

    /// How many entries the wheel holds.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// wheel.insert(5, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.raw.entries()
    }

    /// The tick the wheel has been polled up to: an entry inserted or reset
    /// at or before it is due at once. `None` before the first
    /// [`poll`](Self::poll) (or while every poll has stopped at an entry
    /// due at tick 0). [`clear`](Self::clear) keeps it.
    ///
    /// A poll that returns an entry may leave it short of the `now` it was
    /// given (at the entry's tick); the poll that returns `None` brings it
    /// to `now`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::<()>::new();
    /// assert_eq!(wheel.elapsed(), None);
    /// assert!(wheel.poll(42).is_none());
    /// assert_eq!(wheel.elapsed(), Some(42));
    /// ```
    #[must_use]
    pub fn elapsed(&self) -> Option<u64> {
        self.raw.elapsed().checked_sub(1)
    }

    /// Whether the wheel holds no entry.
    ///
    /// # Examples
    ///
    /// ```
    /// let wheel: hashwheel::wheel::Wheel<()> = hashwheel::wheel::Wheel::new();
    /// assert!(wheel.is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.raw.entries() == 0
    }

    /// How many entries the wheel holds without allocating.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel: hashwheel::wheel::Wheel<()> = hashwheel::wheel::Wheel::new();
    /// wheel.reserve(10);
    /// assert!(wheel.capacity() >= 10);
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// Makes room for at least `additional` more entries.
    ///
    /// # Panics
    ///
    /// If the wheel would hold more than `u32::MAX - 3` entries. An
    /// allocation that fails aborts the process, as `Vec::reserve`'s does
    /// (at once where the room could never be had: it is asked for in one
    /// allocation first).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel: hashwheel::wheel::Wheel<()> = hashwheel::wheel::Wheel::new();
    /// wheel.reserve(100);
    /// assert!(wheel.capacity() >= 100);
    /// ```
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        assert!(
            self.len().saturating_add(additional) <= raw::MAX_ENTRIES,
            "hashwheel: a wheel cannot hold more than {} entries",
            raw::MAX_ENTRIES
        );
        self.raw.reserve(additional);
    }

    /// Gives back the memory of free slots at the end of the store, in
    /// whole pages of 256 past the first 256 slots (all of it when the
    /// wheel is empty). Entries do not move; see
    /// [`compact`](Self::compact) for that.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let keys: Vec<_> = (0..100).map(|t| wheel.insert(t, ())).collect();
    /// for key in keys {
    ///     wheel.remove(key);
    /// }
    /// wheel.shrink_to_fit();
    /// assert_eq!(wheel.capacity(), 0);
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.raw.shrink();
        self.keys.shrink_to_fit();
    }

    /// Moves entries into free slots and gives back the rest of the store, so
    /// that the capacity is the length (in whole pages of 256 entries
    /// past the first 256). Keys stay valid: the wheel remembers
    /// where each moved entry went (in a map that empties as those entries
    /// leave). O(len).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let keys: Vec<_> = (0..10).map(|t| wheel.insert(t, t)).collect();
    /// for &key in &keys[..9] {
    ///     wheel.remove(key);
    /// }
    /// wheel.compact();
    /// assert_eq!(wheel.capacity(), 1);
    /// assert_eq!(wheel.remove(keys[9]), Some(9));
    /// ```
    pub fn compact(&mut self) {
        let keys = &mut self.keys;
        self.raw
            .compact(|slot, from, to| keys.moved(slot.generation, from, to));
        self.raw.shrink();
    }

    /// Removes every entry, keeping the capacity. Every key becomes stale.
    ///
    /// It keeps the cursor: the ticks already polled stay polled (see
    /// [`elapsed`](Self::elapsed)), so once the wheel has been polled up to
    /// tick 1,000 an entry inserted at tick 500 is still due at once. Make a
    /// new wheel to start again from tick 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut wheel = hashwheel::wheel::Wheel::new();
    /// let key = wheel.insert(5, "a");
    /// while wheel.poll(1_000).is_some() {}
    /// wheel.clear();
    /// assert!(wheel.is_empty() && wheel.get(key).is_none());
    /// assert_eq!(wheel.elapsed(), Some(1_000));
    /// wheel.insert(500, "due at once");
    /// assert!(wheel.poll(10).is_some());
    /// ```
    pub fn clear(&mut self) {
        self.keys.clear_moved();
        self.raw.clear();
    }

    /// A generation no key of this process has had (see [`Keys`]).
    #[track_caller]
    fn generation(&mut self) -> Generation {
        self.keys.generation()
    }

    /// Where the entry `key` names is, if it is in this wheel.
    fn find(&self, key: Key) -> Option<u32> {
        self.keys
            .find(key, |at| self.raw.get(at).map(|slot| slot.generation))
    }

    /// The key of the entry at `at`.
    fn key_of(&self, at: u32, generation: Generation) -> Key {
        self.keys.key_of(at, generation)
    }

    /// The entry of `generation` left the wheel.
    fn forget(&mut self, generation: Generation) {
        self.keys.forget(generation);
    }
}

impl Key {
    /// The slot the key names (where its entry was inserted).
    #[cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]
    #[inline]
    pub(crate) fn index(self) -> u32 {
        self.index
    }

    /// The generation of the entry the key names.
    #[cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]
    #[inline]
    pub(crate) fn generation(self) -> Generation {
        self.generation
    }
}

impl<T> Default for Wheel<T> {
    fn default() -> Wheel<T> {
        Wheel::new()
    }
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_twelve_bytes_and_leaves_a_niche() {
        assert_eq!(std::mem::size_of::<Key>(), 12);
        assert_eq!(std::mem::size_of::<Option<Key>>(), 12);
        // A slot of `()` fits the raw wheel's entry with its 64-bit
        // generation: the `DelayQueue<()>` of benchmark Q2 stays 24 bytes.
        assert_eq!(std::mem::size_of::<Slot<()>>(), 8);
    }

    #[test]
    fn generations_skip_a_zero_low_half() {
        assert!(Generation::new(0).is_none());
        assert!(Generation::new(1 << 32).is_none());
        let g = Generation::new((7 << 32) | 5).unwrap();
        assert_eq!((g.high, g.low.get()), (7, 5));
    }

    #[test]
    fn generations_skip_zero_and_differ_across_wheels() {
        let mut a = Wheel::<()>::new();
        let mut b = Wheel::<()>::new();
        let ka = a.insert(1, ());
        let kb = b.insert(1, ());
        assert_eq!(ka.index, kb.index);
        assert_ne!(ka, kb);
        assert!(!b.contains(ka) && !a.contains(kb));
    }
}
