//! Child processes: a workload whose figures are process-wide (CPU time,
//! threads, heap) runs each contender in a fresh process of this binary, so
//! that nothing of one contender (its threads, its heap, a helper thread a
//! rival crate starts on first use) bleeds into another's figures.
//!
//! The parent runs `compare --child=W10 --contender=timer --flavour=2w ...`;
//! the child prints one `CHILD key=value ...` line on stdout, which
//! [`run`] reads back. (W9 keeps its own `--w9-child` flag.)

use tokio::runtime::{Builder, Runtime};

use crate::config::arg;

/// The figures of one child: `key=value` pairs.
pub type Figures = Vec<(String, f64)>;

/// The value of `key` in a child's figures.
#[track_caller]
pub fn get(figures: &[(String, f64)], key: &str) -> f64 {
    figures
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("the child gave no {key}"))
}

/// Runs this binary as a child for `workload` with `args` (`--name=value`
/// each) and returns the figures it printed.
pub fn run(workload: &str, args: &[(&str, String)]) -> Figures {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(format!("--child={workload}"));
    for (k, v) in args {
        cmd.arg(format!("--{k}={v}"));
    }
    let shown: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("child failed to start");
    assert!(
        out.status.success(),
        "{workload} child ({}) failed: {}",
        shown.join(" "),
        out.status
    );
    figures(&out.stdout, "CHILD ", workload)
}

/// The `key=value` figures of the line of a child's `stdout` that starts
/// with `prefix` (`what` names the child in the panic if there is none).
#[track_caller]
pub fn figures(stdout: &[u8], prefix: &str, what: &str) -> Figures {
    let stdout = String::from_utf8_lossy(stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("{what} child printed no figures: {stdout}"));
    line.split_whitespace()
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Prints a child's figures as the one line [`run`] reads, then exits at
/// once: tearing down a million timers or a thousand threads is no part of
/// the figures.
pub fn report(figures: &[(&str, f64)]) -> ! {
    let line: Vec<String> = figures.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("CHILD {}", line.join(" "));
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

/// A `--name=value` argument the parent must have given.
#[track_caller]
pub fn need<T: std::str::FromStr>(name: &str) -> T {
    arg(name).unwrap_or_else(|| panic!("child: --{name}= missing"))
}

/// Whether tokio's alternative timer can be measured: it exists only when
/// the bench is built with `RUSTFLAGS="--cfg tokio_unstable"`, and only on
/// a multi-thread runtime (it does nothing on a current-thread one).
pub const ALT_TIMER: bool = cfg!(tokio_unstable);

/// The note printed when the alternative timer is left out.
pub const ALT_NOTE: &str = "tokio's alternative timer left out: build the bench with \
     RUSTFLAGS=\"--cfg tokio_unstable\" (in a target directory of its own) to measure it";

/// A tokio runtime of `flavour` (`ct`: current-thread; `Nw`: `N` workers,
/// `1w`, `2w`, `16w`...), with tokio's alternative timer if `alt`.
///
/// # Panics
///
/// An unknown flavour, `alt` without `--cfg tokio_unstable`, or `alt` on a
/// current-thread runtime.
#[track_caller]
pub fn runtime(flavour: &str, alt: bool) -> Runtime {
    let mut b = match flavour {
        "ct" => Builder::new_current_thread(),
        other => {
            let mut b = Builder::new_multi_thread();
            b.worker_threads(workers(other));
            b
        }
    };
    b.enable_all();
    if alt {
        assert!(flavour != "ct", "the alternative timer needs workers");
        #[cfg(tokio_unstable)]
        b.enable_alt_timer();
        #[cfg(not(tokio_unstable))]
        panic!("the alternative timer needs --cfg tokio_unstable");
    }
    b.build().unwrap()
}

/// The workers of a `Nw` flavour.
///
/// # Panics
///
/// Anything but `Nw` with `N` ≥ 1.
#[track_caller]
pub fn workers(flavour: &str) -> usize {
    flavour
        .strip_suffix('w')
        .and_then(|n| n.parse().ok())
        .filter(|&n: &usize| n >= 1)
        .unwrap_or_else(|| panic!("unknown runtime flavour {flavour} (ct, or Nw: N workers)"))
}

/// What the flavours are called in the table.
pub fn flavour_name(flavour: &str) -> String {
    match flavour {
        "ct" => "current-thread".into(),
        "1w" => "1 worker".into(),
        "pool2" => "futures ThreadPool, 2 threads".into(),
        "thread" => "plain threads".into(),
        other => match other
            .strip_suffix('w')
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => format!("{n} workers"),
            None => "?".into(),
        },
    }
}
