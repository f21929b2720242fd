//! A hierarchical bit set: one bit per bucket, with summary words above so
//! that finding the next occupied bucket costs O(log64 n) even in huge wheels.

// What only the timer uses of the wheel's core (its link order, interval
// beats, detached entries, the sparse table) is dead in the wheel-alone
// build (neither `tokio` nor `thread`), and only there.
#![cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]

/// Bits `0..len`, with `levels[0]` holding one bit per index and each higher
/// level one bit per non-zero word of the level below it.
#[derive(Debug, Clone)]
pub(crate) struct BitSet {
    levels: Vec<Vec<u64>>,
}

impl BitSet {
    pub(crate) fn new(len: usize) -> BitSet {
        let mut levels = Vec::new();
        let mut len = len.max(1);
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0; words]);
            if words == 1 {
                break;
            }
            len = words;
        }
        BitSet { levels }
    }

    /// The heap [`new`](Self::new)`(len)` takes, in bytes: a bit per index
    /// and a summary bit per word, level by level (about `len / 8`).
    pub(crate) fn bytes(len: usize) -> usize {
        let mut bytes = 0;
        let mut len = len.max(1);
        loop {
            let words = len.div_ceil(64);
            bytes += words * std::mem::size_of::<u64>() + std::mem::size_of::<Vec<u64>>();
            if words == 1 {
                return bytes;
            }
            len = words;
        }
    }

    #[inline]
    pub(crate) fn set(&mut self, mut index: usize) {
        for level in &mut self.levels {
            let word = &mut level[index / 64];
            let was_empty = *word == 0;
            *word |= 1 << (index % 64);
            if !was_empty {
                break;
            }
            index /= 64;
        }
    }

    #[inline]
    pub(crate) fn clear(&mut self, mut index: usize) {
        for level in &mut self.levels {
            let word = &mut level[index / 64];
            *word &= !(1 << (index % 64));
            if *word != 0 {
                break;
            }
            index /= 64;
        }
    }

    /// Clears every bit.
    pub(crate) fn clear_all(&mut self) {
        for level in &mut self.levels {
            level.fill(0);
        }
    }

    /// The first set index at or after `from`, without wrapping.
    #[inline]
    pub(crate) fn next_set(&self, from: usize) -> Option<usize> {
        self.next_in(0, from)
    }

    /// The first set index at or after `from`, wrapping around to 0.
    #[inline]
    pub(crate) fn next_set_cyclic(&self, from: usize) -> Option<usize> {
        self.next_set(from).or_else(|| self.next_set(0))
    }

    fn next_in(&self, level: usize, from: usize) -> Option<usize> {
        let words = &self.levels[level];
        let w = from / 64;
        let first = *words.get(w)? & (!0u64 << (from % 64));
        if first != 0 {
            return Some(w * 64 + first.trailing_zeros() as usize);
        }
        if level + 1 == self.levels.len() {
            return None;
        }
        let next_word = self.next_in(level + 1, w + 1)?;
        Some(next_word * 64 + words[next_word].trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::BitSet;

    #[test]
    fn finds_next_across_words_and_levels() {
        let mut b = BitSet::new(64 * 64 * 3);
        assert_eq!(b.next_set(0), None);
        assert_eq!(b.next_set(0), None);
        b.set(5);
        b.set(64 * 64 * 2 + 7);
        assert_eq!(b.next_set(0), Some(5));
        assert_eq!(b.next_set(5), Some(5));
        assert_eq!(b.next_set(6), Some(64 * 64 * 2 + 7));
        assert_eq!(b.next_set(64 * 64 * 2 + 8), None);
        assert_eq!(b.next_set_cyclic(64 * 64 * 2 + 8), Some(5));
        b.clear(5);
        assert_eq!(b.next_set(0), Some(64 * 64 * 2 + 7));
        b.clear(64 * 64 * 2 + 7);
        assert_eq!(b.next_set(0), None);
        assert_eq!(b.next_set_cyclic(0), None);
    }

    #[test]
    fn tiny_sets() {
        let mut b = BitSet::new(2);
        b.set(1);
        assert_eq!(b.next_set(0), Some(1));
        assert_eq!(b.next_set(2), None);
        assert_eq!(b.next_set_cyclic(2), Some(1));
    }
}
