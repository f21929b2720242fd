//! W15: a protocol timer reset after every packet (issue 55).
//!
//! N connection tasks (1,000, 10,000 and 50,000) on a runtime of 1 and of
//! 2 workers, each keeping one timer, as a QUIC library keeps one `Sleep`
//! per connection, that it moves after every packet and every expiry to
//! the earliest of an idle deadline (10 s, pushed later by every packet),
//! a loss-detection deadline (the connection's probe timeout, 6–40 ms,
//! after it sends; cleared by the peer's ack) and an ack-delay deadline
//! (25 ms after an ack-eliciting packet; cleared when an ack goes out):
//! about half those resets move it earlier. A feeder thread sends the
//! peer's packets down each connection's channel (a tokio unbounded
//! mpsc), a batch a millisecond, about 20 a second a connection in
//! flights of one to three, so the timer expires now and then (an ack
//! delay after about a third of the flights, a loss after one in 32).
//! The model (`protocol`) is `examples/protocol_timer_counts`' own, which
//! runs the same sequence on paused time for cachegrind.
//!
//! Contenders, each in a child process of its own (`--child=W15`), the
//! order reversed every other round: `tokio::time::Sleep` (boxed, `reset`),
//! tokio's alternative timer (the same code; built with `--cfg
//! tokio_unstable` only), `hashwheel::time::Sleep` (the `use` line
//! switched), a `Timer` handle's `Timeout` (`reset_at`) and the floor (the
//! same tasks, packets and deadlines with no timer: no expiries). Figures
//! over `--w15-window-ms` after `--w15-warmup-ms`: the process's CPU
//! (the feeder's thread included; without it beside), CPU per packet,
//! context switches (`getrusage`: voluntary and involuntary) per second,
//! the expiries' lateness (the instant the task sees its timer expire
//! less the deadline it was armed for; never below zero), resets and
//! expiries per second, the share of the plan's packets that the
//! connections handled ("came in": below 1, the feeder or the connections
//! fell behind, and the CPU is what the machine let them spend), and the
//! driver turns and alarm arms of the hashwheel timer.
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench compare -- --only=W15 [--quick]
//!     [--connections=N] [--workers=N] [--w15-rounds=3] [--w15-rate=20]
//!     [--w15-warmup-ms=2000] [--w15-window-ms=4000]
//!     [--w15-contenders=floor,timer,time,tokio,alt]
//! ```

#[path = "../../../examples/protocol_timer_counts/protocol.rs"]
mod protocol;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hashwheel::Timer;
use tokio::sync::mpsc::unbounded_channel;
use tokio::time::Instant;

use crate::child::{self, get, need, Figures, ALT_NOTE, ALT_TIMER};
use crate::common::{clock, cpu_time};
use crate::config::{arg, Config};
use crate::report::{mean, spread};
use crate::w9::{w9_lateness, w9_record};
use protocol::{connection, plan, Conn, Expired, Feeder, NoTimer, Record, PERIOD};

/// The contenders: (child name, name in the table).
const CONTENDERS: [(&str, &str); 5] = [
    ("floor", "floor (no timer)"),
    ("timer", "hashwheel Timer (Timeout::reset_at)"),
    ("time", "hashwheel::time::Sleep"),
    ("tokio", "tokio::time::Sleep"),
    ("alt", "tokio alternative timer"),
];

/// The sizes and worker counts a full run measures.
const SIZES: [usize; 3] = [1_000, 10_000, 50_000];
const WORKERS: [usize; 2] = [1, 2];

/// The feeder sends at most a batch a millisecond.
const BATCH: Duration = Duration::from_millis(1);

/// The plan's seed, the same for every contender (and the example's).
const SEED: u64 = 0x5eed_0015;

/// One worker thread's counts (one writer: plain relaxed load + store);
/// read at the window's edges.
#[derive(Default)]
struct Counts {
    packets: AtomicU64,
    resets: AtomicU64,
    earlier: AtomicU64,
    expiries: AtomicU64,
    acks: AtomicU64,
    losses: AtomicU64,
    closed: AtomicU64,
}

/// Every worker thread's counts.
static COUNTS: Mutex<Vec<Arc<Counts>>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: Arc<Counts> = {
        let c = Arc::new(Counts::default());
        COUNTS.lock().unwrap().push(c.clone());
        c
    };
}

fn bump(pick: impl Fn(&Counts) -> &AtomicU64) {
    MINE.with(|c| {
        let a = pick(c);
        a.store(a.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    });
}

/// The sums over every thread, in the order of [`COUNT_KEYS`].
fn totals() -> [u64; 7] {
    let mut out = [0; 7];
    for c in COUNTS.lock().unwrap().iter() {
        let each = [
            &c.packets,
            &c.resets,
            &c.earlier,
            &c.expiries,
            &c.acks,
            &c.losses,
            &c.closed,
        ];
        for (o, a) in out.iter_mut().zip(each) {
            *o += a.load(Ordering::Relaxed);
        }
    }
    out
}

/// The figures of [`totals`], per second over the window.
const COUNT_KEYS: [&str; 7] = [
    "packets_s",
    "resets_s",
    "earlier_s",
    "expiries_s",
    "ack_expiries_s",
    "loss_expiries_s",
    "closed_s",
];

/// Counts into the thread's [`Counts`]; records an expiry's lateness if
/// its deadline fell in `window`.
#[derive(Clone, Copy)]
struct Counted {
    window: (Instant, Instant),
}

impl Record for Counted {
    fn packet(&self) {
        bump(|c| &c.packets);
    }

    fn reset(&self, earlier: bool) {
        bump(|c| &c.resets);
        if earlier {
            bump(|c| &c.earlier);
        }
    }

    fn expired(&self, deadline: Instant, _now: Instant, what: Expired) {
        w9_record(deadline, self.window);
        bump(|c| &c.expiries);
        if what.ack {
            bump(|c| &c.acks);
        }
        if what.loss {
            bump(|c| &c.losses);
        }
        if what.idle {
            bump(|c| &c.closed);
        }
    }
}

/// The voluntary and involuntary context switches of the process.
fn switches() -> (u64, u64) {
    // SAFETY: `usage` is a valid, writable rusage for the call's duration.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    (usage.ru_nvcsw as u64, usage.ru_nivcsw as u64)
}

/// The feeder thread: sends each batch when it is due (at most one a
/// [`BATCH`]), counting the packets sent into `sent`, until the process
/// exits.
fn feed(mut feeder: Feeder, start: Instant, sent: Arc<AtomicU64>) {
    let mut last = start - BATCH;
    loop {
        let at = feeder.next_at().max(last + BATCH);
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
        last = Instant::now();
        feeder.send_due(last);
        sent.store(feeder.sent, Ordering::Relaxed);
    }
}

/// The CPU clock of the thread of `handle` (the feeder's), which this
/// thread reads at the window's edges.
fn cpu_clock_of<T>(handle: &std::thread::JoinHandle<T>) -> libc::clockid_t {
    use std::os::unix::thread::JoinHandleExt;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the thread is alive (it never returns) and `clock` is a
    // valid, writable clockid_t for the call's duration.
    let rc = unsafe { libc::pthread_getcpuclockid(handle.as_pthread_t(), &mut clock) };
    assert_eq!(rc, 0, "pthread_getcpuclockid failed");
    clock
}

/// The child: one contender at one size on one runtime; prints its
/// figures as one `CHILD key=value ...` line.
pub fn child(_cfg: &Config) {
    let which: String = need("contender");
    let n: usize = need("connections");
    let flavour: String = need("flavour");
    let rate: u32 = need("rate");
    let warmup = Duration::from_millis(need("warmup-ms"));
    let window_len = Duration::from_millis(need("window-ms"));
    let rt = child::runtime(&flavour, which == "alt");
    let timer = (which == "timer").then(|| rt.block_on(async { Timer::new() }));
    let plan = plan(n, rate, SEED);
    // The window is known before the connections start (they record the
    // lateness of the deadlines in it); the warm-up covers spawning them.
    let start = Instant::now() + Duration::from_millis(100) + Duration::from_micros(n as u64 * 10);
    let window = (start + warmup, start + warmup + window_len);
    let record = Counted { window };
    let mut senders = Vec::with_capacity(n);
    let now = Instant::now();
    for &pto in &plan.pto {
        let (tx, rx) = unbounded_channel();
        senders.push(tx);
        let conn = Conn::new(now, pto);
        let at = conn.deadline();
        // Each timer made inside its task, on the runtime.
        match (which.as_str(), &timer) {
            ("floor", _) => drop(rt.spawn(connection(rx, conn, NoTimer, record))),
            ("timer", Some(timer)) => {
                let timer = timer.clone();
                drop(rt.spawn(
                    async move { connection(rx, conn, timer.sleep_until(at), record).await },
                ))
            }
            ("time", _) => drop(rt.spawn(async move {
                let sleep = Box::pin(hashwheel::time::sleep_until(at));
                connection(rx, conn, sleep, record).await
            })),
            ("tokio" | "alt", _) => drop(rt.spawn(async move {
                let sleep = Box::pin(tokio::time::sleep_until(at));
                connection(rx, conn, sleep, record).await
            })),
            (other, _) => panic!("W15: unknown contender {other}"),
        }
    }
    if Instant::now() > start {
        eprintln!("W15 {which}: spawning {n} connections outlasted the start");
    }
    // The packets the plan sends a second: what "came in" is measured
    // against (a feeder that fell behind sends fewer).
    let planned_s = plan.events.len() as f64 / PERIOD.as_secs_f64();
    let sent = Arc::new(AtomicU64::new(0));
    let feeder = Feeder::new(plan, senders, start);
    let feeder = {
        let sent = sent.clone();
        std::thread::spawn(move || feed(feeder, start, sent))
    };
    let feeder_clock = cpu_clock_of(&feeder);
    // The hashwheel timer's driver: its turns and alarm arms over the
    // window (the runtime's default timer for `hashwheel::time`).
    let ours = match which.as_str() {
        "timer" => timer.clone(),
        "time" => Some(rt.block_on(async { Timer::current() })),
        _ => None,
    };
    std::thread::sleep(window.0.saturating_duration_since(Instant::now()));
    let stats0 = ours.as_ref().map(Timer::stats);
    let feed0 = (clock(feeder_clock), sent.load(Ordering::Relaxed));
    let (cpu0, csw0, counts0, wall0) = (cpu_time(), switches(), totals(), Instant::now());
    std::thread::sleep(window.1.saturating_duration_since(Instant::now()));
    let (cpu1, csw1, counts1, wall) = (cpu_time(), switches(), totals(), wall0.elapsed());
    let feed1 = (clock(feeder_clock), sent.load(Ordering::Relaxed));
    let stats1 = ours.as_ref().map(Timer::stats);
    // The expiries due by the window's end come in.
    std::thread::sleep(Duration::from_millis(200));
    let secs = wall.as_secs_f64();
    let (turns, arms) = match (stats0, stats1) {
        (Some(a), Some(b)) => (
            (b.driver_wakeups - a.driver_wakeups) as f64,
            (b.alarm_arms - a.alarm_arms) as f64,
        ),
        _ => (0.0, 0.0),
    };
    let (count, min, p50, p99, max) = w9_lateness();
    let cpu_ms = (cpu1 - cpu0).as_secs_f64() * 1e3;
    let feeder_ms = (feed1.0 - feed0.0).as_secs_f64() * 1e3;
    let packets = (counts1[0] - counts0[0]) as f64;
    let mut figures: Vec<(&str, f64)> = vec![
        ("cpu_ms_s", cpu_ms / secs),
        ("feeder_ms_s", feeder_ms / secs),
        ("us_packet", cpu_ms * 1e3 / packets.max(1.0)),
        ("vcsw_s", (csw1.0 - csw0.0) as f64 / secs),
        ("ivcsw_s", (csw1.1 - csw0.1) as f64 / secs),
        ("sent_s", (feed1.1 - feed0.1) as f64 / secs),
        ("planned_s", planned_s),
        ("turns_s", turns / secs),
        ("arms_s", arms / secs),
        ("late_count", count as f64),
        ("min_us", min as f64),
        ("p50_us", p50 as f64),
        ("p99_us", p99 as f64),
        ("max_us", max as f64),
    ];
    for (key, (a, b)) in COUNT_KEYS.iter().zip(counts0.iter().zip(&counts1)) {
        figures.push((key, (b - a) as f64 / secs));
    }
    child::report(&figures);
}

/// The counts and rounds a run uses (`--quick`: 1,000 connections on 2
/// workers, one round of a 1 s window).
struct Setup {
    sizes: Vec<usize>,
    workers: Vec<usize>,
    rounds: usize,
    rate: u32,
    warmup_ms: u64,
    window_ms: u64,
    contenders: Vec<(&'static str, &'static str)>,
}

impl Setup {
    fn from_args(cfg: &Config) -> Setup {
        let (sizes, workers) = if cfg.quick {
            (vec![SIZES[0]], vec![2])
        } else {
            (SIZES.to_vec(), WORKERS.to_vec())
        };
        let picked: Option<String> = arg("w15-contenders");
        let contenders = CONTENDERS
            .iter()
            .copied()
            .filter(|(c, _)| match &picked {
                Some(list) => list.split(',').any(|p| p == *c),
                None => *c != "alt" || ALT_TIMER,
            })
            .collect();
        if let Some(list) = &picked {
            for p in list.split(',') {
                assert!(
                    CONTENDERS.iter().any(|(c, _)| *c == p),
                    "W15: unknown contender {p} (floor, timer, time, tokio, alt)"
                );
            }
        }
        Setup {
            sizes: arg::<usize>("connections").map_or(sizes, |n| vec![n]),
            workers: arg::<usize>("workers").map_or(workers, |w| vec![w]),
            rounds: arg("w15-rounds").unwrap_or(if cfg.quick { 1 } else { 3 }),
            rate: arg("w15-rate").unwrap_or(20),
            warmup_ms: arg("w15-warmup-ms").unwrap_or(if cfg.quick { 500 } else { 2_000 }),
            window_ms: arg("w15-window-ms").unwrap_or(if cfg.quick { 1_000 } else { 4_000 }),
            contenders,
        }
    }
}

/// Runs every size, worker count and contender in rounds and prints the
/// table.
pub fn w15(cfg: &Config) {
    let s = Setup::from_args(cfg);
    assert!(
        s.rounds > 0 && s.rate > 0,
        "W15: --w15-rounds and --w15-rate must be positive"
    );
    assert!(
        s.contenders.iter().any(|(c, _)| *c == "tokio"),
        "W15: the ratios are to tokio::time's: keep tokio among the contenders"
    );
    if !ALT_TIMER {
        eprintln!("W15: {ALT_NOTE}");
    }
    eprintln!(
        "W15: sizes {:?}, workers {:?}, {} rounds, {} packets/s a connection, {} ms warm-up, \
         {} ms window",
        s.sizes, s.workers, s.rounds, s.rate, s.warmup_ms, s.window_ms
    );
    let mut results: Results = Vec::new();
    for &n in &s.sizes {
        for &workers in &s.workers {
            let mut these: Vec<Vec<Figures>> = vec![Vec::new(); s.contenders.len()];
            for round in 0..s.rounds {
                // A-B-C, then C-B-A: drift on a shared machine falls on
                // every contender alike.
                let mut order: Vec<usize> = (0..s.contenders.len()).collect();
                if round % 2 == 1 {
                    order.reverse();
                }
                for i in order {
                    let which = s.contenders[i].0;
                    let f = child::run(
                        "W15",
                        &[
                            ("contender", which.to_string()),
                            ("connections", n.to_string()),
                            ("flavour", format!("{workers}w")),
                            ("rate", s.rate.to_string()),
                            ("warmup-ms", s.warmup_ms.to_string()),
                            ("window-ms", s.window_ms.to_string()),
                        ],
                    );
                    eprintln!(
                        "W15 {n} conns, {workers} workers, round {}: {which} {:.1} CPU ms/s, \
                         {:.0} context switches/s",
                        round + 1,
                        get(&f, "cpu_ms_s"),
                        get(&f, "vcsw_s") + get(&f, "ivcsw_s"),
                    );
                    these[i].push(f);
                }
            }
            results.push(((n, workers), these));
        }
    }
    print_table(&s, &results);
}

/// Each (connections, workers) with every contender's rounds.
type Results = Vec<((usize, usize), Vec<Vec<Figures>>)>;

/// One contender's figure over its rounds.
fn each(rounds: &[Figures], key: &str) -> Vec<f64> {
    rounds.iter().map(|f| get(f, key)).collect()
}

fn print_table(s: &Setup, results: &Results) {
    println!();
    println!(
        "W15 (one protocol timer a connection, reset after every packet to the earliest of its \
         idle, loss and ack-delay deadlines; {} packets/s a connection from a feeder thread; {} \
         rounds, each contender in a child process of its own, the order reversed every other \
         round): process CPU ms/s per round; the mean's ratio to tokio::time's and the spread of \
         the single-round ratios (round i against tokio's round i); the same without the \
         feeder's thread; CPU µs a packet handled; context switches/s, voluntary + involuntary \
         (means) and their sum's ratio to tokio's; resets/s (earlier) and expiries/s (means); \
         the expiries' lateness p50 / p99 ms (spread over rounds), the highest max and the \
         lowest min (µs; ≥ 0: never early); the share of the plan's packets that were handled \
         (lowest round; below 1 the feeder or the connections fell behind); the hashwheel timer's driver turns/s and alarm arms/s",
        s.rate, s.rounds
    );
    println!();
    println!("| connections | workers | contender | CPU ms/s (rounds) | mean ÷ tokio | rounds ÷ tokio | w/o feeder ÷ tokio | µs a packet | csw/s vol + invol | csw ÷ tokio | resets/s (earlier) | expiries/s | p50 ms | p99 ms | max ms | min µs | came in | turns/s, arms/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for ((n, workers), these) in results {
        let tokio_at = s
            .contenders
            .iter()
            .position(|(c, _)| *c == "tokio")
            .expect("tokio ran");
        let tokio = &these[tokio_at];
        let csw = |r: &[Figures]| -> Vec<f64> {
            r.iter()
                .map(|f| get(f, "vcsw_s") + get(f, "ivcsw_s"))
                .collect()
        };
        let own = |r: &[Figures]| -> Vec<f64> {
            r.iter()
                .map(|f| get(f, "cpu_ms_s") - get(f, "feeder_ms_s"))
                .collect()
        };
        for ((which, name), rounds) in s.contenders.iter().zip(these) {
            let cpu = each(rounds, "cpu_ms_s");
            let ratios: Vec<f64> = cpu
                .iter()
                .zip(each(tokio, "cpu_ms_s"))
                .map(|(a, b)| a / b)
                .collect();
            let shown: Vec<String> = cpu.iter().map(|v| format!("{v:.1}")).collect();
            let ms = |k: &str| -> Vec<f64> { each(rounds, k).iter().map(|v| v / 1e3).collect() };
            let min = each(rounds, "min_us")
                .into_iter()
                .fold(f64::INFINITY, f64::min);
            let max = each(rounds, "max_us")
                .into_iter()
                .fold(f64::NEG_INFINITY, f64::max);
            let came_in = rounds
                .iter()
                .map(|f| get(f, "packets_s") / get(f, "planned_s"))
                .fold(f64::INFINITY, f64::min);
            let lateness = if *which == "floor" {
                [
                    "–".to_string(),
                    "–".to_string(),
                    "–".to_string(),
                    "–".to_string(),
                ]
            } else {
                [
                    spread(&ms("p50_us"), 2),
                    spread(&ms("p99_us"), 2),
                    format!("{:.2}", max / 1e3),
                    format!("{min:.0}"),
                ]
            };
            if *which != "floor" && min < 0.0 {
                eprintln!("W15 {n} conns, {workers} workers: {name} expired EARLY ({min} µs)");
            }
            if *which != "floor" && mean(&each(rounds, "expiries_s")) == 0.0 {
                eprintln!("W15 {n} conns, {workers} workers: {name} never expired");
            }
            if came_in < 0.99 {
                eprintln!(
                    "W15 {n} conns, {workers} workers: {name} handled {came_in:.3} of the \
                     plan's packets: the feeder or the connections fell behind"
                );
            }
            let driver = if matches!(*which, "timer" | "time") {
                format!(
                    "{:.0}, {:.0}",
                    mean(&each(rounds, "turns_s")),
                    mean(&each(rounds, "arms_s"))
                )
            } else {
                "–".to_string()
            };
            println!(
                "| {} | {workers} | {name} | {} | {:.2}× | {} | {:.2}× | {:.2} | {:.0} + {:.0} | {:.2}× | {:.0} ({:.0}) | {:.0} | {} | {} | {} | {} | {came_in:.3} | {driver} |",
                crate::charts::thousands(*n),
                shown.join(", "),
                mean(&cpu) / mean(&each(tokio, "cpu_ms_s")),
                spread(&ratios, 2),
                mean(&own(rounds)) / mean(&own(tokio)),
                mean(&each(rounds, "us_packet")),
                mean(&each(rounds, "vcsw_s")),
                mean(&each(rounds, "ivcsw_s")),
                mean(&csw(rounds)) / mean(&csw(tokio)),
                mean(&each(rounds, "resets_s")),
                mean(&each(rounds, "earlier_s")),
                mean(&each(rounds, "expiries_s")),
                lateness[0],
                lateness[1],
                lateness[2],
                lateness[3],
            );
        }
    }
}
