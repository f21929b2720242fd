//! An exhaustive model check of how an insert arms the driver's alarm:
//! `Common::note_deadline` (src/engine/shard.rs) and `Alarm::arm` (src/engine/alarm/) racing the
//! driver's turn and re-arm (src/engine/driver/runtime.rs), and the turn passing a shard
//! without its lock where the shard's hint says its wheel is empty
//! (`Common::shard_busy`, `Shard::linked`).
//!
//! The protocol's steps are written out as small state machines (the
//! driver, and inserters) and every interleaving of their atomic steps is
//! explored. Each must end with the alarm armed no later than the earliest
//! entry; otherwise an insert was lost and its timeout would fire late. The
//! shard's mutex makes "push under the lock" and "read the earliest under
//! the lock" single steps, and the alarm's mutex makes an arm one step; the
//! atomics are explored in sequentially consistent order. (A `loom` model
//! was tried for the earlier protocol: loom 0.7.3 reported executions
//! impossible under its own rules for a three-line store/swap/join check on
//! this toolchain, so it could not be trusted here.)

/// The shared state: `Common::planned`, `Common::turn_state` (turning or
/// idle), the alarm's armed tick, and one shard with its hint
/// (`Common::busy`).
#[derive(Clone, Debug)]
struct Shared {
    planned: u64,
    turning: bool,
    alarm: u64,
    wheel: Vec<u64>,
    busy: bool,
}

impl Shared {
    fn earliest(&self) -> u64 {
        self.wheel.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// `Common::arm(tick, false)`: only ever earlier.
    fn arm_earlier(&mut self, tick: u64) {
        self.alarm = self.alarm.min(tick);
    }
}

/// The driver: one turn (it won the turn, so `turning` is set), its re-arm,
/// going idle, and the re-check of `planned`.
#[derive(Clone, Debug)]
struct Driver {
    pc: u8,
    busy: bool,
    next: u64,
    target: u64,
    broken: Broken,
}

/// Which deliberate bug the driver runs with.
#[derive(Clone, Copy, Debug, Default)]
struct Broken {
    /// Skip the re-check after going idle.
    no_recheck: bool,
    /// Read the shard's hint before setting `planned`, not after.
    hint_first: bool,
}

impl Driver {
    fn done(&self) -> bool {
        self.pc == 7
    }

    fn step(&mut self, s: &mut Shared) {
        let pc = match (self.broken.hint_first, self.pc) {
            (true, 0) => 1,
            (true, 1) => 0,
            (_, pc) => pc,
        };
        match pc {
            // planned.store(u64::MAX)
            0 => s.planned = u64::MAX,
            // busy.load(): the shard's hint
            1 => self.busy = s.busy,
            // a busy shard: lock it; expire; next = its earliest entry;
            // an empty wheel clears the hint; unlock. An idle one is
            // passed without its lock.
            2 => {
                self.next = if self.busy { s.earliest() } else { u64::MAX };
                if self.busy && s.wheel.is_empty() {
                    s.busy = false;
                }
            }
            // target = planned.fetch_min(next).min(next)
            3 => {
                let prev = s.planned;
                s.planned = prev.min(self.next);
                self.target = prev.min(self.next);
            }
            // arm(target, force)
            4 => s.alarm = self.target,
            // turn_state: TURNING -> IDLE
            5 => s.turning = false,
            // if planned.load() < target: arm(planned, false)
            6 => {
                if !self.broken.no_recheck && s.planned < self.target {
                    let planned = s.planned;
                    s.arm_earlier(planned);
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
    lowered: bool,
    idle: bool,
}

impl Inserter {
    fn done(&self) -> bool {
        self.pc == 4
    }

    fn step(&mut self, s: &mut Shared) {
        match self.pc {
            // lock the shard; push; mark it busy (`Shard::linked`); unlock
            0 => {
                s.wheel.push(self.tick);
                s.busy = true;
            }
            // planned.fetch_min(tick) > tick (the `load` before it only
            // filters out the common case)
            1 => {
                let prev = s.planned;
                s.planned = prev.min(self.tick);
                self.lowered = prev > self.tick;
            }
            // turn_state.load() == IDLE
            2 => self.idle = !s.turning,
            // arm(tick, false)
            3 => {
                if self.lowered && self.idle {
                    s.arm_earlier(self.tick);
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
        if earliest < shared.alarm {
            return Some(format!(
                "lost wake-up: the alarm is armed for {} with an entry at {earliest}; \
                 steps (0 = driver, n = inserter n): {trace:?}",
                shared.alarm
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

fn check(initial: &[u64], armed: u64, ticks: &[u64], broken: Broken) -> (Option<String>, usize) {
    let shared = Shared {
        planned: armed,
        turning: true,
        alarm: armed,
        wheel: initial.to_vec(),
        busy: !initial.is_empty(),
    };
    let driver = Driver {
        pc: 0,
        busy: false,
        next: 0,
        target: 0,
        broken,
    };
    let inserters = ticks
        .iter()
        .map(|&tick| Inserter {
            tick,
            pc: 0,
            lowered: false,
            idle: false,
        })
        .collect();
    let mut explored = 0;
    let found = explore(shared, driver, inserters, &mut Vec::new(), &mut explored);
    (found, explored)
}

#[test]
fn two_inserts_racing_a_turn_are_never_lost() {
    for ticks in [[5, 3], [3, 5], [4, 4]] {
        let (found, explored) = check(&[], u64::MAX, &ticks, Broken::default());
        assert_eq!(found, None);
        // 7 driver steps and 4 per inserter: 15! / (7! 4! 4!) orders.
        assert_eq!(explored, 450_450);
    }
}

#[test]
fn inserts_before_and_after_an_existing_entry_are_never_lost() {
    for ticks in [[2, 9], [9, 2], [7, 7]] {
        for armed in [1, 7, u64::MAX] {
            let (found, _) = check(&[7], armed, &ticks, Broken::default());
            assert_eq!(found, None, "entries {ticks:?} next to one at 7");
        }
    }
}

#[test]
fn one_insert_racing_a_turn_over_entries_is_never_lost() {
    for tick in [1, 4, 8, 20] {
        let (found, explored) = check(&[4, 8], u64::MAX, &[tick], Broken::default());
        assert_eq!(found, None);
        // 11! / (7! 4!) orders.
        assert_eq!(explored, 330);
    }
}

#[test]
fn the_check_catches_a_driver_that_skips_its_re_check() {
    let broken = Broken {
        no_recheck: true,
        ..Broken::default()
    };
    let (found, _) = check(&[], u64::MAX, &[5, 3], broken);
    let found = found.expect("a broken driver must lose a wake-up");
    assert!(found.starts_with("lost wake-up"), "{found}");
}

/// The shard's hint must be read after `planned` is set: read before, an
/// insert that marks the shard busy just after the read, and lowers
/// `planned` just before the store, is lost to both.
#[test]
fn the_check_catches_a_driver_that_reads_the_hint_first() {
    let broken = Broken {
        hint_first: true,
        ..Broken::default()
    };
    let (found, _) = check(&[], u64::MAX, &[5], broken);
    let found = found.expect("a broken driver must lose a wake-up");
    assert!(found.starts_with("lost wake-up"), "{found}");
}
