//! The alarms' timing on a simulated clock: random inserts, each alarm's
//! own arithmetic (`runtime::alarm_tick`, `alarm::after_turn`), and
//! the runtime's timer as tokio 1.54 rings it (whole milliseconds since
//! its own start, each instant rounded up), that start at every offset
//! within our timer's millisecond. Every deadline fires no earlier than
//! itself and at most a tick after it (for the runtime, its whole
//! milliseconds: see `runtime::grid_us`), and a runtime-driven timer
//! turns at most once per turn of its grid. `tests/paused_time.rs` checks
//! the runtime's on tokio's paused clock; the thread's clock is std's,
//! which nothing pauses.

use std::collections::BTreeMap;

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    Runtime,
    #[cfg_attr(not(feature = "thread"), allow(dead_code))]
    Thread,
}

/// The alarm of a driver of `kind`, its state as the alarm keeps it.
struct Sim {
    kind: Kind,
    tick_us: u64,
    /// Where the runtime's milliseconds start, in nanoseconds before
    /// the timer's start (0 to 999,999).
    offset_ns: u64,
    /// The tick the alarm is armed for, as each alarm keeps it.
    armed: u64,
    /// When it rings, in nanoseconds since the timer's start.
    ring: Option<u64>,
    /// The last turn's clock reading, in microseconds.
    turned: u64,
    /// The last turn's instant, in nanoseconds.
    last_turn: Option<u64>,
    turns: u64,
}

impl Sim {
    /// The alarm of a driver of `kind`, disarmed, never turned.
    fn new(kind: Kind, tick_us: u64, offset_ns: u64) -> Sim {
        Sim {
            kind,
            tick_us,
            offset_ns,
            armed: u64::MAX,
            ring: None,
            turned: 0,
            last_turn: None,
            turns: 0,
        }
    }

    /// How late work may fire, in nanoseconds, and how far apart a
    /// runtime-driven timer's turns are at least: the runtime's grid
    /// (the tick's whole milliseconds), or the thread's tick.
    fn grid_ns(&self) -> u64 {
        match self.kind {
            #[cfg(feature = "tokio")]
            Kind::Runtime => crate::engine::alarm::runtime::grid_us(self.tick_us) * 1_000,
            _ => self.tick_us * 1_000,
        }
    }

    /// The runtime's timer: `ns` rounded up to its next millisecond.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    fn runtime_rings(&self, ns: u64) -> u64 {
        (ns + self.offset_ns).div_ceil(1_000_000) * 1_000_000 - self.offset_ns
    }

    /// An insert at `now_ns` of work due at `tick` (see `Alarm::arm`).
    fn insert(&mut self, now_ns: u64, tick: u64) {
        if tick >= self.armed {
            return;
        }
        self.armed = tick;
        self.ring = Some(match self.kind {
            #[cfg(feature = "tokio")]
            Kind::Runtime => {
                let at = crate::engine::alarm::runtime::alarm_tick(self.tick_us, tick, self.turned) * 1_000;
                if at <= now_ns {
                    now_ns // due: a turn at once
                } else {
                    self.runtime_rings(at)
                }
            }
            #[cfg(feature = "thread")]
            Kind::Thread => (tick * 1_000).max(now_ns),
            #[allow(unreachable_patterns)]
            _ => unreachable!(),
        });
    }

    /// The driver's turn at `now_ns`: fires what is due, checks how
    /// late, and re-arms (see `Alarm::rearm`).
    fn turn(&mut self, now_ns: u64, pending: &mut BTreeMap<u64, u32>) {
        let now = now_ns / 1_000;
        if let (Kind::Runtime, Some(last)) = (self.kind, self.last_turn) {
            let grid = self.grid_ns();
            assert!(
                grid <= 1_000_000 || now_ns - last >= grid,
                "tick {} µs, offset {} ns: turns {last} and {now_ns} ns closer than the grid",
                self.tick_us,
                self.offset_ns
            );
        }
        self.turns += 1;
        self.last_turn = Some(now_ns);
        while let Some((&due, _)) = pending.first_key_value() {
            if due > now {
                break;
            }
            pending.pop_first();
            let late = now_ns - due * 1_000;
            assert!(
                late < self.grid_ns(),
                "{:?}, tick {} µs, offset {} ns: due at {due} µs, fired {late} ns late",
                self.kind,
                self.tick_us,
                self.offset_ns
            );
        }
        let target = pending.first_key_value().map_or(u64::MAX, |(&t, _)| t);
        self.turned = now;
        match self.kind {
            #[cfg(feature = "tokio")]
            Kind::Runtime => {
                self.armed = target;
                self.ring = (target != u64::MAX).then(|| {
                    let at = crate::engine::alarm::runtime::alarm_tick(self.tick_us, target, now) * 1_000;
                    self.runtime_rings(at).max(now_ns)
                });
            }
            #[cfg(feature = "thread")]
            Kind::Thread => {
                let (alarm, _) = crate::engine::alarm::thread::after_turn(self.tick_us, now, target);
                self.armed = alarm;
                self.ring = (alarm != u64::MAX).then(|| (alarm * 1_000).max(now_ns));
            }
            #[allow(unreachable_patterns)]
            _ => unreachable!(),
        }
    }
}

/// One run: inserts at random instants (bursts, and quiet stretches)
/// of work due from a microsecond to 20 ms later, until all fired.
/// Returns the turns.
fn run(kind: Kind, tick_us: u64, offset_ns: u64, seed: u64) -> u64 {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut sim = Sim::new(kind, tick_us, offset_ns);
    let mut pending = BTreeMap::new();
    let mut now_ns = 0;
    for _ in 0..300 {
        let next = now_ns
            + match rng.below(4) {
                0 => 0,
                1 => rng.below(1_000),
                2 => rng.below(400_000),
                _ => rng.below(3_000_000),
            };
        // The rings before the next insert.
        while let Some(ring) = sim.ring.filter(|&r| r <= next) {
            sim.turn(ring, &mut pending);
        }
        now_ns = next;
        let delay = match rng.below(3) {
            0 => 1 + rng.below(1_000),
            1 => 1 + rng.below(5_000),
            _ => 1 + rng.below(20_000),
        };
        let tick = now_ns / 1_000 + delay;
        *pending.entry(tick).or_insert(0) += 1;
        sim.insert(now_ns, tick);
    }
    while let Some(ring) = sim.ring {
        sim.turn(ring, &mut pending);
    }
    assert!(
        pending.is_empty(),
        "{kind:?}: work left with the alarm disarmed"
    );
    sim.turns
}

/// Offsets of the runtime's milliseconds: every 50 µs, and off the
/// microsecond.
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
fn offsets() -> Vec<u64> {
    let mut offsets: Vec<u64> = (0..1_000_000).step_by(50_000).collect();
    offsets.extend([1_000, 999_000, 333, 999_999, 500_001]);
    offsets
}

#[cfg(feature = "tokio")]
#[test]
fn the_runtime_alarm_is_never_early_nor_a_tick_late_from_any_offset() {
    for tick_us in [1_000, 1_500, 2_000, 2_500, 5_000, 10_000] {
        for offset_ns in offsets() {
            for seed in 0..8 {
                run(Kind::Runtime, tick_us, offset_ns, seed);
            }
        }
    }
}

/// With work due every 250 µs, a coarser tick turns once per turn of
/// its grid, wherever the runtime's milliseconds start.
#[cfg(feature = "tokio")]
#[test]
fn the_runtime_alarm_turns_once_per_grid_under_dense_work() {
    for tick_us in [1_500, 2_000, 2_500, 5_000] {
        let grid = crate::engine::alarm::runtime::grid_us(tick_us);
        for offset_ns in offsets() {
            let mut sim = Sim::new(Kind::Runtime, tick_us, offset_ns);
            let mut pending: BTreeMap<u64, u32> = (1..=400).map(|i| (i * 250, 1)).collect();
            sim.insert(0, 250);
            while let Some(ring) = sim.ring {
                sim.turn(ring, &mut pending);
            }
            let expected = 100_000 / grid;
            assert!(
                sim.turns <= expected + 1,
                "tick {tick_us} µs, offset {offset_ns} ns: {} turns, {expected} expected",
                sim.turns
            );
        }
    }
}

#[cfg(feature = "thread")]
#[test]
fn the_thread_alarm_is_never_early_nor_a_tick_late() {
    for tick_us in [10, 50, 1_000, 1_500, 2_000, 2_500, 5_000] {
        for seed in 0..40 {
            run(Kind::Thread, tick_us, 0, seed);
        }
    }
}
