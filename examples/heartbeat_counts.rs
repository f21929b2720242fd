//! W9's heartbeat storm (see BENCHMARKS.md) on paused time, for counting
//! what one heartbeat costs with `valgrind --tool=cachegrind`: N tasks, each
//! with a 1 s heartbeat interval (phases spread evenly over the second) and
//! a 30 s idle timeout reset after every beat, on a current-thread runtime
//! whose clock tokio advances from one timer to the next. No wall clock is
//! involved, so a run under valgrind does the same work as a run without
//! it, and two runs that differ only in their length differ by exactly
//! `N × seconds` heartbeats.
//!
//! ```text
//! cargo build --release --example heartbeat_counts
//! valgrind --tool=cachegrind --cache-sim=yes \
//!     target/release/examples/heartbeat_counts timer 100000 3
//! ```
//!
//! Run natively, it also prints the real time a heartbeat took after the
//! warm-up: with paused time the thread never waits, so that is CPU time,
//! the timer's and the runtime's work without the parks, system calls and
//! idle wake-ups of a real clock's run (whose CPU is mostly those, and
//! swings with the machine's neighbours). Alternate the contenders over
//! rounds and compare the medians (docs/BENCHMARKS-HISTORY.md, "Where a
//! heartbeat goes"):
//!
//! ```text
//! target/release/examples/heartbeat_counts timer 100000 5
//! ```
//!
//! Arguments: the contender (`timer`: `Timer::interval_at` and
//! `Timer::sleep`; `time`: `hashwheel::time`, the idle `Sleep` boxed as
//! tokio code boxes tokio's; `time-inline`: the same kept in the task;
//! `tokio`: `tokio::time`, the idle `Sleep` boxed; `tokio-inline`: the
//! same kept in the task, `tokio::pin!`), the
//! connections, and the seconds of heartbeats after one second of warm-up.
//! Per-beat figures are the difference between two lengths, divided by
//! `N × (difference in seconds)`.
//!
//! A fourth argument, `polluter`, adds a task that writes 2 MiB every
//! millisecond (on `tokio::time`, for every contender alike): what a park
//! and the kernel do to the caches between two turns on the real clock,
//! which paused time never parks for. Its own misses are the same for
//! every contender; compare a contender's misses a beat with tokio's in
//! the same set-up (docs/BENCHMARKS-HISTORY.md, "Heartbeats, by design").

#[path = "counting/mod.rs"]
mod counting;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Heartbeats taken, by every connection.
static BEATS: AtomicU64 = AtomicU64::new(0);

const HEARTBEAT: Duration = Duration::from_secs(1);
const IDLE: Duration = Duration::from_secs(30);

async fn conn_timer(timer: hashwheel::Timer, first: Instant) {
    let mut hb = timer.interval_at(first, HEARTBEAT);
    let mut idle = timer.sleep(IDLE);
    loop {
        tokio::select! {
            _ = hb.tick() => {
                BEATS.fetch_add(1, Ordering::Relaxed);
                idle.reset(IDLE);
            }
            _ = &mut idle => return,
        }
    }
}

async fn conn_time(first: Instant) {
    let mut hb = hashwheel::time::interval_at(first, HEARTBEAT);
    let mut idle = Box::pin(hashwheel::time::sleep(IDLE));
    loop {
        tokio::select! {
            _ = hb.tick() => {
                BEATS.fetch_add(1, Ordering::Relaxed);
                idle.as_mut().reset(Instant::now() + IDLE);
            }
            _ = idle.as_mut() => return,
        }
    }
}

/// `hashwheel::time` with the idle `Sleep` pinned in the task rather than
/// boxed (it is `Unpin`): what the box costs.
async fn conn_time_inline(first: Instant) {
    let mut hb = hashwheel::time::interval_at(first, HEARTBEAT);
    let mut idle = hashwheel::time::sleep(IDLE);
    loop {
        tokio::select! {
            _ = hb.tick() => {
                BEATS.fetch_add(1, Ordering::Relaxed);
                std::pin::Pin::new(&mut idle).reset(Instant::now() + IDLE);
            }
            _ = &mut idle => return,
        }
    }
}

async fn conn_tokio(first: Instant) {
    let mut hb = tokio::time::interval_at(first, HEARTBEAT);
    let mut idle = Box::pin(tokio::time::sleep(IDLE));
    loop {
        tokio::select! {
            _ = hb.tick() => {
                BEATS.fetch_add(1, Ordering::Relaxed);
                idle.as_mut().reset(Instant::now() + IDLE);
            }
            _ = idle.as_mut() => return,
        }
    }
}

/// [`conn_tokio`] with the idle `Sleep` kept in the task (`tokio::pin!`),
/// not boxed: its timer entry is then in the task's own memory.
async fn conn_tokio_inline(first: Instant) {
    let mut hb = tokio::time::interval_at(first, HEARTBEAT);
    let idle = tokio::time::sleep(IDLE);
    tokio::pin!(idle);
    loop {
        tokio::select! {
            _ = hb.tick() => {
                BEATS.fetch_add(1, Ordering::Relaxed);
                idle.as_mut().reset(Instant::now() + IDLE);
            }
            _ = &mut idle => return,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage =
        "usage: heartbeat_counts timer|time|time-inline|tokio|tokio-inline CONNECTIONS SECONDS [polluter]";
    let which = args.get(1).expect(usage).clone();
    let n: u32 = args.get(2).and_then(|a| a.parse().ok()).expect(usage);
    let secs: u64 = args.get(3).and_then(|a| a.parse().ok()).expect(usage);
    let polluter = match args.get(4).map(String::as_str) {
        None => false,
        Some("polluter") => true,
        Some(_) => panic!("{usage}"),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let measured = rt.block_on(async {
        let timer =
            counting::timers_on_a_running_clock(which == "timer", which.starts_with("time"));
        let start = Instant::now() + Duration::from_millis(1);
        if polluter {
            tokio::spawn(counting::pollute());
        }
        for i in 0..n {
            let first = start + HEARTBEAT * i / n;
            match (&timer, which.as_str()) {
                (Some(timer), _) => tokio::spawn(conn_timer(timer.clone(), first)),
                (None, "time") => tokio::spawn(conn_time(first)),
                (None, "time-inline") => tokio::spawn(conn_time_inline(first)),
                (None, "tokio") => tokio::spawn(conn_tokio(first)),
                (None, "tokio-inline") => tokio::spawn(conn_tokio_inline(first)),
                _ => panic!("{usage}"),
            };
        }
        // One second of warm-up (every connection's first beat), then the
        // seconds measured; the end falls between two phases.
        let warm = start + HEARTBEAT - HEARTBEAT / (2 * n);
        tokio::time::sleep_until(warm).await;
        let (wall, before) = (std::time::Instant::now(), BEATS.load(Ordering::Relaxed));
        let end = start + HEARTBEAT * (1 + secs as u32) - HEARTBEAT / (2 * n);
        tokio::time::sleep_until(end).await;
        (wall.elapsed(), BEATS.load(Ordering::Relaxed) - before)
    });
    let (took, measured) = measured;
    let beats = BEATS.load(Ordering::Relaxed);
    println!("{which}: {n} connections, {secs} s after 1 s of warm-up: {beats} heartbeats");
    // The same run as a timing: paused time leaves the thread nothing to
    // wait for, so the real time of the seconds after the warm-up is their
    // CPU time (one thread), without the parks and system calls of a real
    // clock's run: the timer's and the runtime's own work a heartbeat.
    if measured > 0 {
        println!(
            "{which}: {:.1} ns a heartbeat after the warm-up ({measured} heartbeats in {took:.2?})",
            took.as_nanos() as f64 / measured as f64
        );
    }
    // Tearing the tasks down is no part of the counts.
    std::process::exit(0);
}
