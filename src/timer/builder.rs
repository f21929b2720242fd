//! [`Builder`]: a [`Timer`]'s configuration, its checks, and the plan a
//! build carries out on either driver.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "tokio")]
use tokio::runtime::Handle;

#[cfg(feature = "tokio")]
use crate::engine::alarm::runtime::RuntimeAlarm;
#[cfg(feature = "thread")]
use crate::engine::alarm::thread::ThreadAlarm;
use crate::engine::alarm::Alarm;
#[cfg(feature = "tokio")]
use crate::engine::driver::runtime;
#[cfg(feature = "thread")]
use crate::engine::driver::thread;
use crate::engine::executor::TaskExecutor;
use crate::engine::process::Origin;
use crate::engine::shard::{shard_bytes, Shared, UNIT_NS};
use crate::error::Error;
use crate::timer::Timer;
use crate::wheel::raw::MAX_ENTRIES;

/// The smallest tick of a timer driven by a runtime (whose timer has a
/// resolution of 1 ms); shorter ones are a configuration error.
const MIN_TICK: Duration = Duration::from_millis(1);
/// The smallest tick of a thread-driven timer; shorter ones are a
/// configuration error.
#[cfg(feature = "thread")]
const MIN_THREAD_TICK: Duration = Duration::from_micros(10);
/// The largest wheel: 2^20 buckets, about 8.2 MiB a shard (see
/// [`Builder::wheel_size`]). Netty allows 2^30, but it keeps far deadlines
/// in their buckets, counting rounds; here the round ring holds them, so a
/// larger wheel would only save a far deadline's move from the ring, at
/// 8 bytes a bucket per shard, allocated whole at build.
const MAX_WHEEL_SIZE: usize = 1 << 20;
/// The most a timer may allocate at build, holding nothing, over all its
/// shards (see [`Builder::shards`]): a timer the builder accepts never
/// costs gigabytes unasked.
const MAX_BUILD_BYTES: usize = 64 << 20;
/// Of [`MAX_BUILD_BYTES`], what is kept for the timer's own state beside
/// its shards (its common state and driver, a few KiB).
const COMMON_BYTES: usize = 64 << 10;
/// Slots in each shard's round ring (see the `wheel` module): bounded so a
/// huge wheel does not get a huge ring too.
const MAX_RING: usize = 4096;
const MIN_RING: usize = 64;
/// [`Builder::build`]'s error on a runtime without a time driver (which
/// `hashwheel::time` turns into tokio's panic).
#[cfg(feature = "tokio")]
pub(crate) const NO_TIME_DRIVER: &str =
    "the runtime has no time driver: build it with enable_time() or enable_all()";
/// Shards are numbered with 16 bits in a [`Timeout`].
pub(crate) const MAX_SHARDS: usize = 1 << 16;

/// Configures a [`Timer`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let timer = Timer::builder()
///     .tick(Duration::from_millis(10))
///     .wheel_size(1000) // rounded up to 1024
///     .max_pending(100_000)
///     .build()
///     .unwrap();
/// assert_eq!(timer.wheel_size(), 1024);
/// assert_eq!(timer.tick(), Duration::from_millis(10));
/// # }
/// ```
///
/// Its methods are `#[must_use]`: a chain that never reaches
/// [`build`](Builder::build) builds nothing, and the compiler says so.
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # fn main() {
/// hashwheel::Timer::builder().tick(std::time::Duration::from_millis(10));
/// # }
/// ```
#[derive(Clone)]
pub struct Builder {
    tick: Duration,
    wheel_size: usize,
    max_pending: Option<usize>,
    shards: Option<usize>,
    capacity: usize,
    #[cfg(feature = "tokio")]
    handle: Option<Handle>,
    /// `None`: the driver's default ([`TaskExecutor::spawn`] on a runtime,
    /// [`TaskExecutor::driver`] on a thread).
    task_executor: Option<TaskExecutor>,
    /// Driven by a thread of its own rather than a runtime.
    #[cfg(feature = "thread")]
    thread: bool,
}

/// Whether the runtime of `handle` has a time driver, which the driver task
/// sleeps on. Without one the driver would panic on its first sleep and the
/// timer stop itself, so that every timeout completed at once.
///
/// tokio 1.x has no query for this (the `Debug` of `Handle` is opaque, and
/// `RuntimeMetrics` says nothing of the drivers). Creating a `Sleep` (which
/// registers only when polled) panics without a time driver, so the check
/// creates one under `catch_unwind`: the panic hook reports tokio's message
/// as the check runs, and a `panic = "abort"` build aborts with it, as
/// `Builder::build` documents.
#[cfg(feature = "tokio")]
fn has_time_driver(handle: &Handle) -> bool {
    let _runtime = handle.enter();
    std::panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_ok()
}

/// What [`Builder::build`] checked and worked out, for either driver.
struct Plan {
    tick: Duration,
    tick_us: u64,
    wheel_size: usize,
    ring: usize,
    shards: usize,
    /// Entries reserved on each shard ([`Builder::capacity`]).
    per_shard: usize,
    /// What they take, all shards together ([`TIMEOUT_BYTES`] each).
    reserve_bytes: usize,
    /// The capacity asked for, for the message of a reservation that fails.
    capacity: usize,
    max_pending: Option<usize>,
}

/// The bytes a timeout reserved by [`Builder::capacity`] takes: its entry
/// in its shard's store and its deadline word (and a pointer of the
/// store's directory per 256 of them, left out).
const TIMEOUT_BYTES: usize =
    crate::wheel::raw::Wheel::<Option<std::task::Waker>>::entry_bytes() + std::mem::size_of::<u64>();

/// `bytes` for a person: in GiB, MiB or KiB, one decimal.
fn human_bytes(bytes: usize) -> String {
    let units = [(30, "GiB"), (20, "MiB"), (10, "KiB")];
    match units.iter().find(|(shift, _)| bytes >> shift != 0) {
        Some(&(shift, unit)) => format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64),
        None => format!("{bytes} bytes"),
    }
}

impl Plan {
    /// Checks `builder`'s settings, each with an error that names what is
    /// wrong and the way out, and works out what a build of them makes.
    fn new(builder: &Builder) -> Result<Plan, Error> {
        if builder.tick.is_zero() {
            return Err(Error::invalid_config("tick must be non-zero, got 0ns"));
        }
        #[cfg(feature = "thread")]
        let min_tick = if builder.is_thread() {
            MIN_THREAD_TICK
        } else {
            MIN_TICK
        };
        #[cfg(not(feature = "thread"))]
        let min_tick = MIN_TICK;
        if builder.tick < min_tick {
            return Err(Error::invalid_config(if min_tick == MIN_TICK {
                format!(
                    "a runtime-driven timer's tick must be at least 1ms (the runtime timer's \
                     resolution), got {:?}; for sub-millisecond ticks (from 10µs) drive the \
                     timer on a thread of its own with Builder::driver_thread() (feature `thread`)",
                    builder.tick
                )
            } else {
                format!(
                    "a thread-driven timer's tick must be at least 10µs, got {:?}",
                    builder.tick
                )
            }));
        }
        let tick = builder.tick;
        if builder.max_pending == Some(0) {
            return Err(Error::invalid_config(
                "max_pending must be at least 1, got 0: the timer would refuse every timeout \
                 (for no limit, leave max_pending unset)",
            ));
        }
        if builder.wheel_size == 0 || builder.wheel_size > MAX_WHEEL_SIZE {
            return Err(Error::invalid_config(format!(
                "wheel size must be between 1 and 2^20 (1048576), got {}",
                builder.wheel_size
            )));
        }
        let wheel_size = builder.wheel_size.next_power_of_two();
        let tick_ns = u64::try_from(tick.as_nanos()).ok();
        let span = tick.checked_mul(wheel_size as u32);
        let (Some(tick_ns), Some(_)) = (tick_ns, span) else {
            return Err(Error::invalid_config(format!(
                "tick of {tick:?} times {wheel_size} buckets overflows the wheel's span"
            )));
        };
        let ring = wheel_size.clamp(MIN_RING, MAX_RING);
        let tick_us = tick_ns.div_ceil(UNIT_NS);
        // What each shard allocates now, and how many fit the bound: at
        // least 7, since a shard takes at most about 8.2 MiB.
        let shard_bytes = shard_bytes(wheel_size, tick_us, ring);
        let fit = (MAX_BUILD_BYTES - COMMON_BYTES) / shard_bytes;
        let shards = match builder.shards {
            Some(n) if n == 0 || n > MAX_SHARDS => {
                return Err(Error::invalid_config(format!(
                    "shards must be between 1 and 65536, got {n}"
                )))
            }
            Some(n) if n > fit => {
                return Err(Error::invalid_config(format!(
                    "{n} shards of a {wheel_size}-bucket wheel would allocate {} MiB at build, \
                     holding nothing ({} KiB a shard); a timer allocates at most 64 MiB: \
                     {fit} shards at most, or a smaller wheel_size",
                    (n * shard_bytes) >> 20,
                    shard_bytes >> 10,
                )))
            }
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get().min(fit)),
        };
        let per_shard = builder.capacity.div_ceil(shards);
        if per_shard > MAX_ENTRIES {
            return Err(Error::invalid_config(format!(
                "a capacity of {} over {shards} shards is more than a shard holds ({MAX_ENTRIES})",
                builder.capacity
            )));
        }
        Ok(Plan {
            tick,
            tick_us,
            wheel_size,
            ring,
            shards,
            per_shard,
            reserve_bytes: per_shard
                .saturating_mul(shards)
                .saturating_mul(TIMEOUT_BYTES),
            capacity: builder.capacity,
            max_pending: builder.max_pending,
        })
    }

    /// The error of a [`Builder::capacity`] that could not be reserved.
    fn out_of_memory(&self) -> Error {
        Error::out_of_memory(format!(
            "Builder::capacity({}) reserves {} timeouts on each of {} shard(s) at build, \
             {} ({TIMEOUT_BYTES} bytes a timeout), and the allocation failed: reserve \
             less, or leave capacity unset and let the storage grow as timeouts come",
            self.capacity,
            self.per_shard,
            self.shards,
            human_bytes(self.reserve_bytes),
        ))
    }

    /// The shared state of a timer with `alarm`, with the room
    /// [`Builder::capacity`] asked for reserved on every shard; the error
    /// where that room cannot be allocated (nothing of it is kept).
    fn shared(&self, alarm: Alarm, origin: Arc<Origin>) -> Result<Arc<Shared>, Error> {
        // All of it in one allocation first, never touched and given back
        // at once: past the address space (a `ulimit -v`), or past what
        // the system would ever give (Linux refuses an obvious overcommit),
        // it fails here, at once, where page by page the process would
        // fill memory until an allocation failed (and aborted it) or the
        // system killed it.
        if self.reserve_bytes > 0 {
            let mut probe: Vec<u8> = Vec::new();
            probe
                .try_reserve_exact(self.reserve_bytes)
                .map_err(|_| self.out_of_memory())?;
        }
        let shared = Shared::new(
            self.tick,
            self.tick_us,
            self.wheel_size,
            self.ring,
            self.shards,
            self.max_pending,
            alarm,
            origin,
        );
        if self.per_shard > 0 {
            for shard in shared.shards.iter() {
                // Page by page, each allocation checked: the one that fails
                // drops the timer, and all it reserved, with the error.
                let reserved = shard.lock().wheel.try_reserve(self.per_shard);
                reserved
                    .and_then(|()| shard.deadlines.try_reserve(self.per_shard))
                    .map_err(|_| self.out_of_memory())?;
            }
        }
        Ok(shared)
    }
}


impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Builder");
        d.field("tick", &self.tick)
            .field("wheel_size", &self.wheel_size)
            .field("max_pending", &self.max_pending)
            .field("shards", &self.shards);
        #[cfg(feature = "tokio")]
        d.field("handle", &self.handle);
        d.field("task_executor", &self.executor());
        #[cfg(feature = "thread")]
        d.field("driver_thread", &self.is_thread());
        d.finish()
    }
}

impl Builder {
    /// Whether the timer will be thread-driven.
    fn is_thread(&self) -> bool {
        #[cfg(all(feature = "thread", feature = "tokio"))]
        return self.thread;
        #[cfg(not(feature = "tokio"))]
        return true;
        #[cfg(not(feature = "thread"))]
        return false;
    }

    /// The executor chosen, or the driver's default.
    fn executor(&self) -> TaskExecutor {
        match &self.task_executor {
            Some(executor) => executor.clone(),
            None if self.is_thread() => TaskExecutor::driver(),
            None => TaskExecutor::default(),
        }
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: 1 ms tick, 512 buckets, no pending limit, one shard per
    /// CPU, the current runtime, callbacks spawned as tasks
    /// ([`TaskExecutor::spawn`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Builder::new().build().unwrap();
    /// assert_eq!(timer.tick(), std::time::Duration::from_millis(1));
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`TaskExecutor::spawn`]: https://docs.rs/hashwheel/latest/hashwheel/struct.TaskExecutor.html#method.spawn")]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn new() -> Builder {
        Builder {
            tick: MIN_TICK,
            wheel_size: 512,
            max_pending: None,
            shards: None,
            capacity: 0,
            #[cfg(feature = "tokio")]
            handle: None,
            task_executor: None,
            #[cfg(feature = "thread")]
            thread: false,
        }
    }

    /// The tick: the width of a bucket, and the driver's unit of batching.
    ///
    /// Deadlines keep their microseconds whatever the tick. With the
    /// default 1 ms (the runtime timer's own resolution) the timer adds no
    /// rounding: a timeout fires when a `tokio::time::Sleep` with the same
    /// deadline would, under load too. A coarser tick batches: a timeout
    /// fires at most one tick late (never early), and far fewer wake-ups
    /// serve many timeouts: the knob that trades lateness for CPU. How
    /// often the driver turns depends on what drives it. A thread-driven
    /// timer turns at most once per tick, on multiples of the tick since it
    /// was built. A runtime's timer rings only on its own whole
    /// milliseconds (counted from the runtime's start), so a timer driven
    /// by one turns on those, at most once every whole milliseconds of the
    /// tick, rounded down: a 2 or 2.5 ms tick every 2 ms, and a 1.5 or
    /// 1.999 ms tick every millisecond, as a 1 ms tick does (up to twice a
    /// tick: a turn every 1.5 ms could not keep every timeout within 1.5 ms
    /// of its deadline). A tick of whole milliseconds turns at most once
    /// per tick on either driver. What a 2 ms tick saves and costs on W9
    /// (heartbeats: CPU, parks, lateness beside tokio's) is in
    /// BENCHMARKS.md, the one place its figures are kept.
    ///
    /// A timer driven by a runtime takes ticks from 1 ms (the runtime
    /// timer's resolution); a thread-driven one
    /// ([`Builder::driver_thread`], feature `thread`) from 10 µs, for
    /// sub-millisecond timers. [`build`](Builder::build) fails with
    /// [`Error::is_invalid_config`] for a tick under its driver's minimum
    /// (the message names `driver_thread()` for a runtime's) or zero, and
    /// never changes the tick it is given: [`Timer::tick`] returns it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().tick(Duration::from_millis(100)).build().unwrap();
    /// assert_eq!(timer.tick(), Duration::from_millis(100));
    /// assert!(hashwheel::Timer::builder().tick(Duration::ZERO).build().is_err());
    /// let sub_ms = hashwheel::Timer::builder().tick(Duration::from_micros(500)).build();
    /// assert!(sub_ms.unwrap_err().to_string().contains("driver_thread()"));
    /// # }
    /// ```
    #[cfg_attr(not(feature = "thread"), doc = "", doc = "[`Builder::driver_thread`]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread")]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn tick(mut self, tick: Duration) -> Builder {
        self.tick = tick;
        self
    }

    /// The number of buckets per wheel, rounded up to a power of two; 1 to
    /// 2^20 (1,048,576). One turn of the wheel spans `tick * wheel_size`;
    /// deadlines further out wait in a ring of rounds, so a larger wheel
    /// only saves them a move from the ring to their bucket.
    ///
    /// # Memory
    ///
    /// Each shard (see [`shards`](Builder::shards)) allocates its wheel
    /// whole at [`build`](Builder::build): 8 bytes and a bit per list (its
    /// two ends: a list keeps its entries in the order they came, which
    /// keeps the order in which tasks are woken). A bucket of a wheel of up
    /// to 2^16 buckets is 16 lists (split in four, and four rounds in the
    /// first level): 130 bytes; of 2^17 or 2^18 buckets, 4 lists (32.5
    /// bytes); of 2^19 or more, one (8.1 bytes). So a shard's wheel takes
    /// 65 KiB at the default 512 buckets and at most about 8.2 MiB (at
    /// 2^16, 2^18 and 2^20 buckets), on top of about 16 KiB for the shard
    /// itself: 83 KiB a shard by default. Timeouts
    /// take their own storage as they come (see [`capacity`](Builder::capacity)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().wheel_size(300).build().unwrap();
    /// assert_eq!(timer.wheel_size(), 512);
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn wheel_size(mut self, buckets: usize) -> Builder {
        self.wheel_size = buckets;
        self
    }

    /// The most timeouts and tasks that may be pending at once. The `try_`
    /// methods fail with [`Error::is_at_capacity`] beyond it; a place frees
    /// up as soon as one fires or is cancelled.
    ///
    /// A [`Timeout::reset`](crate::Timeout::reset) of a timeout that already fired never fails: it
    /// counts as pending again even past the limit.
    ///
    /// # Errors
    ///
    /// [`build`](Builder::build) fails with [`Error::is_invalid_config`]
    /// for 0: a timer that may hold nothing would refuse every timeout.
    /// Leave `max_pending` unset for no limit (Netty's `maxPendingTimeouts`
    /// of 0 means that; here it is the default).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().max_pending(2).build().unwrap();
    /// let _a = timer.try_sleep(Duration::from_secs(1)).unwrap();
    /// let _b = timer.try_schedule(Duration::from_secs(1), || {}).unwrap();
    /// assert!(timer.try_sleep(Duration::from_secs(1)).unwrap_err().is_at_capacity());
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn max_pending(mut self, max: usize) -> Builder {
        self.max_pending = Some(max);
        self
    }

    /// Reserves room for `timeouts` timeouts up front, split evenly across
    /// the shards (each reserves `timeouts / shards`, rounded up): the
    /// storage of their entries and their deadline words is allocated by
    /// [`build`](Builder::build) rather than by the inserts that first need
    /// it, like [`DelayQueue::with_capacity`][DelayQueue::with_capacity_link].
    /// Defaults to 0.
    ///
    /// Threads spread over the shards, so on a multi-thread runtime the
    /// split matches the load; a timer used from one thread fills one
    /// shard, so give it [`shards(1)`](Builder::shards) to reserve it all
    /// there. Growing past the reservation is cheap either way: storage
    /// grows a page (256 entries) at a time, never copies what it holds,
    /// and no insert allocates more than a few pages' worth (8 KiB each),
    /// however many timeouts the shard holds. [`Timer::shrink`] gives back
    /// what is not in use, reserved or not. Intervals and scheduled tasks
    /// take a little more, allocated as they come.
    ///
    /// [`build`](Builder::build) allocates what it reserves, 40 bytes a
    /// timeout, and fills it (a timeout's storage is filled as it is
    /// allocated): the memory is the process's from then on, as a
    /// `Vec::with_capacity` that was written to.
    ///
    /// # Errors
    ///
    /// A shard holds at most `u32::MAX - 3` (4,294,967,292) timeouts:
    /// [`build`](Builder::build) fails with [`Error::is_invalid_config`] if
    /// `timeouts.div_ceil(shards)` is more than that. Where the room cannot
    /// be allocated, it fails with [`Error::is_out_of_memory`] and keeps
    /// none of it: it first asks for all of it in one allocation, which it
    /// never touches (beyond the address space, a `ulimit -v`, or what the
    /// system would ever give, that fails at once), then allocates it page
    /// by page, each allocation checked. Where the system promises memory
    /// it does not have (Linux's overcommit), filling it may still end the
    /// process, as filling any allocation would.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().shards(1).capacity(10_000).build().unwrap();
    /// let held: Vec<_> = (0..10_000).map(|_| timer.sleep(Duration::from_secs(9))).collect();
    /// # drop(held);
    /// # }
    /// ```
    #[cfg_attr(feature = "tokio", doc = "", doc = "[DelayQueue::with_capacity_link]: crate::DelayQueue::with_capacity")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[DelayQueue::with_capacity_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.DelayQueue.html#method.with_capacity")]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn capacity(mut self, timeouts: usize) -> Builder {
        self.capacity = timeouts;
        self
    }

    /// How many wheels (each with its own lock) to spread threads over.
    /// Defaults to the number of CPUs, as many as fit the bound below; 1 to
    /// 65,536.
    ///
    /// # Memory
    ///
    /// Every shard allocates its wheel and its own state at
    /// [`build`](Builder::build), 83 KiB with the default wheel and up to
    /// about 8.2 MiB with a large one (see [`wheel_size`](Builder::wheel_size)),
    /// and a timer allocates at most 64 MiB at build, all shards together,
    /// holding nothing: about 785 shards of the default wheel, at least
    /// 7 of any. `build` fails past that with [`Error::is_invalid_config`],
    /// naming how many fit; the default is lowered to fit (64 CPUs' shards
    /// fit wheels of up to 4,096 buckets, and 7 fit any). A
    /// [`capacity`](Builder::capacity) you reserve comes on top.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().shards(1).build().unwrap();
    /// # drop(timer);
    /// # }
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn shards(mut self, shards: usize) -> Builder {
        self.shards = Some(shards);
        self
    }

    /// The runtime whose timer turns the wheels (and that runs the driver's
    /// guard task), and whose clock the timer reads. Defaults to the
    /// current one.
    ///
    /// Timeouts made outside that runtime's context (before a `block_on`,
    /// on a plain thread) take their deadlines from its clock all the same,
    /// paused or not; one made in a task reads the clock of the task's
    /// runtime, as a `tokio::time::Sleep` made there would.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// // Built outside any runtime: the driver runs on `rt`.
    /// let timer = hashwheel::Timer::builder().handle(rt.handle().clone()).build().unwrap();
    /// rt.block_on(timer.sleep(Duration::from_millis(1)));
    /// ```
    #[must_use = "a Builder does nothing until `build` is called"]
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn handle(mut self, handle: Handle) -> Builder {
        self.handle = Some(handle);
        self
    }

    /// Where the callbacks of [`Timer::schedule`] run once due: spawned as
    /// tasks on the driver's runtime ([`TaskExecutor::spawn`], the default),
    /// inline on the driver ([`TaskExecutor::driver`], the cheapest, for
    /// callbacks that never block), or handed to an executor of yours
    /// ([`TaskExecutor::custom`], `spawn_blocking` for callbacks that block).
    /// See [`TaskExecutor`] for the trade-off; Netty's `taskExecutor`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::{TaskExecutor, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().task_executor(TaskExecutor::driver()).build().unwrap();
    /// let task = timer.schedule(Duration::from_millis(5), || println!("on the driver"));
    /// timer.sleep(Duration::from_millis(5)).await;
    /// assert!(task.is_expired());
    /// # }
    /// ```
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`TaskExecutor::spawn`]: https://docs.rs/hashwheel/latest/hashwheel/struct.TaskExecutor.html#method.spawn")]
    #[doc(alias = "taskExecutor")]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn task_executor(mut self, executor: TaskExecutor) -> Builder {
        self.task_executor = Some(executor);
        self
    }

    /// Drives the timer on a thread of its own, Netty's worker thread,
    /// rather than inside a tokio runtime's timer: its timeouts, intervals
    /// and callbacks then work from any executor or plain thread, with no
    /// runtime at all. Without the feature `tokio` this is the only driver,
    /// and [`build`](Builder::build) picks it anyway.
    ///
    /// The thread sleeps until the next tick with work (none while nothing
    /// is pending, none on an empty tick), wakes what expired, and ends once
    /// the timer is [stopped](Timer::stop) or its last `Timer`, timeout,
    /// interval and pending task is gone. Its clock is std's
    /// (`std::time::Instant`): **tokio's paused time does not move it**.
    /// Its [`tick`](Builder::tick) may go down to 10 µs for sub-millisecond
    /// timers (a runtime-driven timer's stops at 1 ms): on Linux the thread
    /// sleeps on a timerfd, which the kernel does not delay by its 50 µs of
    /// timer slack; elsewhere on `std`'s condition variable. A finer tick
    /// costs more wake-ups only when deadlines are that close together: the
    /// thread turns at most once per tick, and only on ticks with work.
    ///
    /// A library meant for any executor should call `driver_thread()`
    /// rather than rely on the thread-only build's default: when another
    /// crate in the same program turns the feature `tokio` on, a plain
    /// [`build`](Builder::build) (and [`Timer::new`]) drives the timer on
    /// the current tokio runtime instead, and fails outside one.
    ///
    /// Callbacks of [`Timer::schedule`] run on the driver's thread by
    /// default ([`TaskExecutor::driver`], as Netty's): a callback that
    /// blocks delays every timeout of the timer until it returns. Pass
    /// [`TaskExecutor::custom`] for callbacks that may block.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // No runtime: the timer has its own thread.
    /// let timer = hashwheel::Timer::builder()
    ///     .tick(Duration::from_micros(50))
    ///     .driver_thread()
    ///     .build()
    ///     .unwrap();
    /// let start = std::time::Instant::now();
    /// futures::executor::block_on(timer.sleep(Duration::from_millis(2)));
    /// assert!(start.elapsed() >= Duration::from_millis(2));
    /// ```
    #[cfg(feature = "thread")]
    #[cfg_attr(docsrs, doc(cfg(feature = "thread")))]
    #[must_use = "a Builder does nothing until `build` is called"]
    pub fn driver_thread(mut self) -> Builder {
        self.thread = true;
        self
    }

    /// Builds the timer and spawns its driver.
    ///
    /// The 65th live timer of one runtime warns once per process, on stderr
    /// and through `tracing` (and so does the 65th live driver thread of
    /// the process): share one `Timer` per runtime (see [`Timer::new`]).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_config`], with a message naming the value, for a
    /// zero tick or one under the driver's minimum (1 ms on a runtime, where
    /// the message names [`driver_thread()`][Builder::driver_thread_link]; 10 µs
    /// on a thread), a `max_pending` of 0, a wheel size of 0 or above 2^20,
    /// a tick so long that
    /// one turn of the wheel overflows, a shard count of 0 or above 65,536
    /// or more shards than fit in 64 MiB (see [`shards`](Builder::shards)),
    /// no runtime (called outside one without [`handle`][Builder::handle_link]),
    /// or a runtime without a time driver (built without `enable_time()` or
    /// `enable_all()`). [`Error::is_out_of_memory`] where the room
    /// [`capacity`](Builder::capacity) asks for cannot be allocated.
    ///
    /// # Panics
    ///
    /// Under `panic = "abort"`, on a runtime without a time driver: the
    /// process aborts with tokio's message ("A Tokio 1.x context was found,
    /// but timers are disabled") instead of returning the error. tokio 1.x
    /// offers no way to ask whether a runtime has its time driver (not
    /// `Handle`, not `RuntimeMetrics`, whose `Debug` is opaque too): the
    /// check creates a `tokio::time::Sleep`, which panics without one, and
    /// catches the panic, which only an unwinding build can do (the panic
    /// hook prints tokio's message as the check runs). With
    /// `panic = "abort"`, build runtimes with `enable_time()` or
    /// `enable_all()`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = hashwheel::Timer::builder().wheel_size(0).build().unwrap_err();
    /// assert!(err.is_invalid_config());
    /// # }
    /// ```
    #[cfg_attr(feature = "thread", doc = "", doc = "[Builder::driver_thread_link]: Builder::driver_thread")]
    #[cfg_attr(not(feature = "thread"), doc = "", doc = "[Builder::driver_thread_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread")]
    #[cfg_attr(feature = "tokio", doc = "", doc = "[Builder::handle_link]: Builder::handle")]
    #[cfg_attr(not(feature = "tokio"), doc = "", doc = "[Builder::handle_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.handle")]
    pub fn build(self) -> Result<Timer, Error> {
        let plan = Plan::new(&self)?;
        #[cfg(feature = "thread")]
        if self.is_thread() {
            return self.build_thread(&plan);
        }
        #[cfg(feature = "tokio")]
        {
            self.build_runtime(&plan)
        }
        #[cfg(not(feature = "tokio"))]
        unreachable!("without tokio every timer is thread-driven")
    }

    /// [`build`](Self::build) for a timer driven by a runtime.
    #[cfg(feature = "tokio")]
    fn build_runtime(self, plan: &Plan) -> Result<Timer, Error> {
        let executor = self.executor();
        let handle = match self.handle {
            Some(handle) => handle,
            None => Handle::try_current().map_err(|_| {
                Error::invalid_config(
                    "no tokio runtime: build the timer inside one, or pass Builder::handle",
                )
            })?,
        };
        if !has_time_driver(&handle) {
            return Err(Error::invalid_config(NO_TIME_DRIVER));
        }
        // The clock starts by the runtime's time (paused or not), also when
        // built outside the runtime with `Builder::handle`: read outside it,
        // tokio's clock is std's, which a paused runtime's is not.
        let shared = {
            let _entered = handle.enter();
            plan.shared(
                Alarm::Runtime(RuntimeAlarm::new()),
                Arc::new(Origin::here()),
            )?
        };
        runtime::start(&handle, &shared, executor);
        Ok(Timer { shared })
    }

    /// [`build`](Self::build) for a thread-driven timer.
    #[cfg(feature = "thread")]
    fn build_thread(self, plan: &Plan) -> Result<Timer, Error> {
        let executor = self.executor();
        #[cfg(feature = "tokio")]
        let runner = {
            let handle = self.handle.or_else(|| Handle::try_current().ok());
            if executor.is_spawn() && handle.is_none() {
                return Err(Error::invalid_config(
                    "TaskExecutor::spawn on a thread-driven timer needs a tokio runtime: \
                     build it inside one, or pass Builder::handle",
                ));
            }
            executor.bind(crate::engine::executor::Spawner::thread(handle))
        };
        #[cfg(not(feature = "tokio"))]
        let runner = executor.bind(crate::engine::executor::Spawner::none());
        let origin = Arc::new(Origin::here());
        let alarm = ThreadAlarm::new(origin.clone()).map(Arc::new).map_err(|err| {
            Error::invalid_config(format!("the driver's alarm could not be created: {err}"))
        })?;
        let shared = plan.shared(Alarm::Thread(alarm.clone()), origin)?;
        thread::start(&shared, alarm, runner).map_err(|err| {
            Error::invalid_config(format!("the driver's thread could not be started: {err}"))
        })?;
        Ok(Timer { shared })
    }
}
