//! A schedule-exploring model of the timer's concurrency, run with shuttle:
//!
//! ```text
//! RUSTFLAGS="--cfg shuttle" cargo test --test shuttle_timer --target-dir target/shuttle
//! ```
//!
//! (`-- --nocapture` prints how many schedules each test explored, and how
//! often the rare paths ran in them; `HASHWHEEL_SHUTTLE_SEED=N` explores
//! other schedules than CI's.)
//!
//! tokio cannot run under shuttle, so, as `tests/wakeup_protocol.rs` does for
//! the alarm alone, the protocol is written out again here: shuttle threads,
//! mutexes and atomics take the place of the runtime's workers and of the
//! crate's locks and atomics, step for step and in the same order as the
//! real code (each function names the one it mirrors), over the crate's own
//! pure wheel ([`hashwheel::wheel::Wheel`]) under a shuttle mutex. The
//! runtime is a thread that moves the clock on and rings the alarm's `Sleep`
//! (a registration, as tokio's timer holds it) when it is due, and runs the
//! wakes the timer spawned onto it; it may also shut down, which drops the
//! driver's guard task and stops the timer. Time is a tick counter.
//!
//! Explored: timeouts created, polled (registered), reset earlier and later
//! (pending or fired), dropped, and tasks scheduled and cancelled, from
//! several threads, against the driver's turn, the alarm being armed
//! (`note_deadline`/`arm`, `planned`, `turn_state` IDLE/TURNING/AGAIN, the
//! re-check of `planned` after going idle, a ring for nothing skipped while
//! a wake is on its way), `Timer::stop` and the runtime's shutdown. Checked in every schedule:
//!
//! - never early: nothing fires, and no poll completes as fired, before its
//!   deadline;
//! - exactly once: a timeout or task ends fired or cancelled, never both and
//!   never neither; a task runs at most once, and only if not cancelled;
//! - no wake under a lock: a waker (a timeout's, or the driver's) is never
//!   called while the calling thread holds one of the timer's locks;
//! - no lost wake-up: once the threads are done, the clock is moved on one
//!   tick at a time with only the runtime running, and after each tick
//!   nothing due at or before it is still pending;
//! - the keep-alive count of pending tasks never goes below zero and is zero
//!   at the end, with the self-reference released;
//! - the pending count equals the timeouts and tasks neither fired nor
//!   cancelled, and is zero once every handle is gone.
//!
//! Deliberately broken variants (each must be caught): the keep-alive count
//! taken after the task is in the wheel and the lock released (the order
//! before issue 15's fix: `stop`, the driver or `TaskHandle::cancel` can
//! release it first), timeouts woken under the shard's lock, and a driver
//! that skips its re-check of `planned` after going idle.
//!
//! Shuttle rather than loom: loom explores exhaustively, which does not end
//! for three or four threads taking tens of locks each, and loom 0.7 gave
//! impossible results here before (see `tests/wakeup_protocol.rs`);
//! shuttle samples schedules with its randomized and PCT schedulers (fixed
//! seeds and iteration counts, so a run is repeatable). Shuttle's atomics
//! are sequentially consistent, so the model does not check the relaxed
//! orderings of the counters; every protocol atomic of the real code is
//! `SeqCst` or read under a lock anyway.
#![cfg(shuttle)]

mod common;

use std::cell::Cell;
use std::collections::HashMap;

use common::shuttle as harness;
use hashwheel::wheel::{Key as WheelKey, Wheel};
use shuttle::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::SeqCst};
use shuttle::sync::{Arc, Mutex, MutexGuard};
use shuttle::thread;

/// "Never": `hashwheel`'s `NEVER`, here any tick past the model's clock.
const NEVER: u64 = 1 << 40;
/// `turn::BATCH`, small so that one turn takes several batches.
const BATCH: usize = 2;
/// The last tick the model's clock reaches.
const END: u64 = 8;

// ---------------------------------------------------------------------------
// Locks that know whether the thread holds one, for "no wake under a lock".

shuttle::thread_local! {
    /// The timer's locks held by this (shuttle) thread.
    static HELD: Cell<usize> = const { Cell::new(0) };
}

struct Lock<T>(Mutex<T>);

struct Guard<'a, T> {
    inner: MutexGuard<'a, T>,
}

impl<T> Lock<T> {
    fn new(value: T) -> Lock<T> {
        Lock(Mutex::new(value))
    }

    fn lock(&self) -> Guard<'_, T> {
        let guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        HELD.with(|h| h.set(h.get() + 1));
        Guard { inner: guard }
    }
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(h.get() - 1));
    }
}

std::thread_local! {
    /// How often each rare path ran, over every schedule of one test (a
    /// shuttle test runs all its threads on the test's own OS thread): a
    /// model that never reached them would check little.
    static COVER: Cell<[usize; 6]> = const { Cell::new([0; 6]) };
}

/// The paths [`COVER`] counts.
const COVER_NAMES: [&str; 6] = [
    "turns asked again while turning",
    "arms by the re-check after going idle",
    "driver wakes spawned by an insert already due",
    "resets that fired at once",
    "keep-alive counts released by stop",
    "rings for nothing, not turned",
];

fn cover(path: usize) {
    COVER.with(|c| {
        let mut counts = c.get();
        counts[path] += 1;
        c.set(counts);
    });
}

fn assert_no_lock_held(what: &str) {
    let held = HELD.with(Cell::get);
    assert_eq!(
        held, 0,
        "woke {what} while holding {held} of the timer's locks"
    );
}

/// A timeout's waker: counts its wakes.
#[derive(Default)]
struct WakeCount(AtomicUsize);

type Waker = Arc<WakeCount>;

/// `shard::wake`: outside every lock.
fn wake(waker: Waker) {
    assert_no_lock_held("a timeout's waker");
    waker.0.fetch_add(1, SeqCst);
}

// ---------------------------------------------------------------------------
// The raw wheel's contract (src/wheel/raw.rs) over the public wheel: entries
// by key, with a state; an owned entry (a timeout's) stays, marked fired or
// cancelled, until its handle removes it; a detached one (a task's) leaves
// when it fires or is drained.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Fired,
    Cancelled,
}

struct Entry {
    state: State,
    tick: u64,
    detached: bool,
    waker: Option<Waker>,
    at: Option<WheelKey>,
}

struct Expired {
    key: usize,
    detached: bool,
    waker: Option<Waker>,
}

struct RawWheel {
    wheel: Wheel<usize>,
    entries: Vec<Option<Entry>>,
    elapsed: u64,
}

impl RawWheel {
    fn new() -> RawWheel {
        RawWheel {
            wheel: Wheel::with_shape(4, 2),
            entries: Vec::new(),
            elapsed: 0,
        }
    }

    fn entry(&mut self, key: usize) -> &mut Entry {
        self.entries[key]
            .as_mut()
            .expect("a handle's key is vacant")
    }

    /// `raw::Wheel::insert`: a tick at or before `elapsed` moves to the next.
    fn insert(&mut self, tick: u64, detached: bool, waker: Option<Waker>) -> usize {
        let key = self
            .entries
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.entries.len());
        if key == self.entries.len() {
            self.entries.push(None);
        }
        let tick = tick.max(self.elapsed + 1);
        let at = (tick < NEVER).then(|| self.wheel.insert(tick, key));
        self.entries[key] = Some(Entry {
            state: State::Pending,
            tick,
            detached,
            waker,
            at,
        });
        key
    }

    fn vacant_key(&self) -> usize {
        self.entries
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.entries.len())
    }

    fn state(&mut self, key: usize) -> State {
        self.entry(key).state
    }

    fn tick(&mut self, key: usize) -> u64 {
        self.entry(key).tick
    }

    fn unlink(&mut self, key: usize) {
        if let Some(at) = self.entry(key).at.take() {
            assert_eq!(self.wheel.remove(at), Some(key));
        }
    }

    fn remove(&mut self, key: usize) -> (State, Option<Waker>) {
        if self.state(key) == State::Pending {
            self.unlink(key);
        }
        let entry = self.entries[key].take().expect("vacant");
        (entry.state, entry.waker)
    }

    /// `raw::Wheel::reset`.
    fn reset(&mut self, key: usize, tick: u64) -> (State, Option<Option<Waker>>) {
        let state = self.state(key);
        match state {
            State::Cancelled => return (state, None),
            State::Pending => self.unlink(key),
            State::Fired => {}
        }
        let elapsed = self.elapsed;
        let tick = tick.clamp(1, NEVER);
        let entry = self.entry(key);
        entry.tick = tick;
        if tick <= elapsed {
            entry.state = State::Fired;
            return (state, Some(entry.waker.take()));
        }
        entry.state = State::Pending;
        let at = (tick < NEVER).then(|| self.wheel.insert(tick, key));
        self.entry(key).at = at;
        (state, None)
    }

    /// `raw::Wheel::pop_expired`.
    fn pop_expired(&mut self, now: u64) -> Option<Expired> {
        let Some(expired) = self.wheel.poll(now) else {
            self.elapsed = self.elapsed.max(now);
            return None;
        };
        let key = expired.value;
        let entry = self.entry(key);
        assert!(
            entry.tick <= now,
            "fired early: due at {}, now {now}",
            entry.tick
        );
        entry.at = None;
        if entry.detached {
            self.entries[key] = None;
            Some(Expired {
                key,
                detached: true,
                waker: None,
            })
        } else {
            entry.state = State::Fired;
            Some(Expired {
                key,
                detached: false,
                waker: entry.waker.take(),
            })
        }
    }

    /// `raw::Wheel::drain`.
    fn drain(&mut self, mut f: impl FnMut(Expired)) {
        for key in 0..self.entries.len() {
            if !matches!(&self.entries[key], Some(e) if e.state == State::Pending) {
                continue;
            }
            self.unlink(key);
            if self.entry(key).detached {
                self.entries[key] = None;
                f(Expired {
                    key,
                    detached: true,
                    waker: None,
                });
            } else {
                let entry = self.entry(key);
                entry.state = State::Cancelled;
                let waker = entry.waker.take();
                f(Expired {
                    key,
                    detached: false,
                    waker,
                });
            }
        }
    }

    fn next_expiration(&mut self) -> Option<u64> {
        self.wheel.next_tick()
    }

    /// The earliest tick of a pending entry, looked at directly.
    fn earliest_pending(&self) -> Option<u64> {
        self.entries
            .iter()
            .flatten()
            .filter(|e| e.state == State::Pending)
            .map(|e| e.tick)
            .min()
    }
}

// ---------------------------------------------------------------------------
// The shard state and what the shards share (src/engine/shard.rs).

/// Which broken variant to run, if any.
#[derive(Clone, Copy, Debug, Default)]
struct Variant {
    /// `try_schedule` takes the keep-alive count after the insert, with the
    /// shard's lock released (the order before issue 15's fix).
    count_after_insert: bool,
    /// The driver and `stop` wake timeouts before releasing the shard lock.
    wake_under_lock: bool,
    /// The driver does not re-check `planned` after going idle.
    skip_recheck: bool,
    /// The driver's waker takes a ring at the very tick the alarm is armed
    /// for as a ring for nothing.
    nothing_at_its_tick: bool,
    /// An arm that finds its instant passed leaves the alarm disarmed, not
    /// `DUE`, while the wake it spawned is on its way.
    disarm_when_due: bool,
}

const IDLE: u8 = 0;
const TURNING: u8 = 1;
const AGAIN: u8 = 2;

const RUNNING: u8 = 0;
const STOPPED: u8 = 1;
const RUNTIME_SHUT_DOWN: u8 = 2;

const T_PENDING: u8 = 0;
const T_EXPIRED: u8 = 1;
const T_CANCELLED: u8 = 2;

/// `alarm::runtime::RuntimeAlarm`: the tick it is armed for. Its `Sleep`'s registration in
/// the runtime is [`Common::registered`]. The alarm is a ring of three
/// `Sleep`s, set on each re-arm after a turn to the armed tick and one and
/// two turns of the driver's grid (the tick's whole milliseconds) after it;
/// the model keeps the earliest, which is what arms the driver. The later
/// two ring no earlier than it, and otherwise only change whether the
/// runtime unparks its own driver, which this model does not have, except
/// in a runtime late by a turn of the grid: it then rings the next timer of
/// the ring with the earliest, and the driver's waker runs twice (see
/// [`Common::ring`]; the second finds the alarm re-armed for later and does
/// not turn, `RuntimeAlarm::rang_for_nothing`).
struct Alarm {
    armed: u64,
}

struct ShardState {
    wheel: RawWheel,
    tasks: HashMap<usize, Arc<Task>>,
    released: usize,
    fired: u64,
    cancelled: u64,
}

struct Shard {
    state: Lock<ShardState>,
    pending: AtomicUsize,
}

/// `shard::TaskInner`: the closure is a flag, its runs a count.
struct Task {
    shard: usize,
    key: usize,
    deadline: u64,
    state: AtomicU8,
    closure: Lock<bool>,
    runs: AtomicUsize,
}

impl Task {
    fn take_task(&self) -> bool {
        std::mem::take(&mut *self.closure.lock())
    }
}

struct Common {
    variant: Variant,
    /// The runtime's clock, in ticks.
    clock: AtomicU64,
    planned: AtomicU64,
    alarm: Lock<Option<Alarm>>,
    /// The alarm `Sleep`'s registration in the runtime's timer: the tick it
    /// rings at. The runtime's own lock, not one of the timer's.
    registered: Mutex<Option<u64>>,
    /// Wakes of the driver spawned onto the runtime (`arm` of a past tick
    /// by anyone but the driver).
    spawned: Mutex<usize>,
    turn_state: AtomicU8,
    stopped: AtomicU8,
    keep_alive: Lock<(usize, bool)>,
    shards: Vec<Shard>,
}

impl Common {
    fn new(shards: usize, variant: Variant) -> Arc<Common> {
        Arc::new(Common {
            variant,
            clock: AtomicU64::new(0),
            planned: AtomicU64::new(u64::MAX),
            // `driver::start`: the alarm exists, disarmed.
            alarm: Lock::new(Some(Alarm { armed: u64::MAX })),
            registered: Mutex::new(None),
            spawned: Mutex::new(0),
            turn_state: AtomicU8::new(IDLE),
            stopped: AtomicU8::new(RUNNING),
            keep_alive: Lock::new((0, false)),
            shards: (0..shards)
                .map(|_| Shard {
                    state: Lock::new(ShardState {
                        wheel: RawWheel::new(),
                        tasks: HashMap::new(),
                        released: 0,
                        fired: 0,
                        cancelled: 0,
                    }),
                    pending: AtomicUsize::new(0),
                })
                .collect(),
        })
    }

    fn now(&self) -> u64 {
        self.clock.load(SeqCst)
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(SeqCst) != RUNNING
    }

    /// `Shard::acquire` (no `max_pending`).
    fn acquire(&self, shard: usize) -> Result<(), ()> {
        if self.is_stopped() {
            return Err(());
        }
        self.shards[shard].pending.fetch_add(1, SeqCst);
        Ok(())
    }

    fn reacquire(&self, shard: usize) {
        self.shards[shard].pending.fetch_add(1, SeqCst);
    }

    fn release(&self, shard: usize, n: usize) {
        self.shards[shard].pending.fetch_sub(n, SeqCst);
    }

    /// `Shard::pending_locked`, summed.
    fn pending_count(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let state = s.state.lock();
                s.pending.load(SeqCst).wrapping_sub(state.released)
            })
            .sum()
    }

    /// `Shared::task_added`.
    fn task_added(&self) {
        let mut keep = self.keep_alive.lock();
        keep.0 += 1;
        if keep.0 == 1 {
            keep.1 = true;
        }
    }

    /// `Common::tasks_done`: `keep.0 -= n`, which panics in a debug build
    /// when it would go below zero.
    fn tasks_done(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut keep = self.keep_alive.lock();
        keep.0 = keep.0.checked_sub(n).unwrap_or_else(|| {
            panic!(
                "keep-alive count underflow: {} tasks done with {} counted",
                n, keep.0
            )
        });
        if keep.0 == 0 {
            assert!(keep.1, "the last task found no self-reference to release");
            keep.1 = false;
        }
    }

    /// `Common::note_deadline`.
    fn note_deadline(&self, tick: u64) {
        if tick < NEVER
            && tick < self.planned.load(SeqCst)
            && self.planned.fetch_min(tick, SeqCst) > tick
            && self.turn_state.load(SeqCst) == IDLE
        {
            self.arm(tick);
        }
    }

    /// `RuntimeAlarm::arm` (src/engine/alarm/runtime.rs): an insert's, for an
    /// earlier tick only.
    fn arm(&self, tick: u64) {
        self.arm_after(tick, false);
    }

    /// `RuntimeAlarm::rearm`: the driver's, after a turn, whatever the
    /// alarm was armed for.
    fn rearm(&self, tick: u64) {
        self.arm_after(tick, true);
    }

    /// `RuntimeAlarm::arm_after` (src/engine/alarm/runtime.rs); `force`: the
    /// driver's re-arm (its `now` given). Resetting and polling the `Sleep`
    /// registers it with the runtime, or finds it due (the runtime
    /// completes a `Sleep` whose instant has passed).
    fn arm_after(&self, tick: u64, force: bool) {
        let ready = {
            let mut guard = self.alarm.lock();
            let Some(alarm) = guard.as_mut() else {
                return;
            };
            if !force && tick >= alarm.armed {
                return;
            }
            alarm.armed = tick;
            if tick >= NEVER {
                return;
            }
            let ready = !force && tick <= self.now() || {
                let mut registered = self.registered.lock().unwrap();
                if tick <= self.now() {
                    *registered = None;
                    true
                } else {
                    *registered = Some(tick);
                    false
                }
            };
            if ready {
                // `DUE`: a wake is on its way; no later arm sets the alarm.
                alarm.armed = if self.variant.disarm_when_due {
                    u64::MAX
                } else {
                    0
                };
            }
            ready
        };
        if ready {
            if force {
                self.driver_wake();
            } else {
                cover(2);
                *self.spawned.lock().unwrap() += 1;
            }
        }
    }

    // -- src/engine/driver/runtime.rs --------------------------------------------------

    /// `Driver::wake_by_ref`.
    fn driver_wake(&self) {
        assert_no_lock_held("the driver");
        // One clock reading: whether the wake is for nothing, and the turn.
        let mut now = self.now();
        if self.rang_for_nothing(now) {
            cover(5);
            return;
        }
        let mut state = self.turn_state.load(SeqCst);
        loop {
            let next = if state == IDLE { TURNING } else { AGAIN };
            match self
                .turn_state
                .compare_exchange(state, next, SeqCst, SeqCst)
            {
                Ok(IDLE) => break,
                Ok(_) => {
                    cover(0);
                    return;
                }
                Err(actual) => state = actual,
            }
        }
        loop {
            if self.is_stopped() {
                self.turn_state.store(IDLE, SeqCst);
                return;
            }
            let target = self.turn_once(now);
            if self
                .turn_state
                .compare_exchange(TURNING, IDLE, SeqCst, SeqCst)
                .is_ok()
            {
                if !self.variant.skip_recheck {
                    let planned = self.planned.load(SeqCst);
                    if planned < target {
                        cover(1);
                        self.arm(planned);
                    }
                }
                return;
            }
            self.turn_state.store(TURNING, SeqCst);
            now = self.now();
        }
    }

    /// `RuntimeAlarm::rang_for_nothing`: the alarm is armed for a tick
    /// still to come. (The real alarm's tick is an atomic written under
    /// the alarm's lock; the model reads it under the lock.)
    fn rang_for_nothing(&self, now: u64) -> bool {
        let armed = match self.alarm.lock().as_ref() {
            Some(alarm) => alarm.armed,
            None => u64::MAX,
        };
        armed != u64::MAX && (now < armed || self.variant.nothing_at_its_tick && now == armed)
    }

    /// `Driver::turn_once` (without the batching under load), at `now`.
    fn turn_once(&self, now: u64) -> u64 {
        {
            let mut alarm = self.alarm.lock();
            if let Some(a) = alarm.as_mut() {
                a.armed = u64::MAX;
            }
        }
        self.planned.store(u64::MAX, SeqCst);
        let next = self.turn(now);
        let target = self.planned.fetch_min(next, SeqCst).min(next);
        self.rearm(target);
        target
    }

    /// `turn::turn`.
    fn turn(&self, now: u64) -> u64 {
        let mut next = u64::MAX;
        for shard in &self.shards {
            loop {
                let mut wakers = Vec::new();
                let mut tasks = Vec::new();
                let shard_next = {
                    let mut guard = shard.state.lock();
                    let state = &mut *guard;
                    let mut expired = 0;
                    while expired < BATCH {
                        let Some(entry) = state.wheel.pop_expired(now) else {
                            break;
                        };
                        expired += 1;
                        if entry.detached {
                            if let Some(task) = state.tasks.remove(&entry.key) {
                                task.state.store(T_EXPIRED, SeqCst);
                                tasks.push(task);
                            }
                        } else if let Some(waker) = entry.waker {
                            wakers.push(waker);
                        }
                    }
                    state.fired += expired as u64;
                    state.released = state.released.wrapping_add(expired);
                    if self.variant.wake_under_lock {
                        wakers.drain(..).for_each(wake);
                    }
                    (expired < BATCH).then(|| state.wheel.next_expiration())
                };
                self.tasks_done(tasks.len());
                wakers.into_iter().for_each(wake);
                for task in tasks {
                    run_task(self, &task);
                }
                if let Some(shard_next) = shard_next {
                    next = next.min(shard_next.unwrap_or(u64::MAX));
                    break;
                }
            }
        }
        next
    }

    // -- the runtime ----------------------------------------------------

    /// A worker runs one wake of the driver spawned onto the runtime, if
    /// there is one; returns whether there was.
    fn run_spawned(&self) -> bool {
        let spawned = {
            let mut spawned = self.spawned.lock().unwrap();
            let any = *spawned > 0;
            *spawned = spawned.saturating_sub(1);
            any
        };
        if spawned {
            self.driver_wake();
        }
        spawned
    }

    /// The runtime's timer rings the alarm if it is due; returns whether it
    /// did. A runtime a tick or more late rings the next timer of the ring
    /// with it: the driver's waker runs again after the turn.
    fn ring(&self) -> bool {
        let rings = {
            let mut registered = self.registered.lock().unwrap();
            match *registered {
                Some(tick) if tick <= self.now() => {
                    *registered = None;
                    Some(tick < self.now())
                }
                _ => None,
            }
        };
        if let Some(late) = rings {
            self.driver_wake();
            if late {
                self.driver_wake();
            }
        }
        rings.is_some()
    }

    /// One step of the runtime: a spawned wake, or the alarm if it is due.
    fn runtime_step(&self) -> bool {
        self.run_spawned() || self.ring()
    }

    /// The runtime at the next tick: everything it has to do.
    fn advance(&self) {
        self.clock.fetch_add(1, SeqCst);
        while self.runtime_step() {}
    }

    /// `StopOnDrop::drop`: the runtime dropped the driver's guard task.
    fn shut_down(&self) {
        if !self.is_stopped() {
            stop(self, RUNTIME_SHUT_DOWN);
        }
    }
}

/// `driver::run_task`.
fn run_task(common: &Common, task: &Task) {
    if task.take_task() {
        assert!(
            common.now() >= task.deadline,
            "a task ran early: due at {}, now {}",
            task.deadline,
            common.now()
        );
        assert_eq!(task.state.load(SeqCst), T_EXPIRED);
        task.runs.fetch_add(1, SeqCst);
    }
}

/// `shard::stop`.
fn stop(common: &Common, reason: u8) -> Vec<Arc<Task>> {
    if common
        .stopped
        .compare_exchange(RUNNING, reason, SeqCst, SeqCst)
        .is_err()
    {
        return Vec::new();
    }
    let mut all = Vec::new();
    for shard in &common.shards {
        let mut wakers = Vec::new();
        let mut tasks = Vec::new();
        {
            let mut guard = shard.state.lock();
            let state = &mut *guard;
            let mut drained = 0;
            state.wheel.drain(|expired| {
                drained += 1;
                if expired.detached {
                    if let Some(task) = state.tasks.remove(&expired.key) {
                        task.state.store(T_CANCELLED, SeqCst);
                        tasks.push(task);
                    }
                } else if let Some(waker) = expired.waker {
                    wakers.push(waker);
                }
            });
            state.cancelled += drained as u64;
            state.released = state.released.wrapping_add(drained);
            if common.variant.wake_under_lock {
                wakers.drain(..).for_each(wake);
            }
        }
        if !tasks.is_empty() {
            cover(4);
        }
        common.tasks_done(tasks.len());
        if reason == RUNTIME_SHUT_DOWN {
            for task in &tasks {
                task.take_task();
            }
        }
        wakers.into_iter().for_each(wake);
        all.extend(tasks);
    }
    // Disarm for good: the alarm goes, and with its `Sleep` the registration
    // (dropped after the alarm's lock, as there).
    let alarm = common.alarm.lock().take();
    if alarm.is_some() {
        *common.registered.lock().unwrap() = None;
    }
    all
}

// ---------------------------------------------------------------------------
// Handles: `Timeout` (src/timer/timeout.rs), `Timer::try_schedule` and
// `TaskHandle::cancel` (src/timer/mod.rs, src/timer/task.rs).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    Unregistered(u64),
    Registered(usize),
    Fired(u64),
    Cancelled,
}

struct Timeout {
    common: Arc<Common>,
    shard: usize,
    word: Word,
    /// The deadline it was last given, where that took effect.
    deadline: u64,
    /// The waker of the task that polls it.
    waker: Waker,
    /// How often its waker went into the wheel: it is woken at most that
    /// often.
    stored: usize,
}

impl Timeout {
    /// `Timer::timeout_at_tick`.
    fn new(common: &Arc<Common>, shard: usize, tick: u64) -> Option<Timeout> {
        let word = if tick <= common.now() {
            if common.is_stopped() {
                return None;
            }
            Word::Fired(tick)
        } else {
            common.acquire(shard).ok()?;
            Word::Unregistered(tick)
        };
        Some(Timeout {
            common: common.clone(),
            shard,
            word,
            deadline: tick,
            waker: Waker::default(),
            stored: 0,
        })
    }

    /// `Timeout::poll`; `true` once ready.
    fn poll(&mut self) -> bool {
        let common = &*self.common;
        let shard = &common.shards[self.shard];
        let ready = match self.word {
            Word::Unregistered(tick) => {
                let mut state = shard.state.lock();
                let done = if common.is_stopped() {
                    state.cancelled += 1;
                    Word::Cancelled
                } else if tick <= state.wheel.elapsed {
                    state.fired += 1;
                    Word::Fired(tick)
                } else {
                    let key = state.wheel.insert(tick, false, Some(self.waker.clone()));
                    self.stored += 1;
                    drop(state);
                    common.note_deadline(tick);
                    self.word = Word::Registered(key);
                    return false;
                };
                state.released = state.released.wrapping_add(1);
                drop(state);
                self.word = done;
                true
            }
            Word::Registered(key) => {
                let mut state = shard.state.lock();
                let done = match state.wheel.state(key) {
                    State::Pending => {
                        // The same waker stays; an entry reset after it
                        // fired has none, and takes this one.
                        let entry = state.wheel.entry(key);
                        if entry.waker.is_none() {
                            entry.waker = Some(self.waker.clone());
                            self.stored += 1;
                        }
                        return false;
                    }
                    State::Fired => Word::Fired(state.wheel.tick(key)),
                    State::Cancelled => Word::Cancelled,
                };
                let (_, waker) = state.wheel.remove(key);
                drop(state);
                drop(waker);
                self.word = done;
                true
            }
            _ => true,
        };
        if let Word::Fired(tick) = self.word {
            let now = common.now();
            assert!(
                now >= tick && now >= self.deadline,
                "completed early: due at {} (asked {}), now {now}",
                tick,
                self.deadline
            );
        }
        let woken = self.waker.0.load(SeqCst);
        assert!(
            woken <= self.stored,
            "woken {woken} times for {} registrations",
            self.stored
        );
        ready
    }

    /// `Timeout::reset_tick`.
    fn reset(&mut self, tick: u64) {
        let common = self.common.clone();
        let shard = &common.shards[self.shard];
        match self.word {
            Word::Unregistered(_) => {
                self.word = Word::Unregistered(tick);
                self.deadline = tick;
            }
            Word::Fired(_) if !common.is_stopped() => {
                common.reacquire(self.shard);
                self.word = Word::Unregistered(tick);
                self.deadline = tick;
            }
            Word::Registered(key) => {
                let (state, fired_now) = {
                    let mut guard = shard.state.lock();
                    if common.is_stopped() {
                        return;
                    }
                    let res = guard.wheel.reset(key, tick);
                    match res {
                        (State::Pending, Some(_)) => {
                            guard.fired += 1;
                            guard.released = guard.released.wrapping_add(1);
                        }
                        // Counted under the lock (issue 26).
                        (State::Fired, None) => common.reacquire(self.shard),
                        _ => {}
                    }
                    res
                };
                if state != State::Cancelled {
                    self.deadline = tick;
                }
                match (state, fired_now) {
                    (State::Pending, Some(waker)) => {
                        cover(3);
                        waker.into_iter().for_each(wake);
                    }
                    (State::Pending, None) | (State::Fired, None) => common.note_deadline(tick),
                    (State::Fired, Some(_)) | (State::Cancelled, _) => {}
                }
            }
            _ => {}
        }
    }

    /// Whether it is pending: counted in the pending count.
    fn is_pending(&self) -> bool {
        match self.word {
            Word::Unregistered(_) => true,
            Word::Registered(key) => {
                let mut state = self.common.shards[self.shard].state.lock();
                state.wheel.state(key) == State::Pending
            }
            _ => false,
        }
    }
}

impl Drop for Timeout {
    /// `Timeout::clear`.
    fn drop(&mut self) {
        let common = &*self.common;
        match self.word {
            Word::Unregistered(_) => common.release(self.shard, 1),
            Word::Registered(key) => {
                let shard = &common.shards[self.shard];
                let waker = {
                    let mut state = shard.state.lock();
                    let (was, waker) = state.wheel.remove(key);
                    if was == State::Pending {
                        state.cancelled += 1;
                        state.released = state.released.wrapping_add(1);
                    }
                    waker
                };
                drop(waker);
            }
            _ => {}
        }
        self.word = Word::Cancelled;
    }
}

/// `Timer::try_schedule`, with the keep-alive count taken before the insert
/// and given back on error (or after it: [`Variant::count_after_insert`]).
fn schedule(common: &Arc<Common>, shard: usize, tick: u64) -> Option<Arc<Task>> {
    let after = common.variant.count_after_insert;
    common.acquire(shard).ok()?;
    if !after {
        common.task_added();
    }
    let task = {
        let mut state = common.shards[shard].state.lock();
        if common.is_stopped() {
            drop(state);
            common.release(shard, 1);
            if !after {
                common.tasks_done(1);
            }
            return None;
        }
        let key = state.wheel.vacant_key();
        let task = Arc::new(Task {
            shard,
            key,
            deadline: tick,
            state: AtomicU8::new(T_PENDING),
            closure: Lock::new(true),
            runs: AtomicUsize::new(0),
        });
        let inserted = state.wheel.insert(tick, true, None);
        assert_eq!(inserted, key);
        state.tasks.insert(key, task.clone());
        task
    };
    if after {
        common.task_added();
    }
    common.note_deadline(tick);
    Some(task)
}

/// `TaskHandle::cancel`.
fn cancel(common: &Common, task: &Task) -> bool {
    {
        let mut state = common.shards[task.shard].state.lock();
        if task.state.load(SeqCst) != T_PENDING {
            return false;
        }
        state.wheel.remove(task.key);
        state.tasks.remove(&task.key);
        state.cancelled += 1;
        state.released = state.released.wrapping_add(1);
        task.state.store(T_CANCELLED, SeqCst);
    }
    common.tasks_done(1);
    task.take_task();
    true
}

// ---------------------------------------------------------------------------
// The checks once the threads are done.

/// What the threads leave: live timeouts, and tasks with whether their
/// handle's `cancel` returned `true` or `stop` handed them back.
#[derive(Default)]
struct Left {
    timeouts: Vec<Timeout>,
    tasks: Vec<Arc<Task>>,
    cancelled_by_handle: Vec<Arc<Task>>,
    handed_back: Vec<Arc<Task>>,
}

impl Left {
    fn extend(&mut self, other: Left) {
        self.timeouts.extend(other.timeouts);
        self.tasks.extend(other.tasks);
        self.cancelled_by_handle.extend(other.cancelled_by_handle);
        self.handed_back.extend(other.handed_back);
    }
}

/// With the threads done: the pending count is exact; then the runtime runs
/// alone, one tick at a time, and nothing may stay pending past its tick;
/// then every timeout completes, every task ran or was cancelled once, and
/// once every handle is gone the counts are zero.
fn settle(common: &Common, mut left: Left) {
    let pending = left.timeouts.iter().filter(|t| t.is_pending()).count()
        + left
            .tasks
            .iter()
            .filter(|t| t.state.load(SeqCst) == T_PENDING)
            .count();
    assert_eq!(common.pending_count(), pending, "pending count");

    // Whatever the runtime was asked to do meanwhile (a spawned wake, a due
    // alarm) it does now.
    while common.runtime_step() {}
    loop {
        let now = common.now();
        for (i, shard) in common.shards.iter().enumerate() {
            let earliest = shard.state.lock().wheel.earliest_pending();
            if let Some(tick) = earliest {
                assert!(
                    tick > now,
                    "lost wake-up: an entry of shard {i} due at {tick} is pending at {now}"
                );
            }
        }
        if now >= END + 2 {
            break;
        }
        common.advance();
    }
    assert_eq!(common.turn_state.load(SeqCst), IDLE);

    for t in &mut left.timeouts {
        // Every waker that went into the wheel was woken once, when its
        // entry fired or was cancelled: none is lost, none woken twice.
        if let Word::Registered(key) = t.word {
            let mut state = common.shards[t.shard].state.lock();
            let entry = state.wheel.entry(key);
            assert_ne!(entry.state, State::Pending, "a timeout never completed");
            assert!(entry.waker.is_none(), "a completed entry kept its waker");
        }
        assert_eq!(t.waker.0.load(SeqCst), t.stored, "wakes of a timeout");
        assert!(t.poll(), "a timeout never completed");
    }
    for task in &left.handed_back {
        assert_eq!(task.state.load(SeqCst), T_CANCELLED);
        assert!(
            task.take_task(),
            "stop handed back a task without its closure"
        );
    }
    let handed_back: Vec<_> = left.handed_back.iter().map(Arc::as_ptr).collect();
    for task in &left.tasks {
        let state = task.state.load(SeqCst);
        let runs = task.runs.load(SeqCst);
        let by_handle = left
            .cancelled_by_handle
            .iter()
            .any(|t| Arc::ptr_eq(t, task));
        let by_stop = handed_back.contains(&Arc::as_ptr(task));
        match state {
            T_EXPIRED => {
                assert_eq!(runs, 1, "an expired task ran {runs} times");
                assert!(!by_handle && !by_stop, "a task ran and was cancelled");
            }
            T_CANCELLED => {
                assert_eq!(runs, 0, "a cancelled task ran");
                assert!(!task.take_task(), "a cancelled task kept its closure");
                assert!(by_handle ^ by_stop || common.stopped.load(SeqCst) == RUNTIME_SHUT_DOWN);
                assert!(!(by_handle && by_stop), "cancelled twice");
            }
            _ => panic!("a task is still pending at the end"),
        }
    }
    drop(left);
    assert_eq!(
        common.pending_count(),
        0,
        "pending count with every handle gone"
    );
    let keep = *common.keep_alive.lock();
    assert_eq!(keep, (0, false), "keep-alive count at the end");
}

// ---------------------------------------------------------------------------
// Scenarios.

/// Timeouts created, registered, reset earlier and later, and dropped on two
/// threads and two shards, while the runtime moves the clock and the driver
/// turns.
fn timeouts_race_turns(variant: Variant) {
    let common = Common::new(2, variant);
    // One entry already waiting, so that the driver has a turn to take.
    let mut first = Timeout::new(&common, 0, 2).unwrap();
    assert!(!first.poll());

    let c = common.clone();
    let a = thread::spawn(move || {
        let mut t = Timeout::new(&c, 0, 4).unwrap();
        t.poll();
        t.reset(1); // earlier
        t.poll();
        let mut u = Timeout::new(&c, 0, 3).unwrap();
        u.poll();
        drop(u);
        Left {
            timeouts: vec![t],
            ..Left::default()
        }
    });
    let c = common.clone();
    let b = thread::spawn(move || {
        let mut t = Timeout::new(&c, 1, 2).unwrap();
        t.poll();
        t.reset(6); // later
        t.poll();
        t.reset(3); // earlier again
        t.poll();
        Left {
            timeouts: vec![t],
            ..Left::default()
        }
    });
    let c = common.clone();
    let runtime = thread::spawn(move || {
        for _ in 0..3 {
            c.advance();
        }
    });
    // Another worker runs the driver's wakes spawned onto the runtime,
    // racing the timer's own.
    let c = common.clone();
    let worker = thread::spawn(move || {
        for _ in 0..2 {
            c.run_spawned();
            thread::yield_now();
        }
    });
    // The owner of `first` polls it again and resets it after it fired.
    first.poll();
    first.reset(5);
    first.poll();
    let mut left = Left {
        timeouts: vec![first],
        ..Left::default()
    };
    left.extend(a.join().unwrap());
    left.extend(b.join().unwrap());
    runtime.join().unwrap();
    worker.join().unwrap();
    settle(&common, left);
}

/// Tasks scheduled on one thread; their handle cancelled on another, which
/// then stops the timer; the runtime moves the clock and the driver runs
/// what is due.
fn tasks_race_stop(variant: Variant) {
    let common = Common::new(1, variant);
    let slot: Arc<Mutex<Option<Arc<Task>>>> = Arc::new(Mutex::new(None));

    let (c, s) = (common.clone(), slot.clone());
    let scheduler = thread::spawn(move || {
        let mut left = Left::default();
        if let Some(task) = schedule(&c, 0, 1) {
            left.tasks.push(task);
        }
        if let Some(task) = schedule(&c, 0, 2) {
            *s.lock().unwrap() = Some(task.clone());
            left.tasks.push(task);
        }
        left
    });
    let (c, s) = (common.clone(), slot.clone());
    let stopper = thread::spawn(move || {
        let mut left = Left::default();
        let task = s.lock().unwrap().clone();
        if let Some(task) = task {
            if cancel(&c, &task) {
                left.cancelled_by_handle.push(task);
            }
        }
        left.handed_back = stop(&c, STOPPED);
        left
    });
    let c = common.clone();
    let runtime = thread::spawn(move || {
        for _ in 0..2 {
            c.advance();
        }
    });
    let mut left = scheduler.join().unwrap();
    left.extend(stopper.join().unwrap());
    runtime.join().unwrap();
    settle(&common, left);
}

/// Timeouts and a task in use while the runtime shuts down (its guard
/// stops the timer), and a `Timer::stop` racing it.
fn runtime_shuts_down(variant: Variant) {
    let common = Common::new(1, variant);

    let c = common.clone();
    let user = thread::spawn(move || {
        let mut left = Left::default();
        if let Some(mut t) = Timeout::new(&c, 0, 2) {
            t.poll();
            t.reset(4);
            t.poll();
            left.timeouts.push(t);
        }
        if let Some(task) = schedule(&c, 0, 3) {
            left.tasks.push(task);
        }
        if let Some(mut t) = Timeout::new(&c, 0, 1) {
            t.poll();
            left.timeouts.push(t);
        }
        left
    });
    let c = common.clone();
    let other = thread::spawn(move || {
        let mut left = Left::default();
        if let Some(task) = schedule(&c, 0, 2) {
            if cancel(&c, &task) {
                left.cancelled_by_handle.push(task.clone());
            }
            left.tasks.push(task);
        }
        left.handed_back = stop(&c, STOPPED);
        left
    });
    let c = common.clone();
    let runtime = thread::spawn(move || {
        for _ in 0..3 {
            c.advance();
        }
    });
    // The runtime shutting down drops the guard task, on another worker
    // than the one turning the wheels.
    let c = common.clone();
    let shutdown = thread::spawn(move || {
        thread::yield_now();
        c.shut_down();
    });
    let mut left = user.join().unwrap();
    left.extend(other.join().unwrap());
    runtime.join().unwrap();
    shutdown.join().unwrap();
    // Stopped: nothing is left in any wheel, resets included.
    for shard in &common.shards {
        assert_eq!(shard.state.lock().wheel.earliest_pending(), None);
    }
    settle(&common, left);
}

// ---------------------------------------------------------------------------
// The runs.

/// Schedules per scheduler and scenario.
const ITERATIONS: usize = 2_000;

/// The schedulers' seed (`HASHWHEEL_SHUTTLE_SEED` picks others); the broken
/// variants always run from it, so that their failing must not hang on luck.
const SEED: u64 = 0x15;

fn holds(name: &str, scenario: fn(Variant)) {
    let variant = Variant::default();
    harness::holds(name, harness::seed(SEED), ITERATIONS, move || {
        scenario(variant)
    });
    let counts = COVER.with(Cell::get);
    for (name, count) in COVER_NAMES.iter().zip(counts) {
        println!("{name}: {count}");
    }
}

fn caught(name: &str, scenario: fn(Variant), variant: Variant, expect: &str) {
    let failure = harness::caught(name, SEED, ITERATIONS, move || scenario(variant));
    assert!(
        failure.contains(expect),
        "{name}: failed otherwise: {failure}"
    );
}

#[test]
fn timeouts_racing_turns_are_never_early_lost_or_doubled() {
    holds("timeouts_race_turns", timeouts_race_turns);
}

#[test]
fn tasks_racing_cancel_and_stop_end_once_and_release_the_count_once() {
    holds("tasks_race_stop", tasks_race_stop);
}

#[test]
fn a_runtime_shutting_down_completes_everything_pending() {
    holds("runtime_shuts_down", runtime_shuts_down);
}

#[test]
fn the_model_catches_the_count_taken_after_the_insert() {
    let broken = Variant {
        count_after_insert: true,
        ..Variant::default()
    };
    caught(
        "count_after_insert",
        tasks_race_stop,
        broken,
        "keep-alive count underflow",
    );
}

#[test]
fn the_model_catches_a_wake_under_the_lock() {
    let broken = Variant {
        wake_under_lock: true,
        ..Variant::default()
    };
    caught(
        "wake_under_lock",
        timeouts_race_turns,
        broken,
        "while holding",
    );
}

#[test]
fn the_model_catches_a_driver_that_skips_its_re_check() {
    let broken = Variant {
        skip_recheck: true,
        ..Variant::default()
    };
    caught("skip_recheck", timeouts_race_turns, broken, "lost wake-up");
}

#[test]
fn the_model_catches_a_ring_at_its_tick_taken_for_nothing() {
    let broken = Variant {
        nothing_at_its_tick: true,
        ..Variant::default()
    };
    caught(
        "nothing_at_its_tick",
        timeouts_race_turns,
        broken,
        "lost wake-up",
    );
}

#[test]
fn the_model_catches_an_alarm_disarmed_while_its_wake_is_on_its_way() {
    let broken = Variant {
        disarm_when_due: true,
        ..Variant::default()
    };
    caught(
        "disarm_when_due",
        timeouts_race_turns,
        broken,
        "lost wake-up",
    );
}
