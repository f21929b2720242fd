//! What every workload uses: clocks, runtimes, a deterministic generator,
//! polling once, and the arithmetic of the figures.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use futures::task::noop_waker_ref;
use tokio::runtime::{Builder, Runtime};

/// Process CPU time (all threads), from `CLOCK_PROCESS_CPUTIME_ID`.
pub fn cpu_time() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the calling thread.
pub fn thread_cpu_time() -> Duration {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
pub fn current_thread() -> Runtime {
    Builder::new_current_thread().enable_all().build().unwrap()
}

pub fn two_workers() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A small deterministic generator (xorshift64*), so runs are comparable.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `lo..hi` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next() % (hi - lo))
    }
}

pub fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> bool {
    let mut cx = Context::from_waker(noop_waker_ref());
    fut.poll(&mut cx).is_ready()
}

pub fn per(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_nanos() as f64 / n as f64
}

pub fn best(runs: &[f64]) -> f64 {
    runs.iter().copied().fold(f64::INFINITY, f64::min)
}

pub const D30: Duration = Duration::from_secs(30);
pub fn percentile(sorted: &[i64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}
