//! A schedule-exploring model (shuttle) of lazy cancellation (issue 54):
//! a timeout dropped while its entry is cold marks its deadline word
//! `DROPPED` under the shard's lock and leaves the entry linked
//! (`Deadlines::drop_lazily`, `Timeout::clear`), and the driver reclaims it
//! when it comes due (`Deadlines::due` returns `Due::Reclaim`) or looking
//! ahead of its clock (`Wheel::reclaim_ahead` with
//! `Deadlines::take_dropped`), under the lock; `stop` drains it without
//! counting or waking it. It races the handle's own lock-free extension of
//! the word (`Deadlines::extend`) made before the drop, the driver firing
//! or re-filing the entry, the timer's stop, and a stale handle after the
//! key was reclaimed and reused.
//!
//! The protocol is written out with shuttle's atomics and mutex, with the
//! real code's word layout, orderings and steps; shuttle runs each
//! scenario under many schedules (PCT, then random, from a fixed seed).
//! Each must end every entry exactly once (fired, or cancelled: at its
//! drop or by the stop), never fire nor wake an entry after its handle was
//! dropped, let go of its waker exactly once, leave no entry behind once
//! the driver has turned past it, and never move an entry of another
//! generation. Three deliberately broken variants must be caught: a driver
//! that reads a dropped word as a timeout's (re-filing or firing it), a
//! stop that drains a dropped entry as a pending one, and a drop that
//! marks the word without the lock.
//!
//! Run with `RUSTFLAGS="--cfg shuttle" cargo test --test shuttle_lazy
//! --target-dir target/shuttle`.
#![cfg(shuttle)]

mod common;

use common::shuttle as harness;
use shuttle::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;

// The deadline word, as in src/engine/deadlines.rs.
const LINKED: u64 = 1 << 63;
const DROPPED: u64 = 1 << 60;
const GEN_SHIFT: u32 = 48;
const GEN_MASK: u64 = (1 << 12) - 1;
const FAR: u64 = (1 << 48) - 1;

fn word_gen(word: u64) -> u64 {
    (word >> GEN_SHIFT) & GEN_MASK
}

fn linked_word(gen: u64, tick: u64) -> u64 {
    LINKED | (gen << GEN_SHIFT) | tick.min(FAR)
}

/// Schedules per scenario and scheduler.
const ITERATIONS: usize = 1_000;
/// The schedulers' seed (`HASHWHEEL_SHUTTLE_SEED` picks another).
const SEED: u64 = 54;

/// The model, sound or with one deliberate bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Sound,
    /// The driver reads a dropped word as a timeout's: it re-files the
    /// entry at its extended deadline, or fires it.
    DueIgnoresDropped,
    /// `stop` drains a dropped entry as a pending one: counted cancelled
    /// again, and woken.
    StopWakesDropped,
    /// The handle marks the word dropped with a load and a store, without
    /// the lock: a fire between the two is lost, and the entry ends twice.
    DropWithoutLock,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Pending,
    Fired,
    Cancelled,
    Vacant,
}

/// The slot as the wheel holds it, under the shard's lock.
struct Entry {
    gen: u64,
    /// The tick the wheel holds it at (at or before the word's).
    filed: u64,
    state: St,
    /// Its waker: a token, taken out to be woken or let go.
    waker: Option<u64>,
}

#[derive(Default)]
struct Log {
    /// (generation, the driver's now) of each fire.
    fires: Vec<(u64, u64)>,
    /// Generations whose waker was woken.
    woken: Vec<u64>,
    /// Generations whose waker was let go unwoken.
    released: Vec<u64>,
    /// Entries ended cancelled (at their drop, or by the stop).
    cancelled: u64,
    /// Entries dropped lazily and not reclaimed yet.
    lazy: u64,
}

struct Inner {
    entry: Entry,
    log: Log,
}

/// One store slot of one shard: its entry under the lock, its deadline
/// word beside.
struct Shard {
    lock: Mutex<Inner>,
    word: AtomicU64,
    stopped: AtomicBool,
    variant: Variant,
}

/// How a handle's drop went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dropped {
    /// Its word marked, the entry left for the driver.
    Lazily,
    /// Taken out of the wheel, in the state it was in.
    AtOnce(St),
}

impl Shard {
    fn new(variant: Variant) -> Arc<Shard> {
        Arc::new(Shard {
            lock: Mutex::new(Inner {
                entry: Entry {
                    gen: 0,
                    filed: 0,
                    state: St::Vacant,
                    waker: None,
                },
                log: Log::default(),
            }),
            word: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            variant,
        })
    }

    /// `Timeout::register`: `Wheel::insert` and `Deadlines::insert` under
    /// the lock.
    fn insert(&self, tick: u64) -> u64 {
        let mut inner = self.lock.lock().unwrap();
        assert_eq!(inner.entry.state, St::Vacant, "the slot is taken");
        let gen = (word_gen(self.word.load(Ordering::Relaxed)) + 1) & GEN_MASK;
        inner.entry = Entry {
            gen,
            filed: tick,
            state: St::Pending,
            waker: Some(gen),
        };
        self.word.store(linked_word(gen, tick), Ordering::Release);
        gen
    }

    /// `Deadlines::extend`: one compare-and-swap, no lock. (Its handle
    /// is the one that drops: it never meets its own word dropped.)
    fn extend(&self, gen: u64, tick: u64) -> bool {
        let cur = self.word.load(Ordering::Acquire);
        cur & LINKED != 0
            && word_gen(cur) == gen
            && tick > cur & FAR
            && self
                .word
                .compare_exchange(
                    cur,
                    (cur & !FAR) | tick,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
    }

    /// `Deadlines::drop_lazily`'s check and mark.
    fn mark_dropped(&self, gen: u64) -> bool {
        let cur = self.word.load(Ordering::Acquire);
        if cur & (LINKED | DROPPED) != LINKED || word_gen(cur) != gen {
            return false;
        }
        if self.variant == Variant::DropWithoutLock {
            thread::yield_now();
        }
        self.word.store(cur | DROPPED, Ordering::Release);
        true
    }

    /// `Timeout::clear` of a registered timeout whose entry is cold
    /// (`lazily`) or not: under the lock, the word marked dropped and the
    /// entry left linked, its waker taken; else (or where it fired, or was
    /// drained by the stop) the word cleared and the entry taken out, its
    /// waker let go.
    fn drop_handle(&self, gen: u64, lazily: bool) -> Dropped {
        if lazily && self.variant == Variant::DropWithoutLock && self.mark_dropped(gen) {
            let mut inner = self.lock.lock().unwrap();
            Self::dropped_lazily(&mut inner);
            return Dropped::Lazily;
        }
        let mut inner = self.lock.lock().unwrap();
        assert_eq!(inner.entry.gen, gen);
        if lazily && self.mark_dropped(gen) {
            Self::dropped_lazily(&mut inner);
            return Dropped::Lazily;
        }
        self.word.store(gen << GEN_SHIFT, Ordering::Release);
        let state = inner.entry.state;
        if state == St::Pending {
            inner.log.cancelled += 1;
        }
        if let Some(token) = inner.entry.waker.take() {
            inner.log.released.push(token);
        }
        inner.entry.state = St::Vacant;
        Dropped::AtOnce(state)
    }

    /// A lazy drop's count, under the lock: cancelled, left in the wheel,
    /// its waker let go (the entry's line is the drop's; its neighbours'
    /// are not).
    fn dropped_lazily(inner: &mut Inner) {
        inner.log.cancelled += 1;
        inner.log.lazy += 1;
        if let Some(token) = inner.entry.waker.take() {
            inner.log.released.push(token);
        }
    }

    /// `Deadlines::due`: reclaim a dropped entry, re-file one moved later,
    /// or fire (a compare-and-swap that an extension makes retry).
    fn due(&self, filed: u64) -> Due {
        let mut cur = self.word.load(Ordering::Acquire);
        if cur & DROPPED != 0 && self.variant != Variant::DueIgnoresDropped {
            self.word
                .store(cur & (GEN_MASK << GEN_SHIFT), Ordering::Release);
            return Due::Reclaim;
        }
        loop {
            let tick = cur & FAR;
            if cur & LINKED != 0 && tick > filed {
                return Due::Refile(tick);
            }
            match self.word.compare_exchange(
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

    /// `Deadlines::take_dropped`, under the lock.
    fn take_dropped(&self) -> bool {
        let cur = self.word.load(Ordering::Acquire);
        if cur & DROPPED == 0 {
            return false;
        }
        self.word
            .store(cur & (GEN_MASK << GEN_SHIFT), Ordering::Release);
        true
    }

    /// A dropped entry out of the wheel and the store, its waker let go
    /// unwoken, under the lock.
    fn reclaim(inner: &mut Inner) {
        if let Some(token) = inner.entry.waker.take() {
            inner.log.released.push(token);
        }
        inner.entry.state = St::Vacant;
        inner.log.lazy -= 1;
    }

    /// One driver turn at `now` (`driver::turn` with
    /// `Wheel::pop_expired_checked`, then `Wheel::reclaim_ahead`): what is
    /// filed at or before `now` is reclaimed, re-filed or fired; then an
    /// entry filed later is reclaimed if its word says dropped.
    fn turn(&self, now: u64) {
        let mut inner = self.lock.lock().unwrap();
        while inner.entry.state == St::Pending && inner.entry.filed <= now {
            match self.due(inner.entry.filed) {
                Due::Reclaim => Self::reclaim(&mut inner),
                Due::Refile(tick) => inner.entry.filed = tick,
                Due::Fire => {
                    inner.entry.state = St::Fired;
                    let gen = inner.entry.gen;
                    inner.log.fires.push((gen, now));
                    if inner.entry.waker.take().is_some() {
                        inner.log.woken.push(gen);
                    }
                }
            }
        }
        if inner.entry.state == St::Pending && self.take_dropped() {
            Self::reclaim(&mut inner);
        }
    }

    /// `shard::stop`: the flag, then the drain: a dropped entry is taken
    /// out unwoken and uncounted (its drop counted it), a pending one is
    /// cancelled, woken, and its word unlinked.
    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let mut inner = self.lock.lock().unwrap();
        if inner.entry.state != St::Pending {
            return;
        }
        if self.variant != Variant::StopWakesDropped && self.take_dropped() {
            Self::reclaim(&mut inner);
            return;
        }
        inner.entry.state = St::Cancelled;
        inner.log.cancelled += 1;
        self.word.fetch_and(!LINKED, Ordering::AcqRel);
        if inner.entry.waker.take().is_some() {
            let gen = inner.entry.gen;
            inner.log.woken.push(gen);
        }
    }
}

/// What the driver does with a due entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    Reclaim,
    Refile(u64),
    Fire,
}

/// The driver: turns at every tick from 1 to `end`.
fn driver(shard: &Arc<Shard>, end: u64) -> thread::JoinHandle<()> {
    let shard = shard.clone();
    thread::spawn(move || {
        for now in 1..=end {
            shard.turn(now);
        }
    })
}

/// The promises, once every thread is done and the driver has turned past
/// every deadline: one entry of generation `gen`, ended once, never fired
/// nor woken after a lazy drop, its waker out once, the slot left vacant.
fn check(shard: &Shard, gen: u64, dropped: Dropped) {
    let inner = shard.lock.lock().unwrap();
    let log = &inner.log;
    let fired = log.fires.iter().filter(|f| f.0 == gen).count() as u64;
    assert_eq!(
        fired + log.cancelled,
        1,
        "ended {fired} fired and {} cancelled ({dropped:?})",
        log.cancelled
    );
    if dropped == Dropped::Lazily {
        assert_eq!(fired, 0, "fired after its drop: {:?}", log.fires);
        assert!(
            log.woken.is_empty(),
            "woken after its drop: {:?}",
            log.woken
        );
    }
    let out = log.woken.len() + log.released.len();
    assert_eq!(out, 1, "its waker out {out} times");
    assert_eq!(log.lazy, 0, "a dropped entry left behind");
    assert_eq!(inner.entry.state, St::Vacant, "an entry left behind");
}

/// A timeout due at 2 is extended to 4 without the lock, then dropped cold,
/// while the driver turns to 6: it fires (and the drop takes it out), or
/// the drop leaves it and the driver reclaims it, never both.
fn drop_vs_driver(variant: Variant) {
    let shard = Shard::new(variant);
    let gen = shard.insert(2);
    let d = driver(&shard, 6);
    shard.extend(gen, 4);
    let dropped = shard.drop_handle(gen, true);
    d.join().unwrap();
    check(&shard, gen, dropped);
}

/// A cold drop against the timer's stop, the driver turning: the entry
/// ends once either way, and a dropped one is never woken.
fn drop_vs_stop(variant: Variant) {
    let shard = Shard::new(variant);
    let gen = shard.insert(5);
    let stopper = {
        let shard = shard.clone();
        thread::spawn(move || shard.stop())
    };
    let d = driver(&shard, 2);
    let dropped = shard.drop_handle(gen, true);
    stopper.join().unwrap();
    d.join().unwrap();
    // Past every deadline: anything still linked would be the driver's.
    shard.turn(6);
    check(&shard, gen, dropped);
}

/// A cold drop while the driver turns short of the deadline (its look
/// ahead may reclaim the entry, or its deadline's turn), then the key's
/// next timeout: it takes the next generation and fires once, at its own
/// deadline; the dropped one never does.
fn reuse_after_reclaim(variant: Variant) {
    let shard = Shard::new(variant);
    let old = shard.insert(5);
    let d = driver(&shard, 3);
    let dropped = shard.drop_handle(old, true);
    d.join().unwrap();
    shard.turn(5);
    check(&shard, old, dropped);
    let new = shard.insert(6);
    assert_ne!(new, old);
    let d = driver(&shard, 8);
    shard.extend(new, 7);
    d.join().unwrap();
    let fires = shard.lock.lock().unwrap().log.fires.clone();
    assert_eq!(fires.len(), 1, "fired {fires:?}");
    assert!(
        fires[0] == (new, 6) || fires[0] == (new, 7),
        "fired {fires:?}"
    );
}

#[test]
fn a_cold_drop_races_the_driver() {
    harness::variant_holds(drop_vs_driver, Variant::Sound, SEED, ITERATIONS);
}

#[test]
fn a_cold_drop_races_the_stop() {
    harness::variant_holds(drop_vs_stop, Variant::Sound, SEED, ITERATIONS);
}

#[test]
fn a_reclaimed_key_serves_the_next_timeout() {
    harness::variant_holds(reuse_after_reclaim, Variant::Sound, SEED, ITERATIONS);
}

/// The model is not vacuous: a driver that takes a dropped word for a
/// timeout's fires the entry after its drop.
#[test]
fn broken_driver_ignoring_the_mark_is_caught() {
    harness::variant_caught(drop_vs_driver, Variant::DueIgnoresDropped, SEED, ITERATIONS);
}

/// ...a stop that drains a dropped entry as a pending one ends it twice
/// and wakes it...
#[test]
fn broken_stop_waking_a_dropped_entry_is_caught() {
    harness::variant_caught(drop_vs_stop, Variant::StopWakesDropped, SEED, ITERATIONS);
}

/// ...and a drop that marks the word without the lock loses a fire made
/// between its load and its store.
#[test]
fn broken_drop_without_the_lock_is_caught() {
    harness::variant_caught(drop_vs_driver, Variant::DropWithoutLock, SEED, ITERATIONS);
}
