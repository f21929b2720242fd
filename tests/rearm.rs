//! Regression: a steady stream of re-arms and resets (heartbeat intervals
//! re-armed after each tick, idle timeouts pushed back on every message)
//! must not wake the driver, or touch the runtime's timer (which may unpark
//! a worker), more than once per due tick.
//!
//! The driver used to be a task woken through a `Notify`: every re-arm made
//! by a woken task while the driver was turning notified it again, and on a
//! multi-worker runtime every wake it made unparked another worker (21,000 to
//! 40,000 context switches a second in W9, against tokio's 3,300). These
//! tests count instead of timing: driver turns (`Stats::driver_wakeups`) and
//! arms of the runtime timer (`Stats::alarm_arms`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hashwheel::Timer;
use tokio::time::Instant;

/// One simulated connection: a heartbeat every `period` from its phase, and
/// an idle timeout pushed back after every heartbeat; `beats` heartbeats.
async fn connection(timer: Timer, phase: Duration, period: Duration, beats: usize) {
    let mut heartbeat = timer.interval_at(Instant::now() + phase, period);
    let mut idle = timer.sleep(Duration::from_secs(30));
    for _ in 0..beats {
        tokio::select! {
            _ = heartbeat.tick() => idle.reset(Duration::from_secs(30)),
            _ = &mut idle => panic!("idle timeout fired"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn heartbeats_and_resets_turn_the_driver_once_per_due_millisecond() {
    let timer = Timer::new();
    // 200 connections, phases 50 µs apart over a 10 ms period: every
    // millisecond has 20 heartbeats due.
    let tasks: Vec<_> = (0..200u64)
        .map(|i| {
            let phase = Duration::from_micros(50 * i + 1);
            tokio::spawn(connection(
                timer.clone(),
                phase,
                Duration::from_millis(10),
                10,
            ))
        })
        .collect();
    let start = Instant::now();
    // The steady state: past the first period, where every connection
    // registers, and short of the last, where connections end (inserts
    // earlier than everything pending arm the alarm then, as they should).
    tokio::time::sleep(Duration::from_micros(10_500)).await;
    let before = timer.stats();
    tokio::time::sleep(Duration::from_millis(80)).await;
    let steady = timer.stats();
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed_ms = start.elapsed().as_millis() as u64;
    assert!((100..=101).contains(&elapsed_ms), "took {elapsed_ms} ms");
    let stats = timer.stats();
    // 2,000 heartbeats, each re-arming its interval and pushing back its
    // idle timeout, over 100 ms.
    assert_eq!(stats.reset, 2 * 2_000);
    assert!(
        stats.driver_wakeups <= elapsed_ms + 1,
        "{} driver turns in {elapsed_ms} ms",
        stats.driver_wakeups
    );
    let turns = steady.driver_wakeups - before.driver_wakeups;
    let arms = steady.alarm_arms - before.alarm_arms;
    assert!(turns <= 81, "{turns} driver turns in 80 ms");
    assert!(arms <= turns, "{arms} alarm arms for {turns} turns");
}

#[test]
fn on_two_workers_a_turn_unparks_few_workers_and_re_arms_the_alarm_once() {
    // Counts every time a worker thread unparks.
    let unparks = Arc::new(AtomicU64::new(0));
    let counter = unparks.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_unpark(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let unparks_now = move || unparks.load(Ordering::Relaxed);
    let (stats, before, steady, steady_ms, elapsed_ms) = rt.block_on(async {
        let timer = Timer::new();
        let period = Duration::from_millis(20);
        let start = Instant::now();
        let tasks: Vec<_> = (0..2_000u64)
            .map(|i| {
                let phase = Duration::from_micros(10 * i + 1);
                tokio::spawn(connection(timer.clone(), phase, period, 5))
            })
            .collect();
        // The steady state, as above: past the first period, short of the
        // last.
        tokio::time::sleep(period + Duration::from_millis(2)).await;
        let before = (timer.stats(), unparks_now());
        let from = Instant::now();
        tokio::time::sleep(period * 3).await;
        let steady = (timer.stats(), unparks_now());
        let steady_ms = from.elapsed().as_millis() as u64;
        for task in tasks {
            task.await.unwrap();
        }
        let elapsed = start.elapsed().as_millis() as u64;
        (timer.stats(), before, steady, steady_ms, elapsed)
    });
    assert_eq!(stats.reset, 2 * 10_000);
    // Woken tasks on the other worker re-arm their heartbeats and push back
    // their idle timeouts while the driver turns: none of that arms the
    // runtime's timer (it is armed by the turn itself, once), and the
    // driver turns at most once per millisecond of the runtime's timer.
    assert!(
        stats.driver_wakeups <= elapsed_ms + 2,
        "{} driver turns in {elapsed_ms} ms",
        stats.driver_wakeups
    );
    let turns = steady.0.driver_wakeups - before.0.driver_wakeups;
    let arms = steady.0.alarm_arms - before.0.alarm_arms;
    let unparks = steady.1 - before.1;
    assert!(
        turns <= steady_ms + 1,
        "{turns} driver turns in {steady_ms} ms"
    );
    assert!(arms <= turns + 1, "{arms} alarm arms for {turns} turns");
    // The driver's wakes are batched by the runtime, as its own timers'
    // are: a turn unparks a worker once or twice, not once per woken task
    // (a driver task measured 15 unparks per turn here).
    assert!(
        unparks <= 3 * turns + 5,
        "{unparks} worker unparks for {turns} driver turns"
    );
}
