//! `hashwheel::time` against `tokio::time` on paused time: the same random
//! scripts, run by the same code with only its `use` line switched, on a
//! paused current-thread runtime of their own, give every task the same
//! values and instants (issue 56, item 2).
//!
//! A script is a main task and a few spawned ones, each a list of steps:
//! sleeps, sleeps until an instant (past ones too), sleeps reset before or
//! after their first poll, timeouts over sleeps, intervals in every
//! missed-tick mode with their resets and a busy task missing ticks,
//! advances of the paused clock by whole milliseconds, microseconds and
//! odd nanoseconds (a third of a millisecond), and yields. Each task logs
//! what every step returned and the instant it saw, relative to the
//! runtime's start. The default timer is first used wherever the script
//! first calls `hashwheel::time`, off the millisecond or not.
//!
//! Seeded and reproducible: `PAUSED_DIFF_SEEDS=N` runs seeds `0..N`
//! (2,000 by default, a few seconds), `PAUSED_DIFF_SEED=S` seed `S` alone
//! with its script printed. The order in which tasks woken within one
//! millisecond run is compared apart, and not asserted (docs/MIGRATING.md).

#![cfg(feature = "test-util")]

use std::fmt::Write as _;
use std::time::Duration;

mod common;

/// The scripts' generator: seeded, reproducible.
struct Rng(common::SplitMix);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.0.percent() < percent
    }

    /// A duration of the kinds paused-time tests use: zero, whole
    /// milliseconds, microseconds, odd nanoseconds, thirds of a
    /// millisecond, and mixes of them.
    fn duration(&mut self) -> Duration {
        match self.below(8) {
            0 => Duration::ZERO,
            1 | 2 => Duration::from_millis(1 + self.below(12)),
            3 => Duration::from_micros(1 + self.below(999)),
            4 => Duration::from_millis(self.below(4)) + Duration::from_micros(self.below(1_000)),
            5 => Duration::from_nanos(1 + self.below(3_000_000)),
            6 => Duration::from_millis(1) / 3 * (1 + self.below(5) as u32),
            _ => Duration::from_millis(self.below(3)) + Duration::from_nanos(self.below(1_000)),
        }
    }

    /// A period: a duration, never zero.
    fn period(&mut self) -> Duration {
        let d = self.duration();
        if d < Duration::from_micros(100) {
            Duration::from_micros(100) + d
        } else {
            d
        }
    }

    /// An offset from now, in nanoseconds: in the past (down to 5 ms
    /// before), now, or ahead.
    fn offset(&mut self) -> i64 {
        let d = self.duration().as_nanos() as i64;
        if self.chance(30) {
            -d.min(5_000_000)
        } else {
            d
        }
    }
}

/// What an interval's task does between ticks.
#[derive(Debug, Clone)]
enum IvStep {
    Tick,
    /// Busy elsewhere (missed ticks, when longer than the period).
    Sleep(Duration),
    Reset,
    ResetImmediately,
    ResetAfter(Duration),
    ResetAt(i64),
}

/// One step of a task.
#[derive(Debug, Clone)]
enum Step {
    Sleep(Duration),
    SleepUntil(i64),
    /// A sleep of `first`, polled once or not, then reset to now plus
    /// `to` and awaited.
    SleepReset {
        first: Duration,
        poll_first: bool,
        to: i64,
    },
    Timeout {
        limit: Duration,
        inner: Duration,
    },
    TimeoutAt {
        at: i64,
        inner: Duration,
    },
    Interval {
        start: Option<i64>,
        period: Duration,
        behavior: u8,
        steps: Vec<IvStep>,
    },
    Advance(Duration),
    Yield,
    /// The main task only: spawns task `n`.
    Spawn(usize),
}

#[derive(Debug, Clone)]
struct Script {
    main: Vec<Step>,
    tasks: Vec<Vec<Step>>,
}

fn step(rng: &mut Rng, advances: u64) -> Step {
    match rng.below(100) {
        0..=19 => Step::Sleep(rng.duration()),
        20..=29 => Step::SleepUntil(rng.offset()),
        30..=39 => Step::SleepReset {
            first: rng.duration(),
            poll_first: rng.chance(50),
            to: rng.offset(),
        },
        40..=49 => Step::Timeout {
            limit: rng.duration(),
            inner: rng.duration(),
        },
        50..=54 => Step::TimeoutAt {
            at: rng.offset(),
            inner: rng.duration(),
        },
        55..=74 => {
            let steps = (0..1 + rng.below(6))
                .map(|_| match rng.below(12) {
                    0..=5 => IvStep::Tick,
                    6 | 7 => IvStep::Sleep(rng.duration() * (1 + rng.below(4) as u32)),
                    8 => IvStep::Reset,
                    9 => IvStep::ResetImmediately,
                    10 => IvStep::ResetAfter(rng.duration()),
                    _ => IvStep::ResetAt(rng.offset()),
                })
                .collect();
            Step::Interval {
                start: rng.chance(50).then(|| rng.offset()),
                period: rng.period(),
                behavior: rng.below(3) as u8,
                steps,
            }
        }
        n if n < 75 + advances => Step::Advance(rng.duration()),
        _ => Step::Yield,
    }
}

fn script(seed: u64) -> Script {
    let mut rng = Rng(common::SplitMix(seed));
    let tasks: Vec<Vec<Step>> = (0..rng.below(4))
        .map(|_| (0..1 + rng.below(6)).map(|_| step(&mut rng, 5)).collect())
        .collect();
    let mut main: Vec<Step> = (0..rng.below(6)).map(|_| step(&mut rng, 20)).collect();
    // The spawns go in among the main task's steps, in order.
    for n in 0..tasks.len() {
        let at = rng.below(main.len() as u64 + 1) as usize;
        let at = main
            .iter()
            .position(|s| matches!(s, Step::Spawn(m) if *m > n))
            .map_or(at, |first_later| at.min(first_later));
        main.insert(at, Step::Spawn(n));
    }
    Script { main, tasks }
}

/// What a task saw: each step's values, with instants in nanoseconds from
/// the runtime's start.
type Log = Vec<String>;

/// The tasks' logs (the main task's first), and the order in which every
/// logged event happened, as (task, event) pairs.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    logs: Vec<Log>,
    order: Vec<(usize, usize)>,
}

/// The runner, written once against the names of `tokio::time` and
/// instantiated twice with only its `use` line switched.
macro_rules! runner {
    ($name:ident, $($time:ident)::+) => {
        mod $name {
            use std::sync::{Arc, Mutex};
            use $($time)::+::{
                advance, interval, interval_at, sleep, sleep_until, timeout, timeout_at, Duration,
                Instant, MissedTickBehavior,
            };

            use super::{IvStep, Log, Outcome, Script, Step};

            struct Ctx {
                base: Instant,
                task: usize,
                log: Log,
                order: Arc<Mutex<Vec<(usize, usize)>>>,
            }

            impl Ctx {
                fn rel(&self, t: Instant) -> i128 {
                    if t >= self.base {
                        (t - self.base).as_nanos() as i128
                    } else {
                        -((self.base - t).as_nanos() as i128)
                    }
                }

                fn at(&self, offset: i64) -> Instant {
                    let now = Instant::now();
                    if offset >= 0 {
                        now + Duration::from_nanos(offset as u64)
                    } else {
                        now - Duration::from_nanos(offset.unsigned_abs())
                    }
                }

                fn log(&mut self, what: String) {
                    let now = self.rel(Instant::now());
                    self.order.lock().unwrap().push((self.task, self.log.len()));
                    self.log.push(format!("{what} @{now}"));
                }
            }

            async fn run_steps(ctx: &mut Ctx, steps: &[Step], spawn: &mut (dyn FnMut(usize) + Send)) {
                for (i, step) in steps.iter().enumerate() {
                    match step {
                        Step::Sleep(d) => {
                            sleep(*d).await;
                            ctx.log(format!("{i} sleep"));
                        }
                        Step::SleepUntil(off) => {
                            sleep_until(ctx.at(*off)).await;
                            ctx.log(format!("{i} sleep_until"));
                        }
                        Step::SleepReset { first, poll_first, to } => {
                            let s = sleep(*first);
                            tokio::pin!(s);
                            if *poll_first {
                                let first = futures::poll!(s.as_mut()).is_ready();
                                ctx.log(format!("{i} first poll {first}"));
                            }
                            let deadline = ctx.at(*to);
                            s.as_mut().reset(deadline);
                            s.as_mut().await;
                            let d = ctx.rel(s.deadline());
                            ctx.log(format!("{i} reset to {d} {}", s.is_elapsed()));
                        }
                        Step::Timeout { limit, inner } => {
                            let r = timeout(*limit, sleep(*inner)).await;
                            ctx.log(format!("{i} timeout {}", r.is_ok()));
                        }
                        Step::TimeoutAt { at, inner } => {
                            let r = timeout_at(ctx.at(*at), sleep(*inner)).await;
                            ctx.log(format!("{i} timeout_at {}", r.is_ok()));
                        }
                        Step::Interval { start, period, behavior, steps } => {
                            let mut iv = match start {
                                Some(off) => interval_at(ctx.at(*off), *period),
                                None => interval(*period),
                            };
                            iv.set_missed_tick_behavior(match behavior {
                                0 => MissedTickBehavior::Burst,
                                1 => MissedTickBehavior::Delay,
                                _ => MissedTickBehavior::Skip,
                            });
                            for (j, s) in steps.iter().enumerate() {
                                match s {
                                    IvStep::Tick => {
                                        let t = iv.tick().await;
                                        let t = ctx.rel(t);
                                        ctx.log(format!("{i}.{j} tick {t}"));
                                    }
                                    IvStep::Sleep(d) => {
                                        sleep(*d).await;
                                        ctx.log(format!("{i}.{j} busy"));
                                    }
                                    IvStep::Reset => iv.reset(),
                                    IvStep::ResetImmediately => iv.reset_immediately(),
                                    IvStep::ResetAfter(d) => iv.reset_after(*d),
                                    IvStep::ResetAt(off) => iv.reset_at(ctx.at(*off)),
                                }
                            }
                        }
                        Step::Advance(d) => {
                            advance(*d).await;
                            ctx.log(format!("{i} advance"));
                        }
                        Step::Yield => {
                            tokio::task::yield_now().await;
                            ctx.log(format!("{i} yield"));
                        }
                        Step::Spawn(n) => spawn(*n),
                    }
                }
            }

            pub fn run(script: &Script) -> Outcome {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .start_paused(true)
                    .build()
                    .unwrap();
                let order = Arc::new(Mutex::new(Vec::new()));
                let logs = rt.block_on(async {
                    let base = Instant::now();
                    let mut handles = Vec::new();
                    let main = {
                        let mut ctx =
                            Ctx { base, task: 0, log: Log::new(), order: order.clone() };
                        let mut spawn = |n: usize| {
                            let steps = script.tasks[n].clone();
                            let order = order.clone();
                            handles.push(tokio::spawn(async move {
                                let mut ctx = Ctx { base, task: n + 1, log: Log::new(), order };
                                run_steps(&mut ctx, &steps, &mut |_| unreachable!()).await;
                                ctx.log
                            }));
                        };
                        run_steps(&mut ctx, &script.main, &mut spawn).await;
                        ctx.log
                    };
                    let mut logs = vec![main];
                    for handle in handles {
                        logs.push(handle.await.unwrap());
                    }
                    logs
                });
                drop(rt);
                let order = std::mem::take(&mut *order.lock().unwrap());
                Outcome { logs, order }
            }
        }
    };
}

runner!(with_tokio, tokio::time);
runner!(with_hashwheel, hashwheel::time);

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("PAUSED_DIFF_SEED") {
        return vec![seed.parse().expect("PAUSED_DIFF_SEED: a number")];
    }
    let n = std::env::var("PAUSED_DIFF_SEEDS")
        .map_or(2_000, |n| n.parse().expect("PAUSED_DIFF_SEEDS: a number"));
    (0..n).collect()
}

fn report(seed: u64, script: &Script, tokio: &Outcome, ours: &Outcome) -> String {
    let mut out = format!("seed {seed}: {script:#?}\n");
    for (task, (t, h)) in tokio.logs.iter().zip(&ours.logs).enumerate() {
        let _ = writeln!(out, "task {task}:\n  tokio:     {t:?}\n  hashwheel: {h:?}");
    }
    let _ = writeln!(
        out,
        "order:\n  tokio:     {:?}\n  hashwheel: {:?}",
        tokio.order, ours.order
    );
    out
}

/// Every task sees the values and instants `tokio::time` gives it, in
/// every script.
#[test]
fn every_task_sees_what_tokio_time_gives_it() {
    let seeds = seeds();
    let one = seeds.len() == 1;
    let mut differ = Vec::new();
    let mut order_differs = Vec::new();
    for &seed in &seeds {
        let script = script(seed);
        let tokio = with_tokio::run(&script);
        let ours = with_hashwheel::run(&script);
        if one {
            println!("{}", report(seed, &script, &tokio, &ours));
        }
        if tokio.logs != ours.logs {
            differ.push(seed);
            if differ.len() == 1 {
                eprintln!("{}", report(seed, &script, &tokio, &ours));
            }
        } else if tokio.order != ours.order {
            order_differs.push(seed);
        }
    }
    eprintln!(
        "{} of {} scripts differ in a task's values or instants; {} more only in the order of \
         the tasks' events (seeds {:?}...)",
        differ.len(),
        seeds.len(),
        order_differs.len(),
        &order_differs[..order_differs.len().min(20)]
    );
    assert!(
        differ.is_empty(),
        "{} of {} scripts differ (seeds {:?}...)",
        differ.len(),
        seeds.len(),
        &differ[..differ.len().min(20)]
    );
}

/// The scripts run the same twice: the comparison above is of two
/// deterministic runs, not of noise.
#[test]
fn a_script_runs_the_same_twice() {
    for seed in 0..200 {
        let script = script(seed);
        assert_eq!(
            with_tokio::run(&script),
            with_tokio::run(&script),
            "seed {seed}"
        );
        assert_eq!(
            with_hashwheel::run(&script),
            with_hashwheel::run(&script),
            "seed {seed}"
        );
    }
}
