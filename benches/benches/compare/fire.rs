//! W4: fire N spawned tasks spread over one second, 2 workers; lateness
//! against `tokio::time`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use hashwheel::Timer;
use tokio::runtime::Runtime;
use tokio::time::Instant;

use crate::child::{ALT_NOTE, ALT_TIMER};
use crate::common::{p50_p99, percentile, two_workers, WakeStamped};
use crate::config::Config;
use crate::report::{lines, Line, Row};

/// Lateness in µs, signed (negative = early), sorted.
fn w4_run(
    rt: &Runtime,
    tasks: usize,
    sleep_until: impl Fn(Instant) -> Pin<Box<dyn Future<Output = ()> + Send>>,
) -> Vec<i64> {
    rt.block_on(async {
        let base = Instant::now() + Duration::from_millis(300);
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let deadline = base + Duration::from_secs(1) * i as u32 / tasks as u32;
                let fut = sleep_until(deadline);
                tokio::spawn(async move {
                    fut.await;
                    let now = Instant::now();
                    match now.checked_duration_since(deadline) {
                        Some(late) => late.as_micros() as i64,
                        None => -(deadline.duration_since(now).as_micros() as i64) - 1,
                    }
                })
            })
            .collect();
        let mut late = Vec::with_capacity(tasks);
        for h in handles {
            late.push(h.await.unwrap());
        }
        late.sort_unstable();
        late
    })
}

/// W4 on hashwheel once more, each sleep wrapped in a waker that notes
/// when it was woken: prints the timer's own lateness (`Stats::lateness`)
/// beside the lateness at the wake and the task's, p50 / p99 in µs. They
/// should agree within a bucket (1/32) at the wake; the task's adds the
/// runtime's scheduling delay.
fn w4_check(cfg: &Config) {
    let rt = two_workers();
    let timer = rt.block_on(async { Timer::new() });
    let before = timer.stats().lateness;
    let (mut wake, mut task) = rt.block_on(async {
        let base = Instant::now() + Duration::from_millis(300);
        let handles: Vec<_> = (0..cfg.w4_tasks)
            .map(|i| {
                let deadline = base + Duration::from_secs(1) * i as u32 / cfg.w4_tasks as u32;
                let mut fut = WakeStamped::new(timer.sleep_until(deadline));
                tokio::spawn(async move {
                    (&mut fut).await;
                    let resumed = Instant::now().into_std();
                    let deadline = deadline.into_std();
                    let us = |t: std::time::Instant| {
                        t.saturating_duration_since(deadline).as_secs_f64() * 1e6
                    };
                    (fut.woken().map_or(f64::NAN, us), us(resumed))
                })
            })
            .collect();
        let (mut wake, mut task) = (Vec::new(), Vec::new());
        for h in handles {
            let (w, t) = h.await.unwrap();
            wake.push(w);
            task.push(t);
        }
        (wake, task)
    });
    let ours = timer.stats().lateness.since(&before);
    wake.sort_by(f64::total_cmp);
    task.sort_by(f64::total_cmp);
    let (w50, w99) = p50_p99(&wake);
    let (t50, t99) = p50_p99(&task);
    let q = |q: f64| ours.quantile(q).as_secs_f64() * 1e6;
    eprintln!(
        "W4 check: lateness p50 / p99 µs: timer's own (Stats::lateness, {} fires) {:.0} / {:.0}, \
         at the wake (stamped waker) {w50:.0} / {w99:.0}, task-side {t50:.0} / {t99:.0}",
        ours.count(),
        q(0.5),
        q(0.99),
    );
}

/// W4's rows (hashwheel against `tokio::time`) and lines (tokio's
/// alternative timer, when the bench is built with `--cfg tokio_unstable`).
pub fn w4(cfg: &Config) -> (Vec<Row>, Vec<Line>) {
    let ours = {
        let rt = two_workers();
        let timer = rt.block_on(async { Timer::new() });
        w4_run(&rt, cfg.w4_tasks, |d| Box::pin(timer.sleep_until(d)))
    };
    let tokio = w4_run(&two_workers(), cfg.w4_tasks, |d| {
        Box::pin(tokio::time::sleep_until(d))
    });
    let alt = alt_timer(cfg);
    w4_check(cfg);
    let early = |late: &[i64]| late.iter().filter(|&&l| l < 0).count();
    assert_eq!(early(&ours), 0, "hashwheel fired early");
    let row = |figure: &str, p: f64| {
        Row::new("W4", figure, percentile(&ours, p))
            .tokio(percentile(&tokio, p))
            .places(3)
    };
    let rows = vec![
        row("fire: lateness p50, ms", 0.5),
        row("fire: lateness p99, ms", 0.99),
        row("fire: lateness max, ms", 1.0),
        row("fire: lateness min (≥ 0: never early), ms", 0.0),
    ];
    let mut extra = Vec::new();
    if let Some(alt) = alt {
        for (figure, p) in [
            ("fire: lateness p50, ms", 0.5),
            ("fire: lateness p99, ms", 0.99),
            ("fire: lateness max, ms", 1.0),
            ("fire: lateness min (≥ 0: never early), ms", 0.0),
        ] {
            // The min is a check (≥ 0: never early), not a cost: no ratio.
            let these = lines(
                "W4",
                figure,
                &[
                    ("hashwheel Timer", vec![percentile(&ours, p)]),
                    ("tokio::time", vec![percentile(&tokio, p)]),
                    ("tokio alternative timer", vec![percentile(&alt, p)]),
                ],
                "hashwheel Timer",
            )
            .places(3)
            .check(p == 0.0)
            .rows();
            extra.extend(these);
        }
    } else {
        eprintln!("W4: {ALT_NOTE}");
    }
    (rows, extra)
}

/// W4 on tokio's alternative timer (2 workers), if built in.
fn alt_timer(cfg: &Config) -> Option<Vec<i64>> {
    if !ALT_TIMER {
        return None;
    }
    let rt = crate::child::runtime("2w", true);
    Some(w4_run(&rt, cfg.w4_tasks, |d| {
        Box::pin(tokio::time::sleep_until(d))
    }))
}
