//! The deadline words of a shard's owned entries, and what an
//! [`Interval`](crate::Interval) shares with the driver (its [`Beat`]).
//!
//! The words are read and written without the shard's lock (a reset to a
//! later deadline is one compare-and-swap), so they live at addresses that
//! never move. Below `shard.rs`: it imports only the wheel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::wheel::raw::{Due, Key};

/// The deadline word of an owned wheel entry (a registered
/// [`Timeout`](crate::Timeout)), one `AtomicU64` per slab slot in a
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

/// Slots in the first chunk of a [`Deadlines`] table (keys below it); chunk
/// `i > 0` holds the keys from `FIRST_CHUNK << (i - 1)` up to twice that,
/// so the table for keys below a power of two is that many words: it grows
/// by doubling in step with the slab.
const FIRST_CHUNK: usize = 64;
/// Chunks enough for every key (`u32`).
const CHUNKS: usize = 27;

/// The deadline words of a shard's owned entries, by slab key (see
/// [`LINKED`]): chunks that are allocated once (under the shard's lock, when
/// an insert first needs them) and never move or go away, so the words can
/// be read and written without the lock.
pub(crate) struct Deadlines {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl Deadlines {
    pub(crate) fn new() -> Deadlines {
        Deadlines {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The chunk and the index in it of `key`.
    fn locate(key: Key) -> (usize, usize) {
        let k = key as usize;
        if k < FIRST_CHUNK {
            return (0, k);
        }
        let top = (usize::BITS - 1 - k.leading_zeros()) as usize;
        (
            top + 1 - FIRST_CHUNK.trailing_zeros() as usize,
            k - (1 << top),
        )
    }

    /// The words in chunk `chunk`.
    fn chunk_len(chunk: usize) -> usize {
        if chunk == 0 {
            FIRST_CHUNK
        } else {
            FIRST_CHUNK << (chunk - 1)
        }
    }

    /// The word of `key`, allocating its chunk if need be (under the lock).
    pub(crate) fn slot_or_grow(&self, key: Key) -> &AtomicU64 {
        let (chunk, i) = Self::locate(key);
        &self.chunks[chunk].get_or_init(|| {
            (0..Self::chunk_len(chunk))
                .map(|_| AtomicU64::new(0))
                .collect()
        })[i]
    }

    /// The word of `key`, whose chunk an insert allocated.
    pub(crate) fn slot(&self, key: Key) -> &AtomicU64 {
        let (chunk, i) = Self::locate(key);
        &self.chunks[chunk]
            .get()
            .expect("hashwheel: a deadline word was read before its entry was inserted")[i]
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
    /// ([`Due::Rearm`]), and `woken` gets the beat to wake once the lock is
    /// released. One whose last tick is still untaken fires, unwoken, and
    /// is marked [`STALLED`]: a task that stopped calling `tick` is not
    /// woken again. (An interval's word changes only under the lock: its
    /// handle never extends it without it.)
    #[inline]
    pub(crate) fn due(
        &self,
        key: Key,
        filed: u64,
        beats: &[Option<Arc<Beat>>],
        woken: impl FnOnce(Arc<Beat>),
    ) -> Due {
        let slot = self.slot(key);
        let mut cur = slot.load(Ordering::Acquire);
        if cur & BEAT != 0 && cur & LINKED != 0 {
            if let Some(Some(beat)) = beats.get(key as usize) {
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
        beat: &Arc<Beat>,
        woken: impl FnOnce(Arc<Beat>),
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
                    woken(beat.clone());
                    return Due::Fire;
                }
                slot.store((cur & !FAR) | after, Ordering::Release);
                beat.state.store(state | UNTAKEN, Ordering::Release);
                woken(beat.clone());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_chunks_cover_every_key_once_and_grow_by_doubling() {
        let mut seen = std::collections::HashSet::new();
        for key in (0..5_000).chain([u32::MAX - 3, u32::MAX - 4]) {
            let (chunk, i) = Deadlines::locate(key);
            assert!(
                chunk < CHUNKS && i < Deadlines::chunk_len(chunk),
                "key {key}"
            );
            assert!(seen.insert((chunk, i)), "key {key} shares a word");
        }
        // Keys below a power of two take that many words, as the slab's
        // capacity: a million keys, 1,048,576 words (8.4 bytes a key).
        for (keys, words) in [(1 << 18, 1 << 18), (1_000_000, 1 << 20), (64, 64)] {
            let (last, _) = Deadlines::locate(keys - 1);
            let total: usize = (0..=last).map(Deadlines::chunk_len).sum();
            assert_eq!(total, words, "{keys} keys");
        }
        let table = Deadlines::new();
        table.slot_or_grow(999_999);
        let allocated: Vec<usize> = table
            .chunks
            .iter()
            .filter_map(|chunk| chunk.get().map(|words| words.len()))
            .collect();
        assert_eq!(allocated, vec![1 << 19], "only the chunk an insert needs");
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
        let due = |filed| table.due(7, filed, &[], |_| unreachable!());
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
