//! Many tasks on a multi-thread runtime create, await and drop timeouts at
//! once: no lost wake-up, and `pending()` returns to zero.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hashwheel::Timer;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thousands_created_and_dropped_from_many_tasks() {
    let timer = Timer::new();
    let fired = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for task in 0..8u64 {
        let timer = timer.clone();
        let fired = fired.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..500u64 {
                // Most are dropped unpolled or after one poll; some awaited.
                let mut t = timer.sleep(Duration::from_secs(30));
                if i % 2 == 0 {
                    let _ = futures_util::poll!(&mut t);
                }
                drop(t);
                if i % 50 == task % 50 {
                    timer.sleep(Duration::from_millis(1 + i % 3)).await;
                    fired.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Real time here: a multi-thread runtime cannot pause the clock. A lost
    // wake-up would hang, so bound it.
    common::join_within(tasks, Duration::from_secs(30), "a wake-up was lost").await;
    assert_eq!(fired.load(Ordering::Relaxed), 8 * 10);
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timeouts_awaited_on_other_threads_than_created() {
    let timer = Timer::new();
    let timeouts: Vec<_> = (0..200)
        .map(|i| timer.sleep(Duration::from_millis(1 + i % 7)))
        .collect();
    let handles: Vec<_> = timeouts.into_iter().map(tokio::spawn).collect();
    let all = async {
        for h in handles {
            h.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .expect("a wake-up was lost");
    assert_eq!(timer.pending(), 0);
}
