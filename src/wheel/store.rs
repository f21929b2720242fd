//! Storage by key that grows without moving what it holds: the wheel's
//! entries ([`Store`]), and the layout that every other per-key table of the
//! timer shares ([`locate`]).
//!
//! # Layout
//!
//! Keys are laid out in *pages*: small ones first, each twice the size of
//! the one before, so that a small wheel allocates little, then pages of
//! [`PAGE`] keys each:
//!
//! | page | keys                         | size          |
//! |------|------------------------------|---------------|
//! | 0    | `0..64`                      | 64            |
//! | 1    | `64..128`                    | 64            |
//! | 2-4  | `128..256` ... `512..1024`   | 128, 256, 512 |
//! | n ≥ 5 | `(n-4)·1024..(n-3)·1024`    | 1,024         |
//!
//! A key maps to its page and its place there with a comparison, a shift
//! and a mask ([`locate`]); no hashing. A page is allocated at its full size
//! when its first key is handed out and is never copied as the store grows:
//! an insert costs at most one allocation of a page (32 KiB of the timer's
//! 32-byte entries), whatever the size of the store. The page directory is a
//! `Vec` of pages, which moves only page headers (24 bytes per 1,024 keys)
//! when it grows.
//!
//! The only copies are of one page at most: where a caller asked for an
//! exact capacity ([`Store::reserve`], or the last page after
//! [`Store::shrink`] or [`Store::compact`]), the last page may be allocated
//! short, and grows to its full size (one reallocation of at most a page)
//! when keys reach past it.
//!
//! Vacant slots hold the next vacant key: one free list, threaded through
//! the store, that hands out the most recently freed key first (as `slab`
//! does).

use std::mem;

/// Keys in the first page (and in the second).
pub(crate) const FIRST_PAGE: usize = 1 << FIRST_SHIFT;
const FIRST_SHIFT: u32 = 6;
/// Keys in every page from [`SMALL_PAGES`] on.
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;
const PAGE_SHIFT: u32 = 10;
/// The pages smaller than [`PAGE`]: 64, 64, 128, 256 and 512 keys.
pub(crate) const SMALL_PAGES: usize = (PAGE_SHIFT - FIRST_SHIFT + 1) as usize;
/// Pages enough for every `u32` key.
pub(crate) const MAX_PAGES: usize = SMALL_PAGES + (1 << (32 - PAGE_SHIFT)) - 1;

/// The page of `key` and its index in that page (see the module docs).
#[inline]
pub(crate) fn locate(key: u32) -> (usize, usize) {
    let k = key as usize;
    if k >= PAGE {
        return ((k >> PAGE_SHIFT) + SMALL_PAGES - 1, k & (PAGE - 1));
    }
    if k < FIRST_PAGE {
        return (0, k);
    }
    let top = usize::BITS - 1 - k.leading_zeros();
    ((top - FIRST_SHIFT + 1) as usize, k - (1 << top))
}

/// The number of keys in page `page`.
#[inline]
pub(crate) fn page_len(page: usize) -> usize {
    match page {
        0 => FIRST_PAGE,
        p if p < SMALL_PAGES => FIRST_PAGE << (p - 1),
        _ => PAGE,
    }
}

/// The first key of page `page`.
#[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
pub(crate) fn page_start(page: usize) -> usize {
    match page {
        0 => 0,
        p if p < SMALL_PAGES => FIRST_PAGE << (p - 1),
        p => (p + 1 - SMALL_PAGES) << PAGE_SHIFT,
    }
}

/// The list end of the free list.
const NONE: u32 = u32::MAX;

#[derive(Debug)]
enum Slot<T> {
    /// Free; holds the next free key ([`NONE`] at the end of the list).
    Vacant(u32),
    Occupied(T),
}

/// The bytes a value of type `T` takes in the store.
#[cfg(test)]
pub(crate) const fn slot_size<T>() -> usize {
    mem::size_of::<Slot<T>>()
}

/// Values keyed by `u32`, in pages that never move (see the module docs).
///
/// Keys are handed out by [`insert`](Self::insert): a freed one first, else
/// the next never used. Every key below [`used`](Self::used) has a slot.
#[derive(Debug)]
pub(crate) struct Store<T> {
    pages: Vec<Vec<Slot<T>>>,
    /// Keys with a slot, vacant or not: the next fresh key.
    used: usize,
    /// Head of the free list.
    free: u32,
    len: usize,
    /// The sum of the pages' capacities.
    capacity: usize,
}

impl<T> Default for Store<T> {
    fn default() -> Store<T> {
        Store::new()
    }
}

impl<T> Store<T> {
    /// An empty store; allocates nothing.
    pub(crate) const fn new() -> Store<T> {
        Store {
            pages: Vec::new(),
            used: 0,
            free: NONE,
            len: 0,
            capacity: 0,
        }
    }

    /// Values held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Values the store holds without allocating.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keys with a slot: one past the highest key handed out since the
    /// last [`shrink`](Self::shrink) or [`compact`](Self::compact).
    #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// The pages allocated (each of [`page_len`] keys, the last maybe short).
    #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
    pub(crate) fn pages(&self) -> usize {
        self.pages.len()
    }

    /// The key the next [`insert`](Self::insert) hands out.
    #[inline]
    pub(crate) fn vacant_key(&self) -> u32 {
        if self.free != NONE {
            self.free
        } else {
            self.used as u32
        }
    }

    /// Stores `value`; returns its key.
    ///
    /// # Panics
    ///
    /// If every `u32` key but [`u32::MAX`] is taken (callers stop well
    /// before), or an allocation fails.
    #[inline]
    pub(crate) fn insert(&mut self, value: T) -> u32 {
        let key = self.free;
        if key != NONE {
            let (page, i) = locate(key);
            let slot = &mut self.pages[page][i];
            let Slot::Vacant(next) = mem::replace(slot, Slot::Occupied(value)) else {
                unreachable!("hashwheel: the free list met an occupied slot");
            };
            self.free = next;
            self.len += 1;
            return key;
        }
        self.push(value)
    }

    /// [`insert`](Self::insert) at the next fresh key.
    fn push(&mut self, value: T) -> u32 {
        let key = u32::try_from(self.used)
            .ok()
            .filter(|&k| k != NONE)
            .expect("hashwheel: the store ran out of keys");
        let (page, i) = locate(key);
        if page == self.pages.len() {
            self.pages.push(Vec::new());
        }
        let slots = &mut self.pages[page];
        debug_assert_eq!(slots.len(), i, "fresh keys come in order");
        if slots.len() == slots.capacity() {
            // A new page (allocated once, at its full size), or the short
            // last page of an exact reservation.
            let before = slots.capacity();
            slots.reserve_exact(page_len(page) - slots.len());
            self.capacity += slots.capacity() - before;
        }
        slots.push(Slot::Occupied(value));
        self.used += 1;
        self.len += 1;
        key
    }

    /// The value at `key`, if there is one.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<&T> {
        let (page, i) = locate(key);
        match self.pages.get(page)?.get(i)? {
            Slot::Occupied(value) => Some(value),
            Slot::Vacant(_) => None,
        }
    }

    /// The value at `key`, if there is one.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: u32) -> Option<&mut T> {
        let (page, i) = locate(key);
        match self.pages.get_mut(page)?.get_mut(i)? {
            Slot::Occupied(value) => Some(value),
            Slot::Vacant(_) => None,
        }
    }

    /// Takes out the value at `key`, if there is one.
    #[inline]
    pub(crate) fn try_remove(&mut self, key: u32) -> Option<T> {
        let (page, i) = locate(key);
        let slot = self.pages.get_mut(page)?.get_mut(i)?;
        if let Slot::Vacant(_) = slot {
            return None;
        }
        let Slot::Occupied(value) = mem::replace(slot, Slot::Vacant(self.free)) else {
            unreachable!()
        };
        self.free = key;
        self.len -= 1;
        Some(value)
    }

    /// Takes out the value at `key`.
    ///
    /// # Panics
    ///
    /// If `key` holds no value.
    #[inline]
    #[track_caller]
    pub(crate) fn remove(&mut self, key: u32) -> T {
        self.try_remove(key)
            .unwrap_or_else(|| panic!("hashwheel: no entry at key {key}"))
    }

    /// Makes room for `additional` more values: exactly, so that the
    /// capacity becomes `len + additional` where it was less.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let mut short = (self.len + additional).saturating_sub(self.capacity);
        while short > 0 {
            // The last page, if it is short, then new ones.
            let page = match self.pages.last() {
                Some(last) if last.capacity() < page_len(self.pages.len() - 1) => {
                    self.pages.len() - 1
                }
                _ => {
                    assert!(
                        self.pages.len() < MAX_PAGES,
                        "hashwheel: the store ran out of keys"
                    );
                    self.pages.push(Vec::new());
                    self.pages.len() - 1
                }
            };
            let slots = &mut self.pages[page];
            let before = slots.capacity();
            let room = page_len(page) - before;
            slots.reserve_exact(room.min(short) + before - slots.len());
            let got = slots.capacity() - before;
            self.capacity += got;
            short = short.saturating_sub(got.max(1));
        }
    }

    /// Gives back the vacant slots above the highest stored key, and with
    /// them every page they emptied; all of it when the store is empty.
    /// Values do not move. O(keys used). Returns the slots given back.
    pub(crate) fn shrink(&mut self) -> usize {
        let before = self.capacity;
        if self.len == 0 {
            *self = Store::new();
            return before;
        }
        let mut used = self.used;
        while used > 0 {
            let (page, i) = locate((used - 1) as u32);
            if let Slot::Occupied(_) = self.pages[page][i] {
                break;
            }
            used -= 1;
        }
        self.truncate(used);
        self.relink_free();
        before - self.capacity
    }

    /// Moves values from the top of the store into its vacant slots, so
    /// that the keys used are `0..len`, and gives back the rest; the
    /// capacity becomes the length. Calls `moved(value, from, to)` for
    /// each value moved. O(keys used).
    pub(crate) fn compact(&mut self, mut moved: impl FnMut(&mut T, u32, u32)) {
        if self.len == 0 {
            *self = Store::new();
            return;
        }
        let mut low = 0;
        let mut top = self.used;
        loop {
            while low < top && self.is_occupied(low) {
                low += 1;
            }
            while top > low && !self.is_occupied(top - 1) {
                top -= 1;
            }
            if low + 1 >= top {
                break;
            }
            let from = (top - 1) as u32;
            let (page, i) = locate(from);
            let value = mem::replace(&mut self.pages[page][i], Slot::Vacant(NONE));
            let to = low as u32;
            let (page, i) = locate(to);
            self.pages[page][i] = value;
            if let Slot::Occupied(value) = &mut self.pages[page][i] {
                moved(value, from, to);
            }
            top -= 1;
            low += 1;
        }
        debug_assert_eq!(top, self.len);
        self.truncate(self.len);
        self.free = NONE;
    }

    fn is_occupied(&self, key: usize) -> bool {
        let (page, i) = locate(key as u32);
        matches!(self.pages[page][i], Slot::Occupied(_))
    }

    /// Keeps the slots of the keys below `used` and gives back the rest:
    /// pages past it, and the tail of its last page. The free list must be
    /// rebuilt after.
    fn truncate(&mut self, used: usize) {
        self.used = used;
        let keep = if used == 0 {
            0
        } else {
            locate((used - 1) as u32).0 + 1
        };
        self.pages.truncate(keep);
        self.pages.shrink_to_fit();
        if let Some(last) = self.pages.last_mut() {
            let start = page_start(keep - 1);
            last.truncate(used - start);
            last.shrink_to_fit();
        }
        self.capacity = self.pages.iter().map(Vec::capacity).sum();
    }

    /// Rebuilds the free list from the vacant slots below `used`, lowest
    /// key first.
    fn relink_free(&mut self) {
        self.free = NONE;
        for key in (0..self.used as u32).rev() {
            let (page, i) = locate(key);
            if let Slot::Vacant(next) = &mut self.pages[page][i] {
                *next = self.free;
                self.free = key;
            }
        }
    }

    /// Drops every value, keeping the capacity.
    pub(crate) fn clear(&mut self) {
        for page in &mut self.pages {
            page.clear();
        }
        self.used = 0;
        self.free = NONE;
        self.len = 0;
    }

    /// Every stored value, with its key, in key order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut T)> + '_ {
        self.pages.iter_mut().enumerate().flat_map(|(page, slots)| {
            let start = page_start(page);
            slots
                .iter_mut()
                .enumerate()
                .filter_map(move |(i, slot)| match slot {
                    Slot::Occupied(value) => Some(((start + i) as u32, value)),
                    Slot::Vacant(_) => None,
                })
        })
    }
}

/// A sparse table by key on the same pages as the [`Store`]: a page is
/// allocated when a key in it is first set, and [`shrink`](Self::shrink)
/// gives back the pages that hold nothing. For tables that only some
/// entries use (the timer's interval beats and scheduled tasks): an insert
/// allocates at most one page, never copies one.
#[derive(Debug)]
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
pub(crate) struct Sparse<T> {
    pages: Vec<Option<SparsePage<T>>>,
    len: usize,
}

#[derive(Debug)]
struct SparsePage<T> {
    slots: Box<[Option<T>]>,
    live: usize,
}

impl<T> Default for Sparse<T> {
    fn default() -> Sparse<T> {
        Sparse::new()
    }
}

#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
impl<T> Sparse<T> {
    /// An empty table; allocates nothing.
    pub(crate) const fn new() -> Sparse<T> {
        Sparse {
            pages: Vec::new(),
            len: 0,
        }
    }

    /// Values held.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The value at `key`.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<&T> {
        let (page, i) = locate(key);
        self.pages.get(page)?.as_ref()?.slots[i].as_ref()
    }

    /// Sets the value at `key`; returns the one it replaces.
    pub(crate) fn insert(&mut self, key: u32, value: T) -> Option<T> {
        let (page, i) = locate(key);
        if self.pages.len() <= page {
            self.pages.resize_with(page + 1, || None);
        }
        let page = self.pages[page].get_or_insert_with(|| SparsePage {
            slots: (0..page_len(page)).map(|_| None).collect(),
            live: 0,
        });
        let old = page.slots[i].replace(value);
        if old.is_none() {
            page.live += 1;
            self.len += 1;
        }
        old
    }

    /// Takes out the value at `key`.
    #[inline]
    pub(crate) fn remove(&mut self, key: u32) -> Option<T> {
        let (page, i) = locate(key);
        let page = self.pages.get_mut(page)?.as_mut()?;
        let old = page.slots[i].take();
        if old.is_some() {
            page.live -= 1;
            self.len -= 1;
        }
        old
    }

    /// Every value, in key order.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> + '_ {
        self.pages
            .iter()
            .flatten()
            .flat_map(|page| page.slots.iter().flatten())
    }

    /// Gives back every page that holds no value. Returns the bytes freed.
    pub(crate) fn shrink(&mut self) -> usize {
        let mut freed = 0;
        for page in &mut self.pages {
            if page.as_ref().is_some_and(|p| p.live == 0) {
                let slots = page.take().map_or(0, |p| p.slots.len());
                freed += slots * mem::size_of::<Option<T>>();
            }
        }
        while let Some(None) = self.pages.last() {
            self.pages.pop();
        }
        let cap = self.pages.capacity();
        self.pages.shrink_to_fit();
        freed + (cap - self.pages.capacity()) * mem::size_of::<Option<SparsePage<T>>>()
    }

    /// The slots of the pages allocated.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn allocated_slots(&self) -> usize {
        self.pages.iter().flatten().map(|p| p.slots.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_tile_the_keys_and_locate_is_exact_at_every_boundary() {
        // Every page starts where the one before ends.
        for page in 1..SMALL_PAGES + 4 {
            assert_eq!(page_start(page), page_start(page - 1) + page_len(page - 1));
        }
        assert_eq!(
            (0..SMALL_PAGES).map(page_len).collect::<Vec<_>>(),
            vec![64, 64, 128, 256, 512]
        );
        assert_eq!(page_start(SMALL_PAGES), PAGE);
        let boundaries = (0..MAX_PAGES)
            .step_by(997)
            .chain(0..SMALL_PAGES + 3)
            .chain([MAX_PAGES - 1])
            .map(page_start);
        for start in boundaries {
            for key in [start.wrapping_sub(1), start, start + 1] {
                let Ok(key) = u32::try_from(key) else {
                    continue;
                };
                let (page, i) = locate(key);
                assert!(i < page_len(page), "key {key}");
                assert_eq!(page_start(page) + i, key as usize, "key {key}");
            }
        }
        assert_eq!(locate(u32::MAX), (MAX_PAGES - 1, PAGE - 1));
        assert_eq!(locate(PAGE as u32 - 1), (SMALL_PAGES - 1, 511));
        assert_eq!(locate(PAGE as u32), (SMALL_PAGES, 0));
    }

    #[test]
    fn values_never_move_as_the_store_grows() {
        let mut store = Store::new();
        let first = store.insert(0u64);
        let at: *const u64 = store.get(first).unwrap();
        for i in 1..100_000 {
            store.insert(i);
        }
        assert!(std::ptr::eq(at, store.get(first).unwrap()));
        // Pages follow the count: 100,000 values in 98 pages of 1,024
        // (the first five smaller), not a power of two.
        assert_eq!(store.capacity(), 100_352);
        assert_eq!(store.pages(), SMALL_PAGES + 97);
    }

    #[test]
    fn exact_capacities_like_a_vec() {
        let mut store: Store<u8> = Store::new();
        store.reserve(10);
        assert_eq!(store.capacity(), 10);
        for i in 0..10 {
            store.insert(i);
        }
        assert_eq!(store.capacity(), 10);
        store.insert(10);
        assert_eq!(store.capacity(), 64, "the short page grew to its size");
        store.reserve(2_000);
        assert_eq!(store.capacity(), 2_011);
        for key in 0..2_011 {
            store.try_remove(key);
        }
        assert_eq!(store.shrink(), 2_011);
        assert_eq!(store.capacity(), 0);
    }

    #[test]
    fn sparse_pages_come_and_go_with_their_values() {
        let mut table = Sparse::new();
        assert_eq!(table.insert(5_000, 'a'), None);
        assert_eq!(table.insert(5_001, 'b'), None);
        assert_eq!(table.allocated_slots(), PAGE);
        assert_eq!(table.insert(5_000, 'c'), Some('a'));
        assert_eq!(table.len(), 2);
        assert_eq!(table.get(5_000), Some(&'c'));
        assert_eq!(table.get(4_999), None);
        assert_eq!(table.get(u32::MAX), None);
        assert_eq!(table.remove(5_000), Some('c'));
        assert_eq!(table.shrink(), 0, "a page with a value stays");
        assert_eq!(table.remove(5_001), Some('b'));
        assert!(table.shrink() >= PAGE * std::mem::size_of::<Option<char>>());
        assert_eq!(table.allocated_slots(), 0);
        assert_eq!(table.values().count(), 0);
    }
}
