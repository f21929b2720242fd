//! A reference model of the [`Store`]: every operation is checked against a
//! `BTreeMap` of the values by key, across page boundaries (bulk inserts
//! cross several pages at a time). Driven by random bytes from the unit
//! test below and from the `cargo fuzz` target (through
//! `hashwheel::fuzzing`).
//!
//! Besides the values, it checks that a key is handed out only while it
//! holds nothing (a freed key, or the next fresh one), that
//! [`Store::vacant_key`] names the key the next insert takes, that a key
//! that holds nothing reads as nothing, that [`Store::shrink`] keeps every
//! key and gives back what lies above the highest, that
//! [`Store::compact`] leaves exactly `0..len` with the capacity the length
//! (in whole pages past the first 256), and that [`Store::reserve`]
//! reserves what was asked for, exactly up to 256.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::model::{shrink_ops, Bytes};
use super::store::{capacity_for, page_len, page_of, page_start, Store, PAGE};

/// One operation. `pick` selects the `pick % n`-th live key.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Inserts `n` values.
    Insert {
        n: u16,
    },
    Remove {
        pick: u16,
    },
    /// Removes every `step`-th live key.
    RemoveMany {
        step: u8,
    },
    /// Removes and reads a key that holds nothing: a freed one, or one
    /// past the keys used.
    Vacant {
        pick: u16,
    },
    Reserve {
        n: u16,
    },
    Shrink,
    Compact,
    Clear,
}

/// The operations to run on one store.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) ops: Vec<Op>,
}

impl Case {
    pub(crate) fn decode(data: &[u8]) -> Case {
        let mut b = Bytes(data);
        let mut ops = Vec::new();
        while !b.0.is_empty() {
            let op = match b.u8() % 16 {
                0..=3 => Op::Insert {
                    n: u16::from(b.u8()),
                },
                // Across a few pages at once.
                4 => Op::Insert {
                    n: b.u16() % (3 * PAGE as u16),
                },
                5..=7 => Op::Remove { pick: b.u16() },
                8 => Op::RemoveMany {
                    step: b.u8().max(1),
                },
                9 | 10 => Op::Vacant { pick: b.u16() },
                11 => Op::Reserve {
                    n: b.u16() % (2 * PAGE as u16),
                },
                12 | 13 => Op::Shrink,
                14 => Op::Compact,
                _ => Op::Clear,
            };
            ops.push(op);
        }
        Case { ops }
    }

    /// Runs the case; the first disagreement as an error.
    pub(crate) fn run(&self) -> Result<(), String> {
        let mut m = Model {
            store: Store::new(),
            values: BTreeMap::new(),
            freed: BTreeSet::new(),
            next_value: 1,
        };
        for (i, op) in self.ops.iter().enumerate() {
            m.step(op)
                .and_then(|()| m.check())
                .map_err(|e| format!("op #{i} {op:?}: {e}"))?;
        }
        Ok(())
    }

    /// The case with operations dropped while it still fails.
    pub(crate) fn shrink(self) -> Case {
        let ops = shrink_ops(self.ops, |ops| fails(&Case { ops: ops.to_vec() }));
        Case { ops }
    }

    /// The case as a readable reproduction.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::from("Store::new(), then:\n");
        for op in &self.ops {
            let _ = writeln!(s, "  {op:?}");
        }
        s
    }
}

fn fails(case: &Case) -> bool {
    !matches!(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case.run())),
        Ok(Ok(()))
    )
}

/// Decodes `data`, runs it, and panics with a shrunk reproduction on any
/// disagreement: the fuzz entry point.
#[cfg_attr(not(fuzzing), allow(dead_code))]
pub(crate) fn check_bytes(data: &[u8]) {
    let case = Case::decode(data);
    if let Err(e) = case.run() {
        let small = case.shrink();
        panic!(
            "store disagrees with the model: {e}\nminimal case:\n{}",
            small.describe()
        );
    }
}

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

struct Model {
    store: Store<u64>,
    values: BTreeMap<u32, u64>,
    /// Keys below `used` that hold nothing.
    freed: BTreeSet<u32>,
    next_value: u64,
}

impl Model {
    fn pick(&self, pick: u16) -> Option<u32> {
        if self.values.is_empty() {
            return None;
        }
        let n = usize::from(pick) % self.values.len();
        self.values.keys().nth(n).copied()
    }

    fn insert(&mut self) -> Result<(), String> {
        let value = self.next_value;
        self.next_value += 1;
        let vacant = self.store.vacant_key();
        let fresh = self.store.used() as u32;
        let key = self.store.insert(value);
        ensure!(key == vacant, "inserted at {key}, vacant_key said {vacant}");
        ensure!(
            self.freed.is_empty() || key != fresh,
            "a fresh key {key} while keys were free: {:?}",
            self.freed.iter().take(5).collect::<Vec<_>>()
        );
        ensure!(
            self.freed.remove(&key) || key == fresh,
            "key {key} was neither freed nor the next fresh one ({fresh})"
        );
        ensure!(
            self.values.insert(key, value).is_none(),
            "key {key} handed out twice"
        );
        Ok(())
    }

    fn remove(&mut self, key: u32) -> Result<(), String> {
        let want = self.values.remove(&key);
        let got = self.store.try_remove(key);
        ensure!(got == want, "removed {got:?} at {key}, model {want:?}");
        self.freed.insert(key);
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match *op {
            Op::Insert { n } => {
                for _ in 0..n {
                    self.insert()?;
                }
            }
            Op::Remove { pick } => {
                if let Some(key) = self.pick(pick) {
                    self.remove(key)?;
                }
            }
            Op::RemoveMany { step } => {
                let keys: Vec<u32> = self
                    .values
                    .keys()
                    .step_by(usize::from(step))
                    .copied()
                    .collect();
                for key in keys {
                    self.remove(key)?;
                }
            }
            Op::Vacant { pick } => {
                let used = self.store.used() as u32;
                let key = if self.freed.is_empty() || pick % 3 == 0 {
                    used + u32::from(pick % 2048)
                } else {
                    let n = usize::from(pick) % self.freed.len();
                    *self.freed.iter().nth(n).expect("in range")
                };
                ensure!(self.store.get(key).is_none(), "vacant {key} reads a value");
                ensure!(
                    self.store.try_remove(key).is_none(),
                    "vacant {key} gave a value"
                );
            }
            Op::Reserve { n } => {
                let before = self.store.capacity();
                let n = usize::from(n);
                self.store.reserve(n);
                let after = self.store.capacity();
                let len = self.store.len();
                ensure!(after >= len + n, "reserve({n}): capacity {after}");
                ensure!(
                    after == before || after == capacity_for(len + n),
                    "reserve({n}) grew {before} to {after}, not {}",
                    capacity_for(len + n)
                );
                // What was reserved is used without a page being added.
                let pages = self.store.pages();
                for _ in 0..n {
                    self.insert()?;
                }
                ensure!(
                    self.store.pages() == pages,
                    "inserts within a reservation added a page"
                );
            }
            Op::Shrink => {
                let top = self
                    .values
                    .keys()
                    .next_back()
                    .map_or(0, |&k| k as usize + 1);
                self.store.shrink();
                self.freed.retain(|&k| (k as usize) < top);
                ensure!(
                    self.store.used() == top,
                    "shrink kept {} keys, the highest is {top}",
                    self.store.used()
                );
                ensure!(
                    self.store.capacity() == capacity_for(top),
                    "shrink left a capacity of {} for {top} keys",
                    self.store.capacity()
                );
            }
            Op::Compact => {
                let mut moved = BTreeMap::new();
                self.store.compact(|value, from, to| {
                    moved.insert(from, (to, *value));
                });
                let mut values = BTreeMap::new();
                for (&key, &value) in &self.values {
                    match moved.remove(&key) {
                        Some((to, got)) => {
                            ensure!(got == value, "moved {got} from {key}, model {value}");
                            values.insert(to, value);
                        }
                        None => {
                            values.insert(key, value);
                        }
                    }
                }
                ensure!(moved.is_empty(), "moved keys that held nothing: {moved:?}");
                self.values = values;
                self.freed.clear();
                let len = self.values.len();
                ensure!(
                    self.values.keys().copied().eq(0..len as u32),
                    "compact left keys other than 0..{len}"
                );
                ensure!(
                    self.store.capacity() == capacity_for(len),
                    "compact left a capacity of {} for {len}",
                    self.store.capacity()
                );
            }
            Op::Clear => {
                let capacity = self.store.capacity();
                self.store.clear();
                self.values.clear();
                self.freed.clear();
                ensure!(
                    self.store.capacity() == capacity,
                    "clear changed the capacity"
                );
            }
        }
        Ok(())
    }

    fn check(&mut self) -> Result<(), String> {
        let store = &mut self.store;
        ensure!(
            store.len() == self.values.len(),
            "len {} != model {}",
            store.len(),
            self.values.len()
        );
        ensure!(
            store.capacity() >= store.used(),
            "capacity {} below the keys used {}",
            store.capacity(),
            store.used()
        );
        for (&key, &value) in &self.values {
            ensure!(
                store.get(key) == Some(&value),
                "get({key}) = {:?}, model {value}",
                store.get(key)
            );
        }
        for &key in &self.freed {
            ensure!(store.get(key).is_none(), "freed {key} reads a value");
        }
        let mut seen = self.values.iter();
        for (key, value) in store.iter_mut() {
            ensure!(
                seen.next() == Some((&key, &*value)),
                "iter_mut gave {key} => {value} out of order or extra"
            );
        }
        ensure!(seen.next().is_none(), "iter_mut missed values");
        // Pages are allocated in key order: all but the last whole.
        let pages = store.pages();
        ensure!(
            pages == 0
                || store.capacity() > page_start(pages - 1)
                    && store.capacity() <= page_start(pages - 1) + page_len(pages - 1),
            "the capacity {} does not end in the last page ({pages} pages)",
            store.capacity()
        );
        if let Some(&top) = self.values.keys().next_back() {
            ensure!(page_of(top) < pages, "key {top} beyond the pages");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::seeded_bytes;
    use super::*;

    /// Across the first boundary of the directory's chunks (key 262,144:
    /// the store's 1,024th page of 256), out and back: the chunk is
    /// allocated, given back by `shrink` and `compact`, and allocated again.
    #[test]
    fn the_directory_chunk_boundary_agrees_with_the_model() {
        let fill = |n: usize| {
            let mut ops = vec![Op::Insert { n: u16::MAX }; n / usize::from(u16::MAX)];
            ops.push(Op::Insert {
                n: (n % usize::from(u16::MAX)) as u16,
            });
            ops
        };
        let boundary = super::super::dir::CHUNK * PAGE;
        let mut ops = fill(boundary + 300);
        ops.extend([
            Op::Vacant { pick: 7 },
            Op::RemoveMany { step: 2 },
            Op::Shrink,
            Op::Insert { n: 500 },
            Op::Compact,
            Op::Vacant { pick: 3 },
        ]);
        ops.extend(fill(boundary / 2));
        ops.extend([
            Op::Remove { pick: 1 },
            Op::Reserve { n: u16::MAX },
            Op::Clear,
            Op::Reserve { n: 300 },
            Op::Shrink,
        ]);
        if let Err(e) = (Case { ops }).run() {
            panic!("{e}");
        }
    }

    #[test]
    fn random_operations_agree_with_the_model() {
        for seed in 0..150 {
            let case = Case::decode(&seeded_bytes(seed ^ 0x570e, 32 + (seed as usize % 5) * 48));
            if let Err(e) = case.run() {
                let small = case.shrink();
                panic!("seed {seed}: {e}\nminimal case:\n{}", small.describe());
            }
        }
    }
}
