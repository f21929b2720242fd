//! `Builder::capacity`: the room it asks for is reserved at build, or the
//! build fails there with `Error::is_out_of_memory`, keeping none of it;
//! nothing the builder accepted aborts the process (issue 56, item 8: a
//! capacity of `u32::MAX - 3` on one shard was accepted, then filled
//! memory page by page until an allocation failed and aborted the process,
//! "memory allocation of 8192 bytes failed", under a 2 GB address-space
//! limit and an 8 GB one alike).
//!
//! Each case runs in a fresh process of its own (this binary again, with
//! the one test), where a limit cannot reach the rest of the run and an
//! abort fails the case rather than the run: under an address-space limit
//! (`setrlimit(RLIMIT_AS)`), and with an allocator that refuses small
//! allocations past a budget (so that the reservation fails page by page,
//! after its one big allocation has succeeded).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use hashwheel::Timer;

/// Set in the fresh process: which case it runs.
const CASE: &str = "HASHWHEEL_BUILD_CAPACITY_CASE";

thread_local! {
    /// Bytes of allocations of at most [`SMALL`] this thread may still make
    /// (`None`: no budget), and the bytes it holds (allocated less freed).
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
    static HELD: Cell<isize> = const { Cell::new(0) };
}

/// The allocations a budget counts: a page of the timer's storage and
/// less. Larger ones (the reservation's first, all of it at once) pass.
const SMALL: usize = 1 << 20;

/// The system allocator, refusing what is over the calling thread's budget.
struct Budgeted;

impl Budgeted {
    /// Whether `layout` may be allocated, and counts it if so.
    fn take(layout: Layout) -> bool {
        let allowed = BUDGET
            .try_with(|budget| match budget.get() {
                Some(left) if layout.size() <= SMALL => match left.checked_sub(layout.size()) {
                    Some(left) => {
                        budget.set(Some(left));
                        true
                    }
                    None => false,
                },
                _ => true,
            })
            .unwrap_or(true);
        if allowed {
            let _ = HELD.try_with(|held| held.set(held.get() + layout.size() as isize));
        }
        allowed
    }

    fn give(size: usize) {
        let _ = HELD.try_with(|held| held.set(held.get() - size as isize));
    }
}

// SAFETY: every call goes to `System` unchanged, or returns null (an
// allocation failure, which the contract allows) without calling it.
unsafe impl GlobalAlloc for Budgeted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Budgeted::take(layout) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Budgeted::take(layout) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grown = Layout::from_size_align(new_size, layout.align()).unwrap();
        if !Budgeted::take(grown) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if moved.is_null() {
            Budgeted::give(new_size);
        } else {
            Budgeted::give(layout.size());
        }
        moved
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Budgeted::give(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Budgeted = Budgeted;

/// Runs `case` in a fresh process of its own (this binary again, with the
/// one test `name`), and fails if that process does not exit cleanly (an
/// abort, a panic, a hang of a minute).
fn in_a_process_of_its_own(name: &str, case: fn()) {
    if std::env::var_os(CASE).is_some() {
        case();
        return;
    }
    let (_, status) = common::rerun_alone(name, CASE, false);
    let Some(status) = status else {
        panic!("{name}: the process hung");
    };
    assert!(status.success(), "{name}: the process failed ({status})");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The largest capacity a shard takes, on one shard: about 160 GiB.
const MOST: usize = u32::MAX as usize - 3;

/// The case, under a 2 GiB address-space limit: the build fails
/// at once with `is_out_of_memory`, saying what it asked for; a capacity
/// that fits is reserved, and usable.
#[test]
fn a_capacity_past_the_address_space_fails_at_build() {
    in_a_process_of_its_own("a_capacity_past_the_address_space_fails_at_build", || {
        let rt = runtime();
        let limit = libc::rlimit {
            rlim_cur: 2 << 30,
            rlim_max: 2 << 30,
        };
        // SAFETY: a plain system call on a valid struct.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
        let build = |capacity| {
            Timer::builder()
                .handle(rt.handle().clone())
                .shards(1)
                .capacity(capacity)
                .build()
        };
        let err = build(MOST).unwrap_err();
        assert!(err.is_out_of_memory(), "{err}");
        assert!(!err.is_invalid_config());
        let message = err.to_string();
        assert!(
            message.starts_with("out of memory: Builder::capacity(4294967292) reserves"),
            "{message}"
        );
        assert!(
            message.contains("160.0 GiB (40 bytes a timeout)"),
            "{message}"
        );
        // What fits is reserved, and serves.
        let timer = build(1_000_000).unwrap();
        let sleeps: Vec<_> = (0..1_000)
            .map(|_| timer.sleep(Duration::from_secs(1)))
            .collect();
        assert_eq!(timer.pending(), 1_000);
        drop(sleeps);
    });
}

/// Where the reservation's one big allocation succeeds but its pages do
/// not (an allocator that refuses small allocations past 16 MiB), the
/// build fails with `is_out_of_memory` and gives back every page it had
/// reserved.
#[test]
fn a_reservation_that_fails_page_by_page_fails_at_build_and_keeps_nothing() {
    in_a_process_of_its_own(
        "a_reservation_that_fails_page_by_page_fails_at_build_and_keeps_nothing",
        || {
            let rt = runtime();
            let build = || {
                Timer::builder()
                    .handle(rt.handle().clone())
                    .shards(1)
                    .capacity(2_000_000)
                    .build()
            };
            // The runtime's first timer, for the one-time allocations.
            drop(build().unwrap());
            let held = HELD.with(Cell::get);
            BUDGET.with(|budget| budget.set(Some(16 << 20)));
            let built = build();
            BUDGET.with(|budget| budget.set(None));
            let err = built.unwrap_err();
            assert!(err.is_out_of_memory(), "{err}");
            let kept = HELD.with(Cell::get) - held;
            assert!(kept < 64 << 10, "{kept} bytes kept after the failed build");
            // With the memory, the same build succeeds.
            drop(build().unwrap());
        },
    );
}

/// `DelayQueue::with_capacity` past the address space aborts the process
/// as `Vec::with_capacity` does, at once: its one first allocation of all
/// the room fails, before any of it is filled. It filled memory page by
/// page up to the limit first (2 GiB here, and on a machine without a
/// limit until the system killed the process). Read from the aborted
/// process's peak memory (`getrusage(RUSAGE_CHILDREN)`: the largest of
/// this binary's processes of their own, the others' tens of MiB).
#[test]
fn a_queue_too_large_to_allocate_aborts_before_filling_memory() {
    const NAME: &str = "a_queue_too_large_to_allocate_aborts_before_filling_memory";
    if std::env::var_os(CASE).is_some() {
        let limit = libc::rlimit {
            rlim_cur: 2 << 30,
            rlim_max: 2 << 30,
        };
        // SAFETY: a plain system call on a valid struct.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
        let queue = hashwheel::DelayQueue::<u64>::with_capacity(MOST);
        // Not reached: the allocation aborts.
        drop(queue);
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads=1", "--nocapture"])
        .env(CASE, NAME)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the queue was allocated");
    // SAFETY: a plain system call filling a zeroed struct of ours.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage
    };
    let peak_kib = usage.ru_maxrss;
    assert!(
        peak_kib < 512 << 10,
        "the process filled {} MiB before it aborted",
        peak_kib >> 10
    );
}
