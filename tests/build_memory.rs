//! What `Builder::build` allocates for a timer that holds nothing: at most
//! 64 MiB, whatever wheel size and shard count the builder accepts (issue
//! 39: `wheel_size(1 << 30)` took 4 GiB a shard), and what the docs say a
//! bucket and a shard cost. Counted by a global allocator, on the building
//! thread only (tests run side by side).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use hashwheel::{Builder, Timer};

/// The bound the docs state.
const LIMIT: usize = 64 << 20;

thread_local! {
    /// Whether this thread's allocations count.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
/// Bytes allocated by counting threads (one test at a time counts: the
/// tests take [`ONE_AT_A_TIME`]).
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn count(layout: Layout) {
    if COUNTING.try_with(Cell::get) == Ok(true) {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
    }
}

/// The system allocator, counting what counting threads ask for.
struct Counting;

// SAFETY: every call goes to `System` unchanged; counting only adds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as a new allocation of the new size: an upper bound.
        count(Layout::from_size_align(new_size, layout.align()).unwrap());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `builder.build()` allocated, and its result.
fn build_bytes(builder: Builder) -> (usize, Result<Timer, hashwheel::Error>) {
    ALLOCATED.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let built = builder.build();
    COUNTING.with(|c| c.set(false));
    (ALLOCATED.load(Ordering::Relaxed), built)
}

/// The most shards `wheel_size` buckets build with (a binary search over
/// what `build` accepts), and what that timer allocated.
fn most_shards(builder: impl Fn() -> Builder, wheel_size: usize) -> (usize, usize) {
    let accepts = |n| builder().wheel_size(wheel_size).shards(n).build().is_ok();
    let (mut ok, mut refused) = (1, 65_537);
    assert!(accepts(ok), "one shard of {wheel_size} buckets is refused");
    while refused - ok > 1 {
        let mid = (ok + refused) / 2;
        if accepts(mid) {
            ok = mid;
        } else {
            refused = mid;
        }
    }
    let (bytes, built) = build_bytes(builder().wheel_size(wheel_size).shards(ok));
    built.unwrap();
    (ok, bytes)
}

/// Wheel sizes where a bucket's cost changes (see `Builder::wheel_size`),
/// the default, and the largest.
const SIZES: [usize; 7] = [1, 512, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20];

#[tokio::test]
async fn the_most_shards_of_every_wheel_size_allocate_at_most_64_mib() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    for wheel_size in SIZES {
        let (shards, bytes) = most_shards(Timer::builder, wheel_size);
        assert!(
            bytes <= LIMIT,
            "{shards} shards of {wheel_size} buckets allocated {bytes} bytes"
        );
        // The bound is what stops it, not something else: nearly all of
        // the 64 MiB is taken (each shard takes at most 8.2 MiB).
        assert!(
            bytes > LIMIT - (9 << 20),
            "{shards} shards of {wheel_size} buckets allocated only {bytes} bytes"
        );
        // The largest wheel still builds with the 7 shards the docs name.
        assert!(shards >= 7, "{shards} shards of {wheel_size} buckets");
    }
}

#[cfg(feature = "thread")]
#[test]
fn so_do_a_thread_driven_timers() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    let thread = || Timer::builder().driver_thread();
    for wheel_size in [1, 512, 1 << 20] {
        let (shards, bytes) = most_shards(thread, wheel_size);
        assert!(
            bytes <= LIMIT,
            "{shards} shards of {wheel_size} buckets allocated {bytes} bytes"
        );
    }
}

#[tokio::test]
async fn one_past_the_largest_wheel_is_an_error_naming_the_bound() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    let err = Timer::builder()
        .shards(1)
        .wheel_size((1 << 20) + 1)
        .build()
        .unwrap_err();
    assert!(err.is_invalid_config());
    assert_eq!(
        err.to_string(),
        "invalid timer configuration: wheel size must be between 1 and 2^20 (1048576), got 1048577"
    );
    // Issue 39's value: an error at once, not 4 GiB a shard.
    let (bytes, built) = build_bytes(Timer::builder().wheel_size(1 << 30));
    assert!(built.unwrap_err().is_invalid_config());
    assert!(bytes < 1 << 10, "{bytes} bytes allocated to refuse it");
}

#[tokio::test]
async fn one_shard_past_the_bound_is_an_error_saying_what_fits() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    let (most, _) = most_shards(Timer::builder, 1 << 20);
    let (bytes, built) = build_bytes(Timer::builder().wheel_size(1 << 20).shards(most + 1));
    let err = built.unwrap_err();
    assert!(err.is_invalid_config());
    assert!(bytes < 1 << 10, "{bytes} bytes allocated to refuse it");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "invalid timer configuration: {} shards of a 1048576-bucket wheel would allocate",
            most + 1
        )),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "at most 64 MiB: {most} shards at most, or a smaller wheel_size"
        )),
        "{msg}"
    );
    // The most shards a timer takes (65,536) are refused for any wheel.
    let msg = Timer::builder()
        .wheel_size(1)
        .shards(65_536)
        .build()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("at most 64 MiB"), "{msg}");
}

/// The figures of `Builder::wheel_size`'s and `Builder::shards`' docs: what
/// a bucket costs per shard in each range of sizes, and a shard beside its
/// wheel.
#[tokio::test]
async fn a_bucket_and_a_shard_cost_what_the_docs_say() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    // Per shard: the difference of 2 shards and 1.
    let shard = |wheel_size: usize| {
        let one = build_bytes(Timer::builder().shards(1).wheel_size(wheel_size)).0;
        let two = build_bytes(Timer::builder().shards(2).wheel_size(wheel_size)).0;
        two - one
    };
    // A shard with the smallest wheel: about 16 KiB.
    let base = shard(1);
    assert!((14 << 10..20 << 10).contains(&base), "{base} bytes");
    // The default wheel: 65 KiB more, 83 KiB a shard.
    let default = shard(512);
    assert!((80 << 10..88 << 10).contains(&default), "{default} bytes");
    // Bytes a bucket, in each range: 130, 32.5 and 8.1 (in tenths).
    for (wheel_size, tenths) in [(1 << 16, 1300), (1 << 18, 325), (1 << 20, 81)] {
        let per_bucket = (shard(wheel_size) - base) * 10 / wheel_size;
        assert!(
            (tenths - 2..=tenths + 2).contains(&per_bucket),
            "{wheel_size} buckets: {per_bucket} tenths of a byte a bucket, not {tenths}"
        );
    }
    // How many shards fit: about 785 of the default wheel, 64 (a 64-CPU
    // host's default) of up to 4,096 buckets, and not of 8,192.
    let (default_most, _) = most_shards(Timer::builder, 512);
    assert!((750..850).contains(&default_most), "{default_most}");
    assert!(most_shards(Timer::builder, 4_096).0 >= 64);
    assert!(most_shards(Timer::builder, 8_192).0 < 64);
    // At most about 8.2 MiB a shard.
    for wheel_size in SIZES {
        let bytes = shard(wheel_size);
        assert!(
            bytes < 8_700_000,
            "{wheel_size} buckets: {bytes} bytes a shard"
        );
    }
}
