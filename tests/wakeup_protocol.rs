//! An exhaustive model check of how an insert wakes the driver:
//! `Common::note_deadline` (src/timer.rs) racing the driver's turn and
//! re-arm (src/driver.rs).
//!
//! The protocol's steps are written out as small state machines (the
//! driver, and inserters) and every interleaving of their atomic steps is
//! explored. Each must end with the driver either holding a wake-up permit
//! (tokio's `Notify` keeps one when the driver is not waiting) or planning
//! to wake no later than the earliest entry; otherwise an insert was lost
//! and its timeout would fire late. The shard's mutex makes "push under the
//! lock" and "read the earliest under the lock" single steps; the atomics
//! are explored in sequentially consistent order. (A `loom` model was tried:
//! loom 0.7.3 reported executions impossible under its own rules for a
//! three-line store/swap/join check on this toolchain, so it could not be
//! trusted here.)

/// The shared state: `Common::planned`, the `Notify` permit and one shard.
#[derive(Clone, Debug)]
struct Shared {
    planned: u64,
    permit: bool,
    wheel: Vec<u64>,
}

impl Shared {
    fn earliest(&self) -> u64 {
        self.wheel.iter().copied().min().unwrap_or(u64::MAX)
    }
}

/// The driver: one turn, then one wake-up by a permit (re-arm).
#[derive(Clone, Debug)]
struct Driver {
    pc: u8,
    next: u64,
    target: u64,
    /// Overwrite `planned` with the turn's result instead of lowering it:
    /// a deliberately broken driver, which must be caught.
    broken: bool,
}

impl Driver {
    fn done(&self) -> bool {
        self.pc == 4
    }

    fn step(&mut self, s: &mut Shared) {
        match self.pc {
            // planned.store(u64::MAX)
            0 => s.planned = u64::MAX,
            // lock the shard; next = its earliest entry; unlock
            1 => self.next = s.earliest(),
            // target = planned.fetch_min(next).min(next)
            2 => {
                if self.broken {
                    s.planned = self.next;
                    self.target = self.next;
                } else {
                    let prev = s.planned;
                    s.planned = prev.min(self.next);
                    self.target = prev.min(self.next);
                }
            }
            // Woken by a permit, the clock short of `planned`: only move
            // the alarm to `planned`.
            3 => {
                if std::mem::take(&mut s.permit) {
                    self.target = s.planned;
                }
            }
            _ => unreachable!(),
        }
        self.pc += 1;
    }
}

/// An insert: `Timeout::poll` pushing under the lock, then `note_deadline`.
#[derive(Clone, Debug)]
struct Inserter {
    tick: u64,
    pc: u8,
    below: bool,
}

impl Inserter {
    fn done(&self) -> bool {
        self.pc == 3
    }

    fn step(&mut self, s: &mut Shared) {
        match self.pc {
            // lock the shard; push; unlock
            0 => s.wheel.push(self.tick),
            // tick < planned.load()
            1 => self.below = self.tick < s.planned,
            // planned.fetch_min(tick) > tick => notify_one()
            2 => {
                if self.below {
                    let prev = s.planned;
                    s.planned = prev.min(self.tick);
                    if prev > self.tick {
                        s.permit = true;
                    }
                }
            }
            _ => unreachable!(),
        }
        self.pc += 1;
    }
}

/// Explores every interleaving; returns the first that loses a wake-up.
fn explore(
    shared: Shared,
    driver: Driver,
    inserters: Vec<Inserter>,
    trace: &mut Vec<usize>,
    explored: &mut usize,
) -> Option<String> {
    if driver.done() && inserters.iter().all(Inserter::done) {
        *explored += 1;
        let earliest = shared.earliest();
        if !shared.permit && earliest < driver.target {
            return Some(format!(
                "lost wake-up: the driver sleeps until {} with an entry at {earliest}; \
                 steps (0 = driver, n = inserter n): {trace:?}",
                driver.target
            ));
        }
        return None;
    }
    if !driver.done() {
        let (mut s, mut d) = (shared.clone(), driver.clone());
        d.step(&mut s);
        trace.push(0);
        let found = explore(s, d, inserters.clone(), trace, explored);
        trace.pop();
        if found.is_some() {
            return found;
        }
    }
    for i in 0..inserters.len() {
        if inserters[i].done() {
            continue;
        }
        let (mut s, mut ins) = (shared.clone(), inserters.clone());
        ins[i].step(&mut s);
        trace.push(i + 1);
        let found = explore(s, driver.clone(), ins, trace, explored);
        trace.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

fn check(initial: &[u64], ticks: &[u64], broken: bool) -> (Option<String>, usize) {
    let shared = Shared {
        planned: u64::MAX,
        permit: false,
        wheel: initial.to_vec(),
    };
    let driver = Driver {
        pc: 0,
        next: 0,
        target: 0,
        broken,
    };
    let inserters = ticks
        .iter()
        .map(|&tick| Inserter {
            tick,
            pc: 0,
            below: false,
        })
        .collect();
    let mut explored = 0;
    let found = explore(shared, driver, inserters, &mut Vec::new(), &mut explored);
    (found, explored)
}

#[test]
fn two_inserts_racing_a_turn_are_never_lost() {
    for ticks in [[5, 3], [3, 5], [4, 4]] {
        let (found, explored) = check(&[], &ticks, false);
        assert_eq!(found, None);
        // 4 driver steps and 3 per inserter: 10! / (4! 3! 3!) orders.
        assert_eq!(explored, 4200);
    }
}

#[test]
fn inserts_before_and_after_an_existing_entry_are_never_lost() {
    for ticks in [[2, 9], [9, 2], [7, 7]] {
        let (found, _) = check(&[7], &ticks, false);
        assert_eq!(found, None, "entries {ticks:?} next to one at 7");
    }
}

#[test]
fn three_inserts_racing_a_turn_are_never_lost() {
    let (found, explored) = check(&[], &[6, 2, 4], false);
    assert_eq!(found, None);
    // 13! / (4! 3! 3! 3!) orders.
    assert_eq!(explored, 1_201_200);
}

#[test]
fn the_check_catches_a_driver_that_overwrites_its_plan() {
    let (found, _) = check(&[], &[5, 3], true);
    let found = found.expect("a broken driver must lose a wake-up");
    assert!(found.starts_with("lost wake-up"), "{found}");
}
