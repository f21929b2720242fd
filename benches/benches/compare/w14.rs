//! W14: a server's read timeout rebuilt on every `select!` pass (issue 47).
//!
//! A current-thread runtime holds N connection tasks (10,000 and 50,000;
//! `--connections=N` runs one size). Each loops on `tokio::select!` over
//! its outgoing channel (an unbounded tokio mpsc fed by another thread,
//! the "router") and a read from an in-memory pipe that never delivers
//! (`tokio::io::duplex`), the read wrapped in a fresh `timeout(7.5 s, …)`
//! built on every pass. The router, a plain std thread, sends each
//! connection one message every 5 s at a random phase, so nearly every
//! timeout is dropped pending when the channel wins: N / 5 timeouts made
//! and cancelled a second, N pending at any time, each 2.5–7.5 s from its
//! deadline. That is how a published MQTT broker reads its clients (a
//! current-thread runtime per listener, a router thread answering pings);
//! switched to `hashwheel::time` by its `use` lines it cost 1.11–1.14×
//! tokio's CPU.
//!
//! [`IDLE`] more connections get one message early on and none after, so
//! their read timeout fires and they close: the close's lateness (the
//! instant the task sees `Elapsed` less the pass's start plus 7.5 s; never
//! below zero if the timer never fires early) is the second figure.
//!
//! Contenders, each in a child process of its own (`--w14-child=...`, one
//! `W14CHILD key=value ...` line back), alternating within each of
//! `--w14-rounds` rounds (3 by default): `tokio::time::timeout`,
//! `hashwheel::time::timeout` (the drop-in, the runtime's default timer),
//! a `hashwheel::Timer` handle's `timeout` (made inside the runtime, a
//! clone per connection) and the floor (the same loop with no timeout).
//! The figure is the runtime thread's CPU (`CLOCK_THREAD_CPUTIME_ID` of
//! the thread in `block_on`, which runs every task and the runtime's
//! drivers) over `--w14-window-ms` after `--w14-warmup-ms` (at least one
//! period of the router, so that every connection's timeout is one built
//! after a message); the process's CPU, which adds the router's thread,
//! is printed beside it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hashwheel::Timer;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

use crate::child::{self, get, need, Figures};
use crate::common::{cpu_time, thread_cpu_time, Rng};
use crate::config::{arg, Config};
use crate::report::{mean, spread};

/// The read timeout: 1.5 times the clients' 5 s keep-alive, as the broker's.
const READ_TIMEOUT: Duration = Duration::from_millis(7_500);
/// Each connection gets one message per period, at a phase of its own.
const PERIOD: Duration = Duration::from_secs(5);
/// Connections beyond the N that get one message early and none after:
/// their read timeouts fire, spread over [`IDLE_SPREAD`].
const IDLE: usize = 64;
/// When the idle connections get their one message, after the start.
const IDLE_FIRST: Duration = Duration::from_millis(500);
/// Over how long their messages (and so their closes) are spread.
const IDLE_SPREAD: Duration = Duration::from_millis(1_500);

/// The router sends at most once per this: every message due by then.
const ROUTER_TURN: Duration = Duration::from_millis(1);

/// The contenders: (child name, name in the table).
const CONTENDERS: [(&str, &str); 4] = [
    ("floor", "floor (no timeout)"),
    ("timer", "hashwheel Timer::timeout"),
    ("time", "hashwheel::time::timeout"),
    ("tokio", "tokio::time::timeout"),
];

/// The sizes a run measures, unless `--connections=N` names one.
const SIZES: [usize; 2] = [10_000, 50_000];

/// The lateness of the idle connections' closes, µs.
type Closes = Arc<Mutex<Vec<i64>>>;

/// Records an idle connection's close: its timeout was built just after
/// `pass`, so it was due at `pass + READ_TIMEOUT` at the earliest.
fn closed(closes: &Closes, pass: Instant) {
    let due = pass + READ_TIMEOUT;
    let now = Instant::now();
    let late = match now.checked_duration_since(due) {
        Some(late) => late.as_micros() as i64,
        None => -(due.duration_since(now).as_micros() as i64) - 1,
    };
    closes.lock().unwrap().push(late);
}

/// A connection's loop: `select!` over the channel and `$read` wrapped by
/// `$timeout` (a fresh one every pass). An idle connection (`closes`)
/// notes when each pass began, and closes when its timeout fires.
macro_rules! connection {
    ($rx:ident, $closes:ident, |$read:ident| $timeout:expr) => {{
        let (mut reader, _writer) = tokio::io::duplex(64);
        let mut buf = [0u8; 64];
        loop {
            let pass = $closes.as_ref().map(|_| Instant::now());
            let $read = reader.read(&mut buf);
            tokio::select! {
                msg = $rx.recv() => {
                    if msg.is_none() {
                        break;
                    }
                }
                res = $timeout => {
                    if res.is_err() {
                        if let (Some(closes), Some(pass)) = (&$closes, pass) {
                            closed(closes, pass);
                        }
                        break;
                    }
                    unreachable!("the pipe never delivers");
                }
            }
        }
    }};
}

async fn conn_tokio(mut rx: UnboundedReceiver<()>, closes: Option<Closes>) {
    connection!(rx, closes, |read| tokio::time::timeout(READ_TIMEOUT, read));
}

async fn conn_time(mut rx: UnboundedReceiver<()>, closes: Option<Closes>) {
    connection!(rx, closes, |read| hashwheel::time::timeout(
        READ_TIMEOUT,
        read
    ));
}

async fn conn_timer(timer: Timer, mut rx: UnboundedReceiver<()>, closes: Option<Closes>) {
    connection!(rx, closes, |read| timer.timeout(READ_TIMEOUT, read));
}

/// The floor: the same loop and pipe with no timeout (idle connections
/// never close here).
async fn conn_floor(mut rx: UnboundedReceiver<()>) {
    let (mut reader, _writer) = tokio::io::duplex(64);
    let mut buf = [0u8; 64];
    loop {
        tokio::select! {
            msg = rx.recv() => {
                if msg.is_none() {
                    break;
                }
            }
            _ = reader.read(&mut buf) => unreachable!("the pipe never delivers"),
        }
    }
}

/// The router's plan: connection `i` of `live` gets one message every
/// [`PERIOD`] at `start + phases[i]`, and idle connection `k` one message
/// at `start + IDLE_FIRST + k × IDLE_SPREAD / IDLE`.
struct Plan {
    senders: Vec<UnboundedSender<()>>,
    live: usize,
    start: Instant,
    /// (phase µs, connection), by phase.
    order: Vec<(u64, usize)>,
    idle: Vec<Instant>,
    cursor: usize,
    round: u32,
    next_idle: usize,
    /// When it last sent.
    last: Instant,
}

impl Plan {
    fn new(senders: Vec<UnboundedSender<()>>, live: usize, start: Instant, seed: u64) -> Plan {
        let mut rng = Rng(seed);
        let period_us = PERIOD.as_micros() as u64;
        let mut order: Vec<(u64, usize)> = (0..live).map(|i| (rng.below(period_us), i)).collect();
        order.sort_unstable();
        let idle = (0..senders.len() - live)
            .map(|k| start + IDLE_FIRST + IDLE_SPREAD * k as u32 / IDLE as u32)
            .collect();
        Plan {
            senders,
            live,
            start,
            order,
            idle,
            cursor: 0,
            round: 0,
            next_idle: 0,
            last: start - ROUTER_TURN,
        }
    }

    fn live_at(&self) -> Option<Instant> {
        let (phase, _) = self.order.get(self.cursor)?;
        Some(self.start + PERIOD * self.round + Duration::from_micros(*phase))
    }

    /// When it sends next: the next message's instant, and at least
    /// [`ROUTER_TURN`] after it last sent (at most one batch a
    /// millisecond: a router that woke the runtime for every message would
    /// measure the runtime's park and unpark, most of the CPU at one
    /// message a wake, rather than its timer). `None`: nothing more.
    fn next(&self) -> Option<Instant> {
        let next = match (self.live_at(), self.idle.get(self.next_idle)) {
            (Some(a), Some(&b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => return None,
        };
        Some(next.max(self.last + ROUTER_TURN))
    }

    /// Sends every message due by `now`.
    fn send(&mut self, now: Instant) {
        self.last = now;
        while self.live_at().is_some_and(|at| at <= now) {
            let _ = self.senders[self.order[self.cursor].1].send(());
            self.cursor += 1;
            if self.cursor == self.order.len() {
                (self.cursor, self.round) = (0, self.round + 1);
            }
        }
        while self.idle.get(self.next_idle).is_some_and(|&at| at <= now) {
            let _ = self.senders[self.live + self.next_idle].send(());
            self.next_idle += 1;
        }
    }
}

/// The router thread: sleeps until the plan's next batch and sends it,
/// until the process exits.
fn router(mut plan: Plan) {
    while let Some(next) = plan.next() {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        plan.send(Instant::now());
    }
}

/// The seed of the connections' phases, the same for every contender.
const SEED: u64 = 0x5eed_0014;

/// The child: one contender at one size; prints its figures as one
/// `W14CHILD key=value ...` line.
pub fn child(which: &str, _cfg: &Config) {
    let n: usize = need("connections");
    let warmup = Duration::from_millis(need("warmup-ms"));
    let window = Duration::from_millis(need("window-ms"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timer = (which == "timer").then(|| rt.block_on(async { Timer::new() }));
    let closes: Closes = Arc::new(Mutex::new(Vec::with_capacity(IDLE)));
    let ended = Arc::new(AtomicUsize::new(0));
    let figures = rt.block_on(async {
        let mut senders = Vec::with_capacity(n + IDLE);
        for i in 0..n + IDLE {
            let (tx, rx) = unbounded_channel();
            senders.push(tx);
            let idle = (i >= n).then(|| closes.clone());
            let ended = ended.clone();
            match which {
                "floor" => drop(tokio::spawn(conn_floor(rx))),
                "tokio" => drop(tokio::spawn(async move {
                    conn_tokio(rx, idle).await;
                    ended.fetch_add(1, Ordering::Relaxed);
                })),
                "time" => drop(tokio::spawn(async move {
                    conn_time(rx, idle).await;
                    ended.fetch_add(1, Ordering::Relaxed);
                })),
                "timer" => {
                    let timer = timer.clone().expect("a timer");
                    drop(tokio::spawn(async move {
                        conn_timer(timer, rx, idle).await;
                        ended.fetch_add(1, Ordering::Relaxed);
                    }))
                }
                other => panic!("W14: unknown contender {other}"),
            }
        }
        let start = Instant::now() + Duration::from_millis(50);
        let plan = Plan::new(senders, n, start, SEED);
        std::thread::spawn(move || router(plan));
        let (w0, w1) = (start + warmup, start + warmup + window);
        tokio::time::sleep_until(w0).await;
        if Instant::now() > w0 + Duration::from_millis(50) {
            eprintln!("W14 {which}: the warm-up ran late; raise --w14-warmup-ms");
        }
        // The hashwheel timer's driver: its turns and alarm arms over the
        // window (the default timer for `hashwheel::time`).
        let ours = match which {
            "timer" => timer.clone(),
            "time" => Some(Timer::current()),
            _ => None,
        };
        let stats0 = ours.as_ref().map(Timer::stats);
        let (thread0, proc0, wall0) = (thread_cpu_time(), cpu_time(), Instant::now());
        tokio::time::sleep_until(w1).await;
        let (thread1, proc1, wall) = (thread_cpu_time(), cpu_time(), wall0.elapsed());
        let stats1 = ours.as_ref().map(Timer::stats);
        let (turns, arms) = match (stats0, stats1) {
            (Some(a), Some(b)) => (
                (b.driver_wakeups - a.driver_wakeups) as f64,
                (b.alarm_arms - a.alarm_arms) as f64,
            ),
            _ => (0.0, 0.0),
        };
        // The idle connections' closes, wherever the window ended.
        let last_close = start + IDLE_FIRST + IDLE_SPREAD + READ_TIMEOUT;
        tokio::time::sleep_until(last_close.max(w1) + Duration::from_millis(300)).await;
        let secs = wall.as_secs_f64();
        vec![
            ("cpu_ms_s", (thread1 - thread0).as_secs_f64() * 1e3 / secs),
            ("proc_ms_s", (proc1 - proc0).as_secs_f64() * 1e3 / secs),
            ("turns_s", turns / secs),
            ("arms_s", arms / secs),
        ]
    });
    let mut closes = closes.lock().unwrap().clone();
    closes.sort_unstable();
    let at = |q: f64| {
        closes
            .get(((closes.len().max(1) - 1) as f64 * q).round() as usize)
            .map_or(f64::NAN, |&v| v as f64)
    };
    let mut out: Vec<(String, f64)> = figures
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    out.extend([
        ("closes".to_string(), closes.len() as f64),
        ("ended".to_string(), ended.load(Ordering::Relaxed) as f64),
        ("close_min_us".to_string(), at(0.0)),
        ("close_p50_us".to_string(), at(0.5)),
        ("close_max_us".to_string(), at(1.0)),
    ]);
    let line: Vec<String> = out.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("W14CHILD {}", line.join(" "));
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // Tearing 50,000 tasks down is no part of the figures.
    std::process::exit(0);
}

/// Runs a W14 child for `which` at `n` connections.
fn run(which: &str, n: usize, warmup_ms: u64, window_ms: u64) -> Figures {
    let exe = std::env::current_exe().expect("current_exe");
    let out = std::process::Command::new(exe)
        .arg(format!("--w14-child={which}"))
        .arg(format!("--connections={n}"))
        .arg(format!("--warmup-ms={warmup_ms}"))
        .arg(format!("--window-ms={window_ms}"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("W14 child failed to start");
    assert!(
        out.status.success(),
        "W14 child {which} failed: {}",
        out.status
    );
    child::figures(&out.stdout, "W14CHILD ", &format!("W14 {which}"))
}

/// Runs every size and contender in rounds and prints the table.
pub fn w14(cfg: &Config) {
    let rounds: usize = arg("w14-rounds").unwrap_or(if cfg.quick { 2 } else { 3 });
    let warmup_ms: u64 = arg("w14-warmup-ms").unwrap_or(if cfg.quick { 5_200 } else { 6_000 });
    let window_ms: u64 = arg("w14-window-ms").unwrap_or(if cfg.quick { 2_000 } else { 4_000 });
    let sizes: Vec<usize> = match arg::<usize>("connections") {
        Some(n) => vec![n],
        None if cfg.quick => vec![SIZES[0]],
        None => SIZES.to_vec(),
    };
    eprintln!(
        "W14: {} rounds, {warmup_ms} ms warm-up, {window_ms} ms window, sizes {sizes:?}",
        rounds
    );
    let mut results = Vec::new();
    for &n in &sizes {
        let mut these: Vec<Vec<Figures>> = vec![Vec::new(); CONTENDERS.len()];
        for round in 0..rounds {
            for (i, (which, _)) in CONTENDERS.iter().enumerate() {
                let f = run(which, n, warmup_ms, window_ms);
                eprintln!(
                    "W14 {n} conns, round {}: {which} {:.2} runtime CPU ms/s ({:.2} process)",
                    round + 1,
                    get(&f, "cpu_ms_s"),
                    get(&f, "proc_ms_s"),
                );
                these[i].push(f);
            }
        }
        results.push((n, these));
    }
    println!();
    println!(
        "W14 (read timeout rebuilt on every select! pass, current-thread runtime, one message \
         per connection every 5 s, {IDLE} idle connections closed by their 7.5 s timeout): the \
         runtime thread's CPU ms/s per round, the mean's ratio to tokio::time's and the highest \
         single-round ratio (round i against tokio's round i), the cost above the floor (mean; \
         its ratio to tokio's), the process's CPU (the router thread added), and the idle \
         closes' lateness (ms; min over rounds ≥ 0: never early)"
    );
    println!();
    println!("| connections | contender | runtime CPU ms/s (rounds) | mean ÷ tokio | worst round ÷ tokio | above the floor ms/s (÷ tokio's) | process CPU ms/s | close lateness min / p50 / max ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for (n, these) in &results {
        let each = |i: usize, k: &str| -> Vec<f64> { these[i].iter().map(|f| get(f, k)).collect() };
        let tokio = each(3, "cpu_ms_s");
        let floor = mean(&each(0, "cpu_ms_s"));
        let tokio_above = mean(&tokio) - floor;
        for (i, (_, name)) in CONTENDERS.iter().enumerate() {
            let cpu = each(i, "cpu_ms_s");
            let worst = cpu
                .iter()
                .zip(&tokio)
                .map(|(a, b)| a / b)
                .fold(f64::NEG_INFINITY, f64::max);
            let above = mean(&cpu) - floor;
            let above = if i == 0 {
                "–".to_string()
            } else {
                format!("{above:.2} ({:.2}×)", above / tokio_above)
            };
            let closes = if i == 0 {
                "–".to_string()
            } else {
                let min = each(i, "close_min_us")
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min);
                let p50: Vec<f64> = each(i, "close_p50_us").iter().map(|v| v / 1e3).collect();
                let max = each(i, "close_max_us")
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                let count: f64 = each(i, "closes").iter().sum();
                if count < (IDLE * these[i].len()) as f64 {
                    eprintln!(
                        "W14 {n}: {name} closed {count} idle connections of {}",
                        IDLE * these[i].len()
                    );
                }
                format!("{:.3} / {} / {:.3}", min / 1e3, spread(&p50, 3), max / 1e3)
            };
            let shown: Vec<String> = cpu.iter().map(|v| format!("{v:.1}")).collect();
            println!(
                "| {n} | {name} | {} | {:.2}× | {worst:.2}× | {above} | {} | {closes} |",
                shown.join(", "),
                mean(&cpu) / mean(&tokio),
                spread(&each(i, "proc_ms_s"), 1),
            );
        }
    }
}

/// W14's timer work alone (`--only=W14C`): the cycle a connection's timer
/// goes through per message, without the runtime's wakes around it, so
/// that a change to the timer shows through a shared machine's noise. N
/// slots (each a boxed `Option` of the contender's future, allocated
/// beside a 512-byte block that stands for the rest of the connection's
/// task), visited in a fixed random order, pass after pass: the block's
/// lines touched, the slot's timeout replaced by a fresh `timeout(7.5 s,
/// pending())` (the old one dropped pending) and polled once (registered).
/// Returns CPU ns per cycle over `passes` passes after one of warm-up.
fn cycle_child(which: &str, n: usize, passes: usize) -> f64 {
    use std::future::{pending, Future};
    use std::pin::Pin;
    use std::task::Context;

    async fn run<T: Future>(n: usize, passes: usize, make: impl Fn() -> T) -> f64 {
        let mut slots: Vec<Pin<Box<Option<T>>>> = Vec::with_capacity(n);
        let mut blocks: Vec<Box<[u64; 64]>> = Vec::with_capacity(n);
        for _ in 0..n {
            slots.push(Box::pin(None));
            blocks.push(Box::new([0; 64]));
        }
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = Rng(0x5eed_0014);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut cpu0 = thread_cpu_time();
        for pass in 0..=passes {
            if pass == 1 {
                cpu0 = thread_cpu_time();
            }
            for (k, &i) in order.iter().enumerate() {
                for line in blocks[i].iter_mut().step_by(8) {
                    *line += 1;
                }
                let slot = &mut slots[i];
                slot.set(Some(make()));
                // Polled once with the task's waker: registered.
                std::future::poll_fn(|cx: &mut Context<'_>| {
                    if let Some(fut) = slot.as_mut().as_pin_mut() {
                        assert!(fut.poll(cx).is_pending());
                    }
                    std::task::Poll::Ready(())
                })
                .await;
                // The runtime parks between batches of messages, as it
                // does between the router's batches: its drivers run.
                if k % BATCH == BATCH - 1 {
                    tokio::task::yield_now().await;
                }
            }
        }
        let ns = (thread_cpu_time() - cpu0).as_nanos() as f64 / (n * passes) as f64;
        std::hint::black_box(&blocks);
        ns
    }
    /// Cycles between two yields to the runtime.
    const BATCH: usize = 8;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        match which {
            "floor" => run(n, passes, pending::<()>).await,
            "tokio" => {
                run(n, passes, || {
                    tokio::time::timeout(READ_TIMEOUT, pending::<()>())
                })
                .await
            }
            "time" => {
                run(n, passes, || {
                    hashwheel::time::timeout(READ_TIMEOUT, pending::<()>())
                })
                .await
            }
            "timer" => {
                let timer = Timer::new();
                run(n, passes, || timer.timeout(READ_TIMEOUT, pending::<()>())).await
            }
            other => panic!("W14C: unknown contender {other}"),
        }
    })
}

/// `--only=W14C`: [`cycle_child`] for every contender, each in its own
/// process, rounds alternating; prints ns per cycle and above the floor.
pub fn w14_cycle(cfg: &Config) {
    let rounds: usize = arg("w14-rounds").unwrap_or(3);
    let passes: usize = arg("w14-passes").unwrap_or(if cfg.quick { 5 } else { 20 });
    let sizes: Vec<usize> = match arg::<usize>("connections") {
        Some(n) => vec![n],
        None => SIZES.to_vec(),
    };
    println!();
    println!("W14C (the timer's cycle alone: drop pending, create, register; N slots in a random order, {passes} passes): CPU ns per cycle by round, and the mean above the floor");
    println!();
    println!("| connections | contender | ns per cycle (rounds) | above the floor (÷ tokio's) |");
    println!("|---|---|---|---|");
    for n in sizes {
        let mut ns: Vec<Vec<f64>> = vec![Vec::new(); CONTENDERS.len()];
        for _ in 0..rounds {
            for (i, (which, _)) in CONTENDERS.iter().enumerate() {
                let exe = std::env::current_exe().expect("current_exe");
                let out = std::process::Command::new(exe)
                    .arg(format!("--w14-cycle={which}"))
                    .arg(format!("--connections={n}"))
                    .arg(format!("--w14-passes={passes}"))
                    .stderr(std::process::Stdio::inherit())
                    .output()
                    .expect("W14C child failed to start");
                assert!(out.status.success(), "W14C child {which} failed");
                let f = child::figures(&out.stdout, "W14CYCLE ", "W14C");
                ns[i].push(get(&f, "ns"));
            }
        }
        let floor = mean(&ns[0]);
        let tokio_above = mean(&ns[3]) - floor;
        for (i, (_, name)) in CONTENDERS.iter().enumerate() {
            let shown: Vec<String> = ns[i].iter().map(|v| format!("{v:.1}")).collect();
            let above = mean(&ns[i]) - floor;
            println!(
                "| {n} | {name} | {} | {} |",
                shown.join(", "),
                if i == 0 {
                    "–".to_string()
                } else {
                    format!("{above:.1} ({:.2}×)", above / tokio_above)
                }
            );
        }
    }
}

/// The `--w14-cycle=...` child.
pub fn cycle_main(which: &str) {
    let n: usize = need("connections");
    let passes: usize = need("w14-passes");
    let ns = cycle_child(which, n, passes);
    println!("W14CYCLE ns={ns}");
}
