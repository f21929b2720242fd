//! A reference model of the [`Wheel`]: every operation is checked against a
//! `BTreeMap` of entries. Driven by random bytes, both from the unit test
//! below and from the `cargo fuzz` target in `fuzz/` (through
//! `hashwheel::fuzzing`, compiled only with `--cfg fuzzing`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::raw::{Key, State, Wheel, NEVER};

/// A tick, decoded once the wheel's shape is known.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tick {
    /// `elapsed + n`, saturating.
    After(u64),
    /// An absolute tick (possibly in the past, or past [`NEVER`]).
    At(u64),
}

/// One operation. `pick` selects the `pick % n`-th live entry of a kind.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Insert {
        tick: Tick,
        detached: bool,
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
    Advance {
        to: Tick,
    },
    /// What the driver does: process up to `next_expiration`.
    AdvanceToNext,
    Drain,
    Shrink,
}

/// The shape of the wheel under test and the operations to run on it.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) buckets: usize,
    pub(crate) ring: usize,
    /// log2 of the time units per bucket.
    pub(crate) res: u32,
    /// Rounds in level 0 (see [`Wheel::with_window`]).
    pub(crate) window: usize,
    /// Buckets in link order (see [`Wheel::in_link_order`]), as the
    /// timer's shards keep them.
    pub(crate) fifo: bool,
    pub(crate) ops: Vec<Op>,
}

pub(super) struct Bytes<'a>(pub(super) &'a [u8]);

impl Bytes<'_> {
    pub(super) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub(super) fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub(super) fn u64(&mut self) -> u64 {
        let mut b = [0; 8];
        for x in &mut b {
            *x = self.u8();
        }
        u64::from_le_bytes(b)
    }

    fn tick(&mut self, buckets: u64, ring: u64) -> Tick {
        let span = buckets * ring;
        let near = |n: u64, b: u8| match b % 3 {
            0 => n.saturating_sub(1),
            1 => n,
            _ => n + 1,
        };
        match self.u8() % 9 {
            0 => Tick::After(u64::from(self.u8() % 4)),
            1 => Tick::After(u64::from(self.u8()) % (2 * buckets + 1)),
            2 => Tick::After(u64::from(self.u16()) % (2 * span + 1)),
            3 => {
                let (k, b) = (u64::from(self.u8() % 8), self.u8());
                Tick::After(near(k * buckets, b))
            }
            4 => {
                let (k, b) = (u64::from(self.u8() % 8), self.u8());
                Tick::After(near(k * span, b))
            }
            5 => Tick::After(u64::from(self.u16()) * u64::from(self.u16())),
            6 => Tick::At(self.u64()),
            7 => Tick::At(NEVER - u64::from(self.u8() % 4)),
            _ => Tick::At(u64::from(self.u8())),
        }
    }
}

impl Case {
    /// Decodes a case from arbitrary bytes: every input is a valid case.
    pub(crate) fn decode(data: &[u8]) -> Case {
        let mut b = Bytes(data);
        let shape = b.u8();
        let buckets = 1usize << (shape % 7);
        let ring = 1usize << ((shape / 7) % 7);
        let res = u32::from(shape / 49) % 4;
        let order = b.u8();
        let window = 1usize << (order % 3);
        let fifo = order & 0x80 != 0;
        // Ticks are drawn in buckets' widths.
        let (nb, nr) = ((buckets as u64) << res, ring as u64);
        let mut ops = Vec::new();
        while !b.0.is_empty() {
            let op = match b.u8() % 16 {
                0..=4 => Op::Insert {
                    tick: b.tick(nb, nr),
                    detached: b.u8() % 4 == 0,
                },
                5 | 6 => Op::Remove { pick: b.u16() },
                7 | 8 => Op::Reset {
                    pick: b.u16(),
                    tick: b.tick(nb, nr),
                },
                9 => Op::SetValue { pick: b.u16() },
                10 | 11 => Op::Advance { to: b.tick(nb, nr) },
                12 | 13 => Op::AdvanceToNext,
                14 => {
                    if b.u8() % 8 == 0 {
                        Op::Drain
                    } else {
                        Op::AdvanceToNext
                    }
                }
                _ => Op::Shrink,
            };
            ops.push(op);
        }
        Case {
            buckets,
            ring,
            res,
            window,
            fifo,
            ops,
        }
    }

    /// Runs the case; `Err` describes the first disagreement with the model.
    pub(crate) fn run(&self) -> Result<(), String> {
        let wheel = Wheel::with_window(self.buckets, self.ring, self.res, self.window);
        let mut m = Model {
            wheel: if self.fifo {
                wheel.in_link_order()
            } else {
                wheel
            },
            res: self.res,
            entries: BTreeMap::new(),
            elapsed: 0,
            next_id: 1,
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
        let ops = shrink_ops(self.ops.clone(), |ops| {
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
            "Wheel::with_window({}, {}, {}, {}){}, then:\n",
            self.buckets,
            self.ring,
            self.res,
            self.window,
            if self.fifo { ".in_link_order()" } else { "" }
        );
        for op in &self.ops {
            let _ = writeln!(s, "  {op:?}");
        }
        s
    }
}

/// Runs `case`, counting a panic inside the wheel as a failure too.
/// Drops operations while `fails` still holds (delta debugging: chunks
/// of halving size), for a short report. Shared by the wheel's models.
pub(crate) fn shrink_ops<O: Clone>(mut ops: Vec<O>, fails: impl Fn(&[O]) -> bool) -> Vec<O> {
    let mut chunk = ops.len().max(1);
    loop {
        let mut i = 0;
        while i < ops.len() {
            let mut smaller = ops.clone();
            let end = (i + chunk).min(smaller.len());
            smaller.drain(i..end);
            if fails(&smaller) {
                ops = smaller;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 {
            return ops;
        }
        chunk /= 2;
    }
}

pub(crate) fn fails(case: &Case) -> bool {
    !matches!(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case.run())),
        Ok(Ok(()))
    )
}

#[cfg(fuzzing)]
/// The fuzz entry point: decodes `data`, runs it, and panics with a
/// shrunk reproduction on any disagreement.
pub(crate) fn check_bytes(data: &[u8]) {
    let case = Case::decode(data);
    if let Err(e) = case.run() {
        let small = case.shrink();
        panic!(
            "wheel disagrees with the model: {e}\nminimal case:\n{}",
            small.describe()
        );
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    tick: u64,
    detached: bool,
    state: State,
    /// The value the store holds now (taken, i.e. 0, once fired).
    value: u64,
}

struct Model {
    wheel: Wheel<u64>,
    entries: BTreeMap<Key, Entry>,
    elapsed: u64,
    next_id: u64,
    res: u32,
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
            Tick::After(n) => self.elapsed.saturating_add(n),
            Tick::At(t) => t,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The `pick`-th entry that `keep` accepts.
    fn pick(&self, pick: u16, keep: impl Fn(&Entry) -> bool) -> Option<Key> {
        let keys: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| keep(e))
            .map(|(&k, _)| k)
            .collect();
        (!keys.is_empty()).then(|| keys[usize::from(pick) % keys.len()])
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Insert { tick, detached } => {
                let tick = self.resolve(tick);
                let id = self.id();
                let key = self.wheel.insert(tick, detached, id);
                ensure!(
                    !self.entries.contains_key(&key),
                    "insert reused live key {key}"
                );
                self.entries.insert(
                    key,
                    Entry {
                        tick: tick.clamp(self.elapsed + 1, NEVER),
                        detached,
                        state: State::Pending,
                        value: id,
                    },
                );
            }
            Op::Remove { pick } => {
                // Handles remove their own entries; a task handle removes
                // its detached entry only while it is pending.
                let Some(key) = self.pick(pick, |e| !e.detached || e.state == State::Pending)
                else {
                    return Ok(());
                };
                let want = self.entries.remove(&key).unwrap();
                let got = self.wheel.remove(key);
                ensure!(
                    got == (want.state, want.value),
                    "remove({key}) = {got:?}, model {want:?}"
                );
            }
            Op::Reset { pick, tick } => {
                let Some(key) = self.pick(pick, |e| !e.detached) else {
                    return Ok(());
                };
                let tick = self.resolve(tick);
                let elapsed = self.elapsed;
                let e = self.entries.get_mut(&key).unwrap();
                let want = match e.state {
                    State::Cancelled => (State::Cancelled, None),
                    old => {
                        e.tick = tick.clamp(1, NEVER);
                        if tick <= elapsed {
                            e.state = State::Fired;
                            (old, Some(std::mem::take(&mut e.value)))
                        } else {
                            e.state = State::Pending;
                            (old, None)
                        }
                    }
                };
                let got = self.wheel.reset(key, tick);
                ensure!(
                    got == want,
                    "reset({key}, {tick}) = {got:?}, model {want:?}"
                );
            }
            Op::SetValue { pick } => {
                let Some(key) = self.pick(pick, |e| !e.detached) else {
                    return Ok(());
                };
                let id = self.id();
                *self.wheel.value_mut(key) = id;
                self.entries.get_mut(&key).unwrap().value = id;
            }
            Op::Advance { to } => {
                let now = self.resolve(to);
                self.advance(now)?;
            }
            Op::AdvanceToNext => {
                let next = self.wheel.next_expiration();
                if let Some(next) = next {
                    self.advance(next)?;
                }
            }
            Op::Drain => {
                let mut got = Vec::new();
                self.wheel.drain(|e| got.push((e.key, e.detached, e.value)));
                got.sort_unstable();
                let mut want = Vec::new();
                self.entries.retain(|&key, e| {
                    if e.state != State::Pending {
                        return true;
                    }
                    want.push((key, e.detached, std::mem::take(&mut e.value)));
                    e.state = State::Cancelled;
                    !e.detached
                });
                ensure!(got == want, "drain gave {got:?}, model {want:?}");
            }
            Op::Shrink => {
                self.wheel.shrink();
            }
        }
        Ok(())
    }

    /// Pops everything due at or before `now`, as the driver does.
    fn advance(&mut self, now: u64) -> Result<(), String> {
        let limit = now.min(NEVER - 1);
        let before = self.elapsed;
        let mut last = 0;
        // The driver's read-ahead: what the walk hands out must be the
        // first pops, in their order (at most `n` of them).
        let n = 1 + (now % 8) as usize;
        let mut peeked = Vec::new();
        self.wheel.peek_next_due(now, n, |key| peeked.push(key));
        ensure!(
            peeked.len() <= n,
            "peeked {} keys, asked for {n}",
            peeked.len()
        );
        let mut popped = Vec::new();
        while let Some(x) = self.wheel.pop_expired(now) {
            popped.push(x.key);
            let Some(e) = self.entries.get_mut(&x.key) else {
                return Err(format!("popped unknown key {}", x.key));
            };
            ensure!(
                e.state == State::Pending,
                "popped key {} in state {:?}",
                x.key,
                e.state
            );
            ensure!(
                e.tick > before && e.tick <= limit,
                "popped key {} due at {} while advancing {before} -> {now}",
                x.key,
                e.tick
            );
            // In order bucket by bucket; inside a bucket, any order.
            ensure!(
                e.tick >> self.res >= last >> self.res,
                "popped tick {} after {last}",
                e.tick
            );
            ensure!(
                x.detached == e.detached && x.value == e.value,
                "popped ({}, {}) for key {}, model {e:?}",
                x.detached,
                x.value,
                x.key
            );
            last = e.tick;
            if e.detached {
                self.entries.remove(&x.key);
            } else {
                e.state = State::Fired;
                e.value = 0;
            }
        }
        ensure!(
            popped.starts_with(&peeked),
            "peek_next_due({now}, {n}) gave {peeked:?}, the pops {popped:?}"
        );
        self.elapsed = self.elapsed.max(limit);
        if let Some((key, e)) = self
            .entries
            .iter()
            .find(|(_, e)| e.state == State::Pending && e.tick <= self.elapsed)
        {
            return Err(format!("key {key} due at {} was not popped: {e:?}", e.tick));
        }
        Ok(())
    }

    /// Compares everything observable with the model.
    fn check(&mut self) -> Result<(), String> {
        // First: `next_expiration` may take `&mut self` (to cache).
        let next = self.wheel.next_expiration();
        let w = &self.wheel;
        ensure!(
            w.elapsed() == self.elapsed,
            "elapsed {} != model {}",
            w.elapsed(),
            self.elapsed
        );
        let pending = self.entries.values().filter(|e| e.state == State::Pending);
        ensure!(
            w.len() == pending.clone().count(),
            "len {} != model {}",
            w.len(),
            pending.clone().count()
        );
        ensure!(
            w.entries() == self.entries.len(),
            "store holds {} != model {}",
            w.entries(),
            self.entries.len()
        );
        for (&key, e) in &self.entries {
            ensure!(
                w.state(key) == e.state,
                "state({key}) = {:?}, model {e:?}",
                w.state(key)
            );
            ensure!(
                w.tick(key) == e.tick,
                "tick({key}) = {}, model {e:?}",
                w.tick(key)
            );
        }
        let earliest = pending.map(|e| e.tick).filter(|&t| t < NEVER).min();
        match (next, earliest) {
            (None, None) => {}
            (Some(next), Some(earliest)) => ensure!(
                next > self.elapsed && next <= earliest,
                "next_expiration {next} outside ({}, {earliest}]",
                self.elapsed
            ),
            (next, earliest) => {
                return Err(format!(
                    "next_expiration {next:?}, earliest pending {earliest:?}"
                ))
            }
        }
        Ok(())
    }
}

/// `len` bytes from splitmix64 seeded with `seed`, so failures replay.
#[cfg(test)]
pub(super) fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_operations_agree_with_the_model() {
        for seed in 0..3000 {
            let case = Case::decode(&seeded_bytes(seed, 64 + (seed as usize % 7) * 64));
            if let Err(e) = case.run() {
                let small = case.shrink();
                panic!("seed {seed}: {e}\nminimal case:\n{}", small.describe());
            }
        }
    }
}
