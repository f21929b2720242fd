//! W6 / W8: idle CPU, with one timeout far away (W6) and with many far
//! timers (W8), against `tokio::time` and tokio-util's `DelayQueue`.

use std::pin::{pin, Pin};
use std::time::Duration;

use futures::StreamExt;
use hashwheel::{Timeout, Timer};
use tokio::time::Sleep;
use tokio_util::time::DelayQueue;

use crate::common::{cpu_time, poll_once, two_workers, Rng};
use crate::config::Config;
use crate::report::Row;

/// CPU ms per second while the runtime idles for `secs`.
async fn idle_cpu(secs: u64) -> f64 {
    // Let the driver settle on its plan first.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cpu = cpu_time();
    let wall = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    (cpu_time() - cpu).as_secs_f64() * 1000.0 / wall.elapsed().as_secs_f64()
}

pub fn w6(cfg: &Config) -> Vec<Row> {
    let secs = cfg.w6_secs;
    let (empty_wakeups, cpu, wakeups) = two_workers().block_on(async {
        let timer = Timer::new();
        let w0 = timer.driver_wakeups();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let empty = (timer.driver_wakeups() - w0) as f64 / secs as f64;
        let mut t = timer.sleep(Duration::from_secs(3600));
        poll_once(Pin::new(&mut t));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let w0 = timer.driver_wakeups();
        let cpu = idle_cpu(secs).await;
        let wakeups = (timer.driver_wakeups() - w0) as f64 / secs as f64;
        (empty, cpu, wakeups)
    });
    let tokio_cpu = two_workers().block_on(async {
        let mut s = pin!(tokio::time::sleep(Duration::from_secs(3600)));
        poll_once(s.as_mut());
        idle_cpu(secs).await
    });
    let dq_cpu = two_workers().block_on(async {
        let mut dq = DelayQueue::new();
        dq.insert((), Duration::from_secs(3600));
        let task = tokio::spawn(async move { dq.next().await });
        let cpu = idle_cpu(secs).await;
        task.abort();
        cpu
    });
    vec![
        Row::new("W6", "idle, one timeout in 1 h: CPU ms/s", cpu)
            .tokio(tokio_cpu)
            .dq(dq_cpu)
            .places(3),
        Row::new("W6", "idle, one timeout in 1 h: wake-ups/s", wakeups).places(2),
        Row::new("W6", "idle, empty: wake-ups/s", empty_wakeups).places(2),
    ]
}

pub fn w8(cfg: &Config) -> Vec<Row> {
    let (n, secs) = (cfg.w8_timers, cfg.w8_secs);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let delays: Vec<Duration> = (0..n).map(|_| rng.millis(60_000, 120_000)).collect();
    let (ours, wakeups) = two_workers().block_on(async {
        let timer = Timer::new();
        let mut hold: Vec<Timeout> = Vec::with_capacity(n);
        for &d in &delays {
            let mut t = timer.sleep(d);
            poll_once(Pin::new(&mut t));
            hold.push(t);
        }
        let w0 = timer.driver_wakeups();
        let cpu = idle_cpu(secs).await;
        (cpu, timer.driver_wakeups() - w0)
    });
    let tokio = two_workers().block_on(async {
        let mut hold: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
        for &d in &delays {
            let mut s = Box::pin(tokio::time::sleep(d));
            poll_once(s.as_mut());
            hold.push(s);
        }
        idle_cpu(secs).await
    });
    let dq = two_workers().block_on(async {
        let mut dq = DelayQueue::new();
        for &d in &delays {
            dq.insert((), d);
        }
        let task = tokio::spawn(async move { dq.next().await });
        let cpu = idle_cpu(secs).await;
        task.abort();
        cpu
    });
    vec![
        Row::new("W8", "far timers idle: CPU ms/s", ours)
            .tokio(tokio)
            .dq(dq)
            .places(3),
        Row::new(
            "W8",
            "far timers idle: driver wake-ups/s",
            wakeups as f64 / secs as f64,
        )
        .places(2),
    ]
}

// ---- thread-driver: W6 on the thread driver (the `thread-driver` feature) ----

/// W6 on a timer turned by a thread of its own
/// (`Timer::builder().driver_thread()`), outside any runtime: driver
/// wake-ups per second with nothing pending and with one timeout an hour
/// away (the crate's own count), the process's context switches per second
/// over the same window (the driver thread's sleeps and wakes show there),
/// and CPU ms per second; futures-timer's `Delay` idling beside it for the
/// CPU figure.
#[cfg(feature = "thread-driver")]
pub fn w6_thread(cfg: &Config) -> Vec<Row> {
    use std::time::Instant;

    let secs = cfg.w6_secs;
    let window = Duration::from_secs(secs);
    let timer = Timer::builder()
        .driver_thread()
        .build()
        .expect("thread-driven timer");
    let w0 = timer.driver_wakeups();
    std::thread::sleep(window);
    let empty = (timer.driver_wakeups() - w0) as f64 / secs as f64;
    let mut t = timer.sleep(Duration::from_secs(3600));
    poll_once(Pin::new(&mut t));
    std::thread::sleep(Duration::from_millis(50));
    let (w0, csw0, cpu0, wall) = (
        timer.driver_wakeups(),
        context_switches(),
        cpu_time(),
        Instant::now(),
    );
    std::thread::sleep(window);
    let wall = wall.elapsed().as_secs_f64();
    let cpu = (cpu_time() - cpu0).as_secs_f64() * 1000.0 / wall;
    let csw = (context_switches() - csw0) as f64 / wall;
    let wakeups = (timer.driver_wakeups() - w0) as f64 / wall;
    drop(t);
    // futures-timer: one Delay an hour away, polled once, its helper thread
    // idling.
    let mut delay = futures_timer::Delay::new(Duration::from_secs(3600));
    poll_once(Pin::new(&mut delay));
    std::thread::sleep(Duration::from_millis(50));
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    std::thread::sleep(window);
    let ft_cpu = (cpu_time() - cpu0).as_secs_f64() * 1000.0 / wall0.elapsed().as_secs_f64();
    vec![
        Row::new(
            "W6",
            "thread driver idle, one timeout in 1 h: CPU ms/s (DelayQueue column: futures-timer)",
            cpu,
        )
        .dq(ft_cpu)
        .places(3),
        Row::new(
            "W6",
            "thread driver idle, one timeout in 1 h: wake-ups/s",
            wakeups,
        )
        .places(2),
        Row::new(
            "W6",
            "thread driver idle, one timeout in 1 h: process context switches/s",
            csw,
        )
        .places(2),
        Row::new("W6", "thread driver idle, empty: wake-ups/s", empty).places(2),
    ]
}

/// The process's context switches so far (`getrusage`).
#[cfg(feature = "thread-driver")]
fn context_switches() -> u64 {
    // SAFETY: `usage` is a valid, writable rusage for the call's duration.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    (usage.ru_nvcsw + usage.ru_nivcsw) as u64
}

// ---- end of the thread-driver W6 ----
