//! Side-by-side comparison of hashwheel with `tokio::time` and tokio-util's
//! `DelayQueue` on the workloads of docs/WORKLOADS.md (W1–W6, W8, W9), of
//! hashwheel's `DelayQueue` with tokio-util's (Q1–Q4), and of hashwheel with
//! the strongest rivals where servers spend (W10 request timeouts, W11
//! growth, W12 short sleeps: tokio's alternative timer, pingora-timeout,
//! futures-timer, async-io). W9–W12 run each contender in a child process
//! of its own.
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench compare            # full counts
//! cargo bench -p hashwheel-benches --bench compare -- --quick # smaller counts
//! cargo bench -p hashwheel-benches --bench compare -- --only=W9 --connections=100000 --workers=2
//! cargo bench -p hashwheel-benches --bench compare -- --only=Q1,Q2,Q3,Q4
//! cargo bench -p hashwheel-benches --bench compare -- --only=W10,W11,W12 --quick
//! cargo bench -p hashwheel-benches --bench compare -- --only=ANY --any-rounds=5
//! cargo bench -p hashwheel-benches --bench compare -- --only=W11 --w11-count=2000000
//! cargo bench -p hashwheel-benches --bench compare -- --only=W14 --quick
//! cargo bench -p hashwheel-benches --bench compare -- --only=W15 --quick
//! cargo bench -p hashwheel-benches --bench compare -- --quick --charts=/tmp/charts
//! ```
//!
//! # tokio's alternative timer
//!
//! `tokio::runtime::Builder::enable_alt_timer()` exists only under
//! `--cfg tokio_unstable`. Built without it, the bench leaves that
//! contender out of W4, W9, W10 and W12 and says so; to measure it, build
//! every contender with the flag, in a target directory of its own so that
//! the flag does not rebuild the main one:
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" cargo bench -p hashwheel-benches --bench compare \
//!     --target-dir target/tokio-unstable -- --only=W10
//! ```
//!
//! The cargo feature `thread-driver` (off by default) adds the contenders
//! of hashwheel's thread driver (`Builder::driver_thread()`,
//! `hashwheel::Delay`) to W6, W10 and W12, once that API is on main.
//!
//! Timed workloads run their contenders interleaved, `reps` times each, and
//! keep each contender's best run, so that load drifting on a shared machine
//! hits all of them alike. The table gives each figure and the ratio
//! `rival / hashwheel`: above 1 means hashwheel is faster or smaller.
//!
//! W9 (heartbeat storm) measures process-wide figures (CPU, context
//! switches, RSS), so each contender runs in a fresh child process of this
//! binary (`--w9-child=hashwheel|hashwheel-2ms|time|tokio|alt|pingora|floor`,
//! `floor` being the runtime's cost with no timer and `hashwheel-2ms` a
//! `Timer` of a 2 ms tick; `smol-async-io|smol-hashwheel` for W9 on smol,
//! `--only=W9S`, async-io's `Timer` against hashwheel's drop-in on a
//! 2-thread smol executor), which prints one `W9CHILD key=value ...` line
//! that the parent reads: nothing of one contender (threads, heap, rusage)
//! bleeds into the other's figures.
//!
//! The benches are their own workspace member, built without tokio's
//! `test-util`, so `tokio::time::Instant::now()` is the OS clock read.
//!
//! # Charts
//!
//! The run that prints the table also draws it as SVG (`charts`), so the
//! pictures in BENCHMARKS.md and the README are never drawn by hand:
//! `w9.svg` (W9 CPU, context switches, lateness p50/p99 against tokio),
//! `w9-rivals.svg`, `w10.svg`, `w11.svg`, `w12.svg` (see `rival_charts`),
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
//!   `w9_scales`: the same at 1,000, 10,000, 100,000 and 1,000,000
//!   connections, 1 and 2 workers, in rounds (`--only=W9 --w9-scales
//!   [--w9-rounds=3]`), and its chart `w9-scales.svg`;
//! - `w9_smol`: W9 on smol (`W9S`): async-io's `Timer` API, two timers;
//! - `w10`: W10 (request-timeout wrapper, on tokio and on any executor);
//! - `w11`: W11 (growth: tail latency of insert, reset, cancel; a 1 ms
//!   interval's lateness while a timer grows);
//! - `w12`: W12 (short sleeps: `light` and `busy`);
//! - `w14`: W14 (a read timeout rebuilt on every `select!` pass on a
//!   current-thread runtime, one child process per contender, rounds
//!   alternating: `--only=W14 [--connections=N] [--w14-rounds=3]`);
//! - `w15`: W15 (one protocol timer a connection, reset after every
//!   packet to the earliest of its idle, loss and ack-delay deadlines, as
//!   a QUIC library's; 1,000 to 50,000 connections on 1 and 2 workers,
//!   one child process per contender, rounds alternating; run only when
//!   named: `--only=W15 [--quick] [--connections=N] [--workers=N]
//!   [--w15-rounds=3]`); its model is `examples/protocol_timer_counts`',
//!   which counts the same resets on paused time;
//! - `w13`: W13 (a smol burst: 10,000 `Timer::after(1–11 ms)` on one
//!   smol `Executor`, then rows of 300 µs and 1 ms sleeps; async-io's
//!   `Timer` against `hashwheel::async_io::Timer`);
//! - `any`: the any-executor tables in one place (`--only=ANY`, or
//!   `W10A`, `W12A`, `W13` alone; `--any-rounds=N`, 3 by default): W10 on
//!   a current-thread runtime and 2 workers, W12 on 2 workers and W13,
//!   every contender in rounds, medians with their spread;
//! - `child`: the child processes of W10–W12 and W15 (`--child=W10 ...`);
//! - `queue`: Q1–Q4 (hashwheel's `DelayQueue` against tokio-util's);
//! - `alloc` (the counting allocator), `common` (clocks, runtimes, helpers),
//!   `config` (the command line), `report` (the table and its ratios),
//!   `charts` (the SVG charts of the same rows), `rival_charts` (the charts
//!   of W10–W12, log scale, from the second table's lines).

mod alloc;
mod any;
mod charts;
mod child;
mod common;
mod config;
mod fire;
mod idle;
mod ops;
mod queue;
mod report;
mod rival_charts;
mod w10;
mod w11;
mod w12;
mod w13;
mod w14;
mod w15;
mod w9;
mod w9_scales;
mod w9_smol;

use config::{arg, Config};
use report::{floors, Row};

fn main() {
    let cfg = Config::from_args();
    if let Some(which) = arg::<String>("w9-child") {
        if which.starts_with("smol-") {
            return w9_smol::child(&which, &cfg);
        }
        return w9::w9_child(&which, &cfg);
    }
    if let Some(which) = arg::<String>("w14-child") {
        return w14::child(&which, &cfg);
    }
    if let Some(which) = arg::<String>("w14-cycle") {
        return w14::cycle_main(&which);
    }
    if let Some(which) = arg::<String>("child") {
        return match which.as_str() {
            "W10" => w10::child(&cfg),
            "W11" => w11::child(&cfg),
            "W11-bounds" => w11::bounds_child(&cfg),
            "W12" => w12::child(&cfg),
            "W13" => w13::child(&cfg),
            "W15" => w15::child(&cfg),
            other => panic!("unknown child workload {other}"),
        };
    }
    let t0 = std::time::Instant::now();
    eprintln!(
        "hashwheel compare ({}): W1..W6, W8..W12, W14, Q1..Q4; best of {} interleaved runs",
        if cfg.quick { "quick" } else { "full" },
        cfg.reps
    );
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut w1_ns = None;
    if cfg.runs("W1") {
        let (ns, w1_rows) = ops::w1(&cfg);
        w1_ns = Some(ns);
        rows.extend(w1_rows);
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
        let (w4_rows, w4_lines) = fire::w4(&cfg);
        rows.extend(w4_rows);
        lines.extend(w4_lines);
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
        // thread-driver: W6 on the thread driver.
        #[cfg(feature = "thread-driver")]
        rows.extend(idle::w6_thread(&cfg));
        eprintln!("W6 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W8") {
        rows.extend(idle::w8(&cfg));
        eprintln!("W8 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W9") && cfg.w9_scales {
        w9_scales::w9_scales(&cfg);
        eprintln!("W9 across scales done ({:.1?})", t0.elapsed());
    } else if cfg.runs("W9") {
        let (w9_rows, w9_lines) = w9::w9(&cfg);
        rows.extend(w9_rows);
        lines.extend(w9_lines);
        eprintln!("W9 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W9S") {
        lines.extend(w9_smol::w9_smol(&cfg));
        eprintln!("W9 on smol done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W10") {
        lines.extend(w10::w10(&cfg));
        eprintln!("W10 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W11") {
        lines.extend(w11::w11(&cfg));
        eprintln!("W11 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W11") || cfg.runs("W11-bounds") {
        lines.extend(w11::bounds(&cfg));
        eprintln!("W11 boundaries done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W12") {
        lines.extend(w12::w12(&cfg));
        eprintln!("W12 done ({:.1?})", t0.elapsed());
    }
    if cfg.runs("W14") {
        w14::w14(&cfg);
        eprintln!("W14 done ({:.1?})", t0.elapsed());
    }
    if cfg.names("W14C") {
        w14::w14_cycle(&cfg);
        eprintln!("W14C done ({:.1?})", t0.elapsed());
    }
    // Named only: a full W15 takes about ten minutes.
    if cfg.names("W15") {
        w15::w15(&cfg);
        eprintln!("W15 done ({:.1?})", t0.elapsed());
    }
    if ["ANY", "W10A", "W12A", "W13"].iter().any(|w| cfg.names(w)) {
        any::any(&cfg);
        eprintln!("any executor done ({:.1?})", t0.elapsed());
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

    if !rows.is_empty() {
        println!();
        println!("| id | figure | hashwheel | tokio::time | ratio | DelayQueue | ratio |");
        println!("|----|--------|-----------|-------------|-------|------------|-------|");
        for row in &rows {
            row.print();
        }
    }
    report::print_lines(&lines);
    println!();
    println!("| floor (this run) | ns |");
    println!("|------------------|----|");
    for (what, ns) in floors(if cfg.quick { 200_000 } else { 1_000_000 }) {
        println!("| {what} | {ns:.1} |");
    }
    println!();
    println!("ratio = rival / hashwheel (above 1: hashwheel faster or smaller); lower figures are better except the W5 scaling line and the Q4 rate (its ratio is hashwheel / rival).");
    println!("Q rows: the hashwheel column is hashwheel's DelayQueue, the DelayQueue column tokio-util's.");
    if !lines.is_empty() {
        println!("Second table: rival / hashwheel on the same line (above 1: hashwheel cheaper or more punctual); \"best\" is the lowest of the rounds.");
        if !child::ALT_TIMER {
            println!("{}", child::ALT_NOTE);
        }
    }
    charts::draw_all(&cfg, &rows);
    // The rivals' charts (W9's rivals, W10, W11, W12) draw on the same
    // helpers; `charts::draw_all` made the folder.
    if let Some(dir) = &cfg.charts {
        rival_charts::draw_all(&cfg, dir, &lines);
    }
}
