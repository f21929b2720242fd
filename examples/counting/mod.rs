//! What the counting examples share (`heartbeat_counts`,
//! `select_timeout_counts`, `protocol_timer_counts`: W9, W14 and W15 on
//! paused time, for cachegrind): how they build their timers, the
//! polluter that leaves the caches as a park on the real clock does, and
//! the runtime thread's CPU clock. Each includes it with `#[path]` and uses
//! what it needs (not an example itself: no `main.rs` here).

#![allow(dead_code)]

use std::time::Duration;

/// Builds the contender's timers on the runtime `block_on` runs, started
/// paused: a `Timer` where `timer`, the runtime's default timer
/// (`hashwheel::time`) where `default`; then pauses the clock again.
///
/// The timers are built while the runtime's time runs: a timer built on
/// paused time follows the runtime timer's millisecond, as `tokio::time`
/// does there (a lock a beat, where the real clock's beat takes none);
/// built on a running clock, it keeps the microsecond, as on the real
/// clock, whose work these examples count. Built the moment the clock
/// resumes, on one of the runtime timer's milliseconds, its own start is a
/// few microseconds after that millisecond from run to run, not anywhere in
/// it: where it lies moves work between the runtime timer's milliseconds,
/// and the instructions a packet (W15) by tens.
pub fn timers_on_a_running_clock(timer: bool, default: bool) -> Option<hashwheel::Timer> {
    tokio::time::resume();
    let built = timer.then(hashwheel::Timer::new);
    if default {
        drop(hashwheel::Timer::current());
    }
    tokio::time::pause();
    built
}

/// Writes a line of every 64 bytes of 2 MiB every millisecond, for ever:
/// the caches a turn finds after a park on the real clock.
pub async fn pollute() {
    let mut buf = vec![0u8; 2 << 20];
    let mut every = tokio::time::interval(Duration::from_millis(1));
    loop {
        every.tick().await;
        for line in buf.chunks_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        std::hint::black_box(&buf);
    }
}

/// The CPU time of this thread, which runs the runtime and every task.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
