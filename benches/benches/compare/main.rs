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
//! cargo bench -p hashwheel-benches --bench compare -- --quick --charts=/tmp/charts
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
//!
//! # Charts
//!
//! The run that prints the table also draws it as SVG (`charts`), so the
//! pictures in BENCHMARKS.md and the README are never drawn by hand:
//! `w9.svg` (W9 CPU, context switches, lateness p50/p99 against tokio),
//! `ops.svg` (W1–W3 per operation and W2 bytes per timer against tokio and
//! tokio-util) and `queue.svg` (Q1–Q4 against tokio-util's `DelayQueue`).
//!
//! - A full run (no `--quick`) writes them into the repository's
//!   `docs/charts/` (found from this crate's `CARGO_MANIFEST_DIR`, whatever
//!   folder cargo runs from), replacing the committed ones.
//! - A `--quick` run draws none, so that a quick check never overwrites the
//!   committed charts with smaller counts; `--charts` makes it write them to
//!   `docs/charts/` all the same, and `--charts=DIR` (any run) writes them
//!   into `DIR` instead (a relative `DIR` is taken from the repository's
//!   root, not from `benches/`, where cargo runs the bench).
//! - `--no-charts` draws none, on any run.
//! - A chart is redrawn only by a run that measured all of its workloads: a
//!   `--only=W9` run redraws `w9.svg` and leaves `ops.svg` and `queue.svg`
//!   as they are (`--only=W1` redraws none, since `ops.svg` also needs W2
//!   and W3). Each chart says which command drew it and when, and its title
//!   gives the counts (W9's connections and workers).
//!
//! # Layout
//!
//! One module per workload family, each readable on its own:
//!
//! - `ops`: W1 (schedule + cancel), W2 (hold), W3 (reset), W5 (W1 on two
//!   threads);
//! - `fire`: W4 (fire spawned tasks, lateness);
//! - `idle`: W6 and W8 (idle CPU, driver wake-ups);
//! - `w9`: W9 (heartbeat storm, one child process per contender);
//! - `queue`: Q1–Q4 (hashwheel's `DelayQueue` against tokio-util's);
//! - `alloc` (the counting allocator), `common` (clocks, runtimes, helpers),
//!   `config` (the command line), `report` (the table and its ratios),
//!   `charts` (the SVG charts of the same rows).

mod alloc;
mod charts;
mod common;
mod config;
mod fire;
mod idle;
mod ops;
mod queue;
mod report;
mod thread;
mod w9;

use config::{arg, Config};
use report::{floors, Row};

fn main() {
    let cfg = Config::from_args();
    if let Some(which) = arg::<String>("w9-child") {
        return w9::w9_child(&which, &cfg);
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
        let (ns, row) = ops::w1(&cfg);
        w1_ns = Some(ns);
        rows.push(row);
        eprintln!("W1 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W2") {
        rows.extend(ops::w2(&cfg));
        eprintln!("W2 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W3") {
        rows.push(ops::w3(&cfg));
        eprintln!("W3 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W4") {
        rows.extend(fire::w4(&cfg));
        eprintln!("W4 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W5") {
        let (w5_ns, w5_cpu, w5_rows) = ops::w5(&cfg);
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
        rows.extend(idle::w6(&cfg));
        eprintln!("W6 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W8") {
        rows.extend(idle::w8(&cfg));
        eprintln!("W8 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W9") {
        rows.extend(w9::w9(&cfg));
        eprintln!("W9 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q1") {
        rows.push(queue::q1(&cfg));
        eprintln!("Q1 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q2") {
        rows.extend(queue::q2(&cfg));
        eprintln!("Q2 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q3") {
        rows.push(queue::q3(&cfg));
        eprintln!("Q3 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("Q4") {
        rows.extend(queue::q4(&cfg));
        eprintln!("Q4 done ({:.1?})", t0.elapsed());
    }

    // The thread driver's workloads print tables of their own (W6T, W10T,
    // W12: more contenders than the columns below).
    if cfg.runs("W6T") {
        thread::w6_thread(&cfg);
        eprintln!("W6T done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W10T") {
        thread::w10_thread(&cfg);
        eprintln!("W10T done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W12") {
        thread::w12(&cfg);
        eprintln!("W12 done ({:.1?})", t0.elapsed());
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
    charts::draw_all(&cfg, &rows);
}
