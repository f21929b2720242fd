//! `DelayQueue` against tokio-util's, by the `use` line: thousands of random
//! scripts of inserts, resets, removes, peeks, polls and clock advances,
//! run on both queues side by side, every poll's outcome compared (issue
//! 56, item 7: insert `a` and `b` due at 5 ms, then `reset(a, 5 ms)`:
//! tokio-util hands out `a, b`, hashwheel handed out `b, a`; 1,532 of
//! 10,000 random scripts differed in the order items came out).
//!
//! `hashwheel::DelayQueue` runs on a paused current-thread runtime beside
//! tokio-util's, every step at the same instant, whole milliseconds: each
//! poll must give the same item (or both `Pending`, or both the end), with
//! the same deadline, and each `peek` the same item.
//!
//! `hashwheel::async_io::DelayQueue` reads std's clock, which paused time
//! does not move: its scripts are batches of inserts, resets and removes
//! made before any poll, then drained once every deadline has passed (a
//! few hundred milliseconds of real time for all its scripts together),
//! against tokio-util's queue given the same batch. Order is decided by
//! the batch alone, whenever the drain runs.
//!
//! A failure prints the seed and the script up to the step that differed.
//! `DQ_ORDER_SEEDS=N` runs N scripts a face (default 2,000 and 500).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Delays in whole milliseconds that put items at one instant often,
    /// and across the levels of tokio-util's wheel (64 ms, 4.096 s,
    /// 262 s) and their edges.
    fn delay(&mut self) -> u64 {
        match self.below(10) {
            0 => 0,
            1..=3 => self.below(8),
            4 | 5 => self.below(140),
            6 => 64 * self.below(4) + self.below(3),
            7 => 4_096 * self.below(3) + self.below(130),
            8 => 262_144 + self.below(5_000),
            _ => self.below(1_000),
        }
    }

    /// Clock advances, whole milliseconds: none, a few, to the levels'
    /// edges, and far.
    fn advance(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1..=3 => 1 + self.below(10),
            4 => 1 + self.below(130),
            5 => 64 * (1 + self.below(3)),
            6 => 1 + self.below(5_000),
            _ => 4_096 * (1 + self.below(70)),
        }
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What a poll gave: an item's value and its deadline (in milliseconds
/// from the queue's start), the end of the stream, or nothing yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Item(u32, u128),
    End,
    Pending,
}

/// The operations of a queue that a script drives: hashwheel's two faces
/// and tokio-util's.
trait Queue {
    type Key: Copy;
    fn insert(&mut self, value: u32, delay: Duration) -> Self::Key;
    fn insert_at(&mut self, value: u32, when: std::time::Instant) -> Self::Key;
    fn reset(&mut self, key: &Self::Key, delay: Duration);
    fn reset_at(&mut self, key: &Self::Key, when: std::time::Instant);
    fn remove(&mut self, key: &Self::Key) -> u32;
    fn peek(&self) -> Option<Self::Key>;
    fn poll(&mut self, cx: &mut Context<'_>, start: std::time::Instant) -> Out;
}

fn since(start: std::time::Instant, deadline: std::time::Instant) -> u128 {
    deadline.duration_since(start).as_nanos()
}

impl Queue for tokio_util::time::DelayQueue<u32> {
    type Key = tokio_util::time::delay_queue::Key;
    fn insert(&mut self, value: u32, delay: Duration) -> Self::Key {
        tokio_util::time::DelayQueue::insert(self, value, delay)
    }
    fn insert_at(&mut self, value: u32, when: std::time::Instant) -> Self::Key {
        tokio_util::time::DelayQueue::insert_at(self, value, Instant::from_std(when))
    }
    fn reset(&mut self, key: &Self::Key, delay: Duration) {
        tokio_util::time::DelayQueue::reset(self, key, delay);
    }
    fn reset_at(&mut self, key: &Self::Key, when: std::time::Instant) {
        tokio_util::time::DelayQueue::reset_at(self, key, Instant::from_std(when));
    }
    fn remove(&mut self, key: &Self::Key) -> u32 {
        tokio_util::time::DelayQueue::remove(self, key).into_inner()
    }
    fn peek(&self) -> Option<Self::Key> {
        tokio_util::time::DelayQueue::peek(self)
    }
    fn poll(&mut self, cx: &mut Context<'_>, start: std::time::Instant) -> Out {
        match self.poll_expired(cx) {
            Poll::Ready(Some(e)) => Out::Item(*e.get_ref(), since(start, e.deadline().into_std())),
            Poll::Ready(None) => Out::End,
            Poll::Pending => Out::Pending,
        }
    }
}

impl Queue for hashwheel::DelayQueue<u32> {
    type Key = hashwheel::delay_queue::Key;
    fn insert(&mut self, value: u32, delay: Duration) -> Self::Key {
        hashwheel::DelayQueue::insert(self, value, delay)
    }
    fn insert_at(&mut self, value: u32, when: std::time::Instant) -> Self::Key {
        hashwheel::DelayQueue::insert_at(self, value, Instant::from_std(when))
    }
    fn reset(&mut self, key: &Self::Key, delay: Duration) {
        hashwheel::DelayQueue::reset(self, key, delay);
    }
    fn reset_at(&mut self, key: &Self::Key, when: std::time::Instant) {
        hashwheel::DelayQueue::reset_at(self, key, Instant::from_std(when));
    }
    fn remove(&mut self, key: &Self::Key) -> u32 {
        hashwheel::DelayQueue::remove(self, key).into_inner()
    }
    fn peek(&self) -> Option<Self::Key> {
        hashwheel::DelayQueue::peek(self)
    }
    fn poll(&mut self, cx: &mut Context<'_>, start: std::time::Instant) -> Out {
        match self.poll_expired(cx) {
            Poll::Ready(Some(e)) => Out::Item(*e.get_ref(), since(start, e.deadline().into_std())),
            Poll::Ready(None) => Out::End,
            Poll::Pending => Out::Pending,
        }
    }
}

impl Queue for hashwheel::async_io::DelayQueue<u32> {
    type Key = hashwheel::delay_queue::Key;
    fn insert(&mut self, value: u32, delay: Duration) -> Self::Key {
        hashwheel::async_io::DelayQueue::insert(self, value, delay)
    }
    fn insert_at(&mut self, value: u32, when: std::time::Instant) -> Self::Key {
        hashwheel::async_io::DelayQueue::insert_at(self, value, when)
    }
    fn reset(&mut self, key: &Self::Key, delay: Duration) {
        hashwheel::async_io::DelayQueue::reset(self, key, delay);
    }
    fn reset_at(&mut self, key: &Self::Key, when: std::time::Instant) {
        hashwheel::async_io::DelayQueue::reset_at(self, key, when);
    }
    fn remove(&mut self, key: &Self::Key) -> u32 {
        hashwheel::async_io::DelayQueue::remove(self, key).into_inner()
    }
    fn peek(&self) -> Option<Self::Key> {
        hashwheel::async_io::DelayQueue::peek(self)
    }
    fn poll(&mut self, cx: &mut Context<'_>, start: std::time::Instant) -> Out {
        match self.poll_expired(cx) {
            Poll::Ready(Some(e)) => Out::Item(*e.get_ref(), since(start, e.deadline())),
            Poll::Ready(None) => Out::End,
            Poll::Pending => Out::Pending,
        }
    }
}

/// A queue under a script, and its items' keys by value.
struct Side<Q: Queue> {
    queue: Q,
    keys: BTreeMap<u32, Q::Key>,
    /// The instant the queue's deadlines count from.
    start: std::time::Instant,
}

impl<Q: Queue> Side<Q> {
    fn value_of(&self, key: Q::Key) -> u32
    where
        Q::Key: PartialEq,
    {
        *self
            .keys
            .iter()
            .find(|(_, k)| **k == key)
            .expect("a key of a live item")
            .0
    }
}

/// One step of a script: the same on both sides.
#[derive(Debug, Clone, Copy)]
enum Step {
    Insert(u32, u64),
    InsertAt(u32, u64),
    Reset(usize, u64),
    ResetAt(usize, u64),
    Remove(usize),
    Peek,
    /// Polls until `Pending` or the end, or at most this many times.
    Poll(usize),
    Advance(u64),
}

fn random_step(rng: &mut Rng, next_value: &mut u32, live: usize, batch: bool) -> Step {
    let mut value = || {
        *next_value += 1;
        *next_value
    };
    let pick = |rng: &mut Rng| rng.below(live as u64) as usize;
    match rng.below(if batch { 10 } else { 16 }) {
        0..=3 => Step::Insert(value(), rng.delay()),
        4 => Step::InsertAt(value(), rng.delay()),
        5 | 6 if live > 0 => Step::Reset(pick(rng), rng.delay()),
        7 if live > 0 => Step::ResetAt(pick(rng), rng.delay()),
        8 if live > 0 => Step::Remove(pick(rng)),
        9 => Step::Peek,
        10..=12 => Step::Advance(rng.advance()),
        13 => Step::Poll(1 + rng.below(3) as usize),
        14 | 15 => Step::Poll(usize::MAX),
        _ => Step::Insert(value(), rng.delay()),
    }
}

/// Applies `step` to `side` at `now` (the instant both sides read).
fn apply<Q: Queue>(
    side: &mut Side<Q>,
    step: Step,
    now: std::time::Instant,
    cx: &mut Context<'_>,
    out: &mut Vec<Out>,
) where
    Q::Key: PartialEq,
{
    let nth = |side: &Side<Q>, i: usize| side.keys.iter().nth(i).map(|(v, k)| (*v, *k)).unwrap();
    match step {
        Step::Insert(v, d) => {
            let key = side.queue.insert(v, ms(d));
            side.keys.insert(v, key);
        }
        Step::InsertAt(v, d) => {
            let key = side.queue.insert_at(v, now + ms(d));
            side.keys.insert(v, key);
        }
        Step::Reset(i, d) => {
            let (_, key) = nth(side, i);
            side.queue.reset(&key, ms(d));
        }
        Step::ResetAt(i, d) => {
            let (_, key) = nth(side, i);
            side.queue.reset_at(&key, now + ms(d));
        }
        Step::Remove(i) => {
            let (v, key) = nth(side, i);
            assert_eq!(side.queue.remove(&key), v);
            side.keys.remove(&v);
        }
        Step::Peek => {
            // Whether there is an item to name (which one: see the
            // module docs).
            let peeked = side.queue.peek().map(|key| side.value_of(key));
            out.push(match peeked {
                Some(_) => Out::Item(0, 0),
                None => Out::End,
            });
        }
        Step::Poll(n) => {
            for _ in 0..n {
                let polled = side.queue.poll(cx, side.start);
                out.push(polled);
                if let Out::Item(v, _) = polled {
                    side.keys.remove(&v);
                } else {
                    break;
                }
            }
        }
        Step::Advance(_) => {}
    }
}

fn seeds(default: u64) -> u64 {
    std::env::var("DQ_ORDER_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs script `seed` on hashwheel's tokio face and tokio-util's, on a
/// paused runtime; `Err` with the script up to the first difference.
fn tokio_face(seed: u64) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(tokio::task::unconstrained(async move {
        let start = Instant::now().into_std();
        let mut ours = Side {
            queue: hashwheel::DelayQueue::new(),
            keys: BTreeMap::new(),
            start,
        };
        let mut theirs = Side {
            queue: tokio_util::time::DelayQueue::new(),
            keys: BTreeMap::new(),
            start,
        };
        let mut rng = Rng::new(seed);
        let mut next_value = 0;
        let mut script = String::new();
        let steps = 20 + rng.below(120);
        for n in 0..steps {
            let step = random_step(&mut rng, &mut next_value, ours.keys.len(), false);
            let _ = writeln!(script, "{n}: {step:?}");
            if let Step::Advance(d) = step {
                tokio::time::advance(ms(d)).await;
                continue;
            }
            let now = Instant::now().into_std();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            poll_fn(|cx| {
                apply(&mut ours, step, now, cx, &mut a);
                apply(&mut theirs, step, now, cx, &mut b);
                Poll::Ready(())
            })
            .await;
            if a != b {
                return Err(format!(
                    "seed {seed}: hashwheel gave {a:?}, tokio-util {b:?}\n{script}"
                ));
            }
        }
        Ok(())
    }))
}

#[test]
fn the_tokio_face_hands_out_items_in_tokio_utils_order() {
    let mut failed = Vec::new();
    for seed in 0..seeds(2_000) {
        if let Err(err) = tokio_face(seed) {
            failed.push(err);
        }
    }
    let n = failed.len();
    assert!(
        failed.is_empty(),
        "{n} scripts differ; the first:\n{}",
        failed.first().map_or("", String::as_str)
    );
}

/// The case, on both faces: `a` and `b` due at 5 ms, then
/// `a` reset to 5 ms; tokio-util hands out `a` first.
#[test]
fn a_reset_to_the_same_deadline_moves_the_item_as_tokio_utils() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let order = rt.block_on(async {
        let mut queue = hashwheel::DelayQueue::new();
        let a = queue.insert("a", ms(5));
        queue.insert("b", ms(5));
        queue.reset(&a, ms(5));
        let mut order = Vec::new();
        while let Some(expired) = poll_fn(|cx| queue.poll_expired(cx)).await {
            order.push(expired.into_inner());
        }
        order
    });
    assert_eq!(order, ["a", "b"]);
    let mut queue = hashwheel::async_io::DelayQueue::new();
    let a = queue.insert("a", ms(5));
    queue.insert("b", ms(5));
    queue.reset(&a, ms(5));
    let order = futures::executor::block_on(async {
        let mut order = Vec::new();
        while let Some(expired) = poll_fn(|cx| queue.poll_expired(cx)).await {
            order.push(expired.into_inner());
        }
        order
    });
    assert_eq!(order, ["a", "b"]);
}

/// The longest delay of an executor-free batch, in milliseconds: its
/// scripts' deadlines all pass before the drain.
const BATCH_SPAN: u64 = 300;

/// hashwheel's executor-free face against tokio-util's: batches of steps
/// made before any poll (so that order is decided by the batch alone),
/// every deadline within [`BATCH_SPAN`], drained once all have passed.
#[test]
fn the_executor_free_face_hands_out_items_in_tokio_utils_order() {
    let n = seeds(500);
    // Made, and their batches applied, now; drained after BATCH_SPAN.
    let mut queues = Vec::new();
    let mut scripts = Vec::new();
    for seed in 0..n {
        let mut rng = Rng::new(seed ^ 0x5eed);
        let before = std::time::Instant::now();
        let mut queue = hashwheel::async_io::DelayQueue::new();
        // The queue's start: the deadline of an item at an instant before it.
        let past = queue.insert_at(0, before);
        let start = queue.deadline(&past);
        queue.remove(&past);
        let mut side = Side {
            queue,
            keys: BTreeMap::new(),
            start,
        };
        let mut steps = Vec::new();
        let mut next_value = 0;
        for _ in 0..(5 + rng.below(40)) {
            let mut step = random_step(&mut rng, &mut next_value, side.keys.len(), true);
            // Deadlines within the span, from the start (`insert` and
            // `reset` become their `_at` forms: std's clock moves on).
            step = match step {
                Step::Insert(v, d) | Step::InsertAt(v, d) => Step::InsertAt(v, d % BATCH_SPAN),
                Step::Reset(i, d) | Step::ResetAt(i, d) => Step::ResetAt(i, d % BATCH_SPAN),
                other => other,
            };
            let waker = futures::task::noop_waker();
            apply(
                &mut side,
                step,
                start,
                &mut Context::from_waker(&waker),
                &mut Vec::new(),
            );
            steps.push(step);
        }
        queues.push(side);
        scripts.push(steps);
    }
    std::thread::sleep(ms(BATCH_SPAN + 5));
    let mut failed = Vec::new();
    for (seed, (mut side, steps)) in queues.into_iter().zip(scripts).enumerate() {
        let ours = futures::executor::block_on(drain(&mut side));
        let theirs = tokio_util_batch(&steps);
        if ours != theirs {
            failed.push(format!(
                "seed {seed}: hashwheel gave {ours:?}, tokio-util {theirs:?}\n{steps:#?}"
            ));
        }
    }
    let n = failed.len();
    assert!(
        failed.is_empty(),
        "{n} batches differ; the first:\n{}",
        failed.first().map_or("", String::as_str)
    );
}

/// Polls `side` until its stream ends, waiting for each item.
async fn drain<Q: Queue>(side: &mut Side<Q>) -> Vec<u32> {
    let mut order = Vec::new();
    loop {
        match poll_fn(|cx| match side.queue.poll(cx, side.start) {
            Out::Pending => Poll::Pending,
            other => Poll::Ready(other),
        })
        .await
        {
            Out::Item(v, _) => order.push(v),
            _ => return order,
        }
    }
}

/// The order tokio-util's queue hands out the items of batch `steps`
/// (made at its start, on a paused runtime), drained after the span.
fn tokio_util_batch(steps: &[Step]) -> Vec<u32> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(tokio::task::unconstrained(async {
        let start = Instant::now().into_std();
        let mut side = Side {
            queue: tokio_util::time::DelayQueue::new(),
            keys: BTreeMap::new(),
            start,
        };
        // As on hashwheel's side: an item at the queue's start, removed.
        let past = side.queue.insert_at(0, Instant::from_std(start));
        side.queue.remove(&past);
        poll_fn(|cx| {
            for &step in steps {
                apply(&mut side, step, start, cx, &mut Vec::new());
            }
            Poll::Ready(())
        })
        .await;
        tokio::time::advance(ms(BATCH_SPAN + 5)).await;
        drain(&mut side).await
    }))
}
