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

/// The time of CPU clock `id` (a process's, a thread's).
pub fn clock(id: libc::clockid_t) -> Duration {
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

/// A future that notes when its waker was last woken: the instant the
/// timer woke it, before the runtime schedules the task again (what
/// `Stats::lateness` measures, checked against it in W4 and W12).
pub struct WakeStamped<F> {
    inner: Pin<Box<F>>,
    woken: std::sync::Arc<std::sync::Mutex<Option<std::time::Instant>>>,
}

struct StampWaker {
    inner: std::task::Waker,
    woken: std::sync::Arc<std::sync::Mutex<Option<std::time::Instant>>>,
}

impl std::task::Wake for StampWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        *self.woken.lock().unwrap() = Some(std::time::Instant::now());
        self.inner.wake_by_ref();
    }
}

impl<F: Future> WakeStamped<F> {
    pub fn new(fut: F) -> WakeStamped<F> {
        WakeStamped {
            inner: Box::pin(fut),
            woken: Default::default(),
        }
    }

    /// The instant of the last wake, if any.
    pub fn woken(&self) -> Option<std::time::Instant> {
        *self.woken.lock().unwrap()
    }
}

impl<F: Future> Future for WakeStamped<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> std::task::Poll<F::Output> {
        let waker = std::task::Waker::from(std::sync::Arc::new(StampWaker {
            inner: cx.waker().clone(),
            woken: self.woken.clone(),
        }));
        self.inner.as_mut().poll(&mut Context::from_waker(&waker))
    }
}

/// p50 and p99 of a sorted list of lateness values, in µs.
pub fn p50_p99(sorted_us: &[f64]) -> (f64, f64) {
    if sorted_us.is_empty() {
        return (0.0, 0.0);
    }
    let at = |q: f64| sorted_us[((sorted_us.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}
