//! Q1–Q4: hashwheel's `DelayQueue` against tokio-util's, same workloads, same
//! run. The hashwheel column is hashwheel's `DelayQueue`; the DelayQueue
//! column is tokio-util's.

use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::time::{delay_queue, DelayQueue};

use crate::alloc::{counted, shrunk_bytes};
use crate::common::{best, current_thread, per, percentile, Rng, D30};
use crate::config::Config;
use crate::ops::{reset_offset, RESETS};
use crate::report::Row;

/// What Q1–Q4 do to a keyed queue, for both queues.
trait KeyedQueue<V>: Sized {
    type Key;
    fn make() -> Self;
    fn insert(&mut self, value: V, delay: Duration) -> Self::Key;
    fn insert_at(&mut self, value: V, at: Instant) -> Self::Key;
    fn remove(&mut self, key: &Self::Key) -> V;
    fn reset_at(&mut self, key: &Self::Key, at: Instant);
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<V>>;
    fn shrink_to_fit(&mut self);
}

macro_rules! keyed_queue {
    ($queue:ident, $key:ty) => {
        impl<V> KeyedQueue<V> for $queue<V> {
            type Key = $key;
            fn make() -> Self {
                $queue::new()
            }
            fn insert(&mut self, value: V, delay: Duration) -> $key {
                $queue::insert(self, value, delay)
            }
            fn insert_at(&mut self, value: V, at: Instant) -> $key {
                $queue::insert_at(self, value, at)
            }
            fn remove(&mut self, key: &$key) -> V {
                $queue::remove(self, key).into_inner()
            }
            fn reset_at(&mut self, key: &$key, at: Instant) {
                $queue::reset_at(self, key, at)
            }
            fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<V>> {
                $queue::poll_expired(self, cx).map(|e| e.map(|e| e.into_inner()))
            }
            fn shrink_to_fit(&mut self) {
                $queue::shrink_to_fit(self)
            }
        }
    };
}

use hashwheel::DelayQueue as HwQueue;
keyed_queue!(HwQueue, hashwheel::delay_queue::Key);
keyed_queue!(DelayQueue, delay_queue::Key);

fn q1_run<Q: KeyedQueue<()>>(queue: &mut Q, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let key = queue.insert((), D30);
        queue.remove(std::hint::black_box(&key));
    }
    per(start.elapsed(), n)
}

pub fn q1(cfg: &Config) -> Row {
    let (ours, theirs) = current_thread().block_on(async {
        let mut hw = HwQueue::new();
        let mut dq = DelayQueue::new();
        q1_run(&mut hw, 1000);
        q1_run(&mut dq, 1000);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..cfg.reps {
            a.push(q1_run(&mut hw, cfg.q_pairs));
            b.push(q1_run(&mut dq, cfg.q_pairs));
        }
        (best(&a), best(&b))
    });
    Row::new("Q1", "keyed queue: insert + remove, ns/pair", ours)
        .dq(theirs)
        .chart("Q1")
}

/// Q2 on one queue: ns per insert, bytes per item (heap + key) before and
/// after `shrink_to_fit`.
fn q2_run<Q: KeyedQueue<()>>(delays: &[Duration]) -> (f64, f64, f64) {
    current_thread().block_on(async {
        let mut queue = Q::make();
        let mut hold: Vec<Q::Key> = Vec::with_capacity(delays.len());
        let (ns, bytes) = counted(delays, &mut hold, |d| queue.insert((), d));
        let shrunk = shrunk_bytes(bytes, delays.len(), || queue.shrink_to_fit());
        let key = std::mem::size_of::<Q::Key>() as f64;
        (ns, bytes + key, shrunk + key)
    })
}

pub fn q2(cfg: &Config) -> Vec<Row> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let delays: Vec<Duration> = (0..cfg.q_hold).map(|_| rng.millis(1_000, 60_000)).collect();
    // Interleaved, best of `reps` for the time (the bytes are the same
    // every run).
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..cfg.reps {
        ours.push(q2_run::<HwQueue<()>>(&delays));
        theirs.push(q2_run::<DelayQueue<()>>(&delays));
    }
    let ns = |runs: &[(f64, f64, f64)]| best(&runs.iter().map(|r| r.0).collect::<Vec<_>>());
    let (_, ours_b, ours_shrunk) = ours[0];
    let (_, dq_b, dq_shrunk) = theirs[0];
    vec![
        Row::new("Q2", "keyed queue hold: ns/insert", ns(&ours))
            .dq(ns(&theirs))
            .chart("Q2 ns"),
        Row::new("Q2", "keyed queue hold: bytes/item (heap + key)", ours_b)
            .dq(dq_b)
            .chart("Q2 bytes"),
        Row::new(
            "Q2",
            "keyed queue hold: bytes/item after shrink_to_fit",
            ours_shrunk,
        )
        .dq(dq_shrunk),
    ]
}

fn q3_pass<Q: KeyedQueue<()>>(queue: &mut Q, keys: &[Q::Key]) -> f64 {
    let start = Instant::now();
    for _ in 0..RESETS {
        let now = Instant::now();
        for (i, key) in keys.iter().enumerate() {
            queue.reset_at(key, now + reset_offset(i));
        }
    }
    per(start.elapsed(), keys.len() * RESETS)
}

pub fn q3(cfg: &Config) -> Row {
    let n = cfg.q_items;
    let (ours, theirs) = current_thread().block_on(async {
        let mut hw = HwQueue::new();
        let hw_keys: Vec<_> = (0..n).map(|_| hw.insert((), D30)).collect();
        let mut dq = DelayQueue::new();
        let dq_keys: Vec<_> = (0..n).map(|_| dq.insert((), D30)).collect();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..cfg.reps {
            a.push(q3_pass(&mut hw, &hw_keys));
            b.push(q3_pass(&mut dq, &dq_keys));
        }
        assert_eq!(hw.len(), n);
        (best(&a), best(&b))
    });
    Row::new("Q3", "keyed queue: reset, ns/reset", ours)
        .dq(theirs)
        .chart("Q3")
}

/// Inserts `n` items due evenly over one second from `base`, each holding
/// its deadline.
fn q4_fill<Q: KeyedQueue<Instant>>(n: usize, base: Instant) -> Q {
    let mut queue = Q::make();
    for i in 0..n {
        let at = base + Duration::from_secs(1) * i as u32 / n as u32;
        queue.insert_at(at, at);
    }
    queue
}

/// Q4, throughput: `n` items due within a second, all due by the time the
/// drain starts; ns per item drained through the `Stream`-style poll.
async fn q4_drain<Q: KeyedQueue<Instant>>(n: usize) -> f64 {
    let base = Instant::now();
    let mut queue = q4_fill::<Q>(n, base);
    tokio::time::sleep_until(base + Duration::from_millis(1_005)).await;
    let start = Instant::now();
    let mut count = 0;
    while let Some(at) = poll_fn(|cx| queue.poll_expired(cx)).await {
        std::hint::black_box(at);
        count += 1;
    }
    let ns = per(start.elapsed(), n);
    assert_eq!(count, n, "items lost");
    ns
}

/// Q4, in real time: the drain runs as the items come due; lateness of
/// each (µs, signed: negative = early), sorted.
async fn q4_live<Q: KeyedQueue<Instant>>(n: usize) -> Vec<i64> {
    let base = Instant::now() + Duration::from_millis(50);
    let mut queue = q4_fill::<Q>(n, base);
    let mut late = Vec::with_capacity(n);
    while let Some(at) = poll_fn(|cx| queue.poll_expired(cx)).await {
        let now = Instant::now();
        late.push(match now.checked_duration_since(at) {
            Some(l) => l.as_micros() as i64,
            None => -(at.duration_since(now).as_micros() as i64) - 1,
        });
    }
    assert_eq!(late.len(), n, "items lost");
    late.sort_unstable();
    late
}

pub fn q4(cfg: &Config) -> Vec<Row> {
    let n = cfg.q_expire;
    let rt = current_thread();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        a.push(rt.block_on(q4_drain::<HwQueue<Instant>>(n)));
        b.push(rt.block_on(q4_drain::<DelayQueue<Instant>>(n)));
    }
    let rate = |ns: f64| 1e3 / ns;
    let ours_live = rt.block_on(q4_live::<HwQueue<Instant>>(n));
    let dq_live = rt.block_on(q4_live::<DelayQueue<Instant>>(n));
    let early = |late: &[i64]| late.iter().filter(|&&l| l < 0).count() as f64;
    assert_eq!(
        early(&ours_live),
        0.0,
        "hashwheel's DelayQueue yielded early"
    );
    let row = |figure: &str, p: f64| {
        Row::new("Q4", figure, percentile(&ours_live, p))
            .dq(percentile(&dq_live, p))
            .places(3)
    };
    vec![
        Row::new(
            "Q4",
            "keyed queue expire: M items/s drained through the Stream",
            rate(best(&a)),
        )
        .dq(rate(best(&b)))
        .places(2)
        .rate()
        .chart("Q4 rate"),
        Row::new(
            "Q4",
            "keyed queue expire, real time: items early (must be 0)",
            early(&ours_live),
        )
        .dq(early(&dq_live))
        .places(0),
        row("keyed queue expire, real time: lateness p50, ms", 0.5),
        row("keyed queue expire, real time: lateness p99, ms", 0.99),
    ]
}
