//! A randomized model test of `DelayQueue` under paused time, against a
//! `BTreeMap` of the items it should hold.
//!
//! Seeded operation sequences (insert with delays from zero through
//! sub-millisecond, wheel-turn and ring edges, minutes and years to
//! `Duration::MAX`; insert at a past instant; remove and try_remove; stale
//! keys; reset earlier, later and into the past; peek; compact and clear;
//! advance the clock by microseconds to years, or to just before, at or after
//! the next deadline) run against the model. After every step:
//!
//! * `len` and every live key's `deadline` agree with the model (deadlines
//!   round up to the millisecond from the queue's creation, never down, as
//!   tokio-util's; one already past is due in the millisecond that has
//!   begun, or, as tokio-util's, where its wheel has got to, which is no
//!   later);
//! * stale keys (removed, expired, cleared) are refused;
//! * when the stream is drained, exactly the items whose rounded deadline has
//!   passed come out, each once, with its key, value and deadline, never
//!   early, in deadline order (those already due when inserted or reset
//!   first), and each is the one `peek` named (which of the items of one
//!   millisecond comes first is tokio-util's: the benches' member checks it
//!   against tokio-util, `benches/tests/delay_queue_order.rs`);
//! * an item whose deadline passed a millisecond ago (tokio's resolution)
//!   has woken the waiting task.
//!
//! A failure prints the seed and the operations up to it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::task::Poll;
use std::time::Duration;

use hashwheel::delay_queue::{DelayQueue, Key};
use tokio::time::Instant;
use tokio_test::task::{self, Spawn};

const TICK: Duration = Duration::from_millis(1);
const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Delays that hit the interesting places: zero, sub-millisecond,
    /// millisecond edges, the edges of the wheel's levels (64 ms and
    /// 4.096 s; 262 s), minutes, years past the wheel's reach (2^36 ms,
    /// 2.2 years) and overflow.
    fn delay(&mut self) -> Duration {
        let turn = Duration::from_millis(64);
        let ring = Duration::from_millis(4_096);
        let near = |d: Duration, r: u64| match r % 3 {
            0 => d.saturating_sub(TICK),
            1 => d,
            _ => d + TICK,
        };
        match self.below(12) {
            0 => Duration::ZERO,
            1 => Duration::from_nanos(self.below(2_000_000)),
            2 | 3 => Duration::from_millis(self.below(300)),
            4 => {
                let r = self.next();
                near(turn * self.below(8) as u32, r)
            }
            5 => {
                let r = self.next();
                near(ring * self.below(70) as u32, r)
            }
            6 => Duration::from_millis(self.below(600_000)),
            7 => Duration::from_micros(self.below(2_000_000)),
            8 => YEAR * self.below(5) as u32 + Duration::from_millis(self.below(1000)),
            9 => Duration::MAX,
            _ => Duration::from_millis(self.below(3_000)),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Item {
    /// When it was inserted or last reset.
    set_at: Instant,
    /// Its deadline rounded up to the millisecond; `None`: never comes out.
    /// Where that had passed when set: the earliest the queue may keep.
    due: Option<Instant>,
    /// Where its deadline had passed when set: the latest the queue may
    /// keep (the millisecond that had begun); else `due`.
    due_by: Option<Instant>,
}

impl Item {
    /// Whether the queue's deadline `got` is one the model allows.
    fn allows(&self, got: Instant) -> bool {
        match (self.due, self.due_by) {
            (Some(lo), Some(hi)) => lo <= got && got <= hi,
            _ => false,
        }
    }
}

struct Model {
    queue: Spawn<DelayQueue<u64>>,
    start: Instant,
    items: BTreeMap<u64, (Key, Item)>,
    stale: Vec<Key>,
    next_value: u64,
    /// The task is parked on the queue (its last poll was `Pending`).
    waiting: bool,
    log: String,
}

impl Model {
    /// The item the queue keeps for `asked`, set at `now`.
    fn item(&self, asked: Option<Instant>, now: Instant) -> Item {
        let due = self.due(asked, now);
        let due_by = match asked {
            Some(asked) if asked <= now => self.due(Some(now), now),
            _ => due,
        };
        Item {
            set_at: now,
            due,
            due_by,
        }
    }

    /// The deadline the queue keeps for `asked`, set at `now`: rounded up
    /// to the millisecond from its creation; where `asked` is not after
    /// `now` (a zero delay, a deadline past), no later than the millisecond
    /// that has begun, so that it comes out at once; past 2^62 ms (146
    /// million years), never.
    fn due(&self, asked: Option<Instant>, now: Instant) -> Option<Instant> {
        let asked = asked?;
        let ticks_of = |at: Instant, up: bool| {
            let since = at.saturating_duration_since(self.start).as_nanos();
            if up {
                since.div_ceil(TICK.as_nanos())
            } else {
                since / TICK.as_nanos()
            }
        };
        let mut ticks = ticks_of(asked, true);
        if asked <= now {
            ticks = ticks.min(ticks_of(now, false));
        }
        if ticks >= (1 << 62) - 1 {
            return None;
        }
        let nanos = ticks * TICK.as_nanos();
        let secs = (nanos / 1_000_000_000) as u64;
        Some(self.start + Duration::new(secs, (nanos % 1_000_000_000) as u32))
    }

    /// The deadline a delay of `delay` from `now` asks: capped about 30
    /// years out, as `Timer::sleep`'s.
    fn after(now: Instant, delay: Duration) -> Option<Instant> {
        now.checked_add(delay.min(Duration::from_secs(86_400 * 365 * 30)))
    }

    fn pick(&self, r: u64) -> Option<u64> {
        let n = self.items.len() as u64;
        (n > 0).then(|| *self.items.keys().nth((r % n) as usize).unwrap())
    }

    fn check(&mut self) -> Result<(), String> {
        if self.queue.len() != self.items.len() {
            return Err(format!(
                "len {} != model {}",
                self.queue.len(),
                self.items.len()
            ));
        }
        for (key, item) in self.items.values() {
            let got = self.queue.try_deadline(key);
            let ok = match item.due {
                Some(_) => got.is_some_and(|got| item.allows(got)),
                None => got.is_some_and(|d| d > self.start + 200 * YEAR),
            };
            if !ok {
                return Err(format!("deadline({key:?}) = {got:?}, model {item:?}"));
            }
        }
        for key in self.stale.iter().rev().take(4) {
            if self.queue.try_deadline(key).is_some() {
                return Err(format!("stale key {key:?} still has a deadline"));
            }
        }
        Ok(())
    }

    /// Polls until `Pending` or the end, checking every item.
    fn drain(&mut self) -> Result<(), String> {
        let now = Instant::now();
        let mut last: Option<Instant> = None;
        loop {
            let peeked = self.queue.peek();
            match self.queue.poll_next() {
                Poll::Pending => {
                    self.waiting = true;
                    break;
                }
                Poll::Ready(None) => {
                    self.waiting = false;
                    if !self.items.is_empty() {
                        return Err("the stream ended with items in".into());
                    }
                    break;
                }
                Poll::Ready(Some(e)) => {
                    let value = *e.get_ref();
                    let Some((key, item)) = self.items.remove(&value) else {
                        return Err(format!("unknown item {value} came out"));
                    };
                    if e.key() != key || peeked != Some(key) {
                        return Err(format!(
                            "item {value} came out as {:?}, inserted as {key:?}, peek said {peeked:?}",
                            e.key()
                        ));
                    }
                    if !item.allows(e.deadline()) || e.deadline() > now {
                        return Err(format!(
                            "item {item:?} came out at {:?} with deadline {:?}: early or wrong",
                            now - self.start,
                            e.deadline() - self.start
                        ));
                    }
                    // Items due when inserted or reset come first, in any
                    // order; the rest by deadline.
                    if e.deadline() > item.set_at {
                        if last.is_some_and(|l| e.deadline() < l) {
                            return Err(format!("item {value} came out after a later one"));
                        }
                        last = Some(e.deadline());
                    }
                    self.stale.push(key);
                }
            }
        }
        if let Some((_, (key, item))) = self
            .items
            .iter()
            .find(|(_, (_, item))| item.due.is_some_and(|d| d <= now))
        {
            return Err(format!("{key:?} {item:?} is due but did not come out"));
        }
        Ok(())
    }

    async fn advance(&mut self, by: Duration) -> Result<(), String> {
        tokio::time::advance(by).await;
        let now = Instant::now();
        let overdue = self.items.values().any(|(_, item)| {
            item.due
                .is_some_and(|d| d + Duration::from_millis(1) <= now)
        });
        if self.waiting && overdue && !self.queue.is_woken() {
            return Err(format!(
                "an item a millisecond overdue at {:?} did not wake the task",
                now - self.start
            ));
        }
        self.drain()
    }

    async fn step(&mut self, rng: &mut Rng) -> Result<(), String> {
        let now = Instant::now();
        match rng.below(16) {
            0..=4 => {
                let delay = rng.delay();
                self.next_value += 1;
                let value = self.next_value;
                let asked = Self::after(now, delay);
                let key = self.queue.insert(value, delay);
                let _ = write!(self.log, "insert({value}, {delay:?}); ");
                let item = self.item(asked, now);
                self.items.insert(value, (key, item));
            }
            5 => {
                let ago = Duration::from_micros(rng.below(10_000_000));
                self.next_value += 1;
                let value = self.next_value;
                let asked = now.checked_sub(ago).unwrap_or(now);
                let key = self.queue.insert_at(value, asked);
                let _ = write!(self.log, "insert_at({value}, now - {ago:?}); ");
                let item = self.item(Some(asked), now);
                self.items.insert(value, (key, item));
            }
            6 | 7 => {
                let Some(value) = self.pick(rng.next()) else {
                    return Ok(());
                };
                let (key, item) = self.items.remove(&value).unwrap();
                let _ = write!(self.log, "remove({value}); ");
                let e = if rng.below(2) == 0 {
                    self.queue.remove(&key)
                } else {
                    self.queue
                        .try_remove(&key)
                        .ok_or("try_remove refused a live key")?
                };
                if e.key() != key || item.due.is_some() && !item.allows(e.deadline()) {
                    return Err(format!("remove({key:?}) gave {e:?} for {item:?}"));
                }
                if e.into_inner() != value {
                    return Err(format!("remove({key:?}) gave another value"));
                }
                self.stale.push(key);
            }
            8 => {
                let key = self.stale[rng.below(self.stale.len() as u64) as usize];
                let _ = write!(self.log, "try_remove(stale {key:?}); ");
                if let Some(e) = self.queue.try_remove(&key) {
                    return Err(format!("try_remove of a stale key took {e:?}"));
                }
            }
            9 | 10 => {
                let Some(value) = self.pick(rng.next()) else {
                    return Ok(());
                };
                let key = self.items[&value].0;
                let (asked, label) = if rng.below(4) == 0 {
                    let ago = Duration::from_micros(rng.below(1_000_000));
                    let asked = now.checked_sub(ago).unwrap_or(now);
                    self.queue.reset_at(&key, asked);
                    (Some(asked), format!("reset_at({value}, now - {ago:?}); "))
                } else {
                    let delay = rng.delay();
                    self.queue.reset(&key, delay);
                    (
                        Self::after(now, delay),
                        format!("reset({value}, {delay:?}); "),
                    )
                };
                self.log.push_str(&label);
                let item = self.item(asked, now);
                self.items.get_mut(&value).unwrap().1 = item;
            }
            11 => {
                self.log.push_str("compact(); ");
                self.queue.compact();
                if self.queue.capacity() != self.queue.len() {
                    return Err("compact left spare capacity".into());
                }
            }
            12 if rng.below(8) == 0 => {
                self.log.push_str("clear(); ");
                self.queue.clear();
                let keys = std::mem::take(&mut self.items)
                    .into_values()
                    .map(|(k, _)| k);
                self.stale.extend(keys);
            }
            12 | 13 => {
                // To just before, at, or just after the next deadline.
                let next = self.items.values().filter_map(|(_, i)| i.due).min();
                if let Some(next) = next.filter(|&n| n > now && n - now < 5 * YEAR) {
                    let by = match rng.below(3) {
                        0 => (next - now).saturating_sub(Duration::from_micros(1)),
                        1 => next - now,
                        _ => next - now + Duration::from_millis(1),
                    };
                    let _ = write!(self.log, "advance({by:?}); ");
                    self.advance(by).await?;
                }
            }
            _ => {
                let by = match rng.below(4) {
                    0 => Duration::from_micros(rng.below(2_000)),
                    1 => Duration::from_millis(rng.below(300)),
                    2 => Duration::from_millis(rng.below(200_000)),
                    _ => YEAR * rng.below(2) as u32 + Duration::from_secs(rng.below(1_000)),
                };
                let _ = write!(self.log, "advance({by:?}); ");
                self.advance(by).await?;
            }
        }
        if self.stale.len() > 64 {
            self.stale.drain(..32);
        }
        self.check()
    }
}

#[tokio::test(start_paused = true)]
async fn random_operations_agree_with_the_model() {
    let mut queue = DelayQueue::new();
    let foreign = queue.insert(0, Duration::ZERO);
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut m = Model {
            start: Instant::now(),
            queue: task::spawn(DelayQueue::new()),
            items: BTreeMap::new(),
            stale: vec![foreign],
            next_value: 0,
            waiting: false,
            log: String::new(),
        };
        for step in 0..150 {
            if let Err(e) = m.step(&mut rng).await {
                panic!("seed {seed}, step {step}: {e}\noperations: {}", m.log);
            }
        }
    }
}
