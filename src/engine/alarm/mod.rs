// Floor 2, the engine (docs/ARCHITECTURE.md): the alarms import the
// clock, the process and the wheel, nothing above the engine.
//! The driver's alarm: what makes the driver turn the wheels at the next
//! tick with work, and nothing else. One interface, one implementation per
//! driver, each in a file of its own:
//!
//! - `runtime.rs`, for a timer driven by a runtime (`driver/runtime.rs`): a ring
//!   of three runtime timers (tokio `Sleep`s) polled with the driver's
//!   waker, so the runtime's own timer processing turns the wheels; the
//!   two after the next keep the driver's re-arm from unparking the
//!   runtime while it has work every turn of its grid. A coarser tick
//!   batches on the runtime's milliseconds, which are all its timer rings
//!   on. Arming it is a `Sleep::reset` and a poll under a lock; the re-arm
//!   after a turn of a timer busy every turn of its grid costs no syscall
//!   and re-registers one runtime timer; after a turn of sparse work it
//!   sets the next instant alone (an eventfd write at most, where the two
//!   after it woke the runtime at the next two milliseconds for nothing).
//! - `thread.rs`, for a thread-driven timer (`driver/thread.rs`): a
//!   timerfd (a `Condvar` where there is none) the driver's thread sleeps
//!   on. Arming it sooner is a `timerfd_settime` under a lock; while every
//!   tick has work the re-arm after a turn sets nothing.
//!
//! The shard state ([`Common::arm`](crate::engine::shard::Common::arm)) and the
//! turn both drivers share (`driver/mod.rs`) arm it through [`Alarm`] without
//! knowing which it is: the `cfg`s of the drivers live here, not there. The
//! alarm also makes the timer's clock ([`Alarm::clock`]): tokio's for the
//! runtime's timer (on paused time, on the runtime timer's millisecond),
//! std's for the thread's.
//!
//! Below the shard state: it knows ticks and instants, not wheels.

#[cfg(test)]
mod model;

use crate::engine::clock::Clock;

cfg_tokio! {
    pub(crate) mod runtime;

    use runtime::RuntimeAlarm;
}

cfg_thread! {
    pub(crate) mod thread;

    use std::sync::Arc;
    use thread::ThreadAlarm;
}

/// A match over the drivers' alarms, `$alarm` bound to the one there is:
/// the runtime's arm, then the thread's, each under its gate, written here
/// once.
macro_rules! by_driver {
    ($alarm:expr, $a:ident => $runtime:expr, $thread:expr) => {
        #[allow(unused_variables)]
        match $alarm {
            #[cfg(feature = "tokio")]
            Alarm::Runtime($a) => $runtime,
            #[cfg(feature = "thread")]
            Alarm::Thread($a) => $thread,
        }
    };
}

/// A timer's alarm, by driver.
pub(crate) enum Alarm {
    /// A runtime timer (see `runtime.rs`).
    #[cfg(feature = "tokio")]
    Runtime(RuntimeAlarm),
    /// The driver thread's alarm (see `alarm/thread.rs`).
    #[cfg(feature = "thread")]
    Thread(Arc<ThreadAlarm>),
}

/// What the driver's re-arm after a turn did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rearmed {
    /// Whether it set the alarm (see [`Stats::alarm_arms`](crate::Stats::alarm_arms)).
    pub(crate) set: bool,
    /// The soonest tick the driver turns again: an insert that the turn
    /// left to arm is armed no sooner (the thread driver turns at most once
    /// per tick of its grid; the runtime's alarm keeps its own floor, see
    /// `runtime::alarm_tick`).
    pub(crate) soonest: u64,
}

impl Alarm {
    /// A new clock for a timer with this alarm, of tick `tick_us`, started
    /// now: on the runtime timer's millisecond where the runtime's time is
    /// paused and the tick under 2 ms (see [`runtime::clock`]); for a
    /// runtime's timer, called inside the runtime's context.
    pub(crate) fn clock(&self, tick_us: u64) -> Clock {
        by_driver!(
            self,
            a => runtime::clock(tick_us),
            Clock::new(crate::engine::clock::Source::Std, tick_us)
        )
    }

    /// Whether this is a driver thread's alarm: the wheels turn on a thread
    /// of their own, beside the threads that insert.
    pub(crate) fn is_thread(&self) -> bool {
        by_driver!(self, a => false, true)
    }

    /// The runtime timer, for a timer driven by a runtime.
    #[cfg(feature = "tokio")]
    pub(crate) fn as_runtime(&self) -> Option<&RuntimeAlarm> {
        by_driver!(self, a => Some(a), None)
    }

    /// Arms the alarm for `tick` if it is armed for later (a new earliest
    /// deadline). Returns whether it set the alarm.
    ///
    /// A tick already past turns the wheels soon: on the runtime from a
    /// task, so that no expiry runs inside the caller's own `sleep`,
    /// `schedule` or poll; on the thread, by waking it.
    pub(crate) fn arm(&self, clock: &Clock, tick: u64) -> bool {
        by_driver!(self, a => a.arm(clock, tick), a.arm(tick, clock.instant_of(tick)))
    }

    /// The driver's re-arm after a turn at `now`, for the earliest tick
    /// with work, `target` (`u64::MAX`: nothing pending).
    pub(crate) fn rearm(&self, clock: &Clock, now: u64, target: u64) -> Rearmed {
        by_driver!(
            self,
            a => a.rearm(clock, now, target),
            a.rearm_after_turn(clock, now, target)
        )
    }

    /// Takes the tick the alarm was armed for, leaving it disarmed (the
    /// driver, as it starts a turn: inserts during the turn leave the
    /// arming to it). `u64::MAX` if it was disarmed.
    pub(crate) fn take_armed(&self) -> u64 {
        by_driver!(self, a => a.take_armed(), a.take_armed())
    }

    /// Disarms the alarm for good and ends the driver (its guard task, or
    /// its thread): the timer stopped, or every handle of it is gone.
    pub(crate) fn shut(&self) {
        by_driver!(self, a => a.shut(), a.shut())
    }
}
