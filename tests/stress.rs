//! Concurrency stress: eight tasks on a multi-thread runtime create, reset,
//! cancel and await timeouts and tasks while the driver runs. Every timeout
//! completes exactly one way (fired + cancelled == created), none early,
//! and the whole run finishes within a bounded time (no deadlock).
//!
//! These run on the real clock (paused time needs a current-thread
//! runtime), with delays of a few milliseconds. A watchdog thread turns a
//! deadlock into a failure instead of a hung test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use hashwheel::{TaskHandle, Timer};
use tokio::time::Instant;

const TASKS: u64 = 8;
const ITERATIONS: usize = 150;
const WATCHDOG: Duration = Duration::from_secs(60);

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }

    fn delay(&mut self) -> Duration {
        Duration::from_micros(self.below(3_000))
    }
}

#[derive(Default, Debug)]
struct Counts {
    created: AtomicUsize,
    fired: AtomicUsize,
    cancelled: AtomicUsize,
    scheduled: AtomicUsize,
    ran: Arc<AtomicUsize>,
    tasks_cancelled: AtomicUsize,
}

fn add(n: &AtomicUsize) {
    n.fetch_add(1, Ordering::SeqCst);
}

fn get(n: &AtomicUsize) -> usize {
    n.load(Ordering::SeqCst)
}

/// Runs `f` on a fresh multi-thread runtime in its own thread; fails if it
/// does not finish within the watchdog's time.
fn with_watchdog<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(f());
        tx.send(()).unwrap();
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(()) => thread.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The thread panicked: show its panic.
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("deadlock: the stress run did not finish in {WATCHDOG:?}")
        }
    }
}

async fn churn(timer: Timer, seed: u64, counts: Arc<Counts>) {
    let mut rng = Rng(seed);
    let mut handles: Vec<TaskHandle> = Vec::new();
    for _ in 0..ITERATIONS {
        match rng.below(6) {
            // Await a timeout.
            0 => {
                let delay = rng.delay();
                let start = Instant::now();
                let mut t = timer.sleep(delay);
                add(&counts.created);
                (&mut t).await;
                assert!(t.is_expired() && !t.is_cancelled());
                assert!(start.elapsed() >= delay, "fired early");
                add(&counts.fired);
            }
            // Register, reset earlier or later, await.
            1 => {
                let mut t = timer.sleep(rng.delay());
                add(&counts.created);
                if futures_util::poll!(&mut t).is_ready() {
                    add(&counts.fired);
                    continue;
                }
                let delay = rng.delay();
                let start = Instant::now();
                t.reset(delay);
                (&mut t).await;
                assert!(start.elapsed() >= delay, "fired early after a reset");
                add(&counts.fired);
            }
            // Register, let it race the driver, cancel.
            2 => {
                let mut t = timer.sleep(rng.delay());
                add(&counts.created);
                if futures_util::poll!(&mut t).is_ready() {
                    add(&counts.fired);
                    continue;
                }
                tokio::time::sleep(rng.delay()).await;
                if t.cancel() {
                    add(&counts.cancelled);
                } else {
                    add(&counts.fired);
                }
            }
            // Drop without polling.
            3 => {
                drop(timer.sleep(rng.delay()));
                add(&counts.created);
                add(&counts.cancelled);
            }
            // Two timeouts raced: the loser is cancelled, unless both fired.
            4 => {
                let mut a = timer.sleep(rng.delay());
                let mut b = timer.sleep(rng.delay());
                counts.created.fetch_add(2, Ordering::SeqCst);
                let loser = tokio::select! {
                    _ = &mut a => b,
                    _ = &mut b => a,
                };
                add(&counts.fired);
                if loser.cancel() {
                    add(&counts.cancelled);
                } else {
                    add(&counts.fired);
                }
            }
            // A scheduled task, sometimes cancelled from this thread while
            // the driver may be running it.
            _ => {
                let ran = counts.ran.clone();
                let h = timer.schedule(rng.delay(), move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
                add(&counts.scheduled);
                if rng.below(2) == 0 {
                    tokio::time::sleep(rng.delay()).await;
                    if h.cancel() {
                        add(&counts.tasks_cancelled);
                    }
                }
                handles.push(h);
            }
        }
    }
    for h in handles {
        // Each task ended exactly one way, or is still due to run.
        assert!(!(h.is_expired() && h.is_cancelled()));
    }
}

#[test]
fn eight_tasks_create_reset_cancel_and_await_concurrently() {
    with_watchdog(|| async {
        for shards in [1, 3] {
            let timer = Timer::builder().shards(shards).build().unwrap();
            let counts = Arc::new(Counts::default());
            let workers: Vec<_> = (0..TASKS)
                .map(|seed| tokio::spawn(churn(timer.clone(), seed, counts.clone())))
                .collect();
            for w in workers {
                w.await.unwrap();
            }
            // Tasks not cancelled run within their few milliseconds.
            let deadline = Instant::now() + Duration::from_secs(10);
            while get(&counts.ran) + get(&counts.tasks_cancelled) < get(&counts.scheduled)
                && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let c = &counts;
            assert_eq!(
                get(&c.fired) + get(&c.cancelled),
                get(&c.created),
                "{shards} shards: {c:?}"
            );
            assert_eq!(
                get(&c.ran) + get(&c.tasks_cancelled),
                get(&c.scheduled),
                "{shards} shards: {c:?}"
            );
            assert_eq!(timer.pending(), 0);
            assert!(get(&c.created) > 0 && get(&c.scheduled) > 0);
        }
    });
}

#[test]
fn stop_under_concurrent_use_completes_every_timeout() {
    with_watchdog(|| async {
        let timer = Timer::builder().shards(3).build().unwrap();
        let workers: Vec<_> = (0..TASKS)
            .map(|seed| {
                let timer = timer.clone();
                tokio::spawn(async move {
                    let mut rng = Rng(seed);
                    let (mut fired, mut cancelled) = (0, 0);
                    let mut handles = Vec::new();
                    loop {
                        if rng.below(4) == 0 {
                            match timer.try_schedule(rng.delay(), || {}) {
                                Ok(h) => handles.push(h),
                                Err(e) => {
                                    assert!(e.is_stopped());
                                    break;
                                }
                            }
                            continue;
                        }
                        let mut t = match timer.try_sleep(rng.delay()) {
                            Ok(t) => t,
                            Err(e) => {
                                assert!(e.is_stopped());
                                break;
                            }
                        };
                        if rng.below(2) == 0 && futures_util::poll!(&mut t).is_pending() {
                            t.reset(rng.delay());
                        }
                        (&mut t).await;
                        assert!(t.is_expired() != t.is_cancelled());
                        if t.is_expired() {
                            fired += 1;
                        } else {
                            cancelled += 1;
                        }
                    }
                    (fired, cancelled, handles)
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        timer.stop();
        let mut fired = 0;
        for w in workers {
            let (f, _cancelled, handles) = w.await.unwrap();
            fired += f;
            // Checked once `stop` has returned: a worker may see the timer
            // stopped while `stop` is still draining another shard.
            for h in handles {
                assert!(h.is_expired() != h.is_cancelled(), "{h:?}");
            }
        }
        assert!(fired > 0);
        assert_eq!(timer.pending(), 0);
        assert!(timer.is_stopped());
    });
}

/// The driver sleeps until its planned tick (here an hour out); every insert
/// earlier than that, from any thread and at any point of the driver's
/// turn, must wake it (see `Shared::note_deadline`). A lost wake-up leaves
/// a timeout waiting for the hour.
#[test]
fn an_earlier_insert_from_any_thread_always_wakes_the_driver() {
    with_watchdog(|| async {
        let timer = Timer::builder().shards(3).build().unwrap();
        let mut far = timer.sleep(Duration::from_secs(3600));
        assert!(futures_util::poll!(&mut far).is_pending());
        for round in 0..200u64 {
            let waiters: Vec<_> = (0..TASKS)
                .map(|i| {
                    let timer = timer.clone();
                    tokio::spawn(async move {
                        let t = timer.sleep(Duration::from_micros(200 * (round % 5 + i)));
                        tokio::time::timeout(Duration::from_secs(10), t)
                            .await
                            .expect("lost wake-up: the driver slept past an earlier insert");
                    })
                })
                .collect();
            for w in waiters {
                w.await.unwrap();
            }
        }
        assert_eq!(timer.pending(), 1);
    });
}
