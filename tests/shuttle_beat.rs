//! A schedule-exploring model (shuttle) of an interval's beat: its state in
//! its deadline word and its task's waker in its wheel entry
//! (`deadlines.rs`, `turn.rs`, `interval.rs`; issue 36).
//!
//! The driver, under the shard's lock, fires the interval's entry when it
//! comes due: with no tick waiting it marks the word `UNTAKEN`, re-arms the
//! entry for the tick after and moves the task's waker out of the entry;
//! with a tick still waiting it stalls the entry (fired, not linked,
//! `STALLED`) and leaves the waker where it is. Once the lock is released it
//! wakes the waker by reference, then takes the lock again and puts it back
//! into the entry if that still holds none (an entry the timer's stop
//! drained meanwhile is woken again instead). The task polls without the
//! lock: it takes a waiting tick with one compare-and-swap (moving the
//! re-arm tick a period on) or, where the driver stalled the entry, re-arms
//! it under the lock (putting its waker back if the entry holds none); when
//! no tick waits it registers nothing if the entry holds a waker of the
//! same task (its own copy says so), and otherwise stores its new waker
//! under the lock and looks at the word again.
//!
//! The protocol is written out with shuttle's atomics and mutex, with the
//! real code's word layout and steps; shuttle runs each scenario under many
//! schedules (random and PCT). Each must take every tick once and in order,
//! and never leave the task waiting with a tick due (or the timer stopped)
//! and no wake coming, nor with its entry out of the wheel and no tick
//! waiting (a tick lost). Four deliberately broken variants must be
//! caught: a driver that drops the waker after waking it instead of
//! putting it back, a put-back that drops the waker of an entry a stop
//! drained, a task that does not look at the word again after storing a
//! new waker, and a driver that stalls the entry without the
//! compare-and-swap (unlink, then mark it stalled whatever the task did).
//!
//! Run with `RUSTFLAGS="--cfg shuttle" cargo test --test shuttle_beat
//! --target-dir target/shuttle`.
#![cfg(shuttle)]

mod common;

use common::shuttle as harness;
use shuttle::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use shuttle::sync::{Arc, Mutex};
use shuttle::thread;

// The deadline word, as in src/engine/deadlines.rs.
const LINKED: u64 = 1 << 63;
const UNTAKEN: u64 = 1 << 61;
const STALLED: u64 = 1 << 60;
const TICK: u64 = (1 << 48) - 1;

/// The period, in ticks.
const PERIOD: u64 = 2;
/// The driver turns at every tick up to this one.
const END: u64 = 9;

/// Schedules per scenario and strategy.
const ITERATIONS: usize = 2_000;

/// Which deliberate bug the model runs with.
#[derive(Clone, Copy, Default)]
struct Broken {
    /// The driver drops an interval's waker after waking it, instead of
    /// putting it back into the entry.
    no_put_back: bool,
    /// The put-back drops the waker of an entry that a stop drained
    /// meanwhile, instead of waking it again.
    put_back_ignores_stop: bool,
    /// The task registers a new waker and returns `Pending` on the word it
    /// read before, without looking again.
    no_recheck: bool,
    /// The driver stalls the entry with a `fetch_or` after unlinking it,
    /// whatever the task did meanwhile (a compare-and-swap is what is
    /// right).
    stall_without_cas: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Pending,
    Fired,
    Cancelled,
}

/// The entry as the wheel holds it, under the shard's lock.
struct Entry {
    /// The tick the wheel holds it at.
    filed: u64,
    state: St,
    /// The waker it holds: the id of a waker of the task.
    waker: Option<usize>,
}

struct Shard {
    lock: Mutex<Entry>,
    /// The interval's deadline word (no generation: one entry, never
    /// reused; `BEAT` left out).
    word: AtomicU64,
    stopped: AtomicBool,
    /// Wakes of the task's wakers, by id.
    wakes: [AtomicU32; 2],
    broken: Broken,
}

impl Shard {
    /// An interval registered due at `PERIOD` (re-armed at `2 * PERIOD`),
    /// its entry holding waker 0.
    fn new(broken: Broken) -> Arc<Shard> {
        Arc::new(Shard {
            lock: Mutex::new(Entry {
                filed: PERIOD,
                state: St::Pending,
                waker: Some(0),
            }),
            word: AtomicU64::new(LINKED | (2 * PERIOD)),
            stopped: AtomicBool::new(false),
            wakes: [AtomicU32::new(0), AtomicU32::new(0)],
            broken,
        })
    }

    fn wake(&self, waker: usize) {
        self.wakes[waker].fetch_add(1, Ordering::AcqRel);
    }

    /// One driver turn at `now` (`turn.rs`: the pop under the lock,
    /// `deliver`, `put_back`).
    fn turn(&self, now: u64) {
        let mut taken = None;
        {
            let mut entry = self.lock.lock().unwrap();
            while entry.state == St::Pending && entry.filed <= now {
                let filed = entry.filed;
                // `Deadlines::beat_due`.
                let mut word = self.word.load(Ordering::Acquire);
                loop {
                    if word & UNTAKEN == 0 {
                        entry.filed = (word & TICK).max(filed + 1);
                        self.word.store(word | UNTAKEN, Ordering::Release);
                        if let Some(waker) = entry.waker.take() {
                            taken = Some(waker);
                        }
                        break;
                    }
                    if self.broken.stall_without_cas {
                        entry.state = St::Fired;
                        drop(entry);
                        thread::yield_now();
                        self.word.fetch_or(STALLED, Ordering::AcqRel);
                        self.word.fetch_and(!LINKED, Ordering::AcqRel);
                        entry = self.lock.lock().unwrap();
                        break;
                    }
                    match self.word.compare_exchange(
                        word,
                        (word | STALLED) & !LINKED,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            // `Due::Stall`: fired, its waker kept.
                            entry.state = St::Fired;
                            break;
                        }
                        Err(actual) => word = actual,
                    }
                }
            }
        }
        let Some(waker) = taken else {
            return;
        };
        // `deliver`: woken by reference, outside the lock.
        self.wake(waker);
        if self.broken.no_put_back {
            return;
        }
        // `put_back`.
        let again = {
            let mut entry = self.lock.lock().unwrap();
            match entry.state {
                St::Cancelled if !self.broken.put_back_ignores_stop => Some(waker),
                St::Cancelled => None,
                _ => {
                    if entry.waker.is_none() {
                        entry.waker = Some(waker);
                    }
                    None
                }
            }
        };
        if let Some(waker) = again {
            self.wake(waker);
        }
    }

    /// `Timer::stop` (`shard::stop`): drains the entry under the lock,
    /// marks the timer stopped, and wakes the waker it held.
    fn stop(&self) {
        let waker = {
            let mut entry = self.lock.lock().unwrap();
            self.stopped.store(true, Ordering::Release);
            self.word.fetch_and(!LINKED, Ordering::AcqRel);
            match entry.state {
                St::Pending => {
                    entry.state = St::Cancelled;
                    entry.waker.take()
                }
                // A fired entry stays out of the drain, as the wheel's.
                _ => None,
            }
        };
        if let Some(waker) = waker {
            self.wake(waker);
        }
    }
}

/// The interval's handle (`Interval`), polled by its task.
struct Handle {
    shard: Arc<Shard>,
    /// The waker the entry holds a clone of, as far as the handle knows.
    waker: Option<usize>,
    /// The next tick.
    next: u64,
}

enum Polled {
    Tick(u64),
    Pending,
    Stopped,
}

impl Handle {
    /// `Interval::poll_next_tick` with waker `cx`.
    fn poll(&mut self, cx: usize) -> Polled {
        let shard = &*self.shard;
        if shard.stopped.load(Ordering::Acquire) {
            return Polled::Stopped;
        }
        let mut word = shard.word.load(Ordering::Acquire);
        if word & UNTAKEN == 0 {
            if self.waker != Some(cx) {
                // `register_waker`: the new waker into the entry.
                {
                    let mut entry = shard.lock.lock().unwrap();
                    entry.waker = Some(cx);
                }
                self.waker = Some(cx);
                if !shard.broken.no_recheck {
                    word = shard.word.load(Ordering::Acquire);
                }
            }
            if word & UNTAKEN == 0 {
                if shard.stopped.load(Ordering::Acquire) {
                    return Polled::Stopped;
                }
                return Polled::Pending;
            }
        }
        Polled::Tick(self.take(word))
    }

    /// `Interval::take` of a tick the driver fired, on time.
    fn take(&mut self, word: u64) -> u64 {
        let shard = &*self.shard;
        let due = self.next;
        self.next = due + PERIOD;
        // The steady state: one compare-and-swap moves the re-arm tick on.
        if word & (LINKED | UNTAKEN | STALLED) == LINKED | UNTAKEN
            && shard
                .word
                .compare_exchange(
                    word,
                    (word & !(UNTAKEN | TICK)) | (self.next + PERIOD),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
        {
            return due;
        }
        // `Interval::rearm` (`Timeout::rearm_beat`): under the lock, linked
        // again at the next tick, its waker back where the entry has none.
        let mut entry = shard.lock.lock().unwrap();
        if entry.state != St::Cancelled && !shard.stopped.load(Ordering::Acquire) {
            entry.state = St::Pending;
            entry.filed = self.next;
            shard
                .word
                .store(LINKED | (self.next + PERIOD), Ordering::Release);
            if entry.waker.is_none() {
                entry.waker = self.waker;
            }
        }
        due
    }
}

/// The task: takes up to `ticks` ticks, switching to its second waker after
/// the second (a poll from another place of the task), waiting for a wake
/// after each `Pending`. A wait with no wake coming, while a tick is due or
/// the timer stopped, is a lost wake-up.
fn task(shard: Arc<Shard>, ticks: usize, done: Arc<AtomicBool>) -> Vec<u64> {
    let mut handle = Handle {
        shard: shard.clone(),
        waker: Some(0),
        next: PERIOD,
    };
    let mut taken = Vec::new();
    let mut cx = 0;
    while taken.len() < ticks {
        // A wake after this counts for the wait below.
        let seen = shard.wakes[cx].load(Ordering::Acquire);
        match handle.poll(cx) {
            Polled::Tick(tick) => {
                taken.push(tick);
                if taken.len() == 2 {
                    cx = 1;
                }
                continue;
            }
            Polled::Stopped => break,
            Polled::Pending => {}
        }
        loop {
            if shard.wakes[cx].load(Ordering::Acquire) != seen {
                break;
            }
            if done.load(Ordering::Acquire) {
                // Nothing more will happen (a wake that came before `done`
                // was set counts): a tick that waits, or a stop, had to
                // wake this task.
                if shard.wakes[cx].load(Ordering::Acquire) != seen {
                    break;
                }
                let word = shard.word.load(Ordering::Acquire);
                assert!(
                    word & UNTAKEN == 0 && !shard.stopped.load(Ordering::Acquire),
                    "lost wake-up: the task waits with a tick due or the timer stopped \
                     (word {word:#x}, taken {taken:?})"
                );
                let state = shard.lock.lock().unwrap().state;
                assert_eq!(
                    state,
                    St::Pending,
                    "tick lost: the task waits, no tick is due and the entry is out \
                     of the wheel (taken {taken:?})"
                );
                return taken;
            }
            thread::yield_now();
        }
    }
    taken
}

/// The driver turns to `END` (and stops the timer at `stop_at`, if given)
/// while the task takes three ticks.
fn beats(broken: Broken, stop_at: Option<u64>) {
    let shard = Shard::new(broken);
    let done = Arc::new(AtomicBool::new(false));
    let driver = {
        let (shard, done) = (shard.clone(), done.clone());
        thread::spawn(move || {
            for now in 1..=END {
                if stop_at == Some(now) {
                    shard.stop();
                }
                shard.turn(now);
            }
            done.store(true, Ordering::Release);
        })
    };
    let taken = task(shard.clone(), 3, done.clone());
    driver.join().unwrap();
    let want: Vec<u64> = (1..=taken.len() as u64).map(|i| i * PERIOD).collect();
    assert_eq!(taken, want, "ticks taken out of order or twice");
}

/// A stop from a thread of its own, racing the driver's put-back.
fn stop_races_put_back(broken: Broken) {
    let shard = Shard::new(broken);
    let done = Arc::new(AtomicBool::new(false));
    let driver = {
        let shard = shard.clone();
        thread::spawn(move || {
            for now in 1..=END {
                shard.turn(now);
            }
        })
    };
    let stopper = {
        let shard = shard.clone();
        thread::spawn(move || shard.stop())
    };
    let watcher = {
        let done = done.clone();
        thread::spawn(move || {
            driver.join().unwrap();
            stopper.join().unwrap();
            done.store(true, Ordering::Release);
        })
    };
    let taken = task(shard.clone(), 3, done);
    watcher.join().unwrap();
    let want: Vec<u64> = (1..=taken.len() as u64).map(|i| i * PERIOD).collect();
    assert_eq!(taken, want, "ticks taken out of order or twice");
}

/// Runs `scenario` under random schedules and under PCT.
fn explore(scenario: impl Fn() + Send + Sync + 'static) {
    harness::check(ITERATIONS, scenario);
}

#[test]
fn every_tick_is_taken_once_in_order_and_wakes_its_task() {
    explore(|| beats(Broken::default(), None));
}

#[test]
fn a_stop_between_turns_wakes_the_waiting_task() {
    explore(|| beats(Broken::default(), Some(5)));
}

#[test]
fn a_stop_racing_the_put_back_wakes_the_waiting_task() {
    explore(|| stop_races_put_back(Broken::default()));
}

/// The model is not vacuous: a driver that drops the waker after waking
/// it leaves the entry without one, and the next tick wakes nobody.
#[test]
#[should_panic(expected = "lost wake-up")]
fn broken_driver_without_the_put_back_is_caught() {
    explore(|| {
        beats(
            Broken {
                no_put_back: true,
                ..Broken::default()
            },
            None,
        )
    });
}

/// ...a put-back that drops the waker of an entry a stop drained leaves the
/// task waiting on a stopped timer...
#[test]
#[should_panic(expected = "lost wake-up")]
fn broken_put_back_ignoring_the_stop_is_caught() {
    explore(|| {
        stop_races_put_back(Broken {
            put_back_ignores_stop: true,
            ..Broken::default()
        })
    });
}

/// ...and a task that stores its new waker without looking at the word
/// again misses a tick the driver fired meanwhile (it woke the old waker).
#[test]
#[should_panic(expected = "lost wake-up")]
fn broken_registration_without_the_recheck_is_caught() {
    explore(|| {
        beats(
            Broken {
                no_recheck: true,
                ..Broken::default()
            },
            None,
        )
    });
}

/// ...and a driver that stalls the entry without the compare-and-swap (it
/// unlinks it, then marks it stalled whatever the task did) loses the next
/// tick when the task takes the waiting one in between: the task's
/// compare-and-swap succeeds on an entry no longer in the wheel.
#[test]
#[should_panic(expected = "tick lost")]
fn broken_stall_without_the_compare_and_swap_is_caught() {
    explore(|| {
        beats(
            Broken {
                stall_without_cas: true,
                ..Broken::default()
            },
            None,
        )
    });
}
