//! A reference model of the public [`Wheel`]: every operation, stale keys
//! and keys of another wheel included, is checked against a `BTreeMap` of
//! entries. Driven by random bytes from the unit test below and from the
//! `cargo fuzz` target (through `hashwheel::fuzzing`).
//!
//! Besides the values and ticks, it checks that [`Wheel::poll`] takes out
//! exactly the entries due (by tick, or at once for a tick already polled),
//! in tick order, each once; that [`Wheel::peek`] names the entry each poll
//! takes out; and that [`Wheel::next_tick`] is never past the earliest
//! entry.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::model::Bytes;
use super::{Key, Wheel, MAX_TICK};

/// A tick, decoded once the wheel's shape is known.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tick {
    /// The last tick polled (0 before any) plus `n`, saturating.
    After(u64),
    /// An absolute tick (possibly polled already, or past [`MAX_TICK`]).
    At(u64),
}

/// One operation. `pick` selects the `pick % n`-th entry (or stale key).
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Insert {
        tick: Tick,
    },
    Remove {
        pick: u16,
    },
    Reset {
        pick: u16,
        tick: Tick,
    },
    SetValue {
        pick: u16,
    },
    /// Remove, reset and read through a stale key: nothing may change.
    Stale {
        pick: u16,
        tick: Tick,
    },
    /// Poll until `None`, checking each entry against the model and `peek`.
    Poll {
        to: Tick,
    },
    /// Poll at [`Wheel::next_tick`], as an event loop does.
    PollNext,
    Compact,
    Shrink,
    Clear,
}

/// The shape of the wheel under test and the operations to run on it.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) buckets: usize,
    pub(crate) ring: usize,
    pub(crate) ops: Vec<Op>,
}

fn tick(b: &mut Bytes<'_>, buckets: u64, ring: u64) -> Tick {
    let span = buckets * ring;
    let near = |n: u64, b: u8| match b % 3 {
        0 => n.saturating_sub(1),
        1 => n,
        _ => n + 1,
    };
    match b.u8() % 9 {
        0 => Tick::After(u64::from(b.u8() % 4)),
        1 => Tick::After(u64::from(b.u8()) % (2 * buckets + 1)),
        2 => Tick::After(u64::from(b.u16()) % (2 * span + 1)),
        3 => {
            let (k, x) = (u64::from(b.u8() % 8), b.u8());
            Tick::After(near(k * buckets, x))
        }
        4 => {
            let (k, x) = (u64::from(b.u8() % 8), b.u8());
            Tick::After(near(k * span, x))
        }
        5 => Tick::After(u64::from(b.u16()) * u64::from(b.u16())),
        6 => Tick::At(b.u64()),
        7 => Tick::At(MAX_TICK - 1 + u64::from(b.u8() % 4)),
        _ => Tick::At(u64::from(b.u8())),
    }
}

impl Case {
    /// Decodes a case from arbitrary bytes: every input is a valid case.
    pub(crate) fn decode(data: &[u8]) -> Case {
        let mut b = Bytes(data);
        let shape = b.u8();
        let buckets = 1usize << (shape % 7);
        let ring = 1usize << ((shape / 7) % 7);
        let (nb, nr) = (buckets as u64, ring as u64);
        let mut ops = Vec::new();
        while !b.0.is_empty() {
            let op = match b.u8() % 16 {
                0..=4 => Op::Insert {
                    tick: tick(&mut b, nb, nr),
                },
                5 => Op::Remove { pick: b.u16() },
                6 | 7 => Op::Reset {
                    pick: b.u16(),
                    tick: tick(&mut b, nb, nr),
                },
                8 => Op::SetValue { pick: b.u16() },
                9 => Op::Stale {
                    pick: b.u16(),
                    tick: tick(&mut b, nb, nr),
                },
                10 | 11 => Op::Poll {
                    to: tick(&mut b, nb, nr),
                },
                12 | 13 => Op::PollNext,
                14 => match b.u8() % 8 {
                    0 => Op::Clear,
                    1..=4 => Op::Compact,
                    _ => Op::PollNext,
                },
                _ => Op::Shrink,
            };
            ops.push(op);
        }
        Case { buckets, ring, ops }
    }

    /// Runs the case; `Err` describes the first disagreement with the model.
    pub(crate) fn run(&self) -> Result<(), String> {
        let mut other = Wheel::new();
        let foreign = other.insert(1, 0);
        let mut m = Model {
            wheel: Wheel::with_shape(self.buckets, self.ring),
            entries: BTreeMap::new(),
            stale: vec![foreign],
            polled: None,
            next_value: 1,
        };
        for (i, op) in self.ops.iter().enumerate() {
            m.step(op)
                .and_then(|()| m.check())
                .map_err(|e| format!("op {i} ({op:?}): {e}"))?;
        }
        Ok(())
    }

    /// Drops operations while the case still fails, for a short report.
    pub(crate) fn shrink(self) -> Case {
        let ops = super::model::shrink_ops(self.ops.clone(), |ops| {
            fails(&Case {
                ops: ops.to_vec(),
                ..self.clone()
            })
        });
        Case { ops, ..self }
    }

    /// The case as a readable reproduction.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!(
            "Wheel::with_shape({}, {}), then:\n",
            self.buckets, self.ring
        );
        for op in &self.ops {
            let _ = writeln!(s, "  {op:?}");
        }
        s
    }
}

/// Runs `case`, counting a panic inside the wheel as a failure too.
pub(crate) fn fails(case: &Case) -> bool {
    !matches!(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case.run())),
        Ok(Ok(()))
    )
}

/// The fuzz entry point: decodes `data`, runs it, and panics with a
/// shrunk reproduction on any disagreement.
#[cfg(fuzzing)]
pub(crate) fn check_bytes(data: &[u8]) {
    let case = Case::decode(data);
    if let Err(e) = case.run() {
        let small = case.shrink();
        panic!(
            "public wheel disagrees with the model: {e}\nminimal case:\n{}",
            small.describe()
        );
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// As [`Wheel::tick`] reports it: `u64::MAX` past [`MAX_TICK`].
    tick: u64,
    value: u64,
}

struct Model {
    wheel: Wheel<u64>,
    entries: BTreeMap<Key, Entry>,
    /// Keys whose entries left, newest last (and one of another wheel).
    stale: Vec<Key>,
    /// The last tick polled through to `None`.
    polled: Option<u64>,
    next_value: u64,
}

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

impl Model {
    fn resolve(&self, tick: Tick) -> u64 {
        match tick {
            Tick::After(n) => self.polled.unwrap_or(0).saturating_add(n),
            Tick::At(t) => t,
        }
    }

    fn value(&mut self) -> u64 {
        self.next_value += 1;
        self.next_value
    }

    fn pick(&self, pick: u16) -> Option<Key> {
        let n = self.entries.len();
        (n > 0).then(|| *self.entries.keys().nth(usize::from(pick) % n).unwrap())
    }

    fn reported(tick: u64) -> u64 {
        if tick > MAX_TICK {
            u64::MAX
        } else {
            tick
        }
    }

    /// Whether `tick` is due at once (at or before the last tick polled).
    fn due_at_once(&self, tick: u64) -> bool {
        self.polled.is_some_and(|p| tick <= p)
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Insert { tick } => {
                let tick = self.resolve(tick);
                let value = self.value();
                let key = self.wheel.insert(tick, value);
                ensure!(
                    !self.entries.contains_key(&key) && !self.stale.contains(&key),
                    "insert handed out a key in use or used before: {key:?}"
                );
                let tick = Self::reported(tick);
                self.entries.insert(key, Entry { tick, value });
            }
            Op::Remove { pick } => {
                let Some(key) = self.pick(pick) else {
                    return Ok(());
                };
                let want = self.entries.remove(&key).unwrap();
                let got = self.wheel.remove(key);
                ensure!(
                    got == Some(want.value),
                    "remove({key:?}) = {got:?}, model {want:?}"
                );
                self.stale.push(key);
            }
            Op::Reset { pick, tick } => {
                let Some(key) = self.pick(pick) else {
                    return Ok(());
                };
                let tick = self.resolve(tick);
                ensure!(
                    self.wheel.reset(key, tick),
                    "reset({key:?}) refused a live key"
                );
                self.entries.get_mut(&key).unwrap().tick = Self::reported(tick);
            }
            Op::SetValue { pick } => {
                let Some(key) = self.pick(pick) else {
                    return Ok(());
                };
                let value = self.value();
                let Some(slot) = self.wheel.get_mut(key) else {
                    return Err(format!("get_mut({key:?}) = None for a live key"));
                };
                *slot = value;
                self.entries.get_mut(&key).unwrap().value = value;
            }
            Op::Stale { pick, tick } => {
                let key = self.stale[usize::from(pick) % self.stale.len()];
                let tick = self.resolve(tick);
                ensure!(
                    !self.wheel.contains(key),
                    "contains({key:?}) for a stale key"
                );
                ensure!(
                    !self.wheel.reset(key, tick),
                    "reset({key:?}) took a stale key"
                );
                let got = self.wheel.remove(key);
                ensure!(got.is_none(), "remove({key:?}) = {got:?} for a stale key");
                ensure!(
                    self.wheel.get(key).is_none(),
                    "get({key:?}) for a stale key"
                );
                ensure!(
                    self.wheel.tick(key).is_none(),
                    "tick({key:?}) for a stale key"
                );
            }
            Op::Poll { to } => {
                let now = self.resolve(to);
                self.poll(now)?;
            }
            Op::PollNext => {
                if let Some(next) = self.wheel.next_tick() {
                    self.poll(next)?;
                }
            }
            Op::Compact => {
                self.wheel.compact();
                ensure!(
                    self.wheel.capacity() == super::store::capacity_for(self.wheel.len()),
                    "capacity {} after compact, len {}",
                    self.wheel.capacity(),
                    self.wheel.len()
                );
            }
            Op::Shrink => self.wheel.shrink_to_fit(),
            Op::Clear => {
                self.wheel.clear();
                let keys = std::mem::take(&mut self.entries).into_keys();
                self.stale.extend(keys);
            }
        }
        // Keep the stale list short: the foreign key and the newest ones.
        if self.stale.len() > 64 {
            self.stale.drain(1..33);
        }
        Ok(())
    }

    /// Polls up to `now` until `None`, as an event loop does.
    fn poll(&mut self, now: u64) -> Result<(), String> {
        let before = self.polled;
        let limit = now.max(before.unwrap_or(0)).min(MAX_TICK);
        let mut last_in_order = None;
        loop {
            let peeked = self.wheel.peek();
            let Some(e) = self.wheel.poll(now) else {
                break;
            };
            ensure!(
                peeked == Some(e.key),
                "poll({now}) took {:?}, peek said {peeked:?}",
                e.key
            );
            let Some(want) = self.entries.remove(&e.key) else {
                return Err(format!("poll({now}) took unknown key {:?}", e.key));
            };
            ensure!(
                e.tick == want.tick && e.value == want.value,
                "poll({now}) took ({}, {}) for {:?}, model {want:?}",
                e.tick,
                e.value,
                e.key
            );
            ensure!(
                e.tick <= limit,
                "poll({now}) took {:?} due at {}: early",
                e.key,
                e.tick
            );
            if before.is_some_and(|p| e.tick <= p) {
                // Due at once: these come first, in any order.
                ensure!(
                    last_in_order.is_none(),
                    "an entry due at once came after one due by tick"
                );
            } else {
                ensure!(
                    last_in_order.map_or(true, |last| e.tick >= last),
                    "poll({now}) took tick {} after {last_in_order:?}",
                    e.tick
                );
                last_in_order = Some(e.tick);
            }
            self.stale.push(e.key);
        }
        self.polled = Some(limit);
        if let Some((key, e)) = self.entries.iter().find(|(_, e)| e.tick <= limit) {
            return Err(format!(
                "{key:?} due at {} was not taken by poll({now})",
                e.tick
            ));
        }
        Ok(())
    }

    /// Compares everything observable with the model.
    fn check(&mut self) -> Result<(), String> {
        let next = self.wheel.next_tick();
        let w = &self.wheel;
        ensure!(
            w.len() == self.entries.len(),
            "len {} != model {}",
            w.len(),
            self.entries.len()
        );
        ensure!(
            w.is_empty() == self.entries.is_empty(),
            "is_empty disagrees"
        );
        for (&key, e) in &self.entries {
            ensure!(
                w.tick(key) == Some(e.tick),
                "tick({key:?}) = {:?}, model {e:?}",
                w.tick(key)
            );
            ensure!(
                w.get(key) == Some(&e.value),
                "get({key:?}) = {:?}, model {e:?}",
                w.get(key)
            );
        }
        for &key in self.stale.iter().rev().take(8) {
            ensure!(!w.contains(key), "stale key {key:?} still names an entry");
        }
        let at_once = self.entries.values().any(|e| self.due_at_once(e.tick));
        let earliest = self
            .entries
            .values()
            .map(|e| e.tick)
            .filter(|&t| t <= MAX_TICK)
            .min();
        match (next, earliest) {
            (None, None) => {}
            (Some(next), Some(_)) if at_once => ensure!(
                Some(next) == self.polled,
                "next_tick {next} with entries due at once, last polled {:?}",
                self.polled
            ),
            (Some(next), Some(earliest)) => ensure!(
                self.polled.map_or(true, |p| next > p) && next <= earliest,
                "next_tick {next} outside ({:?}, {earliest}]",
                self.polled
            ),
            (next, earliest) => {
                return Err(format!("next_tick {next:?}, earliest entry {earliest:?}"))
            }
        }
        let peek = w.peek();
        match peek {
            None => ensure!(self.entries.is_empty(), "peek None with entries"),
            Some(key) => {
                let Some(e) = self.entries.get(&key) else {
                    return Err(format!("peek {key:?} names no entry"));
                };
                if at_once {
                    ensure!(self.due_at_once(e.tick), "peek {key:?} is not due at once");
                } else {
                    let min = self.entries.values().map(|e| e.tick).min();
                    ensure!(
                        Some(e.tick) == min,
                        "peek {key:?} at {} not the earliest {min:?}",
                        e.tick
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::seeded_bytes;
    use super::*;

    #[test]
    fn random_operations_agree_with_the_model() {
        for seed in 0..3000 {
            let case = Case::decode(&seeded_bytes(seed ^ 0x5eed, 64 + (seed as usize % 7) * 64));
            if let Err(e) = case.run() {
                let small = case.shrink();
                panic!("seed {seed}: {e}\nminimal case:\n{}", small.describe());
            }
        }
    }
}
