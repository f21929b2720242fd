//! The any-executor tables in one place (issue 45): W10 (a request
//! timeout that completes in time), W12 (short sleeps) and W13 (a smol
//! burst) for hashwheel's thread-driven faces (`Delay`,
//! `hashwheel::async_io::Timer`, a thread-driven `Timer`) against
//! futures-timer and async-io. Every contender runs in a child process of
//! its own (`w10::child`, `w12::child`, `w13::child`), the contenders
//! alternating within each round; each figure is the median of the rounds,
//! with their spread, and each ratio is of medians. The machine's load
//! average is printed before and after, since these VMs are shared.
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench compare -- --only=ANY            # W10A, W12A, W13
//! cargo bench -p hashwheel-benches --bench compare -- --only=W13 --any-rounds=5
//! ```
//!
//! `W10A` is W10 on a current-thread runtime and on 2 tokio workers (the
//! tokio table's "any executor" part, in rounds); `W12A` is W12 `light` and
//! `busy` on 2 workers for these contenders; `W13` is `w13`.

use crate::child::{self, get};
use crate::config::{arg, Config};
use crate::report::median;
use crate::w13;

/// W10's contenders here: (child name, name in the table).
const W10: &[(&str, &str)] = &[
    ("floor", "floor (no timeout)"),
    #[cfg(feature = "thread-driver")]
    ("timer-thread", "Timer::timeout, thread driver"),
    #[cfg(feature = "thread-driver")]
    ("delay", "hashwheel::Delay (select)"),
    #[cfg(feature = "thread-driver")]
    ("async-io-dropin", "hashwheel::async_io::Timer (select)"),
    ("futures-timer", "futures-timer Delay (select)"),
    ("async-io", "async-io Timer (select)"),
];

/// W12's contenders here.
const W12: &[(&str, &str)] = &[
    #[cfg(feature = "thread-driver")]
    ("timer-thread", "Timer, thread driver, 50 µs tick"),
    #[cfg(feature = "thread-driver")]
    ("delay", "hashwheel::Delay"),
    #[cfg(feature = "thread-driver")]
    ("async-io-dropin", "hashwheel::async_io::Timer"),
    ("futures-timer", "futures-timer Delay"),
    ("async-io", "async-io Timer"),
];

/// One figure's rounds for each contender.
struct Figure {
    title: String,
    unit: &'static str,
    places: usize,
    runs: Vec<(&'static str, &'static str, Vec<f64>)>,
}

impl Figure {
    fn new(title: String, unit: &'static str, places: usize) -> Figure {
        Figure {
            title,
            unit,
            places,
            runs: Vec::new(),
        }
    }

    fn push(&mut self, which: &'static str, name: &'static str, value: f64) {
        match self.runs.iter_mut().find(|(w, _, _)| *w == which) {
            Some((_, _, values)) => values.push(value),
            None => self.runs.push((which, name, vec![value])),
        }
    }

    fn median(&self, which: &str) -> Option<f64> {
        self.runs
            .iter()
            .find(|(w, _, _)| *w == which)
            .map(|(_, _, v)| median(v))
    }
}

/// Ratios printed under a table: (label, numerator, denominator).
type Ratios = &'static [(&'static str, &'static str, &'static str)];

fn print(figure: &Figure, ratios: Ratios) {
    let p = figure.places;
    println!();
    println!("{} ({})", figure.title, figure.unit);
    println!();
    println!("| contender | median | min–max | rounds |");
    println!("|-----------|--------|---------|--------|");
    for (_, name, values) in &figure.runs {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let all: Vec<String> = values.iter().map(|v| format!("{v:.p$}")).collect();
        println!(
            "| {name} | {:.p$} | {lo:.p$}–{hi:.p$} | {} |",
            median(values),
            all.join(" / ")
        );
    }
    for (label, num, den) in ratios {
        if let (Some(n), Some(d)) = (figure.median(num), figure.median(den)) {
            if d > 0.0 {
                println!("- {label}: {:.2}×", n / d);
            }
        }
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The rounds: `--any-rounds=N` (3 by default).
fn rounds() -> usize {
    arg("any-rounds").unwrap_or(3)
}

fn w10(cfg: &Config) {
    let loops = cfg.w10_loops;
    for flavour in ["ct", "2w"] {
        let mut cpu = Figure::new(
            format!(
                "W10 any executor, {}: 1,000 tasks × {loops} requests",
                child::flavour_name(flavour)
            ),
            "process CPU ns per request",
            1,
        );
        for round in 0..rounds() {
            for (which, name) in W10 {
                let figures = child::run(
                    "W10",
                    &[
                        ("contender", which.to_string()),
                        ("flavour", flavour.to_string()),
                        ("loops", loops.to_string()),
                    ],
                );
                let ns = get(&figures, "cpu_ns_req");
                eprintln!("W10 any round {round}: {which} on {flavour}: {ns:.1} ns/request");
                cpu.push(which, name, ns);
            }
        }
        print(
            &cpu,
            &[
                (
                    "Delay ÷ thread Timer::timeout (≤ 1.15)",
                    "delay",
                    "timer-thread",
                ),
                (
                    "async-io drop-in ÷ thread Timer::timeout (≤ 1.15)",
                    "async-io-dropin",
                    "timer-thread",
                ),
                ("async-io ÷ drop-in (≥ 2.5)", "async-io", "async-io-dropin"),
                ("futures-timer ÷ Delay (≥ 2.5)", "futures-timer", "delay"),
            ],
        );
    }
}

fn w12(cfg: &Config) {
    for mode in ["light", "busy"] {
        let what = if mode == "light" {
            format!("light, {} sleeps in a row", cfg.w12_light)
        } else {
            format!("busy, 1,000 tasks for {} s", cfg.w12_busy_secs)
        };
        let title = |fig: &str| format!("W12 {what}, 2 workers: {fig}");
        let mut p50 = Figure::new(title("lateness p50"), "µs", 1);
        let mut p99 = Figure::new(title("lateness p99"), "µs", 1);
        let mut min = Figure::new(title("lateness min (≥ 0: never early)"), "µs", 1);
        let mut cpu = Figure::new(title("CPU"), "process CPU ns per sleep", 0);
        for round in 0..rounds() {
            for (which, name) in W12 {
                let figures = child::run(
                    "W12",
                    &[
                        ("contender", which.to_string()),
                        ("flavour", "2w".to_string()),
                        ("mode", mode.to_string()),
                        ("count", cfg.w12_light.to_string()),
                        ("secs", cfg.w12_busy_secs.to_string()),
                    ],
                );
                let f = |k: &str| get(&figures, k);
                eprintln!(
                    "W12 any {mode} round {round}: {which}: p50 {:.0} µs, p99 {:.0} µs, min {:.1} µs, {:.0} ns CPU a sleep",
                    f("p50_us"),
                    f("p99_us"),
                    f("min_us"),
                    f("cpu_ns_sleep")
                );
                p50.push(which, name, f("p50_us"));
                p99.push(which, name, f("p99_us"));
                min.push(which, name, f("min_us"));
                cpu.push(which, name, f("cpu_ns_sleep"));
            }
        }
        let ours: Ratios = &[
            ("Delay ÷ async-io", "delay", "async-io"),
            ("async-io drop-in ÷ async-io", "async-io-dropin", "async-io"),
        ];
        print(&p50, if mode == "light" { ours } else { &[] });
        print(&p99, if mode == "busy" { ours } else { &[] });
        print(&min, &[]);
        if mode == "busy" {
            print(
                &cpu,
                &[
                    ("Delay ÷ futures-timer (≤ 1)", "delay", "futures-timer"),
                    (
                        "async-io drop-in ÷ futures-timer (≤ 1)",
                        "async-io-dropin",
                        "futures-timer",
                    ),
                ],
            );
        }
    }
}

fn w13() {
    for (mode, part) in w13::MODES {
        let title = |fig: &str| format!("W13 smol, one executor thread, {part}: {fig}");
        let mut p50 = Figure::new(title("lateness p50"), "µs", 1);
        let mut p99 = Figure::new(title("lateness p99"), "µs", 1);
        let mut max = Figure::new(title("lateness max"), "µs", 0);
        let mut min = Figure::new(title("lateness min (≥ 0: never early)"), "µs", 1);
        let mut cpu = Figure::new(title("CPU"), "process CPU ms", 1);
        let steady = |fig: &str| {
            title(&format!(
                "{fig} of the timers due 1 ms or more after the last was made"
            ))
        };
        let mut s50 = Figure::new(steady("lateness p50"), "µs", 1);
        let mut s99 = Figure::new(steady("lateness p99"), "µs", 1);
        let mut setup = Figure::new(title("first timer made to last"), "µs", 0);
        for round in 0..rounds() {
            for (which, name) in w13::CONTENDERS {
                let figures = w13::run(which, mode, round);
                let f = |k: &str| get(&figures, k);
                p50.push(which, name, f("p50_us"));
                p99.push(which, name, f("p99_us"));
                max.push(which, name, f("max_us"));
                min.push(which, name, f("min_us"));
                cpu.push(which, name, f("cpu_ms"));
                s50.push(which, name, f("steady_p50_us"));
                s99.push(which, name, f("steady_p99_us"));
                setup.push(which, name, f("setup_us"));
            }
        }
        let ratio: Ratios = &[("drop-in ÷ async-io", "async-io-dropin", "async-io")];
        print(&p50, ratio);
        print(&p99, ratio);
        print(&max, ratio);
        print(&min, &[]);
        print(&cpu, ratio);
        if *mode == "burst" {
            print(&s50, ratio);
            print(&s99, ratio);
            print(&setup, &[]);
        }
    }
}

/// `--only=ANY` (all three), or `W10A`, `W12A`, `W13` alone.
pub fn any(cfg: &Config) {
    let before = load();
    eprintln!("any executor: {} rounds; load average {before}", rounds());
    if cfg.runs("ANY") || cfg.runs("W10A") {
        w10(cfg);
    }
    if cfg.runs("ANY") || cfg.runs("W13") {
        w13();
    }
    if cfg.runs("ANY") || cfg.runs("W12A") {
        w12(cfg);
    }
    println!();
    println!(
        "Load average (1, 5, 15 min) before: {before}; after: {}. Medians of {} rounds, contenders alternating, each in a child process of its own.",
        load(),
        rounds()
    );
}
