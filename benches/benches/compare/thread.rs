//! The thread driver (issues 22 and 23) against the timers with a helper
//! thread: W6 idle, W10 on any executor, and W12 (precision), with
//! futures-timer, async-io's `Timer` (smol's) and `std::thread::sleep` as
//! the floor. Printed as tables of their own (more contenders than the
//! main table's columns).
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench compare -- --only=W6T,W10T,W12
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::executor::ThreadPool;
use futures::task::SpawnExt;
use hashwheel::Timer;

use crate::common::{cpu_time, current_thread, poll_once, two_workers, Rng};
use crate::config::Config;

const TICK_50US: Duration = Duration::from_micros(50);

fn thread_timer(tick: Duration) -> Timer {
    Timer::builder().tick(tick).driver_thread().build().unwrap()
}

/// Microseconds, uniform in `lo..hi`.
fn micros(rng: &mut Rng, lo: u64, hi: u64) -> Duration {
    // `Rng::millis` in microseconds.
    let d = rng.millis(lo, hi);
    Duration::from_micros(d.as_millis() as u64)
}

/// The contenders of W12: how each sleeps.
#[derive(Clone, Copy, Debug)]
enum Sleeper {
    Tokio,
    TimerDefault,
    Timer50us,
    Delay,
    FuturesTimer,
    AsyncIo,
}

impl Sleeper {
    const ALL: [Sleeper; 6] = [
        Sleeper::Tokio,
        Sleeper::TimerDefault,
        Sleeper::Timer50us,
        Sleeper::Delay,
        Sleeper::FuturesTimer,
        Sleeper::AsyncIo,
    ];

    fn name(self) -> &'static str {
        match self {
            Sleeper::Tokio => "`tokio::time::sleep`",
            Sleeper::TimerDefault => "`Timer` (runtime, 1 ms tick)",
            Sleeper::Timer50us => "`Timer` (thread, 50 µs tick)",
            Sleeper::Delay => "`hashwheel::Delay`",
            Sleeper::FuturesTimer => "futures-timer `Delay`",
            Sleeper::AsyncIo => "async-io `Timer`",
        }
    }
}

/// A sleep of `d` by `how`, on the timers given (built inside the runtime).
async fn sleep(how: Sleeper, timers: &(Timer, Timer), d: Duration) {
    match how {
        Sleeper::Tokio => tokio::time::sleep(d).await,
        Sleeper::TimerDefault => timers.0.sleep(d).await,
        Sleeper::Timer50us => timers.1.sleep(d).await,
        Sleeper::Delay => hashwheel::Delay::new(d).await,
        Sleeper::FuturesTimer => futures_timer::Delay::new(d).await,
        Sleeper::AsyncIo => {
            async_io::Timer::after(d).await;
        }
    }
}

/// Lateness percentiles in µs: (p50, p99, max, min).
fn summary(mut late_ns: Vec<i64>) -> (f64, f64, f64, f64) {
    late_ns.sort_unstable();
    let at = |p: f64| late_ns[((late_ns.len() - 1) as f64 * p).round() as usize] as f64 / 1e3;
    (at(0.5), at(0.99), at(1.0), at(0.0))
}

/// W12 light: one task sleeps `n` times in a row, 50–2,000 µs each.
fn light(how: Sleeper, n: usize, workers: bool) -> Vec<i64> {
    let rt = if workers {
        two_workers()
    } else {
        current_thread()
    };
    rt.block_on(async {
        let timers = (Timer::new(), thread_timer(TICK_50US));
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut late = Vec::with_capacity(n);
        for _ in 0..n {
            let d = micros(&mut rng, 50, 2_000);
            let start = Instant::now();
            sleep(how, &timers, d).await;
            late.push((start.elapsed().as_nanos() as i64) - d.as_nanos() as i64);
        }
        late
    })
}

/// W12 light's floor: `std::thread::sleep` on a plain thread.
fn light_std(n: usize) -> Vec<i64> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|_| {
            let d = micros(&mut rng, 50, 2_000);
            let start = Instant::now();
            std::thread::sleep(d);
            (start.elapsed().as_nanos() as i64) - d.as_nanos() as i64
        })
        .collect()
}

/// W12 busy: `tasks` tasks loop such sleeps for `secs`; lateness, and
/// process CPU ns per sleep.
fn busy(how: Sleeper, tasks: usize, secs: u64) -> (Vec<i64>, f64) {
    let rt = two_workers();
    rt.block_on(async {
        let timers = Arc::new((Timer::new(), thread_timer(TICK_50US)));
        // Start every contender's machinery before measuring.
        sleep(how, &timers, Duration::from_micros(100)).await;
        let end = Instant::now() + Duration::from_secs(secs);
        let cpu = cpu_time();
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let timers = timers.clone();
                tokio::spawn(async move {
                    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (i as u64 + 1));
                    let mut late = Vec::new();
                    while Instant::now() < end {
                        let d = micros(&mut rng, 50, 2_000);
                        let start = Instant::now();
                        sleep(how, &timers, d).await;
                        late.push((start.elapsed().as_nanos() as i64) - d.as_nanos() as i64);
                    }
                    late
                })
            })
            .collect();
        let mut late = Vec::new();
        for h in handles {
            late.extend(h.await.unwrap());
        }
        let cpu = (cpu_time() - cpu).as_nanos() as f64 / late.len() as f64;
        (late, cpu)
    })
}

pub fn w12(cfg: &Config) {
    let n = if cfg.quick { 500 } else { 2_000 };
    let secs = if cfg.quick { 1 } else { 3 };
    println!();
    println!("W12 light, lateness µs (one task, {n} sleeps of 50–2,000 µs): p50 / p99 / max, min");
    println!("| contender | current-thread | 2 workers |");
    println!("|---|---|---|");
    let fmt = |(p50, p99, max, min): (f64, f64, f64, f64)| {
        format!("{p50:.0} / {p99:.0} / {max:.0}, min {min:.1}")
    };
    let mut curves = Vec::new();
    for how in Sleeper::ALL {
        let ct = summary(light(how, n, false));
        let w2 = light(how, n, true);
        curves.push((how.name(), w2.clone()));
        println!("| {} | {} | {} |", how.name(), fmt(ct), fmt(summary(w2)));
    }
    let floor = light_std(n);
    curves.push(("`std::thread::sleep` (plain thread)", floor.clone()));
    println!(
        "| `std::thread::sleep` (plain thread) | {} | |",
        fmt(summary(floor))
    );
    if let Some(dir) = &cfg.charts {
        let path = dir.join("w12.svg");
        match draw_w12(&path, n, &mut curves) {
            Ok(()) => eprintln!("charts: wrote {}", path.display()),
            Err(e) => eprintln!("charts: cannot write {}: {e}", path.display()),
        }
    }
    println!();
    println!("W12 busy (1,000 tasks looping such sleeps for {secs} s, 2 workers)");
    println!("| contender | p50 / p99 / max µs, min | CPU ns per sleep |");
    println!("|---|---|---|");
    for how in Sleeper::ALL {
        let (late, cpu) = busy(how, 1_000, secs);
        println!("| {} | {} | {cpu:.0} |", how.name(), fmt(summary(late)));
    }
}

/// W6 on the thread driver: idle wake-ups (empty, one far timeout) and CPU.
pub fn w6_thread(cfg: &Config) {
    let secs = cfg.w6_secs;
    let timer = thread_timer(TICK_50US);
    let w0 = timer.stats().driver_wakeups;
    std::thread::sleep(Duration::from_secs(secs));
    let empty = (timer.stats().driver_wakeups - w0) as f64 / secs as f64;
    let mut far = timer.sleep(Duration::from_secs(3600));
    poll_once(Pin::new(&mut far));
    std::thread::sleep(Duration::from_millis(50));
    let w0 = timer.stats().driver_wakeups;
    let cpu = cpu_time();
    let wall = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let cpu_ms = (cpu_time() - cpu).as_secs_f64() * 1e3 / wall.elapsed().as_secs_f64();
    let one = (timer.stats().driver_wakeups - w0) as f64 / secs as f64;
    println!();
    println!("W6 on the thread driver (50 µs tick)");
    println!("| figure | value |");
    println!("|---|---|");
    println!("| idle, empty: wake-ups/s | {empty:.2} |");
    println!("| idle, one timeout in 1 h: wake-ups/s | {one:.2} |");
    println!("| idle, one timeout in 1 h: process CPU ms/s | {cpu_ms:.3} |");
}

/// A request: pending once (it wakes itself and yields), then ready.
struct Request(bool);

impl Future for Request {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// The timeouts of W10 on any executor.
#[derive(Clone, Copy)]
enum Deadline {
    Floor,
    Timer,
    FuturesTimer,
}

/// One request under `how`'s 30 s deadline.
async fn request(how: Deadline, timer: &Timer) {
    const D30: Duration = Duration::from_secs(30);
    match how {
        Deadline::Floor => Request(false).await,
        Deadline::Timer => timer.timeout(D30, Request(false)).await.unwrap(),
        Deadline::FuturesTimer => {
            let delay = futures_timer::Delay::new(D30);
            match futures::future::select(Request(false), delay).await {
                futures::future::Either::Left(_) => {}
                futures::future::Either::Right(_) => panic!("timed out"),
            }
        }
    }
}

/// W10 on a 2-thread `futures` pool: process CPU ns per request.
fn w10_pool(how: Deadline, tasks: usize, per_task: usize) -> f64 {
    let pool = ThreadPool::builder().pool_size(2).create().unwrap();
    let timer = thread_timer(Duration::from_millis(1));
    let (tx, rx) = mpsc::channel();
    let left = Arc::new(AtomicU64::new(tasks as u64));
    let cpu = cpu_time();
    for _ in 0..tasks {
        let (timer, tx, left) = (timer.clone(), tx.clone(), left.clone());
        pool.spawn(async move {
            for _ in 0..per_task {
                request(how, &timer).await;
            }
            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                tx.send(()).unwrap();
            }
        })
        .unwrap();
    }
    rx.recv().unwrap();
    (cpu_time() - cpu).as_nanos() as f64 / (tasks * per_task) as f64
}

/// W10 on 2 tokio workers, with a thread-driven timer.
fn w10_tokio(how: Deadline, tasks: usize, per_task: usize) -> f64 {
    let rt = two_workers();
    rt.block_on(async {
        let timer = thread_timer(Duration::from_millis(1));
        let cpu = cpu_time();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let timer = timer.clone();
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        request(how, &timer).await;
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        (cpu_time() - cpu).as_nanos() as f64 / (tasks * per_task) as f64
    })
}

pub fn w10_thread(cfg: &Config) {
    let per_task = if cfg.quick { 200 } else { 1_000 };
    let reps = cfg.reps;
    println!();
    println!("W10 on any executor (1,000 tasks × {per_task} requests, timeout 30 s around a future pending once), process CPU ns per request, best of {reps}");
    println!("| executor | floor | `Timer` (thread) | futures-timer | futures-timer ÷ `Timer` |");
    println!("|---|---|---|---|---|");
    for (name, run) in [
        (
            "futures `ThreadPool`, 2 threads",
            w10_pool as fn(Deadline, usize, usize) -> f64,
        ),
        ("tokio, 2 workers", w10_tokio),
    ] {
        let mut best = [f64::INFINITY; 3];
        for _ in 0..reps {
            for (i, how) in [Deadline::Floor, Deadline::Timer, Deadline::FuturesTimer]
                .into_iter()
                .enumerate()
            {
                best[i] = best[i].min(run(how, 1_000, per_task));
            }
        }
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.2}× |",
            best[0],
            best[1],
            best[2],
            best[2] / best[1]
        );
    }
}

/// The W12 light chart: each contender's lateness by percentile (2
/// workers), on a log scale: the distributions side by side.
fn draw_w12(
    path: &std::path::Path,
    n: usize,
    curves: &mut [(&'static str, Vec<i64>)],
) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    const COLORS: [RGBColor; 7] = [
        RGBColor(230, 120, 20),
        RGBColor(150, 150, 150),
        RGBColor(31, 119, 180),
        RGBColor(20, 60, 140),
        RGBColor(200, 40, 40),
        RGBColor(70, 150, 70),
        RGBColor(40, 40, 40),
    ];
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "W12 light: lateness of {n} sleeps of 50–2,000 µs, 2 workers (lower is better)"
            ),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..100f64, (1f64..10_000f64).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("lateness, µs (log)")
        .draw()?;
    for (i, (name, late)) in curves.iter_mut().enumerate() {
        late.sort_unstable();
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = late
            .iter()
            .enumerate()
            .map(|(k, &ns)| {
                let p = 100.0 * k as f64 / (late.len() - 1).max(1) as f64;
                (p, (ns as f64 / 1e3).max(1.0))
            })
            .collect();
        chart
            .draw_series(std::iter::once(PathElement::new(
                points,
                color.stroke_width(2),
            )))?
            .label(name.trim_matches('`').replace('`', ""))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
