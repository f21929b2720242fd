//! Per-operation cost against `tokio::time` and tokio-util's `DelayQueue`:
//! W1 (schedule + cancel), W2 (hold N pending timeouts: time and bytes), W3
//! (reset), and W5 (W1 on two threads at once).

use std::pin::{pin, Pin};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use futures::StreamExt;
use hashwheel::{Timeout, Timer};
use tokio::runtime::Runtime;
use tokio::time::{Instant, Sleep};
use tokio_util::time::{delay_queue, DelayQueue};

use crate::alloc::{counted, shrunk_bytes};
use crate::common::{best, current_thread, per, poll_once, thread_cpu_time, two_workers, Rng, D30};
use crate::config::Config;
use crate::report::Row;

// W1: schedule + cancel on one thread.

fn w1_hashwheel(timer: &Timer, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let mut t = timer.sleep(D30);
        std::hint::black_box(poll_once(Pin::new(&mut t)));
        drop(t);
    }
    per(start.elapsed(), n)
}

fn w1_tokio(n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let s = pin!(tokio::time::sleep(D30));
        std::hint::black_box(poll_once(s));
    }
    per(start.elapsed(), n)
}

fn w1_delay_queue(dq: &mut DelayQueue<()>, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let key = dq.insert((), D30);
        std::hint::black_box(dq.remove(&key));
    }
    per(start.elapsed(), n)
}

/// Timers pending in W1's second form, all due before the measured one.
pub const W1_EARLIER: usize = 10_000;

/// W1 both ways: alone (each new timer is the earliest, so tokio unparks
/// its driver with a syscall on every insert) and with [`W1_EARLIER`]
/// timers pending that are due before the measured one (10–20 s against
/// 30 s), as in a server, with the driver parked once after they were
/// registered. Each form on a current-thread runtime of its own, the two
/// forms and the three contenders interleaved.
pub fn w1(cfg: &Config) -> (f64, Vec<Row>) {
    let alone = current_thread();
    let loaded = current_thread();
    let (timer, mut dq) = alone.block_on(async { (Timer::new(), DelayQueue::new()) });
    let (timer_l, mut dq_l, held) = loaded.block_on(async {
        let timer = Timer::new();
        let mut dq = DelayQueue::new();
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut held = (Vec::new(), Vec::new());
        for _ in 0..W1_EARLIER {
            let d = rng.millis(10_000, 20_000);
            let mut t = timer.sleep(d);
            poll_once(Pin::new(&mut t));
            held.0.push(t);
            let mut s = Box::pin(tokio::time::sleep(d));
            poll_once(s.as_mut());
            held.1.push(s);
            dq.insert((), d);
        }
        // Let the runtime's driver park once: tokio records its next wake
        // only when it parks or turns (until then it has none, and unparks
        // itself on every insert as if each were the earliest).
        tokio::time::sleep(Duration::from_millis(2)).await;
        (timer, dq, held)
    });
    // Warm up: grow the slabs.
    alone.block_on(async {
        w1_hashwheel(&timer, 1000);
        w1_tokio(1000);
        w1_delay_queue(&mut dq, 1000);
    });
    loaded.block_on(async {
        w1_hashwheel(&timer_l, 1000);
        w1_tokio(1000);
        w1_delay_queue(&mut dq_l, 1000);
    });
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let (mut al, mut bl, mut cl) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cfg.reps {
        alone.block_on(async {
            a.push(w1_hashwheel(&timer, cfg.w1_pairs));
            b.push(w1_tokio(cfg.w1_pairs));
            c.push(w1_delay_queue(&mut dq, cfg.w1_pairs));
        });
        loaded.block_on(async {
            al.push(w1_hashwheel(&timer_l, cfg.w1_pairs));
            bl.push(w1_tokio(cfg.w1_pairs));
            cl.push(w1_delay_queue(&mut dq_l, cfg.w1_pairs));
        });
    }
    assert_eq!(timer_l.pending(), held.0.len());
    let ours = best(&a);
    (
        ours,
        vec![
            Row::new("W1", "schedule + cancel, ns/pair", ours)
                .tokio(best(&b))
                .dq(best(&c))
                .chart("W1"),
            Row::new(
                "W1",
                format!(
                    "schedule + cancel, {} earlier timers pending, ns/pair",
                    W1_EARLIER
                ),
                best(&al),
            )
            .tokio(best(&bl))
            .dq(best(&cl))
            .chart("W1 loaded"),
        ],
    )
}

// ---------------------------------------------------------------------------
// W2: hold N pending timeouts.

pub fn w2(cfg: &Config) -> Vec<Row> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let delays: Vec<Duration> = (0..cfg.w2_hold)
        .map(|_| rng.millis(1_000, 60_000))
        .collect();
    let n = delays.len();

    let (ours_ns, ours_b, ours_shrunk) = current_thread().block_on(async {
        let timer = Timer::new();
        let mut hold: Vec<Timeout> = Vec::with_capacity(n);
        let (ns, b) = counted(&delays, &mut hold, |d| {
            let mut t = timer.sleep(d);
            poll_once(Pin::new(&mut t));
            t
        });
        assert_eq!(timer.pending(), n);
        let shrunk = shrunk_bytes(b, n, || {
            timer.shrink();
        });
        let handle = std::mem::size_of::<Timeout>() as f64;
        (ns, b + handle, shrunk + handle)
    });
    let (tokio_ns, tokio_b) = current_thread().block_on(async {
        let mut hold: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
        let (ns, b) = counted(&delays, &mut hold, |d| {
            let mut s = Box::pin(tokio::time::sleep(d));
            poll_once(s.as_mut());
            s
        });
        (ns, b + std::mem::size_of::<Pin<Box<Sleep>>>() as f64)
    });
    let (dq_ns, dq_b, dq_shrunk) = current_thread().block_on(async {
        let mut dq = DelayQueue::new();
        let mut hold: Vec<delay_queue::Key> = Vec::with_capacity(n);
        let (ns, b) = counted(&delays, &mut hold, |d| dq.insert((), d));
        poll_once(pin!(dq.next()));
        let shrunk = shrunk_bytes(b, n, || dq.shrink_to_fit());
        let handle = std::mem::size_of::<delay_queue::Key>() as f64;
        (ns, b + handle, shrunk + handle)
    });
    vec![
        Row::new("W2", "hold: ns/insert", ours_ns)
            .tokio(tokio_ns)
            .dq(dq_ns)
            .chart("W2 ns"),
        Row::new("W2", "hold: bytes/timer (heap + handle)", ours_b)
            .tokio(tokio_b)
            .dq(dq_b)
            .chart("W2 bytes"),
        Row::new(
            "W2",
            "hold: bytes/timer after Timer::shrink / DelayQueue::shrink_to_fit",
            ours_shrunk,
        )
        .tokio(tokio_b)
        .dq(dq_shrunk),
    ]
}

// ---------------------------------------------------------------------------
// W3: reset registered timeouts, 10 times each.

pub const RESETS: usize = 10;

pub fn reset_offset(i: usize) -> Duration {
    D30 + Duration::from_millis((i % 1000) as u64)
}

pub fn w3(cfg: &Config) -> Row {
    let n = cfg.w3_timers;
    let (ours, tokio, dq) = current_thread().block_on(async {
        let timer = Timer::new();
        let mut ours: Vec<Timeout> = (0..n).map(|_| timer.sleep(D30)).collect();
        for t in &mut ours {
            poll_once(Pin::new(t));
        }
        let mut sleeps: Vec<Pin<Box<Sleep>>> =
            (0..n).map(|_| Box::pin(tokio::time::sleep(D30))).collect();
        for s in &mut sleeps {
            poll_once(s.as_mut());
        }
        let mut dq = DelayQueue::new();
        let keys: Vec<delay_queue::Key> = (0..n).map(|_| dq.insert((), D30)).collect();

        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..cfg.reps {
            let start = Instant::now();
            for _ in 0..RESETS {
                let now = Instant::now();
                for (i, t) in ours.iter_mut().enumerate() {
                    t.reset_at(now + reset_offset(i));
                }
            }
            a.push(per(start.elapsed(), n * RESETS));

            let start = Instant::now();
            for _ in 0..RESETS {
                let now = Instant::now();
                for (i, s) in sleeps.iter_mut().enumerate() {
                    s.as_mut().reset(now + reset_offset(i));
                }
            }
            b.push(per(start.elapsed(), n * RESETS));

            let start = Instant::now();
            for _ in 0..RESETS {
                let now = Instant::now();
                for (i, k) in keys.iter().enumerate() {
                    dq.reset_at(k, now + reset_offset(i));
                }
            }
            c.push(per(start.elapsed(), n * RESETS));
        }
        assert_eq!(timer.pending(), n);
        (best(&a), best(&b), best(&c))
    });
    Row::new("W3", "reset, ns/reset", ours)
        .tokio(tokio)
        .dq(dq)
        .chart("W3")
}

// ---------------------------------------------------------------------------
// W5: W1 on two threads at once.

/// Runs `work` on both workers at once; returns wall ns per pair over all
/// pairs, and thread CPU ns per pair (which shows contention apart from a
/// lack of free cores on a shared machine).
fn on_two_workers(
    rt: &Runtime,
    n: usize,
    work: impl Fn(usize) + Send + Sync + 'static,
) -> (f64, f64) {
    let work = Arc::new(work);
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (work, barrier) = (work.clone(), barrier.clone());
            rt.spawn(async move {
                barrier.wait();
                let start = Instant::now();
                let cpu = thread_cpu_time();
                work(n);
                (start, Instant::now(), thread_cpu_time() - cpu)
            })
        })
        .collect();
    let spans: Vec<(Instant, Instant, Duration)> = rt.block_on(async {
        let mut spans = Vec::new();
        for h in handles {
            spans.push(h.await.unwrap());
        }
        spans
    });
    let start = spans.iter().map(|s| s.0).min().unwrap();
    let end = spans.iter().map(|s| s.1).max().unwrap();
    let cpu: Duration = spans.iter().map(|s| s.2).sum();
    (per(end - start, 2 * n), per(cpu, 2 * n))
}

pub fn w5(cfg: &Config) -> (f64, f64, Vec<Row>) {
    let rt = two_workers();
    let timer = rt.block_on(async { Timer::new() });
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..cfg.reps {
        let t = timer.clone();
        a.push(on_two_workers(&rt, cfg.w1_pairs, move |n| {
            w1_hashwheel(&t, n);
        }));
        b.push(on_two_workers(&rt, cfg.w1_pairs, |n| {
            w1_tokio(n);
        }));
    }
    let wall = |v: &[(f64, f64)]| best(&v.iter().map(|r| r.0).collect::<Vec<_>>());
    let cpu = |v: &[(f64, f64)]| best(&v.iter().map(|r| r.1).collect::<Vec<_>>());
    let ours = wall(&a);
    (
        ours,
        cpu(&a),
        vec![
            Row::new("W5", "2 threads: wall ns/pair", ours).tokio(wall(&b)),
            Row::new("W5", "2 threads: thread CPU ns/pair", cpu(&a)).tokio(cpu(&b)),
        ],
    )
}
