//! A timeout fires at the first tick at or after its deadline, never before,
//! and under paused time within one tick after it.

mod common;

use std::time::Duration;

use common::{advance, MS};
use hashwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

#[tokio::test(start_paused = true)]
async fn fires_at_the_deadline_not_a_tick_before() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(10)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(9)).await;
    assert!(!t.is_woken());
    assert_pending!(t.poll());
    advance(MS).await;
    assert!(t.is_woken());
    assert_ready!(t.poll());
}

#[tokio::test(start_paused = true)]
async fn sub_tick_deadlines_round_up() {
    let timer = Timer::builder()
        .tick(Duration::from_millis(10))
        .build()
        .unwrap();
    let start = Instant::now();
    let mut t = task::spawn(timer.sleep(Duration::from_millis(11)));
    assert_pending!(t.poll());
    advance(Duration::from_millis(19)).await;
    assert_pending!(t.poll());
    advance(MS).await;
    assert_ready!(t.poll());
    assert_eq!(start.elapsed(), Duration::from_millis(20));
}

#[tokio::test(start_paused = true)]
async fn many_deadlines_each_within_one_tick() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..300u64 {
        // Spread over several turns of the 512-tick wheel, off tick boundaries.
        let delay = Duration::from_micros(i * 7_919 + 250);
        let timer = timer.clone();
        handles.push(tokio::spawn(async move {
            let deadline = Instant::now() + delay;
            timer.sleep(delay).await;
            (deadline, Instant::now())
        }));
    }
    for h in handles {
        let (deadline, fired) = h.await.unwrap();
        assert!(
            fired >= deadline,
            "fired early: {:?} before",
            deadline - fired
        );
        assert!(fired - deadline < MS, "late by {:?}", fired - deadline);
    }
    assert!(start.elapsed() > Duration::from_secs(2));
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn deadlines_on_bucket_and_round_edges() {
    let timer = Timer::builder().wheel_size(8).build().unwrap();
    for ms in [
        1u64,
        7,
        8,
        9,
        15,
        16,
        17,
        63,
        64,
        65,
        8 * 64,
        8 * 64 + 1,
        8 * 64 * 3,
    ] {
        let start = Instant::now();
        timer.sleep(Duration::from_millis(ms)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(ms), "delay {ms}ms");
    }
}
