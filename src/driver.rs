//! The driver: it reads the clock, turns the wheels and wakes what expired,
//! outside the locks.
//!
//! It is no task. Its alarm is a runtime `Sleep` (in [`Common::alarm`])
//! polled with the driver's own waker, so the runtime's timer calls the
//! driver while it processes its own timers, and the wakes the driver makes
//! there are batched by the runtime exactly like those of `tokio::time`: no
//! worker is unparked per wake. After each turn the driver re-arms the
//! alarm for the next tick with work; with nothing pending it leaves it
//! disarmed and costs nothing. An insert earlier than the armed tick arms
//! it earlier itself (see [`Common::note_deadline`]). A second, spare
//! runtime timer one millisecond after the alarm keeps that re-arm from
//! unparking the runtime's driver (see [`Common::arm`]).
//!
//! Due `schedule` callbacks go to the timer's
//! [`TaskExecutor`](crate::TaskExecutor) (see `executor.rs`): spawned as
//! tasks by default, so that no user code runs here unless the user asked
//! for it ([`TaskExecutor::driver`](crate::TaskExecutor::driver)).
//!
//! A small guard task does nothing but wait: the runtime drops it when it
//! shuts down, and the guard then stops the timer so that no timeout hangs.
//!
//! # Why no wake-up is lost
//!
//! Turns never overlap: [`Common::turn_state`] lets one caller turn and
//! makes any wake that comes meanwhile turn once more. Before a turn the
//! driver sets `planned` to `u64::MAX`, so every insert from then on lowers
//! it. After turning, it lowers `planned` to the earliest work it found
//! (`fetch_min`, so an insert it missed is kept), arms the alarm for the
//! result, and marks itself idle; then it arms again if an insert lowered
//! `planned` after that (such an insert saw the turn and left the arming to
//! it). An alarm whose tick has already passed completes at once and turns
//! again.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::error::StopReason;
use crate::executor::{TaskExecutor, TaskRunner};
use crate::live::LiveTimer;
use crate::shard::{
    far_future, lock, panic_message, rung_while_arming, stop, Alarm, Common, Shard, Shared, AGAIN,
    IDLE, TURNING,
};
use crate::turn::{self, Fired, BATCH};

/// Driver lag past which a catch-up is reported with `warn!` rather than
/// `debug!`.
const LAG_WARN: Duration = Duration::from_millis(100);

/// Starts the driver of `shared` on `handle`: creates its alarm and spawns
/// its guard task. Due callbacks go to `executor`. The runtime must have a
/// time driver (checked by [`Builder::build`](crate::Builder::build)).
pub(crate) fn start(handle: &Handle, shared: &Shared, executor: TaskExecutor) {
    let (common, shards) = shared.driver_parts();
    let (sleep, spare) = {
        let _entered = handle.enter();
        let never =
            tokio::time::Instant::from_std(far_future(tokio::time::Instant::now().into_std()));
        (
            Box::pin(tokio::time::sleep_until(never)),
            Box::pin(tokio::time::sleep_until(never)),
        )
    };
    let driver = Arc::new(Driver {
        common: Arc::downgrade(&common),
        shards: shards.clone(),
        lag_warn_ticks: (LAG_WARN.as_micros() as u64) / common.tick_us,
        runner: executor.bind(handle.clone()),
    });
    *lock(&common.alarm) = Some(Alarm {
        sleep,
        spare,
        waker: Waker::from(driver),
        handle: handle.clone(),
        armed: u64::MAX,
        _live: LiveTimer::new(handle.id()),
    });
    // The guard exists from here on, not from the task's first poll: a
    // runtime may shut down before it ever polls the task.
    let guard = StopOnDrop(Arc::downgrade(&common), shards);
    handle.spawn(wait(guard, common.ended.clone()));
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
    lag_warn_ticks: u64,
    /// Where due callbacks run.
    runner: TaskRunner,
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
        let mut batch = Vec::with_capacity(BATCH);
        // This runs inside the runtime's timer processing, on a worker and
        // outside any task: a panic unwinding from here would abort a
        // debug build of tokio ("worker thread panicking; aborting
        // process") and take a worker down in a release build. None is
        // expected (user callbacks and wakers are contained where they
        // run); if one comes all the same, the timer stops with a reason
        // that every pending timeout reports, instead of the process dying.
        let turned = catch_unwind(AssertUnwindSafe(|| self.turn_loop(&common, &mut batch)));
        if let Err(panic) = turned {
            self.contain_panic(&common, &mut batch, &*panic);
        }
    }
}

impl Driver {
    /// Turns until no wake came during the last turn; the caller holds the
    /// turn (`turn_state` is not `IDLE`).
    fn turn_loop(&self, common: &Common, batch: &mut Vec<Fired>) {
        loop {
            if common.is_stopped() {
                // The alarm is gone; nothing may poll it any more.
                common.turn_state.store(IDLE, Ordering::SeqCst);
                return;
            }
            let target = self.turn_once(common, batch);
            if common
                .turn_state
                .compare_exchange(TURNING, IDLE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // An insert that saw the turn left the arming to us.
                let planned = common.planned.load(Ordering::SeqCst);
                if planned < target {
                    common.arm(planned, false);
                }
                return;
            }
            // Asked to turn again while turning.
            common.turn_state.store(TURNING, Ordering::SeqCst);
        }
    }

    /// A turn panicked: see [`turn::contain_panic`].
    fn contain_panic(&self, common: &Common, batch: &mut Vec<Fired>, panic: &(dyn Any + Send)) {
        turn::contain_panic(common, &self.shards, &self.runner, batch, panic);
        common.turn_state.store(IDLE, Ordering::SeqCst);
    }

    /// One turn: expires what is due, re-arms the alarm. Returns the tick it
    /// armed for.
    fn turn_once(&self, common: &Common, batch: &mut Vec<Fired>) -> u64 {
        #[cfg(test)]
        crate::hooks::in_turn(common);
        let started = std::time::Instant::now();
        let now = common.now_tick();
        let armed = {
            let mut alarm = lock(&common.alarm);
            alarm
                .as_mut()
                .map_or(u64::MAX, |a| std::mem::replace(&mut a.armed, u64::MAX))
        };
        common.planned.store(u64::MAX, Ordering::SeqCst);
        common.wakeups.fetch_add(1, Ordering::Relaxed);
        if armed != u64::MAX && now > armed {
            let late_ticks = (now - armed) / common.tick_us;
            common.late_ticks.fetch_add(late_ticks, Ordering::Relaxed);
            if late_ticks > self.lag_warn_ticks {
                tracing::warn!(late_ticks, "hashwheel: driver ran late, catching up");
            } else if late_ticks > 1 {
                tracing::debug!(late_ticks, "hashwheel: driver ran late, catching up");
            }
        }
        let (next, expired) = turn::turn(common, &self.shards, &self.runner, now, batch);
        let target = common.planned.fetch_min(next, Ordering::SeqCst).min(next);
        tracing::trace!(now, next = target, expired, "hashwheel: turned the wheels");
        // The alarm rings at the next deadline itself, under load too: the
        // runtime's timer rounds it up to its millisecond (and a tick over
        // 1 ms batches on its own grid, see `Common::alarm_instant`).
        // Batching under load (after a turn that expired 32 timeouts or
        // more, the next no sooner than half a tick later) saved 10-20% of
        // the CPU on W9 but skipped a runtime millisecond whenever a turn
        // ran more than half a tick late, which put the p99 lateness of W4
        // and W9 0.2-1 ms behind tokio's. Without it p50 and p99 are well
        // below tokio's. The re-arm from inside the runtime's timer
        // processing used to unpark the runtime's driver on every turn (an
        // eventfd write); the alarm's spare timer prevents that (see
        // `Common::arm`). A tick over 1 ms is the knob that trades lateness
        // for fewer turns.
        common.arm(target, true);
        common.note_turn(started);
        target
    }
}

/// Stops the timer when dropped, unless it already ended.
struct StopOnDrop(Weak<Common>, Box<[Weak<Shard>]>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(common) = self.0.upgrade() else {
            let why = "every timer handle and timeout dropped";
            tracing::debug!(why, "hashwheel: driver ended");
            return;
        };
        if common.is_stopped() {
            tracing::debug!(why = "timer stopped", "hashwheel: driver ended");
        } else {
            tracing::debug!("hashwheel: driver task ended; stopping the timer");
            // The runtime drops this while it shuts down: a panic must not
            // unwind into it (a panic in a drop during unwinding aborts).
            let stopped = catch_unwind(AssertUnwindSafe(|| {
                stop(
                    &common,
                    self.1.iter().filter_map(Weak::upgrade),
                    StopReason::RuntimeShutDown,
                );
            }));
            if let Err(panic) = stopped {
                tracing::error!(
                    panic = panic_message(&*panic),
                    "hashwheel: stopping the timer at runtime shutdown panicked"
                );
            }
        }
    }
}
