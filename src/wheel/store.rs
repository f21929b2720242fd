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
//! | page  | keys                      | size |
//! |-------|---------------------------|------|
//! | 0     | `0..64`                   | 64   |
//! | 1     | `64..128`                 | 64   |
//! | 2     | `128..256`                | 128  |
//! | n ≥ 3 | `(n-2)·256..(n-1)·256`    | 256  |
//!
//! A key maps to its page and its place there with a comparison, a shift
//! and a mask ([`locate`]); no hashing. A page is allocated at its full size
//! when its first key is handed out and is never copied as the store grows:
//! an insert costs at most one allocation and fill of a page (8 KiB of the
//! timer's 32-byte entries, a few microseconds), whatever the size of the
//! store. The directory of the pages of [`PAGE`] keys is a `Vec` of
//! pointers (8 bytes per 256 keys), which is all that moves when it grows:
//! 125 KiB at 4,000,000 keys.
//!
//! Why 256: a page is filled when it is allocated (safe Rust has no
//! uninitialised pages), so its size sets the rare insert that pays for a
//! fresh page: with pages of 1,024 that fill (32 KiB, page faults
//! included) was the p99.99 of inserts while growing (W11: about 19 µs,
//! tokio's level); with 256 it is about 8 µs, for 0.02 B more per timer of
//! directory. Pages filled lazily instead (a `Vec` pushed into) spread the
//! page faults over one insert in 128 and made them the p99 (1.3 µs).
//!
//! Capacities are exact up to [`PAGE`] values, as a `Vec`'s: the small
//! pages may be allocated short by [`Store::reserve`], or cut short by
//! [`Store::shrink`] and [`Store::compact`], and such a page grows to its
//! size (one reallocation of at most 128 values) when keys reach past it.
//! Past [`PAGE`] values the capacity comes in whole pages
//! ([`capacity_for`]).
//!
//! Vacant slots hold the next vacant key: one free list, threaded through
//! the store, that hands out the most recently freed key first (as `slab`
//! does).

use std::mem;

/// Keys in the first page (and in the second).
pub(crate) const FIRST_PAGE: usize = 1 << FIRST_SHIFT;
const FIRST_SHIFT: u32 = 6;
/// Keys in every page from [`SMALL_PAGES`] on (see the module docs for
/// why 256).
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;
const PAGE_SHIFT: u32 = 8;
/// The pages smaller than [`PAGE`]: 64, 64 and 128 keys.
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
///
/// The small pages are `Vec`s, allocated to the capacity asked for (so that
/// a small store's capacity is exact); the pages of [`PAGE`] slots are
/// boxed arrays, allocated whole and reached through a directory of one
/// pointer each.
pub(crate) struct Store<T> {
    small: [Vec<Slot<T>>; SMALL_PAGES],
    big: Vec<Box<[Slot<T>; PAGE]>>,
    /// Keys with a slot, vacant or not: the next fresh key.
    used: usize,
    /// Head of the free list.
    free: u32,
    len: usize,
}

/// A summary, as `slab`'s: the values themselves may be millions.
impl<T> std::fmt::Debug for Store<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("len", &self.len)
            .field("used", &self.used)
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

impl<T> Default for Store<T> {
    fn default() -> Store<T> {
        Store::new()
    }
}

/// The capacity a store has once it makes room for `n` values: `n` up to
/// [`PAGE`], then `n` rounded up to whole pages.
#[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
pub(crate) fn capacity_for(n: usize) -> usize {
    if n <= PAGE {
        n
    } else {
        n.div_ceil(PAGE) * PAGE
    }
}

impl<T> Store<T> {
    /// An empty store; allocates nothing.
    pub(crate) const fn new() -> Store<T> {
        Store {
            small: [Vec::new(), Vec::new(), Vec::new()],
            big: Vec::new(),
            used: 0,
            free: NONE,
            len: 0,
        }
    }

    /// Values held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Values the store holds without allocating: exact up to [`PAGE`],
    /// whole pages beyond (see [`capacity_for`]).
    pub(crate) fn capacity(&self) -> usize {
        self.small.iter().map(Vec::capacity).sum::<usize>() + self.big.len() * PAGE
    }

    /// Keys with a slot: one past the highest key handed out since the
    /// last [`shrink`](Self::shrink) or [`compact`](Self::compact).
    #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// The pages allocated (each of [`page_len`] keys, a small one maybe
    /// short).
    #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
    pub(crate) fn pages(&self) -> usize {
        match self.big.len() {
            0 => self.small.iter().filter(|p| p.capacity() > 0).count(),
            big => SMALL_PAGES + big,
        }
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

    /// The slot of `key`, if the store has one.
    #[inline]
    fn slot(&self, key: u32) -> Option<&Slot<T>> {
        let k = key as usize;
        if k >= PAGE {
            return self
                .big
                .get((k >> PAGE_SHIFT) - 1)
                .map(|page| &page[k & (PAGE - 1)]);
        }
        let (page, i) = locate(key);
        self.small[page].get(i)
    }

    /// The slot of `key`, if the store has one.
    #[inline]
    fn slot_mut(&mut self, key: u32) -> Option<&mut Slot<T>> {
        let k = key as usize;
        if k >= PAGE {
            return self
                .big
                .get_mut((k >> PAGE_SHIFT) - 1)
                .map(|page| &mut page[k & (PAGE - 1)]);
        }
        let (page, i) = locate(key);
        self.small[page].get_mut(i)
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
            let slot = self.slot_mut(key).expect("a free key has a slot");
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
        if page < SMALL_PAGES {
            let slots = &mut self.small[page];
            debug_assert_eq!(slots.len(), i, "fresh keys come in order");
            if slots.len() == slots.capacity() {
                // A new page, allocated once at its size, or a short one
                // (an exact reservation) grown to its size.
                slots.reserve_exact(page_len(page) - slots.len());
            }
            slots.push(Slot::Occupied(value));
        } else {
            if i == 0 && self.big.len() == page - SMALL_PAGES {
                self.big.push(new_page());
            }
            self.big[page - SMALL_PAGES][i] = Slot::Occupied(value);
        }
        self.used += 1;
        self.len += 1;
        key
    }

    /// The value at `key`, if there is one.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<&T> {
        match self.slot(key)? {
            Slot::Occupied(value) => Some(value),
            Slot::Vacant(_) => None,
        }
    }

    /// The value at `key`, if there is one.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: u32) -> Option<&mut T> {
        match self.slot_mut(key)? {
            Slot::Occupied(value) => Some(value),
            Slot::Vacant(_) => None,
        }
    }

    /// Takes out the value at `key`, if there is one.
    #[inline]
    pub(crate) fn try_remove(&mut self, key: u32) -> Option<T> {
        let free = self.free;
        let slot = self.slot_mut(key)?;
        if let Slot::Vacant(_) = slot {
            return None;
        }
        let Slot::Occupied(value) = mem::replace(slot, Slot::Vacant(free)) else {
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

    /// Makes room for `additional` more values: the capacity becomes
    /// [`capacity_for`]`(len + additional)` where it was less.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let want = self.len.saturating_add(additional);
        let mut short = want.saturating_sub(self.capacity());
        if short == 0 {
            return;
        }
        for (page, slots) in self.small.iter_mut().enumerate() {
            let room = page_len(page) - slots.capacity();
            if room > 0 {
                let more = room.min(short);
                slots.reserve_exact(slots.capacity() + more - slots.len());
                short -= more;
                if short == 0 {
                    return;
                }
            }
        }
        let pages = short.div_ceil(PAGE);
        assert!(
            self.big.len() + pages < MAX_PAGES - SMALL_PAGES,
            "hashwheel: the store ran out of keys"
        );
        self.big.reserve_exact(pages);
        for _ in 0..pages {
            self.big.push(new_page());
        }
    }

    /// Gives back the vacant slots above the highest stored key, and with
    /// them every page they emptied; all of it when the store is empty.
    /// Values do not move. O(keys used) where there is a vacant tail to give
    /// back (the free list is rebuilt), else O(1). Returns the
    /// slots given back.
    pub(crate) fn shrink(&mut self) -> usize {
        let before = self.capacity();
        if self.len == 0 {
            *self = Store::new();
            return before;
        }
        let was = self.used;
        let mut used = was;
        while used > 0 && !self.is_occupied(used - 1) {
            used -= 1;
        }
        self.truncate(used);
        if used < was {
            // The keys given back may be on the free list.
            self.relink_free();
        }
        before - self.capacity()
    }

    /// Moves values from the top of the store into its vacant slots, so
    /// that the keys used are `0..len`, and gives back the rest; the
    /// capacity becomes [`capacity_for`]`(len)`. Calls `moved(value, from,
    /// to)` for each value moved. O(keys used).
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
            let (from, to) = ((top - 1) as u32, low as u32);
            let value = mem::replace(self.slot_mut(from).expect("used"), Slot::Vacant(NONE));
            let slot = self.slot_mut(to).expect("used");
            *slot = value;
            if let Slot::Occupied(value) = slot {
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
        matches!(self.slot(key as u32), Some(Slot::Occupied(_)))
    }

    /// Keeps the slots of the keys below `used` and gives back the rest:
    /// the pages past it, and the tail of its page if that is a small one
    /// (vacant slots past `used` in a page of [`PAGE`] stay, unlinked: a
    /// fresh insert overwrites them). The free list must be rebuilt after.
    fn truncate(&mut self, used: usize) {
        self.used = used;
        let pages = if used == 0 {
            0
        } else {
            locate((used - 1) as u32).0 + 1
        };
        self.big.truncate(pages.saturating_sub(SMALL_PAGES));
        self.big.shrink_to_fit();
        for (page, slots) in self.small.iter_mut().enumerate() {
            if page >= pages {
                *slots = Vec::new();
            } else if page + 1 == pages {
                slots.truncate(used - page_start(page));
                slots.shrink_to_fit();
            }
        }
    }

    /// Rebuilds the free list from the vacant slots below `used`, lowest
    /// key first.
    fn relink_free(&mut self) {
        let mut free = NONE;
        for key in (0..self.used as u32).rev() {
            if let Some(Slot::Vacant(next)) = self.slot_mut(key) {
                *next = free;
                free = key;
            }
        }
        self.free = free;
    }

    /// Drops every value, keeping the capacity.
    pub(crate) fn clear(&mut self) {
        for page in &mut self.small {
            page.clear();
        }
        for page in &mut self.big {
            for slot in page.iter_mut() {
                *slot = Slot::Vacant(NONE);
            }
        }
        self.used = 0;
        self.free = NONE;
        self.len = 0;
    }

    /// Every stored value, with its key, in key order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut T)> + '_ {
        let small = self.small.iter_mut().map(|p| p.as_mut_slice());
        let big = self.big.iter_mut().map(|p| p.as_mut_slice());
        small.chain(big).enumerate().flat_map(|(page, slots)| {
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

/// A page of [`PAGE`] vacant slots, allocated at once.
fn new_page<T>() -> Box<[Slot<T>; PAGE]> {
    let slots: Box<[Slot<T>]> = (0..PAGE).map(|_| Slot::Vacant(NONE)).collect();
    match slots.try_into() {
        Ok(page) => page,
        Err(_) => unreachable!("a page has PAGE slots"),
    }
}

/// A sparse table by key on the same pages as the [`Store`]: a page is
/// allocated when a key in it is first set, and [`shrink`](Self::shrink)
/// gives back the pages that hold nothing. For tables that only some
/// entries use (the timer's interval beats and scheduled tasks): an insert
/// allocates at most one page, never copies one.
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
pub(crate) struct Sparse<T> {
    pages: Vec<Option<SparsePage<T>>>,
    len: usize,
}

struct SparsePage<T> {
    slots: Box<[Option<T>]>,
    live: usize,
}

impl<T> std::fmt::Debug for Sparse<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sparse")
            .field("len", &self.len)
            .field("pages", &self.pages.iter().flatten().count())
            .finish_non_exhaustive()
    }
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
            vec![64, 64, 128]
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
        assert_eq!(locate(PAGE as u32 - 1), (SMALL_PAGES - 1, 127));
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
        // Pages follow the count: 100,000 values in 391 pages of 256
        // (the first three smaller), not a power of two.
        assert_eq!(store.capacity(), 100_096);
        assert_eq!(store.pages(), SMALL_PAGES + 390);
        assert_eq!(slot_size::<u64>(), 16);
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
        store.reserve(200);
        assert_eq!(store.capacity(), 211, "exact up to a page");
        store.reserve(2_000);
        assert_eq!(store.capacity(), 2_048, "whole pages past it");
        for key in 0..11 {
            store.try_remove(key);
        }
        assert_eq!(store.shrink(), 2_048);
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
