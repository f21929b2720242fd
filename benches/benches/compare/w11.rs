//! W11: growth. Timers inserted one at a time up to N pending (60 s
//! deadlines spread over one second), every insert timed, then every one
//! reset and every one cancelled, each timed: p50 / p99 / p99.99 / worst
//! single operation and where the worst happened. Each contender in a child
//! process of its own, on a current-thread runtime.
//!
//! Each operation's time runs from one clock read to the next, so it holds
//! one `Instant::now()` (about 20–30 ns here) besides the operation; the
//! same for every contender.
//!
//! Second part: on a 2-worker runtime (`--w11-workers=N` for another
//! count), the lateness of a 1 ms interval (`tokio::time::interval`, the
//! same on tokio's alternative timer where built in, and a hashwheel one on
//! the growing timer) while another task grows a hashwheel `Timer`
//! (`sleep_until` + one poll, yielding every 1,024 inserts), and the
//! growing timer's longest driver turn (`Stats::longest_turn`): a turn that
//! stalls shows up in both.
//!
//! Third part (also alone: `--only=W11-bounds`): no insert may do work that
//! grows with the timer. One shard (`shards(1)`, so that every key lands in
//! one store) grown to 2^N keys (`--w11-bounds=N`, 24 by default), every
//! insert timed, in three child processes; for each power of two 2^j the
//! insert that reaches key 2^j and the one 256 keys later (where the old
//! page table doubled), and every boundary of the store's page directory
//! (a chunk every 262,144 keys), best of three. The handles and the
//! latency buffer are touched before the clock starts, so the page faults
//! timed are the timer's own.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hashwheel::{Timeout, Timer};
use tokio::time::{Instant, Sleep};

use crate::child::{self, get, need};
use crate::common::{best, current_thread, poll_once};
use crate::config::Config;
use crate::report::{lines, Line};

/// The contenders: (child name, name in the table).
const CONTENDERS: &[(&str, &str)] = &[
    // `sleep_until` + one poll; `reset_at`; drop.
    ("timer", "hashwheel Timer"),
    // `sleep_until` + one poll; `Sleep::reset`; drop.
    ("hwtime", "hashwheel::time"),
    // `insert_at`; `reset_at`; `remove`.
    ("hwdq", "hashwheel DelayQueue"),
    // `Box::pin(sleep_until)` + one poll; `Sleep::reset`; drop.
    ("tokio", "tokio::time (boxed Sleep)"),
    // `insert_at`; `reset_at`; `remove`.
    ("tokiodq", "tokio-util DelayQueue"),
];

/// The operations timed, in order.
const OPS: &[&str] = &["insert", "reset", "cancel"];

/// The figures of one operation's latencies, keyed `{op}_{figure}`.
fn tails(op: &str, lat: &[u32], out: &mut Vec<(String, f64)>) {
    let (at, worst) = lat
        .iter()
        .enumerate()
        .max_by_key(|(_, &ns)| ns)
        .map_or((0, 0), |(i, &ns)| (i, ns));
    let mut sorted = lat.to_vec();
    sorted.sort_unstable();
    let p = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64;
    out.push((format!("{op}_p50"), p(0.5)));
    out.push((format!("{op}_p99"), p(0.99)));
    out.push((format!("{op}_p9999"), p(0.9999)));
    out.push((format!("{op}_max"), worst as f64));
    out.push((format!("{op}_at"), at as f64));
}

/// Runs `op(i)` for `i` in `0..n`, timing each one into `lat` (which has
/// room for `n` already, so that pushing never reallocates).
fn timed(n: usize, lat: &mut Vec<u32>, mut op: impl FnMut(usize)) {
    lat.clear();
    let mut prev = std::time::Instant::now();
    for i in 0..n {
        op(i);
        let now = std::time::Instant::now();
        lat.push((now - prev).as_nanos().min(u32::MAX as u128) as u32);
        prev = now;
    }
}

/// The child: one contender grown to `--count` timers.
pub fn child(_cfg: &Config) {
    let which: String = need("contender");
    let n: usize = need("count");
    if which.starts_with("interval-") {
        return interval_child(&which, n);
    }
    let mut lat: Vec<u32> = vec![0; n];
    let mut figures = Vec::new();
    current_thread().block_on(async {
        let base = Instant::now() + Duration::from_secs(60);
        let deadline = |i: usize| base + Duration::from_nanos(1_000_000_000 * i as u64 / n as u64);
        let later = |i: usize| deadline(i) + Duration::from_millis(500);
        let each = |lat: &mut Vec<u32>,
                    figures: &mut Vec<(String, f64)>,
                    ops: [&mut dyn FnMut(usize); 3]| {
            for (op, f) in OPS.iter().zip(ops) {
                timed(n, lat, f);
                tails(op, lat, figures);
            }
        };
        match which.as_str() {
            "timer" => {
                let timer = Timer::new();
                let mut held: Vec<Option<Timeout>> = Vec::with_capacity(n);
                let held = std::cell::RefCell::new(&mut held);
                each(
                    &mut lat,
                    &mut figures,
                    [
                        &mut |i| {
                            let mut t = timer.sleep_until(deadline(i));
                            poll_once(Pin::new(&mut t));
                            held.borrow_mut().push(Some(t));
                        },
                        &mut |i| {
                            if let Some(t) = &mut held.borrow_mut()[i] {
                                t.reset_at(later(i));
                            }
                        },
                        &mut |i| drop(held.borrow_mut()[i].take()),
                    ],
                );
                assert_eq!(timer.pending(), 0);
            }
            "hwtime" => {
                let mut held: Vec<Option<hashwheel::time::Sleep>> = Vec::with_capacity(n);
                let held = std::cell::RefCell::new(&mut held);
                each(
                    &mut lat,
                    &mut figures,
                    [
                        &mut |i| {
                            let mut s = hashwheel::time::sleep_until(deadline(i));
                            poll_once(Pin::new(&mut s));
                            held.borrow_mut().push(Some(s));
                        },
                        &mut |i| {
                            if let Some(s) = &mut held.borrow_mut()[i] {
                                Pin::new(s).reset(later(i));
                            }
                        },
                        &mut |i| drop(held.borrow_mut()[i].take()),
                    ],
                );
            }
            "hwdq" => {
                let dq = std::cell::RefCell::new(hashwheel::DelayQueue::new());
                let mut keys = Vec::with_capacity(n);
                let keys = std::cell::RefCell::new(&mut keys);
                each(
                    &mut lat,
                    &mut figures,
                    [
                        &mut |i| {
                            keys.borrow_mut()
                                .push(dq.borrow_mut().insert_at((), deadline(i)))
                        },
                        &mut |i| dq.borrow_mut().reset_at(&keys.borrow()[i], later(i)),
                        &mut |i| {
                            std::hint::black_box(dq.borrow_mut().remove(&keys.borrow()[i]));
                        },
                    ],
                );
            }
            "tokio" => {
                let mut held: Vec<Option<Pin<Box<Sleep>>>> = Vec::with_capacity(n);
                let held = std::cell::RefCell::new(&mut held);
                each(
                    &mut lat,
                    &mut figures,
                    [
                        &mut |i| {
                            let mut s = Box::pin(tokio::time::sleep_until(deadline(i)));
                            poll_once(s.as_mut());
                            held.borrow_mut().push(Some(s));
                        },
                        &mut |i| {
                            if let Some(s) = &mut held.borrow_mut()[i] {
                                s.as_mut().reset(later(i));
                            }
                        },
                        &mut |i| drop(held.borrow_mut()[i].take()),
                    ],
                );
            }
            "tokiodq" => {
                let dq = std::cell::RefCell::new(tokio_util::time::DelayQueue::new());
                let mut keys = Vec::with_capacity(n);
                let keys = std::cell::RefCell::new(&mut keys);
                each(
                    &mut lat,
                    &mut figures,
                    [
                        &mut |i| {
                            keys.borrow_mut()
                                .push(dq.borrow_mut().insert_at((), deadline(i)))
                        },
                        &mut |i| dq.borrow_mut().reset_at(&keys.borrow()[i], later(i)),
                        &mut |i| {
                            std::hint::black_box(dq.borrow_mut().remove(&keys.borrow()[i]));
                        },
                    ],
                );
            }
            other => panic!("W11: unknown contender {other}"),
        }
    });
    let figures: Vec<(&str, f64)> = figures.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    child::report(&figures);
}

/// The interval child: a 1 ms interval (`interval-tokio` or
/// `interval-hashwheel`, the latter on the growing timer) while another
/// task grows a hashwheel `Timer` to `n`; prints its lateness.
fn interval_child(which: &str, n: usize) {
    let workers: usize = need("workers");
    let rt = child::runtime(&format!("{workers}w"), which == "interval-alt");
    let timer = rt.block_on(async { Timer::new() });
    let done = Arc::new(AtomicBool::new(false));
    let period = Duration::from_millis(1);
    let ticker = {
        let (timer, done, which) = (timer.clone(), done.clone(), which.to_string());
        rt.spawn(async move {
            let mut late: Vec<u64> = Vec::with_capacity(1 << 16);
            fn record(due: impl Into<Instant>, late: &mut Vec<u64>) {
                // Whichever `Instant` the interval hands out (tokio's, or
                // std's where hashwheel takes std's).
                let due: Instant = due.into();
                late.push(Instant::now().saturating_duration_since(due).as_micros() as u64);
            }
            if which == "interval-tokio" || which == "interval-alt" {
                let mut iv = tokio::time::interval(period);
                while !done.load(Ordering::Relaxed) {
                    let due = iv.tick().await;
                    record(due, &mut late);
                }
            } else {
                let mut iv = timer.interval(period);
                while !done.load(Ordering::Relaxed) {
                    let due = iv.tick().await;
                    record(due, &mut late);
                }
            }
            late
        })
    };
    let grow_start = std::time::Instant::now();
    let grower = {
        let (timer, done) = (timer.clone(), done.clone());
        rt.spawn(async move {
            // Let the interval settle first.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let base = Instant::now() + Duration::from_secs(60);
            let mut held: Vec<Timeout> = Vec::with_capacity(n);
            for i in 0..n {
                let d = base + Duration::from_nanos(1_000_000_000 * i as u64 / n as u64);
                let mut t = timer.sleep_until(d);
                poll_once(Pin::new(&mut t));
                held.push(t);
                if i % 1024 == 1023 {
                    tokio::task::yield_now().await;
                }
            }
            done.store(true, Ordering::Relaxed);
            held
        })
    };
    let held = rt.block_on(grower).expect("grower");
    let grow_ms = grow_start.elapsed().as_secs_f64() * 1e3;
    let mut late = rt.block_on(ticker).expect("ticker");
    // The driver's longest turn over the whole run (exact, kept by the
    // driver): a stall under the shard lock would show here too.
    let longest_turn_us = timer.stats().longest_turn.as_secs_f64() * 1e6;
    assert_eq!(timer.pending(), held.len());
    late.sort_unstable();
    let p = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize] as f64;
    child::report(&[
        ("ticks", late.len() as f64),
        ("late_p50_us", p(0.5)),
        ("late_p99_us", p(0.99)),
        ("late_max_us", p(1.0)),
        ("grow_ms", grow_ms),
        ("longest_turn_us", longest_turn_us),
    ]);
}

pub fn w11(cfg: &Config) -> Vec<Line> {
    let n = cfg.w11_count;
    eprintln!("W11: {n} inserts, resets and cancels per contender; each in a child process");
    let mut runs: Vec<(&'static str, Vec<(String, f64)>)> = Vec::new();
    for (which, name) in CONTENDERS {
        let figures = child::run(
            "W11",
            &[("contender", which.to_string()), ("count", n.to_string())],
        );
        eprintln!(
            "W11: {which}: insert worst {:.0} ns at #{}",
            get(&figures, "insert_max"),
            get(&figures, "insert_at")
        );
        runs.push((name, figures));
    }
    let ours = CONTENDERS[0].1;
    let mut out = Vec::new();
    for op in OPS {
        for (fig, label, chart) in [
            ("p50", "p50", "p50"),
            ("p99", "p99", "p99"),
            ("p9999", "p99.99", "p99.99"),
            ("max", "worst", "worst"),
        ] {
            let key = format!("{op}_{fig}");
            let per: Vec<(&'static str, Vec<f64>)> =
                runs.iter().map(|(c, f)| (*c, vec![get(f, &key)])).collect();
            let chart_key: &'static str = match (*op, chart) {
                ("insert", "p50") => "W11 insert p50",
                ("insert", "p99") => "W11 insert p99",
                ("insert", "p99.99") => "W11 insert p99.99",
                ("insert", _) => "W11 insert worst",
                ("reset", "p50") => "W11 reset p50",
                ("reset", "p99") => "W11 reset p99",
                ("reset", "p99.99") => "W11 reset p99.99",
                ("reset", _) => "W11 reset worst",
                (_, "p50") => "W11 cancel p50",
                (_, "p99") => "W11 cancel p99",
                (_, "p99.99") => "W11 cancel p99.99",
                _ => "W11 cancel worst",
            };
            out.extend(
                lines(
                    "W11",
                    &format!("growth to {n}: {op} {label}, ns"),
                    &per,
                    ours,
                )
                .places(0)
                .chart(Some(chart_key))
                .rows(),
            );
        }
        let at: Vec<(&'static str, Vec<f64>)> = runs
            .iter()
            .map(|(c, f)| (*c, vec![get(f, &format!("{op}_at"))]))
            .collect();
        // An index: no ratio.
        out.extend(
            lines(
                "W11",
                &format!("growth to {n}: {op} worst at operation #"),
                &at,
                ours,
            )
            .floor(Some(ours))
            .places(0)
            .check(true)
            .rows(),
        );
    }
    // The interval's lateness while a Timer grows, and the growing timer's
    // longest driver turn (`Stats::longest_turn`).
    let grow = cfg.w11_grow;
    let workers = cfg.w11_workers;
    let on = if workers == 1 {
        "1 worker".to_string()
    } else {
        format!("{workers} workers")
    };
    let mut iv = Vec::new();
    let mut intervals = vec![
        ("interval-tokio", "tokio::time::interval"),
        ("interval-hashwheel", "hashwheel Timer::interval"),
    ];
    if child::ALT_TIMER {
        intervals.push(("interval-alt", "tokio::time::interval, alternative timer"));
    }
    for (which, name) in intervals {
        let f = child::run(
            "W11",
            &[
                ("contender", which.to_string()),
                ("count", grow.to_string()),
                ("workers", workers.to_string()),
            ],
        );
        eprintln!(
            "W11: {which}: {} ticks while growing to {grow} in {:.0} ms",
            get(&f, "ticks"),
            get(&f, "grow_ms")
        );
        iv.push((name, f));
    }
    let ticks: Vec<(&'static str, Vec<f64>)> = iv
        .iter()
        .map(|(c, f)| (*c, vec![get(f, "ticks")]))
        .collect();
    out.extend(
        lines(
            "W11",
            &format!("1 ms interval ticks seen while a Timer grows to {grow} ({on})"),
            &ticks,
            "hashwheel Timer::interval",
        )
        .places(0)
        .check(true)
        .rows(),
    );
    for (key, label) in [
        ("late_p50_us", "p50"),
        ("late_p99_us", "p99"),
        ("late_max_us", "worst"),
    ] {
        let per: Vec<(&'static str, Vec<f64>)> = iv
            .iter()
            .map(|(c, f)| (*c, vec![get(f, key) / 1e3]))
            .collect();
        out.extend(
            lines(
                "W11",
                &format!(
                    "1 ms interval lateness {label}, ms, while a Timer grows to {grow} ({on})"
                ),
                &per,
                "hashwheel Timer::interval",
            )
            .places(3)
            .rows(),
        );
    }
    // Only the growing hashwheel timer has a driver of its own to time.
    let turn: Vec<(&'static str, Vec<f64>)> = iv
        .iter()
        .filter(|(c, _)| *c == "hashwheel Timer::interval")
        .map(|(c, f)| (*c, vec![get(f, "longest_turn_us") / 1e3]))
        .collect();
    out.extend(
        lines(
            "W11",
            &format!("longest driver turn, ms, while a Timer grows to {grow} ({on})"),
            &turn,
            "hashwheel Timer::interval",
        )
        .places(3)
        .rows(),
    );
    out
}

/// Keys per chunk of the store's page directory: 1,024 pages of 256.
const CHUNK_KEYS: usize = 1 << 18;

/// The boundary child: one shard grown to `2^bits + 512` keys, every insert
/// timed; prints the inserts at the boundaries.
pub fn bounds_child(_cfg: &Config) {
    let bits: u32 = need("bits");
    let n = (1usize << bits) + 512;
    // Touched up front (not a zeroed allocation the kernel maps lazily).
    let mut lat: Vec<u32> = vec![1; n];
    let mut held: Vec<Option<Timeout>> = (0..n).map(|_| None).collect();
    current_thread().block_on(async {
        let timer = Timer::builder().shards(1).build().expect("timer");
        let base = Instant::now() + Duration::from_secs(60);
        timed(n, &mut lat, |i| {
            let d = base + Duration::from_nanos(1_000_000_000 * i as u64 / n as u64);
            let mut t = timer.sleep_until(d);
            poll_once(Pin::new(&mut t));
            held[i] = Some(t);
        });
        assert_eq!(timer.pending(), n);
    });
    // A fresh shard hands out keys in order: insert `i` takes key `i`.
    let mut figures: Vec<(String, f64)> = Vec::new();
    for j in 10..=bits {
        figures.push((format!("pow_{j}"), f64::from(lat[1 << j])));
        figures.push((format!("pow256_{j}"), f64::from(lat[(1 << j) + 256])));
    }
    for k in (CHUNK_KEYS..n).step_by(CHUNK_KEYS) {
        figures.push((format!("chunk_{}", k / CHUNK_KEYS), f64::from(lat[k])));
    }
    let mut pages: Vec<u32> = lat.iter().step_by(256).copied().collect();
    pages.sort_unstable();
    figures.push(("page_p50".into(), f64::from(pages[pages.len() / 2])));
    let (at, worst) = lat
        .iter()
        .enumerate()
        .max_by_key(|(_, &ns)| ns)
        .map_or((0, 0), |(i, &ns)| (i, ns));
    figures.push(("worst".into(), f64::from(worst)));
    figures.push(("worst_at".into(), at as f64));
    drop(held);
    let figures: Vec<(&str, f64)> = figures.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    child::report(&figures);
}

/// W11's third part: the insert at each boundary of one shard's tables,
/// best of three child processes (see the module docs).
pub fn bounds(cfg: &Config) -> Vec<Line> {
    const ROUNDS: usize = 3;
    let bits = cfg.w11_bounds;
    if bits == 0 {
        eprintln!("W11: boundaries left out (--w11-bounds=0)");
        return Vec::new();
    }
    eprintln!("W11: one shard grown to 2^{bits} keys, every insert timed, {ROUNDS} rounds");
    let runs: Vec<_> = (0..ROUNDS)
        .map(|_| child::run("W11-bounds", &[("bits", bits.to_string())]))
        .collect();
    let ours = "hashwheel Timer";
    let us = |key: &str| -> Vec<f64> { runs.iter().map(|f| get(f, key) / 1e3).collect() };
    let mut out = Vec::new();
    let mut worst_boundary: (f64, String) = (0.0, String::new());
    let line = |figure: String, rounds: Vec<f64>, out: &mut Vec<Line>| {
        out.extend(
            lines("W11", &figure, &[(ours, rounds)], ours)
                .places(1)
                .rows(),
        );
    };
    for j in 10..=bits {
        for (key, what) in [
            (format!("pow_{j}"), format!("key 2^{j}")),
            (format!("pow256_{j}"), format!("key 2^{j} + 256")),
        ] {
            let rounds = us(&key);
            if best(&rounds) > worst_boundary.0 {
                worst_boundary = (best(&rounds), what.clone());
            }
            line(
                format!("one shard: the insert at {what}, µs (best of {ROUNDS})"),
                rounds,
                &mut out,
            );
        }
    }
    let chunks = ((1usize << bits) + 512) / CHUNK_KEYS;
    let mut chunk_worst: (f64, usize) = (0.0, 0);
    for k in 1..=chunks {
        let b = best(&us(&format!("chunk_{k}")));
        if b > chunk_worst.0 {
            chunk_worst = (b, k);
        }
    }
    if chunk_worst.1 > 0 {
        line(
            format!(
                "one shard: worst directory-chunk boundary (every 262,144 keys, best of {ROUNDS} each), µs, at key {}",
                chunk_worst.1 * CHUNK_KEYS
            ),
            vec![chunk_worst.0],
            &mut out,
        );
        if chunk_worst.0 > worst_boundary.0 {
            worst_boundary = (chunk_worst.0, format!("key {}", chunk_worst.1 * CHUNK_KEYS));
        }
    }
    line(
        format!(
            "one shard to 2^{bits}: worst boundary insert (best of {ROUNDS} each), µs, at {}",
            worst_boundary.1
        ),
        vec![worst_boundary.0],
        &mut out,
    );
    line(
        format!("one shard to 2^{bits}: p50 of the inserts that open a page, µs"),
        us("page_p50"),
        &mut out,
    );
    line(
        format!("one shard to 2^{bits}: worst single insert of the run (reported, not judged), µs"),
        us("worst"),
        &mut out,
    );
    eprintln!(
        "W11: worst single insert at #{:?}",
        runs.iter().map(|f| get(f, "worst_at")).collect::<Vec<_>>()
    );
    out
}
