//! The directory of a table's pages of [`PAGE`](super::store::PAGE) keys: a fixed-fan-out radix
//! tree, so that no table ever allocates or copies more than a few KiB at
//! once however many keys it holds.
//!
//! A big page's number `n` (its first key over `PAGE`, see
//! [`locate`](super::store::locate)) splits into three parts: the *group*
//! (`n >> 18`), the *chunk* in the group (8 bits) and the page in the chunk
//! ([`CHUNK_SHIFT`] bits). A chunk is a boxed array of [`CHUNK`] page
//! pointers (8 KiB, as much as a page of the store's entries); the chunks of
//! group 0, the keys below 2^26, hang from an array inside the directory
//! itself, so that a key there reaches its page with two loads, as a `Vec`
//! of pages did; the other 63 groups are boxed arrays of 256 chunk pointers
//! (2 KiB), allocated when a key past 2^26 first needs them.
//!
//! Nothing here moves once allocated: growing is allocating one page, and
//! sometimes a chunk (every 262,144 keys) or a group (every 2^26), each
//! filled with `None`; never a copy of what the table holds.
//!
//! Why these sizes: a chunk of 1,024 pointers costs 8 bytes per 256 keys
//! with no slack past the last chunk's 262,144 keys (a doubling `Vec` of
//! pointers wasted up to half), and a group of 256 chunks keeps the table's
//! inline part at 2.5 KiB (the chunk pointers of group 0 and the group
//! pointers of the rest).

use std::collections::TryReserveError;

/// log2 of the keys in a big page of the store (256): the directory's
/// unit (the store's `PAGE`).
pub(crate) const PAGE_SHIFT: u32 = 8;
/// The keys below `1 << NEAR_SHIFT` (2^26) reach their page's chunk from
/// inside the table (see [`Dir`]).
pub(crate) const NEAR_SHIFT: u32 = 26;

/// Page pointers in a chunk.
pub(crate) const CHUNK_SHIFT: u32 = 10;
/// Page pointers in a chunk: 1,024 (8 KiB).
pub(crate) const CHUNK: usize = 1 << CHUNK_SHIFT;
/// Chunks in a group: 256 (the keys below 2^26 make group 0).
const GROUP_SHIFT: u32 = NEAR_SHIFT - PAGE_SHIFT - CHUNK_SHIFT;
const GROUP: usize = 1 << GROUP_SHIFT;
/// Groups enough for every `u32` key.
const GROUPS: usize = 1 << (32 - NEAR_SHIFT);

type Chunk<P> = [Option<Box<P>>; CHUNK];
type Group<P> = [Option<Box<Chunk<P>>>; GROUP];

/// Pages `P` by big page number (see the module docs); each page boxed, at
/// an address that never changes while it is in the directory.
pub(crate) struct Dir<P> {
    /// The chunks of group 0: keys below 2^26.
    near: Group<P>,
    /// Groups 1 to 63.
    far: [Option<Box<Group<P>>>; GROUPS - 1],
}

/// The group, chunk and slot of big page `n`.
#[inline]
const fn split(n: usize) -> (usize, usize, usize) {
    (
        n >> (GROUP_SHIFT + CHUNK_SHIFT),
        (n >> CHUNK_SHIFT) & (GROUP - 1),
        n & (CHUNK - 1),
    )
}

/// A boxed array of `N` values made by `value`, built in place (never on
/// the stack first).
pub(crate) fn boxed_array<X, const N: usize>(value: impl FnMut() -> X) -> Box<[X; N]> {
    let all: Box<[X]> = std::iter::repeat_with(value).take(N).collect();
    match all.try_into() {
        Ok(array) => array,
        Err(_) => unreachable!("N values"),
    }
}

/// [`boxed_array`], or the error where the allocation fails (rather than
/// the process's abort): reserving room up front that the system may not
/// have ([`Builder::capacity`](crate::Builder::capacity)).
pub(crate) fn try_boxed_array<X, const N: usize>(
    value: impl FnMut() -> X,
) -> Result<Box<[X; N]>, TryReserveError> {
    let all = try_boxed_slice(N, value)?;
    match all.try_into() {
        Ok(array) => Ok(array),
        Err(_) => unreachable!("N values"),
    }
}

/// A boxed slice of `len` values made by `value`, or the error where the
/// allocation fails. One allocation, of exactly `len` values.
pub(crate) fn try_boxed_slice<X>(
    len: usize,
    value: impl FnMut() -> X,
) -> Result<Box<[X]>, TryReserveError> {
    let mut all = Vec::new();
    all.try_reserve_exact(len)?;
    all.extend(std::iter::repeat_with(value).take(len));
    Ok(all.into_boxed_slice())
}

/// The value of `slot`, made by `make` if it has none; the error where
/// that fails.
fn try_fill<X, E>(slot: &mut Option<X>, make: impl FnOnce() -> Result<X, E>) -> Result<&mut X, E> {
    if slot.is_none() {
        *slot = Some(make()?);
    }
    match slot {
        Some(value) => Ok(value),
        None => unreachable!("filled above"),
    }
}

/// A boxed array of `N` `None`s.
fn nones<X, const N: usize>() -> Box<[Option<X>; N]> {
    boxed_array(|| None)
}

impl<P> Dir<P> {
    const NO_CHUNK: Option<Box<Chunk<P>>> = None;
    const NO_GROUP: Option<Box<Group<P>>> = None;

    /// An empty directory; allocates nothing.
    pub(crate) const fn new() -> Dir<P> {
        Dir {
            near: [Self::NO_CHUNK; GROUP],
            far: [Self::NO_GROUP; GROUPS - 1],
        }
    }

    /// The chunk of `group`, `chunk`, if it is allocated.
    #[inline]
    fn chunk(&self, group: usize, chunk: usize) -> Option<&Chunk<P>> {
        if group == 0 {
            return self.near[chunk].as_deref();
        }
        self.far[group - 1].as_ref()?[chunk].as_deref()
    }

    #[inline]
    fn chunk_mut(&mut self, group: usize, chunk: usize) -> Option<&mut Chunk<P>> {
        if group == 0 {
            return self.near[chunk].as_deref_mut();
        }
        self.far[group - 1].as_mut()?[chunk].as_deref_mut()
    }

    /// Big page `n`, if it is allocated.
    #[inline]
    pub(crate) fn get(&self, n: usize) -> Option<&P> {
        let (group, chunk, slot) = split(n);
        self.chunk(group, chunk)?[slot].as_deref()
    }

    /// Big page `n`, if it is allocated.
    #[inline]
    pub(crate) fn get_mut(&mut self, n: usize) -> Option<&mut P> {
        let (group, chunk, slot) = split(n);
        self.chunk_mut(group, chunk)?[slot].as_deref_mut()
    }

    /// Big page `n`, made by `page` if it is not allocated yet (with its
    /// chunk and group if need be: each at most 8 KiB).
    pub(crate) fn get_or_insert_with(&mut self, n: usize, page: impl FnOnce() -> Box<P>) -> &mut P {
        let (group, chunk, slot) = split(n);
        let chunks = if group == 0 {
            &mut self.near
        } else {
            &mut **self.far[group - 1].get_or_insert_with(nones)
        };
        chunks[chunk].get_or_insert_with(nones)[slot].get_or_insert_with(page)
    }

    /// [`get_or_insert_with`](Self::get_or_insert_with), or the error
    /// where an allocation (the page's, its chunk's or its group's) fails.
    pub(crate) fn try_get_or_insert_with(
        &mut self,
        n: usize,
        page: impl FnOnce() -> Result<Box<P>, TryReserveError>,
    ) -> Result<&mut P, TryReserveError> {
        let (group, chunk, slot) = split(n);
        let chunks = if group == 0 {
            &mut self.near
        } else {
            &mut **try_fill(&mut self.far[group - 1], || try_boxed_array(|| None))?
        };
        let pages = try_fill(&mut chunks[chunk], || try_boxed_array(|| None))?;
        Ok(&mut **try_fill(&mut pages[slot], page)?)
    }

    /// Keeps the pages for which `keep(n, page)` holds and gives back the
    /// others, with every chunk and group left empty. O(pages allocated).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(usize, &mut P) -> bool) {
        let mut retain_group = |group: usize, chunks: &mut Group<P>| {
            let mut any_chunk = false;
            for (c, chunk) in chunks.iter_mut().enumerate() {
                let Some(pages) = chunk else { continue };
                let mut any_page = false;
                for (s, page) in pages.iter_mut().enumerate() {
                    let n = (group << (GROUP_SHIFT + CHUNK_SHIFT)) | (c << CHUNK_SHIFT) | s;
                    if page.as_deref_mut().is_some_and(|p| !keep(n, p)) {
                        *page = None;
                    }
                    any_page |= page.is_some();
                }
                if !any_page {
                    *chunk = None;
                }
                any_chunk |= chunk.is_some();
            }
            any_chunk
        };
        retain_group(0, &mut self.near);
        for (g, group) in self.far.iter_mut().enumerate() {
            if let Some(chunks) = group {
                if !retain_group(g + 1, chunks) {
                    *group = None;
                }
            }
        }
    }

    /// Every page allocated, with its number, in order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (usize, &mut P)> + '_ {
        let near = std::iter::once((0, &mut self.near));
        let far = self
            .far
            .iter_mut()
            .enumerate()
            .filter_map(|(g, group)| Some((g + 1, &mut **group.as_mut()?)));
        near.chain(far).flat_map(|(group, chunks)| {
            chunks
                .iter_mut()
                .enumerate()
                .filter_map(|(c, chunk)| Some((c, chunk.as_deref_mut()?)))
                .flat_map(move |(c, pages)| {
                    pages.iter_mut().enumerate().filter_map(move |(s, page)| {
                        let n = (group << (GROUP_SHIFT + CHUNK_SHIFT)) | (c << CHUNK_SHIFT) | s;
                        Some((n, page.as_deref_mut()?))
                    })
                })
        })
    }

    /// Every page allocated, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &P> + '_ {
        let far = self.far.iter().filter_map(|group| group.as_deref());
        std::iter::once(&self.near)
            .chain(far)
            .flat_map(|chunks| chunks.iter().filter_map(|chunk| chunk.as_deref()))
            .flat_map(|pages| pages.iter().filter_map(|page| page.as_deref()))
    }

    /// The bytes of the directory's own allocations (its chunks and
    /// groups; not the pages).
    pub(crate) fn heap_bytes(&self) -> usize {
        let chunk = std::mem::size_of::<Chunk<P>>();
        let group = std::mem::size_of::<Group<P>>();
        let chunks = |g: &Group<P>| g.iter().flatten().count() * chunk;
        let far: usize = self.far.iter().flatten().map(|g| group + chunks(g)).sum();
        chunks(&self.near) + far
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_land_in_their_chunk_and_group_and_come_back_in_order() {
        let mut dir: Dir<u32> = Dir::new();
        // The edges of chunks and groups, and the last page of all.
        let last = (u32::MAX >> PAGE_SHIFT) as usize;
        let pages = [
            1,
            1023,
            1024,
            1025,
            (1 << 18) - 1,
            1 << 18,
            (1 << 18) + 1,
            last,
        ];
        for &n in pages.iter().rev() {
            *dir.get_or_insert_with(n, || Box::new(0)) = n as u32;
        }
        for &n in &pages {
            assert_eq!(dir.get(n), Some(&(n as u32)));
        }
        assert_eq!(dir.get(2), None);
        assert_eq!(dir.get(last - 1), None);
        let got: Vec<usize> = dir.iter_mut().map(|(n, _)| n).collect();
        assert_eq!(got, pages);
        assert!(dir.iter().map(|&p| p as usize).eq(pages));
        // Chunks: one for pages 1 and 1023, then pages 1024-1025, the top of
        // group 0, the first of group 1 (with its group), and the last.
        let chunk = std::mem::size_of::<Chunk<u32>>();
        let group = std::mem::size_of::<Group<u32>>();
        assert_eq!(chunk, 8 * 1024);
        assert_eq!(group, 2 * 1024);
        assert_eq!(dir.heap_bytes(), 5 * chunk + 2 * group);
        // Emptied chunks and groups go with their pages.
        dir.retain(|n, _| n < 1 << 18);
        assert_eq!(dir.heap_bytes(), 3 * chunk);
        assert_eq!(dir.get(last), None);
        dir.retain(|n, _| n == 1);
        assert_eq!(dir.heap_bytes(), chunk);
        dir.retain(|_, _| false);
        assert_eq!(dir.heap_bytes(), 0);
    }
}
