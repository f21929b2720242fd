//! The driver: the one tokio task that reads the clock, turns the wheels and
//! wakes what expired, outside the locks.
//!
//! It holds the timer only through a `Weak`, and sleeps until the next tick
//! that has work: never on empty ticks, and not at all while nothing is
//! pending. An insert earlier than its planned wake-up notifies it (see
//! [`Shared::note_deadline`]).
//!
//! # Why no wake-up is lost
//!
//! Before turning the wheels the driver sets `planned` to `u64::MAX`, so
//! every insert from then on lowers it and notifies. After turning, it
//! lowers `planned` to the earliest work it found (`fetch_min`, so an insert
//! it missed is kept) and sleeps until the result, or until notified; a
//! notification sent while it was not waiting is kept as a permit.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::Duration;

use futures_util::future::select;

use crate::error::StopReason;
use crate::shard::{far_future, panic_message, stop, wake, Common, Shard, TaskInner};

/// Expired entries taken out under one lock, at most: bounds the time a
/// shard's lock is held, as tokio's `WakeList` does.
const BATCH: usize = 32;

/// Driver lag past which a catch-up is reported with `warn!` rather than
/// `debug!`.
const LAG_WARN: Duration = Duration::from_millis(100);

/// What an expired entry leaves to do once the lock is released.
enum Fired {
    Waker(Waker),
    Task(Arc<TaskInner>),
}

/// The driver task. Its drop guard exists from the call on, not from the
/// first poll: a runtime may shut down before it ever polls the task.
pub(crate) fn run(common: Arc<Common>, shards: Box<[Weak<Shard>]>) -> impl Future<Output = ()> {
    // If the runtime drops this task while the timer lives (it shut down),
    // nothing will fire any more: stop the timer so every pending timeout
    // completes instead of hanging.
    drive(StopOnDrop(common, shards))
}

async fn drive(guard: StopOnDrop) {
    let (common, shards) = (&guard.0, &guard.1);
    let lag_warn_ticks = common.ticks.floor(LAG_WARN).unwrap_or(u64::MAX);
    tracing::debug!(shards = shards.len(), "hashwheel: driver started");
    let ended = |why: &str| tracing::debug!(why, "hashwheel: driver ended");
    let mut sleep = pin!(tokio::time::sleep_until(far_future(
        tokio::time::Instant::now()
    )));
    let mut batch = Vec::with_capacity(BATCH);
    let mut target = u64::MAX;
    loop {
        if let Some(why) = finished(common, shards) {
            return ended(why);
        }
        // Sleep until `target`, or until an earlier insert notifies.
        let deadline = (target != u64::MAX).then(|| common.instant_of(target));
        let notified = pin!(common.notify.notified());
        match deadline {
            Some(deadline) => {
                sleep.as_mut().reset(deadline);
                select(notified, sleep.as_mut()).await;
            }
            None => notified.await,
        }

        if let Some(why) = finished(common, shards) {
            return ended(why);
        }
        let now = common.now_tick();
        let planned = common.planned.load(Ordering::Acquire);
        if planned > now {
            // Woken by an insert that is not due yet: only move the alarm.
            target = planned;
            continue;
        }
        common.planned.store(u64::MAX, Ordering::SeqCst);
        common.wakeups.fetch_add(1, Ordering::Relaxed);
        if target != u64::MAX && now > target {
            let late_ticks = now - target;
            common.late_ticks.fetch_add(late_ticks, Ordering::Relaxed);
            if late_ticks > lag_warn_ticks {
                tracing::warn!(late_ticks, "hashwheel: driver ran late, catching up");
            } else if late_ticks > 1 {
                tracing::debug!(late_ticks, "hashwheel: driver ran late, catching up");
            }
        }
        let next = turn(common, shards, now, &mut batch);
        let planned = common.planned.fetch_min(next, Ordering::AcqRel);
        target = planned.min(next);
        tracing::trace!(now, next = target, "hashwheel: turned the wheels");
    }
}

/// Expires everything due at or before `now` on every live shard, in
/// batches, waking outside the lock. Returns the earliest tick with work
/// left.
fn turn(common: &Common, shards: &[Weak<Shard>], now: u64, batch: &mut Vec<Fired>) -> u64 {
    let mut next = u64::MAX;
    for (index, shard) in shards.iter().enumerate() {
        let Some(shard) = shard.upgrade() else {
            continue;
        };
        loop {
            let mut expired = 0;
            let mut tasks = 0;
            let shard_next = {
                let mut guard = shard.lock();
                let state = &mut *guard;
                while expired < BATCH {
                    let Some(entry) = state.wheel.pop_expired(now) else {
                        break;
                    };
                    expired += 1;
                    if entry.detached {
                        if let Some(task) = state.tasks.remove(&entry.key) {
                            task.mark_expired();
                            tasks += 1;
                            batch.push(Fired::Task(task));
                        }
                    } else if let Some(waker) = entry.value {
                        batch.push(Fired::Waker(waker));
                    }
                }
                state.counts.fired += expired as u64;
                shard.release_locked(state, expired);
                (expired < BATCH).then(|| state.wheel.next_expiration())
            };
            common.tasks_done(tasks);
            if expired > 0 {
                tracing::trace!(shard = index, expired, "hashwheel: expired");
            }
            for fired in batch.drain(..) {
                match fired {
                    Fired::Waker(waker) => wake(waker),
                    Fired::Task(task) => run_task(&task),
                }
            }
            if let Some(shard_next) = shard_next {
                next = next.min(shard_next.unwrap_or(u64::MAX));
                break;
            }
        }
    }
    next
}

fn run_task(task: &TaskInner) {
    let Some(callback) = task.take_task() else {
        return;
    };
    if let Err(panic) = catch_unwind(AssertUnwindSafe(callback)) {
        tracing::warn!(
            panic = panic_message(&*panic),
            "hashwheel: a scheduled task panicked"
        );
    }
}

/// Why the driver has nothing left to do, if it has not: the timer was
/// stopped, or every shard is gone. Timeouts keep only their shard alive, so
/// the driver runs while any shard lives (the timer holds them all, so while
/// it lives too).
fn finished(common: &Common, shards: &[Weak<Shard>]) -> Option<&'static str> {
    if common.is_stopped() {
        Some("timer stopped")
    } else if shards.iter().all(|s| s.strong_count() == 0) {
        Some("every timer handle and timeout dropped")
    } else {
        None
    }
}

struct StopOnDrop(Arc<Common>, Box<[Weak<Shard>]>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let (common, shards) = (&*self.0, &*self.1);
        if finished(common, shards).is_none() {
            tracing::debug!("hashwheel: driver task ended; stopping the timer");
            stop(
                common,
                shards.iter().filter_map(Weak::upgrade),
                StopReason::RuntimeShutDown,
            );
        }
    }
}
