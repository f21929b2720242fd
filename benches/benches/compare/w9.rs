//! W9: heartbeat storm. N tasks, each with a 1 s heartbeat interval and a
//! 30 s idle timeout reset after every heartbeat; each contender in a child
//! process of this binary.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::task::AtomicWaker;
use hashwheel::Timer;
use tokio::runtime::Builder;
use tokio::time::Instant;

use crate::child::{ALT_NOTE, ALT_TIMER};
use crate::common::{cpu_time, D30};
use crate::config::Config;
use crate::report::{lines, Line, Row};

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
/// `due` is whichever `Instant` the interval hands out (tokio's, or std's
/// where hashwheel takes std's).
pub(crate) fn w9_record(due: impl Into<Instant>, window: (Instant, Instant)) {
    let due: Instant = due.into();
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
pub(crate) fn w9_lateness() -> (u64, i64, u64, u64, i64) {
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

pub(crate) fn rusage_switches() -> u64 {
    // SAFETY: `usage` is a valid, writable rusage for the call's duration.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    (usage.ru_nvcsw + usage.ru_nivcsw) as u64
}

/// Resident set size in bytes, from `/proc/self/statm`.
pub(crate) fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);

async fn w9_conn_hashwheel(timer: Timer, first: Instant, window: (Instant, Instant)) {
    let mut hb = timer.interval_at(first, HEARTBEAT);
    let mut idle = timer.sleep(D30);
    loop {
        tokio::select! {
            due = hb.tick() => {
                w9_record(Instant::from_std(due), window);
                idle.reset(D30);
            }
            _ = &mut idle => break,
        }
    }
}

/// `hashwheel::time`, as code written for `tokio::time` reads once its
/// `use` line is switched (the idle `Sleep` boxed, as tokio's must be).
async fn w9_conn_time(first: Instant, window: (Instant, Instant)) {
    let mut hb = hashwheel::time::interval_at(first, HEARTBEAT);
    let mut idle = Box::pin(hashwheel::time::sleep(D30));
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

/// [`w9_conn_time`] with the idle `Sleep` pinned on the task's stack
/// (`tokio::pin!`), not boxed: W9 as written with the sleep kept in the
/// task (`--w9-variant=pinned`, issue 48).
async fn w9_conn_time_pinned(first: Instant, window: (Instant, Instant)) {
    let mut hb = hashwheel::time::interval_at(first, HEARTBEAT);
    let idle = hashwheel::time::sleep(D30);
    tokio::pin!(idle);
    loop {
        tokio::select! {
            due = hb.tick() => {
                w9_record(due, window);
                idle.as_mut().reset(Instant::now() + D30);
            }
            _ = &mut idle => break,
        }
    }
}

/// [`w9_conn_tokio`] with the idle `Sleep` pinned in the task: its timer
/// entry lives in the task's own memory, which a beat touches anyway.
async fn w9_conn_tokio_pinned(first: Instant, window: (Instant, Instant)) {
    let mut hb = tokio::time::interval_at(first, HEARTBEAT);
    let idle = tokio::time::sleep(D30);
    tokio::pin!(idle);
    loop {
        tokio::select! {
            due = hb.tick() => {
                w9_record(due, window);
                idle.as_mut().reset(Instant::now() + D30);
            }
            _ = &mut idle => break,
        }
    }
}

/// How a W9 child writes the storm (`--w9-variant=a,b,...`; issue 48): the
/// bench's way by default, or the choices an independent harness made,
/// one by one or all together (`indep`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Variant {
    /// `pinned`: the idle `Sleep` of `tokio::time` and `hashwheel::time`
    /// pinned in the task (`tokio::pin!`), not boxed.
    pub pinned: bool,
    /// `inside`: the connections spawned with `tokio::spawn` from inside
    /// `block_on`, which stays in until the window ends, not with
    /// `rt.spawn` from outside.
    pub inside: bool,
    /// `sample64`: lateness recorded for every 64th connection only.
    pub sample64: bool,
    /// `warm`: `hashwheel::time`'s default timer brought up by a 1 ms
    /// sleep in `block_on` before the connections start.
    pub warm: bool,
}

impl Variant {
    /// The variant of `--w9-variant=`, the bench's own without it.
    pub fn from_args() -> Variant {
        let list: String = crate::config::arg("w9-variant").unwrap_or_default();
        let mut v = Variant::default();
        for part in list.split(',').filter(|p| !p.is_empty()) {
            match part {
                "bench" => {}
                "pinned" => v.pinned = true,
                "inside" => v.inside = true,
                "sample64" => v.sample64 = true,
                "warm" => v.warm = true,
                "indep" => {
                    v = Variant {
                        pinned: true,
                        inside: true,
                        sample64: true,
                        warm: true,
                    }
                }
                other => panic!("W9: unknown variant {other}"),
            }
        }
        v
    }

    /// Its name, as `--w9-variant=` takes it.
    pub fn name(&self) -> String {
        let parts: Vec<&str> = [
            (self.pinned, "pinned"),
            (self.inside, "inside"),
            (self.sample64, "sample64"),
            (self.warm, "warm"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
        if parts.is_empty() {
            "bench".to_string()
        } else if parts.len() == 4 {
            "indep".to_string()
        } else {
            parts.join(",")
        }
    }
}

/// One connection of the runtime's floor ([`FloorDriver`]): the flag
/// the driver sets when its beat is due, and the task's waker.
struct FloorConn {
    fired: AtomicBool,
    waker: AtomicWaker,
}

/// The runtime's floor: the same tasks woken at the same instants, a turn
/// a millisecond ([`FloorDriver`]), with no timer's bookkeeping at all (no entry, no
/// deadline, no idle timeout): the wake, the schedule, the poll and the
/// parks that any timer on this runtime pays for a heartbeat. What a
/// contender spends above it is its timer's own cost.
async fn w9_conn_floor(conn: Arc<FloorConn>, first: Instant, window: (Instant, Instant)) {
    let mut due = first;
    loop {
        std::future::poll_fn(|cx| {
            if conn.fired.swap(false, Ordering::AcqRel) {
                return Poll::Ready(());
            }
            conn.waker.register(cx.waker());
            if conn.fired.swap(false, Ordering::AcqRel) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        w9_record(due, window);
        due += HEARTBEAT;
    }
}

/// The floor's driver: connection `i` of `n` beats at `start + i/n s`
/// and every second after, so one cursor over the connections is a
/// perfect timer for this load. It turns where timers are turned, in the
/// runtime's own timer processing (the waker of a tokio `Sleep` reset a
/// millisecond ahead each turn, as hashwheel's alarm is), not in a task
/// of its own: woken from a task, a wake pushes work to the other
/// worker (five times the context switches on 2 workers).
struct FloorDriver {
    conns: Vec<Arc<FloorConn>>,
    start: Instant,
    /// Rung and not yet turned for.
    rang: AtomicBool,
    turn: Mutex<(usize, u32, Pin<Box<tokio::time::Sleep>>)>,
}

impl FloorDriver {
    /// Wakes what is due and arms the next turn for the next beat. tokio
    /// calls the waker from inside `reset` when the instant has passed
    /// (here, within a turn: the lock is held), so a ring that finds the
    /// turn taken leaves it to the holder, which turns again while rung.
    fn ring(self: &Arc<Self>) {
        self.rang.store(true, Ordering::SeqCst);
        loop {
            let Ok(mut guard) = self.turn.try_lock() else {
                return;
            };
            let (next, round, sleep) = &mut *guard;
            let n = self.conns.len();
            let waker = Waker::from(self.clone());
            while self.rang.swap(false, Ordering::SeqCst) {
                let due = self.fire(next, round, Instant::now(), n);
                // The next connection's beat, which tokio rounds up to its
                // millisecond: a turn a millisecond under this load, as the
                // timers' turns (a turn a millisecond ahead of the last
                // would come two later).
                sleep.as_mut().reset(due);
                // Pending, unless that beat came meanwhile.
                if sleep
                    .as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_ready()
                {
                    self.rang.store(true, Ordering::SeqCst);
                }
            }
            drop(guard);
            // A ring between the last look and the unlock.
            if !self.rang.load(Ordering::SeqCst) {
                return;
            }
        }
    }

    /// Wakes every connection due by `now` from the cursor on; returns
    /// when the next one is due.
    fn fire(&self, next: &mut usize, round: &mut u32, now: Instant, n: usize) -> Instant {
        loop {
            let due = self.start + HEARTBEAT * *round + HEARTBEAT * *next as u32 / n as u32;
            if due > now {
                return due;
            }
            let conn = &self.conns[*next];
            conn.fired.store(true, Ordering::Release);
            conn.waker.wake();
            *next += 1;
            if *next == n {
                (*next, *round) = (0, *round + 1);
            }
        }
    }
}

impl Wake for FloorDriver {
    fn wake(self: Arc<Self>) {
        self.ring();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ring();
    }
}

/// pingora-timeout's `fast_sleep` as the heartbeat, with no idle timeout:
/// lighter work than the others (one timer per connection, not two, and
/// no reset per beat), its deadlines rounded to 10 ms.
async fn w9_conn_pingora(first: Instant, window: (Instant, Instant)) {
    let mut due = first;
    loop {
        pingora_timeout::fast_timeout::fast_sleep(due.saturating_duration_since(Instant::now()))
            .await;
        w9_record(due, window);
        due += HEARTBEAT;
    }
}

/// Spawns `f` on `rt` from outside it, or with `tokio::spawn` (`None`:
/// from inside the runtime).
fn spawn_on<F: Future<Output = ()> + Send + 'static>(rt: Option<&tokio::runtime::Runtime>, f: F) {
    match rt {
        Some(rt) => drop(rt.spawn(f)),
        None => drop(tokio::spawn(f)),
    }
}

/// The child: runs one contender's heartbeat storm and prints its figures
/// as one `W9CHILD key=value ...` line on stdout.
pub fn w9_child(which: &str, cfg: &Config) {
    let n = cfg.w9_connections;
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(cfg.w9_workers).enable_all();
    if which == "alt" {
        #[cfg(tokio_unstable)]
        builder.enable_alt_timer();
        #[cfg(not(tokio_unstable))]
        panic!("the alternative timer needs --cfg tokio_unstable");
    }
    let rt = builder.build().unwrap();
    let timer = match which {
        "hashwheel" => Some(rt.block_on(async { Timer::new() })),
        // The knob that trades lateness for fewer turns (BENCHMARKS.md, W9,
        // "A coarser tick"): not in the default runs.
        "hashwheel-2ms" => Some(rt.block_on(async {
            Timer::builder()
                .tick(Duration::from_millis(2))
                .build()
                .expect("a 2 ms tick")
        })),
        _ => None,
    };
    let variant = Variant::from_args();
    if variant.warm && which == "time" {
        rt.block_on(async { hashwheel::time::sleep(Duration::from_millis(1)).await });
    }
    let rss_base = rss_bytes();
    let start = Instant::now() + Duration::from_millis(100);
    let window = (
        start + Duration::from_millis(cfg.w9_warmup_ms),
        start + Duration::from_millis(cfg.w9_warmup_ms + cfg.w9_window_ms),
    );
    let mut floor = Vec::new();
    // Each connection's task, spawned on `rt` from outside it, or (`None`,
    // the variant `inside`) with `tokio::spawn` from inside `block_on`.
    let mut spawn_all = |rt: Option<&tokio::runtime::Runtime>| {
        for i in 0..n {
            let first = start + HEARTBEAT * i as u32 / n as u32;
            // Lateness of every 64th connection only (`sample64`): an
            // empty window records nothing.
            let window = if variant.sample64 && i % 64 != 0 {
                (window.0, window.0)
            } else {
                window
            };
            if which == "floor" {
                let conn = Arc::new(FloorConn {
                    fired: AtomicBool::new(false),
                    waker: AtomicWaker::new(),
                });
                floor.push(conn.clone());
                spawn_on(rt, w9_conn_floor(conn, first, window));
                continue;
            }
            match &timer {
                Some(timer) => spawn_on(rt, w9_conn_hashwheel(timer.clone(), first, window)),
                None if which == "pingora" => spawn_on(rt, w9_conn_pingora(first, window)),
                None if which == "time" && variant.pinned => {
                    spawn_on(rt, w9_conn_time_pinned(first, window))
                }
                None if which == "time" => spawn_on(rt, w9_conn_time(first, window)),
                None if variant.pinned => spawn_on(rt, w9_conn_tokio_pinned(first, window)),
                None => spawn_on(rt, w9_conn_tokio(first, window)),
            };
        }
    };
    if variant.inside {
        rt.block_on(async { spawn_all(None) });
    } else {
        spawn_all(Some(&rt));
    }
    if which == "floor" {
        let _entered = rt.enter();
        let driver = Arc::new(FloorDriver {
            conns: floor,
            start,
            rang: AtomicBool::new(false),
            turn: Mutex::new((0, 0, Box::pin(tokio::time::sleep_until(start)))),
        });
        driver.ring();
    }
    let wake0 = std::cell::Cell::new(0);
    let lateness0 = std::cell::Cell::new(None);
    let measured = measure_window(which, n, window, rss_base, || {
        wake0.set(timer.as_ref().map_or(0, Timer::driver_wakeups));
        // The timer's own lateness over the window (deadline to wake),
        // beside the tasks' (`tick()` returns).
        lateness0.set(timer.as_ref().map(|t| t.stats().lateness));
    });
    let wake1 = timer.as_ref().map_or(0, Timer::driver_wakeups);
    let ours = timer
        .as_ref()
        .zip(lateness0.take())
        .map(|(t, before)| t.stats().lateness.since(&before));
    let timer_us = |q: f64| {
        ours.as_ref()
            .map_or(0.0, |l| l.quantile(q).as_secs_f64() * 1e6)
    };
    println!(
        "{measured} wake_s={:.1} timer_p50_us={} timer_p99_us={}",
        (wake1 - wake0.get()) as f64 / measured.secs,
        timer_us(0.5),
        timer_us(0.99),
    );
    // Tearing 100,000 tasks down is no part of the figures.
    std::process::exit(0);
}

/// What a W9 child measured over its window (process CPU, context
/// switches, RSS, the tasks' heartbeat lateness); its `Display` is the
/// `W9CHILD` line's common part, which a child extends with its own keys.
pub(crate) struct Measured {
    cpu_ms_s: f64,
    csw_s: f64,
    rss: u64,
    rss_base: u64,
    lateness: (u64, i64, u64, u64, i64),
    /// The window's length in seconds, for a child's own rates.
    pub(crate) secs: f64,
}

impl std::fmt::Display for Measured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (count, min, p50, p99, max) = self.lateness;
        write!(
            f,
            "W9CHILD cpu_ms_s={:.3} csw_s={:.1} rss={} rss_base={} count={count} min_us={min} \
             p50_us={p50} p99_us={p99} max_us={max}",
            self.cpu_ms_s, self.csw_s, self.rss, self.rss_base,
        )
    }
}

/// The one measuring window of W9's children (tokio's runtimes and smol's
/// executor): waits for the warm-up to end, measures the process from
/// `window.0` to `window.1` (`at_start` runs just after the first reading),
/// then lets the heartbeats due before its end come in (late ones are
/// recorded when they return). Says so where spawning the `n` connections
/// outlasted the warm-up: the window's figures would be nonsense.
pub(crate) fn measure_window(
    which: &str,
    n: usize,
    window: (Instant, Instant),
    rss_base: u64,
    at_start: impl FnOnce(),
) -> Measured {
    if Instant::now() > window.0 {
        eprintln!("W9 {which}: spawning {n} connections outlasted the warm-up; raise --warmup-ms");
    }
    std::thread::sleep(window.0.saturating_duration_since(Instant::now()));
    let (cpu0, csw0, wall0) = (cpu_time(), rusage_switches(), std::time::Instant::now());
    at_start();
    std::thread::sleep(window.1.saturating_duration_since(Instant::now()));
    let (cpu1, csw1, wall) = (cpu_time(), rusage_switches(), wall0.elapsed());
    let rss = rss_bytes();
    std::thread::sleep(Duration::from_millis(300));
    let secs = wall.as_secs_f64();
    Measured {
        cpu_ms_s: (cpu1 - cpu0).as_secs_f64() * 1000.0 / secs,
        csw_s: (csw1 - csw0) as f64 / secs,
        rss,
        rss_base,
        lateness: w9_lateness(),
        secs,
    }
}

/// Runs a W9 child for `which`; returns its `key=value` figures.
///
/// The warm-up covers spawning the connections, as `w9_scales`' does: at
/// least a millisecond for every 250 (4 s at a million), or a window could
/// open before every connection beats and report nonsense.
fn w9_run(which: &str, cfg: &Config) -> Vec<(String, f64)> {
    w9_run_at(
        which,
        cfg,
        cfg.w9_connections,
        cfg.w9_workers,
        cfg.w9_warmup_ms.max(cfg.w9_connections as u64 / 250),
    )
}

/// [`w9_run`] at `connections` on `workers` workers, after `warmup_ms` of
/// warm-up (which must cover spawning the connections: a million take
/// seconds on a loaded machine).
pub fn w9_run_at(
    which: &str,
    cfg: &Config,
    connections: usize,
    workers: usize,
    warmup_ms: u64,
) -> Vec<(String, f64)> {
    let exe = std::env::current_exe().expect("current_exe");
    let out = std::process::Command::new(exe)
        .arg(format!("--w9-child={which}"))
        .arg(format!("--connections={connections}"))
        .arg(format!("--workers={workers}"))
        .arg(format!("--warmup-ms={warmup_ms}"))
        .arg(format!("--window-ms={}", cfg.w9_window_ms))
        .arg(format!("--w9-variant={}", Variant::from_args().name()))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("W9 child failed to start");
    assert!(
        out.status.success(),
        "W9 child {which} failed: {}",
        out.status
    );
    crate::child::figures(&out.stdout, "W9CHILD ", &format!("W9 {which}"))
}

/// W9's rows (hashwheel against `tokio::time`) and lines (tokio's
/// alternative timer, if built in, and pingora-timeout's lighter
/// heartbeats-only storm).
pub fn w9(cfg: &Config) -> (Vec<Row>, Vec<Line>) {
    let ours = w9_run("hashwheel", cfg);
    let tokio = w9_run("tokio", cfg);
    let alt = if ALT_TIMER {
        Some(w9_run("alt", cfg))
    } else {
        eprintln!("W9: {ALT_NOTE}");
        None
    };
    let pingora = w9_run("pingora", cfg);
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
    // The gap between the two is the runtime's scheduling delay after the
    // wake (and the `select!` of the connection's task).
    eprintln!(
        "W9 hashwheel heartbeat lateness p50 / p99 µs: timer's own (Stats::lateness) \
         {:.0} / {:.0}, task-side (tick() returns) {:.0} / {:.0}",
        get(&ours, "timer_p50_us"),
        get(&ours, "timer_p99_us"),
        get(&ours, "p50_us"),
        get(&ours, "p99_us"),
    );
    let label = format!("heartbeat storm ({n} conns, {} workers)", cfg.w9_workers);
    let row = |figure: &str, k: &str, scale: f64, places: usize| {
        Row::new("W9", format!("{label}: {figure}"), get(&ours, k) * scale)
            .tokio(get(&tokio, k) * scale)
            .places(places)
    };
    let per_conn = |v: &[(String, f64)]| (get(v, "rss") - get(v, "rss_base")) / n as f64;
    let mut extra = Vec::new();
    for (figure, k, scale, places, chart) in [
        ("CPU ms/s", "cpu_ms_s", 1.0, 1, Some("W9r cpu")),
        ("context switches/s", "csw_s", 1.0, 0, Some("W9r csw")),
        ("lateness p50, ms", "p50_us", 1e-3, 3, Some("W9r p50")),
        ("lateness p99, ms", "p99_us", 1e-3, 3, Some("W9r p99")),
        ("lateness max, ms", "max_us", 1e-3, 3, None),
        ("lateness min (< 0: early), ms", "min_us", 1e-3, 3, None),
    ] {
        let mut runs = vec![
            ("hashwheel Timer", vec![get(&ours, k) * scale]),
            ("tokio::time", vec![get(&tokio, k) * scale]),
        ];
        if let Some(alt) = &alt {
            runs.push(("tokio alternative timer", vec![get(alt, k) * scale]));
        }
        runs.push((
            "pingora fast_sleep (heartbeats only: no idle timeout, 10 ms rounding)",
            vec![get(&pingora, k) * scale],
        ));
        // The min is a check (≥ 0: never early), not a cost: no ratio.
        let these = lines(
            "W9",
            &format!("{label}: {figure}"),
            &runs,
            "hashwheel Timer",
        )
        .places(places)
        .chart(chart)
        .check(k == "min_us")
        .rows();
        extra.extend(these);
    }
    let rows = vec![
        row("CPU ms/s", "cpu_ms_s", 1.0, 1).chart("W9 cpu"),
        row("context switches/s", "csw_s", 1.0, 0).chart("W9 csw"),
        row("lateness p50, ms", "p50_us", 1e-3, 3).chart("W9 p50"),
        row("lateness p99, ms", "p99_us", 1e-3, 3).chart("W9 p99"),
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
    ];
    (rows, extra)
}
