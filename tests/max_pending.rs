//! `Builder::max_pending` bounds timeouts and tasks together.

mod common;

use std::time::Duration;

use common::advance;
use hashwheel::Timer;
use tokio_test::{assert_pending, task};

#[tokio::test(start_paused = true)]
async fn the_next_try_fails_and_a_place_frees_at_once() {
    let timer = Timer::builder().max_pending(3).build().unwrap();
    let a = timer.try_sleep(Duration::from_secs(1)).unwrap();
    let _unpolled = timer.try_sleep(Duration::from_millis(5)).unwrap();
    let _c = timer.try_schedule(Duration::from_secs(1), || {}).unwrap();
    let err = timer.try_sleep(Duration::from_secs(1)).unwrap_err();
    assert!(err.is_at_capacity());
    assert!(!err.is_stopped());
    assert_eq!(err.to_string(), "timer is at capacity (3 pending)");
    assert!(timer
        .try_schedule(Duration::from_secs(1), || {})
        .unwrap_err()
        .is_at_capacity());

    // Cancelling frees a place.
    drop(a);
    let d = timer.try_sleep(Duration::from_secs(1)).unwrap();
    assert!(timer.try_sleep(Duration::from_secs(1)).is_err());

    // Firing frees a place.
    assert!(timer.try_sleep(Duration::from_millis(5)).is_err());
    drop(d);
    let mut b = task::spawn(timer.try_sleep(Duration::from_millis(5)).unwrap());
    assert_pending!(b.poll());
    assert!(timer.try_sleep(Duration::from_secs(1)).is_err());
    advance(Duration::from_millis(5)).await;
    assert!(b.is_woken());
    assert_eq!(timer.pending(), 2);
    assert!(timer.try_sleep(Duration::from_secs(1)).is_ok());
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "hashwheel: timer is at capacity (1 pending)")]
async fn the_infallible_form_panics_with_a_clear_message() {
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _a = timer.sleep(Duration::from_secs(1));
    let _b = timer.sleep(Duration::from_secs(1));
}

#[test]
fn the_limit_holds_exactly_under_concurrent_inserts() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let timer = rt.block_on(async { Timer::builder().max_pending(1000).build().unwrap() });
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let timer = timer.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                while let Ok(t) = timer.try_sleep(Duration::from_secs(60)) {
                    held.push(t);
                    if held.len() > 1000 {
                        break;
                    }
                }
                held
            })
        })
        .collect();
    let held: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(held.len(), 1000);
    assert_eq!(timer.pending(), 1000);
    drop(held);
    assert_eq!(timer.pending(), 0);
}

#[test]
fn the_limit_holds_exactly_under_concurrent_churn() {
    const MAX: usize = 500;
    const THREADS: usize = 4;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let timer = rt.block_on(async { Timer::builder().max_pending(MAX).shards(3).build().unwrap() });
    // Live timeouts and tasks, counted after each is created and before
    // each is given back: never above the true count, so never above MAX
    // while the limit holds.
    let live = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|seed| {
            let (timer, live, barrier) = (timer.clone(), live.clone(), barrier.clone());
            std::thread::spawn(move || {
                use std::sync::atomic::Ordering::SeqCst;
                let mut state = seed as u64 + 1;
                let mut rand = move || {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                };
                let mut timeouts = Vec::new();
                let mut tasks = Vec::new();
                let mut refused = 0;
                // Churn: create while the limit allows, give back at random.
                for _ in 0..20_000 {
                    match rand() % 5 {
                        0 | 1 => match timer.try_sleep(Duration::from_secs(60)) {
                            Ok(t) => {
                                assert!(live.fetch_add(1, SeqCst) < MAX, "over the limit");
                                timeouts.push(t);
                            }
                            Err(e) => {
                                assert!(e.is_at_capacity());
                                refused += 1;
                            }
                        },
                        2 => match timer.try_schedule(Duration::from_secs(60), || {}) {
                            Ok(h) => {
                                assert!(live.fetch_add(1, SeqCst) < MAX, "over the limit");
                                tasks.push(h);
                            }
                            Err(e) => assert!(e.is_at_capacity()),
                        },
                        3 if !timeouts.is_empty() => {
                            let i = rand() as usize % timeouts.len();
                            live.fetch_sub(1, SeqCst);
                            drop(timeouts.swap_remove(i));
                        }
                        _ if !tasks.is_empty() => {
                            let i = rand() as usize % tasks.len();
                            live.fetch_sub(1, SeqCst);
                            assert!(tasks.swap_remove(i).cancel());
                        }
                        _ => {}
                    }
                }
                // Then all fill up together: exactly MAX fit.
                barrier.wait();
                while let Ok(t) = timer.try_sleep(Duration::from_secs(60)) {
                    assert!(live.fetch_add(1, SeqCst) < MAX, "over the limit");
                    timeouts.push(t);
                }
                (timeouts, tasks, refused)
            })
        })
        .collect();
    let mut held = 0;
    let mut tasks_held = 0;
    let mut refused = 0;
    let mut keep = Vec::new();
    for t in threads {
        let (timeouts, tasks, r) = t.join().unwrap();
        held += timeouts.len() + tasks.len();
        tasks_held += tasks.len();
        refused += r;
        keep.push((timeouts, tasks));
    }
    assert!(refused > 0, "the churn never reached the limit");
    assert_eq!(held, MAX);
    assert_eq!(timer.pending(), MAX);
    drop(keep);
    // Dropping a task's handle does not cancel it: only the tasks remain.
    assert_eq!(timer.pending(), tasks_held);
}

/// Issue 27: `timeout`, the most common server call, had no error-returning
/// form; at `max_pending` it could only panic.
#[tokio::test(start_paused = true)]
async fn try_timeout_and_try_timeout_at_fail_at_capacity_where_timeout_panics() {
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let held = timer
        .try_timeout(Duration::from_secs(1), std::future::pending::<()>())
        .unwrap();
    let err = timer
        .try_timeout(Duration::from_secs(1), std::future::ready(1))
        .unwrap_err();
    assert!(err.is_at_capacity() && !err.is_stopped());
    assert_eq!(err.to_string(), "timer is at capacity (1 pending)");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    let err = timer
        .try_timeout_at(deadline, std::future::ready(1))
        .unwrap_err();
    assert!(err.is_at_capacity());
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(timer.timeout(Duration::from_secs(1), async { 1 }))
    }))
    .unwrap_err();
    assert_eq!(
        panic.downcast_ref::<String>().unwrap(),
        "hashwheel: timer is at capacity (1 pending)"
    );

    // A place frees as the held one goes; the new one runs as `timeout`'s.
    drop(held);
    let res = timer
        .try_timeout_at(deadline, std::future::pending::<()>())
        .unwrap()
        .await;
    assert!(!res.unwrap_err().is_timer_stopped());
    assert_eq!(tokio::time::Instant::now(), deadline);
    let ok = timer
        .try_timeout(Duration::from_secs(1), async { 7 })
        .unwrap();
    assert_eq!(ok.await, Ok(7));
}

/// Issue 39: `max_pending(0)` was accepted, and the timer refused every
/// timeout but a zero sleep (Netty users write 0 for "no limit"). It is a
/// configuration error naming the fix, on either driver; 1 is the least.
#[tokio::test(start_paused = true)]
async fn a_max_pending_of_zero_is_a_config_error_naming_the_fix() {
    let err = Timer::builder().max_pending(0).build().unwrap_err();
    assert!(err.is_invalid_config());
    assert_eq!(
        err.to_string(),
        "invalid timer configuration: max_pending must be at least 1, got 0: the timer would \
         refuse every timeout (for no limit, leave max_pending unset)"
    );
    #[cfg(feature = "thread")]
    assert!(Timer::builder()
        .driver_thread()
        .max_pending(0)
        .build()
        .unwrap_err()
        .is_invalid_config());
    let one = Timer::builder().max_pending(1).build().unwrap();
    let _held = one.try_sleep(Duration::from_secs(1)).unwrap();
    assert!(one
        .try_sleep(Duration::from_secs(1))
        .unwrap_err()
        .is_at_capacity());
}
