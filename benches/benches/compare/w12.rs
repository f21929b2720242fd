//! W12: short sleeps (precision). `light`: one task sleeps 2,000 times in
//! a row, each for a duration uniform in 50–2,000 µs; `busy`: 1,000 tasks
//! each loop such sleeps for a few seconds. Lateness = when the task
//! resumed − (start + duration), p50 / p99 / max and min (never early:
//! min ≥ 0), in µs; `busy` also gives process CPU ns per sleep. On a
//! current-thread runtime and on 2 workers, each contender in a child
//! process of its own; `std::thread::sleep` on plain threads (one, or one
//! per task) is the floor, outside any runtime.

use std::time::{Duration, Instant};

use hashwheel::Timer;

use crate::child::{self, flavour_name, get, need, ALT_NOTE, ALT_TIMER};
use crate::common::{cpu_time, p50_p99, Rng, WakeStamped};
use crate::config::Config;
use crate::report::{lines, Line};

/// The contenders in a runtime: (child name, name in the table).
const CONTENDERS: &[(&str, &str)] = &[
    ("timer", "hashwheel Timer (1 ms tick)"),
    // ---- thread-driver: the contenders of the thread-driver branch ----
    // `Timer::builder().tick(50 µs).driver_thread().build()` and
    // `hashwheel::Delay::new(d)` as futures-timer's `Delay`.
    #[cfg(feature = "thread-driver")]
    ("timer-thread", "hashwheel Timer, thread driver, 50 µs tick"),
    #[cfg(feature = "thread-driver")]
    ("delay", "hashwheel::Delay"),
    #[cfg(feature = "thread-driver")]
    ("async-io-dropin", "hashwheel::async_io::Timer"),
    // ---- end of the thread-driver contenders ----
    ("tokio", "tokio::time::sleep"),
    ("alt", "tokio alternative timer"),
    ("futures-timer", "futures-timer Delay"),
    ("async-io", "async-io Timer"),
];

/// The floor, on plain threads.
const FLOOR: (&str, &str) = ("std", "std::thread::sleep (floor)");

/// Tasks in `busy`.
const BUSY_TASKS: usize = 1_000;

/// Stack of each floor thread in `busy` (a thousand of them).
const FLOOR_STACK: usize = 64 * 1024;

impl Rng {
    /// Uniform in 50..2,000 µs.
    fn short_sleep(&mut self) -> Duration {
        Duration::from_micros(50 + self.below(1_950))
    }
}

/// Lateness in ns (negative: early) of a sleep of `d` begun at `start`.
fn lateness(start: Instant, d: Duration) -> i64 {
    let now = Instant::now();
    let due = start + d;
    match now.checked_duration_since(due) {
        Some(late) => late.as_nanos() as i64,
        None => -(due.duration_since(now).as_nanos() as i64) - 1,
    }
}

/// One sleep of `d` through `which`.
async fn sleep(which: &str, d: Duration, timer: &Option<Timer>) {
    match which {
        "tokio" | "alt" => tokio::time::sleep(d).await,
        "timer" => timer.as_ref().expect("timer").sleep(d).await,
        #[cfg(feature = "thread-driver")]
        "timer-thread" => timer.as_ref().expect("timer").sleep(d).await,
        #[cfg(feature = "thread-driver")]
        "delay" => hashwheel::Delay::new(d).await,
        "futures-timer" => futures_timer::Delay::new(d).await,
        "async-io" => {
            async_io::Timer::after(d).await;
        }
        #[cfg(feature = "thread-driver")]
        "async-io-dropin" => {
            hashwheel::async_io::Timer::after(d).await;
        }
        other => panic!("W12: unknown contender {other}"),
    }
}

/// One task's sleeps: `count` of them, or as many as begin before `end`.
/// With `stamps`, also the lateness at the wake of each sleep (its waker's
/// instant less the deadline, ns), which `Stats::lateness` measures.
async fn sleeper(
    which: String,
    seed: u64,
    count: usize,
    end: Option<Instant>,
    timer: Option<Timer>,
    mut stamps: Option<&mut Vec<i64>>,
) -> Vec<i64> {
    let mut rng = Rng(seed);
    let mut late = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        if end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
        let d = rng.short_sleep();
        let start = Instant::now();
        if let Some(stamps) = stamps.as_deref_mut() {
            let mut fut = WakeStamped::new(sleep(&which, d, &timer));
            (&mut fut).await;
            if let Some(woken) = fut.woken() {
                stamps.push(woken.saturating_duration_since(start + d).as_nanos() as i64);
            }
        } else {
            sleep(&which, d, &timer).await;
        }
        late.push(lateness(start, d));
    }
    late
}

/// The floor's sleeps on this thread, as [`sleeper`].
fn floor_sleeper(seed: u64, count: usize, end: Option<Instant>) -> Vec<i64> {
    let mut rng = Rng(seed);
    let mut late = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        if end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
        let d = rng.short_sleep();
        let start = Instant::now();
        std::thread::sleep(d);
        late.push(lateness(start, d));
    }
    late
}

/// The timer `which` needs, if any.
fn timer_for(which: &str, rt: &tokio::runtime::Runtime) -> Option<Timer> {
    match which {
        "timer" => Some(rt.block_on(async { Timer::new() })),
        #[cfg(feature = "thread-driver")]
        "timer-thread" => Some(
            Timer::builder()
                .tick(Duration::from_micros(50))
                .driver_thread()
                .build()
                .expect("thread-driven timer"),
        ),
        _ => None,
    }
}

fn seed(task: usize) -> u64 {
    0x9e37_79b9_7f4a_7c15 ^ (task as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The child: one contender, one flavour, one mode.
pub fn child(_cfg: &Config) {
    let which: String = need("contender");
    let flavour: String = need("flavour");
    let mode: String = need("mode");
    let count: usize = need("count");
    let secs: f64 = need("secs");
    let busy = mode == "busy";
    let (tasks, per_task) = if busy {
        (BUSY_TASKS, usize::MAX)
    } else {
        (1, count)
    };
    let window = Duration::from_secs_f64(secs);
    let mut stamped: Vec<(&str, f64)> = Vec::new();
    let (late, cpu): (Vec<Vec<i64>>, Duration) = if which == "std" {
        let cpu0 = cpu_time();
        let end = busy.then(|| Instant::now() + window);
        let threads: Vec<_> = (0..tasks)
            .map(|t| {
                std::thread::Builder::new()
                    .stack_size(FLOOR_STACK)
                    .spawn(move || floor_sleeper(seed(t), per_task, end))
                    .expect("floor thread")
            })
            .collect();
        let late = threads
            .into_iter()
            .map(|h| h.join().expect("floor"))
            .collect();
        (late, cpu_time() - cpu0)
    } else {
        let rt = child::runtime(&flavour, which == "alt");
        let timer = timer_for(&which, &rt);
        // Warm up: a few sleeps through the contender (helper threads
        // started, the runtime's timer set up).
        rt.block_on(sleeper(which.clone(), 7, 20, None, timer.clone(), None));
        if !busy && timer.is_some() {
            // The timer's own lateness (`Stats::lateness`) beside the
            // lateness at the wake (a stamping waker) and the task's, in
            // a run of its own: the stamps cost an allocation per poll.
            let timer = timer.clone().expect("timer");
            let before = timer.stats().lateness;
            let mut stamps = Vec::with_capacity(count);
            let seen = rt.block_on(sleeper(
                which.clone(),
                seed(0),
                count,
                None,
                Some(timer.clone()),
                Some(&mut stamps),
            ));
            let ours = timer.stats().lateness.since(&before);
            let us = |mut v: Vec<i64>| {
                v.sort_unstable();
                v.into_iter().map(|ns| ns as f64 / 1e3).collect::<Vec<_>>()
            };
            let (w50, w99) = p50_p99(&us(stamps));
            let (t50, t99) = p50_p99(&us(seen));
            let q = |q: f64| ours.quantile(q).as_secs_f64() * 1e6;
            stamped = vec![
                ("timer_p50_us", q(0.5)),
                ("timer_p99_us", q(0.99)),
                ("wake_p50_us", w50),
                ("wake_p99_us", w99),
                ("task_p50_us", t50),
                ("task_p99_us", t99),
            ];
        }
        let cpu0 = cpu_time();
        let end = busy.then(|| Instant::now() + window);
        let late = rt.block_on(async {
            let handles: Vec<_> = (0..tasks)
                .map(|t| {
                    tokio::spawn(sleeper(
                        which.clone(),
                        seed(t),
                        per_task,
                        end,
                        timer.clone(),
                        None,
                    ))
                })
                .collect();
            let mut late = Vec::with_capacity(tasks);
            for h in handles {
                late.push(h.await.expect("sleeper"));
            }
            late
        });
        (late, cpu_time() - cpu0)
    };
    let mut all: Vec<i64> = late.into_iter().flatten().collect();
    all.sort_unstable();
    let n = all.len();
    let p = |q: f64| all[((n - 1) as f64 * q).round() as usize] as f64 / 1e3;
    let mut figures = vec![
        ("count", n as f64),
        ("min_us", p(0.0)),
        ("p50_us", p(0.5)),
        ("p99_us", p(0.99)),
        ("max_us", p(1.0)),
        ("cpu_ns_sleep", cpu.as_nanos() as f64 / n as f64),
    ];
    figures.extend(stamped);
    child::report(&figures);
}

pub fn w12(cfg: &Config) -> Vec<Line> {
    if !ALT_TIMER {
        eprintln!("W12: {ALT_NOTE}");
    }
    eprintln!(
        "W12: light {} sleeps; busy {BUSY_TASKS} tasks for {} s; each contender in a child process",
        cfg.w12_light, cfg.w12_busy_secs
    );
    let mut out = Vec::new();
    for mode in ["light", "busy"] {
        let floor = child::run(
            "W12",
            &[
                ("contender", FLOOR.0.to_string()),
                ("flavour", "thread".to_string()),
                ("mode", mode.to_string()),
                ("count", cfg.w12_light.to_string()),
                ("secs", cfg.w12_busy_secs.to_string()),
            ],
        );
        for flavour in ["ct", "2w"] {
            let mut runs: Vec<(&'static str, Vec<(String, f64)>)> = Vec::new();
            for (which, name) in CONTENDERS {
                if *which == "alt" && (!ALT_TIMER || flavour == "ct") {
                    continue;
                }
                let figures = child::run(
                    "W12",
                    &[
                        ("contender", which.to_string()),
                        ("flavour", flavour.to_string()),
                        ("mode", mode.to_string()),
                        ("count", cfg.w12_light.to_string()),
                        ("secs", cfg.w12_busy_secs.to_string()),
                    ],
                );
                eprintln!(
                    "W12 {mode} {flavour}: {which}: p50 {:.0} µs, p99 {:.0} µs, min {:.1} µs, {} sleeps",
                    get(&figures, "p50_us"),
                    get(&figures, "p99_us"),
                    get(&figures, "min_us"),
                    get(&figures, "count")
                );
                if figures.iter().any(|(k, _)| k == "timer_p50_us") {
                    let f = |k: &str| get(&figures, k);
                    // `Stats::lateness` ends at the wake; the task resumes
                    // after the runtime schedules it.
                    eprintln!(
                        "W12 {mode} {flavour}: {which}: lateness p50 / p99 µs: timer's own \
                         (Stats::lateness) {:.0} / {:.0}, at the wake (stamped waker) \
                         {:.0} / {:.0}, task-side {:.0} / {:.0}",
                        f("timer_p50_us"),
                        f("timer_p99_us"),
                        f("wake_p50_us"),
                        f("wake_p99_us"),
                        f("task_p50_us"),
                        f("task_p99_us"),
                    );
                }
                // hashwheel never wakes early (the rivals are only reported).
                let ours =
                    which.starts_with("timer") || *which == "delay" || *which == "async-io-dropin";
                assert!(
                    get(&figures, "min_us") >= 0.0 || !ours,
                    "W12: hashwheel ({which}) woke a sleep early"
                );
                runs.push((name, figures));
            }
            runs.push((FLOOR.1, floor.clone()));
            let chart = |fig: &str| -> Option<&'static str> {
                Some(match (mode, flavour, fig) {
                    ("light", "ct", "p50") => "W12 light ct p50",
                    ("light", "ct", "p99") => "W12 light ct p99",
                    ("light", _, "p50") => "W12 light 2w p50",
                    ("light", _, "p99") => "W12 light 2w p99",
                    ("busy", "ct", "p50") => "W12 busy ct p50",
                    ("busy", "ct", "p99") => "W12 busy ct p99",
                    ("busy", _, "p50") => "W12 busy 2w p50",
                    ("busy", _, "p99") => "W12 busy 2w p99",
                    _ => return None,
                })
            };
            let mut figs = vec![
                ("p50_us", "lateness p50, µs", "p50"),
                ("p99_us", "lateness p99, µs", "p99"),
                ("max_us", "lateness max, µs", "max"),
                ("min_us", "lateness min (≥ 0: never early), µs", "min"),
            ];
            if mode == "busy" {
                figs.push(("cpu_ns_sleep", "process CPU ns per sleep", "cpu"));
            }
            for (key, label, fig) in figs {
                let per: Vec<(&'static str, Vec<f64>)> =
                    runs.iter().map(|(c, f)| (*c, vec![get(f, key)])).collect();
                let what = if mode == "light" {
                    format!("light ({} sleeps)", cfg.w12_light)
                } else {
                    format!("busy ({BUSY_TASKS} tasks, {} s)", cfg.w12_busy_secs)
                };
                // The min is a check (≥ 0: never early), not a cost: no ratio.
                let these = lines(
                    "W12",
                    &format!("{what}, {}: {label}", flavour_name(flavour)),
                    &per,
                    CONTENDERS[0].1,
                )
                .places(1)
                .chart(chart(fig))
                .check(fig == "min")
                .rows();
                out.extend(these);
            }
        }
    }
    out
}
