//! The delay queue's index: tokio-util's `DelayQueue` wheel, so that items
//! come out in its order (issue 56). Six levels of 64 slots, level `n`'s
//! slot spanning 64^n milliseconds of the time after the wheel's
//! `elapsed`; each slot a stack (last in, first out), and a level's slot
//! moved down a level, item by item, when `elapsed` reaches it; items at
//! or before `elapsed` on a stack of their own, handed out first. The
//! order of items due at one millisecond follows from that (see
//! [`Levels::peek`]); the rules are tokio-util 0.7's, kept exactly
//! (`tokio-util/src/time/wheel/`), down to the slot a removal looks in.
//!
//! What tokio-util does not have: items over 2^36 - 2^30 ms (about 2.1
//! years, [`REACH`]) past `elapsed` (tokio-util panics past 2^36) wait in
//! a set of their own, by deadline, and come into the wheel as its reach
//! takes them in; and every item sits in
//! a [`Store`] under a generation-checked [`Key`] (a stale key never
//! reaches another item), linked by store index: no `unsafe`, no
//! pointers, pages that never move.

use std::collections::BTreeSet;

use crate::wheel::keys::Keys;
use crate::wheel::store::Store;
use crate::wheel::{Generation, Key};

const LEVELS: usize = 6;
const SLOTS: usize = 64;
/// How far past `elapsed` tokio-util's wheel reaches, in milliseconds (its
/// `MAX_DURATION`, 2^36 - 1: about 2.2 years).
const MAX_DURATION: u64 = (1 << (6 * LEVELS)) - 1;
/// How far this one does: a top-level slot short of that. tokio-util
/// takes an item up to `MAX_DURATION` out into its top level, where one
/// past the slot `elapsed` is in shares that slot's bit with the items of
/// the slot's turn now, and the level reports that slot a turn late,
/// after later items of other slots; short of a slot, no item is ever a
/// turn of the top level out.
pub(crate) const REACH: u64 = MAX_DURATION - (1 << (6 * (LEVELS - 1)));
/// A list's end.
const NIL: u32 = u32::MAX;
/// In a node's `when`: on the stack of due items.
const DUE: u64 = 1 << 63;
/// In a node's `when`: in the set of far items.
const FAR: u64 = 1 << 62;
/// The milliseconds of a node's `when`. An item at or past it never
/// comes out (146 million years).
pub(crate) const NEVER: u64 = FAR - 1;

/// An item: its deadline (milliseconds from the queue's start, with the
/// flags above), its links in its slot's stack (store indices), its key's
/// generation and its value. 24 bytes and the value.
struct Node<T> {
    when: u64,
    next: u32,
    prev: u32,
    generation: Generation,
    value: T,
}

impl<T> Node<T> {
    #[inline]
    fn ms(&self) -> u64 {
        self.when & NEVER
    }
}

/// Where the wheel has work next: a level, its slot, and the millisecond
/// that slot starts at (tokio-util's `Expiration`).
#[derive(Debug, Clone, Copy)]
struct Expiration {
    level: usize,
    slot: usize,
    deadline: u64,
}

/// The list an item is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    /// The stack of due items.
    Due,
    /// The set of far items.
    Far,
    /// A slot's stack: level, slot.
    Slot(usize, usize),
}

/// The wheel, its stack of due items and its far items, over a store of
/// items (see the module docs).
pub(crate) struct Levels<T> {
    nodes: Store<Node<T>>,
    keys: Keys,
    /// The last millisecond the wheel has processed.
    elapsed: u64,
    /// Each level's occupied slots, a bit a slot.
    occupied: [u64; LEVELS],
    /// Each slot's stack, by its top's store index.
    heads: Box<[[u32; SLOTS]; LEVELS]>,
    /// The stack of items due at or before `elapsed` (tokio-util's
    /// `expired`).
    due: u32,
    /// Items past the wheel's reach, by deadline and store index.
    far: BTreeSet<(u64, u32)>,
    /// [`next_expiration`](Self::next_expiration) as last worked out;
    /// `None` once a slot filled or emptied, `elapsed` moved or the first
    /// far item changed (a reset or removal in a busy slot, the common
    /// case, keeps it).
    next: Option<Option<Expiration>>,
}

/// The level of the slot that holds `when`, seen from `elapsed`
/// (tokio-util's `level_for`).
#[inline]
fn level_for(elapsed: u64, when: u64) -> usize {
    const SLOT_MASK: u64 = (1 << 6) - 1;
    let mut masked = elapsed ^ when | SLOT_MASK;
    if masked >= MAX_DURATION {
        masked = MAX_DURATION - 1;
    }
    let significant = 63 - masked.leading_zeros() as usize;
    significant / 6
}

/// The slot of `when` on `level`.
#[inline]
fn slot_for(when: u64, level: usize) -> usize {
    ((when >> (level * 6)) % SLOTS as u64) as usize
}

/// The milliseconds `level` spans.
#[inline]
fn level_range(level: usize) -> u64 {
    1 << (6 * (level + 1))
}

impl<T> Levels<T> {
    pub(crate) fn new() -> Levels<T> {
        Levels {
            nodes: Store::new(),
            keys: Keys::new(),
            elapsed: 0,
            occupied: [0; LEVELS],
            heads: Box::new([[NIL; SLOTS]; LEVELS]),
            due: NIL,
            far: BTreeSet::new(),
            next: Some(None),
        }
    }

    #[inline]
    #[track_caller]
    fn node(&self, at: u32) -> &Node<T> {
        match self.nodes.get(at) {
            Some(node) => node,
            None => unreachable!("hashwheel: a delay queue's link to a vacant slot"),
        }
    }

    #[inline]
    #[track_caller]
    fn node_mut(&mut self, at: u32) -> &mut Node<T> {
        match self.nodes.get_mut(at) {
            Some(node) => node,
            None => unreachable!("hashwheel: a delay queue's link to a vacant slot"),
        }
    }

    /// The last millisecond processed.
    #[inline]
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.len() == 0
    }

    pub(crate) fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    #[track_caller]
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// Where the item `key` names is, if it is here, and its `when` and
    /// links: one look-up of the store while the key names its own slot
    /// (always, until a compaction moves an item).
    #[inline]
    fn find(&self, key: Key) -> Option<(u32, u64, u32, u32)> {
        let at = match self.nodes.get(key.index()) {
            Some(node) if node.generation == key.generation() => key.index(),
            _ => self
                .keys
                .find(key, |at| self.nodes.get(at).map(|node| node.generation))?,
        };
        let node = self.node(at);
        Some((at, node.when, node.prev, node.next))
    }

    /// Inserts `value` at millisecond `when` and returns its key.
    ///
    /// # Panics
    ///
    /// If the queue already holds `u32::MAX - 3` items.
    #[track_caller]
    #[inline]
    pub(crate) fn insert(&mut self, when: u64, value: T) -> Key {
        assert!(
            self.nodes.len() < crate::wheel::raw::MAX_ENTRIES,
            "hashwheel: a DelayQueue cannot hold more than {} items",
            crate::wheel::raw::MAX_ENTRIES
        );
        let generation = self.keys.generation();
        let (list, when) = self.list_for(when.min(NEVER));
        // The node goes in linked: one look-up of the store, for the old
        // top's back link.
        let next = self.top(list);
        let at = self.nodes.insert(Node {
            when,
            next,
            prev: NIL,
            generation,
            value,
        });
        self.set_top(list, at, next, when);
        self.keys.key_of(at, generation)
    }

    /// The deadline of the item `key` names, in milliseconds; `None` if
    /// the key is stale.
    pub(crate) fn when(&self, key: Key) -> Option<u64> {
        self.find(key).map(|(_, when, _, _)| when & NEVER)
    }

    /// Moves the item `key` names to millisecond `when`: `None` if the key
    /// is stale, else whether it went onto the stack of due items.
    pub(crate) fn reset(&mut self, key: Key, when: u64) -> Option<bool> {
        let (at, old, prev, next) = self.find(key)?;
        self.detach(at, old, prev, next);
        Some(self.link(at, when.min(NEVER)) == List::Due)
    }

    /// Removes the item `key` names: its key (as handed out), deadline and
    /// value; `None` if the key is stale.
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<(Key, u64, T)> {
        let (at, when, prev, next) = self.find(key)?;
        self.detach(at, when, prev, next);
        Some(self.take(at))
    }

    /// Takes the unlinked item at `at` out of the store.
    #[inline]
    fn take(&mut self, at: u32) -> (Key, u64, T) {
        let node = self.nodes.remove(at);
        let key = self.keys.key_of(at, node.generation);
        self.keys.forget(node.generation);
        (key, node.ms(), node.value)
    }

    /// Where an item at millisecond `when` goes (tokio-util's
    /// `insert_idx`): the stack of due items if it is at or before
    /// `elapsed`, the far set past the wheel's reach, else its slot; and
    /// its `when` there, with the flag of the list.
    #[inline]
    fn list_for(&self, when: u64) -> (List, u64) {
        if when <= self.elapsed {
            return (List::Due, when | DUE);
        }
        if when - self.elapsed > REACH {
            return (List::Far, when | FAR);
        }
        let level = level_for(self.elapsed, when);
        (List::Slot(level, slot_for(when, level)), when)
    }

    /// Where an item whose `when` (with its flag) is `when` is linked now.
    /// A slot is the one `elapsed` says: tokio-util's `Wheel::remove`
    /// looks there, and between polls every item is there.
    #[inline]
    fn list_of(&self, when: u64) -> List {
        if when & DUE != 0 {
            List::Due
        } else if when & FAR != 0 {
            List::Far
        } else {
            let level = level_for(self.elapsed, when);
            List::Slot(level, slot_for(when, level))
        }
    }

    /// The top of stack `list` (`NIL` for the far set, which is no stack).
    #[inline]
    fn top(&self, list: List) -> u32 {
        match list {
            List::Due => self.due,
            List::Far => NIL,
            List::Slot(level, slot) => self.heads[level][slot],
        }
    }

    /// Makes the item at `at`, linked in front of `next` (the old top) with
    /// `when`, the top of `list` (or puts it in the far set).
    #[inline]
    fn set_top(&mut self, list: List, at: u32, next: u32, when: u64) {
        if next != NIL {
            self.node_mut(next).prev = at;
        }
        match list {
            List::Due => self.due = at,
            List::Far => {
                self.far.insert((when & NEVER, at));
                self.next = None;
            }
            List::Slot(level, slot) => {
                if next == NIL {
                    self.occupied[level] |= 1 << slot;
                    self.next = None;
                }
                self.heads[level][slot] = at;
            }
        }
    }

    /// Takes the item at `at`, whose `when` (with its flag) and links are
    /// these, off its list; its own fields are left for the caller.
    #[inline]
    fn detach(&mut self, at: u32, when: u64, prev: u32, next: u32) {
        self.detach_from(self.list_of(when), at, when, prev, next);
    }

    /// [`detach`](Self::detach) from `list`, known (a slot being moved
    /// down, whose items `elapsed` no longer places).
    #[inline]
    fn detach_from(&mut self, list: List, at: u32, when: u64, prev: u32, next: u32) {
        if list == List::Far {
            self.far.remove(&(when & NEVER, at));
            self.next = None;
            return;
        }
        if next != NIL {
            self.node_mut(next).prev = prev;
        }
        if prev != NIL {
            self.node_mut(prev).next = next;
            return;
        }
        match list {
            List::Due => self.due = next,
            List::Far => {}
            List::Slot(level, slot) => {
                self.heads[level][slot] = next;
                if next == NIL {
                    self.occupied[level] &= !(1 << slot);
                    self.next = None;
                }
            }
        }
    }

    /// Files the unlinked item at `at` at millisecond `when`; returns its
    /// list.
    fn link(&mut self, at: u32, when: u64) -> List {
        let (list, when) = self.list_for(when);
        let next = self.top(list);
        let node = self.node_mut(at);
        node.when = when;
        node.next = next;
        node.prev = NIL;
        self.set_top(list, at, next, when);
        list
    }

    /// Pops the top of `list` (a stack), leaving its links stale.
    #[inline]
    fn pop(&mut self, list: List) -> Option<u32> {
        let at = self.top(list);
        if at == NIL {
            return None;
        }
        let node = self.node(at);
        let (when, next) = (node.when, node.next);
        self.detach_from(list, at, when, NIL, next);
        Some(at)
    }

    /// Takes the next item off the stack of due items (tokio-util's
    /// `expired.pop`): its key, deadline and value.
    #[inline]
    pub(crate) fn pop_due(&mut self) -> Option<(Key, u64, T)> {
        let at = self.pop(List::Due)?;
        Some(self.take(at))
    }

    /// The first occupied slot of `level` at or after `now`, and when it
    /// starts (tokio-util's `Level::next_expiration`).
    #[inline]
    fn level_expiration(&self, level: usize, now: u64) -> Option<Expiration> {
        let occupied = self.occupied[level];
        if occupied == 0 {
            return None;
        }
        // Powers of two: shifts and masks, not divisions.
        let shift = 6 * level as u32;
        let now_slot = (now >> shift) as u32;
        let zeros = occupied.rotate_right(now_slot % SLOTS as u32).trailing_zeros();
        let slot = ((zeros + now_slot) % SLOTS as u32) as usize;
        let level_start = now & !(level_range(level) - 1);
        let mut deadline = level_start + ((slot as u64) << shift);
        if deadline < now {
            // Only the top level wraps.
            deadline += level_range(level);
        }
        Some(Expiration {
            level,
            slot,
            deadline,
        })
    }

    /// Where the wheel has work next (tokio-util's `next_expiration`), or
    /// where its reach first takes in a far item (a level of its own,
    /// [`LEVELS`], at the millisecond [`REACH`] before that item:
    /// `elapsed` never passes a far item that is not in the wheel).
    #[inline]
    fn next_expiration(&self) -> Option<Expiration> {
        let wheel = (0..LEVELS).find_map(|level| self.level_expiration(level, self.elapsed));
        let Some(&(when, _)) = self.far.first() else {
            return wheel;
        };
        if when >= NEVER {
            return wheel;
        }
        let reached = (when - REACH).max(self.elapsed);
        match wheel {
            Some(expiration) if expiration.deadline <= reached => wheel,
            _ => Some(Expiration {
                level: LEVELS,
                slot: 0,
                deadline: reached,
            }),
        }
    }

    /// The millisecond the wheel has work at next, its stack of due items
    /// left out (tokio-util's `poll_at`), or where it reaches a far item.
    #[inline]
    pub(crate) fn poll_at(&mut self) -> Option<u64> {
        self.expiration().map(|e| e.deadline)
    }

    /// [`next_expiration`](Self::next_expiration), worked out again only
    /// where it may have changed.
    #[inline]
    fn expiration(&mut self) -> Option<Expiration> {
        match self.next {
            Some(next) => next,
            None => {
                let next = self.next_expiration();
                self.next = Some(next);
                next
            }
        }
    }

    /// The next item due by millisecond `now`, moving `elapsed` up to its
    /// slot, or to `now` once nothing is due by then (tokio-util's
    /// `Wheel::poll`): its key, deadline and value.
    pub(crate) fn poll(&mut self, now: u64) -> Option<(Key, u64, T)> {
        loop {
            match self.expiration() {
                Some(expiration) if expiration.level == LEVELS && expiration.deadline <= now => {
                    self.set_elapsed(expiration.deadline);
                    self.pull_reachable();
                }
                Some(expiration) if expiration.deadline <= now => {
                    if let Some(at) = self.poll_expiration(expiration) {
                        return Some(self.take(at));
                    }
                    self.set_elapsed(expiration.deadline);
                }
                _ => {
                    self.set_elapsed(now);
                    return None;
                }
            }
        }
    }

    /// Takes the top of a level-0 slot, or moves a higher slot's items
    /// down a level, each to its slot there, popping its stack from the
    /// top (tokio-util's `poll_expiration`).
    fn poll_expiration(&mut self, expiration: Expiration) -> Option<u32> {
        let Expiration { level, slot, .. } = expiration;
        loop {
            let at = self.pop(List::Slot(level, slot))?;
            if level == 0 {
                return Some(at);
            }
            let when = self.node(at).when;
            let below = List::Slot(level - 1, slot_for(when, level - 1));
            let next = self.top(below);
            let node = self.node_mut(at);
            node.next = next;
            node.prev = NIL;
            self.set_top(below, at, next, when);
        }
    }

    fn set_elapsed(&mut self, when: u64) {
        if when > self.elapsed {
            self.elapsed = when;
            self.next = None;
        }
    }

    /// The far items (past the wheel's reach when filed) that the wheel
    /// reaches now go into it.
    fn pull_reachable(&mut self) {
        while let Some(&(when, at)) = self.far.first() {
            if when.saturating_sub(self.elapsed) > REACH {
                return;
            }
            self.far.pop_first();
            self.next = None;
            self.link(at, when);
        }
    }

    /// The key of the item that comes out next: the due stack's top, else
    /// the wheel's next, else the first far item. The wheel's next is in
    /// its next slot, among the items of the earliest deadline there: a
    /// slot of level `n` is popped `n` times, each time from the top onto
    /// the stacks below, so of those the top one comes out first after an
    /// even number of moves and the bottom one after an odd (tokio-util's
    /// `peek` takes the top one whatever the level). O(1) for the due stack
    /// and level 0; a walk of the slot's stack otherwise.
    pub(crate) fn peek(&self) -> Option<Key> {
        let wheel = || (0..LEVELS).find_map(|level| self.level_expiration(level, self.elapsed));
        let at = if self.due != NIL {
            self.due
        } else if let Some(expiration) = wheel() {
            let mut best: Option<(u64, u32)> = None;
            let mut at = self.heads[expiration.level][expiration.slot];
            let last_wins = expiration.level % 2 == 1;
            while at != NIL {
                let node = self.node(at);
                let when = node.ms();
                match best {
                    Some((earliest, _)) if when > earliest => {}
                    Some((earliest, _)) if when == earliest && !last_wins => {}
                    _ => best = Some((when, at)),
                }
                at = node.next;
            }
            best?.1
        } else {
            self.far.first()?.1
        };
        Some(self.keys.key_of(at, self.node(at).generation))
    }

    /// Removes and drops every item and starts the wheel again from
    /// millisecond 0, as tokio-util's `clear` does.
    pub(crate) fn clear(&mut self) {
        self.heads.iter_mut().for_each(|level| level.fill(NIL));
        self.occupied = [0; LEVELS];
        self.due = NIL;
        self.far.clear();
        self.elapsed = 0;
        self.next = Some(None);
        self.keys.clear_moved();
        self.nodes.clear();
    }

    /// Gives back the store's vacant slots above its highest item.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.nodes.shrink();
        self.keys.shrink_to_fit();
    }

    /// Moves items into the store's vacant slots and gives back the rest,
    /// relinking the stacks; keys stay valid. O(len).
    pub(crate) fn compact(&mut self) {
        let mut map = std::collections::HashMap::new();
        let keys = &mut self.keys;
        self.nodes.compact(|node, from, to| {
            keys.moved(node.generation, from, to);
            map.insert(from, to);
        });
        self.nodes.shrink();
        if map.is_empty() {
            return;
        }
        let fix = |at: &mut u32| {
            if let Some(&to) = map.get(at) {
                *at = to;
            }
        };
        for (_, node) in self.nodes.iter_mut() {
            fix(&mut node.next);
            fix(&mut node.prev);
        }
        self.heads.iter_mut().flatten().for_each(fix);
        fix(&mut self.due);
        self.far = std::mem::take(&mut self.far)
            .into_iter()
            .map(|(when, mut at)| {
                fix(&mut at);
                (when, at)
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tokio-util's own `level_for` and `slot_for` tests.
    #[test]
    fn levels_and_slots_as_tokio_utils() {
        for pos in 0..64 {
            assert_eq!(0, level_for(0, pos));
            assert_eq!(pos as usize, slot_for(pos, 0));
        }
        for level in 1..5usize {
            for pos in level as u64..64 {
                let a = pos * 64_u64.pow(level as u32);
                assert_eq!(level, level_for(0, a));
                assert_eq!(pos as usize, slot_for(a, level));
                if pos > level as u64 {
                    assert_eq!(level, level_for(0, a - 1));
                }
                assert_eq!(level, level_for(0, a + 1));
            }
        }
    }

    /// An item is 24 bytes and its value: `DelayQueue<()>` (Q2) keeps its
    /// 24 bytes an item.
    #[test]
    fn a_unit_item_is_24_bytes() {
        assert_eq!(crate::wheel::store::slot_size::<Node<()>>(), 24);
    }
}
