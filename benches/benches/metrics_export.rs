//! `MetricsExporter::record` and the Prometheus recorder's render, for 10
//! to 10,000,000 timeouts fired in one bucket of the lateness histogram,
//! beside the way it exported before (each bucket's count fed to
//! `Histogram::record_many`, which the Prometheus recorder stores as one
//! sample per fire) in the same run.
//!
//! ```text
//! cargo bench -p hashwheel-benches --bench metrics_export [-- ROUNDS]
//! ```
//!
//! Each round records one snapshot into a fresh recorder and renders it;
//! the table gives the median of the rounds with their range, and the
//! bytes the recorder holds after the render (allocated less freed, by
//! this binary's counting allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use hashwheel::{Lateness, MetricsExporter, Stats};
use metrics_exporter_prometheus::PrometheusBuilder;

/// The system allocator, counting the bytes held.
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to `System` unchanged; the count is a side note.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A snapshot of `fires` timeouts fired 1.5 ms late: one bucket.
fn stats_with(fires: u64) -> Stats {
    let mut one = Lateness::new();
    one.record(Duration::from_micros(1_500));
    let mut lateness = Lateness::new();
    let (mut power, mut left) = (one, fires);
    while left > 0 {
        if left & 1 == 1 {
            lateness.merge(&power);
        }
        let copy = power;
        power.merge(&copy);
        left >>= 1;
    }
    let mut stats = Stats::default();
    stats.fired = fires;
    stats.lateness = lateness;
    stats
}

/// The export before issue 37: each bucket's count to `record_many`.
fn record_as_a_histogram(stats: &Stats) {
    let histogram = metrics::histogram!("hw_lateness_seconds", "timer" => "t");
    for (late, count) in stats.lateness.buckets() {
        histogram.record_many(late, count as usize);
    }
}

/// One round: (record, render, bytes held by the recorder).
fn round(stats: &Stats, old: bool) -> (Duration, Duration, isize) {
    let before = HELD.load(Ordering::Relaxed);
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let mut exporter = MetricsExporter::new("hw").label("timer", "t");
    let start = Instant::now();
    metrics::with_local_recorder(&recorder, || {
        if old {
            record_as_a_histogram(stats);
        } else {
            exporter.record(stats);
        }
    });
    let record = start.elapsed();
    let start = Instant::now();
    handle.run_upkeep();
    let text = handle.render();
    let render = start.elapsed();
    std::hint::black_box(text);
    let held = HELD.load(Ordering::Relaxed) - before;
    drop(recorder);
    (record, render, held)
}

fn median(mut xs: Vec<Duration>) -> (Duration, Duration, Duration) {
    xs.sort();
    (xs[xs.len() / 2], xs[0], xs[xs.len() - 1])
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    println!("# MetricsExporter::record and the Prometheus render, one bucket, {rounds} rounds");
    println!("| export | fires | record µs (median, min–max) | render µs (median, min–max) | bytes held |");
    println!("|---|---|---|---|---|");
    for (old, name) in [
        (false, "record (gauges, counters)"),
        (true, "record_many (before)"),
    ] {
        for fires in [10u64, 1_000, 100_000, 10_000_000] {
            let stats = stats_with(fires);
            let rounds = if old && fires >= 10_000_000 {
                1
            } else {
                rounds
            };
            let (mut records, mut renders, mut held) = (Vec::new(), Vec::new(), 0);
            for _ in 0..rounds {
                let (r, d, h) = round(&stats, old);
                records.push(r);
                renders.push(d);
                held = h;
            }
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            let (r, r0, r1) = median(records);
            let (d, d0, d1) = median(renders);
            println!(
                "| {name} | {fires} | {:.1} ({:.1}–{:.1}) | {:.1} ({:.1}–{:.1}) | {held} |",
                us(r),
                us(r0),
                us(r1),
                us(d),
                us(d0),
                us(d1)
            );
        }
    }
}
