//! W13: a smol burst, as a new user's smol program writes it (issue 45).
//! 10,000 tasks on one smol `Executor` (run by `smol::block_on` on one
//! thread, which also drives async-io's reactor), each awaiting
//! `Timer::after(d)` with `d` uniform in 1–11 ms; then one task awaiting
//! `Timer::after(300 µs)` 300 times in a row, and `Timer::after(1 ms)` 300
//! times. The same code built with async-io's `Timer` and with
//! `hashwheel::async_io::Timer` (the `use` line is the switch), each in a
//! child process of its own, rounds alternating. Figures: lateness (the
//! instant the task resumed − (the instant before the timer was made + `d`))
//! p50 / p99 / max and min (≥ 0: never early), in µs; process CPU ms of the
//! burst.

use std::time::{Duration, Instant};

use crate::child::{self, get, need};
use crate::common::{cpu_time, Rng};
use crate::config::Config;

/// Timers in the burst.
pub const BURST: usize = 10_000;

/// Sleeps in a row of each short duration.
pub const SHORT: usize = 300;

/// The contenders: (child name, name in the table).
pub const CONTENDERS: &[(&str, &str)] = &[
    ("async-io", "async-io Timer (smol::Timer)"),
    #[cfg(feature = "thread-driver")]
    ("async-io-dropin", "hashwheel::async_io::Timer"),
];

/// The parts: (child mode, name in the table).
pub const MODES: &[(&str, &str)] = &[
    ("burst", "burst of 10,000 after(1–11 ms)"),
    ("300us", "300 × after(300 µs) in a row"),
    ("1ms", "300 × after(1 ms) in a row"),
];

/// Lateness in ns (negative: early) of a timer of `d` made after `start`.
fn lateness(start: Instant, d: Duration) -> i64 {
    let now = Instant::now();
    let due = start + d;
    match now.checked_duration_since(due) {
        Some(late) => late.as_nanos() as i64,
        None => -(due.duration_since(now).as_nanos() as i64) - 1,
    }
}

/// The lateness of a part's timers (ns; negative: early).
struct Lateness {
    all: Vec<i64>,
    /// The burst's timers due after its last task made its timer, and
    /// [`SETTLE`] more: what the executor's backlog of first polls (its
    /// own queue, not any timer's doing) no longer delays.
    steady: Vec<i64>,
    /// From the first task's timer to the last's.
    setup: Duration,
}

/// After the burst's last timer is made, how long the executor takes to
/// drain the tasks its first polls held up (see [`Lateness::steady`]).
const SETTLE: Duration = Duration::from_millis(1);

impl Lateness {
    /// `timers`: each task's (start, deadline, lateness).
    fn of_burst(timers: &[(Instant, Instant, i64)]) -> Lateness {
        let first = timers.iter().map(|t| t.0).min();
        let last = timers.iter().map(|t| t.0).max();
        let (Some(first), Some(last)) = (first, last) else {
            return Lateness {
                all: Vec::new(),
                steady: Vec::new(),
                setup: Duration::ZERO,
            };
        };
        Lateness {
            all: timers.iter().map(|t| t.2).collect(),
            steady: timers
                .iter()
                .filter(|t| t.1 > last + SETTLE)
                .map(|t| t.2)
                .collect(),
            setup: last - first,
        }
    }
}

/// p0, p50, p99 and p100 of `late` (ns), in µs; zeros if empty.
fn quantiles(late: &mut [i64]) -> [f64; 4] {
    late.sort_unstable();
    let n = late.len();
    if n == 0 {
        return [0.0; 4];
    }
    [0.0, 0.5, 0.99, 1.0].map(|q| late[((n - 1) as f64 * q).round() as usize] as f64 / 1e3)
}

/// The program, written once against async-io's `Timer` API and built with
/// each contender's `Timer`.
macro_rules! program {
    ($burst:ident, $row:ident, $timer:ty) => {
        async fn $burst(ex: &smol::Executor<'_>) -> Lateness {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            let tasks: Vec<_> = (0..BURST)
                .map(|_| {
                    let d = Duration::from_micros(1_000 + rng.below(10_000));
                    ex.spawn(async move {
                        let start = Instant::now();
                        <$timer>::after(d).await;
                        (start, start + d, lateness(start, d))
                    })
                })
                .collect();
            let mut timers = Vec::with_capacity(BURST);
            for task in tasks {
                timers.push(task.await);
            }
            Lateness::of_burst(&timers)
        }

        async fn $row(d: Duration) -> Lateness {
            let mut late = Vec::with_capacity(SHORT);
            for _ in 0..SHORT {
                let start = Instant::now();
                <$timer>::after(d).await;
                late.push(lateness(start, d));
            }
            Lateness {
                all: late,
                steady: Vec::new(),
                setup: Duration::ZERO,
            }
        }
    };
}

program!(burst_async_io, row_async_io, async_io::Timer);
#[cfg(feature = "thread-driver")]
program!(burst_dropin, row_dropin, hashwheel::async_io::Timer);

/// The child: one contender, one part; prints the lateness figures.
pub fn child(_cfg: &Config) {
    let which: String = need("contender");
    let mode: String = need("mode");
    let ex = smol::Executor::new();
    let short = match mode.as_str() {
        "300us" => Some(Duration::from_micros(300)),
        "1ms" => Some(Duration::from_millis(1)),
        "burst" => None,
        other => panic!("W13: unknown part {other}"),
    };
    // Warm up: the timer (and, for ours, its thread) started.
    let (cpu0, mut late) = smol::block_on(ex.run(async {
        match which.as_str() {
            "async-io" => {
                row_async_io(Duration::from_micros(100)).await;
            }
            #[cfg(feature = "thread-driver")]
            "async-io-dropin" => {
                row_dropin(Duration::from_micros(100)).await;
            }
            other => panic!("W13: unknown contender {other}"),
        }
        let cpu0 = cpu_time();
        let late = match (which.as_str(), short) {
            ("async-io", None) => burst_async_io(&ex).await,
            ("async-io", Some(d)) => row_async_io(d).await,
            #[cfg(feature = "thread-driver")]
            ("async-io-dropin", None) => burst_dropin(&ex).await,
            #[cfg(feature = "thread-driver")]
            ("async-io-dropin", Some(d)) => row_dropin(d).await,
            _ => unreachable!(),
        };
        (cpu0, late)
    }));
    let cpu = cpu_time() - cpu0;
    let [min, p50, p99, max] = quantiles(&mut late.all);
    let [smin, s50, s99, smax] = quantiles(&mut late.steady);
    child::report(&[
        ("count", late.all.len() as f64),
        ("min_us", min),
        ("p50_us", p50),
        ("p99_us", p99),
        ("max_us", max),
        ("cpu_ms", cpu.as_secs_f64() * 1e3),
        ("setup_us", late.setup.as_secs_f64() * 1e6),
        ("steady", late.steady.len() as f64),
        ("steady_min_us", smin),
        ("steady_p50_us", s50),
        ("steady_p99_us", s99),
        ("steady_max_us", smax),
    ]);
}

/// One child: `which` on part `mode`; its figures.
pub fn run(which: &str, mode: &str, round: usize) -> child::Figures {
    let figures = child::run(
        "W13",
        &[("contender", which.to_string()), ("mode", mode.to_string())],
    );
    eprintln!(
        "W13 {mode} round {round}: {which}: p50 {:.1} µs, p99 {:.1} µs, max {:.0} µs, \
         min {:.1} µs, {:.1} CPU ms, first polls over {:.0} µs",
        get(&figures, "p50_us"),
        get(&figures, "p99_us"),
        get(&figures, "max_us"),
        get(&figures, "min_us"),
        get(&figures, "cpu_ms"),
        get(&figures, "setup_us"),
    );
    figures
}
