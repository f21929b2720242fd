#![allow(dead_code)]
//! Helpers shared by the tests. Each test file that says `mod common;`
//! compiles all of it, in whatever build that file is in, the thread
//! driver's alone (`--no-default-features --features thread`) included:
//! `capture` needs `tracing` (either driver's feature brings it), the
//! runtime helpers use tokio the dev-dependency (in every build), and
//! `timer_on_its_own_runtime` the feature `tokio`; the counting waker is
//! std's alone. `shuttle` is the shuttle models' harness, built under
//! `--cfg shuttle` only.

pub mod capture;
#[cfg(shuttle)]
pub mod shuttle;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Duration;

pub const MS: Duration = Duration::from_millis(1);

/// Lets the driver and woken tasks run: under paused time nothing else
/// moves the clock.
pub async fn settle() {
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
}

/// Advances paused time by `d`, then lets the driver run.
pub async fn advance(d: Duration) {
    tokio::time::advance(d).await;
    settle().await;
}

/// A waker that counts its wakes.
#[derive(Default)]
pub struct CountingWaker(pub AtomicUsize);

impl CountingWaker {
    /// The wakes so far.
    pub fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counting waker, and a `Waker` that wakes it.
pub fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker::default());
    (counter.clone(), Waker::from(counter))
}

/// The process's threads named as a thread driver's, counted by name in
/// `/proc/self/task`.
#[cfg(target_os = "linux")]
pub fn driver_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "hashwheel-timer")
        .count()
}

/// A current-thread runtime of its own and a timer built outside it
/// (`Builder::handle`), whose driver runs on it: for tests that shut that
/// runtime down.
#[cfg(feature = "tokio")]
pub fn timer_on_its_own_runtime() -> (tokio::runtime::Runtime, hashwheel::Timer) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timer = hashwheel::Timer::builder()
        .handle(rt.handle().clone())
        .build()
        .unwrap();
    (rt, timer)
}

/// Awaits every task, under a watchdog of `limit` (tokio's own timer, which
/// paused time jumps to): a lost wake-up ends the test with `lost` instead
/// of hanging it. Returns the tasks' outputs in order.
pub async fn join_within<T>(
    tasks: Vec<tokio::task::JoinHandle<T>>,
    limit: Duration,
    lost: &str,
) -> Vec<T> {
    let all = async {
        let mut out = Vec::with_capacity(tasks.len());
        for task in tasks {
            out.push(task.await.unwrap());
        }
        out
    };
    tokio::time::timeout(limit, all).await.expect(lost)
}

/// splitmix64: a small, seeded, reproducible generator for randomized
/// tests (`tests/model.rs`, `tests/paused_time_differential.rs`).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Below `n` (0 for 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// Below 100.
    pub fn percent(&mut self) -> u64 {
        self.below(100)
    }
}

/// Runs the test `name` of this test binary again, alone, in a process of
/// its own with the environment variable `env` set (the test sees it and
/// runs its case there), its stdout kept out of this one's where `quiet`;
/// waits a minute at most. Returns the child's pid and its exit status,
/// `None` where it hung (it is killed then).
pub fn rerun_alone(name: &str, env: &str, quiet: bool) -> (u32, Option<std::process::ExitStatus>) {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(env, name);
    if quiet {
        command.stdout(std::process::Stdio::null());
    }
    let mut child = command.spawn().unwrap();
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (child.id(), Some(status));
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return (child.id(), None);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
