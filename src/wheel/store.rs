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
//! and a mask ([`locate`]); no hashing. The same function places a key in
//! every per-key table of the timer ([`Sparse`], and the deadline words
//! with pages of their own size). A page is allocated at its full size
//! when its first key is handed out and is never copied as the store grows.
//! The pages of [`PAGE`] keys are reached through a [`Dir`]: a radix tree
//! of fixed fan-out (chunks of 1,024 page pointers, 8 KiB, and past 2^26
//! keys groups of 256 chunks, 2 KiB), never a table that doubles. So an
//! insert allocates at most a page (8 KiB of the timer's 32-byte entries,
//! a few microseconds), a chunk every 262,144 keys and a group every 2^26,
//! and copies nothing, whatever the size of the store; a lookup is two
//! loads below 2^26 keys, as through a `Vec` of pages.
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

// What only the timer uses of the wheel's core (its link order, interval
// beats, detached entries, the sparse table) is dead in the wheel-alone
// build (neither `tokio` nor `thread`), and only there.
#![cfg_attr(not(any(feature = "tokio", feature = "thread")), allow(dead_code))]

use std::collections::TryReserveError;
use std::mem;

pub(crate) use super::dir::PAGE_SHIFT;
use super::dir::{boxed_array, try_boxed_array, Dir};

/// Keys in the first page (and in the second).
pub(crate) const FIRST_PAGE: usize = 1 << FIRST_SHIFT;
const FIRST_SHIFT: u32 = 6;
/// Keys in every page of the store from [`SMALL_PAGES`] on (see the module
/// docs for why 256).
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;
/// The pages smaller than [`PAGE`]: 64, 64 and 128 keys.
pub(crate) const SMALL_PAGES: usize = small_pages(PAGE_SHIFT);
/// The highest big page number, in tables of [`PAGE`] keys.
pub(crate) const MAX_BIG: usize = (u32::MAX >> PAGE_SHIFT) as usize;
/// Pages enough for every `u32` key.
#[cfg(test)]
pub(crate) const MAX_PAGES: usize = SMALL_PAGES + MAX_BIG;

/// The pages smaller than `1 << shift` keys, in a table of pages of that
/// many keys: 64, 64, 128, ... up to half of it.
pub(crate) const fn small_pages(shift: u32) -> usize {
    (shift - FIRST_SHIFT + 1) as usize
}

/// Where a key is, in a table whose pages from key `1 << shift` on hold
/// `1 << shift` keys each ([`locate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Place {
    /// Small page `.0` (keys `0..64`, `64..128`, `128..256`, ... below
    /// `1 << shift`), index `.1` in it.
    Small(usize, usize),
    /// Big page `.0`: the keys `.0 << shift` up to the next page, index `.1`
    /// in it. Big page numbers start at 1.
    Big(usize, usize),
}

/// The page of `key` and its index there, in a table of pages of `1 <<
/// shift` keys past the small ones: the one key → page arithmetic of every
/// per-key table of the timer (the store and [`Sparse`] with
/// [`PAGE_SHIFT`], the deadline words with pages of their own size). A
/// comparison, a shift and a mask; a leading-zero count below `1 << shift`.
#[inline]
pub(crate) const fn locate(key: u32, shift: u32) -> Place {
    let k = key as usize;
    // The first page first: a timer that holds a few timeouts at a time
    // uses only its keys.
    if k < FIRST_PAGE {
        return Place::Small(0, k);
    }
    if k >> shift != 0 {
        return Place::Big(k >> shift, k & ((1 << shift) - 1));
    }
    let top = usize::BITS - 1 - k.leading_zeros();
    Place::Small((top - FIRST_SHIFT + 1) as usize, k - (1 << top))
}

/// The number of keys in small page `page` (of any table).
#[inline]
pub(crate) const fn small_len(page: usize) -> usize {
    if page == 0 {
        FIRST_PAGE
    } else {
        FIRST_PAGE << (page - 1)
    }
}

/// The store's pages counted from 0 across both kinds: small pages
/// `0..SMALL_PAGES`, then big page `n` as `SMALL_PAGES + n - 1`.
#[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
pub(crate) fn page_of(key: u32) -> usize {
    match locate(key, PAGE_SHIFT) {
        Place::Small(page, _) => page,
        Place::Big(n, _) => SMALL_PAGES + n - 1,
    }
}

/// The number of keys in page `page` (numbered as by [`page_of`]).
#[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
pub(crate) fn page_len(page: usize) -> usize {
    if page < SMALL_PAGES {
        small_len(page)
    } else {
        PAGE
    }
}

/// The first key of page `page` (numbered as by [`page_of`]).
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
/// boxed arrays, allocated whole, reached through a [`Dir`], and always the
/// big pages `1..=big` (allocated in key order, given back from the top).
///
/// Laid out in the order written (`repr(C)`): the scalars an insert and a
/// remove read, then the small pages, then the directory (2.5 KiB inline,
/// of which a store below 2^18 keys reads the first few lines).
#[repr(C)]
pub(crate) struct Store<T> {
    /// Head of the free list.
    free: u32,
    len: usize,
    /// Keys with a slot, vacant or not: the next fresh key.
    used: usize,
    /// Big pages allocated: numbers `1..=big`.
    big: usize,
    small: [Vec<Slot<T>>; SMALL_PAGES],
    pages: Dir<[Slot<T>; PAGE]>,
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

/// The most values a store holds: one per `u32` key but [`NONE`].
pub(crate) const MAX_KEYS: usize = u32::MAX as usize;

/// The big pages that [`Store::reserve`] adds to a store of `capacity`
/// slots holding `len` values, for `additional` more values.
///
/// # Panics
///
/// If `len + additional` is more than [`MAX_KEYS`].
#[track_caller]
fn pages_to_reserve(len: usize, capacity: usize, additional: usize) -> usize {
    let want = len
        .checked_add(additional)
        .filter(|&want| want <= MAX_KEYS)
        .expect("hashwheel: the store ran out of keys");
    // The small pages are filled first, up to their full size.
    let short = want.saturating_sub(capacity.max(PAGE));
    short.div_ceil(PAGE)
}

impl<T> Store<T> {
    /// An empty store; allocates nothing.
    pub(crate) const fn new() -> Store<T> {
        Store {
            small: [Vec::new(), Vec::new(), Vec::new()],
            pages: Dir::new(),
            big: 0,
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
        self.small.iter().map(Vec::capacity).sum::<usize>() + self.big * PAGE
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
        match self.big {
            0 => self.small.iter().filter(|p| p.capacity() > 0).count(),
            big => SMALL_PAGES + big,
        }
    }

    /// The bytes of every allocation the store holds: its pages and the
    /// chunks and groups of its directory.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        let small: usize = self.small.iter().map(Vec::capacity).sum();
        (small + self.big * PAGE) * mem::size_of::<Slot<T>>() + self.pages.heap_bytes()
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
        match locate(key, PAGE_SHIFT) {
            Place::Big(n, i) => self.pages.get(n).map(|page| &page[i]),
            Place::Small(page, i) => self.small[page].get(i),
        }
    }

    /// The slot of `key`, if the store has one.
    #[inline]
    fn slot_mut(&mut self, key: u32) -> Option<&mut Slot<T>> {
        match locate(key, PAGE_SHIFT) {
            Place::Big(n, i) => self.pages.get_mut(n).map(|page| &mut page[i]),
            Place::Small(page, i) => self.small[page].get_mut(i),
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
        match locate(key, PAGE_SHIFT) {
            Place::Small(page, i) => {
                let slots = &mut self.small[page];
                debug_assert_eq!(slots.len(), i, "fresh keys come in order");
                if slots.len() == slots.capacity() {
                    // A new page, allocated once at its size, or a short
                    // one (an exact reservation) grown to its size.
                    slots.reserve_exact(small_len(page) - slots.len());
                }
                slots.push(Slot::Occupied(value));
            }
            Place::Big(n, i) => {
                // A fresh key opens its page (the next one) or is in one
                // allocated already.
                self.big = self.big.max(n);
                self.pages.get_or_insert_with(n, new_page)[i] = Slot::Occupied(value);
            }
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
    /// [`capacity_for`]`(len + additional)` where it was less. Allocates
    /// page by page (each at most 8 KiB, and a chunk of the directory every
    /// 1,024 pages), never a table whole.
    ///
    /// # Panics
    ///
    /// If the store would hold more than [`MAX_KEYS`] values. An
    /// allocation that fails aborts the process, as `Vec::reserve`'s does,
    /// and at once where the room could never be had: it is asked for in
    /// one allocation first, never touched (see
    /// [`try_reserve`](Self::try_reserve) for the error instead).
    #[track_caller]
    pub(crate) fn reserve(&mut self, additional: usize) {
        let want = self.len.saturating_add(additional);
        let bytes = capacity_for(want)
            .saturating_sub(self.capacity())
            .saturating_mul(mem::size_of::<Slot<T>>());
        let page = std::alloc::Layout::new::<[Slot<T>; PAGE]>();
        if bytes > page.size() {
            let mut all: Vec<u8> = Vec::new();
            if all.try_reserve_exact(bytes).is_err() {
                let all = std::alloc::Layout::from_size_align(bytes, page.align());
                std::alloc::handle_alloc_error(all.unwrap_or(page));
            }
        }
        if self.try_reserve(additional).is_err() {
            std::alloc::handle_alloc_error(page);
        }
    }

    /// [`reserve`](Self::reserve), or the error where an allocation fails:
    /// what was allocated before it stays, counted in the capacity.
    ///
    /// # Panics
    ///
    /// If the store would hold more than [`MAX_KEYS`] values.
    #[track_caller]
    pub(crate) fn try_reserve(&mut self, additional: usize) -> Result<(), TryReserveError> {
        let pages = pages_to_reserve(self.len, self.capacity(), additional);
        let want = self.len + additional;
        let mut short = want.saturating_sub(self.capacity());
        for (page, slots) in self.small.iter_mut().enumerate() {
            if short == 0 {
                return Ok(());
            }
            let room = small_len(page) - slots.capacity();
            if room > 0 {
                let more = room.min(short);
                slots.try_reserve_exact(slots.capacity() + more - slots.len())?;
                short -= more;
            }
        }
        debug_assert!(self.big + pages <= MAX_BIG);
        for n in self.big + 1..=self.big + pages {
            self.pages.try_get_or_insert_with(n, try_new_page)?;
            // Counted page by page: a failure leaves those before it.
            self.big = n;
        }
        Ok(())
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
    /// the pages past it (and the chunks of the directory they emptied),
    /// and the tail of its page if that is a small one (vacant slots past
    /// `used` in a page of [`PAGE`] stay, unlinked: a fresh insert
    /// overwrites them). The free list must be rebuilt after.
    fn truncate(&mut self, used: usize) {
        self.used = used;
        let pages = if used == 0 {
            0
        } else {
            page_of((used - 1) as u32) + 1
        };
        let big = pages.saturating_sub(SMALL_PAGES);
        if big < self.big {
            self.pages.retain(|n, _| n <= big);
            self.big = big;
        }
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
        for (_, page) in self.pages.iter_mut() {
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
        let small = self
            .small
            .iter_mut()
            .enumerate()
            .map(|(page, slots)| (page_start(page), slots.as_mut_slice()));
        let big = self
            .pages
            .iter_mut()
            .map(|(n, page)| (n << PAGE_SHIFT, page.as_mut_slice()));
        small.chain(big).flat_map(|(start, slots)| {
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
    boxed_array(|| Slot::Vacant(NONE))
}

/// [`new_page`], or the error where its allocation fails.
fn try_new_page<T>() -> Result<Box<[Slot<T>; PAGE]>, TryReserveError> {
    try_boxed_array(|| Slot::Vacant(NONE))
}

/// A sparse table by key on the same pages as the [`Store`]: a page is
/// allocated when a key in it is first set, and [`shrink`](Self::shrink)
/// gives back the pages that hold nothing. For tables that only some
/// entries use (the timer's interval beats and scheduled tasks): an insert
/// allocates at most one page (and a chunk of the directory, 8 KiB), never
/// copies anything.
pub(crate) struct Sparse<T> {
    small: [SparsePage<Vec<Option<T>>>; SMALL_PAGES],
    pages: Dir<SparsePage<[Option<T>; PAGE]>>,
    len: usize,
}

/// A page of a [`Sparse`] table and how many values it holds.
struct SparsePage<S> {
    live: usize,
    slots: S,
}

impl<T> std::fmt::Debug for Sparse<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sparse")
            .field("len", &self.len)
            .field("slots", &self.allocated_slots())
            .finish_non_exhaustive()
    }
}

impl<T> Default for Sparse<T> {
    fn default() -> Sparse<T> {
        Sparse::new()
    }
}

impl<T> Sparse<T> {
    const NO_VALUE: Option<T> = None;
    const NO_PAGE: SparsePage<Vec<Option<T>>> = SparsePage {
        live: 0,
        slots: Vec::new(),
    };

    /// An empty table; allocates nothing.
    pub(crate) const fn new() -> Sparse<T> {
        Sparse {
            small: [Self::NO_PAGE; SMALL_PAGES],
            pages: Dir::new(),
            len: 0,
        }
    }

    /// Values held.
    #[inline]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The value at `key`.
    #[inline]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn get(&self, key: u32) -> Option<&T> {
        match locate(key, PAGE_SHIFT) {
            Place::Big(n, i) => self.pages.get(n)?.slots[i].as_ref(),
            Place::Small(page, i) => self.small[page].slots.get(i)?.as_ref(),
        }
    }

    /// Sets the value at `key`; returns the one it replaces.
    pub(crate) fn insert(&mut self, key: u32, value: T) -> Option<T> {
        let (slot, live) = match locate(key, PAGE_SHIFT) {
            Place::Big(n, i) => {
                let page = self.pages.get_or_insert_with(n, || {
                    Box::new(SparsePage {
                        live: 0,
                        slots: [Self::NO_VALUE; PAGE],
                    })
                });
                (&mut page.slots[i], &mut page.live)
            }
            Place::Small(p, i) => {
                let page = &mut self.small[p];
                if page.slots.is_empty() {
                    page.slots = (0..small_len(p)).map(|_| None).collect();
                }
                (&mut page.slots[i], &mut page.live)
            }
        };
        let old = slot.replace(value);
        if old.is_none() {
            *live += 1;
            self.len += 1;
        }
        old
    }

    /// Takes out the value at `key`.
    #[inline]
    pub(crate) fn remove(&mut self, key: u32) -> Option<T> {
        let (slot, live) = match locate(key, PAGE_SHIFT) {
            Place::Big(n, i) => {
                let page = self.pages.get_mut(n)?;
                (&mut page.slots[i], &mut page.live)
            }
            Place::Small(p, i) => {
                let page = &mut self.small[p];
                (page.slots.get_mut(i)?, &mut page.live)
            }
        };
        let old = slot.take();
        if old.is_some() {
            *live -= 1;
            self.len -= 1;
        }
        old
    }

    /// Every value, in key order.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> + '_ {
        let small = self.small.iter().map(|page| &page.slots[..]);
        let big = self.pages.iter().map(|page| &page.slots[..]);
        small.chain(big).flat_map(|slots| slots.iter().flatten())
    }

    /// Gives back every page that holds no value, and the chunks of the
    /// directory they emptied. Returns the bytes freed.
    pub(crate) fn shrink(&mut self) -> usize {
        let before = self.heap_bytes();
        for page in &mut self.small {
            if page.live == 0 {
                page.slots = Vec::new();
            }
        }
        self.pages.retain(|_, page| page.live > 0);
        before - self.heap_bytes()
    }

    /// The bytes of the pages and the directory allocated.
    fn heap_bytes(&self) -> usize {
        let big = mem::size_of::<SparsePage<[Option<T>; PAGE]>>();
        let small: usize = self.small.iter().map(|page| page.slots.capacity()).sum();
        small * mem::size_of::<Option<T>>()
            + self.pages.iter().count() * big
            + self.pages.heap_bytes()
    }

    /// The slots of the pages allocated.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn allocated_slots(&self) -> usize {
        let small: usize = self.small.iter().map(|page| page.slots.len()).sum();
        small + self.pages.iter().count() * PAGE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page (numbered as by [`page_of`]) and index of `key`.
    fn place(key: u32) -> (usize, usize) {
        match locate(key, PAGE_SHIFT) {
            Place::Small(page, i) => (page, i),
            Place::Big(n, i) => (SMALL_PAGES + n - 1, i),
        }
    }

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
                let (page, i) = place(key);
                assert_eq!(page, page_of(key));
                assert!(i < page_len(page), "key {key}");
                assert_eq!(page_start(page) + i, key as usize, "key {key}");
            }
        }
        assert_eq!(place(u32::MAX), (MAX_PAGES - 1, PAGE - 1));
        assert_eq!(locate(u32::MAX, PAGE_SHIFT), Place::Big(MAX_BIG, PAGE - 1));
        assert_eq!(place(PAGE as u32 - 1), (SMALL_PAGES - 1, 127));
        assert_eq!(place(PAGE as u32), (SMALL_PAGES, 0));
        // Other page sizes: the small pages double up to half a page.
        assert_eq!(locate(1023, 10), Place::Small(4, 511));
        assert_eq!(locate(1024, 10), Place::Big(1, 0));
        assert_eq!(small_pages(10), 5);
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

    /// Issue 26: the store's directory was a `Vec` of page pointers that
    /// doubled by copying (50 µs and more at 2^21, 2^22 and 2^23 keys, +256).
    /// Now every insert up to 2^24 keys adds at most one page and one chunk
    /// of the directory to the store's heap, and copies nothing.
    #[test]
    fn growing_to_2_pow_24_keys_allocates_at_most_a_page_and_a_chunk_per_insert() {
        let mut store: Store<()> = Store::new();
        let page = mem::size_of::<[Slot<()>; PAGE]>();
        let chunk = 8 * 1024;
        let mut heap = 0;
        let mut worst = (0, 0);
        for key in 0..1u32 << 24 {
            assert_eq!(store.insert(()), key);
            // Only an insert that opens a page allocates.
            if key < PAGE as u32 || key % PAGE as u32 == 0 {
                let now = store.heap_bytes();
                worst = worst.max((now - heap, key));
                heap = now;
            }
        }
        assert!(
            worst.0 <= page + chunk,
            "{} bytes at key {}",
            worst.0,
            worst.1
        );
        // The worst is a chunk's first page, once every 262,144 keys.
        assert_eq!(worst.0, page + chunk);
        assert_eq!(heap, (1 << 24) / PAGE * page + 64 * chunk);
    }

    /// Issue 26, fix 5: a shard holds `u32::MAX - 3` timeouts, and
    /// reserving that many must not say the store ran out of keys.
    #[test]
    fn reserve_takes_every_key_a_shard_may_hold_and_no_more() {
        let most = u32::MAX as usize - 3;
        assert_eq!(pages_to_reserve(0, 0, most), MAX_BIG);
        assert_eq!(pages_to_reserve(0, 0, MAX_KEYS), MAX_BIG);
        assert_eq!(pages_to_reserve(most, most + 4, 0), 0);
        assert_eq!(pages_to_reserve(5, 64, 250), 0, "the small pages first");
        assert_eq!(pages_to_reserve(5, 64, 252), 1);
        assert_eq!(pages_to_reserve(300, 512, 300), 1);
        for (len, additional) in [(0, MAX_KEYS + 1), (1, MAX_KEYS), (most, 4), (1, usize::MAX)] {
            let err = std::panic::catch_unwind(|| pages_to_reserve(len, 0, additional));
            assert!(err.is_err(), "{len} + {additional}");
        }
    }

    /// Issue 26: `Sparse::insert` resized its page table to the key's page
    /// (1.5 MiB at key 2^24). Now a value at any key costs at most a page,
    /// a chunk and a group.
    #[test]
    fn a_sparse_insert_at_any_key_allocates_at_most_a_page_a_chunk_and_a_group() {
        let mut table: Sparse<std::num::NonZeroU64> = Sparse::new();
        let one = std::num::NonZeroU64::MIN;
        let bound = mem::size_of::<SparsePage<[Option<std::num::NonZeroU64>; PAGE]>>()
            + 8 * 1024
            + 2 * 1024;
        let edges = (8..32).flat_map(|j| {
            let edge = 1u64 << j;
            [edge - 1, edge, edge + 1, edge + 256]
        });
        let mut heap = table.heap_bytes();
        for key in edges.chain([u64::from(u32::MAX)]) {
            let key = u32::try_from(key).unwrap_or(u32::MAX);
            table.insert(key, one);
            let now = table.heap_bytes();
            assert!(now - heap <= bound, "{} bytes at key {key}", now - heap);
            heap = now;
        }
        assert_eq!(table.get(1 << 24), Some(&one));
        assert_eq!(table.get(u32::MAX), Some(&one));
        assert_eq!(table.shrink(), 0, "every page holds a value");
        for key in (8..32).map(|j| 1u32 << j).chain([u32::MAX]) {
            table.remove(key);
            table.remove(key - 1);
            table.remove(key.saturating_add(1));
            table.remove(key.saturating_add(256));
        }
        assert_eq!(table.len(), 0);
        table.shrink();
        assert_eq!(table.heap_bytes(), 0, "emptied chunks and groups go too");
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
