//! Criterion micro-benchmarks of single operations, hashwheel beside
//! `tokio::time`: schedule, cancel, reset and fire; `schedule` callbacks
//! under each `TaskExecutor` beside a tokio task that sleeps; and W1
//! through the `hashwheel::time` free functions (`-- w1`).
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench ops
//! ```
//!
//! Every operation is timed in a batch with `iter_custom`, so the setup it
//! needs (timeouts to cancel or reset) stays out of the figure. `tokio::time`'s
//! `Sleep` is `!Unpin`: it is boxed wherever it must be kept, as a user must.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::task::noop_waker_ref;
use hashwheel::{TaskExecutor, Timeout, Timer};
use tokio::runtime::Runtime;
use tokio::time::{Instant, Sleep};

const FAR: Duration = Duration::from_secs(30);

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) {
    let mut cx = Context::from_waker(waker);
    let _ = fut.poll(&mut cx);
}

fn ours(timer: &Timer, delay: Duration, waker: &Waker) -> Timeout {
    let mut t = timer.sleep(delay);
    poll_once(Pin::new(&mut t), waker);
    t
}

fn theirs(delay: Duration, waker: &Waker) -> Pin<Box<Sleep>> {
    let mut s = Box::pin(tokio::time::sleep(delay));
    poll_once(s.as_mut(), waker);
    s
}

/// Create a timeout and register it (first poll).
fn schedule(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let timer = Timer::new();
    let waker = noop_waker_ref();
    let mut g = c.benchmark_group("schedule");
    g.bench_function(BenchmarkId::new("hashwheel", "sleep+poll"), |b| {
        b.iter_custom(|iters| {
            let mut hold = Vec::with_capacity(iters as usize);
            let start = Instant::now();
            for _ in 0..iters {
                hold.push(ours(&timer, FAR, waker));
            }
            start.elapsed()
        })
    });
    for (name, executor) in executors() {
        let timer = Timer::builder().task_executor(executor).build().unwrap();
        g.bench_function(
            BenchmarkId::new("hashwheel schedule(callback)", name),
            |b| {
                b.iter_custom(|iters| {
                    let mut hold = Vec::with_capacity(iters as usize);
                    let start = Instant::now();
                    for _ in 0..iters {
                        hold.push(timer.schedule(FAR, || {}));
                    }
                    let elapsed = start.elapsed();
                    for task in hold {
                        task.cancel();
                    }
                    elapsed
                })
            },
        );
    }
    g.bench_function(BenchmarkId::new("tokio", "Box::pin(sleep)+poll"), |b| {
        b.iter_custom(|iters| {
            let mut hold = Vec::with_capacity(iters as usize);
            let start = Instant::now();
            for _ in 0..iters {
                hold.push(theirs(FAR, waker));
            }
            start.elapsed()
        })
    });
    g.finish();
}

/// Drop a registered timeout.
fn cancel(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let timer = Timer::new();
    let waker = noop_waker_ref();
    let mut g = c.benchmark_group("cancel");
    g.bench_function(BenchmarkId::new("hashwheel", "drop"), |b| {
        b.iter_custom(|iters| {
            let hold: Vec<_> = (0..iters).map(|_| ours(&timer, FAR, waker)).collect();
            let start = Instant::now();
            for t in hold {
                drop(t);
            }
            start.elapsed()
        })
    });
    g.bench_function(BenchmarkId::new("tokio", "drop"), |b| {
        b.iter_custom(|iters| {
            let hold: Vec<_> = (0..iters).map(|_| theirs(FAR, waker)).collect();
            let start = Instant::now();
            for s in hold {
                drop(s);
            }
            start.elapsed()
        })
    });
    g.finish();
}

/// Move a registered timeout's deadline (to now + 30 s + up to 1 s).
fn reset(c: &mut Criterion) {
    const POOL: usize = 1024;
    let rt = runtime();
    let _guard = rt.enter();
    let timer = Timer::new();
    let waker = noop_waker_ref();
    let offset = |i: usize| FAR + Duration::from_millis((i % 1000) as u64);
    let mut g = c.benchmark_group("reset");
    let mut pool: Vec<_> = (0..POOL).map(|_| ours(&timer, FAR, waker)).collect();
    g.bench_function(BenchmarkId::new("hashwheel", "reset_at"), |b| {
        b.iter_custom(|iters| {
            let now = Instant::now();
            let start = Instant::now();
            for i in 0..iters as usize {
                pool[i % POOL].reset_at(now + offset(i));
            }
            start.elapsed()
        })
    });
    let mut pool: Vec<_> = (0..POOL).map(|_| theirs(FAR, waker)).collect();
    g.bench_function(BenchmarkId::new("tokio", "Sleep::reset"), |b| {
        b.iter_custom(|iters| {
            let now = Instant::now();
            let start = Instant::now();
            for i in 0..iters as usize {
                pool[i % POOL].as_mut().reset(now + offset(i));
            }
            start.elapsed()
        })
    });
    g.finish();
}

struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Process CPU time (the driver runs on this thread, between our polls).
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Fire: CPU time per timeout for the timer to find it due and wake it,
/// `iters` timeouts due at the same instant, the wake-up of the timer's
/// task included. Wall time would mostly be the wait for the deadline.
fn fire(c: &mut Criterion) {
    let rt = runtime();
    let timer = rt.block_on(async { Timer::new() });
    let mut g = c.benchmark_group("fire");
    g.sample_size(20);
    g.bench_function(BenchmarkId::new("hashwheel", "cpu per timeout"), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
                let waker = Waker::from(counter.clone());
                let deadline = Instant::now() + Duration::from_millis(2);
                let hold: Vec<_> = (0..iters)
                    .map(|_| {
                        let mut t = timer.sleep_until(deadline);
                        poll_once(Pin::new(&mut t), &waker);
                        t
                    })
                    .collect();
                let cpu = cpu_time();
                while counter.0.load(Ordering::Relaxed) < iters as usize {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let cpu = cpu_time() - cpu;
                drop(hold);
                cpu
            })
        })
    });
    g.bench_function(BenchmarkId::new("tokio", "cpu per timeout"), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
                let waker = Waker::from(counter.clone());
                let deadline = Instant::now() + Duration::from_millis(2);
                let hold: Vec<_> = (0..iters)
                    .map(|_| {
                        let mut s = Box::pin(tokio::time::sleep_until(deadline));
                        poll_once(s.as_mut(), &waker);
                        s
                    })
                    .collect();
                let cpu = cpu_time();
                while counter.0.load(Ordering::Relaxed) < iters as usize {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let cpu = cpu_time() - cpu;
                drop(hold);
                cpu
            })
        })
    });
    g.finish();
}

/// W1 (schedule + cancel: a 30 s sleep, polled once, dropped) three ways:
/// through a `Timer` handle, through the `hashwheel::time` free functions
/// (which find the runtime's default timer on every call, as
/// `tokio::time::sleep` finds the runtime's driver), and on `tokio::time`.
fn w1_free_functions(c: &mut Criterion) {
    let rt = runtime();
    let _guard = rt.enter();
    let timer = Timer::new();
    let waker = noop_waker_ref();
    let mut g = c.benchmark_group("w1");
    g.bench_function(BenchmarkId::new("hashwheel", "Timer::sleep"), |b| {
        b.iter(|| drop(ours(&timer, FAR, waker)))
    });
    g.bench_function(BenchmarkId::new("hashwheel", "time::sleep"), |b| {
        b.iter(|| {
            let mut s = hashwheel::time::sleep(FAR);
            poll_once(Pin::new(&mut s), waker);
            drop(s);
        })
    });
    g.bench_function(BenchmarkId::new("tokio", "Box::pin(sleep)"), |b| {
        b.iter(|| drop(theirs(FAR, waker)))
    });
    g.finish();
}

/// The choices of where callbacks run that are timed here.
fn executors() -> [(&'static str, TaskExecutor); 2] {
    [
        ("driver", TaskExecutor::driver()),
        ("spawn (default)", TaskExecutor::spawn()),
    ]
}

/// A callback's round trip: CPU time per callback to schedule it, find it
/// due and run it (`iters` callbacks due 2 ms on), under each
/// `TaskExecutor`, beside what tokio users write instead: a spawned task
/// that sleeps, then calls.
fn callback(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("callback");
    g.sample_size(20);
    let delay = Duration::from_millis(2);
    for (name, executor) in executors() {
        let timer =
            rt.block_on(async { Timer::builder().task_executor(executor).build().unwrap() });
        g.bench_function(BenchmarkId::new("hashwheel schedule→run", name), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let ran = Arc::new(AtomicUsize::new(0));
                    let cpu = cpu_time();
                    for _ in 0..iters {
                        let ran = ran.clone();
                        timer.schedule(delay, move || {
                            ran.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                    while ran.load(Ordering::Relaxed) < iters as usize {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    cpu_time() - cpu
                })
            })
        });
    }
    g.bench_function(BenchmarkId::new("tokio", "spawn(sleep, then call)"), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let ran = Arc::new(AtomicUsize::new(0));
                let cpu = cpu_time();
                for _ in 0..iters {
                    let ran = ran.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        ran.fetch_add(1, Ordering::Relaxed);
                    });
                }
                while ran.load(Ordering::Relaxed) < iters as usize {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                cpu_time() - cpu
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = schedule, cancel, reset, fire, callback, w1_free_functions
}
criterion_main!(benches);
