//! A schedule-exploring model of the thread driver's sleep and wake-up
//! protocol (`src/engine/driver/thread.rs`, `src/engine/alarm/thread.rs`,
//! `Common::note_deadline`), run with shuttle:
//!
//! ```text
//! RUSTFLAGS="--cfg shuttle" cargo test --test shuttle_thread --target-dir target/shuttle
//! ```
//!
//! As `tests/shuttle_timer.rs` does for the tokio driver, the protocol is
//! written out again, step for step and in the real code's order (each
//! function names the one it mirrors), with shuttle threads, locks,
//! condition variables and atomics. The wheel is a list of deadlines under
//! a lock; time is a tick counter that a clock thread moves on, waking the
//! sleeper as the kernel does when a timerfd's time comes (the Condvar
//! sleeper of other platforms is the same protocol).
//!
//! Explored: inserts from two threads, some already due, some earlier than
//! what the driver sleeps for, against the driver's turns, its re-arm after
//! a turn, its re-check of `planned` once idle, and its sleep. Checked in
//! every schedule:
//!
//! - never early: nothing fires before its deadline;
//! - exactly once: every deadline fires once;
//! - no lost wake-up: once the inserts are done and the clock has passed
//!   every deadline, the driver fires them all. A lost wake-up leaves the
//!   driver asleep and the checker waiting for it: every thread blocked,
//!   which shuttle reports as a deadlock.
//!
//! The timerfd is modelled apart from the sleeper's state: when it rings
//! next, and whether it rings on every tick (the driver's periodic re-arm
//! while every tick has work, `Sleeper::rearm`), as the kernel keeps them;
//! the sleeper's `periodic` is what the code believes of it.
//!
//! Deliberately broken variants, each caught: a driver that skips its
//! re-check of `planned` after going idle, a sleeper that decides how
//! long to sleep from the armed time read before it takes the lock to wait
//! (the classic lost wake-up: an arm in between is missed), and an insert's
//! arm that leaves `periodic` set (the driver then trusts a periodic ring
//! that the insert's single one replaced).
#![cfg(shuttle)]

mod common;

use common::shuttle as harness;
use shuttle::sync::atomic::{AtomicU64, AtomicU8, Ordering::SeqCst};
use shuttle::sync::{Arc, Condvar, Mutex};
use shuttle::thread;

/// The last tick the clock thread reaches; every deadline is at or before.
const END: u64 = 5;
/// `NEVER`/`u64::MAX`: disarmed.
const MAX: u64 = u64::MAX;
/// `shard::IDLE`, `shard::TURNING`.
const IDLE: u8 = 0;
const TURNING: u8 = 1;
/// The tick, in model ticks: the driver turns at most once per tick.
const TICK: u64 = 1;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Correct,
    /// The driver does not look at `planned` again after going idle.
    NoRecheck,
    /// The sleeper reads the armed time, lets the lock go, and waits on
    /// the stale value.
    StaleSleep,
    /// `Sleeper::arm` sets a single ring but leaves `periodic` set.
    PeriodicKept,
}

/// `sleeper::State`.
struct SleepState {
    armed: u64,
    shut: bool,
    /// `sleeper::State::periodic`: the alarm rings on every tick.
    periodic: bool,
    /// The timerfd as the kernel keeps it: its next ring (`MAX`: disarmed)
    /// and whether it rings again a tick after each.
    fd_at: u64,
    fd_periodic: bool,
    /// The model's clock (the kernel's, for a timerfd).
    now: u64,
}

/// `Common` and `Sleeper`, with the wheel.
struct Model {
    variant: Variant,
    planned: AtomicU64,
    turn_state: AtomicU8,
    sleep: Mutex<SleepState>,
    cond: Condvar,
    /// Pending deadlines (the wheel).
    wheel: Mutex<Vec<u64>>,
    /// Fired deadlines, with the clock when they fired; and the checker's
    /// signal.
    fired: Mutex<Vec<(u64, u64)>>,
    fired_cond: Condvar,
}

impl Model {
    fn now(&self) -> u64 {
        self.sleep.lock().unwrap().now
    }

    /// `Sleeper::arm`: an insert's, for an earlier tick only.
    fn arm(&self, tick: u64) {
        let mut state = self.sleep.lock().unwrap();
        if state.shut || tick >= state.armed {
            return;
        }
        state.armed = tick;
        if self.variant != Variant::PeriodicKept {
            state.periodic = false;
        }
        // The timerfd is set under the lock; a sleeping reader sees it.
        state.fd_at = tick;
        state.fd_periodic = false;
        self.cond.notify_all();
    }

    /// `Sleeper::rearm`: the driver's re-arm after a turn; `grid` when
    /// `tick` is the next tick of its grid.
    fn rearm(&self, tick: u64, grid: bool) {
        let mut state = self.sleep.lock().unwrap();
        if state.shut {
            return;
        }
        state.armed = tick;
        match (grid, state.periodic) {
            // Rings on every tick already: no syscall.
            (true, true) => return,
            (true, false) => {
                state.periodic = true;
                state.fd_at = tick;
                state.fd_periodic = true;
            }
            // Nothing pending, and a single ring rang (or an insert's
            // rings once, for nothing).
            (false, false) if tick == MAX => return,
            (false, _) => {
                state.periodic = false;
                state.fd_at = tick;
                state.fd_periodic = false;
            }
        }
        self.cond.notify_all();
    }

    /// `Sleeper::take_armed`.
    fn take_armed(&self) -> u64 {
        std::mem::replace(&mut self.sleep.lock().unwrap().armed, MAX)
    }

    /// `Sleeper::wait`: true once due, false once shut. The read of the
    /// timerfd returns once its time has come, and takes the ring: a
    /// single one is gone, a periodic one rings next on the next tick.
    fn wait(&self) -> bool {
        let stale = if self.variant == Variant::StaleSleep {
            let at = self.sleep.lock().unwrap().fd_at;
            thread::yield_now();
            Some(at)
        } else {
            None
        };
        let mut state = self.sleep.lock().unwrap();
        loop {
            if state.shut {
                return false;
            }
            let at = stale.unwrap_or(state.fd_at);
            if at != MAX && state.now >= at {
                if state.now >= state.fd_at {
                    state.fd_at = if state.fd_periodic {
                        state.now + TICK
                    } else {
                        MAX
                    };
                }
                return true;
            }
            state = self.cond.wait(state).unwrap();
        }
    }

    /// `Common::note_deadline`, after the insert released the shard lock.
    fn note_deadline(&self, tick: u64) {
        if tick < self.planned.load(SeqCst)
            && self.planned.fetch_min(tick, SeqCst) > tick
            && self.turn_state.load(SeqCst) == IDLE
        {
            self.arm(tick);
        }
    }

    /// `thread_driver::turn_once`: returns (target, soonest).
    fn turn_once(&self) -> (u64, u64) {
        let now = self.now();
        self.take_armed();
        self.planned.store(MAX, SeqCst);
        // `turn::turn`: expire what is due, wake outside the lock.
        let (due, next) = {
            let mut wheel = self.wheel.lock().unwrap();
            let due: Vec<u64> = wheel.iter().copied().filter(|&d| d <= now).collect();
            wheel.retain(|&d| d > now);
            (due, wheel.iter().copied().min().unwrap_or(MAX))
        };
        if !due.is_empty() {
            let mut fired = self.fired.lock().unwrap();
            for d in due {
                assert!(now >= d, "fired early: deadline {d} at {now}");
                fired.push((d, now));
            }
            self.fired_cond.notify_all();
        }
        let target = self.planned.fetch_min(next, SeqCst).min(next);
        let soonest = now + TICK;
        let alarm = if target < MAX {
            target.max(soonest)
        } else {
            MAX
        };
        self.rearm(alarm, alarm == soonest);
        (target, soonest)
    }

    /// `thread_driver::run`.
    fn run(&self) {
        while self.wait() {
            self.turn_state.store(TURNING, SeqCst);
            let (target, soonest) = self.turn_once();
            self.turn_state.store(IDLE, SeqCst);
            if self.variant != Variant::NoRecheck {
                let planned = self.planned.load(SeqCst);
                if planned < target {
                    self.arm(planned.max(soonest));
                }
            }
        }
    }

    /// An insert (`Timeout::poll` registering): into the wheel under its
    /// lock, then `note_deadline`.
    fn insert(&self, deadline: u64) {
        self.wheel.lock().unwrap().push(deadline);
        self.note_deadline(deadline);
    }

    /// The clock moves on: a timerfd whose time came becomes readable.
    fn advance(&self) {
        let mut state = self.sleep.lock().unwrap();
        state.now += 1;
        self.cond.notify_all();
    }
}

fn scenario(variant: Variant) {
    let model = Arc::new(Model {
        variant,
        planned: AtomicU64::new(MAX),
        turn_state: AtomicU8::new(IDLE),
        sleep: Mutex::new(SleepState {
            armed: MAX,
            shut: false,
            periodic: false,
            fd_at: MAX,
            fd_periodic: false,
            now: 0,
        }),
        cond: Condvar::new(),
        wheel: Mutex::new(Vec::new()),
        fired: Mutex::new(Vec::new()),
        fired_cond: Condvar::new(),
    });
    let driver = {
        let model = model.clone();
        thread::spawn(move || model.run())
    };
    // Inserts relative to the clock when they run: due now (or past), one
    // tick out, a few out, and a far one first so that later ones are
    // earlier than what the driver sleeps for.
    let inserters: Vec<_> = [[4u64, 1, 0], [2, 0, 3]]
        .into_iter()
        .map(|offsets| {
            let model = model.clone();
            thread::spawn(move || {
                let mut inserted = Vec::new();
                for offset in offsets {
                    let deadline = (model.now() + offset).min(END);
                    model.insert(deadline);
                    inserted.push(deadline);
                }
                inserted
            })
        })
        .collect();
    let clock = {
        let model = model.clone();
        thread::spawn(move || {
            for _ in 0..END {
                model.advance();
            }
        })
    };
    let mut all: Vec<u64> = inserters
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    clock.join().unwrap();
    // Time goes on past the last deadline (the driver may defer a turn by
    // a tick).
    model.advance();
    model.advance();
    // Every deadline fires; a lost wake-up blocks here for ever, with the
    // driver asleep too: shuttle reports the deadlock.
    {
        let mut fired = model.fired.lock().unwrap();
        while fired.len() < all.len() {
            fired = model.fired_cond.wait(fired).unwrap();
        }
        let mut got: Vec<u64> = fired.iter().map(|&(d, _)| d).collect();
        got.sort_unstable();
        all.sort_unstable();
        assert_eq!(got, all, "every deadline fires exactly once");
        for &(deadline, at) in fired.iter() {
            assert!(at >= deadline, "early");
        }
    }
    {
        let mut state = model.sleep.lock().unwrap();
        state.shut = true;
        model.cond.notify_all();
    }
    driver.join().unwrap();
}

const ITERATIONS: usize = 3_000;
/// The schedulers' seed (`HASHWHEEL_SHUTTLE_SEED` picks others).
const SEED: u64 = 0x22;

#[test]
fn the_thread_drivers_sleep_loses_no_wake_up() {
    harness::variant_holds(scenario, Variant::Correct, SEED, ITERATIONS);
}

#[test]
fn a_driver_without_its_recheck_of_planned_is_caught() {
    harness::variant_caught(scenario, Variant::NoRecheck, SEED, ITERATIONS);
}

#[test]
fn a_sleep_on_a_stale_armed_time_is_caught() {
    harness::variant_caught(scenario, Variant::StaleSleep, SEED, ITERATIONS);
}

#[test]
fn an_arm_that_leaves_the_alarm_periodic_is_caught() {
    harness::variant_caught(scenario, Variant::PeriodicKept, SEED, ITERATIONS);
}
