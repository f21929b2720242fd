//! The alarm of a timer driven by a runtime: a runtime timer (a tokio
//! `Sleep`) polled with the driver's waker, so the runtime's own timer calls
//! the driver while it processes its timers, and the wakes the driver makes
//! there are batched with the runtime's (see `driver.rs`).
//!
//! Two spare runtime timers, one and two runtime milliseconds (or ticks,
//! where the tick is coarser) after the alarm, keep the driver's re-arm
//! from unparking the runtime (see [`RuntimeAlarm::arm`]).

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

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
    /// Two more runtime timers, registered one and two runtime milliseconds
    /// (or ticks, see [`spare_gap`]) after the alarm whenever the driver
    /// re-arms it after a turn, and never polled: they wake nothing. They
    /// only keep the runtime's next wake-up at or before the driver's next
    /// re-arm (see [`RuntimeAlarm::arm`]).
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
    /// Counts the timer among its runtime's live ones while the alarm
    /// exists: until the timer stops or its last handle goes.
    _live: LiveTimer,
}

/// How far apart the alarm and its spares are registered, at least: the
/// runtime's timer resolution (see [`Armed::spares`]). A coarser tick
/// spaces them by the tick, the least time to the next re-arm on its grid
/// (see [`spare_gap`]).
const SPARE_AFTER: Duration = Duration::from_millis(1);
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
    /// `Sleep`s that are never polled, to one and two runtime milliseconds
    /// (or ticks, where the tick is coarser: [`spare_gap`]) after the
    /// alarm: the runtime computes its next wake-up before it
    /// calls the alarm's waker, and a registration earlier than that
    /// wake-up unparks its driver (an eventfd write, on every turn without
    /// the spares). The second spare is for a turn that runs a whole
    /// millisecond late, which tokio's rounding makes common (it parks for
    /// whole milliseconds counted from the start of the current one, so a
    /// park begun late in a millisecond ends late in the alarm's, and a
    /// little scheduling delay carries the turn into the next): the first
    /// spare has then rung with the alarm, and without the second the turn
    /// unparked twice (the alarm, then the spare; 7-18% of the turns of a
    /// deadline a millisecond on one worker, `tests/unpark.rs`). A turn two
    /// milliseconds late still does. A re-arm with nothing pending replaces
    /// the spares with fresh ones, never registered, so that no runtime
    /// timer of ours is left: an idle runtime wakes for nothing, and a
    /// paused one does not auto-advance its clock to a spare (tokio leaves
    /// it where it is).
    pub(crate) fn arm(&self, clock: &Clock, tick: u64, force: bool) -> bool {
        let (set, wake) = {
            let mut guard = lock(&self.armed);
            let Some(alarm) = guard.as_mut() else {
                return false; // stopped: the runtime may be shutting down
            };
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
            let instant = alarm_instant(clock, tick);
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
                // never turn the wheels nor fire anything early.
                let gap = spare_gap(clock);
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
    /// its millisecond (and a tick over 1 ms batches on its own grid, see
    /// [`alarm_instant`]).
    pub(crate) fn rearm(&self, clock: &Clock, _now: u64, target: u64) -> Rearmed {
        Rearmed {
            set: self.arm(clock, target, true),
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

/// How far after the alarm its spares go, one after the other: the
/// earliest the next re-arm can come, a runtime millisecond, or a tick
/// where the tick is coarser (the alarm then rings on the tick's grid, see
/// [`alarm_instant`]). A spare closer than the next re-arm would wake the
/// runtime for nothing: with a spare a millisecond out, a timer of a 2 ms
/// tick woke its runtime every millisecond, as many parks as a 1 ms tick.
fn spare_gap(clock: &Clock) -> Duration {
    SPARE_AFTER.max(Duration::from_micros(clock.tick_us))
}

/// An instant the runtime's timer never reaches: the deadline of a `Sleep`
/// that is made but not registered.
fn never(clock: &Clock) -> tokio::time::Instant {
    tokio::time::Instant::from_std(far_future(clock.now()))
}

/// The instant the alarm rings for work due at `tick`: that very instant
/// for a tick of 1 ms (the runtime's own timer rounds it up to its
/// millisecond, as for a `tokio::time::Sleep` at the same deadline), else
/// the next multiple of the tick since the start, so that a coarser tick
/// batches expiries (at most one turn per tick).
fn alarm_instant(clock: &Clock, tick: u64) -> Instant {
    if clock.tick_us <= 1_000 {
        clock.instant_of(tick)
    } else {
        let tick_us = clock.tick_us;
        clock.instant_of(tick.div_ceil(tick_us).saturating_mul(tick_us))
    }
}
