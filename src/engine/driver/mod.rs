// Floor 2, the engine (docs/ARCHITECTURE.md): the drivers import the
// shards, alarms, executor and the wheel, nothing above the engine.
//! What both drivers share: one turn of the wheels and the alarm's re-arm
//! after it, the delivery of what it expired (wakers woken and callbacks
//! handed on, outside every lock), and the containment of a panic in a
//! turn.
//!
//! Each driver turn ([`turn_once`]) is a `trace` span, `hashwheel.turn`
//! (the clock reading `now` in microseconds since the timer's start, how
//! many entries it `expired` or re-armed, and how long it `took_us`, the
//! re-arm included): off unless a subscriber takes `trace`.
//!
//! The tokio driver (`runtime.rs`) calls [`turn_once`] from its alarm's
//! waker, inside the runtime's own timer processing; the thread driver
//! (`thread.rs`) from its own thread. Neither holds a lock here.
//! What differs between them is the alarm (see `alarm`) and how a driver
//! becomes the one that turns.
//!
//! # Why no wake-up is lost
//!
//! Turns never overlap: [`Common::turn_state`] lets one caller turn. Before
//! a turn the driver sets `planned` to `u64::MAX`, so every insert from
//! then on lowers it, and an insert that sees the turn (`turn_state` not
//! [`IDLE`](crate::engine::shard::IDLE)) leaves the arming to the driver. After
//! turning, [`turn_once`] lowers `planned` to the earliest work it found
//! (`fetch_min`, so an insert it missed is kept) and re-arms the alarm for
//! the result; the driver marks itself idle and then calls
//! [`after_turn`], which arms again if an insert lowered `planned` after
//! that (such an insert saw the turn and left the arming to it). Modelled
//! in `tests/shuttle_timer.rs` (the runtime's alarm) and
//! `tests/shuttle_thread.rs` (the thread's).

#[cfg(feature = "tokio")]
pub(crate) mod runtime;
#[cfg(feature = "thread")]
pub(crate) mod thread;

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::Duration;

use crate::error::StopReason;
use crate::engine::executor::TaskRunner;
use crate::engine::shard::{panic_message, stop, wake, Common, Shard, ShardState, TaskInner};
use crate::wheel::raw::{Key, Popped, State};

/// Expired entries taken out under one lock, at most: bounds the time a
/// shard's lock is held, as tokio's `WakeList` does.
pub(crate) const BATCH: usize = 32;

/// Driver lag past which a catch-up is reported with `warn!` rather than
/// `debug!`.
const LAG_WARN: Duration = Duration::from_millis(100);

/// What a turn leaves for the driver's [`after_turn`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turned {
    /// The earliest tick with work, which the alarm is armed for.
    pub(crate) target: u64,
    /// The soonest tick the driver turns again (see
    /// [`Rearmed::soonest`](crate::engine::alarm::Rearmed::soonest)).
    pub(crate) soonest: u64,
}

/// One turn of the driver that holds the turn (`turn_state` is not
/// `IDLE`), at `now` (the clock's reading, [`Common::now_tick`], taken
/// once the driver was woken): takes the alarm's armed tick (to count how
/// late the turn is), expires what is due ([`turn`]) and re-arms the alarm
/// for the earliest tick with work.
pub(crate) fn turn_once(
    common: &Common,
    shards: &[Weak<Shard>],
    runner: &TaskRunner,
    batch: &mut Vec<Fired>,
    now: u64,
) -> Turned {
    #[cfg(all(test, feature = "tokio"))]
    crate::engine::hooks::in_turn(common);
    let started = std::time::Instant::now();
    let span = turn_span(now);
    let _entered = span.enter();
    let armed = common.alarm.take_armed();
    common.planned.store(u64::MAX, Ordering::SeqCst);
    // Written by the driver only, one turn at a time: no read-modify-write.
    let wakeups = common.wakeups.load(Ordering::Relaxed);
    common.wakeups.store(wakeups + 1, Ordering::Relaxed);
    if armed != u64::MAX && now > armed {
        note_lag(common, now - armed);
    }
    let (next, expired) = turn(common, shards, runner, now, batch);
    let target = common.planned.fetch_min(next, Ordering::SeqCst).min(next);
    trace_turned(now, target, expired);
    // The alarm rings at the next deadline itself, under load too (see
    // `Alarm::rearm`). Batching under load (after a turn that expired 32
    // timeouts or more, the next no sooner than half a tick later) saved
    // 10-20% of the CPU on W9 but skipped a runtime millisecond whenever a
    // turn ran more than half a tick late, which put the p99 lateness of W4
    // and W9 0.2-1 ms behind tokio's. Without it p50 and p99 are well below
    // tokio's. A tick over 1 ms is the knob that trades lateness for fewer
    // turns.
    let soonest = common.rearm(now, target);
    let took = common.note_turn(started);
    if !span.is_disabled() {
        record_turn(&span, expired, took);
    }
    Turned { target, soonest }
}

/// One span per turn, for log pipelines and tokio-console-style tools to
/// see stalls: disabled (a check of the callsite's interest, nothing more)
/// unless a subscriber takes `trace`. Out of line, as the other traces of
/// a turn: the turn's code is what the instruction cache keeps between two
/// turns (W15: 19 misses a packet at 1,000 connections, tokio's 0.3).
#[inline(never)]
fn turn_span(now: u64) -> tracing::Span {
    tracing::trace_span!(
        "hashwheel.turn",
        now,
        expired = tracing::field::Empty,
        took_us = tracing::field::Empty,
    )
}

/// The turn's trace event, where a subscriber takes `trace`.
#[inline(never)]
fn trace_turned(now: u64, next: u64, expired: usize) {
    tracing::trace!(now, next, expired, "hashwheel: turned the wheels");
}

/// A shard's trace event of a batch that expired entries.
#[cold]
#[inline(never)]
fn trace_expired(shard: usize, expired: usize) {
    tracing::trace!(shard, expired, "hashwheel: expired");
}

/// Fills in the turn's span, where a subscriber takes it.
#[cold]
#[inline(never)]
fn record_turn(span: &tracing::Span, expired: usize, took: std::time::Duration) {
    span.record("expired", expired);
    span.record("took_us", took.as_micros() as u64);
}

/// The turn came `late` microseconds after the tick the alarm was armed
/// for: counted in whole ticks ([`Stats::late_ticks`](crate::Stats)), and
/// reported past one.
#[inline(never)]
fn note_lag(common: &Common, late: u64) {
    let tick_us = common.clock.tick_us;
    let late_ticks = late / tick_us;
    if late_ticks == 0 {
        return;
    }
    common.late_ticks.fetch_add(late_ticks, Ordering::Relaxed);
    if late_ticks > (LAG_WARN.as_micros() as u64) / tick_us {
        tracing::warn!(late_ticks, "hashwheel: driver ran late, catching up");
    } else if late_ticks > 1 {
        tracing::debug!(late_ticks, "hashwheel: driver ran late, catching up");
    }
}

/// The driver marked itself idle after `turned`: an insert that saw the
/// turn left the arming to it.
pub(crate) fn after_turn(common: &Common, turned: Turned) {
    let planned = common.planned.load(Ordering::SeqCst);
    if planned < turned.target {
        common.arm(planned.max(turned.soonest));
    }
}

/// What an expired entry leaves to do once the lock is released.
pub(crate) enum Fired {
    /// A timeout's waker.
    Waker(Waker),
    /// An interval's waker, moved out of its entry (re-armed already):
    /// woken by reference, then put back (see [`put_back`]).
    Beat(Key, Waker),
    Task(Arc<TaskInner>),
    /// Delivered already (a place [`deliver`] emptied).
    Gone,
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
    // On paused time (see `Clock`) an interval's tick fires not re-armed,
    // and a timeout's lateness counts from its deadline in its word.
    let on_tokio_ms = common.clock.follows_tokio_ms();
    for (index, shard) in shards.iter().enumerate() {
        if !common.shard_busy(index) {
            continue;
        }
        let Some(shard) = shard.upgrade() else {
            continue;
        };
        loop {
            let mut expired = 0;
            let mut rearmed = 0;
            let mut stalled = 0;
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
                    let due = |key, filed, waker: &mut Option<Waker>| {
                        deadlines.due(key, filed, waker, |waker| {
                            batch.push(Fired::Beat(key, waker));
                        })
                    };
                    // Lateness counts from the turn's one clock reading:
                    // the wakes below follow within the turn. The wheel
                    // hands out nothing due after `now` (never early); if
                    // it did, the difference would wrap into the last
                    // bucket, in plain sight, rather than count as 0.
                    let entry = match state.wheel.pop_expired_checked(now, due) {
                        None => break,
                        Some(Popped::Rearmed(tick)) => {
                            state.lateness.record_us(now.wrapping_sub(tick));
                            rearmed += 1;
                            continue;
                        }
                        // An interval's tick came while the one before is
                        // untaken: the entry stays, fired, and the
                        // interval pending (its task takes both). On paused
                        // time a tick fires so, not re-armed (its re-arm
                        // tick is out of reach, see `interval.rs`), and
                        // counts.
                        Some(Popped::Stalled(tick)) => {
                            state.lateness.record_us(now.wrapping_sub(tick));
                            rearmed += 1;
                            stalled += usize::from(!on_tokio_ms);
                            continue;
                        }
                        Some(Popped::Expired(entry)) => entry,
                    };
                    // On paused time a timeout is filed at the end of its
                    // millisecond: its deadline is in its word. (An
                    // interval's tick counts from that end there.)
                    let deadline = if on_tokio_ms && !entry.detached {
                        deadlines.tick(entry.key).unwrap_or(entry.tick)
                    } else {
                        entry.tick
                    };
                    state.lateness.record_us(now.wrapping_sub(deadline));
                    expired += 1;
                    if entry.detached {
                        tasks += usize::from(due_task(state, entry.key, batch));
                    } else if let Some(waker) = entry.value {
                        batch.push(Fired::Waker(waker));
                    }
                }
                // An interval's entry fired a tick and stays pending, for
                // as long as the interval lives (see `Stats`).
                state.counts.fired += expired as u64;
                state.counts.ticks += (rearmed - stalled) as u64;
                shard.release_locked(state, expired);
                if state.wheel.is_empty() {
                    common.shard_idle(index);
                }
                (expired + rearmed < BATCH).then(|| state.wheel.next_expiration())
            };
            common.tasks_done(tasks);
            total += expired + rearmed;
            if expired > 0 {
                trace_expired(index, expired);
            }
            let beats = deliver(batch, runner, &mut spawned);
            if beats > 0 {
                put_back(&shard, batch);
            }
            if let Some(shard_next) = shard_next {
                next = next.min(shard_next.unwrap_or(u64::MAX));
                break;
            }
        }
    }
    runner.turned(spawned);
    (next, total)
}

/// A scheduled task's entry `key` came due (under the lock): marked due
/// and put in `batch` to run once the lock is released; `false` if the
/// shard holds no task there.
#[inline(never)]
fn due_task(state: &mut ShardState, key: Key, batch: &mut Vec<Fired>) -> bool {
    let Some(task) = state.tasks.remove(key) else {
        return false;
    };
    task.mark_due();
    batch.push(Fired::Task(task));
    true
}

/// Hands a due task to `runner`, counting it in `spawned` if spawned.
#[inline(never)]
fn run_task(runner: &TaskRunner, task: Arc<TaskInner>, spawned: &mut usize) {
    *spawned += usize::from(runner.run(task));
}

/// Wakes what `batch` holds and hands its callbacks to `runner`, in order,
/// outside any lock, counting the callbacks spawned in `spawned`. An
/// interval's waker is woken by reference and stays in `batch`, to go back
/// into its entry ([`put_back`]), which empties `batch`; returns how many
/// stay (none: `batch` is empty).
pub(crate) fn deliver(batch: &mut Vec<Fired>, runner: &TaskRunner, spawned: &mut usize) -> usize {
    let mut beats = 0;
    for fired in batch.iter_mut() {
        if let Fired::Beat(_, waker) = fired {
            wake_by_ref(waker);
            beats += 1;
            continue;
        }
        match std::mem::replace(fired, Fired::Gone) {
            Fired::Waker(waker) => wake(waker),
            Fired::Task(task) => run_task(runner, task, spawned),
            Fired::Beat(..) | Fired::Gone => {}
        }
    }
    if beats == 0 {
        batch.clear();
    }
    beats
}

/// Puts the intervals' wakers that [`deliver`] woke back into their
/// entries, under the shard's lock, so that the task's next poll finds its
/// waker registered and registers nothing (see `deadlines.rs`).
///
/// An interval's entry is without a waker only while its waker is out
/// here: the handle registers with one, and re-arms and re-registers with
/// one in place of none. So a waker goes back into the interval's entry at
/// its key that holds none; where the entry holds one (the task registered
/// another meanwhile), or is gone (dropped, its key reused by something
/// else), it is dropped. An entry the timer's stop drained meanwhile is
/// woken again (the stop found it without its waker). What does not go
/// back is dropped, and what is woken is woken, after the lock.
pub(crate) fn put_back(shard: &Shard, batch: &mut Vec<Fired>) {
    {
        let mut guard = shard.lock();
        let state: &mut ShardState = &mut guard;
        for fired in batch.iter_mut() {
            let Fired::Beat(key, _) = *fired else {
                continue;
            };
            match state.wheel.marked_mut(key) {
                Some((State::Cancelled, _)) => {
                    if let Fired::Beat(_, waker) = std::mem::replace(fired, Fired::Gone) {
                        *fired = Fired::Waker(waker);
                    }
                }
                Some((_, slot @ None)) => {
                    if let Fired::Beat(_, waker) = std::mem::replace(fired, Fired::Gone) {
                        *slot = Some(waker);
                    }
                }
                _ => {}
            }
        }
    }
    for fired in batch.drain(..) {
        if let Fired::Waker(waker) = fired {
            wake(waker);
        }
    }
}

/// Wakes `waker` by reference; a panicking waker is reported.
fn wake_by_ref(waker: &Waker) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| waker.wake_by_ref())) {
        tracing::warn!(
            panic = panic_message(&*panic),
            "hashwheel: a waker panicked"
        );
    }
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
    let mut spawned = 0;
    deliver(batch, runner, &mut spawned);
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
    // Intervals' wakers taken out of their entries, which the stop found
    // without them: woken again, now that the timer is stopped.
    for fired in batch.drain(..) {
        if let Fired::Beat(_, waker) = fired {
            wake(waker);
        }
    }
}
