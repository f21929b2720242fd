//! Counting allocator: live heap bytes, counted only while `COUNTING` is set
//! so that the timed workloads pay one relaxed load per allocation at most.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::common::per;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `insert` for each delay with heap counting on; returns ns per insert
/// and heap bytes per timer. `hold` keeps the handles (allocated before).
pub fn counted<H>(
    delays: &[Duration],
    hold: &mut Vec<H>,
    mut insert: impl FnMut(Duration) -> H,
) -> (f64, f64) {
    let before = LIVE.load(Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let start = Instant::now();
    for &d in delays {
        hold.push(insert(d));
    }
    let elapsed = start.elapsed();
    COUNTING.store(false, Ordering::Relaxed);
    let bytes = (LIVE.load(Ordering::Relaxed) - before) as f64 / delays.len() as f64;
    (per(elapsed, delays.len()), bytes)
}

/// Heap bytes per timer after `shrink` gives spare capacity back, from
/// `bytes` per timer before it.
pub fn shrunk_bytes(bytes: f64, n: usize, shrink: impl FnOnce()) -> f64 {
    let before = LIVE.load(Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    shrink();
    COUNTING.store(false, Ordering::Relaxed);
    bytes + (LIVE.load(Ordering::Relaxed) - before) as f64 / n as f64
}
