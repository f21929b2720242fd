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
