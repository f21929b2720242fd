//! W10: the request-timeout wrapper. 1,000 spawned tasks each loop
//! `timeout(30 s, f)` where `f` is pending once (it wakes itself and yields)
//! and then ready, as a request that completes in time. Figure: process CPU
//! ns per request, and the timer's cost above the floor (the same loop with
//! no timeout).
//!
//! Two tables: the tokio one (issue 21: current-thread, 1 and 2 workers;
//! `Timer::timeout`, `hashwheel::time::timeout`, the same timeout in a
//! deadline scope of its own per request and inside one scope per task
//! (issue 46), `tokio::time::timeout`,
//! tokio's alternative timer, pingora-timeout's `fast_timeout`,
//! futures-timer's `Delay` in a select) and "any executor" (issue 22: a
//! 2-thread `futures` `ThreadPool` and 2 tokio workers; futures-timer's
//! `Delay` against async-io's `Timer`, and the thread-driven hashwheel
//! timers with the `thread-driver` feature: `Timer::timeout`, `Delay` and
//! `hashwheel::async_io::Timer`, async-io's API, issue 38). Each contender runs in a child
//! process of its own, rounds alternating.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::{select, Either};
use futures::task::SpawnExt;
use hashwheel::Timer;

use crate::child::{self, flavour_name, get, need, ALT_NOTE, ALT_TIMER};
use crate::common::{cpu_time, D30};
use crate::config::Config;
use crate::report::{lines, Line};

/// Tasks that loop requests at once.
const TASKS: usize = 1_000;

/// A request that completes in time: pending once (it wakes itself), then
/// ready.
struct Request(bool);

impl Future for Request {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn request() -> Request {
    Request(false)
}

/// The contenders on a tokio runtime: (child name, name in the table).
const TOKIO_CONTENDERS: &[(&str, &str)] = &[
    ("floor", "floor (no timeout)"),
    ("timer", "hashwheel Timer::timeout"),
    ("hwtime", "hashwheel::time::timeout"),
    // Issue 46: each request in a deadline scope of its own (30 s) with
    // its timeout inside, what a server pays per request in a scope; and
    // each task's requests inside one scope (60 s), what a timeout pays
    // for being made inside one.
    ("scope", "hashwheel Timer::scope + timeout"),
    ("in-scope", "hashwheel Timer::timeout in a scope"),
    ("tokio", "tokio::time::timeout"),
    ("alt", "tokio alternative timer"),
    ("pingora", "pingora-timeout fast_timeout"),
    ("futures-timer", "futures-timer Delay (select)"),
];

/// The contenders on any executor.
const ANY_CONTENDERS: &[(&str, &str)] = &[
    ("floor", "floor (no timeout)"),
    // ---- thread-driver: the contenders of the thread-driver branch ----
    // `Timer::builder().driver_thread().build()` (its default tick) and
    // `hashwheel::Delay` as futures-timer's `Delay`, in a select.
    #[cfg(feature = "thread-driver")]
    ("timer-thread", "hashwheel Timer::timeout, thread driver"),
    #[cfg(feature = "thread-driver")]
    ("delay", "hashwheel::Delay (select)"),
    // `hashwheel::async_io::Timer`, async-io's `Timer` by its `use` line.
    #[cfg(feature = "thread-driver")]
    ("async-io-dropin", "hashwheel::async_io::Timer (select)"),
    // ---- end of the thread-driver contenders ----
    ("futures-timer", "futures-timer Delay (select)"),
    ("async-io", "async-io Timer (select)"),
];

/// One task's requests, `loops` of them, through `which`'s timeout.
async fn requests(which: String, loops: usize, timer: Option<Timer>) {
    match which.as_str() {
        "floor" => {
            for _ in 0..loops {
                request().await;
            }
        }
        "timer" | "timer-thread" => {
            let timer = timer.expect("a hashwheel timer");
            for _ in 0..loops {
                timer.timeout(D30, request()).await.expect("timed out");
            }
        }
        "scope" => {
            let timer = timer.expect("a hashwheel timer");
            for _ in 0..loops {
                timer
                    .scope(D30, async { timer.timeout(D30, request()).await })
                    .await
                    .expect("the scope ended")
                    .expect("timed out");
            }
        }
        "in-scope" => {
            let timer = timer.expect("a hashwheel timer");
            timer
                .scope(D30 * 2, async {
                    for _ in 0..loops {
                        timer.timeout(D30, request()).await.expect("timed out");
                    }
                })
                .await
                .expect("the scope ended");
        }
        "hwtime" => {
            for _ in 0..loops {
                hashwheel::time::timeout(D30, request())
                    .await
                    .expect("timed out");
            }
        }
        "tokio" | "alt" => {
            for _ in 0..loops {
                tokio::time::timeout(D30, request())
                    .await
                    .expect("timed out");
            }
        }
        "pingora" => {
            for _ in 0..loops {
                pingora_timeout::fast_timeout::fast_timeout(D30, request())
                    .await
                    .expect("timed out");
            }
        }
        "futures-timer" => {
            for _ in 0..loops {
                let deadline = futures_timer::Delay::new(D30);
                match select(request(), deadline).await {
                    Either::Left(_) => {}
                    Either::Right(_) => panic!("timed out"),
                }
            }
        }
        "async-io" => {
            for _ in 0..loops {
                let deadline = async_io::Timer::after(D30);
                match select(request(), deadline).await {
                    Either::Left(_) => {}
                    Either::Right(_) => panic!("timed out"),
                }
            }
        }
        #[cfg(feature = "thread-driver")]
        "async-io-dropin" => {
            for _ in 0..loops {
                let deadline = hashwheel::async_io::Timer::after(D30);
                match select(request(), deadline).await {
                    Either::Left(_) => {}
                    Either::Right(_) => panic!("timed out"),
                }
            }
        }
        #[cfg(feature = "thread-driver")]
        "delay" => {
            for _ in 0..loops {
                let deadline = hashwheel::Delay::new(D30);
                match select(request(), deadline).await {
                    Either::Left(_) => {}
                    Either::Right(_) => panic!("timed out"),
                }
            }
        }
        other => panic!("W10: unknown contender {other}"),
    }
}

/// The hashwheel timer `which` needs, if any, built inside `rt` (a tokio
/// runtime's default driver) or on its own thread.
fn timer_for(which: &str, rt: Option<&tokio::runtime::Runtime>) -> Option<Timer> {
    match which {
        "timer" | "scope" | "in-scope" => Some(
            rt.expect("Timer::timeout needs a tokio runtime")
                .block_on(async { Timer::new() }),
        ),
        #[cfg(feature = "thread-driver")]
        "timer-thread" => Some(
            Timer::builder()
                .driver_thread()
                .build()
                .expect("thread-driven timer"),
        ),
        _ => None,
    }
}

/// The child: one contender on one flavour; prints CPU ns per request.
pub fn child(_cfg: &Config) {
    let which: String = need("contender");
    let flavour: String = need("flavour");
    let loops: usize = need("loops");
    let warm = (loops / 10).max(10);
    let cpu = if flavour == "pool2" {
        let pool = futures::executor::ThreadPool::builder()
            .pool_size(2)
            .create()
            .expect("thread pool");
        let timer = timer_for(&which, None);
        let round = |loops: usize| {
            let handles: Vec<_> = (0..TASKS)
                .map(|_| {
                    pool.spawn_with_handle(requests(which.clone(), loops, timer.clone()))
                        .expect("spawn")
                })
                .collect();
            futures::executor::block_on(futures::future::join_all(handles));
        };
        round(warm);
        let cpu0 = cpu_time();
        round(loops);
        cpu_time() - cpu0
    } else {
        let rt = child::runtime(&flavour, which == "alt");
        let timer = timer_for(&which, Some(&rt));
        let round = |loops: usize| {
            rt.block_on(async {
                let handles: Vec<_> = (0..TASKS)
                    .map(|_| tokio::spawn(requests(which.clone(), loops, timer.clone())))
                    .collect();
                for h in handles {
                    h.await.expect("request task");
                }
            })
        };
        round(warm);
        let cpu0 = cpu_time();
        round(loops);
        cpu_time() - cpu0
    };
    let n = TASKS * loops;
    child::report(&[
        ("cpu_ns_req", cpu.as_nanos() as f64 / n as f64),
        ("requests", n as f64),
    ]);
}

/// Each contender's rounds: `(name, CPU ns per request in each round)`.
type Runs = Vec<(&'static str, Vec<f64>)>;

/// Runs every contender of `contenders` on every flavour, `cfg.w10_rounds`
/// rounds alternating; returns each flavour's `(contender, rounds)`.
fn measure(
    cfg: &Config,
    flavours: &[&str],
    contenders: &[(&'static str, &'static str)],
) -> Vec<(String, Runs)> {
    let mut out: Vec<(String, Runs)> = flavours
        .iter()
        .map(|f| {
            (
                f.to_string(),
                contenders.iter().map(|c| (c.1, Vec::new())).collect(),
            )
        })
        .collect();
    for round in 0..cfg.w10_rounds {
        for (flavour, runs) in &mut out {
            for (i, (which, _)) in contenders.iter().enumerate() {
                if *which == "alt" && (!ALT_TIMER || *flavour == "ct") {
                    continue;
                }
                let figures = child::run(
                    "W10",
                    &[
                        ("contender", which.to_string()),
                        ("flavour", flavour.to_string()),
                        ("loops", cfg.w10_loops.to_string()),
                    ],
                );
                let ns = get(&figures, "cpu_ns_req");
                eprintln!("W10 round {round}: {which} on {flavour}: {ns:.1} CPU ns/request");
                runs[i].1.push(ns);
            }
        }
    }
    out
}

/// The lines of one flavour: CPU per request and the cost above the floor.
fn flavour_lines(
    flavour: &str,
    runs: &[(&'static str, Vec<f64>)],
    ours: &str,
    chart: Option<&'static str>,
    any: bool,
) -> Vec<Line> {
    let what = if any { "any executor, " } else { "" };
    let name = flavour_name(flavour);
    let floor = runs[0].1.clone();
    let mut out = lines("W10", &format!("{what}{name}: CPU ns/request"), runs, ours)
        .floor(Some(runs[0].0))
        .places(1)
        .chart(chart)
        .rows();
    // Above the floor, round by round (each round's floor).
    let above: Vec<(&'static str, Vec<f64>)> = runs[1..]
        .iter()
        .map(|(c, r)| (*c, r.iter().zip(&floor).map(|(v, f)| v - f).collect()))
        .collect();
    out.extend(
        lines(
            "W10",
            &format!("{what}{name}: CPU ns/request above the floor"),
            &above,
            ours,
        )
        .places(1)
        .rows(),
    );
    out
}

pub fn w10(cfg: &Config) -> Vec<Line> {
    if !ALT_TIMER {
        eprintln!("W10: {ALT_NOTE}");
    }
    eprintln!(
        "W10: {TASKS} tasks × {} requests per contender and flavour, {} rounds",
        cfg.w10_loops, cfg.w10_rounds
    );
    let mut out = Vec::new();
    // `--w10-flavours=ct,1w,2w,any` (the default): the tokio table's
    // runtimes (`Nw`: N workers) and, with `any`, the any-executor table.
    let flavours: Vec<&str> = cfg.w10_flavours.split(',').collect();
    let tokio: Vec<&str> = flavours.iter().copied().filter(|f| *f != "any").collect();
    for (flavour, runs) in measure(cfg, &tokio, TOKIO_CONTENDERS) {
        // Only the default runtimes have a chart of their own.
        let chart = match flavour.as_str() {
            "ct" => Some("W10 ct"),
            "1w" => Some("W10 1w"),
            "2w" => Some("W10 2w"),
            _ => None,
        };
        out.extend(flavour_lines(
            &flavour,
            &runs,
            TOKIO_CONTENDERS[1].1,
            chart,
            false,
        ));
    }
    if !flavours.contains(&"any") {
        return out;
    }
    // On any executor, the ratios are to hashwheel's thread-driven timer
    // where it is built, else to futures-timer's (the incumbent).
    let ours = if cfg!(feature = "thread-driver") {
        ANY_CONTENDERS[1].1
    } else {
        "futures-timer Delay (select)"
    };
    for (flavour, runs) in measure(cfg, &["pool2", "2w"], ANY_CONTENDERS) {
        let chart = if flavour == "pool2" {
            "W10 any pool"
        } else {
            "W10 any 2w"
        };
        out.extend(flavour_lines(&flavour, &runs, ours, Some(chart), true));
    }
    out
}
