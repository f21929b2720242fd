//! The driver: it reads the clock, turns the wheels and wakes what expired,
//! outside the locks.
//!
//! It is no task. Its alarm is a runtime `Sleep` (`alarm/runtime.rs`)
//! polled with the driver's own waker, so the runtime's timer calls the
//! driver while it processes its own timers, and the wakes the driver makes
//! there are batched by the runtime exactly like those of `tokio::time`: no
//! worker is unparked per wake. After each turn the driver re-arms the
//! alarm for the next tick with work; with nothing pending it leaves it
//! disarmed and costs nothing. An insert earlier than the armed tick arms
//! it earlier itself (see [`Common::note_deadline`]). The alarm is a ring
//! of three runtime timers, a turn of the driver's grid apart (a
//! millisecond, or the whole milliseconds of a coarser tick), which keeps
//! that re-arm of a busy timer from unparking the runtime's driver and,
//! turn after turn, re-registers one of them; after a turn of sparse work
//! the re-arm sets the next instant alone (see `alarm/runtime.rs`).
//!
//! Due `schedule` callbacks go to the timer's
//! [`crate::TaskExecutor`] (see `executor.rs`): spawned as
//! tasks by default, so that no user code runs here unless the user asked
//! for it ([`TaskExecutor::driver`](crate::TaskExecutor::driver)).
//!
//! A small guard task does nothing but wait: the runtime drops it when it
//! shuts down, and the guard then stops the timer so that no timeout hangs.
//!
//! # Why no wake-up is lost
//!
//! See `driver/mod.rs`, which both drivers share. Here, besides: a wake that comes
//! while a turn runs (the alarm rang again, or an insert already due armed
//! it) marks the turn [`AGAIN`], and the turner turns once more.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::engine::alarm::runtime::{rung_while_arming, woken_from_task};
use crate::error::StopReason;
use crate::engine::executor::{Spawner, StopOnDrop, TaskExecutor, TaskRunner};
use crate::engine::shard::{Common, Shard, Shared, IDLE, TURNING};
use crate::engine::driver::{self, Fired, BATCH as BATCH_LEN};

/// [`Common::turn_state`]: a turn runs, and another was asked for
/// meanwhile.
const AGAIN: u8 = 2;

/// Starts the driver of `shared` on `handle`: creates its alarm and spawns
/// its guard task. Due callbacks go to `executor`. The runtime must have a
/// time driver (checked by [`Builder::build`](crate::Builder::build)).
pub(crate) fn start(handle: &Handle, shared: &Shared, executor: TaskExecutor) {
    let (common, shards) = shared.driver_parts();
    let Some(alarm) = common.alarm.as_runtime() else {
        unreachable!("a timer driven by a runtime has a runtime alarm");
    };
    let driver = Arc::new(Driver {
        common: Arc::downgrade(&common),
        shards: shards.clone(),
        runner: executor.bind(Spawner::runtime(handle.clone())),
    });
    alarm.start(handle, &common.clock, Waker::from(driver));
    // The guard exists from here on, not from the task's first poll: a
    // runtime may shut down before it ever polls the task.
    let guard = StopOnDrop::new(shared, StopReason::RuntimeShutDown, "driver");
    handle.spawn(wait(guard, alarm.ended()));
    tracing::debug!(shards = shared.shards.len(), "hashwheel: driver started");
}

/// The guard task: waits until the timer is stopped or gone. If the runtime
/// drops it first (it shut down), nothing will fire any more: the guard
/// stops the timer, so every pending timeout completes instead of hanging.
async fn wait(guard: StopOnDrop, ended: Arc<Notify>) {
    ended.notified().await;
    drop(guard);
}

/// The alarm's waker: turns the wheels.
struct Driver {
    common: Weak<Common>,
    shards: Box<[Weak<Shard>]>,
    /// Where due callbacks run.
    runner: TaskRunner,
}

thread_local! {
    /// The batch of the last turn on this thread, empty, kept so that a
    /// turn allocates nothing: taken out for the turn and put back after
    /// (a runtime's timer processing runs on its workers; a lock held
    /// across the turn would cost two lock operations a turn).
    static BATCH: Cell<Vec<Fired>> = const { Cell::new(Vec::new()) };
}

impl Wake for Driver {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if rung_while_arming() {
            return; // the arming thread turns once it released the lock
        }
        let Some(common) = self.common.upgrade() else {
            return; // every handle is gone
        };
        // One clock reading: whether the wake is for nothing, and the turn.
        let reading = common.now();
        let now = common.clock.now_tick_of(reading);
        if common
            .alarm
            .as_runtime()
            .is_some_and(|alarm| alarm.rang_for_nothing(now))
        {
            return; // a later timer of the ring, rung with the one turned for
        }
        // Become the turner, or leave the turn to the one running.
        let mut state = common.turn_state.load(Ordering::SeqCst);
        loop {
            let next = if state == IDLE { TURNING } else { AGAIN };
            match common.turn_state.compare_exchange(
                state,
                next,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(IDLE) => break,
                Ok(_) => return,
                Err(actual) => state = actual,
            }
        }
        let mut batch = BATCH.take();
        batch.reserve(BATCH_LEN);
        // This runs inside the runtime's timer processing, on a worker and
        // outside any task: a panic unwinding from here would abort a
        // debug build of tokio ("worker thread panicking; aborting
        // process") and take a worker down in a release build. None is
        // expected (user callbacks and wakers are contained where they
        // run); if one comes all the same, the timer stops with a reason
        // that every pending timeout reports, instead of the process dying.
        let turned = catch_unwind(AssertUnwindSafe(|| {
            self.turn_loop(&common, &mut batch, reading, now)
        }));
        if let Err(panic) = turned {
            self.contain_panic(&common, &mut batch, &*panic);
        }
        // Delivered to the last (`deliver` drains it): the capacity goes
        // back for the next turn.
        if batch.is_empty() {
            BATCH.set(batch);
        }
    }
}

impl Driver {
    /// Turns until no wake came during the last turn, the first by the
    /// clock reading `reading`, tick `now`; the caller holds the turn
    /// (`turn_state` is not `IDLE`).
    fn turn_loop(&self, common: &Common, batch: &mut Vec<Fired>, mut reading: Instant, mut now: u64) {
        loop {
            if common.is_stopped() {
                // The alarm is gone; nothing may poll it any more.
                common.turn_state.store(IDLE, Ordering::SeqCst);
                return;
            }
            let at = turn_tick(common, now);
            let turned = driver::turn_once(common, &self.shards, &self.runner, batch, at);
            if common
                .turn_state
                .compare_exchange(TURNING, IDLE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                follow_pause(common, reading);
                driver::after_turn(common, turned);
                return;
            }
            // Asked to turn again while turning.
            common.turn_state.store(TURNING, Ordering::SeqCst);
            reading = common.now();
            now = common.clock.now_tick_of(reading);
        }
    }

    /// A turn panicked: see [`turn::contain_panic`].
    fn contain_panic(&self, common: &Common, batch: &mut Vec<Fired>, panic: &(dyn Any + Send)) {
        driver::contain_panic(common, &self.shards, &self.runner, batch, panic);
        common.turn_state.store(IDLE, Ordering::SeqCst);
    }
}

/// The tick a turn at the clock's tick `now` expires up to: `now` itself,
/// but on paused time, where the clock follows the runtime timer's
/// millisecond (see `Clock`), that timer's last millisecond, which it has
/// just processed (the alarm rings inside that processing), so that the
/// turn fires what `tokio::time` fires there and nothing more. A turn from
/// a task (an arm found its instant passed) runs outside it, and goes no
/// further than that timer has processed.
#[inline]
fn turn_tick(common: &Common, now: u64) -> u64 {
    if !common.clock.follows_tokio_ms() {
        return now;
    }
    let at = common.clock.turn_tick(now);
    if woken_from_task() {
        common.processed_through(at)
    } else {
        common.processed_below.fetch_max(at + 1, Ordering::AcqRel);
        at
    }
}

/// After a turn that began at the clock reading `reading`: a clock started
/// on the runtime timer's millisecond follows it for as long as the
/// runtime's time is paused, which its clock staying put through the turn
/// tells (it moves on after `tokio::time::resume`, and the timer's
/// deadlines keep the microsecond again from then on). One more clock
/// reading a turn, for such a clock only.
#[inline]
fn follow_pause(common: &Common, reading: Instant) {
    if common.clock.on_tokio_grid() {
        common.clock.set_follows_tokio_ms(common.now() == reading);
    }
}
