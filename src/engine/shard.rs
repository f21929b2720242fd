//! The shard state: the wheels, their locks and counts, and what the shards
//! share with the driver (the clock, the driver's alarm, the stop flag).
//!
//! Everything above builds on this file: the [`Timer`](crate::Timer) handle,
//! the driver, [`Timeout`](crate::Timeout), scheduled tasks and
//! [`Interval`](crate::Interval). It imports only the wheel and leaf
//! modules, so imports run one way, down.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError, Weak};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::engine::alarm::Alarm;
use crate::engine::clock::{on_grid, Clock, RUNTIME_MS_US};
use crate::error::{Error, StopReason};
use crate::engine::process::Origin;
use crate::stats::{Lateness, Stats};
use crate::wheel::raw::{level_bytes, Expired, Key, State, Wheel, NEVER};
use crate::wheel::store::Sparse;

pub(crate) use crate::engine::clock::{far_future, UNIT_NS};
pub(crate) use crate::engine::deadlines::Deadlines;
use crate::engine::deadlines::{FAR, TOKIO_MS};

/// The state shared by [`Timer`](crate::Timer)s and scheduled tasks: the
/// shards and what they share. [`Timeout`](crate::Timeout)s hold only
/// their [`Shard`], so that threads on
/// different shards never write to one reference count.
pub(crate) struct Shared {
    pub(crate) shards: Box<[Arc<Shard>]>,
    pub(crate) common: Arc<Common>,
    pub(crate) tick: Duration,
    pub(crate) wheel_size: usize,
    /// `shards.len()`'s reciprocal for [`shard_of`] (`u64::MAX / n + 1`):
    /// the remainder that picks a thread's shard, without a division.
    shard_magic: u64,
}

/// `seed % n`, for `n` from 1 to 2^32 - 1 and `magic` its
/// `u64::MAX / n + 1` (Lemire, Kaser and Kurz, "Faster remainder by direct
/// computation", 2019): two multiplications. Every timeout made on a
/// timer of several shards picks one, and a division by a variable waits
/// tens of cycles, more than the rest of the pick.
#[inline]
fn shard_of(seed: u32, n: u64, magic: u64) -> usize {
    let low = magic.wrapping_mul(u64::from(seed));
    ((u128::from(low) * u128::from(n)) >> 64) as usize
}

/// What every shard and the driver share: the clock, the driver's plan and
/// signal, the stop flag and the timer-wide counters. It holds no shard, so
/// shards can point at it without a cycle.
///
/// Laid out in the order written (`repr(C)`), on a line of its own
/// (`align(64)`): what a timeout reads on its way in and out (the clock,
/// `planned`, `stopped`, `max_pending`) fills the first cache line, and
/// `busy` and `reserved` the second, so that a task woken after a park (its
/// caches gone to the kernel and the neighbours) pays two misses here, not
/// the four of the compiler's order (W14, issue 47).
#[repr(C, align(64))]
pub(crate) struct Common {
    /// The timer's clock, and its ticks.
    pub(crate) clock: Clock,
    /// The tick the driver sleeps until; `u64::MAX` while it sleeps until
    /// notified, or while it is turning the wheels.
    pub(crate) planned: AtomicU64,
    /// `RUNNING`, or why the timer stopped (see [`Common::stop_reason`]).
    stopped: AtomicU8,
    /// Whether the wheels are being turned: [`IDLE`], [`TURNING`], or a
    /// driver's own state of a turn (the runtime driver's `AGAIN`).
    pub(crate) turn_state: AtomicU8,
    max_pending: Option<usize>,
    /// Whether each shard's wheel may have entries linked: set (under the
    /// shard's lock) as an entry goes in, cleared by the driver (under the
    /// lock) when a turn leaves the wheel empty, so that a turn passes a
    /// shard no thread uses without its lock (see [`Shard::linked`]).
    busy: Box<[AtomicBool]>,
    /// Pending count over all shards; kept only under a `max_pending` limit,
    /// so unlimited timers never touch a shared counter.
    reserved: AtomicUsize,
    /// The process that built the timer. A child forked from it inherits
    /// the timer's memory but none of its threads: see [`lock_unless_forked`].
    /// Shared with the driver's alarm.
    pub(crate) origin: Arc<Origin>,
    /// The driver's alarm (see `alarm`): a runtime timer, or the driver
    /// thread's alarm.
    pub(crate) alarm: Alarm,
    /// Written by the driver only.
    pub(crate) wakeups: AtomicU64,
    /// Ticks the driver found itself behind when it woke, summed.
    pub(crate) late_ticks: AtomicU64,
    /// Times the alarm was armed (see [`Stats::alarm_arms`]).
    pub(crate) alarm_arms: AtomicU64,
    /// The longest turn of the driver, in nanoseconds (see
    /// [`Stats::longest_turn`]). Written by the driver only.
    pub(crate) longest_turn_ns: AtomicU64,
    /// Pending tasks, and a reference to the `Shared` while there are any
    /// (see [`Shared::task_added`]).
    keep_alive: Mutex<(usize, Option<Arc<Shared>>)>,
    /// While the clock follows the runtime timer's millisecond (paused
    /// time, see `Clock`): the ticks below it are known to be in a
    /// millisecond that timer has processed (see [`Common::passed`]). The
    /// clock then starts on such a millisecond: tick 0 is one.
    pub(crate) processed_below: AtomicU64,
}

/// Tries at a taken shard lock before a thread of a thread-driven timer
/// sleeps on it (see [`Shard::lock`]): spins of 1, 2, 4, ... [`MAX_SPIN`]
/// pauses (about 127 in all, a microsecond or two), then yields.
const CONTENDED_TRIES: u32 = 20;
/// The longest spin between two tries at a taken shard lock.
const MAX_SPIN: u32 = 64;
/// The tries of [`CONTENDED_TRIES`] that spin (1, 2, 4, ... [`MAX_SPIN`]
/// pauses); the rest yield.
const SPIN_TRIES: u32 = MAX_SPIN.trailing_zeros() + 1;

/// [`Common::turn_state`]: nobody is turning the wheels.
pub(crate) const IDLE: u8 = 0;
/// A turn runs.
pub(crate) const TURNING: u8 = 1;

/// Locks `mutex`, ignoring poisoning, unless the lock is held and `here`
/// says this is a child forked from the process that built the timer:
/// `None` then.
///
/// After `fork` only the forking thread lives on in the child, so a lock
/// another thread held at the fork (the driver's thread in a turn, say) is
/// held for ever there, and waiting for it would hang the child. The lock
/// is tried first: free, it is taken as `lock` would (the same atomic
/// swap, no system call); held, the process ([`Common::is_here`]) tells a
/// parent's ordinary wait from a child's endless one. The parent's
/// uncontended path pays nothing.
pub(crate) fn lock_unless_forked<T>(
    mutex: &Mutex<T>,
    here: impl FnOnce() -> bool,
) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) if !here() => None,
        Err(TryLockError::WouldBlock) => Some(
            mutex
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        ),
    }
}

/// One wheel and its lock. Threads pick a shard each, so they rarely share
/// a lock or a cache line; a timeout stays on the shard it was created on.
///
/// Laid out in the order written (`repr(C)`): the fields a timeout touches
/// on its way in and out first (the `Arc`'s counts, which every timeout's
/// handle clones and drops, sit just before them), then the lock and the
/// hot head of the state it guards (see [`ShardState`]), and the
/// directories, read one entry at a time, last. In the compiler's order
/// they were spread over some ten lines of an 8.8 KiB struct (the lock at
/// the start, the counts 5.5 KiB in, the store's scalars behind its 2.5 KiB
/// directory), each a cache miss for the first timeout after a park, which
/// a real server's runtime takes a thousand times a second. With
/// `Common`'s, `Wheel`'s and `Store`'s fields ordered alike, cachegrind
/// counts 11.0 misses a message above the floor where it counted 14.1
/// (`examples/select_timeout_counts` at 10,000 connections with the
/// caches cleared every millisecond; tokio's timer 5.0; W14, issue 47).
/// No longer aligned to 128 bytes: that put the counts on a line of their
/// own, and shards are allocations of their own, whose cold directory
/// tails keep them apart.
#[repr(C)]
pub(crate) struct Shard {
    pub(crate) common: Arc<Common>,
    /// Timeouts and tasks of this shard created or made pending again, less
    /// those that ended without the lock. Those that end under the lock
    /// count in [`ShardState::released`] instead, which saves the common
    /// paths (a registered timeout dropped or fired) an atomic write: the
    /// pending count is this less that, read under the lock.
    pending: AtomicUsize,
    /// Its place among the timer's shards (see [`Common::busy`]).
    index: usize,
    /// Counts for the operations that complete without the lock (see
    /// [`Counts`] for the others).
    pub(crate) unlocked: AtomicCounts,
    /// Whether a thread that finds the lock taken spins and yields before
    /// it sleeps on it (see [`Shard::lock`]): a thread-driven timer's.
    spin: bool,
    state: Mutex<ShardState>,
    /// The deadline words of the wheel's owned entries, by key: what a
    /// reset to a later deadline changes without the lock.
    pub(crate) deadlines: Deadlines,
}

/// The state a shard's lock guards, in the order written (`repr(C)`):
/// the counts and the wheel's hot head first (see [`Wheel`]), the tasks'
/// table and its directory last.
#[repr(C)]
pub(crate) struct ShardState {
    /// Timeouts and tasks of this shard that fired or were cancelled under
    /// the lock (see [`Shard::pending`]).
    released: usize,
    /// Counts kept under the lock, which the operation holds anyway.
    pub(crate) counts: Counts,
    /// How late the driver fired this shard's entries (see
    /// [`Stats::lateness`]): counted under the lock the turn holds, from
    /// its one clock reading. Boxed: 7 KiB inline would stand between the
    /// fields around it.
    pub(crate) lateness: Box<Lateness>,
    pub(crate) wheel: Wheel<Option<Waker>>,
    /// Scheduled tasks, by key: detached entries of the wheel.
    pub(crate) tasks: Sparse<Arc<TaskInner>>,
}

/// Operation counts of one shard, kept under its lock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) reset: u64,
    pub(crate) ticks: u64,
}

/// Operation counts of one shard for the paths that take no lock: relaxed,
/// on the shard's own cache line.
#[derive(Debug, Default)]
pub(crate) struct AtomicCounts {
    pub(crate) fired: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) reset: AtomicU64,
    pub(crate) ticks: AtomicU64,
}

impl AtomicCounts {
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// The shards of a new timer, with nothing pending: the builder's plan,
    /// field by field, and what drives it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        tick: Duration,
        tick_us: u64,
        wheel_size: usize,
        ring: usize,
        shards: usize,
        max_pending: Option<usize>,
        alarm: Alarm,
        origin: Arc<Origin>,
    ) -> Arc<Shared> {
        let common = Arc::new(Common {
            origin,
            clock: alarm.clock(tick_us),
            alarm,
            planned: AtomicU64::new(u64::MAX),
            turn_state: AtomicU8::new(IDLE),
            stopped: AtomicU8::new(RUNNING),
            max_pending,
            reserved: AtomicUsize::new(0),
            wakeups: AtomicU64::new(0),
            late_ticks: AtomicU64::new(0),
            alarm_arms: AtomicU64::new(0),
            longest_turn_ns: AtomicU64::new(0),
            keep_alive: Mutex::new((0, None)),
            busy: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            processed_below: AtomicU64::new(1),
        });
        let spin = common.alarm.is_thread();
        let shards: Box<[Arc<Shard>]> = (0..shards)
            .map(|index| {
                Arc::new(Shard {
                    state: Mutex::new(ShardState {
                        wheel: {
                            let (buckets, res) = bucket_geometry(wheel_size, tick_us);
                            Wheel::with_window(buckets, ring, res, window(buckets)).in_link_order()
                        },
                        tasks: Sparse::new(),
                        counts: Counts::default(),
                        lateness: Box::default(),
                        released: 0,
                    }),
                    pending: AtomicUsize::new(0),
                    unlocked: AtomicCounts::default(),
                    deadlines: Deadlines::new(),
                    common: common.clone(),
                    index,
                    spin,
                })
            })
            .collect();
        let n = shards.len() as u64;
        Arc::new(Shared {
            shards,
            common,
            tick,
            wheel_size,
            shard_magic: (u64::MAX / n).wrapping_add(1),
        })
    }

    /// What the driver holds: the common state, and the shards weakly (so
    /// that it ends once every handle and timeout is gone).
    pub(crate) fn driver_parts(&self) -> (Arc<Common>, Box<[Weak<Shard>]>) {
        let weak = self.shards.iter().map(Arc::downgrade).collect();
        (self.common.clone(), weak)
    }

    /// Locks shard `shard`.
    pub(crate) fn lock(&self, shard: usize) -> MutexGuard<'_, ShardState> {
        self.shards[shard].lock()
    }

    /// The shard of the calling thread.
    pub(crate) fn current_shard(&self) -> usize {
        thread_local! {
            static SEED: usize = {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                NEXT.fetch_add(1, Ordering::Relaxed)
            };
        }
        let n = self.shards.len();
        if n == 1 {
            0
        } else {
            // Any fixed pick per thread spreads them; the remainder of a
            // count keeps the first `n` threads on shards of their own.
            SEED.with(|&seed| shard_of(seed as u32, n as u64, self.shard_magic))
        }
    }


    /// The time by the timer's clock (see [`Common::now`]).
    pub(crate) fn now(&self) -> Instant {
        self.common.now()
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.common.is_stopped()
    }

    pub(crate) fn acquire(&self, shard: usize) -> Result<(), Error> {
        self.shards[shard].acquire()
    }

    pub(crate) fn release(&self, shard: usize, n: usize) {
        self.shards[shard].release(n);
    }

    pub(crate) fn note_deadline(&self, tick: u64) {
        self.common.note_deadline(tick);
    }

    pub(crate) fn tasks_done(&self, n: usize) {
        self.common.tasks_done(n);
    }

    /// Timeouts and tasks neither fired nor cancelled, over every shard.
    /// In a forked child, a shard whose lock a thread of the parent held at
    /// the fork (for ever, there) is left out: reading it would hang.
    pub(crate) fn pending(&self) -> usize {
        if self.is_stopped() {
            return 0;
        }
        self.shards
            .iter()
            .filter_map(|shard| {
                let state = shard.lock_unless_forked()?;
                Some(shard.pending_locked(&state))
            })
            .sum()
    }

    /// The counts of every shard, summed. Locks each shard in turn; in a
    /// forked child, a shard whose lock a thread of the parent held at the
    /// fork gives only its counts kept without the lock (see
    /// [`pending`](Self::pending)).
    pub(crate) fn stats(&self) -> Stats {
        let stopped = self.is_stopped();
        let mut stats = Stats {
            pending: 0,
            created: 0,
            fired: 0,
            cancelled: 0,
            reset: 0,
            ticks: 0,
            driver_wakeups: self.common.wakeups.load(Ordering::Relaxed),
            late_ticks: self.common.late_ticks.load(Ordering::Relaxed),
            alarm_arms: self.common.alarm_arms.load(Ordering::Relaxed),
            longest_turn: Duration::from_nanos(self.common.longest_turn_ns.load(Ordering::Relaxed)),
            lateness: Lateness::new(),
        };
        for shard in self.shards.iter() {
            let mut counts = Counts::default();
            if let Some(state) = shard.lock_unless_forked() {
                counts = state.counts;
                if !stopped {
                    stats.pending += shard.pending_locked(&state);
                }
                stats.lateness.merge(&state.lateness);
            }
            let unlocked = &shard.unlocked;
            let (fired, cancelled) = (
                unlocked.fired.load(Ordering::Relaxed),
                unlocked.cancelled.load(Ordering::Relaxed),
            );
            // Made pending: what the shard's count took in, less nothing
            // that ended under the lock; plus what ended without it (the
            // count gave those back) and what completed as it was made
            // (never counted pending).
            stats.created += shard.pending.load(Ordering::Relaxed) as u64 + fired + cancelled;
            stats.fired += counts.fired + fired;
            stats.cancelled += counts.cancelled + cancelled;
            stats.reset += counts.reset + unlocked.reset.load(Ordering::Relaxed);
            stats.ticks += counts.ticks + unlocked.ticks.load(Ordering::Relaxed);
        }
        stats
    }

    /// A task was scheduled. Pending tasks keep the timer alive, with no
    /// `Timer` left, until they run or are cancelled: the first one makes
    /// the timer hold a reference to itself.
    pub(crate) fn task_added(self: &Arc<Self>) {
        let mut keep = self.common.lock_keep_alive();
        keep.0 += 1;
        if keep.0 == 1 {
            keep.1 = Some(self.clone());
        }
    }

    pub(crate) fn stop(&self) -> Vec<Arc<TaskInner>> {
        if !self.common.is_here() {
            // A forked child's copy of its parent's timer: it only marks
            // it stopped. Its entries belong to the parent's tasks (whose
            // wakers are not to be called here), a thread of the parent
            // may have held a lock for ever, and its alarm is the parent's.
            self.common.mark_stopped(STOPPED);
            return Vec::new();
        }
        stop(
            &self.common,
            self.shards.iter().cloned(),
            StopReason::Stopped,
        )
    }
}

/// How many buckets of a tick a wheel of `wheel_size` buckets splits each
/// one into, where that keeps the wheel at most [`MAX_SPLIT_BUCKETS`].
///
/// Why: a turn comes when the runtime's (or the thread's) clock says, not
/// on a bucket's edge, so the bucket holding the turn's instant is only
/// partly due, and the turn walks it to take out what is (every entry in
/// it, one cache miss each; the rest wait for the next turn). With buckets
/// of a quarter tick that walk is a quarter as long: on W9 (a heartbeat
/// every second for each of 100,000 connections, a turn every
/// millisecond) it fell from 0.85 entries a heartbeat to 0.21, and the
/// heartbeat from 2,287 instructions to 2,223 (issue 29).
const BUCKET_SPLIT: usize = 4;
/// The most lists [`BUCKET_SPLIT`] and [`WINDOW`] make a shard's wheel
/// (8 MiB of list ends): a `wheel_size` over 2^18 keeps buckets of a
/// whole tick, and one over 2^16 a level 0 of one round, so that a user's
/// large wheel costs at most what its unsplit buckets do, or 8 MiB.
const MAX_SPLIT_BUCKETS: usize = 1 << 20;

/// Rounds (turns of the wheel) that a shard's level 0 holds, where that
/// keeps it at most [`MAX_SPLIT_BUCKETS`] lists: an interval re-armed by
/// the driver goes straight into the bucket of its next beat when that is
/// less than three rounds ahead (1.5 s for the default 1 ms tick and 512
/// buckets), instead of into the round ring and, a round later, from there
/// into its bucket. W9 (a 1 s heartbeat for each of 100,000 connections):
/// one list move and one walk of a ring slot fewer per heartbeat.
const WINDOW: usize = 4;

/// [`WINDOW`] for a wheel of `buckets` lists a round, or 1 where that many
/// rounds would take more than [`MAX_SPLIT_BUCKETS`] lists.
pub(crate) fn window(buckets: usize) -> usize {
    match buckets.checked_mul(WINDOW) {
        Some(lists) if lists <= MAX_SPLIT_BUCKETS => WINDOW,
        _ => 1,
    }
}

/// The buckets of a shard's wheel and log2 of their width in microseconds,
/// for `wheel_size` buckets of a tick of `tick_us` (see
/// [`Builder::wheel_size`](crate::Builder::wheel_size): a turn of the wheel
/// spans `tick * wheel_size` either way). A tick is rounded up to a power of
/// two so that a bucket is a shift of the deadline (1,024 µs for 1 ms), then
/// split in [`BUCKET_SPLIT`] where it is wide enough (256 µs buckets for
/// 1 ms).
pub(crate) fn bucket_geometry(wheel_size: usize, tick_us: u64) -> (usize, u32) {
    let res = tick_us.next_power_of_two().trailing_zeros().min(31);
    let shift = BUCKET_SPLIT.trailing_zeros();
    match wheel_size.checked_mul(BUCKET_SPLIT) {
        Some(buckets) if buckets <= MAX_SPLIT_BUCKETS && res >= shift => (buckets, res - shift),
        _ => (wheel_size, res),
    }
}

/// The heap one shard takes when it is made, holding nothing: its wheel's
/// two levels ([`level_bytes`] of `buckets * window(buckets)` and of
/// `ring` lists, 4.1 bytes a list, and the ends of level 0's lists, 4
/// bytes more each), its lateness histogram, the shard itself and its place
/// among the shards. [`Builder::build`](crate::Builder::build) bounds the
/// sum over the shards with it.
///
/// A bucket of a `wheel_size` up to 2^16 is 16 lists (split in four, and
/// level 0 holding four rounds: 130 bytes), from 2^17 to 2^18 four (32.5
/// bytes), from 2^19 one (8.1 bytes): a shard's wheel takes at most about
/// 8.2 MiB up to 2^20 buckets, 65 KiB at the default 512.
pub(crate) fn shard_bytes(wheel_size: usize, tick_us: u64, ring: usize) -> usize {
    let (buckets, _) = bucket_geometry(wheel_size, tick_us);
    let lists = buckets.saturating_mul(window(buckets));
    // Level 0 keeps its lists' ends too (see `Wheel::in_link_order`).
    level_bytes(lists)
        + lists * std::mem::size_of::<u32>()
        + level_bytes(ring)
        + std::mem::size_of::<Lateness>()
        + std::mem::size_of::<Shard>()
        // Its `Arc`'s counts, its place in the lists of shards, the level
        // vectors of the bit sets: a few hundred bytes, rounded up.
        + 512
}

impl Common {
    /// Records a turn of the wheels that began at `started` (see
    /// [`Stats::longest_turn`]); returns how long it took.
    pub(crate) fn note_turn(&self, started: Instant) -> Duration {
        let took = started.elapsed();
        let ns = took
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(took.subsec_nanos()));
        // Written by the driver only, one turn at a time.
        if ns > self.longest_turn_ns.load(Ordering::Relaxed) {
            self.longest_turn_ns.store(ns, Ordering::Relaxed);
        }
        took
    }

    /// Whether shard `index` may have entries linked (see
    /// [`busy`](Self::busy)). Read by the driver after it set `planned`
    /// (both sequentially consistent): an insert whose `planned` it missed
    /// set this first, and one it did not miss is in its target anyway.
    #[inline]
    pub(crate) fn shard_busy(&self, index: usize) -> bool {
        self.busy[index].load(Ordering::SeqCst)
    }

    /// A turn left shard `index`'s wheel empty (under its lock).
    #[inline]
    pub(crate) fn shard_idle(&self, index: usize) {
        self.busy[index].store(false, Ordering::Relaxed);
    }

    /// The time by the timer's clock: tokio's (paused time included) for a
    /// timer driven by a runtime, std's for a thread-driven one.
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    /// See [`Clock::now_tick`].
    pub(crate) fn now_tick(&self) -> u64 {
        self.clock.now_tick()
    }

    /// The tick an entry due at `tick` goes into `state`'s wheel at:
    /// `tick`, but on paused time, where the clock follows the runtime
    /// timer's millisecond (see `Clock`), the end of that millisecond, so
    /// that the entries of one millisecond share a bucket and come out in
    /// the order they went in, as tokio's timer fires the sleeps of one
    /// millisecond in the order they registered. A tick the wheel has
    /// passed (it fires at once) and one too far for the deadline words
    /// (the wheel keeps it as the deadline) stay as they are; the
    /// deadline words keep the microsecond.
    #[inline]
    pub(crate) fn filed_tick(&self, state: &ShardState, tick: u64) -> u64 {
        if self.clock.follows_tokio_ms() && tick < FAR && tick > state.wheel.elapsed() {
            on_grid(tick, RUNTIME_MS_US)
        } else {
            tick
        }
    }

    /// The flag of a timeout's deadline word filed by the runtime's
    /// millisecond ([`TOKIO_MS`]), on paused time (see
    /// [`filed_tick`](Self::filed_tick)); none on the real clock.
    #[inline]
    pub(crate) fn tokio_ms_flag(&self) -> u64 {
        if self.clock.follows_tokio_ms() {
            TOKIO_MS
        } else {
            0
        }
    }

    /// Whether a deadline at `tick` is due at its first poll by tokio's
    /// rule, on paused time (where the clock follows the runtime timer's
    /// millisecond, see `Clock`): the runtime's timer has processed its
    /// millisecond, so that a `tokio::time::Sleep` due then would complete
    /// as it registers. `false` on the real clock, where a deadline not
    /// after the last turn is due (the wheel's own rule, `elapsed`), and
    /// anything later waits for the driver: one relaxed load.
    #[inline]
    pub(crate) fn passed(&self, tick: u64) -> bool {
        self.clock.follows_tokio_ms() && self.passed_on_tokio_ms(tick)
    }

    /// On paused time: the last of the runtime timer's milliseconds, at
    /// or before the tick `at` (one of them), that timer has processed:
    /// known, or found by halving (a runtime timer registered and removed
    /// for each half, see `alarm/runtime.rs`). Where a driver turns from a
    /// task, outside that timer's processing.
    #[cfg(feature = "tokio")]
    pub(crate) fn processed_through(&self, at: u64) -> u64 {
        // `lo` processed; `hi` not, or past `at`.
        let mut lo = self.processed_below.load(Ordering::Acquire) - 1;
        if at <= lo {
            return at;
        }
        let Some(alarm) = self.alarm.as_runtime() else {
            return lo;
        };
        let mut hi = at + RUNTIME_MS_US;
        while hi - lo > RUNTIME_MS_US {
            let mid = lo + (hi - lo) / (2 * RUNTIME_MS_US) * RUNTIME_MS_US;
            if alarm.processed(&self.clock, mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.processed_below.fetch_max(lo + 1, Ordering::AcqRel);
        lo
    }

    /// Whether a deadline at `tick`, due by the clock as a timeout is made,
    /// completes there and then: always on the real clock; on paused time,
    /// if the runtime's timer has processed its millisecond (see
    /// [`passed`](Self::passed)), so that it is due at its first poll
    /// whenever that comes, as a `tokio::time::Sleep` is. One relaxed load
    /// on the real clock.
    #[inline]
    pub(crate) fn due_at_creation(&self, tick: u64) -> bool {
        !self.clock.follows_tokio_ms() || self.passed_on_tokio_ms(tick)
    }

    /// [`passed`](Self::passed) on paused time: known processed, or after
    /// the runtime timer's last millisecond by the clock (not processed),
    /// or else asked of the runtime's timer (a runtime timer registered
    /// and removed, see `alarm/runtime.rs`).
    #[cold]
    #[inline(never)]
    fn passed_on_tokio_ms(&self, tick: u64) -> bool {
        if tick < self.processed_below.load(Ordering::Acquire) {
            return true;
        }
        if tick > self.clock.turn_tick(self.now_tick()) {
            return false;
        }
        #[cfg(feature = "tokio")]
        if let Some(alarm) = self.alarm.as_runtime() {
            if alarm.processed(&self.clock, tick) {
                let ms = on_grid(tick, RUNTIME_MS_US);
                self.processed_below.fetch_max(ms + 1, Ordering::AcqRel);
                return true;
            }
        }
        false
    }



    /// See [`Clock::instant_of`].
    pub(crate) fn instant_of(&self, tick: u64) -> Instant {
        self.clock.instant_of(tick)
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire) != RUNNING
    }

    /// Whether this is the process that built the timer, and not a child
    /// forked from it (see [`Origin::is_current`]). Slow paths only.
    pub(crate) fn is_here(&self) -> bool {
        self.origin.is_current()
    }

    /// Marks the timer stopped for `reason` (one of the stopped states);
    /// returns whether it was running. Only the first stop counts.
    fn mark_stopped(&self, reason: u8) -> bool {
        self.stopped
            .compare_exchange(RUNNING, reason, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Why the timer stopped, if it did.
    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        match self.stopped.load(Ordering::Acquire) {
            RUNNING => None,
            STOPPED => Some(StopReason::Stopped),
            DRIVER_PANICKED => Some(StopReason::DriverPanicked),
            SPAWN_RUNTIME_GONE => Some(StopReason::SpawnRuntimeGone),
            _ => Some(StopReason::RuntimeShutDown),
        }
    }

    /// A pending entry now waits for `tick`: arm the alarm earlier if it was
    /// armed for later. While the wheels are turning the turner re-arms when
    /// it is done, from `planned`.
    /// to sleep past it. Called after the shard's lock is released.
    pub(crate) fn note_deadline(&self, tick: u64) {
        if tick < NEVER
            && tick < self.planned.load(Ordering::Acquire)
            && self.planned.fetch_min(tick, Ordering::SeqCst) > tick
            && self.turn_state.load(Ordering::SeqCst) == IDLE
        {
            self.arm(tick);
        }
    }

    /// Makes the driver turn soon, whatever is pending (a reset completed
    /// a shard's last entry: the turn finds nothing and disarms the alarm,
    /// which a paused runtime would otherwise auto-advance to): the alarm
    /// armed for now, which turns from a task (see [`Alarm::arm`]), or on
    /// paused time for a millisecond the runtime's timer has processed,
    /// which rings as it is armed.
    pub(crate) fn turn_soon(&self) {
        let tick = if self.clock.follows_tokio_ms() {
            self.processed_below.load(Ordering::Acquire) - 1
        } else {
            self.now_tick()
        };
        self.note_deadline(tick);
    }

    /// Arms the alarm for `tick` if it is armed for later (see
    /// [`Alarm::arm`]).
    pub(crate) fn arm(&self, tick: u64) {
        if self.alarm.arm(&self.clock, tick) {
            self.alarm_arms.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The driver's re-arm after a turn at `now`, for the earliest tick with
    /// work, `target` (see [`Alarm::rearm`]). Returns the soonest tick the
    /// driver turns again.
    pub(crate) fn rearm(&self, now: u64, target: u64) -> u64 {
        let rearmed = self.alarm.rearm(&self.clock, now, target);
        if rearmed.set {
            self.alarm_arms.fetch_add(1, Ordering::Relaxed);
        }
        rearmed.soonest
    }

    /// `n` tasks ran or were cancelled; the last one lets the timer go.
    pub(crate) fn tasks_done(&self, n: usize) {
        if n == 0 {
            return;
        }
        let released = {
            // A forked child whose parent held the lock at the fork (its
            // driver finishing tasks) leaves the count alone: nothing may
            // wait here for ever.
            let Some(mut keep) = lock_unless_forked(&self.keep_alive, || self.is_here()) else {
                return;
            };
            // Each task takes the count before it enters the wheel and gives
            // it back once, under its shard's lock, when it leaves it (run,
            // cancelled or drained by `stop`), so this cannot go below zero.
            debug_assert!(keep.0 >= n, "task keep-alive count released twice");
            keep.0 = keep.0.saturating_sub(n);
            if keep.0 == 0 {
                keep.1.take()
            } else {
                None
            }
        };
        // May be the last reference: dropped outside the lock.
        drop(released);
    }

    /// Pending scheduled tasks, as counted for the keep-alive reference
    /// (for the regression tests, which run on a runtime).
    #[cfg(test)]
    #[allow(dead_code)]
    pub(crate) fn tasks_kept(&self) -> (usize, bool) {
        let keep = self.lock_keep_alive();
        (keep.0, keep.1.is_some())
    }

    fn lock_keep_alive(&self) -> MutexGuard<'_, (usize, Option<Arc<Shared>>)> {
        self.keep_alive
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Shard {
    /// Locks the shard. A panic under the lock cannot leave the wheel half
    /// changed (no user code runs there), so poisoning is ignored.
    ///
    /// On a thread-driven timer a thread that finds the lock taken tries
    /// again a few times ([`CONTENDED_TRIES`]: spinning, then yielding)
    /// before it sleeps on it. The lock is held for a few microseconds at
    /// most (an insert, or a batch of [`BATCH`](crate::engine::driver::BATCH)
    /// expiries), but there the driver's thread takes it batch after batch
    /// beside the runtime's workers, and `std`'s mutex stops spinning once
    /// one thread sleeps on it: every worker that came next slept too, with
    /// the tasks queued behind it, to be woken and scheduled again. In W12
    /// busy (1,000 tasks looping 50-2,000 µs sleeps, 2 workers) that was
    /// 61-69% of the workers' context switches in the runs with the worst
    /// p99, and about 1% with the spin. On a runtime's timer the turn runs
    /// on a worker, and the lock is `std`'s alone.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, ShardState> {
        self.try_lock().unwrap_or_else(|| self.lock_contended())
    }

    /// The lock, if it is free (poisoned or not).
    #[inline]
    fn try_lock(&self) -> Option<MutexGuard<'_, ShardState>> {
        match self.state.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Whether a thread that finds the lock taken spins before it sleeps
    /// (see [`Shard::lock`]).
    #[cfg(test)]
    #[allow(dead_code)] // the thread driver's regression test
    pub(crate) fn spins_on_contention(&self) -> bool {
        self.spin
    }

    #[cold]
    fn lock_contended(&self) -> MutexGuard<'_, ShardState> {
        if self.spin {
            if let Some(guard) = self.spin_lock().or_else(|| self.yield_lock()) {
                return guard;
            }
        }
        self.lock_blocking()
    }

    /// Tries at the taken lock after spins of 1, 2, 4, ... [`MAX_SPIN`]
    /// pauses ([`SPIN_TRIES`] tries, about 127 pauses in all).
    fn spin_lock(&self) -> Option<MutexGuard<'_, ShardState>> {
        let mut backoff = 1;
        while backoff <= MAX_SPIN {
            for _ in 0..backoff {
                std::hint::spin_loop();
            }
            backoff *= 2;
            if let Some(guard) = self.try_lock() {
                return Some(guard);
            }
        }
        None
    }

    /// Tries at the taken lock after a yield each, the rest of
    /// [`CONTENDED_TRIES`]: the holder may be waiting for this very CPU.
    fn yield_lock(&self) -> Option<MutexGuard<'_, ShardState>> {
        for _ in SPIN_TRIES..CONTENDED_TRIES {
            std::thread::yield_now();
            if let Some(guard) = self.try_lock() {
                return Some(guard);
            }
        }
        None
    }

    /// Sleeps on the lock until it is free.
    fn lock_blocking(&self) -> MutexGuard<'_, ShardState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`lock`](Self::lock) for the paths a forked child may take through
    /// a handle it inherited (a `Timeout`'s drop, poll or reset): `None` in
    /// a child whose parent held the lock at the fork (see
    /// [`lock_unless_forked`]). Contended in the process that built the
    /// timer, it waits as [`lock`](Self::lock) does (spinning first on a
    /// thread-driven timer).
    ///
    /// Taken, the lock is tried a few more times (a spin of about a
    /// microsecond, as `std`'s own mutex spins before it sleeps); still
    /// taken, a `getpid` tells a child of the usual kind (`None`), and the
    /// timer's fork check a child forked into a new pid namespace with its
    /// parent's id (see [`Process`]) before the thread waits: the parent's
    /// lock is held for microseconds at most.
    #[inline]
    pub(crate) fn lock_unless_forked(&self) -> Option<MutexGuard<'_, ShardState>> {
        match self.try_lock() {
            Some(guard) => Some(guard),
            None => self.lock_unless_forked_contended(),
        }
    }

    /// [`lock_unless_forked`](Self::lock_unless_forked) with the lock
    /// taken: out of line, so that the free lock's path stays a few
    /// instructions where it is inlined (a timeout's poll, reset and drop).
    #[cold]
    #[inline(never)]
    fn lock_unless_forked_contended(&self) -> Option<MutexGuard<'_, ShardState>> {
        // The spin first: the lock is held for microseconds at most, and a
        // `getpid` on every contended lock was 300,000 system calls in
        // three seconds of W12 busy (a driver's turn holds the lock while
        // the workers insert and complete); a child whose parent held it
        // spins the microsecond for nothing, once a call.
        if let Some(guard) = self.spin_lock() {
            return Some(guard);
        }
        if std::process::id() != self.common.origin.pid() {
            return None; // a child of the usual kind
        }
        if !self.common.is_here() {
            return None;
        }
        if self.spin {
            if let Some(guard) = self.yield_lock() {
                return Some(guard);
            }
        }
        Some(self.lock_blocking())
    }

    /// Inserts an entry into this shard's wheel, `state` (its lock held),
    /// and marks the shard busy ([`linked`](Self::linked)): every insert
    /// from outside the driver goes through here or
    /// [`insert_marked`](Self::insert_marked).
    #[inline]
    pub(crate) fn insert(
        &self,
        state: &mut ShardState,
        tick: u64,
        detached: bool,
        waker: Option<Waker>,
    ) -> Key {
        // A task keeps its tick: it has no deadline word to keep it.
        let tick = if detached {
            tick
        } else {
            self.common.filed_tick(state, tick)
        };
        let key = state.wheel.insert(tick, detached, waker);
        self.linked();
        key
    }

    /// [`insert`](Self::insert) of an interval's entry (see
    /// [`Wheel::insert_marked`]).
    #[inline]
    pub(crate) fn insert_marked(&self, state: &mut ShardState, tick: u64, waker: Waker) -> Key {
        let tick = self.common.filed_tick(state, tick);
        let key = state.wheel.insert_marked(tick, Some(waker));
        self.linked();
        key
    }

    /// Resets an entry of this shard's wheel, `state` (its lock held), and
    /// marks the shard busy: a reset may link an entry that had fired.
    #[inline]
    pub(crate) fn reset(
        &self,
        state: &mut ShardState,
        key: Key,
        tick: u64,
    ) -> (State, Option<Option<Waker>>) {
        let tick = self.common.filed_tick(state, tick);
        let res = state.wheel.reset(key, tick);
        self.linked();
        res
    }

    /// An entry went into this shard's wheel, under its lock: the driver
    /// turns it again (see [`Common::busy`]). One load, but for the first
    /// entry since the wheel was last found empty.
    #[inline]
    fn linked(&self) {
        let busy = &self.common.busy[self.index];
        if !busy.load(Ordering::Relaxed) {
            busy.store(true, Ordering::SeqCst);
        }
    }

    /// Counts a new pending timeout or task.
    pub(crate) fn acquire(&self) -> Result<(), Error> {
        let common = &*self.common;
        if let Some(reason) = common.stop_reason() {
            return Err(Error::stopped(reason));
        }
        if let Some(max) = common.max_pending {
            if common.reserved.fetch_add(1, Ordering::AcqRel) >= max {
                common.reserved.fetch_sub(1, Ordering::AcqRel);
                return Err(Error::at_capacity(max));
            }
        }
        self.pending.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Counts a fired timeout pending again after a reset. Resets never fail,
    /// so this may go past `max_pending`.
    pub(crate) fn reacquire(&self) {
        if self.common.max_pending.is_some() {
            self.common.reserved.fetch_add(1, Ordering::AcqRel);
        }
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    /// Timeouts and tasks of this shard neither fired nor cancelled.
    /// The pending count, for a caller that holds the lock.
    fn pending_locked(&self, state: &ShardState) -> usize {
        // Read under the lock: every release counted in `released` is
        // ordered after its timeout's creation, which `pending` holds. Both
        // only grow and may wrap (a 32-bit `usize` wraps after 2^32
        // timeouts); their difference, the pending count, is exact modulo.
        self.pending
            .load(Ordering::Relaxed)
            .wrapping_sub(state.released)
    }

    /// `n` timeouts or tasks of this shard fired or were cancelled, and the
    /// caller holds the lock (`state`).
    pub(crate) fn release_locked(&self, state: &mut ShardState, n: usize) {
        if n == 0 {
            return;
        }
        if self.common.max_pending.is_some() {
            self.common.reserved.fetch_sub(n, Ordering::AcqRel);
        }
        state.released = state.released.wrapping_add(n);
    }

    /// `n` timeouts or tasks of this shard fired or were cancelled, without
    /// the lock.
    pub(crate) fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        if self.common.max_pending.is_some() {
            self.common.reserved.fetch_sub(n, Ordering::AcqRel);
        }
        self.pending.fetch_sub(n, Ordering::Relaxed);
    }
}

impl Drop for Common {
    fn drop(&mut self) {
        // Every timer handle, timeout and task is gone: end the guard task,
        // or the driver's thread.
        self.alarm.shut();
    }
}

/// Cancels everything pending on `shards` and marks the timer stopped, for
/// `reason`. Returns the tasks that never ran, with their closures unless
/// the runtime shut down; wakes every pending timeout, outside the locks.
/// Only the first stop counts.
pub(crate) fn stop(
    common: &Common,
    shards: impl Iterator<Item = Arc<Shard>>,
    reason: StopReason,
) -> Vec<Arc<TaskInner>> {
    let stopped = match reason {
        StopReason::Stopped => STOPPED,
        StopReason::RuntimeShutDown => RUNTIME_SHUT_DOWN,
        StopReason::DriverPanicked => DRIVER_PANICKED,
        StopReason::SpawnRuntimeGone => SPAWN_RUNTIME_GONE,
    };
    if !common.mark_stopped(stopped) {
        return Vec::new();
    }
    let mut tasks = Vec::new();
    let mut timeouts = 0;
    for shard in shards {
        let mut wakers = Vec::new();
        let mut shard_tasks = Vec::new();
        let mut drained = 0;
        {
            let mut guard = shard.lock();
            let state = &mut *guard;
            state.wheel.drain(|expired: Expired<_>| {
                drained += 1;
                if expired.detached {
                    if let Some(task) = state.tasks.remove(expired.key) {
                        task.mark_cancelled();
                        shard_tasks.push(task);
                    }
                } else {
                    shard.deadlines.unlink(expired.key);
                    if let Some(waker) = expired.value {
                        wakers.push(waker);
                    }
                }
            });
            state.counts.cancelled += drained as u64;
            // Unpolled timeouts are not in the wheel: they release their
            // count when polled or dropped.
            shard.release_locked(state, drained);
        }
        common.tasks_done(shard_tasks.len());
        if reason == StopReason::RuntimeShutDown {
            // No one gets these tasks back: free what their closures own.
            // After `Timer::stop` the caller may take them and run them.
            for task in &shard_tasks {
                drop(task.take_task());
            }
        }
        timeouts += drained - shard_tasks.len();
        wake_all(wakers);
        tasks.extend(shard_tasks);
    }
    // Disarm for good (the runtime may be shutting down: nothing may poll
    // the alarm from now on), and end the driver: its guard task, or its
    // thread.
    common.alarm.shut();
    tracing::debug!(
        timeouts,
        tasks = tasks.len(),
        "hashwheel: timer stopped; cancelled what was pending"
    );
    tasks
}

/// The states of [`Common::stopped`]: running, or stopped and why. It
/// leaves `RUNNING` once, in [`stop`].
const RUNNING: u8 = 0;
/// Stopped by [`Timer::stop`](crate::Timer::stop).
const STOPPED: u8 = 1;
/// Stopped because the runtime that ran the driver shut down.
const RUNTIME_SHUT_DOWN: u8 = 2;
/// Stopped because the driver panicked (see `driver`).
const DRIVER_PANICKED: u8 = 3;
/// Stopped because the runtime a thread-driven timer spawns its callbacks
/// on shut down (see `executor`).
const SPAWN_RUNTIME_GONE: u8 = 4;

/// The state of a task. It leaves `PENDING` only under its shard's lock, so
/// a task is run or cancelled, never both.
///
/// | state       | meaning                                      |
/// |-------------|----------------------------------------------|
/// | `PENDING`   | in the wheel, waiting for its deadline       |
/// | `DUE`       | its deadline passed and it left the wheel: the driver hands it to its executor |
/// | `EXPIRED`   | it runs or ran, or waits in its executor to run |
/// | `CANCELLED` | cancelled by its handle or the timer stopping, or dropped unrun by the runtime it was spawned on |
///
/// The moves outside the lock are made by the one holder of the callback:
/// `DUE` to `EXPIRED` once it runs or is handed on
/// ([`TaskInner::handed`]), and `DUE` or `EXPIRED` to `CANCELLED` when the
/// runtime it was spawned on drops it unrun ([`TaskInner::hand_back`]).
/// So `EXPIRED` never stands for a callback that a dead runtime dropped,
/// nor for one on its way to a runtime that is going.
pub(crate) const PENDING: u8 = 0;
pub(crate) const EXPIRED: u8 = 1;
pub(crate) const CANCELLED: u8 = 2;
pub(crate) const DUE: u8 = 3;

type Callback = Box<dyn FnOnce() + Send + 'static>;

/// A scheduled callback: a detached wheel entry of its shard, shared with
/// its [`TaskHandle`](crate::TaskHandle)s.
pub(crate) struct TaskInner {
    pub(crate) shared: Weak<Shared>,
    pub(crate) shard: usize,
    pub(crate) key: Key,
    pub(crate) deadline: Instant,
    pub(crate) state: AtomicU8,
    task: Mutex<Option<Callback>>,
}

impl TaskInner {
    pub(crate) fn new(
        shared: Weak<Shared>,
        shard: usize,
        key: Key,
        deadline: Instant,
        task: Callback,
    ) -> TaskInner {
        TaskInner {
            shared,
            shard,
            key,
            deadline,
            state: AtomicU8::new(PENDING),
            task: Mutex::new(Some(task)),
        }
    }

    /// Called under the shard's lock, as the task leaves the wheel due.
    pub(crate) fn mark_due(&self) {
        self.state.store(DUE, Ordering::Release);
    }

    /// The callback runs, or was handed to its executor: `DUE` becomes
    /// `EXPIRED`, unless it came back cancelled meanwhile.
    pub(crate) fn handed(&self) {
        let _ = self
            .state
            .compare_exchange(DUE, EXPIRED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Called under the shard's lock.
    pub(crate) fn mark_cancelled(&self) {
        self.state.store(CANCELLED, Ordering::Release);
    }

    /// The task came due and was handed to a runtime that dropped it unrun
    /// (it shut down): it goes back to its handles, cancelled, with
    /// `callback` if given, as from [`stop`]. Called without the lock, by
    /// the one holder of the callback: the task has left the wheel (`DUE`
    /// or `EXPIRED`), and nothing else moves it from there.
    #[allow(dead_code)] // only the spawn executor (feature tokio) hands back
    pub(crate) fn hand_back(&self, callback: Option<Callback>) {
        if let Some(callback) = callback {
            *self
                .task
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(callback);
        }
        // After the closure: whoever sees `CANCELLED` finds it.
        self.state.store(CANCELLED, Ordering::Release);
    }

    pub(crate) fn take_task(&self) -> Option<Callback> {
        self.task
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

/// Wakes each waker, outside any lock; a panicking waker is reported and
/// does not stop the rest.
pub(crate) fn wake_all(wakers: impl IntoIterator<Item = Waker>) {
    for waker in wakers {
        wake(waker);
    }
}

pub(crate) fn wake(waker: Waker) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| waker.wake())) {
        tracing::warn!(
            panic = panic_message(&*panic),
            "hashwheel: a waker panicked"
        );
    }
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic payload>"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pick without a division is the remainder, for every shard count
    /// a builder accepts (1 to 65,536) and seeds up to `u32::MAX`.
    #[test]
    fn shard_of_is_the_remainder() {
        let seeds = (0..300u32).chain([
            65_535,
            65_536,
            65_537,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ]);
        let seeds: Vec<u32> = seeds.collect();
        let counts = (1..=300u64).chain([1_000, 4_096, 65_535, 65_536]);
        for n in counts {
            let magic = (u64::MAX / n).wrapping_add(1);
            for &seed in &seeds {
                assert_eq!(shard_of(seed, n, magic) as u64, u64::from(seed) % n, "{seed} % {n}");
            }
        }
    }

    #[test]
    fn buckets_split_a_tick_in_four_and_keep_the_wheel_span() {
        // 1 ms: 1,024 µs rounded, in buckets of 256 µs, four times as many.
        assert_eq!(bucket_geometry(512, 1_000), (2_048, 8));
        assert_eq!(bucket_geometry(64, 1_000), (256, 8));
        // The thread driver's 10 µs: 16 µs rounded, buckets of 4 µs.
        assert_eq!(bucket_geometry(512, 10), (2_048, 2));
        for (wheel_size, tick_us) in [
            (512, 1_000),
            (1 << 18, 1_000),
            (1 << 20, 1_000),
            (8, 50),
            (4096, 10),
        ] {
            let (buckets, res) = bucket_geometry(wheel_size, tick_us);
            let whole = tick_us.next_power_of_two().trailing_zeros();
            assert_eq!(
                (buckets as u64) << res,
                (wheel_size as u64) << whole,
                "a turn of the wheel spans wheel_size rounded ticks"
            );
        }
        // Too wide to split: buckets of a whole (rounded) tick.
        assert_eq!(bucket_geometry(1 << 18, 1_000), (1 << 20, 8));
        assert_eq!(bucket_geometry((1 << 18) + 1, 1_000), ((1 << 18) + 1, 10));
        assert_eq!(bucket_geometry(1 << 21, 1_000), (1 << 21, 10));
        assert_eq!(bucket_geometry(1 << 30, 1_000), (1 << 30, 10));
        // Too narrow to split (a tick of 2 µs or less).
        assert_eq!(bucket_geometry(512, 2), (512, 1));
    }

    #[test]
    fn level_0_holds_four_rounds_up_to_4_mib_of_list_heads() {
        assert_eq!(window(2_048), 4);
        assert_eq!(window(1 << 18), 4);
        assert_eq!(window((1 << 18) + 1), 1);
        assert_eq!(window(1 << 20), 1);
        assert_eq!(window(1 << 30), 1);
        assert_eq!(window(usize::MAX), 1);
    }
}
