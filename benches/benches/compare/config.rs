//! The command line: which workloads run, and at what counts.

use std::path::{Path, PathBuf};
use std::str::FromStr;

pub struct Config {
    pub quick: bool,
    /// `--only=W1,W5`: run just these (for profiling).
    pub only: Option<String>,
    pub reps: usize,
    pub w1_pairs: usize,
    pub w2_hold: usize,
    pub w3_timers: usize,
    pub w4_tasks: usize,
    pub w6_secs: u64,
    pub w8_timers: usize,
    pub w8_secs: u64,
    /// W9 simulated connections (`--connections=N`).
    pub w9_connections: usize,
    /// W9 runtime worker threads (`--workers=N`).
    pub w9_workers: usize,
    pub w9_warmup_ms: u64,
    pub w9_window_ms: u64,
    /// `--w9-scales`: W9 at 1,000 to 1,000,000 connections, on
    /// 1 and 2 workers, every contender in rounds (see `w9_scales`).
    pub w9_scales: bool,
    /// Rounds of `--w9-scales` (`--w9-rounds=N`, 3 by default).
    pub w9_rounds: usize,
    pub q_pairs: usize,
    /// W10 requests per task (1,000 tasks) per contender and flavour
    /// (`--w10-loops=N`).
    pub w10_loops: usize,
    /// W10 rounds, contenders alternating within each (`--w10-rounds=N`).
    pub w10_rounds: usize,
    /// W10's runtimes (`--w10-flavours=ct,1w,2w,any`, the default: `ct` a
    /// current-thread runtime, `Nw` N workers, `any` the any-executor
    /// table).
    pub w10_flavours: String,
    /// W11 timers grown to, one at a time (`--w11-count=N`).
    pub w11_count: usize,
    /// W11 timers the `Timer` grows to while a 1 ms interval is measured
    /// (`--w11-grow=N`).
    pub w11_grow: usize,
    /// W11's boundary part: one shard grown to 2^N keys, every insert
    /// timed, three rounds (`--w11-bounds=N`; 0 leaves the part out).
    pub w11_bounds: u32,
    /// The workers of W11's interval part (`--w11-workers=N`, 2 by
    /// default).
    pub w11_workers: usize,
    /// W12 `light` sleeps (`--w12-light=N`).
    pub w12_light: usize,
    /// W12 `busy` seconds per contender and flavour (`--w12-busy-secs=S`).
    pub w12_busy_secs: f64,
    pub q_hold: usize,
    pub q_items: usize,
    pub q_expire: usize,
    /// Where the SVG charts go (`charts`), or `None` to draw none: the
    /// repository's `docs/charts/` on a full run or with `--charts`, the
    /// folder of `--charts=DIR` (relative to the repository's root), none
    /// on a `--quick` run or with `--no-charts`.
    pub charts: Option<PathBuf>,
}

/// W10's runtimes by default: current-thread, 1 and 2 workers, and the
/// any-executor table.
const W10_FLAVOURS: &str = "ct,1w,2w,any";

/// The value of `--name=value`, if given (and parsable).
pub fn arg<T: FromStr>(name: &str) -> Option<T> {
    let prefix = format!("--{name}=");
    std::env::args().find_map(|a| a.strip_prefix(&prefix).and_then(|v| v.parse().ok()))
}

impl Config {
    pub fn runs(&self, id: &str) -> bool {
        self.only.is_none() || self.names(id)
    }

    /// Whether `--only` names `id`: the workloads a run without `--only`
    /// leaves out (W14C, W15, the any-executor tables) run only then.
    pub fn names(&self, id: &str) -> bool {
        self.only
            .as_deref()
            .is_some_and(|only| only.split(',').any(|w| w == id))
    }

    pub fn from_args() -> Config {
        let quick = std::env::args().any(|a| a == "--quick");
        let only = arg("only");
        let cfg = if quick {
            Config {
                quick,
                only,
                reps: 3,
                w1_pairs: 200_000,
                w2_hold: 200_000,
                w3_timers: 20_000,
                w4_tasks: 20_000,
                w6_secs: 1,
                w8_timers: 200_000,
                w8_secs: 1,
                w9_connections: 20_000,
                w9_workers: 2,
                w9_warmup_ms: 1_000,
                w9_window_ms: 2_000,
                w9_scales: false,
                w9_rounds: 3,
                q_pairs: 200_000,
                w10_loops: 200,
                w10_rounds: 2,
                w10_flavours: W10_FLAVOURS.into(),
                w11_count: 300_000,
                w11_grow: 300_000,
                w11_bounds: 20,
                w11_workers: 2,
                w12_light: 500,
                w12_busy_secs: 1.0,
                q_hold: 200_000,
                q_items: 20_000,
                q_expire: 200_000,
                charts: None,
            }
        } else {
            Config {
                quick,
                only,
                reps: 5,
                w1_pairs: 1_000_000,
                w2_hold: 1_000_000,
                w3_timers: 100_000,
                w4_tasks: 100_000,
                w6_secs: 3,
                w8_timers: 1_000_000,
                w8_secs: 5,
                w9_connections: 100_000,
                w9_workers: 2,
                w9_warmup_ms: 2_000,
                w9_window_ms: 4_000,
                w9_scales: false,
                w9_rounds: 3,
                q_pairs: 1_000_000,
                w10_loops: 1_000,
                w10_rounds: 3,
                w10_flavours: W10_FLAVOURS.into(),
                w11_count: 4_000_000,
                w11_grow: 2_000_000,
                w11_bounds: 24,
                w11_workers: 2,
                w12_light: 2_000,
                w12_busy_secs: 3.0,
                q_hold: 1_000_000,
                q_items: 100_000,
                q_expire: 1_000_000,
                charts: None,
            }
        };
        Config {
            w9_connections: arg("connections").unwrap_or(cfg.w9_connections),
            w9_workers: arg("workers").unwrap_or(cfg.w9_workers),
            w9_warmup_ms: arg("warmup-ms").unwrap_or(cfg.w9_warmup_ms),
            w9_window_ms: arg("window-ms").unwrap_or(cfg.w9_window_ms),
            w9_scales: std::env::args().any(|a| a == "--w9-scales"),
            w9_rounds: arg("w9-rounds").unwrap_or(cfg.w9_rounds),
            w10_loops: arg("w10-loops").unwrap_or(cfg.w10_loops),
            w10_rounds: arg("w10-rounds").unwrap_or(cfg.w10_rounds),
            w10_flavours: arg("w10-flavours").unwrap_or(cfg.w10_flavours),
            w11_count: arg("w11-count").unwrap_or(cfg.w11_count),
            w11_grow: arg("w11-grow").unwrap_or(cfg.w11_grow),
            w11_bounds: arg("w11-bounds").unwrap_or(cfg.w11_bounds),
            w11_workers: arg("w11-workers").unwrap_or(cfg.w11_workers),
            w12_light: arg("w12-light").unwrap_or(cfg.w12_light),
            w12_busy_secs: arg("w12-busy-secs").unwrap_or(cfg.w12_busy_secs),
            charts: charts_dir(quick),
            ..cfg
        }
    }
}

/// The repository's `docs/charts/`, found from the benches crate's own
/// folder (a workspace member one level down), so that the charts land in
/// the same place whatever folder `cargo bench` ran from.
fn default_charts_dir() -> PathBuf {
    repository().join("docs").join("charts")
}

/// The repository's root: the parent of this crate's folder.
pub fn repository() -> PathBuf {
    let benches = Path::new(env!("CARGO_MANIFEST_DIR"));
    benches.parent().unwrap_or(benches).to_path_buf()
}

fn charts_dir(quick: bool) -> Option<PathBuf> {
    let flag = |f: &str| std::env::args().any(|a| a == f);
    if flag("--no-charts") {
        None
    } else if let Some(dir) = arg::<PathBuf>("charts") {
        // Relative to the repository's root, not to `benches/` where cargo
        // runs the bench.
        Some(repository().join(dir))
    } else if flag("--charts") || !quick {
        Some(default_charts_dir())
    } else {
        None
    }
}
