//! Keys that name one entry and never another: the generations behind a
//! [`Key`] (from one process-wide counter, handed out in blocks), and where
//! a compaction moved the entries they name. Shared by the public
//! [`Wheel`](super::Wheel) and the delay queue's store, each keeping its
//! entries' generations beside them.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::{Generation, Key};

/// Generations are handed to wheels in blocks from one process-wide 64-bit
/// counter: a wheel's first block is small (a queue per connection that
/// inserts a few items uses up little), and each next one twice as large,
/// up to this many; one lock of [`NEXT_GENERATION`] per block.
const MAX_GENERATION_BLOCK: u64 = 1 << 12;
const FIRST_GENERATION_BLOCK: u64 = 1 << 4;
/// The first generation not yet handed to a wheel. A `Mutex` rather than an
/// `AtomicU64` so that the wheel builds on targets without 64-bit atomics;
/// it is taken once per block.
static NEXT_GENERATION: Mutex<u64> = Mutex::new(1);
/// Past this, the counter refuses to hand out blocks (so it never wraps).
const LAST_GENERATION: u64 = u64::MAX - 2 * MAX_GENERATION_BLOCK;

/// One table's keys: its block of generations, and the entries its
/// compactions moved.
pub(crate) struct Keys {
    /// The next generation of this table's block, and the block's end.
    next_generation: u64,
    end_generation: u64,
    /// The size of the next block this table takes.
    block: u64,
    /// Entries that a compaction moved, by generation: the index their key
    /// names, and where they are now. Empty unless a compaction moved
    /// something, so the common paths only test that.
    moved: HashMap<Generation, (u32, u32)>,
}

impl Keys {
    pub(crate) fn new() -> Keys {
        Keys {
            next_generation: 0,
            end_generation: 0,
            block: FIRST_GENERATION_BLOCK,
            moved: HashMap::new(),
        }
    }

    /// A generation no key of this process has had.
    ///
    /// # Panics
    ///
    /// Once the process has handed out nearly 2^64 generations (centuries
    /// at any rate a machine can insert), rather than reuse one.
    #[track_caller]
    pub(crate) fn generation(&mut self) -> Generation {
        loop {
            if self.next_generation == self.end_generation {
                self.take_block();
            }
            let generation = self.next_generation;
            self.next_generation += 1;
            if let Some(generation) = Generation::new(generation) {
                return generation;
            }
        }
    }

    #[cold]
    #[track_caller]
    fn take_block(&mut self) {
        let mut next = NEXT_GENERATION
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let first = *next;
        assert!(
            first <= LAST_GENERATION,
            "hashwheel: this process has used up its 2^64 wheel key generations"
        );
        *next = first + self.block;
        drop(next);
        self.next_generation = first;
        self.end_generation = first + self.block;
        self.block = (self.block * 2).min(MAX_GENERATION_BLOCK);
    }

    /// Where the entry `key` names is, if it is in the table, which holds
    /// an entry of generation `generation_at(at)` at `at`.
    #[inline]
    pub(crate) fn find(
        &self,
        key: Key,
        generation_at: impl Fn(u32) -> Option<Generation>,
    ) -> Option<u32> {
        if generation_at(key.index) == Some(key.generation) {
            return Some(key.index);
        }
        if self.moved.is_empty() {
            return None;
        }
        let &(index, at) = self.moved.get(&key.generation)?;
        let here = generation_at(at) == Some(key.generation);
        (index == key.index && here).then_some(at)
    }

    /// The key of the entry of `generation` at `at`.
    #[inline]
    pub(crate) fn key_of(&self, at: u32, generation: Generation) -> Key {
        if self.moved.is_empty() {
            return Key {
                index: at,
                generation,
            };
        }
        let index = match self.moved.get(&generation) {
            Some(&(index, _)) => index,
            None => at,
        };
        Key { index, generation }
    }

    /// The entry of `generation` left the table.
    #[inline]
    pub(crate) fn forget(&mut self, generation: Generation) {
        if !self.moved.is_empty() {
            self.moved.remove(&generation);
        }
    }

    /// A compaction moved the entry of `generation` from `from` to `to`.
    pub(crate) fn moved(&mut self, generation: Generation, from: u32, to: u32) {
        self.moved
            .entry(generation)
            .and_modify(|(_, at)| *at = to)
            .or_insert((from, to));
    }

    /// Every entry left the table.
    pub(crate) fn clear_moved(&mut self) {
        self.moved.clear();
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.moved.shrink_to_fit();
    }
}
