//! Regression: a steady stream of re-arms and resets (heartbeat intervals
//! re-armed after each tick, idle timeouts pushed back on every message)
//! must not wake the driver, or touch the runtime's timer (which may unpark
//! a worker), more than once per due tick.
//!
//! The driver used to be a task woken through a `Notify`: every re-arm made
//! by a woken task while the driver was turning notified it again, and on a
//! multi-worker runtime every wake it made unparked another worker (21,000 to
//! 40,000 context switches a second in W9, against tokio's 3,300). These
//! tests count instead of timing, on paused time: driver turns
//! (`Stats::driver_wakeups`) and arms of the runtime timer
//! (`Stats::alarm_arms`). The same counts on two workers and the real clock
//! (with the workers' unparks), and the write syscalls a re-arm must not
//! make, are checks of the bench (`cargo bench -p hashwheel-benches --bench
//! wakeups`): a busy machine can break a count on the real clock.

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
    // 2,000 heartbeats over 100 ms, each pushing back its idle timeout; the
    // intervals are re-armed by the driver as they fire, which is no reset.
    assert_eq!(stats.reset, 2_000);
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

/// Under load the driver does not put its next turn off: after a late turn
/// that expired many timeouts (40 here), the next deadline still fires at
/// the runtime's next millisecond, as a `Sleep` with it would. (Batching
/// the next turn half a tick later skipped that millisecond and put W4's
/// and W9's p99 lateness behind tokio's.)
#[tokio::test(start_paused = true)]
async fn under_load_the_next_turn_is_not_put_off() {
    use tokio_test::task;
    let us = Duration::from_micros;
    for burst in [40, 10] {
        let timer = Timer::new();
        let start = Instant::now();
        let mut burst: Vec<_> = (0..burst)
            .map(|_| task::spawn(timer.sleep_until(start + us(1_000))))
            .collect();
        let mut late = task::spawn(timer.sleep_until(start + us(1_900)));
        let mut sleep = task::spawn(tokio::time::sleep_until(start + us(1_900)));
        assert!(late.poll().is_pending() && sleep.poll().is_pending());
        for t in &mut burst {
            assert!(t.poll().is_pending());
        }
        // The burst (due at 1 ms) expires in one turn at 1.6 ms.
        tokio::time::advance(us(1_600)).await;
        assert!(burst.iter().all(|t| t.is_woken()));
        assert!(!late.is_woken(), "never early");
        // A `Sleep` at 1.9 ms fires at the runtime's 2 ms: so does `late`.
        tokio::time::advance(us(400)).await;
        assert!(sleep.is_woken());
        assert!(late.is_woken(), "burst of {}", burst.len());
        assert_eq!(timer.stats().driver_wakeups, 2);
    }
}
