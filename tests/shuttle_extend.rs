//! A schedule-exploring model (shuttle) of the reset by extension: a
//! timeout's deadline word moved later with one compare-and-swap and no
//! lock (`Deadlines::extend` in src/engine/deadlines.rs), racing the driver that
//! re-files or fires the entry under the shard's lock (`Deadlines::due`,
//! `Wheel::pop_expired_checked`), a cancel, the timer's stop (which clears
//! `LINKED` under the lock), a task reading `deadline()` and `is_expired()`
//! while another extends, and a stale handle after its slot was reused.
//!
//! The protocol is written out with shuttle's atomics and mutex, with the
//! real code's word layout, orderings and steps; shuttle runs each scenario
//! under many schedules (random and PCT). Each must fire an entry exactly
//! once (or never, if cancelled or stopped), never before the latest
//! deadline an extension reported as made, and never move an entry of
//! another generation. Two deliberately broken variants (an extension
//! without the generation check, a driver that fires without a
//! compare-and-swap re-check) must be caught.
//!
//! An interval's beat (its state in a word of the same table, re-armed by
//! the driver as it fires a tick) has a model of its own,
//! `tests/shuttle_beat.rs`.
//!
//! Run with `RUSTFLAGS="--cfg shuttle" cargo test --test shuttle_extend
//! --target-dir target/shuttle`.
#![cfg(shuttle)]

mod common;

use common::shuttle as harness;
use shuttle::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;

// The deadline word, as in src/engine/deadlines.rs.
const LINKED: u64 = 1 << 63;
const GEN_SHIFT: u32 = 48;
const GEN_MASK: u64 = (1 << 14) - 1;
const FAR: u64 = (1 << 48) - 1;

fn word_gen(word: u64) -> u64 {
    (word >> GEN_SHIFT) & GEN_MASK
}

fn linked_word(gen: u64, tick: u64) -> u64 {
    LINKED | (gen << GEN_SHIFT) | tick.min(FAR)
}

/// Schedules per scenario and strategy.
const ITERATIONS: usize = 2_000;

/// Which deliberate bug the model runs with.
#[derive(Clone, Copy, Default)]
struct Broken {
    /// `extend` succeeds on any linked word, whatever its generation.
    no_gen_check: bool,
    /// The driver loads the word, then fires with a plain store instead of
    /// a compare-and-swap: an extension in between is lost.
    fire_without_recheck: bool,
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
}

struct Inner {
    entry: Entry,
    /// What fired: (generation, the driver's now, the word's deadline).
    fires: Vec<(u64, u64, u64)>,
}

/// One slab slot of one shard: its entry under the lock, its deadline word
/// beside.
struct Shard {
    lock: Mutex<Inner>,
    word: AtomicU64,
    stopped: AtomicBool,
    broken: Broken,
}

/// What a reset did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reset {
    /// One compare-and-swap, no lock.
    Extended,
    /// Under the lock: the entry was pending.
    Locked,
    /// Not pending any more (fired, cancelled, stopped, or another
    /// generation's).
    Refused,
}

impl Shard {
    fn new(broken: Broken) -> Arc<Shard> {
        Arc::new(Shard {
            lock: Mutex::new(Inner {
                entry: Entry {
                    gen: 0,
                    filed: 0,
                    state: St::Vacant,
                },
                fires: Vec::new(),
            }),
            word: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            broken,
        })
    }

    /// `Timeout::poll`'s registration: `Deadlines::insert` under the lock.
    fn insert(&self, tick: u64) -> u64 {
        let mut inner = self.lock.lock().unwrap();
        assert_ne!(inner.entry.state, St::Pending, "the slot is taken");
        let gen = (word_gen(self.word.load(Ordering::Relaxed)) + 1) & GEN_MASK;
        inner.entry = Entry {
            gen,
            filed: tick,
            state: St::Pending,
        };
        self.word.store(linked_word(gen, tick), Ordering::Release);
        gen
    }

    /// `Deadlines::extend`.
    fn extend(&self, gen: u64, tick: u64) -> bool {
        let cur = self.word.load(Ordering::Acquire);
        let old = cur & FAR;
        cur & LINKED != 0
            && (self.broken.no_gen_check || word_gen(cur) == gen)
            && old != FAR
            && tick > old
            && tick < FAR
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

    /// `Timeout::reset_tick` for a registered timeout: the extension, else
    /// the locked path (`Wheel::reset` and `Deadlines::set`).
    fn reset(&self, gen: u64, tick: u64) -> Reset {
        if self.extend(gen, tick) {
            return Reset::Extended;
        }
        let mut inner = self.lock.lock().unwrap();
        if self.stopped.load(Ordering::Acquire)
            || inner.entry.gen != gen
            || inner.entry.state != St::Pending
        {
            return Reset::Refused;
        }
        inner.entry.filed = tick;
        self.word.store(linked_word(gen, tick), Ordering::Release);
        Reset::Locked
    }

    /// `Deadlines::due`: re-file at the word's deadline, or fire.
    fn due(&self, filed: u64) -> Option<u64> {
        let mut cur = self.word.load(Ordering::Acquire);
        loop {
            let tick = cur & FAR;
            if cur & LINKED != 0 && tick != FAR && tick > filed {
                return Some(tick);
            }
            if self.broken.fire_without_recheck {
                thread::yield_now();
                self.word.store(cur & !LINKED, Ordering::Release);
                return None;
            }
            match self.word.compare_exchange(
                cur,
                cur & !LINKED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return None,
                Err(actual) => cur = actual,
            }
        }
    }

    /// One driver turn at `now` (`turn::turn` with
    /// `Wheel::pop_expired_checked`): what is filed at or before `now` is
    /// re-filed or fired, under the lock.
    fn turn(&self, now: u64) {
        let mut inner = self.lock.lock().unwrap();
        while inner.entry.state == St::Pending && inner.entry.filed <= now {
            match self.due(inner.entry.filed) {
                Some(tick) => inner.entry.filed = tick,
                None => {
                    inner.entry.state = St::Fired;
                    let fired = (
                        inner.entry.gen,
                        now,
                        self.word.load(Ordering::Acquire) & FAR,
                    );
                    // Never early: it fires at the deadline it is filed at.
                    assert!(inner.entry.filed <= now, "fired early: {fired:?}");
                    inner.fires.push(fired);
                }
            }
        }
    }

    /// `Timeout::clear` on drop or cancel: under the lock, the word keeps
    /// the generation and nothing else (`Deadlines::remove`, a plain
    /// store: the handle is its only writer without the lock), then
    /// `Wheel::remove`.
    fn remove(&self, gen: u64) -> St {
        let mut inner = self.lock.lock().unwrap();
        assert_eq!(inner.entry.gen, gen);
        self.word.store(gen << GEN_SHIFT, Ordering::Release);
        let state = inner.entry.state;
        inner.entry.state = St::Vacant;
        state
    }

    /// `shard::stop`: the flag, then the drain, which clears `LINKED`.
    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let mut inner = self.lock.lock().unwrap();
        if inner.entry.state == St::Pending {
            inner.entry.state = St::Cancelled;
            self.word.fetch_and(!LINKED, Ordering::AcqRel);
        }
    }

    /// `Timeout::is_expired`: no lock while the word says pending.
    fn is_expired(&self, gen: u64) -> bool {
        let word = self.word.load(Ordering::Acquire);
        if word & LINKED != 0 && word_gen(word) == gen {
            return false;
        }
        let inner = self.lock.lock().unwrap();
        inner.entry.gen == gen && inner.entry.state == St::Fired
    }

    /// `Timeout::deadline`: the word's deadline, no lock.
    fn deadline(&self) -> u64 {
        self.word.load(Ordering::Acquire) & FAR
    }

    fn fires(&self) -> Vec<(u64, u64, u64)> {
        self.lock.lock().unwrap().fires.clone()
    }
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

/// Extend vs the driver firing the old deadline: a timeout due at 2 is
/// pushed to 3, then 5, while the driver turns to 8. It fires exactly once,
/// at or after the last deadline an extension or a locked reset made.
fn extend_vs_driver(broken: Broken) {
    let shard = Shard::new(broken);
    let gen = shard.insert(2);
    let d = driver(&shard, 8);
    let mut made = 2;
    for tick in [3, 5] {
        match shard.reset(gen, tick) {
            Reset::Extended | Reset::Locked => made = tick,
            Reset::Refused => break,
        }
    }
    d.join().unwrap();
    let fires = shard.fires();
    assert_eq!(fires.len(), 1, "fired {fires:?}");
    let (_, now, deadline) = fires[0];
    assert!(
        now >= made && deadline >= made,
        "fired at {now} (word {deadline}), but a reset to {made} succeeded"
    );
    assert!(shard.is_expired(gen));
}

/// Extend vs cancel: the handle extends, then drops the timeout; the
/// driver never fires it after the cancel, and fires it at most once,
/// never before a deadline that was made.
fn extend_vs_cancel(broken: Broken) {
    let shard = Shard::new(broken);
    let gen = shard.insert(1);
    let d = driver(&shard, 4);
    let made = match shard.reset(gen, 3) {
        Reset::Refused => 1,
        _ => 3,
    };
    let state = shard.remove(gen);
    d.join().unwrap();
    let fires = shard.fires();
    assert!(fires.len() <= 1, "fired {fires:?}");
    assert_eq!(
        state == St::Fired,
        fires.len() == 1,
        "{state:?} but fired {fires:?}"
    );
    if let Some(&(_, now, _)) = fires.first() {
        assert!(now >= made, "fired at {now}, a reset to {made} succeeded");
    }
}

/// Extend vs stop: an extension races the stop's drain; after the stop no
/// reset lands and nothing fires, and what fired before it did so at or
/// after its deadline.
fn extend_vs_stop(broken: Broken) {
    let shard = Shard::new(broken);
    let gen = shard.insert(2);
    let stopper = {
        let shard = shard.clone();
        thread::spawn(move || shard.stop())
    };
    let d = driver(&shard, 3);
    let first = shard.reset(gen, 4);
    stopper.join().unwrap();
    assert_eq!(
        shard.reset(gen, 6),
        Reset::Refused,
        "a reset after the stop"
    );
    d.join().unwrap();
    let fires = shard.fires();
    let state = shard.lock.lock().unwrap().entry.state;
    match state {
        St::Cancelled => assert!(fires.is_empty(), "cancelled, but fired {fires:?}"),
        St::Fired => {
            // The stop came after the fire, and the fire after its deadline.
            assert_eq!(fires.len(), 1);
            assert_eq!(first, Reset::Refused, "extended, then fired at {fires:?}");
            assert!(fires[0].1 >= 2);
        }
        s => panic!("entry {s:?}"),
    }
}

/// Extend from one thread while another polls: a reader's `deadline()`
/// and `is_expired()` without the lock never see the timeout expired
/// before the driver fired it at its deadline, and deadlines only grow.
fn extend_while_polled(broken: Broken) {
    let shard = Shard::new(broken);
    let gen = shard.insert(1);
    let extender = {
        let shard = shard.clone();
        thread::spawn(move || {
            let mut made = 1;
            for tick in [2, 4] {
                if shard.reset(gen, tick) != Reset::Refused {
                    made = tick;
                }
            }
            made
        })
    };
    let poller = {
        let shard = shard.clone();
        thread::spawn(move || {
            let mut last = 0;
            for _ in 0..3 {
                let deadline = shard.deadline();
                assert!(
                    deadline >= last,
                    "deadline() went back: {last} -> {deadline}"
                );
                last = deadline;
                if shard.is_expired(gen) {
                    let fires = shard.fires();
                    assert_eq!(fires.len(), 1, "expired, fired {fires:?}");
                    assert!(fires[0].1 >= fires[0].2, "expired early: {fires:?}");
                }
            }
        })
    };
    let d = driver(&shard, 5);
    let made = extender.join().unwrap();
    poller.join().unwrap();
    d.join().unwrap();
    let fires = shard.fires();
    assert_eq!(fires.len(), 1, "fired {fires:?}");
    assert!(
        fires[0].1 >= made,
        "fired {fires:?}, a reset to {made} succeeded"
    );
}

/// A stale handle extends after its slot was reused: generation 1 fired
/// and was freed, generation 2 took the slot (due at 3); the stale
/// handle's extension to 6 must not move it.
fn stale_extend_after_reuse(broken: Broken) {
    let shard = Shard::new(broken);
    let old = shard.insert(1);
    shard.turn(1);
    assert_eq!(shard.remove(old), St::Fired);
    let reuser = {
        let shard = shard.clone();
        thread::spawn(move || shard.insert(3))
    };
    let stale = {
        let shard = shard.clone();
        thread::spawn(move || shard.extend(old, 6))
    };
    let new = reuser.join().unwrap();
    let d = driver(&shard, 8);
    stale.join().unwrap();
    d.join().unwrap();
    let fires = shard.fires();
    let mine: Vec<_> = fires.iter().filter(|f| f.0 == new).collect();
    assert_eq!(mine.len(), 1, "fired {fires:?}");
    assert_eq!(
        mine[0].1, 3,
        "generation {new} moved by a stale handle: {fires:?}"
    );
}

/// Runs `scenario` under random schedules and under PCT.
fn explore(scenario: fn(Broken), broken: Broken) {
    harness::check(ITERATIONS, move || scenario(broken));
}

#[test]
fn extend_races_the_driver_firing_the_old_deadline() {
    explore(extend_vs_driver, Broken::default());
}

#[test]
fn extend_races_cancel() {
    explore(extend_vs_cancel, Broken::default());
}

#[test]
fn extend_races_stop() {
    explore(extend_vs_stop, Broken::default());
}

#[test]
fn extend_while_another_thread_reads_the_timeout() {
    explore(extend_while_polled, Broken::default());
}

#[test]
fn a_stale_handle_never_moves_the_entry_that_reuses_its_slot() {
    explore(stale_extend_after_reuse, Broken::default());
}

/// The model is not vacuous: without the generation in the check, the
/// stale handle moves the new entry's deadline.
#[test]
#[should_panic(expected = "moved by a stale handle")]
fn broken_extension_without_the_generation_is_caught() {
    explore(
        stale_extend_after_reuse,
        Broken {
            no_gen_check: true,
            ..Broken::default()
        },
    );
}

/// ...and a driver that fires without re-checking the word with a
/// compare-and-swap loses an extension made in between: it fires before a
/// deadline the handle was told it had.
#[test]
#[should_panic(expected = "succeeded")]
fn broken_driver_firing_without_the_re_check_is_caught() {
    explore(
        extend_vs_driver,
        Broken {
            fire_without_recheck: true,
            ..Broken::default()
        },
    );
}
