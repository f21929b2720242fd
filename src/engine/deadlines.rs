//! The deadline words of a shard's owned entries: a timeout's deadline,
//! or an [`Interval`](crate::Interval)'s beat state.
//!
//! The words are read and written without the shard's lock (a reset to a
//! later deadline is one compare-and-swap; an interval's task takes its
//! tick with one), so they live at addresses that never move. Below
//! `shard.rs`: it imports only the wheel and the clock's millisecond.

use std::collections::TryReserveError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::Waker;

use crate::engine::clock::{on_grid, RUNTIME_MS_US};
use crate::wheel::dir::{boxed_array, try_boxed_array, try_boxed_slice, NEAR_SHIFT};
use crate::wheel::raw::{Due, Key};
use crate::wheel::store::{self, Place};

/// The deadline word of an owned wheel entry (a registered
/// [`Timeout`](crate::Timeout), or an [`Interval`](crate::Interval)'s
/// entry), one `AtomicU64` per store slot in a [`Deadlines`] table at an
/// address that never moves.
///
/// | bits  | meaning                                                    |
/// |-------|------------------------------------------------------------|
/// | 63    | [`LINKED`]: the entry is pending in the wheel              |
/// | 62    | [`BEAT`]: the entry is an [`Interval`](crate::Interval)'s  |
/// | 61    | [`UNTAKEN`]: an interval's tick fired, not taken yet;      |
/// |       | a timeout's: [`TOKIO_MS`], filed by the runtime's millisecond |
/// | 60    | [`STALLED`]: an interval's entry fired while a tick waited |
/// | 48-59 | generation of the slot: bumped by every insert into it     |
/// | 0-47  | a timeout's deadline tick, or [`FAR`]: ask the wheel; an   |
/// |       | interval's re-arm tick                                     |
///
/// While `LINKED`, a timeout's entry sits in the wheel at a tick at or
/// before the word's: the handle may move the word's deadline later with one
/// compare-and-swap and no lock ([`Deadlines::extend`]), which succeeds only
/// on "linked, a timeout's, this generation, not `FAR`". Everything else
/// changes the word under the shard's lock. When the entry comes due, the
/// driver (under the lock) re-files it at the word's deadline if that is
/// still ahead, and otherwise clears `LINKED` with a compare-and-swap and
/// fires it: a concurrent extension either lands before that (and is
/// re-filed) or fails (and the handle finds the entry fired under the lock).
///
/// # An interval's word: its beat
///
/// An interval's whole shared state is its word and its wheel entry, both
/// of which the driver reaches anyway: the word says whether a tick waits
/// to be taken ([`UNTAKEN`]) and the tick the driver re-arms the entry at
/// when it fires (the handle's next tick but one); the entry holds the
/// task's waker, as a timeout's does. No allocation of its own, no table
/// look-up: a heartbeat touches the entry, the word and the task.
///
/// | word            | the entry                    | who writes the word   |
/// |-----------------|------------------------------|-----------------------|
/// | `LINKED`        | pending, for the handle's next tick | the handle, under the lock |
/// | `LINKED \| UNTAKEN` | re-armed for the tick after; a tick waits | the handle, one compare-and-swap (takes it) |
/// | `UNTAKEN \| STALLED` | fired, not re-armed: a tick waits and the task is not woken again | the handle, under the lock (re-arms it) |
///
/// The driver (under the lock) sets `UNTAKEN` as it fires a tick and
/// re-arms the entry at the word's re-arm tick ([`Due::Rearm`]), moving the
/// task's waker out of the entry to wake it once the lock is released; it
/// puts the waker back afterwards (see `driver/mod.rs`), so that in the steady
/// state the task's poll registers nothing. While `UNTAKEN` is clear the
/// handle writes the word only under the lock, and the driver with a plain
/// store; while it is set, the handle takes the tick with a
/// compare-and-swap (clearing it, and moving the re-arm tick a period on)
/// and the driver stalls the entry with one, so one of the two wins.
/// Modelled in `tests/shuttle_beat.rs`.
pub(crate) const LINKED: u64 = 1 << 63;
/// The deadline part of a deadline word; as a value, "too far for the word:
/// the wheel holds the deadline" (about 8.9 years after the timer's start).
pub(crate) const FAR: u64 = (1 << 48) - 1;
/// The entry belongs to an interval: the driver re-arms it when it fires
/// (see [the word](LINKED)).
pub(crate) const BEAT: u64 = 1 << 62;
/// An interval's entry fired and its tick has not been taken yet.
pub(crate) const UNTAKEN: u64 = 1 << 61;
/// A timeout's entry (not [`BEAT`]) is filed at the end of the runtime
/// timer's millisecond (paused time, see `Clock` and
/// `Common::filed_tick`): it is re-filed there too when its deadline moved
/// later. The bit is an interval's [`UNTAKEN`]; a timeout's word never
/// has that.
pub(crate) const TOKIO_MS: u64 = UNTAKEN;
/// An interval's entry fired while a tick was untaken, so it was not
/// re-armed (it is fired, not linked); taking the tick re-arms it under the
/// lock.
pub(crate) const STALLED: u64 = 1 << 60;
const GEN_SHIFT: u32 = 48;
/// The generation part of a deadline word, shifted down.
pub(crate) const GEN_MASK: u64 = (1 << 12) - 1;

/// The generation in deadline word `word`.
pub(crate) fn word_gen(word: u64) -> u64 {
    (word >> GEN_SHIFT) & GEN_MASK
}

/// Where a timeout of word `word` whose deadline moved later, to `tick`, is
/// filed again: at `tick`, or at the end of its runtime millisecond if
/// [`TOKIO_MS`] (as `Common::filed_tick` files it).
#[inline]
fn refiled(word: u64, tick: u64) -> u64 {
    if word & TOKIO_MS != 0 {
        on_tokio_ms(tick)
    } else {
        tick
    }
}

/// [`refiled`] on paused time (see [`TOKIO_MS`]): out of line, as paused
/// time is, where a re-file is a turn's most common work (W15).
#[cold]
#[inline(never)]
fn on_tokio_ms(tick: u64) -> u64 {
    on_grid(tick, RUNTIME_MS_US).min(FAR - 1)
}

/// The deadline word of a linked entry of generation `gen` due at `tick`.
pub(crate) fn linked_word(gen: u64, tick: u64) -> u64 {
    LINKED | (gen << GEN_SHIFT) | tick.min(FAR)
}

/// Deadline words in a page of the table, from key [`WORDS`] on: 1,024
/// (8 KiB, as much as a page of the store's entries). A page pointer that
/// handles read without the lock is a `OnceLock`, 16 bytes: per 1,024 keys
/// that is 0.016 B per timer, where pages of the store's 256 keys cost
/// 0.0625 (W2: 56.059 B per timer against 56.106).
const WORDS_SHIFT: u32 = 10;
const WORDS: usize = 1 << WORDS_SHIFT;
/// The pages of fewer words: 64, 64, 128, 256 and 512.
const SMALL: usize = store::small_pages(WORDS_SHIFT);
/// Page pointers in a chunk: 512 (8 KiB).
const CHUNK_SHIFT: u32 = 9;
const CHUNK: usize = 1 << CHUNK_SHIFT;
/// Chunks in a group: 128 (the keys below 2^26 make group 0).
const GROUP_SHIFT: u32 = NEAR_SHIFT - WORDS_SHIFT - CHUNK_SHIFT;
const GROUP: usize = 1 << GROUP_SHIFT;
/// Groups enough for every `u32` key.
const GROUPS: usize = 1 << (32 - NEAR_SHIFT);

/// One page of [`WORDS`] deadline words: a thin pointer, 16 bytes.
type Page = OnceLock<Box<[AtomicU64; WORDS]>>;
type Chunk = [Page; CHUNK];
type Group = [OnceLock<Box<Chunk>>; GROUP];

/// The deadline words of a shard's owned entries, by key (see [`LINKED`]),
/// in pages that are allocated once (under the shard's lock, when an
/// insert first needs them) and never move or go away, so the words can be
/// read and written without the lock.
///
/// The table is laid out as the wheel's store ([`store::locate`], and a
/// radix directory as [`Dir`](crate::wheel::dir::Dir)), with pages of its
/// own size: small pages of 64 to 512 words below key 1,024, in a fixed
/// table, then pages of [`WORDS`] words, reached through chunks of 512 page
/// pointers; the chunks of the keys below 2^26 hang from a table inside
/// this one, the others from groups of 128 chunk pointers allocated when a
/// key past 2^26 first needs them. Memory follows the key count within a
/// page, and no insert allocates more than 8 KiB or copies anything: an
/// insert that opens a page allocates that page, and every 524,288 keys a
/// chunk.
///
/// The words are not given back by [`Timer::shrink`](crate::Timer::shrink):
/// a handle may be reading its word without the lock, so a page cannot go
/// without a lock on that path (8 bytes per key, up to the highest key used).
pub(crate) struct Deadlines {
    small: [OnceLock<Box<[AtomicU64]>>; SMALL],
    /// The chunks of group 0: keys below 2^26.
    near: Group,
    /// Groups 1 to 63.
    far: [OnceLock<Box<Group>>; GROUPS - 1],
}

/// The value of `lock`, made by `make` if it has none; the error where
/// that fails. (A value made beside another thread's is dropped: the
/// reservation runs before the timer is shared.)
fn try_init<T>(
    lock: &OnceLock<T>,
    make: impl FnOnce() -> Result<T, TryReserveError>,
) -> Result<&T, TryReserveError> {
    if let Some(value) = lock.get() {
        return Ok(value);
    }
    let value = make()?;
    Ok(lock.get_or_init(|| value))
}

#[cold]
#[track_caller]
fn unallocated(key: Key) -> ! {
    panic!("hashwheel: the deadline word of key {key} was read before its entry was inserted")
}

/// The group, the chunk in it and the page in that of big page `n`.
#[inline]
const fn split(n: usize) -> (usize, usize, usize) {
    (
        n >> (GROUP_SHIFT + CHUNK_SHIFT),
        (n >> CHUNK_SHIFT) & (GROUP - 1),
        n & (CHUNK - 1),
    )
}

impl Deadlines {
    pub(crate) fn new() -> Deadlines {
        Deadlines {
            small: std::array::from_fn(|_| OnceLock::new()),
            near: std::array::from_fn(|_| OnceLock::new()),
            far: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// Big page `n`, if it is allocated.
    #[inline]
    fn page(&self, n: usize) -> Option<&[AtomicU64; WORDS]> {
        let (group, chunk, page) = split(n);
        let chunks = if group == 0 {
            &self.near
        } else {
            &**self.far[group - 1].get()?
        };
        chunks[chunk].get()?[page].get().map(|words| &**words)
    }

    /// The word of `key`, allocating its page (and the page's chunk and
    /// group) if need be (under the lock).
    pub(crate) fn slot_or_grow(&self, key: Key) -> &AtomicU64 {
        let zeros = || AtomicU64::new(0);
        match store::locate(key, WORDS_SHIFT) {
            Place::Small(page, i) => &self.small[page].get_or_init(|| {
                std::iter::repeat_with(zeros)
                    .take(store::small_len(page))
                    .collect()
            })[i],
            Place::Big(n, i) => {
                let (group, chunk, page) = split(n);
                let chunks = if group == 0 {
                    &self.near
                } else {
                    &**self.far[group - 1].get_or_init(|| boxed_array(OnceLock::new))
                };
                let pages = chunks[chunk].get_or_init(|| boxed_array(OnceLock::new));
                &pages[page].get_or_init(|| boxed_array(zeros))[i]
            }
        }
    }

    /// Allocates the words of the keys below `keys` up front (see
    /// [`Builder::capacity`](crate::Builder::capacity)), page by page;
    /// the error where an allocation fails (the pages allocated before it
    /// stay).
    pub(crate) fn try_reserve(&self, keys: usize) -> Result<(), TryReserveError> {
        let zeros = || AtomicU64::new(0);
        let mut key = 0;
        while key < keys {
            let Ok(k) = u32::try_from(key) else {
                return Ok(());
            };
            key += match store::locate(k, WORDS_SHIFT) {
                Place::Small(page, _) => {
                    let len = store::small_len(page);
                    try_init(&self.small[page], || try_boxed_slice(len, zeros))?;
                    len
                }
                Place::Big(n, _) => {
                    let (group, chunk, page) = split(n);
                    let chunks = if group == 0 {
                        &self.near
                    } else {
                        &**try_init(&self.far[group - 1], || try_boxed_array(OnceLock::new))?
                    };
                    let pages = try_init(&chunks[chunk], || try_boxed_array(OnceLock::new))?;
                    try_init(&pages[page], || try_boxed_array(zeros))?;
                    WORDS
                }
            };
        }
        Ok(())
    }

    /// The word of `key`, whose page an insert allocated. Not inlined: a
    /// turn and a beat look words up from several places, which share
    /// this one copy of the code (the instruction cache a turn needs).
    #[inline(never)]
    pub(crate) fn slot(&self, key: Key) -> &AtomicU64 {
        let word = match store::locate(key, WORDS_SHIFT) {
            Place::Big(n, i) => self.page(n).map(|page| &page[i]),
            Place::Small(page, i) => self.small[page].get().map(|page| &page[i]),
        };
        match word {
            Some(word) => word,
            None => unallocated(key),
        }
    }

    /// The words allocated, in every page, and the bytes of the chunks and
    /// groups that reach them.
    #[cfg(test)]
    fn allocated(&self) -> (Vec<usize>, usize) {
        let small = self.small.iter().filter_map(|w| w.get().map(|w| w.len()));
        let groups = std::iter::once(&self.near)
            .chain(self.far.iter().filter_map(|g| g.get().map(|g| &**g)));
        let chunks: Vec<&Chunk> = groups
            .flat_map(|g| g.iter().filter_map(|c| c.get().map(|c| &**c)))
            .collect();
        let far = self.far.iter().filter(|g| g.get().is_some()).count();
        let bytes =
            chunks.len() * std::mem::size_of::<Chunk>() + far * std::mem::size_of::<Group>();
        let big = chunks
            .iter()
            .flat_map(|c| c.iter().filter_map(|w| w.get().map(|w| w.len())));
        (small.chain(big).collect(), bytes)
    }

    /// Inserted into the wheel at `key`, due at `tick` (an interval's,
    /// `flags` [`BEAT`]: re-armed at `tick` when it fires; a timeout's
    /// filed by the runtime's millisecond, [`TOKIO_MS`]): the slot's next
    /// generation, linked. Returns the generation. Under the lock.
    pub(crate) fn insert(&self, key: Key, tick: u64, flags: u64) -> u64 {
        let slot = self.slot_or_grow(key);
        let gen = (word_gen(slot.load(Ordering::Relaxed)) + 1) & GEN_MASK;
        slot.store(linked_word(gen, tick) | flags, Ordering::Release);
        gen
    }

    /// Moves the deadline of the linked timeout `key` of generation `gen`
    /// to `tick` if that is later: one compare-and-swap, no lock. Returns
    /// `false` where it did nothing (not linked, an interval's, another
    /// generation, not later, or too far for the word): the caller takes
    /// the lock.
    #[inline]
    pub(crate) fn extend(&self, key: Key, gen: u64, tick: u64) -> bool {
        let slot = self.slot(key);
        let cur = slot.load(Ordering::Acquire);
        let old = cur & FAR;
        cur & (LINKED | BEAT) == LINKED
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
    /// `filed`, holding `waker` (under the lock).
    ///
    /// A timeout's: [`Due::Refile`] at its extended deadline (later than
    /// `filed`), or [`Due::Fire`] once it is marked fired (`LINKED`
    /// cleared, in a compare-and-swap that a concurrent extension makes
    /// retry). It fires only at the deadline it is filed at, which the
    /// wheel hands out once the clock has reached it: never early.
    ///
    /// An interval's ([`BEAT`]): see [`beat_due`](Self::beat_due).
    #[inline]
    pub(crate) fn due(
        &self,
        key: Key,
        filed: u64,
        waker: &mut Option<Waker>,
        woken: impl FnOnce(Waker),
    ) -> Due {
        let slot = self.slot(key);
        let mut cur = slot.load(Ordering::Acquire);
        if cur & BEAT != 0 {
            return Self::beat_due(slot, cur, filed, waker, woken);
        }
        loop {
            let tick = cur & FAR;
            if cur & LINKED != 0 && tick != FAR && tick > filed {
                return Due::Refile(refiled(cur, tick));
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

    /// [`due`](Self::due) for an interval's entry, filed at `filed`, word
    /// `slot` (read as `word`).
    ///
    /// A tick not waiting ([`UNTAKEN`] clear): the entry is re-armed at the
    /// word's re-arm tick ([`Due::Rearm`]) and the word marked `UNTAKEN`,
    /// its tick left as it is (the handle moves it on as it takes the
    /// tick); `woken` gets the task's waker, moved out of the entry under
    /// the lock (no foreign code runs: it only moves), to wake once the
    /// lock is released and put back (see `driver/mod.rs`). A re-arm tick too
    /// far for the word (a period of years) fires the entry instead, not
    /// re-armed ([`Due::Stall`], marked as stalled; the task re-arms it
    /// under the lock as it takes the tick), its waker handed to `woken`
    /// all the same.
    ///
    /// A tick still waiting: the entry fires unwoken, keeping its waker,
    /// and is marked [`STALLED`] ([`Due::Stall`]): a task that stopped
    /// calling `tick` is not woken again. The handle may take the waiting
    /// tick meanwhile (its compare-and-swap clears `UNTAKEN`): then it is
    /// re-armed after all.
    fn beat_due(
        slot: &AtomicU64,
        mut word: u64,
        filed: u64,
        waker: &mut Option<Waker>,
        woken: impl FnOnce(Waker),
    ) -> Due {
        debug_assert!(
            word & LINKED != 0,
            "an interval's entry due with its word unlinked"
        );
        loop {
            if word & UNTAKEN == 0 {
                // Only the driver sets `UNTAKEN`, under the lock; while it
                // is clear the handle writes the word only under the lock.
                let after = (word & FAR).max(filed + 1);
                let far = after >= FAR;
                let word = if far {
                    (word & !LINKED) | UNTAKEN | STALLED
                } else {
                    word | UNTAKEN
                };
                slot.store(word, Ordering::Release);
                if let Some(waker) = waker.take() {
                    woken(waker);
                }
                return if far { Due::Stall } else { Due::Rearm(after) };
            }
            match slot.compare_exchange(
                word,
                (word | STALLED) & !LINKED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Due::Stall,
                Err(actual) => word = actual,
            }
        }
    }

    /// The entry `key` left the wheel (fired, cancelled or removed) under
    /// the lock: no extension may land on it any more.
    pub(crate) fn unlink(&self, key: Key) {
        self.slot(key).fetch_and(!LINKED, Ordering::AcqRel);
    }

    /// The owned entry `key` of generation `gen` was taken out of the wheel
    /// by its handle (dropped or cancelled) under the lock: its word keeps
    /// the generation and nothing else. A plain store, not a
    /// read-modify-write: the handle is the only writer without the lock,
    /// and the driver (under it) only ever clears `LINKED`, which this
    /// clears too.
    ///
    /// Why it is written at all: the next insert at this key (the store
    /// hands out the key freed last, so on one thread that is the
    /// handle's next timeout) reads the word for its generation, and a
    /// word last written when this entry was inserted (seconds ago, for a
    /// read timeout dropped when the other branch of a `select!` won) is
    /// a cache miss that the insert waits for. Stored here, in the same
    /// lock as the unlink of the entry and its neighbours (misses of their
    /// own), the line comes in beside theirs and the store does not wait
    /// for it (W14, issue 47).
    ///
    /// Returns whether the entry was an interval's (its word says so from
    /// its registration to its removal), read from the same word before it
    /// is cleared: one lookup of the word, not two (W10: 26 instructions a
    /// request). Its owner alone clears or takes the word's tick, so the
    /// load and the store need no compare-and-swap.
    #[inline]
    pub(crate) fn remove(&self, key: Key, gen: u64) -> bool {
        let slot = self.slot(key);
        let beat = slot.load(Ordering::Acquire) & BEAT != 0;
        slot.store(gen << GEN_SHIFT, Ordering::Release);
        beat
    }

    /// The timeout `key` of generation `gen` was reset under the lock:
    /// linked at `tick`, or not (it fired at once); `flags` as
    /// [`insert`](Self::insert)'s.
    pub(crate) fn set(&self, key: Key, gen: u64, tick: u64, linked: bool, flags: u64) {
        let word = linked_word(gen, tick) | flags;
        let word = if linked { word } else { word & !LINKED };
        self.slot(key).store(word, Ordering::Release);
    }

    /// The interval `key` of generation `gen` was re-armed under the lock:
    /// linked, no tick waiting, re-armed at `after` when it fires; or, if
    /// the re-arm fired it at once, a tick waiting and the entry fired,
    /// not linked (as a stall leaves it).
    pub(crate) fn set_beat(&self, key: Key, gen: u64, after: u64, fired_now: bool) {
        let word = linked_word(gen, after) | BEAT;
        let word = if fired_now {
            (word & !LINKED) | UNTAKEN | STALLED
        } else {
            word
        };
        self.slot(key).store(word, Ordering::Release);
    }

    /// An interval's word, for its handle: whether a tick waits
    /// ([`UNTAKEN`]), and the re-arm tick.
    #[inline]
    pub(crate) fn beat(&self, key: Key) -> u64 {
        self.slot(key).load(Ordering::Acquire)
    }

    /// The handle of interval `key` takes the tick waiting in `word` (as
    /// [`beat`](Self::beat) read it), re-armed and linked: the re-arm tick
    /// becomes `after`, with one compare-and-swap and no lock. `false` if
    /// no such tick waits any more (the driver stalled the entry
    /// meanwhile): the handle re-arms it under the lock.
    #[inline]
    pub(crate) fn take_beat(&self, key: Key, word: u64, after: u64) -> bool {
        Self::take_beat_at(self.slot(key), word, after)
    }

    /// [`take_beat`](Self::take_beat) on the word `slot`.
    #[inline]
    pub(crate) fn take_beat_at(slot: &AtomicU64, word: u64, after: u64) -> bool {
        word & (LINKED | UNTAKEN | STALLED) == LINKED | UNTAKEN
            && after < FAR
            && slot
                .compare_exchange(
                    word,
                    (word & !(UNTAKEN | FAR)) | after,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_pages_cover_every_key_once_and_follow_the_key_count() {
        let mut seen = std::collections::HashSet::new();
        let edges = (0..33u32).flat_map(|j| {
            let edge = 1u64 << j;
            [edge - 1, edge, edge + 1]
        });
        let keys = (0..5_000u64)
            .chain(edges)
            .chain([u64::from(u32::MAX) - 3, u64::from(u32::MAX) - 4])
            .filter_map(|k| u32::try_from(k).ok())
            .collect::<std::collections::BTreeSet<_>>();
        for key in keys {
            let place = store::locate(key, WORDS_SHIFT);
            let (page, i, len) = match place {
                Place::Small(page, i) => {
                    assert!(page < SMALL, "key {key}");
                    (page, i, store::small_len(page))
                }
                Place::Big(n, i) => {
                    let (group, chunk, _) = split(n);
                    assert!(n > 0 && group < GROUPS && chunk < GROUP, "key {key}");
                    (SMALL + n, i, WORDS)
                }
            };
            assert!(i < len, "key {key}");
            assert!(seen.insert((page, i)), "key {key} shares a word");
        }
        // Only the pages an insert needs, each allocated once: a million
        // keys take a million words, give or take a page, and one chunk.
        let table = Deadlines::new();
        for key in [0, 63, 64, 999_999, 1_000_000] {
            table.slot_or_grow(key);
        }
        let (mut allocated, bytes) = table.allocated();
        allocated.sort_unstable();
        assert_eq!(allocated, vec![64, 64, WORDS]);
        assert_eq!(bytes, 8 * 1024, "one chunk of 512 pages");
        let table = Deadlines::new();
        for key in 0..1_000_000 {
            table.slot_or_grow(key);
        }
        let words: usize = table.allocated().0.iter().sum();
        assert!((1_000_000..1_000_000 + WORDS).contains(&words), "{words}");
        // A word keeps its address as the table grows; far keys get a
        // group (2 KiB) and a chunk of their own.
        let word: *const AtomicU64 = table.slot(5);
        table.slot_or_grow(4_000_000);
        table.slot_or_grow(u32::MAX - 1);
        assert!(std::ptr::eq(word, table.slot(5)));
        assert_eq!(table.allocated().1, 4 * 8 * 1024 + 2 * 1024);
    }

    /// Issue 26: the first insert reaching key 2^j allocated and filled a
    /// directory of 2^j pages (411 µs at 2^24). Now the word of any key
    /// costs at most a page, a chunk and a group (8, 8 and 2 KiB).
    #[test]
    fn a_word_at_any_key_allocates_at_most_a_page_a_chunk_and_a_group() {
        let table = Deadlines::new();
        let heap = |table: &Deadlines| {
            let (words, dirs) = table.allocated();
            words.iter().sum::<usize>() * 8 + dirs
        };
        let edges = (0..33).flat_map(|j| {
            let edge = 1u64 << j;
            [edge - 1, edge, edge + 1, edge + 256]
        });
        let mut before = 0;
        for key in edges.filter_map(|k| u32::try_from(k).ok()) {
            table.slot_or_grow(key);
            let now = heap(&table);
            assert!(
                now - before <= (8 + 8 + 2) * 1024,
                "{} bytes at key {key}",
                now - before
            );
            before = now;
        }
    }

    #[test]
    fn an_extension_needs_linked_my_generation_and_later() {
        let table = Deadlines::new();
        let gen = table.insert(7, 100, 0);
        assert!(!table.extend(7, gen + 1, 200), "another generation");
        assert!(!table.extend(7, gen, 50), "earlier");
        assert!(!table.extend(7, gen, FAR), "too far for the word");
        assert!(table.extend(7, gen, 200));
        assert_eq!(table.tick(7), Some(200));
        // The driver meets it at 100: re-filed at 200; at 200: fired.
        let due = |filed| table.due(7, filed, &mut None, |_| unreachable!());
        assert_eq!(due(100), Due::Refile(200));
        assert_eq!(due(200), Due::Fire);
        assert!(!table.is_linked(7, gen));
        assert!(!table.extend(7, gen, 300), "fired: no extension lands");
        // The slot's next entry has the next generation.
        let next = table.insert(7, 10, 0);
        assert_ne!(next, gen);
        assert!(!table.extend(7, gen, 300), "a stale handle");
        assert_eq!(table.tick(7), Some(10));
    }
}
