//! Test-only hooks into the timer's racy moments, for the regression tests
//! in `regressions`. Compiled only for the crate's own unit tests, so
//! normal builds carry none of it.
//!
//! A race between two threads that a stress run hits once in thousands of
//! runs is made deterministic by running the other side of the race at the
//! exact point where it did harm.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use crate::engine::shard::{Common, Shared};

type ScheduleHook = Box<dyn Fn(&Arc<Shared>)>;
type Hook = Box<dyn Fn()>;

thread_local! {
    /// Runs in `Timer::try_schedule` on this thread, after the task went into
    /// the wheel and the shard's lock was released, before it returns.
    static AFTER_SCHEDULE_INSERT: RefCell<Option<ScheduleHook>> = const { RefCell::new(None) };
    /// Runs in `Timeout::reset` on this thread, after a registered timeout
    /// was re-filed and the shard's lock released, before the reset's last
    /// steps.
    static AFTER_RESET_UNLOCK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// The timers (by the address of their `Common`) whose next driver turns
/// panic.
static PANIC_IN_TURN: Mutex<Vec<usize>> = Mutex::new(Vec::new());

pub(crate) fn after_schedule_insert(shared: &Arc<Shared>) {
    AFTER_SCHEDULE_INSERT.with(|hook| {
        if let Some(hook) = hook.borrow().as_ref() {
            hook(shared);
        }
    });
}

pub(crate) fn after_reset_unlock() {
    AFTER_RESET_UNLOCK.with(|hook| {
        if let Some(hook) = hook.borrow().as_ref() {
            hook();
        }
    });
}

/// Sets (or with `None` clears) this thread's hook of `after_reset_unlock`.
pub(crate) fn on_reset_unlock(hook: Option<Hook>) {
    AFTER_RESET_UNLOCK.with(|h| *h.borrow_mut() = hook);
}

pub(crate) fn in_turn(common: &Common) {
    let id = common as *const Common as usize;
    let panics = PANIC_IN_TURN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&id);
    if panics {
        panic!("injected panic in a driver turn");
    }
}

/// Sets (or with `None` clears) this thread's hook of `after_schedule_insert`.
pub(crate) fn on_schedule_insert(hook: Option<ScheduleHook>) {
    AFTER_SCHEDULE_INSERT.with(|h| *h.borrow_mut() = hook);
}

/// Makes the driver turns of the timer of `common` panic, or stop doing so.
pub(crate) fn panic_in_turns(common: &Common, panic: bool) {
    let id = common as *const Common as usize;
    let mut ids = PANIC_IN_TURN.lock().unwrap_or_else(|p| p.into_inner());
    ids.retain(|&t| t != id);
    if panic {
        ids.push(id);
    }
}
