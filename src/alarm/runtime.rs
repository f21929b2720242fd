//! The alarm of a timer driven by a runtime: a runtime timer (a tokio
//! `Sleep`) polled with the driver's waker, so the runtime's own timer calls
//! the driver while it processes its timers, and the wakes the driver makes
//! there are batched with the runtime's (see `driver.rs`).
//!
//! Two spare runtime timers, one and two turns of the driver's grid after
//! the alarm, keep the driver's re-arm from unparking the runtime (see
//! [`RuntimeAlarm::arm`]).
//!
//! # A tick over a millisecond
//!
//! The runtime's timer rings on whole milliseconds counted from its own
//! start, rounding each instant up, and nothing tells us where that start
//! lies within our timer's millisecond. A coarser tick batches on the
//! runtime's milliseconds, not on multiples of the tick: the driver turns
//! at most once per [`grid_us`] (the tick's whole milliseconds), and a
//! timeout fires at most that late, from any start and for any tick (see
//! [`alarm_tick`]). Rounding multiples of the tick since our start up to
//! the runtime's millisecond made a ring up to a tick and a millisecond
//! late (a 1.5 ms tick: 1.9 ms; a 2 ms tick on a timer built half a
//! millisecond into its runtime: 2.9 ms).

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Waker};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Sleep;

use super::Rearmed;
use crate::clock::{far_future, Clock};
use crate::live::LiveTimer;
use crate::wheel::raw::NEVER;

/// The alarm of a timer driven by a runtime.
pub(crate) struct RuntimeAlarm {
    /// The runtime timers, from the driver's start until the timer stops
    /// (or its last handle goes).
    armed: Mutex<Option<Armed>>,
    /// Ends the driver's guard task once the timer is stopped or gone.
    ended: Arc<Notify>,
}

/// The runtime timers of a started driver, and the waker they call.
struct Armed {
    sleep: Pin<Box<Sleep>>,
    /// Two more runtime timers, registered one and two turns of the grid
    /// (see [`grid_us`]) after the alarm whenever the driver re-arms it
    /// after a turn, and never polled: they wake nothing. They only keep
    /// the runtime's next wake-up at or before the driver's next re-arm
    /// (see [`RuntimeAlarm::arm`]).
    spares: [Pin<Box<Sleep>>; SPARES],
    /// Whether the spares are registered with the runtime's timer (reset
    /// since they were last replaced).
    spare_set: bool,
    /// Turns the wheels (see `driver`).
    waker: Waker,
    /// The runtime the alarm rings on.
    handle: Handle,
    /// The tick the alarm is armed for; `u64::MAX` when disarmed.
    armed: u64,
    /// The clock's reading (`now`) at the driver's last re-arm: work due
    /// after it rings no sooner than a turn of the grid after that turn
    /// (see [`alarm_tick`]).
    turned: u64,
    /// Counts the timer among its runtime's live ones while the alarm
    /// exists: until the timer stops or its last handle goes.
    _live: LiveTimer,
}

/// The runtime timer's resolution, in the clock's microseconds: it rings
/// on whole milliseconds since the runtime's start.
const RUNTIME_MS_US: u64 = 1_000;
/// The spares of an alarm: one for a turn on time, a second for a turn a
/// whole runtime millisecond late (see [`RuntimeAlarm::arm`]).
const SPARES: usize = 2;

thread_local! {
    /// Set while this thread resets or polls an alarm under its lock.
    static ARMING: Cell<bool> = const { Cell::new(false) };
    /// Whether the alarm rang while this thread was arming it.
    static RUNG: Cell<bool> = const { Cell::new(false) };
}

/// Runs `arm` (a reset and poll of the alarm, under its lock); returns
/// whether the alarm is due, by `arm`'s result or because the runtime woke
/// it from inside (a deadline already past).
pub(crate) fn arming(arm: impl FnOnce() -> bool) -> bool {
    /// Clears both flags however `arm` ends: a panic in it (tokio's `Sleep`
    /// panics when polled as its runtime shuts down) must not leave this
    /// thread taking every later wake of a driver for its own arming.
    struct Arming;
    impl Drop for Arming {
        fn drop(&mut self) {
            ARMING.with(|a| a.set(false));
            RUNG.with(|r| r.set(false));
        }
    }
    ARMING.with(|a| a.set(true));
    let arming = Arming;
    let ready = arm();
    ARMING.with(|a| a.set(false));
    let rung = RUNG.with(|r| r.replace(false));
    std::mem::forget(arming);
    rung || ready
}

/// Called by the driver's waker: if this thread is arming the alarm (and
/// holds its lock), records the wake for [`arming`] and returns `true`; the
/// driver must then not turn here.
pub(crate) fn rung_while_arming() -> bool {
    ARMING.with(|a| {
        if a.get() {
            RUNG.with(|r| r.set(true));
        }
        a.get()
    })
}

/// Locks `mutex`, ignoring poisoning: no user code runs under these locks.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RuntimeAlarm {
    /// An alarm not started yet: arming it does nothing.
    pub(crate) fn new() -> RuntimeAlarm {
        RuntimeAlarm {
            armed: Mutex::new(None),
            ended: Arc::new(Notify::new()),
        }
    }

    /// Starts the alarm on `handle`'s runtime, disarmed: from now on it
    /// calls `waker` when it rings.
    pub(crate) fn start(&self, handle: &Handle, waker: Waker) {
        let (sleep, spares) = {
            let _entered = handle.enter();
            let never =
                tokio::time::Instant::from_std(far_future(tokio::time::Instant::now().into_std()));
            (
                Box::pin(tokio::time::sleep_until(never)),
                std::array::from_fn(|_| Box::pin(tokio::time::sleep_until(never))),
            )
        };
        *lock(&self.armed) = Some(Armed {
            sleep,
            spares,
            spare_set: false,
            waker,
            handle: handle.clone(),
            armed: u64::MAX,
            turned: 0,
            _live: LiveTimer::new(handle.id()),
        });
    }

    /// Notified once the timer is stopped or gone: the driver's guard task
    /// then ends.
    pub(crate) fn ended(&self) -> Arc<Notify> {
        self.ended.clone()
    }

    /// The driver's waker, while the alarm is started.
    #[cfg(test)]
    pub(crate) fn waker(&self) -> Option<Waker> {
        lock(&self.armed).as_ref().map(|armed| armed.waker.clone())
    }

    /// See [`Alarm::arm`](super::Alarm::arm); `force` is the driver's
    /// re-arm after a turn.
    ///
    /// The alarm is a runtime `Sleep` polled with the driver's waker, so
    /// the runtime's own timer calls the driver while it processes its
    /// timers, and the wakes the driver makes are batched with the
    /// runtime's.
    ///
    /// The driver's re-arm (`force`) also moves the alarm's spares, two
    /// `Sleep`s that are never polled, to one and two turns of the grid
    /// ([`grid_us`]: a runtime millisecond, or the tick's whole
    /// milliseconds) after the alarm: the runtime computes its next wake-up
    /// before it calls the alarm's waker, and a registration earlier than
    /// that wake-up unparks its driver (an eventfd write, on every turn
    /// without the spares). The second spare is for a turn that runs a
    /// whole millisecond late, which tokio's rounding makes common (it
    /// parks for whole milliseconds counted from the start of the current
    /// one, so a park begun late in a millisecond ends late in the alarm's,
    /// and a little scheduling delay carries the turn into the next): the
    /// first spare has then rung with the alarm, and without the second the
    /// turn unparked twice (the alarm, then the spare; 7-18% of the turns
    /// of a deadline a millisecond on one worker, `tests/unpark.rs`). A
    /// turn two milliseconds late still does. A re-arm with nothing pending
    /// replaces the spares with fresh ones, never registered, so that no
    /// runtime timer of ours is left: an idle runtime wakes for nothing,
    /// and a paused one does not auto-advance its clock to a spare (tokio
    /// leaves it where it is).
    pub(crate) fn arm(&self, clock: &Clock, tick: u64, force: bool) -> bool {
        self.set(clock, tick, force, None)
    }

    /// [`arm`](Self::arm), and for the driver's re-arm after a turn at
    /// `turned` (`Some`), notes that turn: the next rings no sooner than a
    /// turn of the grid after it.
    fn set(&self, clock: &Clock, tick: u64, force: bool, turned: Option<u64>) -> bool {
        let (set, wake) = {
            let mut guard = lock(&self.armed);
            let Some(alarm) = guard.as_mut() else {
                return false; // stopped: the runtime may be shutting down
            };
            if let Some(now) = turned {
                alarm.turned = now;
            }
            if !force && tick >= alarm.armed {
                return false;
            }
            alarm.armed = tick;
            if tick >= NEVER {
                // "Never" (or nothing pending) rings at no instant: an
                // alarm at a far but fixed instant would ring, past it,
                // on every turn.
                if force && alarm.spare_set {
                    // Nothing pending after a turn: no runtime timer of
                    // ours may stay registered, or a paused runtime that
                    // idles would auto-advance its clock to it (issue 26,
                    // found 1). A later reset only moves a registration
                    // (an atomic store; the runtime still wakes at the old
                    // instant): a fresh spare, never registered, replaces
                    // it, which removes the old one from the runtime's
                    // timer. Once per stretch of work, not per turn.
                    let _entered = alarm.handle.enter();
                    for spare in &mut alarm.spares {
                        spare.set(tokio::time::sleep_until(never(clock)));
                    }
                    alarm.spare_set = false;
                }
                return false;
            }
            let instant = clock.instant_of(alarm_tick(clock.tick_us, tick, alarm.turned));
            let Armed { sleep, waker, .. } = alarm;
            // An insert already due (registered after its deadline) turns
            // now rather than at the runtime's next millisecond. The driver's
            // own re-arm goes through the runtime's timer even when work
            // came due during the turn: it then rings at the runtime's next
            // millisecond with whatever else is due, as tokio's own timers
            // do, rather than turning again and again for each deadline.
            let ready = !force && instant <= clock.now()
                || arming(|| {
                    // The runtime wakes the alarm from inside `reset` when the
                    // instant has passed; `arming` records that wake.
                    sleep
                        .as_mut()
                        .reset(tokio::time::Instant::from_std(instant));
                    // Outside the task's budget: a budget-limited poll would
                    // wake the driver instead of registering.
                    let mut poll =
                        tokio::task::unconstrained(poll_fn(|cx| sleep.as_mut().poll(cx)));
                    Pin::new(&mut poll)
                        .poll(&mut Context::from_waker(waker))
                        .is_ready()
                });
            if force {
                // The driver re-arms from inside the runtime's timer
                // processing, after the runtime computed its next wake-up
                // without the alarm (which just rang): a re-arm earlier
                // than that wake-up unparks the runtime's driver, an
                // eventfd write per turn (about 900 a second on W9). The
                // spares, registered at the earliest instants the next
                // re-arm can have (one runtime millisecond after this one,
                // as the next turn finds nothing due before the alarm's
                // millisecond is over; two when that turn runs a
                // millisecond late), keep that wake-up at or before it.
                // Moving them later is an atomic store each (no lock, no
                // unpark); they wake nothing when they ring, so they can
                // never turn the wheels nor fire anything early. A turn of
                // the grid after the alarm's instant is the runtime's
                // millisecond a turn of the grid after the alarm's, which
                // is where the next re-arm rings at the soonest.
                let gap = Duration::from_micros(grid_us(clock.tick_us));
                let mut at = instant;
                for spare in &mut alarm.spares {
                    at += gap;
                    spare.as_mut().reset(tokio::time::Instant::from_std(at));
                }
                alarm.spare_set = true;
            }
            if ready {
                alarm.armed = u64::MAX;
            }
            (
                true,
                ready.then(|| (alarm.waker.clone(), alarm.handle.clone())),
            )
        };
        match wake {
            Some((waker, _)) if force => waker.wake(),
            Some((waker, handle)) => drop(handle.spawn(async move { waker.wake() })),
            None => {}
        }
        set
    }

    /// See [`Alarm::rearm`](super::Alarm::rearm): the alarm rings at the
    /// next deadline itself, at once; the runtime's timer rounds it up to
    /// its millisecond (and a tick over 1 ms batches on the runtime's
    /// milliseconds, see [`alarm_tick`]).
    pub(crate) fn rearm(&self, clock: &Clock, now: u64, target: u64) -> Rearmed {
        Rearmed {
            set: self.set(clock, target, true, Some(now)),
            soonest: 0,
        }
    }

    /// See [`Alarm::take_armed`](super::Alarm::take_armed).
    pub(crate) fn take_armed(&self) -> u64 {
        lock(&self.armed)
            .as_mut()
            .map_or(u64::MAX, |a| std::mem::replace(&mut a.armed, u64::MAX))
    }

    /// Disarms for good (the runtime may be shutting down: nothing may poll
    /// the alarm from now on), and ends the driver's guard task.
    pub(crate) fn shut(&self) {
        let alarm = lock(&self.armed).take();
        drop(alarm);
        self.ended.notify_one();
    }
}

/// An instant the runtime's timer never reaches: the deadline of a `Sleep`
/// that is made but not registered.
fn never(clock: &Clock) -> tokio::time::Instant {
    tokio::time::Instant::from_std(far_future(clock.now()))
}

/// The driver's grid on a runtime, in microseconds: the whole
/// milliseconds of the tick (a 1 ms tick, and any under 2 ms: one; 2 and
/// 2.5 ms: two). The runtime's timer rings only on its milliseconds, so
/// turns a tick apart could not keep every timeout within a tick of its
/// deadline: the longest gap between two rings must fit in the tick.
pub(crate) fn grid_us(tick_us: u64) -> u64 {
    (tick_us / RUNTIME_MS_US).max(1) * RUNTIME_MS_US
}

/// The tick whose instant the alarm is set to for work due at `tick`, when
/// the driver last turned at `turned` (microseconds since the timer's
/// start). The runtime's timer rounds that instant up to its next
/// millisecond, `B`, and the driver turns there.
///
/// With a grid of a millisecond (a tick under 2 ms): `tick` itself, so a
/// timeout fires when a `tokio::time::Sleep` of its deadline would.
///
/// With a coarser grid `G` (see [`grid_us`]), the latest of three:
///
/// - `tick` itself: never early.
/// - the end of `tick`'s cell of the grid since the timer's start, less a
///   millisecond, plus a microsecond: the runtime rounds that up to its
///   last millisecond in the cell, so that work due anywhere in one cell
///   rings together (on a paused clock started with the runtime: on the
///   cell's end exactly).
/// - for work due after the last turn, `turned` plus `G`, less a
///   millisecond, plus a microsecond: the runtime rounds that up to its
///   millisecond a whole grid after the one the last turn rang on, so
///   that the driver turns at most once per grid, on the runtime's
///   milliseconds, wherever their start lies.
///
/// Each term's ring `B` comes less than a millisecond after its instant,
/// so within `G` of the deadline (rounded up to the microsecond, as every
/// deadline here): the first term, within a millisecond; the second,
/// within the cell; the third, within `G` of the last turn, which the
/// deadline is after. A ring a tick late at most, never early, from any
/// offset between the two clocks (`tests/paused_time.rs`; the model in
/// `alarm/model.rs` runs every offset and grid).
pub(crate) fn alarm_tick(tick_us: u64, tick: u64, turned: u64) -> u64 {
    let grid = grid_us(tick_us);
    if grid <= RUNTIME_MS_US {
        return tick;
    }
    let lead = RUNTIME_MS_US - 1;
    let cell_end = tick.div_ceil(grid).saturating_mul(grid);
    let mut at = tick.max(cell_end.saturating_sub(lead));
    if tick > turned {
        at = at.max(turned.saturating_add(grid - lead));
    }
    at
}
