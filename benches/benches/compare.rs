//! Side-by-side comparison of hashwheel with `tokio::time` and tokio-util's
//! `DelayQueue` on the workloads of WORKLOADS.md (W1–W6, W8, W9), and of
//! hashwheel's `DelayQueue` with tokio-util's (Q1–Q4), in one process (W9 in
//! one child process per contender).
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench compare            # full counts
//! cargo bench -p hashwheel-benches --bench compare -- --quick # smaller counts
//! cargo bench -p hashwheel-benches --bench compare -- --only=W9 --connections=100000 --workers=2
//! cargo bench -p hashwheel-benches --bench compare -- --only=Q1,Q2,Q3,Q4
//! ```
//!
//! Timed workloads run their contenders interleaved, `reps` times each, and
//! keep each contender's best run, so that load drifting on a shared machine
//! hits all of them alike. The table gives each figure and the ratio
//! `rival / hashwheel`: above 1 means hashwheel is faster or smaller.
//!
//! W9 (heartbeat storm) measures process-wide figures (CPU, context
//! switches, RSS), so each contender runs in a fresh child process of this
//! binary (`--w9-child=hashwheel|tokio`), which prints one `W9CHILD key=value
//! ...` line that the parent reads: nothing of one contender (threads, heap,
//! rusage) bleeds into the other's figures.
//!
//! The benches are their own workspace member, built without tokio's
//! `test-util`, so `tokio::time::Instant::now()` is the OS clock read.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::noop_waker_ref;
use futures::StreamExt;
use hashwheel::{Timeout, Timer};
use tokio::runtime::{Builder, Runtime};
use tokio::time::{Instant, Sleep};
use tokio_util::time::{delay_queue, DelayQueue};

// ---------------------------------------------------------------------------
// Counting allocator: live heap bytes, counted only while `COUNTING` is set so
// that the timed workloads pay one relaxed load per allocation at most.

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Process CPU time (all threads), from `CLOCK_PROCESS_CPUTIME_ID`.
fn cpu_time() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the calling thread.
fn thread_cpu_time() -> Duration {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

// ---------------------------------------------------------------------------
// Configuration and output.

struct Config {
    quick: bool,
    /// `--only=W1,W5`: run just these (for profiling).
    only: Option<String>,
    reps: usize,
    w1_pairs: usize,
    w2_hold: usize,
    w3_timers: usize,
    w4_tasks: usize,
    w6_secs: u64,
    w8_timers: usize,
    w8_secs: u64,
    /// W9 simulated connections (`--connections=N`).
    w9_connections: usize,
    /// W9 runtime worker threads (`--workers=N`).
    w9_workers: usize,
    w9_warmup_ms: u64,
    w9_window_ms: u64,
    q_pairs: usize,
    q_hold: usize,
    q_items: usize,
    q_expire: usize,
}

/// The value of `--name=value`, if given (and parsable).
fn arg<T: FromStr>(name: &str) -> Option<T> {
    let prefix = format!("--{name}=");
    std::env::args().find_map(|a| a.strip_prefix(&prefix).and_then(|v| v.parse().ok()))
}

impl Config {
    fn runs(&self, id: &str) -> bool {
        match self.only.as_deref() {
            None => true,
            Some(only) => only.split(',').any(|w| w == id),
        }
    }

    fn from_args() -> Config {
        let quick = std::env::args().any(|a| a == "--quick");
        let only = arg("only");
        let cfg = if quick {
            Config {
                quick,
                only,
                reps: 3,
                w1_pairs: 200_000,
                w2_hold: 200_000,
                w3_timers: 20_000,
                w4_tasks: 20_000,
                w6_secs: 1,
                w8_timers: 200_000,
                w8_secs: 1,
                w9_connections: 20_000,
                w9_workers: 2,
                w9_warmup_ms: 1_000,
                w9_window_ms: 2_000,
                q_pairs: 200_000,
                q_hold: 200_000,
                q_items: 20_000,
                q_expire: 200_000,
            }
        } else {
            Config {
                quick,
                only,
                reps: 5,
                w1_pairs: 1_000_000,
                w2_hold: 1_000_000,
                w3_timers: 100_000,
                w4_tasks: 100_000,
                w6_secs: 3,
                w8_timers: 1_000_000,
                w8_secs: 5,
                w9_connections: 100_000,
                w9_workers: 2,
                w9_warmup_ms: 2_000,
                w9_window_ms: 4_000,
                q_pairs: 1_000_000,
                q_hold: 1_000_000,
                q_items: 100_000,
                q_expire: 1_000_000,
            }
        };
        Config {
            w9_connections: arg("connections").unwrap_or(cfg.w9_connections),
            w9_workers: arg("workers").unwrap_or(cfg.w9_workers),
            w9_warmup_ms: arg("warmup-ms").unwrap_or(cfg.w9_warmup_ms),
            w9_window_ms: arg("window-ms").unwrap_or(cfg.w9_window_ms),
            ..cfg
        }
    }
}

/// One line of the table: a figure for hashwheel and for each rival
/// (`None` where the workload does not fit the rival).
struct Row {
    id: &'static str,
    figure: String,
    ours: f64,
    tokio: Option<f64>,
    delay_queue: Option<f64>,
    /// Decimal places to print.
    places: usize,
    /// Higher figures are better (a rate): the ratio is `hashwheel / rival`.
    rate: bool,
}

impl Row {
    fn new(id: &'static str, figure: impl Into<String>, ours: f64) -> Row {
        Row {
            id,
            figure: figure.into(),
            ours,
            tokio: None,
            delay_queue: None,
            places: 1,
            rate: false,
        }
    }

    fn tokio(mut self, v: f64) -> Row {
        self.tokio = Some(v);
        self
    }

    fn dq(mut self, v: f64) -> Row {
        self.delay_queue = Some(v);
        self
    }

    fn places(mut self, places: usize) -> Row {
        self.places = places;
        self
    }

    fn rate(mut self) -> Row {
        self.rate = true;
        self
    }

    fn print(&self) {
        let p = self.places;
        let fig = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.p$}"));
        let ratio = |v: Option<f64>| match v {
            Some(v) if self.rate && v > 0.0 => format!("{:.2}×", self.ours / v),
            Some(v) if !self.rate && self.ours > 0.0 => format!("{:.2}×", v / self.ours),
            Some(0.0) => "=".to_string(),
            Some(_) => "∞".to_string(),
            None => "–".to_string(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            self.id,
            self.figure,
            fig(Some(self.ours)),
            fig(self.tokio),
            ratio(self.tokio),
            fig(self.delay_queue),
            ratio(self.delay_queue),
        );
    }
}

fn current_thread() -> Runtime {
    Builder::new_current_thread().enable_all().build().unwrap()
}

fn two_workers() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A small deterministic generator (xorshift64*), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `lo..hi` milliseconds.
    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next() % (hi - lo))
    }
}

fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> bool {
    let mut cx = Context::from_waker(noop_waker_ref());
    fut.poll(&mut cx).is_ready()
}

fn per(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_nanos() as f64 / n as f64
}

fn best(runs: &[f64]) -> f64 {
    runs.iter().copied().fold(f64::INFINITY, f64::min)
}

const D30: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
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

fn w1(cfg: &Config) -> (f64, Row) {
    let rt = current_thread();
    let (ours, tokio, dq) = rt.block_on(async {
        let timer = Timer::new();
        let mut dq = DelayQueue::new();
        // Warm up: grow the slabs.
        w1_hashwheel(&timer, 1000);
        w1_tokio(1000);
        w1_delay_queue(&mut dq, 1000);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..cfg.reps {
            a.push(w1_hashwheel(&timer, cfg.w1_pairs));
            b.push(w1_tokio(cfg.w1_pairs));
            c.push(w1_delay_queue(&mut dq, cfg.w1_pairs));
        }
        (best(&a), best(&b), best(&c))
    });
    (
        ours,
        Row::new("W1", "schedule + cancel, ns/pair", ours)
            .tokio(tokio)
            .dq(dq),
    )
}

// ---------------------------------------------------------------------------
// W2: hold N pending timeouts.

/// Runs `insert` for each delay with heap counting on; returns ns per insert
/// and heap bytes per timer. `hold` keeps the handles (allocated before).
fn counted<H>(
    delays: &[Duration],
    hold: &mut Vec<H>,
    mut insert: impl FnMut(Duration) -> H,
) -> (f64, f64) {
    let before = LIVE.load(Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let start = Instant::now();
    for &d in delays {
        hold.push(insert(d));
    }
    let elapsed = start.elapsed();
    COUNTING.store(false, Ordering::Relaxed);
    let bytes = (LIVE.load(Ordering::Relaxed) - before) as f64 / delays.len() as f64;
    (per(elapsed, delays.len()), bytes)
}

/// Heap bytes per timer after `shrink` gives spare capacity back, from
/// `bytes` per timer before it.
fn shrunk_bytes(bytes: f64, n: usize, shrink: impl FnOnce()) -> f64 {
    let before = LIVE.load(Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    shrink();
    COUNTING.store(false, Ordering::Relaxed);
    bytes + (LIVE.load(Ordering::Relaxed) - before) as f64 / n as f64
}

fn w2(cfg: &Config) -> Vec<Row> {
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
            .dq(dq_ns),
        Row::new("W2", "hold: bytes/timer (heap + handle)", ours_b)
            .tokio(tokio_b)
            .dq(dq_b),
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

const RESETS: usize = 10;

fn reset_offset(i: usize) -> Duration {
    D30 + Duration::from_millis((i % 1000) as u64)
}

fn w3(cfg: &Config) -> Row {
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
    Row::new("W3", "reset, ns/reset", ours).tokio(tokio).dq(dq)
}

// ---------------------------------------------------------------------------
// W4: fire N spawned tasks spread over one second, 2 workers.

/// Lateness in µs, signed (negative = early), sorted.
fn w4_run(
    rt: &Runtime,
    tasks: usize,
    sleep_until: impl Fn(Instant) -> Pin<Box<dyn Future<Output = ()> + Send>>,
) -> Vec<i64> {
    rt.block_on(async {
        let base = Instant::now() + Duration::from_millis(300);
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let deadline = base + Duration::from_secs(1) * i as u32 / tasks as u32;
                let fut = sleep_until(deadline);
                tokio::spawn(async move {
                    fut.await;
                    let now = Instant::now();
                    match now.checked_duration_since(deadline) {
                        Some(late) => late.as_micros() as i64,
                        None => -(deadline.duration_since(now).as_micros() as i64) - 1,
                    }
                })
            })
            .collect();
        let mut late = Vec::with_capacity(tasks);
        for h in handles {
            late.push(h.await.unwrap());
        }
        late.sort_unstable();
        late
    })
}

fn percentile(sorted: &[i64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn w4(cfg: &Config) -> Vec<Row> {
    let ours = {
        let rt = two_workers();
        let timer = rt.block_on(async { Timer::new() });
        w4_run(&rt, cfg.w4_tasks, |d| Box::pin(timer.sleep_until(d)))
    };
    let tokio = w4_run(&two_workers(), cfg.w4_tasks, |d| {
        Box::pin(tokio::time::sleep_until(d))
    });
    let early = |late: &[i64]| late.iter().filter(|&&l| l < 0).count();
    assert_eq!(early(&ours), 0, "hashwheel fired early");
    let row = |figure: &str, p: f64| {
        Row::new("W4", figure, percentile(&ours, p))
            .tokio(percentile(&tokio, p))
            .places(3)
    };
    vec![
        row("fire: lateness p50, ms", 0.5),
        row("fire: lateness p99, ms", 0.99),
        row("fire: lateness max, ms", 1.0),
        row("fire: lateness min (≥ 0: never early), ms", 0.0),
    ]
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

fn w5(cfg: &Config) -> (f64, f64, Vec<Row>) {
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

// ---------------------------------------------------------------------------
// W6 / W8: idle CPU.

/// CPU ms per second while the runtime idles for `secs`.
async fn idle_cpu(secs: u64) -> f64 {
    // Let the driver settle on its plan first.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cpu = cpu_time();
    let wall = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    (cpu_time() - cpu).as_secs_f64() * 1000.0 / wall.elapsed().as_secs_f64()
}

fn w6(cfg: &Config) -> Vec<Row> {
    let secs = cfg.w6_secs;
    let (empty_wakeups, cpu, wakeups) = two_workers().block_on(async {
        let timer = Timer::new();
        let w0 = timer.driver_wakeups();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let empty = (timer.driver_wakeups() - w0) as f64 / secs as f64;
        let mut t = timer.sleep(Duration::from_secs(3600));
        poll_once(Pin::new(&mut t));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let w0 = timer.driver_wakeups();
        let cpu = idle_cpu(secs).await;
        let wakeups = (timer.driver_wakeups() - w0) as f64 / secs as f64;
        (empty, cpu, wakeups)
    });
    let tokio_cpu = two_workers().block_on(async {
        let mut s = pin!(tokio::time::sleep(Duration::from_secs(3600)));
        poll_once(s.as_mut());
        idle_cpu(secs).await
    });
    let dq_cpu = two_workers().block_on(async {
        let mut dq = DelayQueue::new();
        dq.insert((), Duration::from_secs(3600));
        let task = tokio::spawn(async move { dq.next().await });
        let cpu = idle_cpu(secs).await;
        task.abort();
        cpu
    });
    vec![
        Row::new("W6", "idle, one timeout in 1 h: CPU ms/s", cpu)
            .tokio(tokio_cpu)
            .dq(dq_cpu)
            .places(3),
        Row::new("W6", "idle, one timeout in 1 h: wake-ups/s", wakeups).places(2),
        Row::new("W6", "idle, empty: wake-ups/s", empty_wakeups).places(2),
    ]
}

fn w8(cfg: &Config) -> Vec<Row> {
    let (n, secs) = (cfg.w8_timers, cfg.w8_secs);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let delays: Vec<Duration> = (0..n).map(|_| rng.millis(60_000, 120_000)).collect();
    let (ours, wakeups) = two_workers().block_on(async {
        let timer = Timer::new();
        let mut hold: Vec<Timeout> = Vec::with_capacity(n);
        for &d in &delays {
            let mut t = timer.sleep(d);
            poll_once(Pin::new(&mut t));
            hold.push(t);
        }
        let w0 = timer.driver_wakeups();
        let cpu = idle_cpu(secs).await;
        (cpu, timer.driver_wakeups() - w0)
    });
    let tokio = two_workers().block_on(async {
        let mut hold: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
        for &d in &delays {
            let mut s = Box::pin(tokio::time::sleep(d));
            poll_once(s.as_mut());
            hold.push(s);
        }
        idle_cpu(secs).await
    });
    let dq = two_workers().block_on(async {
        let mut dq = DelayQueue::new();
        for &d in &delays {
            dq.insert((), d);
        }
        let task = tokio::spawn(async move { dq.next().await });
        let cpu = idle_cpu(secs).await;
        task.abort();
        cpu
    });
    vec![
        Row::new("W8", "far timers idle: CPU ms/s", ours)
            .tokio(tokio)
            .dq(dq)
            .places(3),
        Row::new(
            "W8",
            "far timers idle: driver wake-ups/s",
            wakeups as f64 / secs as f64,
        )
        .places(2),
    ]
}

// ---------------------------------------------------------------------------
// W9: heartbeat storm. N tasks, each with a 1 s heartbeat interval and a
// 30 s idle timeout reset after every heartbeat; each contender in a child
// process of this binary.

/// Lateness histogram of one worker thread, in µs: exact below 128 µs, then
/// 64 sub-buckets per power of two (within 1.6%). One writer (its thread),
/// so plain relaxed load + store; read once the window is over.
struct Hist {
    buckets: Vec<AtomicU64>,
    /// Exact extremes, signed µs (negative: early).
    min: AtomicI64,
    max: AtomicI64,
}

const HIST_BUCKETS: usize = 128 + 64 * 58;

impl Hist {
    fn new() -> Hist {
        Hist {
            buckets: (0..HIST_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            min: AtomicI64::new(i64::MAX),
            max: AtomicI64::new(i64::MIN),
        }
    }

    fn bucket(us: u64) -> usize {
        if us < 128 {
            us as usize
        } else {
            let e = 63 - us.leading_zeros() as usize; // ≥ 7
            128 + (e - 7) * 64 + ((us >> (e - 6)) & 63) as usize
        }
    }

    /// The smallest value of bucket `i`.
    fn floor(i: usize) -> u64 {
        if i < 128 {
            i as u64
        } else {
            let (e, sub) = ((i - 128) / 64 + 7, (i - 128) % 64);
            (64 + sub as u64) << (e - 6)
        }
    }

    fn record(&self, late_us: i64) {
        let b = &self.buckets[Hist::bucket(late_us.max(0) as u64)];
        b.store(b.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if late_us < self.min.load(Ordering::Relaxed) {
            self.min.store(late_us, Ordering::Relaxed);
        }
        if late_us > self.max.load(Ordering::Relaxed) {
            self.max.store(late_us, Ordering::Relaxed);
        }
    }
}

/// Every worker thread's histogram, summed at the end of the window.
static HISTS: Mutex<Vec<Arc<Hist>>> = Mutex::new(Vec::new());

thread_local! {
    static HIST: Arc<Hist> = {
        let h = Arc::new(Hist::new());
        HISTS.lock().unwrap().push(h.clone());
        h
    };
}

/// Records one heartbeat's lateness if it was due within `window`.
fn w9_record(due: Instant, window: (Instant, Instant)) {
    if due < window.0 || due >= window.1 {
        return;
    }
    let now = Instant::now();
    let late = match now.checked_duration_since(due) {
        Some(late) => late.as_micros() as i64,
        None => -(due.duration_since(now).as_micros() as i64) - 1,
    };
    HIST.with(|h| h.record(late));
}

/// Count, min, p50, p99, max of all threads' histograms, in µs.
fn w9_lateness() -> (u64, i64, u64, u64, i64) {
    let hists = HISTS.lock().unwrap();
    let mut sum = vec![0u64; HIST_BUCKETS];
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for h in hists.iter() {
        for (s, b) in sum.iter_mut().zip(&h.buckets) {
            *s += b.load(Ordering::Relaxed);
        }
        min = min.min(h.min.load(Ordering::Relaxed));
        max = max.max(h.max.load(Ordering::Relaxed));
    }
    let count: u64 = sum.iter().sum();
    let at = |p: f64| {
        let rank = ((count.saturating_sub(1)) as f64 * p).round() as u64;
        let mut seen = 0;
        for (i, &n) in sum.iter().enumerate() {
            seen += n;
            if seen > rank {
                return Hist::floor(i);
            }
        }
        0
    };
    (count, min, at(0.5), at(0.99), max)
}

fn rusage_switches() -> u64 {
    // SAFETY: `usage` is a valid, writable rusage for the call's duration.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    (usage.ru_nvcsw + usage.ru_nivcsw) as u64
}

/// Resident set size in bytes, from `/proc/self/statm`.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

const HEARTBEAT: Duration = Duration::from_secs(1);

async fn w9_conn_hashwheel(timer: Timer, first: Instant, window: (Instant, Instant)) {
    let mut hb = timer.interval_at(first, HEARTBEAT);
    let mut idle = timer.sleep(D30);
    loop {
        tokio::select! {
            due = hb.tick() => {
                w9_record(due, window);
                idle.reset(D30);
            }
            _ = &mut idle => break,
        }
    }
}

async fn w9_conn_tokio(first: Instant, window: (Instant, Instant)) {
    let mut hb = tokio::time::interval_at(first, HEARTBEAT);
    let mut idle = Box::pin(tokio::time::sleep(D30));
    loop {
        tokio::select! {
            due = hb.tick() => {
                w9_record(due, window);
                idle.as_mut().reset(Instant::now() + D30);
            }
            _ = idle.as_mut() => break,
        }
    }
}

/// The child: runs one contender's heartbeat storm and prints its figures
/// as one `W9CHILD key=value ...` line on stdout.
fn w9_child(which: &str, cfg: &Config) {
    let n = cfg.w9_connections;
    let rt = Builder::new_multi_thread()
        .worker_threads(cfg.w9_workers)
        .enable_all()
        .build()
        .unwrap();
    let timer = (which == "hashwheel").then(|| rt.block_on(async { Timer::new() }));
    let rss_base = rss_bytes();
    let start = Instant::now() + Duration::from_millis(100);
    let window = (
        start + Duration::from_millis(cfg.w9_warmup_ms),
        start + Duration::from_millis(cfg.w9_warmup_ms + cfg.w9_window_ms),
    );
    for i in 0..n {
        let first = start + HEARTBEAT * i as u32 / n as u32;
        match &timer {
            Some(timer) => rt.spawn(w9_conn_hashwheel(timer.clone(), first, window)),
            None => rt.spawn(w9_conn_tokio(first, window)),
        };
    }
    std::thread::sleep(window.0.saturating_duration_since(Instant::now()));
    let (cpu0, csw0, wall0) = (cpu_time(), rusage_switches(), std::time::Instant::now());
    let wake0 = timer.as_ref().map_or(0, Timer::driver_wakeups);
    std::thread::sleep(window.1.saturating_duration_since(Instant::now()));
    let (cpu1, csw1, wall) = (cpu_time(), rusage_switches(), wall0.elapsed());
    let wake1 = timer.as_ref().map_or(0, Timer::driver_wakeups);
    let rss = rss_bytes();
    // Let heartbeats due just before the window's end come in (late ones
    // are recorded when they return).
    std::thread::sleep(Duration::from_millis(300));
    let (count, min, p50, p99, max) = w9_lateness();
    let secs = wall.as_secs_f64();
    println!(
        "W9CHILD cpu_ms_s={:.3} csw_s={:.1} wake_s={:.1} rss={} rss_base={} count={} \
         min_us={} p50_us={} p99_us={} max_us={}",
        (cpu1 - cpu0).as_secs_f64() * 1000.0 / secs,
        (csw1 - csw0) as f64 / secs,
        (wake1 - wake0) as f64 / secs,
        rss,
        rss_base,
        count,
        min,
        p50,
        p99,
        max,
    );
    // Tearing 100,000 tasks down is no part of the figures.
    std::process::exit(0);
}

/// Runs a W9 child for `which`; returns its `key=value` figures.
fn w9_run(which: &str, cfg: &Config) -> Vec<(String, f64)> {
    let exe = std::env::current_exe().expect("current_exe");
    let out = std::process::Command::new(exe)
        .arg(format!("--w9-child={which}"))
        .arg(format!("--connections={}", cfg.w9_connections))
        .arg(format!("--workers={}", cfg.w9_workers))
        .arg(format!("--warmup-ms={}", cfg.w9_warmup_ms))
        .arg(format!("--window-ms={}", cfg.w9_window_ms))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("W9 child failed to start");
    assert!(
        out.status.success(),
        "W9 child {which} failed: {}",
        out.status
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("W9CHILD "))
        .unwrap_or_else(|| panic!("W9 child {which} printed no figures: {stdout}"));
    line.split_whitespace()
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn w9(cfg: &Config) -> Vec<Row> {
    let ours = w9_run("hashwheel", cfg);
    let tokio = w9_run("tokio", cfg);
    let get = |v: &[(String, f64)], k: &str| {
        v.iter()
            .find(|(key, _)| key == k)
            .map(|(_, x)| *x)
            .unwrap_or_else(|| panic!("W9 child gave no {k}"))
    };
    let n = cfg.w9_connections;
    let expected = (n as u64 * cfg.w9_window_ms / 1000) as f64;
    for (name, v) in [("hashwheel", &ours), ("tokio", &tokio)] {
        let count = get(v, "count");
        if count < expected * 0.99 {
            eprintln!("W9: {name} recorded {count} heartbeats of {expected} due in the window");
        }
    }
    assert!(get(&ours, "min_us") >= 0.0, "hashwheel heartbeat early");
    let label = format!("heartbeat storm ({n} conns, {} workers)", cfg.w9_workers);
    let row = |figure: &str, k: &str, scale: f64, places: usize| {
        Row::new("W9", format!("{label}: {figure}"), get(&ours, k) * scale)
            .tokio(get(&tokio, k) * scale)
            .places(places)
    };
    let per_conn = |v: &[(String, f64)]| (get(v, "rss") - get(v, "rss_base")) / n as f64;
    vec![
        row("CPU ms/s", "cpu_ms_s", 1.0, 1),
        row("context switches/s", "csw_s", 1.0, 0),
        row("lateness p50, ms", "p50_us", 1e-3, 3),
        row("lateness p99, ms", "p99_us", 1e-3, 3),
        row("lateness max, ms", "max_us", 1e-3, 3),
        row("lateness min (≥ 0: never early), ms", "min_us", 1e-3, 3),
        row("RSS, MiB", "rss", 1.0 / (1024.0 * 1024.0), 1),
        Row::new(
            "W9",
            format!("{label}: RSS growth, bytes/connection"),
            per_conn(&ours),
        )
        .tokio(per_conn(&tokio))
        .places(0),
        Row::new(
            "W9",
            format!("{label}: driver wake-ups/s"),
            get(&ours, "wake_s"),
        ),
    ]
}

// ---------------------------------------------------------------------------
// Q1–Q4: hashwheel's `DelayQueue` against tokio-util's, same workloads, same
// run. The hashwheel column is hashwheel's `DelayQueue`; the DelayQueue
// column is tokio-util's.

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

fn q1(cfg: &Config) -> Row {
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
    Row::new("Q1", "keyed queue: insert + remove, ns/pair", ours).dq(theirs)
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

fn q2(cfg: &Config) -> Vec<Row> {
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
        Row::new("Q2", "keyed queue hold: ns/insert", ns(&ours)).dq(ns(&theirs)),
        Row::new("Q2", "keyed queue hold: bytes/item (heap + key)", ours_b).dq(dq_b),
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

fn q3(cfg: &Config) -> Row {
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
    Row::new("Q3", "keyed queue: reset, ns/reset", ours).dq(theirs)
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

fn q4(cfg: &Config) -> Vec<Row> {
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
        .rate(),
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

// ---------------------------------------------------------------------------
// Floors: what one clock read and one uncontended lock cost in this run.

fn floors(n: usize) -> Vec<(&'static str, f64)> {
    let time = |f: &dyn Fn()| {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let start = std::time::Instant::now();
            for _ in 0..n {
                f();
            }
            runs.push(per(start.elapsed(), n));
        }
        best(&runs)
    };
    let lock = std::sync::Mutex::new(0u64);
    vec![
        (
            "`tokio::time::Instant::now()` (test-util on, clock never paused)",
            time(&|| {
                std::hint::black_box(Instant::now());
            }),
        ),
        (
            "`std::time::Instant::now()`",
            time(&|| {
                std::hint::black_box(std::time::Instant::now());
            }),
        ),
        (
            "uncontended `std::sync::Mutex` lock + unlock",
            time(&|| {
                *std::hint::black_box(&lock).lock().unwrap() += 1;
            }),
        ),
    ]
}

fn main() {
    let cfg = Config::from_args();
    if let Some(which) = arg::<String>("w9-child") {
        return w9_child(&which, &cfg);
    }
    let t0 = std::time::Instant::now();
    eprintln!(
        "hashwheel compare ({}): W1..W6, W8, W9, Q1..Q4; best of {} interleaved runs",
        if cfg.quick { "quick" } else { "full" },
        cfg.reps
    );
    let mut rows = Vec::new();
    let mut w1_ns = None;
    if cfg.runs("W1") {
        let (ns, row) = w1(&cfg);
        w1_ns = Some(ns);
        rows.push(row);
        eprintln!("W1 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W2") {
        rows.extend(w2(&cfg));
        eprintln!("W2 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W3") {
        rows.push(w3(&cfg));
        eprintln!("W3 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W4") {
        rows.extend(w4(&cfg));
        eprintln!("W4 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W5") {
        let (w5_ns, w5_cpu, w5_rows) = w5(&cfg);
        rows.extend(w5_rows);
        if let Some(w1_ns) = w1_ns {
            rows.push(
                Row::new("W5", "2-thread pairs/s ÷ 1-thread pairs/s", w1_ns / w5_ns).places(2),
            );
            rows.push(
                Row::new(
                    "W5",
                    "1-thread ns/pair ÷ 2-thread CPU ns/pair (1 = no contention)",
                    w1_ns / w5_cpu,
                )
                .places(2),
            );
        }
        eprintln!("W5 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W6") {
        rows.extend(w6(&cfg));
        eprintln!("W6 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W8") {
        rows.extend(w8(&cfg));
        eprintln!("W8 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W9") {
        rows.extend(w9(&cfg));
        eprintln!("W9 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q1") {
        rows.push(q1(&cfg));
        eprintln!("Q1 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q2") {
        rows.extend(q2(&cfg));
        eprintln!("Q2 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q3") {
        rows.push(q3(&cfg));
        eprintln!("Q3 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q4") {
        rows.extend(q4(&cfg));
        eprintln!("Q4 done ({:.1?})", t0.elapsed());
    }

    println!();
    println!("| id | figure | hashwheel | tokio::time | ratio | DelayQueue | ratio |");
    println!("|----|--------|-----------|-------------|-------|------------|-------|");
    for row in &rows {
        row.print();
    }
    println!();
    println!("| floor (this run) | ns |");
    println!("|------------------|----|");
    for (what, ns) in floors(if cfg.quick { 200_000 } else { 1_000_000 }) {
        println!("| {what} | {ns:.1} |");
    }
    println!();
    println!("ratio = rival / hashwheel (above 1: hashwheel faster or smaller); lower figures are better except the W5 scaling line and the Q4 rate (its ratio is hashwheel / rival).");
    println!("Q rows: the hashwheel column is hashwheel's DelayQueue, the DelayQueue column tokio-util's.");
}
