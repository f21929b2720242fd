//! What both drivers share: one turn of the wheels, the delivery of what
//! it expired (wakers woken and callbacks handed on, outside every lock),
//! and the containment of a panic in a turn.
//!
//! The tokio driver (`driver.rs`) calls [`turn`] from its alarm's waker,
//! inside the runtime's own timer processing; the thread driver
//! (`thread_driver.rs`) from its own thread. Neither holds a lock here.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};
use std::task::Waker;

use crate::error::StopReason;
use crate::executor::TaskRunner;
use crate::shard::{panic_message, stop, wake, Common, Shard, TaskInner};
use crate::wheel::raw::Popped;

/// Expired entries taken out under one lock, at most: bounds the time a
/// shard's lock is held, as tokio's `WakeList` does.
pub(crate) const BATCH: usize = 32;

/// What an expired entry leaves to do once the lock is released.
pub(crate) enum Fired {
    /// A timeout's waker, or an interval's (its entry re-armed already).
    Waker(Waker),
    Task(Arc<TaskInner>),
}

/// Expires everything due at or before `now` on every live shard, in
/// batches, waking (and handing callbacks to `runner`) outside the lock.
/// Returns the earliest tick with work left.
pub(crate) fn turn(
    common: &Common,
    shards: &[Weak<Shard>],
    runner: &TaskRunner,
    now: u64,
    batch: &mut Vec<Fired>,
) -> (u64, usize) {
    let mut next = u64::MAX;
    let mut total = 0;
    let mut spawned = 0;
    for (index, shard) in shards.iter().enumerate() {
        let Some(shard) = shard.upgrade() else {
            continue;
        };
        loop {
            let mut expired = 0;
            let mut rearmed = 0;
            let mut tasks = 0;
            let shard_next = {
                let mut guard = shard.lock();
                let state = &mut *guard;
                let deadlines = &shard.deadlines;
                while expired + rearmed < BATCH {
                    // A timeout whose deadline was extended without the
                    // lock goes back into the wheel at its new deadline,
                    // unwoken; an interval's entry is re-armed for its next
                    // tick and its task woken.
                    let beats = &state.beats;
                    let due = |key, filed| {
                        deadlines.due(key, filed, beats, |waker| batch.push(Fired::Waker(waker)))
                    };
                    let entry = match state.wheel.pop_expired_checked(now, due) {
                        None => break,
                        Some(Popped::Rearmed) => {
                            rearmed += 1;
                            continue;
                        }
                        Some(Popped::Expired(entry)) => entry,
                    };
                    expired += 1;
                    if entry.detached {
                        if let Some(task) = state.tasks.remove(entry.key) {
                            task.mark_expired();
                            tasks += 1;
                            batch.push(Fired::Task(task));
                        }
                    } else if let Some(waker) = entry.value {
                        batch.push(Fired::Waker(waker));
                    }
                }
                // A re-armed interval fired a tick and stays pending.
                state.counts.fired += (expired + rearmed) as u64;
                shard.release_locked(state, expired);
                (expired + rearmed < BATCH).then(|| state.wheel.next_expiration())
            };
            common.tasks_done(tasks);
            total += expired + rearmed;
            if expired > 0 {
                tracing::trace!(shard = index, expired, "hashwheel: expired");
            }
            spawned += deliver(batch, runner);
            if let Some(shard_next) = shard_next {
                next = next.min(shard_next.unwrap_or(u64::MAX));
                break;
            }
        }
    }
    runner.turned(spawned);
    (next, total)
}

/// Wakes what `batch` holds and hands its callbacks to `runner`, outside
/// any lock; returns how many callbacks were spawned.
pub(crate) fn deliver(batch: &mut Vec<Fired>, runner: &TaskRunner) -> usize {
    let mut spawned = 0;
    for fired in batch.drain(..) {
        match fired {
            Fired::Waker(waker) => wake(waker),
            Fired::Task(task) => spawned += usize::from(runner.run(&task)),
        }
    }
    spawned
}

/// A turn panicked: completes what it had taken out of the wheels (`batch`),
/// then stops the timer, which completes everything still pending with the
/// reason [`StopReason::DriverPanicked`].
pub(crate) fn contain_panic(
    common: &Common,
    shards: &[Weak<Shard>],
    runner: &TaskRunner,
    batch: &mut Vec<Fired>,
    panic: &(dyn Any + Send),
) {
    tracing::error!(
        panic = panic_message(panic),
        "hashwheel: the timer's driver panicked; stopping the timer"
    );
    // Taken out under a lock and not yet woken or run: nobody else will.
    let spawned = deliver(batch, runner);
    runner.turned(spawned);
    let stopped = catch_unwind(AssertUnwindSafe(|| {
        stop(
            common,
            shards.iter().filter_map(Weak::upgrade),
            StopReason::DriverPanicked,
        );
    }));
    if stopped.is_err() {
        tracing::error!("hashwheel: stopping the timer after a driver panic panicked too");
    }
}
