//! The wheel's core, shared by the timer's shards and the public
//! [`Wheel`](super::Wheel): a pure data structure driven by a tick number.
//!
//! No clock, no tokio, no locks: the timer wraps one `Wheel` per shard in a
//! mutex and the driver feeds it the current tick; the public wheel adds
//! generation-checked keys on top. That keeps it unit-testable and fuzzable
//! on its own.
//!
//! # Layout
//!
//! Entries live in a [`Store`] (pages that never move, see [`super::store`]);
//! every bucket is a doubly linked list threaded through the store by key (no pointers, no `unsafe`). Ticks are grouped into
//! *rounds* of `buckets` ticks (one turn of the wheel).
//!
//! * **Buckets** (level 0) hold the entries due in the current round and in
//!   the `window - 1` rounds after it (a window of one round for
//!   [`new`](Wheel::new)), in bucket `tick % (buckets * window)`. Every entry
//!   in a bucket is due when the cursor reaches it: a turn visits only what
//!   expires. An entry re-armed less than `window - 1` rounds ahead (an
//!   interval's next beat) goes straight into its bucket, never through the
//!   ring.
//! * **The round ring** (level 1) holds the entries due in later rounds, in
//!   slot `round % ring`. When the cursor enters round `r`, slot
//!   `(r + window - 1) % ring` is walked once and its entries for that round
//!   move into their buckets. The
//!   remaining rounds of an entry are therefore counted by the ring instead of
//!   being decremented on every pass (which costs Netty's wheel a visit of
//!   every entry on every turn); entries more than one ring away stay put and
//!   are looked at once per turn of the ring.
//! * **Never**: entries at or past [`NEVER`] sit on a list of their own.
//! * **Due**: entries linked at a tick already processed sit on a list of
//!   their own and come out first. Only the public wheel puts entries there
//!   ([`insert_due`](Wheel::insert_due), [`reset_due`](Wheel::reset_due));
//!   the timer's [`insert`](Wheel::insert) moves a past tick to the next one.
//!
//! Insert, cancel and reset are O(1). Finding the next occupied bucket or
//! slot uses an occupancy [`BitSet`] per level. A bit may be stale (set for
//! a list that has since emptied): unlinking never clears bits, which keeps
//! cancel from touching the bit set; whoever finds a stale bit while
//! searching clears it.
//!
//! A reset that keeps an entry in the same list (a ring slot: the same
//! round) only rewrites its tick.
//!
//! Entries due at the same tick come out in a fixed order: a bucket pops its
//! head first, and the ring keeps the order of an entry's slot across turns
//! (see [`cascade`](Wheel::cascade)), so [`peek`](Wheel::peek) can tell which
//! entry comes out next without moving anything. A bucket and the due list
//! take new entries at their head (last in, first out, as tokio-util's
//! queue does), or, in a wheel [`in_link_order`](Wheel::in_link_order) (the
//! timer's shards), at their end (first in, first out).
//!
//! # Invariants
//!
//! * `elapsed` is the last tick processed: every linked entry not on the due
//!   list has `tick > elapsed`; every entry on it has `tick <= elapsed`.
//! * Level 0 holds exactly the linked entries with
//!   `round(tick) - round(elapsed + 1) < window`; level 1 those with a later
//!   round.
//! * The state of an entry lives in `prev` while it is unlinked: [`FIRED`]
//!   or [`CANCELLED`].

// What only the timer uses of the wheel's core (its link order, interval
// beats, detached entries, the sparse table) is dead in the wheel-alone
// build (neither `tokio` nor `thread`), and only there.
#![cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]

use std::collections::HashMap;
use std::num::NonZeroU64;

use super::bitset::BitSet;
use super::store::Store;

/// A store key.
pub(crate) type Key = u32;

/// Times at or beyond this are never reached (2^62 units: over 146,000 years
/// of microseconds).
pub(crate) const NEVER: u64 = (1 << 62) - 1;

/// List end.
const NIL: u32 = u32::MAX;
/// `prev` of an entry that fired and is still owned by its handle.
const FIRED: u32 = u32::MAX - 1;
/// `prev` of an entry cancelled by [`Wheel::drain`] and still owned by its handle.
const CANCELLED: u32 = u32::MAX - 2;
/// The largest number of entries, so keys never collide with the markers.
pub(crate) const MAX_ENTRIES: usize = (u32::MAX - 3) as usize;

/// Marks an entry that no handle owns (a scheduled task): it is removed from
/// the store when it fires or is drained.
const DETACHED: u64 = 1 << 63;
/// Marks an owned entry its owner tells apart from the others (the timer's
/// intervals): see [`Wheel::insert_marked`]. Ticks stay below [`NEVER`],
/// so the bit is free.
const MARKED: u64 = 1 << 62;
/// The flags kept beside an entry's tick.
const FLAGS: u64 = DETACHED | MARKED;

/// The state of an entry, as seen by the handle that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Linked in the wheel, waiting for its tick.
    Pending,
    /// Its tick was processed.
    Fired,
    /// Drained by [`Wheel::drain`] (the timer stopped).
    Cancelled,
}

/// What [`Wheel::pop_expired_checked`] does with an owned entry that came
/// due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Fire it.
    Fire,
    /// Its deadline moved later, to this tick: file it there, and go on.
    Refile(u64),
    /// It fired and is re-armed for this tick: file it there, and return
    /// [`Popped::Rearmed`].
    Rearm(u64),
    /// Fire it, keeping its value in the entry: [`Popped::Stalled`].
    Stall,
}

/// What [`Wheel::pop_expired_checked`] took out.
#[derive(Debug)]
pub(crate) enum Popped<T> {
    Expired(Expired<T>),
    /// An owned entry fired and was re-armed; its deadline was this tick.
    Rearmed(u64),
    /// An owned entry fired and stays, fired, with its value ([`Due::Stall`]);
    /// its deadline was this tick.
    Stalled(u64),
}

/// An entry that [`Wheel::pop_expired`] took out of the wheel.
#[derive(Debug)]
pub(crate) struct Expired<T> {
    pub(crate) key: Key,
    pub(crate) detached: bool,
    /// The tick it was filed at: its deadline, for an entry that came due.
    pub(crate) tick: u64,
    /// The value: moved out of a detached entry (which is removed), taken
    /// with [`Default`] from an owned one (which stays, marked fired).
    pub(crate) value: T,
}

#[derive(Debug)]
struct Entry<T> {
    /// The deadline tick, with [`DETACHED`] or'ed in. Never zero: linked
    /// entries are due after tick 0, which gives the store a niche for its tag.
    tick: NonZeroU64,
    next: u32,
    prev: u32,
    value: T,
}

impl<T> Entry<T> {
    fn tick(&self) -> u64 {
        self.tick.get() & !FLAGS
    }

    fn is_detached(&self) -> bool {
        self.tick.get() & DETACHED != 0
    }

    fn set_tick(&mut self, tick: u64) {
        let flags = self.tick.get() & FLAGS;
        self.tick = nonzero(tick | flags);
    }

    fn state(&self) -> State {
        match self.prev {
            FIRED => State::Fired,
            CANCELLED => State::Cancelled,
            _ => State::Pending,
        }
    }
}

#[cold]
#[track_caller]
fn vacant(key: Key) -> ! {
    panic!("hashwheel: no entry at key {key}")
}

#[inline]
fn nonzero(tick: u64) -> NonZeroU64 {
    NonZeroU64::new(tick).unwrap_or(NonZeroU64::MIN)
}

/// Where a linked entry's list head lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Bucket(usize),
    Ring(usize),
    Never,
    /// Linked entries at or before `elapsed`: the due part of a bucket that
    /// was only partly due (see [`Wheel::pop_expired`]), or entries inserted
    /// or reset at a time already processed ([`Wheel::insert_due`]).
    Due,
}

/// One level: list heads and their occupancy.
#[derive(Debug)]
struct Level {
    heads: Box<[u32]>,
    occupied: BitSet,
}

impl Level {
    fn new(len: usize) -> Level {
        Level {
            heads: vec![NIL; len].into_boxed_slice(),
            occupied: BitSet::new(len),
        }
    }
}

/// The heap a level of `len` lists takes: a 4-byte head and an occupancy
/// bit each. A wheel allocates its two levels whole when it is made, for
/// `buckets * window` and `ring` lists (see [`Wheel::with_window`]).
pub(crate) fn level_bytes(len: usize) -> usize {
    len * std::mem::size_of::<u32>() + BitSet::bytes(len)
}

/// A hashed wheel of `T` values keyed by [`Key`].
///
/// Laid out in the order written (`repr(C)`): the scalars every insert and
/// unlink reads, then the levels' list heads, then the store, whose own
/// scalars come before its directory (see [`Store`]); the compiler's order
/// put the store's 2.5 KiB directory first and the rest behind it, over
/// more cache lines than the fields take (W14, issue 47).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Wheel<T> {
    elapsed: u64,
    linked: usize,
    /// Rounds held in level 0, a power of two: its buckets are
    /// `window << shift`.
    window: u64,
    bucket_mask: u64,
    ring_mask: u64,
    /// log2 of the number of buckets in a round.
    shift: u32,
    /// log2 of the time units per bucket (0: one unit per bucket).
    res: u32,
    never: u32,
    /// Head of the [`List::Due`] list.
    due: u32,
    /// Its last entry, as [`tails`](Self::tails).
    due_tail: u32,
    buckets: Level,
    ring: Level,
    /// The last entry of each bucket, where buckets keep their entries in
    /// the order they were linked ([`in_link_order`](Self::in_link_order));
    /// empty otherwise. A tail is kept only while its bucket has entries
    /// (an emptied bucket's is stale until the next link).
    tails: Box<[u32]>,
    entries: Store<Entry<T>>,
}

impl<T> Wheel<T> {
    /// The entry at `key`.
    ///
    /// # Panics
    ///
    /// If `key` is vacant (a bug in the caller: handles own their keys).
    #[inline]
    #[track_caller]
    fn entry(&self, key: Key) -> &Entry<T> {
        match self.entries.get(key) {
            Some(entry) => entry,
            None => vacant(key),
        }
    }

    /// The entry at `key`, as [`entry`](Self::entry).
    #[inline]
    #[track_caller]
    fn entry_mut(&mut self, key: Key) -> &mut Entry<T> {
        match self.entries.get_mut(key) {
            Some(entry) => entry,
            None => vacant(key),
        }
    }

    /// A wheel of `buckets` buckets and a round ring of `ring` slots; both
    /// must be powers of two.
    pub(crate) fn new(buckets: usize, ring: usize) -> Wheel<T> {
        Wheel::with_resolution(buckets, ring, 0)
    }

    /// A wheel whose buckets are `2^res` time units wide: times keep their
    /// full resolution (an entry is due once `now` reaches its own time),
    /// while buckets and rounds span more time.
    pub(crate) fn with_resolution(buckets: usize, ring: usize, res: u32) -> Wheel<T> {
        Wheel::with_window(buckets, ring, res, 1)
    }

    /// A wheel as [`with_resolution`](Self::with_resolution) whose level 0
    /// holds `window` rounds (a power of two): `buckets * window` list
    /// heads, so that an entry re-filed up to `window - 1` rounds ahead
    /// goes straight into its bucket.
    pub(crate) fn with_window(buckets: usize, ring: usize, res: u32, window: usize) -> Wheel<T> {
        assert!(buckets.is_power_of_two() && ring.is_power_of_two() && res < 32);
        assert!(window.is_power_of_two());
        let level0 = buckets
            .checked_mul(window)
            .expect("a wheel's buckets fit a usize");
        Wheel {
            entries: Store::new(),
            buckets: Level::new(level0),
            tails: Box::new([]),
            ring: Level::new(ring),
            never: NIL,
            due: NIL,
            due_tail: NIL,
            shift: buckets.trailing_zeros(),
            window: window as u64,
            res,
            bucket_mask: level0 as u64 - 1,
            ring_mask: ring as u64 - 1,
            elapsed: 0,
            linked: 0,
        }
    }

    /// This wheel, its buckets and due list keeping their entries in the
    /// order they were linked (first in, first out), rather than last in,
    /// first out: one more list end (4 bytes) a bucket.
    ///
    /// The timer's shards take it: an interval re-armed as it fires goes
    /// to the end of its next bucket, so the beats of a bucket come out in
    /// the order of the turn before, and the connections of a server
    /// spawned in turn (their tasks laid out in turn in memory) are woken
    /// and polled in that order, which the processor's prefetcher follows,
    /// as tokio's timer wakes them. Last in, first out reversed that order
    /// every turn of the wheel: W9, 100,000 connections on 1 worker, cost
    /// 10% more CPU (docs/BENCHMARKS-HISTORY.md, "Heartbeats, by design").
    pub(crate) fn in_link_order(mut self) -> Wheel<T> {
        debug_assert!(self.linked == 0, "a wheel changes its order empty");
        self.tails = vec![NIL; self.buckets.heads.len()].into_boxed_slice();
        self
    }

    /// Whether the wheel keeps its buckets in link order (see
    /// [`in_link_order`](Self::in_link_order)).
    #[inline]
    fn fifo(&self) -> bool {
        !self.tails.is_empty()
    }

    /// The last tick processed. Entries at or before it have fired.
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// How many entries are linked (pending).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn len(&self) -> usize {
        self.linked
    }

    /// Whether no entry is linked (pending).
    pub(crate) fn is_empty(&self) -> bool {
        self.linked == 0
    }

    /// How many entries the store holds, pending or owned after firing.
    pub(crate) fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Entries the store holds without allocating.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Makes room for `additional` more entries.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
    }

    /// [`reserve`](Self::reserve), or the error where an allocation fails.
    #[cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]
    pub(crate) fn try_reserve(
        &mut self,
        additional: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        self.entries.try_reserve(additional)
    }

    /// The bytes an entry takes in the store.
    #[cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]
    pub(crate) const fn entry_bytes() -> usize {
        super::store::slot_size::<Entry<T>>()
    }

    /// The key the next [`insert`](Self::insert) will use.
    pub(crate) fn vacant_key(&self) -> Key {
        self.entries.vacant_key()
    }

    /// Inserts a pending entry due at `tick`. A tick at or before
    /// [`elapsed`](Self::elapsed) is moved to the next tick, so it fires on the
    /// next [`pop_expired`](Self::pop_expired) past it.
    ///
    /// A detached entry is removed when it fires; an owned one stays, marked
    /// fired, until [`remove`](Self::remove).
    ///
    /// # Panics
    ///
    /// If the wheel already holds `u32::MAX - 3` entries.
    pub(crate) fn insert(&mut self, tick: u64, detached: bool, value: T) -> Key {
        self.insert_flagged(tick, if detached { DETACHED } else { 0 }, value)
    }

    /// Inserts a pending owned entry due at `tick`, as
    /// [`insert`](Self::insert), marked: [`marked_mut`](Self::marked_mut)
    /// finds it and no other.
    pub(crate) fn insert_marked(&mut self, tick: u64, value: T) -> Key {
        self.insert_flagged(tick, MARKED, value)
    }

    fn insert_flagged(&mut self, tick: u64, flags: u64, value: T) -> Key {
        assert!(
            self.entries.len() < MAX_ENTRIES,
            "hashwheel: a shard cannot hold more than {MAX_ENTRIES} timeouts"
        );
        let tick = self.clamp(tick);
        let key = self.entries.insert(Entry {
            tick: nonzero(tick | flags),
            next: NIL,
            prev: FIRED,
            value,
        });
        self.link(key, tick);
        key
    }

    /// Inserts a detached entry due at `tick` (at least 1). Unlike
    /// [`insert`](Self::insert), a tick at or before
    /// [`elapsed`](Self::elapsed) is due at once: the entry goes on the due
    /// list, and the next [`pop_due`](Self::pop_due) takes it out whatever
    /// its `now`.
    ///
    /// # Panics
    ///
    /// If the wheel already holds `u32::MAX - 3` entries.
    #[track_caller]
    pub(crate) fn insert_due(&mut self, tick: u64, value: T) -> Key {
        assert!(
            self.entries.len() < MAX_ENTRIES,
            "hashwheel: a wheel cannot hold more than {MAX_ENTRIES} entries"
        );
        let tick = tick.clamp(1, NEVER);
        let key = self.entries.insert(Entry {
            tick: nonzero(tick | DETACHED),
            next: NIL,
            prev: FIRED,
            value,
        });
        self.link(key, tick);
        key
    }

    /// The state of the entry at `key`.
    ///
    /// # Panics
    ///
    /// If `key` is vacant (a bug in the caller: handles own their keys).
    pub(crate) fn state(&self, key: Key) -> State {
        self.entry(key).state()
    }

    /// The value of the entry at `key`.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn value_mut(&mut self, key: Key) -> &mut T {
        &mut self.entry_mut(key).value
    }

    /// The deadline tick of the entry at `key`.
    pub(crate) fn tick(&self, key: Key) -> u64 {
        self.entry(key).tick()
    }

    /// The value of the pending entry at `key`, or the state of one that is
    /// not pending, with one look-up (a timeout polled while it waits).
    #[inline]
    pub(crate) fn pending_value_mut(&mut self, key: Key) -> Result<&mut T, State> {
        let entry = self.entry_mut(key);
        match entry.state() {
            State::Pending => Ok(&mut entry.value),
            state => Err(state),
        }
    }

    /// The state and value of the entry at `key`, if the store holds one
    /// there and it was [marked](Self::insert_marked): one look-up.
    #[inline]
    pub(crate) fn marked_mut(&mut self, key: Key) -> Option<(State, &mut T)> {
        let entry = self.entries.get_mut(key)?;
        if entry.tick.get() & MARKED == 0 {
            return None;
        }
        Some((entry.state(), &mut entry.value))
    }

    /// The value at `key`, if the store holds one there.
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        self.entries.get(key).map(|entry| &entry.value)
    }

    /// The value at `key`, if the store holds one there.
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        self.entries.get_mut(key).map(|entry| &mut entry.value)
    }

    /// Removes the entry at `key` and returns its state and value.
    pub(crate) fn remove(&mut self, key: Key) -> (State, T) {
        let state = self.state(key);
        if state == State::Pending {
            self.unlink(key);
        }
        (state, self.entries.remove(key).value)
    }

    /// Removes the linked entry at `key` if `is_it` accepts its value, with
    /// one store lookup; returns its tick and value.
    pub(crate) fn remove_if(
        &mut self,
        key: Key,
        is_it: impl FnOnce(&T) -> bool,
    ) -> Option<(u64, T)> {
        let entry = self.entries.get(key)?;
        if !is_it(&entry.value) {
            return None;
        }
        debug_assert_eq!(entry.state(), State::Pending);
        // Out of the store first: the unlink needs only its links.
        let entry = self.entries.remove(key);
        let tick = entry.tick();
        self.unlink_links(key, entry.prev, entry.next, tick);
        Some((tick, entry.value))
    }

    /// Moves the pending detached entry at `key` to `tick` (at least 1); a
    /// tick at or before [`elapsed`](Self::elapsed) puts it on the due list,
    /// as [`insert_due`](Self::insert_due) does.
    pub(crate) fn reset_due(&mut self, key: Key, tick: u64) {
        debug_assert_eq!(self.state(key), State::Pending);
        let tick = tick.clamp(1, NEVER);
        let old = self.entry(key).tick();
        if self.list_for(old) != self.list_for(tick) {
            self.unlink(key);
            self.link(key, tick);
        }
        // Same list (a ring slot: the same round; the due or never list):
        // its place in the list may stay.
        self.entry_mut(key).set_tick(tick);
    }

    /// Takes out the next detached entry due at or before `now`, processing
    /// ticks in order, the due list first. Returns its key, tick and value;
    /// `None` once every tick up to `now` is processed.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<(Key, u64, T)> {
        let key = self.next_due(now)?;
        self.unlink(key);
        let entry = self.entries.remove(key);
        debug_assert!(entry.is_detached(), "pop_due met an owned entry");
        Some((key, entry.tick(), entry.value))
    }

    /// The key of the next linked entry due at or before `now`, moving the
    /// cursor up to it (or to `now`). The due list comes first: its entries
    /// are due whatever `now` is.
    ///
    /// Entries come out bucket by bucket; inside a bucket wider than one
    /// time unit (see [`with_resolution`](Self::with_resolution)) in no
    /// particular order.
    fn next_due(&mut self, now: u64) -> Option<Key> {
        let now = now.min(NEVER - 1);
        loop {
            if self.due != NIL {
                return Some(self.due);
            }
            if self.elapsed >= now {
                return None;
            }
            if self.linked == 0 {
                // Nothing anywhere (a shard no thread uses, on every turn):
                // no search of the buckets and the ring.
                self.elapsed = now;
                return None;
            }
            if let Some((bucket, slot)) = self.next_bucket() {
                let start = slot << self.res;
                if start > now {
                    self.elapsed = now;
                    return None;
                }
                let end = start + ((1 << self.res) - 1);
                if end <= now {
                    // The whole bucket is due.
                    self.elapsed = self.elapsed.max(start.saturating_sub(1));
                    return Some(self.buckets.heads[bucket]);
                }
                // Partly due: move its due entries to the due list.
                self.split_bucket(bucket, now);
                self.elapsed = now;
                continue;
            }
            self.enter_next_round(now);
        }
    }

    /// Moves the entries of `bucket` due at or before `now` to the due list.
    fn split_bucket(&mut self, bucket: usize, now: u64) {
        let mut key = self.buckets.heads[bucket];
        while key != NIL {
            let entry = self.entry(key);
            let next = entry.next;
            if entry.tick() <= now {
                self.unlink(key);
                self.linked += 1;
                self.push(List::Due, key);
            }
            key = next;
        }
    }

    /// The level-0 buckets of this round are all processed: move the cursor
    /// to the next round that has work, or to `now`, whichever comes first.
    fn enter_next_round(&mut self, now: u64) {
        let round = self.round_of(self.elapsed + 1);
        let now_round = self.round_of(now + 1);
        let turns = now_round.saturating_sub(round) / (self.ring_mask + 1);
        let ring_round = if turns > self.linked as u64 {
            // A jump over more turns of the ring than there are entries
            // (years of paused time, a long suspend): looking at every entry
            // once costs less than visiting an occupied slot on every turn.
            self.earliest_ring_round()
        } else {
            self.next_ring_slot().map(|(_, round)| round)
        };
        // The next round with work: one of the window's later rounds that
        // holds entries, or the round whose window first takes in the
        // ring's next round (which is at least `window` rounds ahead, so
        // that round is after this one).
        let window_round = self
            .next_window_bucket()
            .map(|(_, slot)| slot >> self.shift);
        let ring_enters = ring_round.map(|r| r - (self.window - 1));
        let next = match (window_round, ring_enters) {
            (Some(w), Some(r)) => Some(w.min(r)),
            (w, r) => w.or(r),
        };
        match next {
            Some(next) if next <= now_round => {
                debug_assert!(next > round, "the cursor moves on");
                self.elapsed = (next << (self.shift + self.res)) - 1;
                // Rounds before the ring's next one hold nothing there, and
                // `next` is at most the round where that one enters.
                if ring_enters == Some(next) {
                    self.cascade(next + self.window - 1);
                }
            }
            _ => self.elapsed = now,
        }
    }

    /// Calls `f` with the keys of the first entries, `n` at most, that pops
    /// at `now` hand out next, changing nothing: the due list's, then those
    /// of the level-0 lists of the current round that are wholly due, in
    /// order (a partly due list is left out: a pop walks it and moves its
    /// due entries to the due list, where the next batch's walk finds
    /// them). A hint: a caller about to pop them can bring what it keeps
    /// about each key into the cache first, in one pass whose cache misses
    /// the processor overlaps (a pop takes one entry at a time); the walk
    /// follows the links the pops will, and leaves their entries in the
    /// cache for them. The wheel's model checks it against the pops.
    #[cfg_attr(not(test), allow(dead_code))] // the wheel's model checks it
    pub(crate) fn peek_next_due(&self, now: u64, n: usize, mut f: impl FnMut(Key)) {
        // As the pops see it (see `next_due`).
        let now = now.min(NEVER - 1);
        let mut left = n;
        let mut walk = |mut key: u32, left: &mut usize| {
            while key != NIL && *left > 0 {
                f(key);
                key = self.entry(key).next;
                *left -= 1;
            }
        };
        walk(self.due, &mut left);
        let next = (self.elapsed + 1) >> self.res;
        let round = next >> self.shift;
        let end = self.round_end(round);
        let mut from = (next & self.bucket_mask) as usize;
        while left > 0 {
            let Some(bucket) = self.buckets.occupied.next_set(from).filter(|&b| b < end) else {
                return;
            };
            let start = self.bucket_slot(round, bucket) << self.res;
            if start + ((1 << self.res) - 1) > now {
                return;
            }
            walk(self.buckets.heads[bucket], &mut left);
            from = bucket + 1;
        }
    }

    /// The next non-empty bucket of the current round and its tick. Clears
    /// the stale bits of lists that emptied (cancels leave them).
    fn next_bucket(&mut self) -> Option<(usize, u64)> {
        let next = (self.elapsed + 1) >> self.res;
        let round = next >> self.shift;
        let from = (next & self.bucket_mask) as usize;
        if self.buckets.heads[from] != NIL {
            // The bucket being expired, still holding entries (every pop
            // of a busy tick comes here): no search.
            return Some((from, next));
        }
        // The round's own buckets only: the window's later rounds follow.
        let end = self.round_end(round);
        while let Some(bucket) = self.buckets.occupied.next_set(from).filter(|&b| b < end) {
            if self.buckets.heads[bucket] != NIL {
                return Some((bucket, self.bucket_slot(round, bucket)));
            }
            self.buckets.occupied.clear(bucket);
        }
        None
    }

    /// The end (exclusive) of `round`'s buckets in level 0.
    #[inline]
    fn round_end(&self, round: u64) -> usize {
        (((round & (self.window - 1)) + 1) << self.shift) as usize
    }

    /// The bucket number (a tick in bucket widths) of level-0 bucket
    /// `bucket` in `round`.
    #[inline]
    fn bucket_slot(&self, round: u64, bucket: usize) -> u64 {
        (round << self.shift) | (bucket as u64 & ((1 << self.shift) - 1))
    }

    /// The first non-empty bucket of the window's rounds after the current
    /// one, and its bucket number, once the current round has none left
    /// after the cursor. Clears stale bits, in those rounds and in the
    /// current one (whose buckets before the cursor are past, and after it
    /// were searched).
    fn next_window_bucket(&mut self) -> Option<(usize, u64)> {
        if self.window == 1 {
            return None;
        }
        let round = self.round_of(self.elapsed + 1);
        let own = round & (self.window - 1);
        let start = self.round_end(round) & self.bucket_mask as usize;
        loop {
            let bucket = self.buckets.occupied.next_set_cyclic(start)?;
            let seg = (bucket >> self.shift) as u64;
            if self.buckets.heads[bucket] != NIL && seg != own {
                let ahead = seg.wrapping_sub(own) & (self.window - 1);
                return Some((bucket, self.bucket_slot(round + ahead, bucket)));
            }
            debug_assert_eq!(
                self.buckets.heads[bucket], NIL,
                "an entry left behind in a past bucket"
            );
            self.buckets.occupied.clear(bucket);
        }
    }

    /// The next non-empty ring slot after the current round, and the round
    /// it comes up in. Clears stale bits like [`next_bucket`](Self::next_bucket).
    fn next_ring_slot(&mut self) -> Option<(usize, u64)> {
        let after = self.round_of(self.elapsed + 1) + self.window;
        loop {
            let slot = self
                .ring
                .occupied
                .next_set_cyclic((after & self.ring_mask) as usize)?;
            if self.ring.heads[slot] != NIL {
                let round = after + ((slot as u64).wrapping_sub(after) & self.ring_mask);
                return Some((slot, round));
            }
            self.ring.occupied.clear(slot);
        }
    }

    /// The earliest round of any entry in the ring.
    fn earliest_ring_round(&self) -> Option<u64> {
        let mut earliest = None;
        let mut from = 0;
        while let Some(slot) = self.ring.occupied.next_set(from) {
            let mut key = self.ring.heads[slot];
            while key != NIL {
                let entry = self.entry(key);
                let round = self.round_of(entry.tick());
                earliest = Some(earliest.map_or(round, |e: u64| e.min(round)));
                key = entry.next;
            }
            from = slot + 1;
        }
        earliest
    }

    /// `round` entered the window (the cursor entered `round - window + 1`):
    /// move the ring's entries for it into their buckets; entries of later
    /// turns of the ring go back to their slot in
    /// the order they had, so that the order in which entries of one tick
    /// come out depends only on the lists, not on how the cursor got there
    /// (which [`peek`](Self::peek) relies on).
    fn cascade(&mut self, round: u64) {
        let slot = (round & self.ring_mask) as usize;
        let mut key = std::mem::replace(&mut self.ring.heads[slot], NIL);
        self.ring.occupied.clear(slot);
        // The last entry put back in the slot.
        let mut tail = NIL;
        while key != NIL {
            let entry = self.entry(key);
            let next = entry.next;
            let tick = entry.tick();
            debug_assert!(self.round_of(tick) >= round, "an entry missed its round");
            if self.round_of(tick) == round {
                let bucket = ((tick >> self.res) & self.bucket_mask) as usize;
                self.push(List::Bucket(bucket), key);
            } else if tail == NIL {
                self.push(List::Ring(slot), key);
                tail = key;
            } else {
                self.entry_mut(tail).next = key;
                let entry = self.entry_mut(key);
                entry.prev = tail;
                entry.next = NIL;
                tail = key;
            }
            key = next;
        }
    }

    /// The earliest tick at which [`pop_expired`](Self::pop_expired) has work:
    /// the next occupied bucket, or else the earliest entry of the next round
    /// whose ring slot is occupied (or that round's start, where the slot is
    /// too long to scan or holds only later turns). `None` when nothing can
    /// ever fire. With entries on the due list: `elapsed`, work now.
    ///
    /// Clears the stale bits it meets on the way, so that the driver is not
    /// woken for a list that emptied.
    pub(crate) fn next_expiration(&mut self) -> Option<u64> {
        /// Bucket or ring entries looked at, at most, to find the exact tick.
        const SCAN: usize = 64;
        if self.due != NIL {
            return Some(self.elapsed);
        }
        if self.linked == 0 {
            return None;
        }
        if let Some((bucket, slot)) = self.next_bucket().or_else(|| self.next_window_bucket()) {
            if self.res == 0 {
                return Some(slot);
            }
            // The earliest time in the bucket, if it is short; a long one
            // (a busy bucket, whose entries are scattered over the store:
            // a cache miss each) reports its start instead, or the next
            // unit if its start has passed: never later than its earliest
            // entry, never at or before `elapsed`.
            let mut earliest = u64::MAX;
            let mut key = self.buckets.heads[bucket];
            for _ in 0..SCAN {
                if key == NIL {
                    return Some(earliest);
                }
                let entry = self.entry(key);
                earliest = earliest.min(entry.tick());
                key = entry.next;
            }
            if key == NIL {
                return Some(earliest);
            }
            return Some((slot << self.res).max(self.elapsed + 1));
        }
        let (slot, next_round) = self.next_ring_slot()?;
        let round_start = next_round << (self.shift + self.res);
        let mut earliest = u64::MAX;
        let mut key = self.ring.heads[slot];
        for _ in 0..SCAN {
            if key == NIL {
                break;
            }
            let entry = self.entry(key);
            if self.round_of(entry.tick()) == next_round {
                earliest = earliest.min(entry.tick());
            }
            key = entry.next;
        }
        if key == NIL && earliest != u64::MAX {
            Some(earliest)
        } else {
            Some(round_start)
        }
    }

    /// The entry that [`pop_due`](Self::pop_due) (or
    /// [`pop_expired`](Self::pop_expired)) takes out next once the clock is
    /// far enough, without moving anything: the due list's head, else the
    /// head of the next occupied bucket, else the ring's earliest entry,
    /// else the never list's head.
    ///
    /// O(1) while the current round has entries. Otherwise it scans ring
    /// slots in the order their rounds come up until one holds an entry of
    /// that round; only when every ring entry is a turn or more away does it
    /// look at all of them.
    pub(crate) fn peek(&self) -> Option<Key> {
        if self.due != NIL {
            return Some(self.due);
        }
        debug_assert_eq!(self.res, 0, "peek's order holds for one unit per bucket");
        // Level 0 in tick order: from the cursor to the end, then from the
        // start (the window's later rounds wrap around; with one round, the
        // buckets before the cursor are past and empty).
        let cursor = (((self.elapsed + 1) >> self.res) & self.bucket_mask) as usize;
        let first_in = |lo: usize, hi: usize| {
            let mut from = lo;
            while let Some(bucket) = self.buckets.occupied.next_set(from).filter(|&b| b < hi) {
                if self.buckets.heads[bucket] != NIL {
                    return Some(self.buckets.heads[bucket]);
                }
                from = bucket + 1;
            }
            None
        };
        if let Some(key) = first_in(cursor, usize::MAX).or_else(|| first_in(0, cursor)) {
            return Some(key);
        }
        self.peek_ring()
            .or((self.never != NIL).then_some(self.never))
    }

    /// The ring's part of [`peek`](Self::peek). Entries of one tick share a
    /// slot, and a cascade pushes each onto its bucket's head in slot order,
    /// so the last of them in the slot comes out first.
    fn peek_ring(&self) -> Option<Key> {
        let after = self.round_of(self.elapsed + 1) + self.window;
        let start = (after & self.ring_mask) as usize;
        let slots = self.ring.heads.len();
        // The earliest (tick, key) in `slot`, among entries of `round` only
        // if given; ties go to the last in the list.
        let earliest_in = |slot: usize, round: Option<u64>| {
            let mut best: Option<(u64, Key)> = None;
            let mut key = self.ring.heads[slot];
            while key != NIL {
                let entry = self.entry(key);
                let tick = entry.tick();
                if round.map_or(true, |r| self.round_of(tick) == r)
                    && best.map_or(true, |(t, _)| tick <= t)
                {
                    best = Some((tick, key));
                }
                key = entry.next;
            }
            best
        };
        // Occupied slots in the order their next round comes up: from
        // `start` to the end, then from 0.
        let in_order = |lo: usize, hi: usize| {
            let mut from = lo;
            while let Some(slot) = self.ring.occupied.next_set(from).filter(|&s| s < hi) {
                let round = after + ((slot as u64).wrapping_sub(after) & self.ring_mask);
                if let Some((_, key)) = earliest_in(slot, Some(round)) {
                    return Some(key);
                }
                from = slot + 1;
            }
            None
        };
        if let Some(key) = in_order(start, slots).or_else(|| in_order(0, start)) {
            return Some(key);
        }
        // Every ring entry is a turn or more away.
        let mut best: Option<(u64, Key)> = None;
        let mut from = 0;
        while let Some(slot) = self.ring.occupied.next_set(from) {
            if let Some((tick, key)) = earliest_in(slot, None) {
                if best.map_or(true, |(t, _)| tick < t) {
                    best = Some((tick, key));
                }
            }
            from = slot + 1;
        }
        best.map(|(_, key)| key)
    }

    /// Gives back the store's vacant slots above its highest entry, and the
    /// pages they emptied (all of it when the wheel is empty). Entries do
    /// not move. Returns the bytes freed.
    pub(crate) fn shrink(&mut self) -> usize {
        self.entries.shrink() * std::mem::size_of::<Entry<T>>()
    }

    /// Moves entries into the store's vacant slots and gives back the rest,
    /// relinking the lists; `moved(value, from, to)` is called for each entry
    /// moved. O(entries).
    pub(crate) fn compact(&mut self, mut moved: impl FnMut(&mut T, Key, Key)) {
        let mut map: HashMap<Key, Key> = HashMap::new();
        self.entries.compact(|entry, from, to| {
            moved(&mut entry.value, from, to);
            map.insert(from, to);
        });
        if map.is_empty() {
            return;
        }
        // The markers (`NIL`, `FIRED`, `CANCELLED`) are never keys.
        let fix = |key: &mut u32| {
            if let Some(&to) = map.get(key) {
                *key = to;
            }
        };
        for (_, entry) in self.entries.iter_mut() {
            fix(&mut entry.next);
            fix(&mut entry.prev);
        }
        let heads = self
            .buckets
            .heads
            .iter_mut()
            .chain(self.ring.heads.iter_mut());
        for head in heads.chain([&mut self.never, &mut self.due, &mut self.due_tail]) {
            fix(head);
        }
        for tail in self.tails.iter_mut() {
            fix(tail);
        }
    }

    /// Removes and drops every entry, keeping the store's capacity and
    /// [`elapsed`](Self::elapsed).
    pub(crate) fn clear(&mut self) {
        // The lists first: a value's `drop` may panic.
        for level in [&mut self.buckets, &mut self.ring] {
            level.heads.fill(NIL);
            level.occupied.clear_all();
        }
        self.never = NIL;
        self.due = NIL;
        self.linked = 0;
        self.entries.clear();
    }

    fn any_linked(&mut self) -> Option<Key> {
        for head in [self.due, self.never] {
            if head != NIL {
                return Some(head);
            }
        }
        for level in [&mut self.buckets, &mut self.ring] {
            while let Some(i) = level.occupied.next_set(0) {
                if level.heads[i] != NIL {
                    return Some(level.heads[i]);
                }
                level.occupied.clear(i);
            }
        }
        None
    }

    fn clamp(&self, tick: u64) -> u64 {
        tick.clamp(self.elapsed + 1, NEVER)
    }

    /// Where a linked entry due at `tick` lives now.
    #[inline]
    fn list_for(&self, tick: u64) -> List {
        if tick <= self.elapsed {
            List::Due
        } else if tick >= NEVER {
            List::Never
        } else if self.round_of(tick) - self.round_of(self.elapsed + 1) < self.window {
            List::Bucket(((tick >> self.res) & self.bucket_mask) as usize)
        } else {
            List::Ring((self.round_of(tick) & self.ring_mask) as usize)
        }
    }

    /// The round (turn of the wheel) that `time` falls in.
    #[inline]
    fn round_of(&self, time: u64) -> u64 {
        time >> (self.shift + self.res)
    }

    fn link(&mut self, key: Key, tick: u64) {
        self.linked += 1;
        let list = self.list_for(tick);
        self.push(list, key);
    }

    /// Pushes `key` at the head of `list` (at its end, for a bucket or the
    /// due list of a wheel [`in_link_order`](Self::in_link_order)).
    #[inline]
    fn push(&mut self, list: List, key: Key) {
        self.push_at(list, key, None);
    }

    /// [`push`](Self::push), setting the entry's tick to `tick` if given
    /// (with the same look-up of the entry).
    #[inline]
    fn push_at(&mut self, list: List, key: Key, tick: Option<u64>) {
        if self.fifo() && matches!(list, List::Bucket(_) | List::Due) {
            return self.push_back(list, key, tick);
        }
        let (head, occupied, i) = match list {
            List::Bucket(i) => (
                &mut self.buckets.heads[i],
                Some(&mut self.buckets.occupied),
                i,
            ),
            List::Ring(i) => (&mut self.ring.heads[i], Some(&mut self.ring.occupied), i),
            List::Never => (&mut self.never, None, 0),
            List::Due => (&mut self.due, None, 0),
        };
        let old = std::mem::replace(head, key);
        if old == NIL {
            // A list with entries always has its bit set: only an empty
            // one may need it.
            if let Some(occupied) = occupied {
                occupied.set(i);
            }
        } else {
            self.entry_mut(old).prev = key;
        }
        self.set_links(key, NIL, old, tick);
    }

    /// [`push_at`](Self::push_at) at the end of a bucket or of the due
    /// list, in a wheel that keeps them in link order.
    #[inline]
    fn push_back(&mut self, list: List, key: Key, tick: Option<u64>) {
        let (head, tail) = match list {
            List::Bucket(i) => (&mut self.buckets.heads[i], &mut self.tails[i]),
            List::Due => (&mut self.due, &mut self.due_tail),
            List::Ring(_) | List::Never => unreachable!("only buckets and the due list"),
        };
        let last = if *head == NIL {
            *head = key;
            if let List::Bucket(i) = list {
                self.buckets.occupied.set(i);
            }
            NIL
        } else {
            *tail
        };
        *tail = key;
        if last != NIL {
            self.entry_mut(last).next = key;
        }
        self.set_links(key, last, NIL, tick);
    }

    /// Links the entry at `key` in between `prev` and `next` (a push's
    /// half), setting its tick to `tick` if given.
    #[inline]
    fn set_links(&mut self, key: Key, prev: u32, next: u32, tick: Option<u64>) {
        let entry = self.entry_mut(key);
        if let Some(tick) = tick {
            entry.set_tick(tick);
        }
        entry.prev = prev;
        entry.next = next;
    }

    /// Unlinks a pending entry; leaves its `prev` for the caller to set.
    /// An emptied list keeps its occupancy bit (see the module docs).
    #[inline]
    fn unlink(&mut self, key: Key) {
        let entry = self.entry(key);
        let (prev, next, tick) = (entry.prev, entry.next, entry.tick());
        self.unlink_links(key, prev, next, tick);
    }

    /// [`unlink`](Self::unlink) for an entry with these links and tick
    /// (which may already be out of the store).
    #[inline]
    fn unlink_links(&mut self, key: Key, prev: u32, next: u32, tick: u64) {
        // The first of its list moves its head on; the last of a list
        // whose end the wheel keeps moves that end back (an emptied list's
        // end is left stale). Either way the list is looked up once.
        if prev != NIL && (next != NIL || !self.fifo()) {
            // Neither: its neighbours only.
            self.linked -= 1;
            if next != NIL {
                self.entry_mut(next).prev = prev;
            }
            self.entry_mut(prev).next = next;
            return;
        }
        let list = self.list_for(tick);
        self.unlink_in(key, prev, next, list);
    }

    /// [`unlink_links`](Self::unlink_links) for an entry of `list`.
    #[inline]
    fn unlink_in(&mut self, key: Key, prev: u32, next: u32, list: List) {
        self.linked -= 1;
        if next != NIL {
            self.entry_mut(next).prev = prev;
        }
        if prev != NIL {
            self.entry_mut(prev).next = next;
        }
        if next == NIL && self.fifo() {
            match list {
                List::Bucket(i) => self.tails[i] = prev,
                List::Due => self.due_tail = prev,
                List::Ring(_) | List::Never => {}
            }
        }
        if prev == NIL {
            let head = match list {
                List::Bucket(i) => &mut self.buckets.heads[i],
                List::Ring(i) => &mut self.ring.heads[i],
                List::Never => &mut self.never,
                List::Due => &mut self.due,
            };
            debug_assert_eq!(*head, key, "an unlinked head is not its list's head");
            *head = next;
        }
    }
}

/// What the timer's owned entries need: their value is handed out when they
/// fire or are drained, and an empty one stays behind for the handle.
impl<T: Default> Wheel<T> {
    /// Moves the entry at `key` to `tick`, whether it is pending or has fired.
    /// A cancelled entry stays cancelled. Returns the state it had.
    ///
    /// A tick at or before [`elapsed`](Self::elapsed) fires the entry now:
    /// it is marked fired and its value is taken and returned.
    pub(crate) fn reset(&mut self, key: Key, tick: u64) -> (State, Option<T>) {
        // The entry is looked up once to read and once to write, and each
        // list once (a relink looked the entry up five times and its lists
        // four: W15, 363 instructions of its 480); its neighbours between.
        let entry = self.entry(key);
        let state = entry.state();
        let (old, prev, next) = (entry.tick(), entry.prev, entry.next);
        let new = tick.min(NEVER);
        // `None`: a tick the wheel has passed, which fires the entry now.
        let list = (new > self.elapsed).then(|| self.list_for(new));
        match state {
            State::Cancelled => return (state, None),
            State::Pending => {
                let old_list = self.list_for(old);
                if list == Some(old_list) {
                    // Same list: nothing to relink.
                    self.entry_mut(key).set_tick(new);
                    return (state, None);
                }
                self.unlink_in(key, prev, next, old_list);
            }
            State::Fired => {}
        }
        let Some(list) = list else {
            let entry = self.entry_mut(key);
            entry.set_tick(tick.clamp(1, NEVER));
            entry.prev = FIRED;
            let value = std::mem::take(&mut entry.value);
            return (state, Some(value));
        };
        self.linked += 1;
        self.push_at(list, key, Some(new));
        (state, None)
    }

    /// Takes out the next entry due at or before `now`, processing ticks in
    /// order. Returns `None` once every tick up to `now` is processed.
    #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
    pub(crate) fn pop_expired(&mut self, now: u64) -> Option<Expired<T>> {
        let key = self.next_due(now)?;
        let entry = self.entry(key);
        let (next, filed) = (entry.next, entry.tick());
        Some(self.expire(key, next, filed))
    }

    /// [`pop_expired`](Self::pop_expired) for entries whose deadline may
    /// have moved later without the wheel knowing (the timer's reset by
    /// extension) and for entries that are re-armed as they fire (the
    /// timer's intervals): each owned entry that comes due is first shown to
    /// `due(key, tick)`, with the tick the wheel holds it at, which says
    /// what to do with it (see [`Due`]). A moved entry comes out again when
    /// the cursor reaches its new tick (at once if that is not after `now`
    /// and its bucket is the one being processed), so entries still come out
    /// bucket by bucket in deadline order. Detached entries fire as in
    /// `pop_expired`.
    pub(crate) fn pop_expired_checked(
        &mut self,
        now: u64,
        mut due: impl FnMut(Key, u64, &mut T) -> Due,
    ) -> Option<Popped<T>> {
        loop {
            let key = self.next_due(now)?;
            // One look-up of the entry for whatever comes of it (a pop
            // looked it up four times: W15, 3.4 expiries and 6.4 entries
            // re-filed a turn at 1,000 connections).
            let entry = self.entry_mut(key);
            let (filed, next) = (entry.tick(), entry.next);
            // `next_due` hands out heads: the due list's, or the bucket's
            // of its tick.
            debug_assert_eq!(entry.prev, NIL, "a due entry that does not head its list");
            if entry.is_detached() {
                return Some(Popped::Expired(self.expire(key, next, filed)));
            }
            let (tick, rearmed) = match due(key, filed, &mut entry.value) {
                Due::Fire => {
                    entry.prev = FIRED;
                    let value = std::mem::take(&mut entry.value);
                    self.pop_head(key, next, filed);
                    self.linked -= 1;
                    return Some(Popped::Expired(Expired {
                        key,
                        detached: false,
                        tick: filed,
                        value,
                    }));
                }
                Due::Stall => {
                    entry.prev = FIRED;
                    self.pop_head(key, next, filed);
                    self.linked -= 1;
                    return Some(Popped::Stalled(filed));
                }
                Due::Refile(tick) => (tick, false),
                Due::Rearm(tick) => (tick, true),
            };
            debug_assert!(tick > filed && tick < NEVER, "re-filed {filed} at {tick}");
            // `due` moved nothing in the wheel: the links read above
            // still hold.
            self.pop_head(key, next, filed);
            let list = self.list_for(tick);
            self.push_at(list, key, Some(tick));
            if rearmed {
                return Some(Popped::Rearmed(filed));
            }
        }
    }

    /// Takes `key` off the head of its list (the due list, or the bucket
    /// of its tick, `filed`), `next` coming after it, leaving it counted
    /// as linked and its own links as they were. An emptied bucket's bit
    /// goes now, rather than as a stale bit that the next search of the
    /// bit set walks over.
    #[inline]
    fn pop_head(&mut self, key: Key, next: u32, filed: u64) {
        if self.due == key {
            self.due = next;
        } else {
            let bucket = ((filed >> self.res) & self.bucket_mask) as usize;
            debug_assert_eq!(self.buckets.heads[bucket], key, "a due entry not a head");
            self.buckets.heads[bucket] = next;
            if next == NIL {
                self.buckets.occupied.clear(bucket);
            }
        }
        if next != NIL {
            self.entry_mut(next).prev = NIL;
        }
    }

    /// Takes out the entry `key` that [`next_due`](Self::next_due) handed
    /// out, with its `next` and its tick `filed`: a detached one leaves
    /// the store, an owned one stays, marked fired.
    fn expire(&mut self, key: Key, next: u32, filed: u64) -> Expired<T> {
        self.pop_head(key, next, filed);
        self.linked -= 1;
        let entry = self.entry_mut(key);
        if entry.is_detached() {
            let value = self.entries.remove(key).value;
            Expired {
                key,
                detached: true,
                tick: filed,
                value,
            }
        } else {
            entry.prev = FIRED;
            Expired {
                key,
                detached: false,
                tick: filed,
                value: std::mem::take(&mut entry.value),
            }
        }
    }

    /// Unlinks every pending entry: owned ones are marked cancelled and their
    /// values taken, detached ones removed. Calls `f` for each.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(Expired<T>)) {
        while let Some(key) = self.any_linked() {
            self.unlink(key);
            let entry = self.entry_mut(key);
            let tick = entry.tick();
            let expired = if entry.is_detached() {
                Expired {
                    key,
                    detached: true,
                    tick,
                    value: self.entries.remove(key).value,
                }
            } else {
                entry.prev = CANCELLED;
                Expired {
                    key,
                    detached: false,
                    tick,
                    value: std::mem::take(&mut entry.value),
                }
            };
            f(expired);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain_due(w: &mut Wheel<u64>, now: u64) -> Vec<u64> {
        let mut out = Vec::new();
        while let Some(e) = w.pop_expired(now) {
            out.push(e.value);
        }
        out
    }

    /// A wheel in link order hands a bucket's entries out in the order they
    /// were linked, through partly due buckets (the due list) too; and
    /// entries re-armed as they fire keep that order turn after turn,
    /// where last in, first out reverses it every turn.
    #[test]
    fn in_link_order_entries_keep_their_order_turn_after_turn() {
        // Buckets of 4 ticks, 8 a round, level 0 holding 4 rounds.
        for fifo in [true, false] {
            let wheel = Wheel::with_window(8, 8, 2, 4);
            let mut w: Wheel<u64> = if fifo { wheel.in_link_order() } else { wheel };
            // Three entries a tick, linked in deadline order (connections
            // spawned in turn, their phases in turn).
            let keys: Vec<Key> = (0..48u64).map(|i| w.insert(1 + i / 3, false, i)).collect();
            let key_of = |key: Key| keys.iter().position(|&k| k == key).unwrap() as u64;
            // Turns that fall inside buckets (every 5 ticks, buckets of 4),
            // each entry re-armed 64 ticks on (two rounds: level 0).
            let mut order = Vec::new();
            let mut now = 0;
            while now < 1 + 16 + 64 + 8 {
                now += 5;
                while let Some(popped) = w.pop_expired_checked(now, |_, tick, _| {
                    if tick < 64 {
                        Due::Rearm(tick + 64)
                    } else {
                        Due::Fire
                    }
                }) {
                    if let Popped::Expired(expired) = popped {
                        order.push(key_of(expired.key));
                    }
                }
            }
            // The second pass: the re-armed entries, as they fire.
            assert_eq!(order.len(), 48);
            let ascending = order.windows(2).all(|p| p[0] < p[1]);
            assert_eq!(ascending, fifo, "fifo {fifo}: {order:?}");
        }
    }

    /// Unlinking the last entry of a bucket or of the due list moves its
    /// end back: what is linked next comes after the one before it.
    #[test]
    fn in_link_order_a_list_end_unlinked_moves_back() {
        let mut w: Wheel<u64> = Wheel::with_window(8, 8, 2, 4).in_link_order();
        let a = w.insert(5, false, 1);
        let b = w.insert(6, false, 2);
        let c = w.insert(7, false, 3);
        w.remove(c);
        let d = w.insert(7, false, 4);
        w.remove(b);
        w.remove(d);
        let e = w.insert(6, false, 5);
        let _ = a;
        assert_eq!(drain_due(&mut w, 8), vec![1, 5]);
        // The due list: a bucket only partly due (buckets of 4 ticks).
        for (i, tick) in [(10, 9), (11, 10), (12, 11)] {
            w.insert(tick, false, i);
        }
        let popped = w.pop_expired(9).map(|e| e.value);
        assert_eq!(popped, Some(10));
        let last = w.insert_due(3, 13);
        w.remove(last);
        w.insert_due(3, 14);
        assert_eq!(drain_due(&mut w, 9), vec![14]);
        assert_eq!(drain_due(&mut w, 12), vec![11, 12]);
        let _ = e;
    }

    #[test]
    fn entry_is_four_words_and_leaves_a_niche_for_the_store_tag() {
        type E = Entry<Option<std::task::Waker>>;
        assert_eq!(std::mem::size_of::<E>(), 32);
        // The store's slot is `enum { Vacant(u32), Occupied(E) }`; the
        // non-zero tick lets that enum stay at 32 bytes too.
        assert_eq!(super::super::store::slot_size::<E>(), 32);
    }

    #[test]
    fn a_public_entry_of_unit_is_three_words_in_the_store() {
        type E = Entry<super::super::Slot<()>>;
        assert_eq!(std::mem::size_of::<E>(), 24);
        assert_eq!(super::super::store::slot_size::<E>(), 24);
    }

    #[test]
    fn round_and_slot_maths() {
        let w = Wheel::<u64>::new(8, 4);
        assert_eq!(w.shift, 3);
        assert!(matches!(w.list_for(7), List::Bucket(7)));
        assert!(matches!(w.list_for(8), List::Ring(1)));
        assert!(matches!(w.list_for(8 * 4 + 3), List::Ring(0)));
        assert!(matches!(w.list_for(NEVER), List::Never));
    }

    #[test]
    fn fires_each_at_its_tick_across_rounds() {
        let mut w = Wheel::<u64>::new(4, 2);
        for t in [1u64, 3, 4, 5, 8, 9, 17, 100] {
            w.insert(t, false, t);
        }
        for now in 0..=120 {
            for v in drain_due(&mut w, now) {
                assert_eq!(v, now, "fired at the wrong tick");
            }
        }
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn jumps_fire_in_order() {
        let mut w = Wheel::<u64>::new(4, 4);
        for t in [50u64, 3, 1000, 7, 16, 64, 65] {
            w.insert(t, true, t);
        }
        assert_eq!(drain_due(&mut w, 999), vec![3, 7, 16, 50, 64, 65]);
        assert_eq!(w.next_expiration().map(|t| t <= 1000), Some(true));
        assert_eq!(drain_due(&mut w, 5000), vec![1000]);
        assert_eq!(w.next_expiration(), None);
        assert_eq!(
            w.entries(),
            0,
            "detached entries are removed when they fire"
        );
    }

    #[test]
    fn past_ticks_fire_on_the_next_tick() {
        let mut w = Wheel::<u64>::new(8, 8);
        assert!(drain_due(&mut w, 10).is_empty());
        w.insert(3, false, 3);
        assert_eq!(w.next_expiration(), Some(11));
        assert_eq!(drain_due(&mut w, 11), vec![3]);
    }

    #[test]
    fn remove_and_reset() {
        let mut w = Wheel::<u64>::new(8, 8);
        let a = w.insert(5, false, 5);
        let b = w.insert(5, false, 6);
        let c = w.insert(500, false, 7);
        assert_eq!(w.remove(a), (State::Pending, 5));
        assert_eq!(w.reset(c, 6), (State::Pending, None));
        assert_eq!(drain_due(&mut w, 5), vec![6]);
        assert_eq!(w.state(b), State::Fired);
        assert_eq!(drain_due(&mut w, 6), vec![7]);
        assert_eq!(w.reset(b, 2), (State::Fired, Some(0)));
        assert_eq!(w.reset(b, 9), (State::Fired, None));
        assert_eq!(w.state(b), State::Pending);
        assert_eq!(w.next_expiration(), Some(9), "exact tick found in the ring");
    }

    #[test]
    fn checked_pop_refiles_what_moved_later() {
        let mut w = Wheel::<u64>::new(8, 4);
        let a = w.insert(3, false, 1);
        let b = w.insert(3, false, 2);
        let c = w.insert(3, true, 3);
        let mut fired = Vec::new();
        let due = |k, _, _: &mut u64| if k == a { Due::Refile(40) } else { Due::Fire };
        while let Some(popped) = w.pop_expired_checked(3, due) {
            let Popped::Expired(e) = popped else {
                panic!("nothing was re-armed");
            };
            fired.push(e.value);
        }
        fired.sort();
        assert_eq!(fired, vec![2, 3]);
        assert_eq!(w.state(a), State::Pending);
        assert_eq!(w.tick(a), 40);
        assert_eq!(w.state(b), State::Fired);
        assert!(drain_due(&mut w, 39).is_empty());
        assert_eq!(drain_due(&mut w, 40), vec![1]);
        let _ = c;
    }

    #[test]
    fn never_and_drain() {
        let mut w = Wheel::<u64>::new(8, 8);
        let a = w.insert(u64::MAX, false, 1);
        w.insert(3, true, 2);
        w.insert(300, false, 3);
        assert_eq!(w.next_expiration(), Some(3));
        assert!(drain_due(&mut w, NEVER + 10).contains(&2));
        let mut drained = Vec::new();
        w.drain(|e| drained.push(e.value));
        drained.sort();
        assert_eq!(drained, vec![1]);
        assert_eq!(w.state(a), State::Cancelled);
        assert_eq!(w.len(), 0);
    }

    /// Regression: a jump over many turns of the ring used to visit the
    /// slot of a far entry once per turn (2^44 visits here: hours).
    #[test]
    fn huge_jump_past_a_far_entry_does_not_walk_every_ring_turn() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut w = Wheel::<u64>::new(1, 1);
            w.insert(1 << 44, false, 1);
            w.insert(3, false, 2);
            let mut fired = drain_due(&mut w, 1 << 45);
            fired.extend(drain_due(&mut w, NEVER + 1));
            tx.send(fired).unwrap();
        });
        let fired = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a jump of 2^45 ticks over one far entry did not finish");
        assert_eq!(fired, vec![2, 1]);
    }

    #[test]
    fn far_entries_wait_in_the_ring_without_being_visited_each_turn() {
        let mut w = Wheel::<u64>::new(4, 4);
        w.insert(4 * 4 * 10 + 1, false, 1);
        // The next work is the start of the entry's ring slot's next round
        // (the slot holds only a later turn), not every tick.
        assert_eq!(w.next_expiration(), Some(16));
        assert!(drain_due(&mut w, 4 * 4 * 10).is_empty());
        assert_eq!(drain_due(&mut w, 4 * 4 * 10 + 1), vec![1]);
    }
}
