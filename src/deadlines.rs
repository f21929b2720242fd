//! The deadline words of a shard's owned entries, and what an
//! [`Interval`](crate::Interval) shares with the driver (its [`Beat`]).
//!
//! The words are read and written without the shard's lock (a reset to a
//! later deadline is one compare-and-swap), so they live at addresses that
//! never move. Below `shard.rs`: it imports only the wheel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;

use crate::wheel::raw::{Due, Key};
use crate::wheel::store::{self, page_len, Sparse, PAGE, SMALL_PAGES};

/// The deadline word of an owned wheel entry (a registered
/// [`Timeout`](crate::Timeout)), one `AtomicU64` per store slot in a
/// [`Deadlines`] table at an address that never moves.
///
/// | bits  | meaning                                                    |
/// |-------|------------------------------------------------------------|
/// | 63    | [`LINKED`]: the entry is pending in the wheel              |
/// | 62    | [`BEAT`]: the entry is an [`Interval`](crate::Interval)'s  |
/// | 48-61 | generation of the slot: bumped by every insert into it     |
/// | 0-47  | the entry's deadline tick, or [`FAR`]: ask the wheel       |
///
/// While `LINKED`, the entry sits in the wheel at a tick at or before the
/// word's: the handle may move the word's deadline later with one
/// compare-and-swap and no lock ([`Deadlines::extend`]), which succeeds only
/// on "linked, this generation, not `FAR`". Everything else changes the word
/// under the shard's lock. When the entry comes due, the driver (under the
/// lock) re-files it at the word's deadline if that is still ahead, and
/// otherwise clears `LINKED` with a compare-and-swap and fires it: a
/// concurrent extension either lands before that (and is re-filed) or fails
/// (and the handle finds the entry fired under the lock).
pub(crate) const LINKED: u64 = 1 << 63;
/// The deadline part of a deadline word; as a value, "too far for the word:
/// the wheel holds the deadline" (about 8.9 years after the timer's start).
pub(crate) const FAR: u64 = (1 << 48) - 1;
/// The entry belongs to an interval: its [`Beat`] is in
/// [`ShardState::beats`](crate::shard::ShardState::beats), and the driver re-arms it when it fires.
pub(crate) const BEAT: u64 = 1 << 62;
const GEN_SHIFT: u32 = 48;
/// The generation part of a deadline word, shifted down.
pub(crate) const GEN_MASK: u64 = (1 << 14) - 1;

/// The generation in deadline word `word`.
pub(crate) fn word_gen(word: u64) -> u64 {
    (word >> GEN_SHIFT) & GEN_MASK
}

/// The deadline word of a linked entry of generation `gen` due at `tick`.
pub(crate) fn linked_word(gen: u64, tick: u64) -> u64 {
    LINKED | (gen << GEN_SHIFT) | tick.min(FAR)
}

/// Super-pages of deadline words for the keys from [`PAGE`] on: super-page
/// `j` holds the `2^j` pages of keys `PAGE << j` up to `PAGE << (j + 1)`.
const SUPERS: usize = 32 - PAGE.trailing_zeros() as usize;

/// One small page of deadline words.
type Words = OnceLock<Box<[AtomicU64]>>;
/// One page of [`PAGE`] deadline words: a thin pointer, so that a
/// directory slot is 16 bytes (2 bytes per 128 keys).
type BigWords = OnceLock<Box<[AtomicU64; PAGE]>>;

/// The deadline words of a shard's owned entries, by key (see [`LINKED`]),
/// laid out in the pages of the wheel's store ([`store::locate`]): pages
/// that are allocated once (under the shard's lock, when an insert first
/// needs them) and never move or go away, so the words can be read and
/// written without the lock.
///
/// The pages below [`PAGE`] keys (64 to 128 words) sit in a fixed table.
/// From there on the pages of [`PAGE`] words are reached through
/// *super-pages*, as `sharded-slab` lays out its pages: super-page `j`
/// holds the `2^j` pages of keys `PAGE·2^j` up to twice that, and its
/// directory (16 bytes per page) is allocated by the insert that first
/// reaches it. Memory follows the key count within one page, and no insert
/// copies anything: the largest single allocation up to 4,194,304 keys is a
/// directory of 2,048 pages (32 KiB), about 0.016 bytes per key already held.
///
/// The words are not given back by [`Timer::shrink`](crate::Timer::shrink):
/// a handle may be reading its word without the lock, so a page cannot go
/// without a lock on that path (8 bytes per key, up to the highest key used).
pub(crate) struct Deadlines {
    small: [Words; SMALL_PAGES],
    supers: [OnceLock<Box<[BigWords]>>; SUPERS],
}

/// Where a page of a [`Deadlines`] table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Where {
    /// Small page `n` (below [`PAGE`] keys).
    Small(usize),
    /// Page `i` of super-page `j`.
    Super(usize, usize),
}

#[cold]
#[track_caller]
fn unallocated(key: Key) -> ! {
    panic!("hashwheel: the deadline word of key {key} was read before its entry was inserted")
}

impl Deadlines {
    pub(crate) fn new() -> Deadlines {
        Deadlines {
            small: std::array::from_fn(|_| OnceLock::new()),
            supers: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The page of `key` in the table, its directory's size if it is in a
    /// super-page, and the index of the word in the page.
    #[inline]
    fn locate(key: Key) -> (Where, usize) {
        let (page, i) = store::locate(key);
        if page < SMALL_PAGES {
            return (Where::Small(page), i);
        }
        // Pages of `PAGE` words, numbered from 1.
        let n = page + 1 - SMALL_PAGES;
        let j = (usize::BITS - 1 - n.leading_zeros()) as usize;
        (Where::Super(j, n - (1 << j)), i)
    }

    /// The page `at`, if it is allocated.
    #[inline]
    fn page(&self, at: Where) -> Option<&[AtomicU64]> {
        match at {
            Where::Small(page) => self.small[page].get().map(|w| &**w),
            Where::Super(j, page) => self.supers[j].get()?[page].get().map(|w| &w[..]),
        }
    }

    fn words(len: usize) -> Box<[AtomicU64]> {
        (0..len).map(|_| AtomicU64::new(0)).collect()
    }

    /// The word of `key`, allocating its chunk if need be (under the lock).
    pub(crate) fn slot_or_grow(&self, key: Key) -> &AtomicU64 {
        let (at, i) = Self::locate(key);
        match at {
            Where::Small(page) => &self.small[page].get_or_init(|| Self::words(page_len(page)))[i],
            Where::Super(j, page) => {
                let dir = self.supers[j]
                    .get_or_init(|| (0..1usize << j).map(|_| OnceLock::new()).collect());
                let words = dir[page].get_or_init(|| match Self::words(PAGE).try_into() {
                    Ok(words) => words,
                    Err(_) => unreachable!("a page has PAGE words"),
                });
                &words[i]
            }
        }
    }

    /// Allocates the words of the keys below `keys` up front (see
    /// [`Builder::capacity`](crate::Builder::capacity)).
    pub(crate) fn reserve(&self, keys: usize) {
        let mut key = 0;
        while key < keys {
            let Ok(k) = u32::try_from(key) else {
                return;
            };
            self.slot_or_grow(k);
            let (page, _) = store::locate(k);
            key += page_len(page);
        }
    }

    /// The word of `key`, whose chunk an insert allocated.
    #[inline]
    pub(crate) fn slot(&self, key: Key) -> &AtomicU64 {
        let (at, i) = Self::locate(key);
        match self.page(at) {
            Some(page) => &page[i],
            None => unallocated(key),
        }
    }

    /// The words allocated, in every page.
    #[cfg(test)]
    fn allocated(&self) -> Vec<usize> {
        let small = self.small.iter().filter_map(|w| w.get().map(|w| w.len()));
        let supers = self
            .supers
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|dir| dir.iter().filter_map(|w| w.get().map(|w| w.len())));
        small.chain(supers).collect()
    }

    /// Inserted into the wheel at `key`, due at `tick`, an interval's if
    /// `beat`: the slot's next generation, linked. Returns the generation.
    /// Under the lock.
    pub(crate) fn insert(&self, key: Key, tick: u64, beat: bool) -> u64 {
        let slot = self.slot_or_grow(key);
        let gen = (word_gen(slot.load(Ordering::Relaxed)) + 1) & GEN_MASK;
        let flag = if beat { BEAT } else { 0 };
        slot.store(linked_word(gen, tick) | flag, Ordering::Release);
        gen
    }

    /// Moves the deadline of the linked entry `key` of generation `gen` to
    /// `tick` if that is later: one compare-and-swap, no lock. Returns
    /// `false` where it did nothing (not linked, another generation, not
    /// later, or too far for the word): the caller takes the lock.
    #[inline]
    pub(crate) fn extend(&self, key: Key, gen: u64, tick: u64) -> bool {
        let slot = self.slot(key);
        let cur = slot.load(Ordering::Acquire);
        let old = cur & FAR;
        cur & LINKED != 0
            && word_gen(cur) == gen
            && old != FAR
            && tick > old
            && tick < FAR
            && slot
                .compare_exchange(
                    cur,
                    (cur & !FAR) | tick,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
    }

    /// The driver found the entry `key` due, filed in the wheel at tick
    /// `filed` (under the lock): [`Due::Refile`] at its extended deadline
    /// (later than `filed`), or [`Due::Fire`] once it is marked fired
    /// (`LINKED` cleared, in a compare-and-swap that a concurrent extension
    /// makes retry). It fires only at the deadline it is filed at, which
    /// the wheel hands out once the clock has reached it: never early.
    ///
    /// An interval's entry ([`BEAT`]) whose last tick was taken is re-armed
    /// instead, at the tick its handle left in its [`Beat`]
    /// ([`Due::Rearm`]), and `woken` gets the beat's waker, taken out under
    /// the lock (no foreign code runs: it only moves), to wake once the lock
    /// is released; none if the task is registering a new one at that
    /// moment, which then wakes itself (`AtomicWaker`'s protocol). One whose last tick is still untaken fires, unwoken, and
    /// is marked [`STALLED`]: a task that stopped calling `tick` is not
    /// woken again. (An interval's word changes only under the lock: its
    /// handle never extends it without it.)
    #[inline]
    pub(crate) fn due(
        &self,
        key: Key,
        filed: u64,
        beats: &Sparse<Arc<Beat>>,
        woken: impl FnOnce(Waker),
    ) -> Due {
        let slot = self.slot(key);
        let mut cur = slot.load(Ordering::Acquire);
        if cur & BEAT != 0 && cur & LINKED != 0 {
            if let Some(beat) = beats.get(key) {
                return Self::beat_due(slot, cur, filed, beat, woken);
            }
        }
        loop {
            let tick = cur & FAR;
            if cur & LINKED != 0 && tick != FAR && tick > filed {
                return Due::Refile(tick);
            }
            match slot.compare_exchange_weak(
                cur,
                cur & !LINKED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Due::Fire,
                Err(actual) => cur = actual,
            }
        }
    }

    /// [`due`](Self::due) for an interval's entry, word `cur`.
    fn beat_due(
        slot: &AtomicU64,
        cur: u64,
        filed: u64,
        beat: &Beat,
        woken: impl FnOnce(Waker),
    ) -> Due {
        let tick = cur & FAR;
        if tick != FAR && tick > filed {
            return Due::Refile(tick);
        }
        let mut state = beat.state.load(Ordering::Acquire);
        loop {
            if state & UNTAKEN == 0 {
                // Only the driver sets `UNTAKEN`, under the lock; while it is
                // clear the handle writes the state only under the lock.
                let after = (state & AFTER_MASK).max(filed + 1);
                if after >= FAR {
                    // Too far for the word (a period of years): fire it, a
                    // tick waiting and not re-armed; the task re-arms it
                    // under the lock when it takes the tick.
                    slot.store(cur & !LINKED, Ordering::Release);
                    beat.state
                        .store(state | UNTAKEN | STALLED, Ordering::Release);
                    beat.wake_to(woken);
                    return Due::Fire;
                }
                slot.store((cur & !FAR) | after, Ordering::Release);
                beat.state.store(state | UNTAKEN, Ordering::Release);
                beat.wake_to(woken);
                return Due::Rearm(after);
            }
            // Untaken: stall, unless the handle takes the tick meanwhile
            // (its compare-and-swap clears `UNTAKEN`; then re-arm).
            match beat.state.compare_exchange(
                state,
                state | STALLED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    slot.store(cur & !LINKED, Ordering::Release);
                    return Due::Fire;
                }
                Err(actual) => state = actual,
            }
        }
    }

    /// The entry `key` left the wheel (fired, cancelled or removed) under
    /// the lock: no extension may land on it any more.
    pub(crate) fn unlink(&self, key: Key) {
        self.slot(key).fetch_and(!LINKED, Ordering::AcqRel);
    }

    /// The entry `key` of generation `gen` was reset under the lock: linked
    /// at `tick`, or not (it fired at once).
    pub(crate) fn set(&self, key: Key, gen: u64, tick: u64, linked: bool) {
        let slot = self.slot(key);
        let word = linked_word(gen, tick) | (slot.load(Ordering::Relaxed) & BEAT);
        let word = if linked { word } else { word & !LINKED };
        slot.store(word, Ordering::Release);
    }

    /// The deadline in `key`'s word, unless it is too far for the word.
    pub(crate) fn tick(&self, key: Key) -> Option<u64> {
        let tick = self.slot(key).load(Ordering::Acquire) & FAR;
        (tick != FAR).then_some(tick)
    }

    /// Whether `key`'s entry is linked (pending), as generation `gen`.
    pub(crate) fn is_linked(&self, key: Key, gen: u64) -> bool {
        let word = self.slot(key).load(Ordering::Acquire);
        word & LINKED != 0 && word_gen(word) == gen
    }
}

/// What an [`Interval`](crate::Interval) shares with the driver: its
/// waker, and whether a tick is waiting to be taken. The driver re-arms the
/// interval's entry when it fires, under the lock it holds anyway, so that
/// `tick` in the steady state takes no lock and inserts nothing.
pub(crate) struct Beat {
    /// [`UNTAKEN`] and [`STALLED`], and the tick the entry is re-armed at
    /// when it fires (the handle's next tick but one, [`AFTER_MASK`]).
    pub(crate) state: AtomicU64,
    pub(crate) waker: futures_util::task::AtomicWaker,
}

/// [`Beat::state`]: the entry fired and its tick has not been taken yet.
pub(crate) const UNTAKEN: u64 = 1 << 63;
/// [`Beat::state`]: the entry fired while a tick was untaken, so it was
/// not re-armed (it is fired, not linked); taking the tick re-arms it
/// under the lock.
pub(crate) const STALLED: u64 = 1 << 62;
/// [`Beat::state`]: the re-arm tick.
pub(crate) const AFTER_MASK: u64 = (1 << 62) - 1;

impl Beat {
    pub(crate) fn new(after: u64) -> Beat {
        Beat {
            state: AtomicU64::new(after.min(AFTER_MASK)),
            waker: futures_util::task::AtomicWaker::new(),
        }
    }

    /// Hands the registered waker (if any) to `woken`, after the state
    /// says the tick came: taken, not woken, so that the driver can take it
    /// under the shard's lock and wake it after. A registration racing the
    /// take sees the tick in the state, or is woken by `AtomicWaker`'s own
    /// protocol.
    #[inline]
    fn wake_to(&self, woken: impl FnOnce(Waker)) {
        if let Some(waker) = self.waker.take() {
            woken(waker);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_pages_cover_every_key_once_and_follow_the_key_count() {
        let mut seen = std::collections::HashSet::new();
        let edges = (0..40u32).flat_map(|j| {
            let edge = (PAGE as u64) << j.min(22);
            [edge - 1, edge, edge + 1]
        });
        let keys = (0..5_000u64)
            .chain(edges)
            .chain([u64::from(u32::MAX) - 3, u64::from(u32::MAX) - 4])
            .filter_map(|k| u32::try_from(k).ok())
            .collect::<std::collections::BTreeSet<_>>();
        for key in keys {
            let (at, i) = Deadlines::locate(key);
            let len = match at {
                Where::Small(page) => {
                    assert!(page < SMALL_PAGES, "key {key}");
                    page_len(page)
                }
                Where::Super(j, page) => {
                    assert!(j < SUPERS && page < 1 << j, "key {key}");
                    PAGE
                }
            };
            assert!(i < len, "key {key}");
            assert!(seen.insert((at, i)), "key {key} shares a word");
        }
        // Only the pages an insert needs, each allocated once: a million
        // keys take a million words, give or take a page.
        let table = Deadlines::new();
        for key in [0, 63, 64, 999_999, 1_000_000] {
            table.slot_or_grow(key);
        }
        let mut allocated = table.allocated();
        allocated.sort_unstable();
        assert_eq!(allocated, vec![64, 64, PAGE]);
        let table = Deadlines::new();
        for key in 0..1_000_000 {
            table.slot_or_grow(key);
        }
        let words: usize = table.allocated().iter().sum();
        assert!((1_000_000..1_000_000 + PAGE).contains(&words), "{words}");
        // A word keeps its address as the table grows.
        let word: *const AtomicU64 = table.slot(5);
        table.slot_or_grow(4_000_000);
        assert!(std::ptr::eq(word, table.slot(5)));
    }

    #[test]
    fn an_extension_needs_linked_my_generation_and_later() {
        let table = Deadlines::new();
        let gen = table.insert(7, 100, false);
        assert!(!table.extend(7, gen + 1, 200), "another generation");
        assert!(!table.extend(7, gen, 50), "earlier");
        assert!(!table.extend(7, gen, FAR), "too far for the word");
        assert!(table.extend(7, gen, 200));
        assert_eq!(table.tick(7), Some(200));
        // The driver meets it at 100: re-filed at 200; at 200: fired.
        let due = |filed| table.due(7, filed, &Sparse::new(), |_| unreachable!());
        assert_eq!(due(100), Due::Refile(200));
        assert_eq!(due(200), Due::Fire);
        assert!(!table.is_linked(7, gen));
        assert!(!table.extend(7, gen, 300), "fired: no extension lands");
        // The slot's next entry has the next generation.
        let next = table.insert(7, 10, false);
        assert_ne!(next, gen);
        assert!(!table.extend(7, gen, 300), "a stale handle");
        assert_eq!(table.tick(7), Some(10));
    }
}
