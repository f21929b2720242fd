//! The deadline of the deadline scope whose future this thread is
//! polling (`timer/deadline.rs` is the scope itself): every timeout made
//! reads it here, once, and nothing more when there is none, so that a
//! timeout needs nothing of the scope's module; and the deadline of a
//! scope that passed, while the scope polls its future a last time (its
//! expiry poll: see [`passed`]). A leaf of the engine: it imports only the
//! clock and the wheel's range.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::engine::clock::{Clock, Source};
use crate::wheel::raw::NEVER;

/// A scope's deadline: an instant of the clock it was read on, and the
/// tick of that instant on the timer's clock it was made on. A tick of
/// [`NEVER`] (an instant given past the wheel's range) never passes, and
/// clips nothing on any timer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Active {
    pub(crate) at: Instant,
    pub(crate) source: Source,
    /// The address of that timer's clock, only ever compared: the scope
    /// holds its timeout, and so the clock, while its deadline is in
    /// `ACTIVE` or in a `Deadline`.
    pub(crate) clock: usize,
    pub(crate) tick: u64,
}

impl Active {
    /// The time left by its own clock.
    pub(crate) fn remaining(self) -> Duration {
        self.at.saturating_duration_since(self.source.now())
    }

    /// The deadline in the ticks of `clock`: its own tick on its own timer's
    /// clock, the instant's on another timer's of the same clock, the time
    /// left from now on the other clock; [`NEVER`] on every clock for a
    /// deadline that never passes, and where the instant lies past the
    /// other timer's range (never its "far future", 30 years out, which
    /// would cut a longer call short).
    #[inline]
    pub(crate) fn tick_on(self, clock: &Clock) -> u64 {
        if clock as *const Clock as usize == self.clock || self.tick >= NEVER {
            self.tick
        } else if clock.source() == self.source {
            clock.tick_of(self.at)
        } else {
            clock.deadline_after(self.remaining(), 1).0
        }
    }

    /// What a timeout or a scope clipped to this deadline keeps of it.
    #[inline]
    pub(crate) fn clip(self) -> Clip {
        Clip {
            at: self.at,
            source: self.source,
        }
    }

    /// The earlier of the two.
    pub(crate) fn earlier(self, other: Active) -> Active {
        let first = if self.source == other.source {
            self.at <= other.at
        } else {
            self.remaining() <= other.remaining()
        };
        if first {
            self
        } else {
            other
        }
    }
}

/// The deadline a timeout or a scope was clipped to (the [`Active`] that
/// was the thread's when it was made, or the one carried into it), kept to
/// tell whether it has passed when a scope's own deadline does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clip {
    at: Instant,
    source: Source,
}

impl Clip {
    /// Whether this deadline has passed, given that `passed` has: it is
    /// not after it, by their clock; on the other clock (clipped in
    /// another scope than the one that passed), it has passed by its own.
    /// A timeout clipped to the scope whose deadline passed holds that very
    /// deadline: equal, on the same clock.
    pub(crate) fn passed_with(self, passed: Active) -> bool {
        if self.source == passed.source {
            self.at <= passed.at
        } else {
            self.at <= self.source.now()
        }
    }
}

thread_local! {
    /// The deadline of the innermost scope whose future this thread is
    /// polling: what every timeout made reads (once, and nothing more when
    /// it is `None`).
    static ACTIVE: Cell<Option<Active>> = const { Cell::new(None) };
    /// The deadline of the scope whose expiry poll this thread is in (see
    /// [`passed`]); read only by a clipped timeout found pending.
    static PASSED: Cell<Option<Active>> = const { Cell::new(None) };
}

/// The deadline of the scope being polled on this thread, if any.
#[inline]
pub(crate) fn active() -> Option<Active> {
    ACTIVE.try_with(Cell::get).ok().flatten()
}

/// A scope's future is about to be polled: its deadline, or the enclosing
/// one's where that comes first, is the thread's until
/// [`restore`] puts back what this returns.
pub(crate) fn enter(active: Active) -> Option<Active> {
    ACTIVE
        .try_with(|cell| {
            let prev = cell.get();
            cell.set(Some(prev.map_or(active, |outer| outer.earlier(active))));
            prev
        })
        .ok()
        .flatten()
}

/// The scope's poll is over: the thread's deadline is what it was before
/// [`enter`].
pub(crate) fn restore(prev: Option<Active>) {
    let _ = ACTIVE.try_with(|cell| cell.set(prev));
}

/// The deadline of a scope that passed, while that scope polls its future
/// a last time, before it ends (its expiry poll: `Scope::poll`): a timeout
/// clipped to it, found pending there because its own timer has not fired
/// it yet (another timer, another shard, another driver), ends then with
/// the scope's inherited `Elapsed` instead of being dropped with the
/// future. `None` outside an expiry poll.
#[inline]
pub(crate) fn passed() -> Option<Active> {
    PASSED.try_with(Cell::get).ok().flatten()
}

/// A scope's deadline passed and it polls its future a last time: `passed`
/// is the thread's [`passed`] deadline (or the one it had, if that is
/// later on the same clock: what was clipped to either has passed) until
/// [`restore_passed`] puts back what this returns.
pub(crate) fn enter_passed(passed: Active) -> Option<Active> {
    PASSED
        .try_with(|cell| {
            let prev = cell.get();
            let keep = match prev {
                Some(outer) if outer.source != passed.source || outer.at >= passed.at => outer,
                _ => passed,
            };
            cell.set(Some(keep));
            prev
        })
        .ok()
        .flatten()
}

/// The expiry poll is over: the thread's [`passed`] deadline is what it
/// was before [`enter_passed`].
pub(crate) fn restore_passed(prev: Option<Active>) {
    let _ = PASSED.try_with(|cell| cell.set(prev));
}
