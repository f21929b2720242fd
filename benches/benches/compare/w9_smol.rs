//! W9 on smol (issue 38): the heartbeat storm written against async-io's
//! `Timer` API, as a smol server writes it (`Timer::interval` for the
//! heartbeat, an idle `Timer` re-set by `set_after` after every beat), on a
//! smol executor of 2 threads that each run `smol::block_on` (smol's own
//! set-up: those threads drive async-io's reactor). Two contenders, each in
//! a child process of its own, rounds alternating: async-io's `Timer` and
//! `hashwheel::async_io::Timer`, the same code with the other `use` line.
//! Figures as W9's: process CPU ms/s over the window, context switches/s,
//! heartbeat lateness (the instant the stream yields against the instant it
//! was due), RSS.

use std::sync::Arc;
use std::time::Duration;

use smol::future::FutureExt;
use smol::stream::StreamExt;
use tokio::time::Instant;

use crate::common::D30;
use crate::config::Config;
use crate::report::{lines, Line};
use crate::w9::{measure_window, rss_bytes, w9_record, HEARTBEAT};

/// One child's `key=value` figures.
type Figures = Vec<(String, f64)>;

/// Executor threads (each also drives async-io's reactor when idle).
const THREADS: usize = 2;

/// The contenders: (child name, name in the table).
const CONTENDERS: &[(&str, &str)] = &[
    ("smol-async-io", "async-io Timer (smol::Timer)"),
    #[cfg(feature = "thread-driver")]
    ("smol-hashwheel", "hashwheel::async_io::Timer"),
];

/// One connection's task, written once against async-io's `Timer` API and
/// built with each contender's `Timer` (the `use` line is the switch).
macro_rules! connection {
    ($name:ident, $timer:ty) => {
        async fn $name(first: std::time::Instant, window: (Instant, Instant)) {
            let mut heartbeat = <$timer>::interval_at(first, HEARTBEAT);
            let mut idle = <$timer>::after(D30);
            loop {
                let beat = async { heartbeat.next().await }.or(async {
                    (&mut idle).await;
                    None
                });
                match beat.await {
                    Some(due) => {
                        w9_record(due, window);
                        idle.set_after(D30);
                    }
                    None => break,
                }
            }
        }
    };
}

connection!(conn_async_io, async_io::Timer);
#[cfg(feature = "thread-driver")]
connection!(conn_hashwheel, hashwheel::async_io::Timer);

/// The child: `which`'s storm of `connections` on a 2-thread smol
/// executor; prints one `W9CHILD key=value ...` line, as W9's child does.
pub fn child(which: &str, cfg: &Config) {
    let n = cfg.w9_connections;
    let ex = Arc::new(smol::Executor::new());
    for _ in 0..THREADS {
        let ex = ex.clone();
        std::thread::spawn(move || smol::block_on(ex.run(std::future::pending::<()>())));
    }
    let rss_base = rss_bytes();
    let start = Instant::now() + Duration::from_millis(100);
    let window = (
        start + Duration::from_millis(cfg.w9_warmup_ms),
        start + Duration::from_millis(cfg.w9_warmup_ms + cfg.w9_window_ms),
    );
    for i in 0..n {
        let first = (start + HEARTBEAT * i as u32 / n as u32).into_std();
        match which {
            "smol-async-io" => ex.spawn(conn_async_io(first, window)).detach(),
            #[cfg(feature = "thread-driver")]
            "smol-hashwheel" => ex.spawn(conn_hashwheel(first, window)).detach(),
            other => panic!("W9 on smol: unknown contender {other}"),
        }
    }
    println!("{}", measure_window(which, n, window, rss_base, || {}));
    std::process::exit(0);
}

/// W9 on smol: every contender, `cfg.w9_rounds` rounds alternating, at
/// `cfg.w9_connections` connections.
pub fn w9_smol(cfg: &Config) -> Vec<Line> {
    let n = cfg.w9_connections;
    eprintln!(
        "W9 on smol: {n} connections, {THREADS} executor threads, {} rounds",
        cfg.w9_rounds
    );
    let mut runs: Vec<(&'static str, Vec<Figures>)> =
        CONTENDERS.iter().map(|c| (c.1, Vec::new())).collect();
    for round in 0..cfg.w9_rounds {
        for (i, (which, _)) in CONTENDERS.iter().enumerate() {
            let figures = crate::w9::w9_run_at(which, cfg, n, THREADS, cfg.w9_warmup_ms);
            let get = |k: &str| crate::child::get(&figures, k);
            eprintln!(
                "W9 on smol round {round}: {which}: {:.1} CPU ms/s, {:.0} switches/s, \
                 lateness p50 / p99 {} / {} µs, {} beats",
                get("cpu_ms_s"),
                get("csw_s"),
                get("p50_us"),
                get("p99_us"),
                get("count"),
            );
            runs[i].1.push(figures);
        }
    }
    let label = format!("on smol ({n} conns, {THREADS} executor threads)");
    let mut out = Vec::new();
    for (figure, k, scale, places) in [
        ("CPU ms/s", "cpu_ms_s", 1.0, 1),
        ("context switches/s", "csw_s", 1.0, 0),
        ("lateness p50, ms", "p50_us", 1e-3, 3),
        ("lateness p99, ms", "p99_us", 1e-3, 3),
        ("lateness min (< 0: early), ms", "min_us", 1e-3, 3),
        ("RSS, MiB", "rss", 1.0 / (1024.0 * 1024.0), 1),
    ] {
        let these: Vec<(&'static str, Vec<f64>)> = runs
            .iter()
            .map(|(name, rounds)| {
                let values = rounds
                    .iter()
                    .map(|f| crate::child::get(f, k) * scale)
                    .collect();
                (*name, values)
            })
            .collect();
        // The min is a check (≥ 0: never early), not a cost: no ratio.
        let lines = lines(
            "W9",
            &format!("{label}: {figure}"),
            &these,
            CONTENDERS.last().map_or("", |c| c.1),
        )
        .places(places)
        .check(k == "min_us")
        .rows();
        out.extend(lines);
    }
    out
}
