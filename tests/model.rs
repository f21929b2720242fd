//! A randomized model test of the public [`Timer`] under paused time.
//!
//! Seeded operation sequences (sleep with delays from zero to years and
//! `Duration::MAX`, which is tokio's 30 years; cancel, reset earlier and
//! later, reset into the past, advance the clock by a tick or by years,
//! advance to just before, at or after the next deadline, schedule and
//! cancel tasks, stop) run against a reference model, `BTreeMap`s of the
//! live timeouts and tasks. After every step:
//!
//! * every timeout whose deadline (to the microsecond) has passed by the
//!   runtime's own millisecond grid, where a `tokio::time::Sleep` at the
//!   same alarm instant would have fired (for a tick over 1 ms: within a
//!   tick of the deadline, on the runtime's milliseconds), has fired: woken
//!   exactly once, and ready when polled (none lost, none later than tokio,
//!   nor than a tick);
//! * no timeout whose deadline has not passed was woken or is ready (never
//!   early; one whose deadline passed within the runtime's millisecond may
//!   fire with an earlier one);
//! * a driver catch-up wakes in deadline order, bucket by bucket;
//! * a task runs once, once its deadline passed, by the time tokio would
//!   have fired it (or at the driver's next turn if it was due when
//!   scheduled: never inline), never after it was cancelled; tasks are
//!   spawned (the default `TaskExecutor`), so the catch-up order holds
//!   among timeouts and among tasks;
//! * a cancelled timeout is never woken again;
//! * `pending()` equals the model's count, and `deadline()` the model's.
//!
//! A timer of a tick under 2 ms follows tokio's millisecond on paused time
//! (issue 56): a timeout fires, and a deadline already past completes at
//! its first poll (or at its creation), only once the runtime's timer has
//! processed its millisecond, and a catch-up wakes the timeouts of one
//! millisecond in the order they registered. The model says so for those
//! shapes: its clock for firing is the runtime's last millisecond (the
//! runtime parks, and processes its timer, before each operation).
//! `tests/paused_time_differential.rs` checks the same rules against
//! `tokio::time` itself.
//!
//! Each case runs on its own paused runtime (built by hand rather than with
//! `#[tokio::test]`, so that a failing case can be replayed while it is
//! shrunk). A failure prints the seed, the timer's shape and the smallest
//! sequence of operations that still fails.

mod common;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use hashwheel::{TaskHandle, Timeout, Timer};
use tokio::time::Instant;

/// Deadlines at or past this many microseconds never fire (the wheel's
/// horizon: over 146,000 years).
const NEVER: u64 = (1 << 62) - 1;
const YEAR: Duration = Duration::from_secs(365 * 86_400);
/// Where a delay too long to keep goes: tokio's "far future", 30 years
/// from now (issue 39: it was never).
const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
/// The deadline words' range, in microseconds (about 8.9 years): the
/// timer keeps a deadline at or past it in the wheel alone.
const DEADLINE_WORDS: u64 = (1 << 48) - 1;
/// The clock is not moved past this much uptime (past 584 years, short of
/// the wheel's horizon).
const MAX_UPTIME: Duration = Duration::from_secs(1500 * 365 * 86_400);

use common::SplitMix as Rng;

#[derive(Debug, Clone, Copy)]
struct Shape {
    buckets: usize,
    tick: Duration,
    shards: Option<usize>,
}

impl Shape {
    fn tick_ns(&self) -> u64 {
        self.tick.as_nanos() as u64
    }

    /// The tick in microseconds (the wheel's time unit).
    fn tick_us(&self) -> u64 {
        self.tick_ns().div_ceil(1_000)
    }

    /// log2 of the bucket width in microseconds.
    fn res(&self) -> u32 {
        self.tick_us().next_power_of_two().trailing_zeros()
    }

    fn ring(&self) -> u64 {
        self.buckets.clamp(64, 4096) as u64
    }
}

#[derive(Debug, Clone)]
enum Op {
    Sleep {
        delay: Duration,
        poll: bool,
    },
    /// `sleep_until` an instant `ago` before now.
    SleepUntilPast {
        ago: Duration,
    },
    Cancel {
        pick: usize,
        by_drop: bool,
    },
    Reset {
        pick: usize,
        delay: Duration,
        poll: bool,
    },
    /// `reset_at` the timeout's own deadline plus `extra`: a reset to a
    /// later deadline, which takes no lock while the timeout is pending
    /// (the driver re-files it when the old deadline comes due).
    ResetLater {
        pick: usize,
        extra: Duration,
        poll: bool,
    },
    /// `reset_at` an instant `ago` before now.
    ResetAtPast {
        pick: usize,
        ago: Duration,
        poll: bool,
    },
    /// `try_schedule` a task.
    Schedule {
        delay: Duration,
    },
    CancelTask {
        pick: usize,
    },
    Advance(Duration),
    /// Advance to the earliest pending fire instant, plus `offset_ms`.
    AdvanceToNext {
        offset_ms: i8,
    },
    Stop,
}

fn gen_delay(rng: &mut Rng, shape: &Shape) -> Duration {
    let tick = shape.tick;
    let jitter = Duration::from_nanos(rng.below(shape.tick_ns()));
    let ticks = |n: u64| tick * u32::try_from(n).unwrap();
    match rng.percent() {
        0..=9 => Duration::ZERO,
        10..=34 => ticks(rng.below(4)) + jitter,
        35..=59 => ticks(rng.below(shape.buckets as u64 * 8)) + jitter,
        60..=74 => ticks(rng.below(shape.buckets as u64 * shape.ring() * 3)) + jitter,
        75..=86 => Duration::from_millis(rng.below(30 * 86_400_000)),
        87..=92 => YEAR + Duration::from_millis(rng.below(4 * 365 * 86_400_000)),
        // Centuries: past 584 years, where `u64` nanoseconds end.
        93..=95 => YEAR * (100 + rng.below(900) as u32),
        96..=97 => Duration::MAX,
        _ => YEAR * 100_000,
    }
}

fn gen_advance(rng: &mut Rng, shape: &Shape) -> Op {
    let tick_ms = shape.tick.as_millis() as u64;
    let ms = match rng.percent() {
        0..=29 => tick_ms * rng.below(4) + rng.below(2),
        30..=49 => rng.below(tick_ms * shape.buckets as u64 * 4),
        50..=64 => rng.below(tick_ms * shape.buckets as u64 * shape.ring() * 2),
        65..=74 => rng.below(40 * 86_400_000),
        75..=78 => 365 * 86_400_000 + rng.below(3 * 365 * 86_400_000),
        79 => (100 + rng.below(200)) * 365 * 86_400_000,
        _ => {
            let offset_ms = rng.below(3) as i8 - 1;
            return Op::AdvanceToNext { offset_ms };
        }
    };
    Op::Advance(Duration::from_millis(ms))
}

fn gen_ops(rng: &mut Rng, shape: &Shape, len: usize) -> Vec<Op> {
    (0..len)
        .map(|_| {
            let pick = rng.next() as usize;
            match rng.percent() {
                0..=27 => Op::Sleep {
                    delay: gen_delay(rng, shape),
                    poll: rng.percent() < 85,
                },
                28..=30 => Op::SleepUntilPast {
                    ago: Duration::from_millis(rng.below(100)),
                },
                31..=42 => Op::Cancel {
                    pick,
                    by_drop: rng.percent() < 50,
                },
                43..=50 => Op::Reset {
                    pick,
                    delay: gen_delay(rng, shape),
                    poll: rng.percent() < 85,
                },
                51..=57 => Op::ResetLater {
                    pick,
                    extra: match rng.percent() {
                        0..=39 => Duration::from_nanos(1 + rng.below(shape.tick_ns())),
                        40..=79 => shape.tick * (1 + rng.below(shape.buckets as u64 * 2)) as u32,
                        _ => gen_delay(rng, shape),
                    },
                    poll: rng.percent() < 50,
                },
                58..=60 => Op::ResetAtPast {
                    pick,
                    ago: Duration::from_millis(rng.below(100)),
                    poll: rng.percent() < 85,
                },
                61 if rng.percent() < 20 => Op::Stop,
                62..=66 => Op::Schedule {
                    delay: gen_delay(rng, shape),
                },
                67 | 68 => Op::CancelTask { pick },
                _ => gen_advance(rng, shape),
            }
        })
        .collect()
}

/// A waker that counts its wakes and logs them in one shared order.
struct Probe {
    id: usize,
    wakes: AtomicUsize,
    log: Arc<Mutex<Vec<usize>>>,
}

impl Wake for Probe {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push(self.id);
    }
}

impl Probe {
    fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

/// One live timeout and what the model expects of it.
struct Live {
    timeout: Timeout,
    probe: Arc<Probe>,
    /// The deadline as the timer keeps it (`None`: never).
    deadline: Option<Instant>,
    /// The first tick at or after `deadline`.
    fire_tick: u64,
    /// Registered: polled since it was created or last reset.
    polled: bool,
    /// Fired (or cancelled by `stop`) since it was created or last reset;
    /// seen ready, or woken and deliberately left unpolled.
    done: bool,
    /// Completed because the timer stopped.
    cancelled: bool,
    /// Wakes accounted for so far.
    wakes_seen: usize,
}

/// A scheduled task and what the model expects of it.
struct LiveTask {
    handle: TaskHandle,
    deadline: Option<Instant>,
    fire_tick: u64,
    /// The time it must have run by: its deadline, or, if that was already
    /// due when it was scheduled, the next microsecond (tasks never run
    /// inline), in microseconds.
    due_by: u64,
    /// Ran, or was cancelled.
    done: bool,
}

struct Model {
    shape: Shape,
    timer: Timer,
    start: Instant,
    live: BTreeMap<usize, Live>,
    tasks: BTreeMap<usize, LiveTask>,
    /// Tasks that ran, and when.
    runs: Arc<Mutex<Vec<(usize, Instant)>>>,
    /// Probes of cancelled timeouts, with their wakes when cancelled.
    dead: Vec<(Arc<Probe>, usize)>,
    log: Arc<Mutex<Vec<usize>>>,
    next_id: usize,
    stopped: bool,
}

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Model {
    /// A deadline in microseconds since the start, rounded up.
    fn tick_of(&self, deadline: Option<Instant>) -> u64 {
        match deadline {
            None => NEVER,
            Some(d) => match d.checked_duration_since(self.start) {
                None => 0,
                Some(since) => {
                    let tick = since.as_nanos().div_ceil(1_000);
                    u64::try_from(tick).map_or(NEVER, |tick| tick.min(NEVER))
                }
            },
        }
    }

    /// `delay` from `now`, as the timer keeps a delay: one too long to keep
    /// (its sum overflows, or reaches [`NEVER`]) is [`FAR`] from now.
    fn after(&self, now: Instant, delay: Duration) -> Instant {
        match now.checked_add(delay) {
            Some(d) if self.tick_of(Some(d)) < NEVER => d,
            _ => now + FAR,
        }
    }

    /// The clock in microseconds since the start, rounded down.
    fn now_tick(&self) -> u64 {
        let since = (Instant::now() - self.start).as_nanos();
        u64::try_from(since / 1_000).unwrap()
    }

    fn instant_of(&self, tick: u64) -> Instant {
        let ns = u128::from(tick) * 1_000;
        let since = Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32);
        self.start + since
    }

    /// Whether the timer follows tokio's millisecond (paused time, a tick
    /// under 2 ms).
    fn follows_tokio_ms(&self) -> bool {
        self.shape.tick_us() < 2_000
    }

    /// The clock as the timer fires by it, in microseconds since the start:
    /// the clock itself, or, following tokio's millisecond, the runtime
    /// timer's last one (the runtime processed it as it parked).
    fn fire_clock(&self) -> u64 {
        let now = self.now_tick();
        if self.follows_tokio_ms() {
            now / 1_000 * 1_000
        } else {
            now
        }
    }

    /// Whether a deadline of `fire` has passed: it may have fired.
    fn may_fire(&self, fire: u64) -> bool {
        fire < NEVER && fire <= self.fire_clock()
    }

    /// Whether it must have fired: the runtime (which started with the
    /// timer) has processed the millisecond of its alarm: the deadline
    /// itself for a tick of 1 ms, else at most a tick (of the runtime's
    /// whole milliseconds) less a microsecond after it: the alarm batches
    /// within the tick, never later (under load too: the driver never puts
    /// its next turn off).
    fn must_fire(&self, fire: u64) -> bool {
        if fire >= NEVER {
            return false;
        }
        let tick_us = self.shape.tick_us();
        let alarm = if tick_us < 2_000 {
            fire
        } else {
            fire + tick_us / 1_000 * 1_000 - 1
        };
        alarm.div_ceil(1_000) <= self.now_tick() / 1_000
    }

    fn is_due(&self, live: &Live) -> bool {
        self.must_fire(live.fire_tick)
    }

    fn pick(&self, pick: usize) -> Option<usize> {
        let n = self.live.len();
        (n > 0).then(|| *self.live.keys().nth(pick % n).unwrap())
    }

    /// Timeouts neither fired nor cancelled, by the model.
    fn pending(&self) -> usize {
        if self.stopped {
            return 0;
        }
        self.live.values().filter(|l| !l.done).count()
            + self.tasks.values().filter(|t| !t.done).count()
    }

    /// The exact tick a timeout or task fires at, where the model knows it:
    /// not for a task that was due when scheduled (it runs on the tick after
    /// the last one the driver processed).
    fn fire_tick(&self, id: usize) -> Option<u64> {
        let timeout = self.live.get(&id).map(|l| l.fire_tick);
        timeout.or_else(|| {
            let task = self.tasks.get(&id)?;
            (task.due_by == task.fire_tick).then_some(task.fire_tick)
        })
    }

    /// Polls a live timeout and checks the answer against the model.
    fn poll(&mut self, id: usize) -> Result<Poll<()>, String> {
        let stopped = self.stopped;
        let due = self.may_fire(self.live[&id].fire_tick);
        let now = Instant::now();
        let now_tick = self.now_tick();
        let l = self.live.get_mut(&id).unwrap();
        let waker = Waker::from(l.probe.clone());
        let res = Pin::new(&mut l.timeout).poll(&mut Context::from_waker(&waker));
        let wakes = l.probe.wakes();
        match res {
            Poll::Ready(()) if l.done => {
                ensure!(
                    wakes == l.wakes_seen,
                    "timeout {id} woken again after it completed"
                );
                ensure!(
                    l.timeout.is_cancelled() == l.cancelled
                        && l.timeout.is_expired() != l.cancelled,
                    "timeout {id}: cancelled {}, expired {}, model cancelled {}",
                    l.timeout.is_cancelled(),
                    l.timeout.is_expired(),
                    l.cancelled
                );
            }
            Poll::Ready(()) => {
                ensure!(
                    due || stopped,
                    "timeout {id} ready early: fire tick {} at {now:?}",
                    l.fire_tick
                );
                if let Some(deadline) = l.deadline.filter(|_| !stopped) {
                    ensure!(now >= deadline, "timeout {id} ready before its deadline");
                }
                ensure!(
                    wakes <= l.wakes_seen + 1,
                    "timeout {id} woken {} times for one firing",
                    wakes - l.wakes_seen
                );
                ensure!(
                    l.timeout.is_cancelled() == stopped && l.timeout.is_expired() != stopped,
                    "timeout {id}: cancelled {}, expired {}, timer stopped {stopped}",
                    l.timeout.is_cancelled(),
                    l.timeout.is_expired()
                );
                l.done = true;
                l.cancelled = stopped;
                l.polled = true;
                l.wakes_seen = wakes;
            }
            Poll::Pending => {
                ensure!(!l.done, "timeout {id} completed, then pending");
                ensure!(
                    wakes == l.wakes_seen,
                    "timeout {id} woken while pending (fire tick {}, now tick {now_tick})",
                    l.fire_tick
                );
                l.polled = true;
            }
        }
        Ok(res)
    }

    fn insert(
        &mut self,
        timeout: Timeout,
        deadline: Option<Instant>,
        poll: bool,
    ) -> Result<(), String> {
        self.next_id += 1;
        let id = self.next_id;
        let probe = Arc::new(Probe {
            id,
            wakes: AtomicUsize::new(0),
            log: self.log.clone(),
        });
        let fire_tick = self.tick_of(deadline);
        // A deadline not after the instant of creation completes at once,
        // without a wake, and is never pending; following tokio's
        // millisecond, only one whose millisecond the runtime's timer has
        // processed (the rest are decided at their first poll).
        let created_due = deadline.is_some_and(|d| d <= Instant::now())
            && !self.stopped
            && (!self.follows_tokio_ms() || self.may_fire(fire_tick));
        self.live.insert(
            id,
            Live {
                timeout,
                probe,
                deadline,
                fire_tick,
                polled: created_due,
                done: created_due,
                cancelled: false,
                wakes_seen: 0,
            },
        );
        if poll {
            // Ready or not, `poll` checked the answer against the model.
            let _ = self.poll(id)?;
        }
        let (got, want) = (self.timer.pending(), self.pending());
        ensure!(got == want, "pending() = {got} after a sleep, model {want}");
        Ok(())
    }

    fn reset(&mut self, id: usize, deadline: Option<Instant>, poll: bool) -> Result<(), String> {
        // `None` resets by `Duration::MAX`: 30 years from now.
        let requested = deadline;
        let deadline = Some(deadline.unwrap_or_else(|| Instant::now() + FAR));
        let fire_tick = self.tick_of(deadline);
        let stopped = self.stopped;
        let l = self.live.get_mut(&id).unwrap();
        match requested {
            Some(d) => l.timeout.reset_at(d),
            None => l.timeout.reset(Duration::MAX),
        }
        if !stopped {
            l.deadline = deadline;
            l.fire_tick = fire_tick;
            // A fired timeout registers again on its next poll.
            if l.done {
                l.polled = false;
            }
            l.done = false;
        }
        if poll {
            // Ready or not, `poll` checked the answer against the model.
            let _ = self.poll(id)?;
        }
        Ok(())
    }

    async fn step(&mut self, op: &Op) -> Result<(), String> {
        let now = Instant::now();
        match *op {
            Op::Sleep { delay, poll } => match self.timer.try_sleep(delay) {
                Ok(t) => {
                    ensure!(!self.stopped, "try_sleep succeeded on a stopped timer");
                    self.insert(t, Some(self.after(now, delay)), poll)?;
                }
                Err(e) => ensure!(self.stopped && e.is_stopped(), "try_sleep failed: {e}"),
            },
            Op::SleepUntilPast { ago } => {
                let deadline = now.checked_sub(ago).unwrap_or(now);
                match self.timer.try_sleep_until(deadline) {
                    Ok(t) => {
                        ensure!(
                            !self.stopped,
                            "try_sleep_until succeeded on a stopped timer"
                        );
                        self.insert(t, Some(deadline), true)?;
                    }
                    Err(e) => ensure!(self.stopped && e.is_stopped(), "try_sleep_until: {e}"),
                }
            }
            Op::Cancel { pick, by_drop } => {
                let Some(id) = self.pick(pick) else {
                    return Ok(());
                };
                let l = self.live.remove(&id).unwrap();
                let was_pending = !l.done && !self.stopped;
                let wakes = l.probe.wakes();
                if by_drop {
                    drop(l.timeout);
                } else {
                    let cancelled = l.timeout.cancel();
                    ensure!(
                        cancelled == was_pending,
                        "cancel() = {cancelled}, model says pending: {was_pending}"
                    );
                }
                self.dead.push((l.probe, wakes));
                let (got, want) = (self.timer.pending(), self.pending());
                ensure!(
                    got == want,
                    "pending() = {got} after a cancel, model {want}"
                );
            }
            Op::Reset { pick, delay, poll } => {
                if let Some(id) = self.pick(pick) {
                    self.reset(id, now.checked_add(delay), poll)?;
                }
            }
            Op::ResetLater { pick, extra, poll } => {
                if let Some(id) = self.pick(pick) {
                    let deadline = self.live[&id].deadline.and_then(|d| d.checked_add(extra));
                    self.reset(id, deadline, poll)?;
                }
            }
            Op::ResetAtPast { pick, ago, poll } => {
                if let Some(id) = self.pick(pick) {
                    let deadline = now.checked_sub(ago).unwrap_or(now);
                    self.reset(id, Some(deadline), poll)?;
                }
            }
            Op::Schedule { delay } => {
                self.next_id += 1;
                let id = self.next_id;
                let (log, runs) = (self.log.clone(), self.runs.clone());
                let task = move || {
                    log.lock().unwrap().push(id);
                    runs.lock().unwrap().push((id, Instant::now()));
                };
                match self.timer.try_schedule(delay, task) {
                    Ok(handle) => {
                        ensure!(!self.stopped, "try_schedule succeeded on a stopped timer");
                        let deadline = Some(self.after(now, delay));
                        if let Some(deadline) = deadline {
                            ensure!(
                                handle.deadline() == deadline.into_std(),
                                "task {id}: deadline()"
                            );
                        }
                        let fire_tick = self.tick_of(deadline);
                        let due_by = fire_tick.max(self.now_tick() + 1);
                        let task = LiveTask {
                            handle,
                            deadline,
                            fire_tick,
                            due_by,
                            done: false,
                        };
                        self.tasks.insert(id, task);
                        let (got, want) = (self.timer.pending(), self.pending());
                        ensure!(
                            got == want,
                            "pending() = {got} after a schedule, model {want}"
                        );
                    }
                    Err(e) => ensure!(self.stopped && e.is_stopped(), "try_schedule: {e}"),
                }
            }
            Op::CancelTask { pick } => {
                let n = self.tasks.len();
                if n == 0 {
                    return Ok(());
                }
                let stopped = self.stopped;
                let (id, task) = self.tasks.iter_mut().nth(pick % n).unwrap();
                let was_pending = !task.done && !stopped;
                let cancelled = task.handle.cancel();
                ensure!(
                    cancelled == was_pending,
                    "task {id}: cancel() = {cancelled}, model says pending: {was_pending}"
                );
                if cancelled {
                    task.done = true;
                    ensure!(task.handle.is_cancelled(), "task {id}: not is_cancelled()");
                }
                let (got, want) = (self.timer.pending(), self.pending());
                ensure!(
                    got == want,
                    "pending() = {got} after a task cancel, model {want}"
                );
            }
            Op::Advance(d) => self.advance(d).await,
            Op::AdvanceToNext { offset_ms } => {
                let next = self
                    .live
                    .values()
                    .filter(|l| !l.done && l.fire_tick < NEVER)
                    .map(|l| l.fire_tick)
                    .min();
                if let Some(next) = next {
                    let target = self.instant_of(next);
                    let target = if offset_ms < 0 {
                        target - Duration::from_millis(1)
                    } else {
                        target + Duration::from_millis(offset_ms as u64)
                    };
                    if target > now {
                        self.advance(target - now).await;
                    }
                }
            }
            Op::Stop => {
                let never_ran = self.timer.stop();
                let want = self.tasks.values().filter(|t| !t.done).count();
                ensure!(
                    never_ran.len() == want,
                    "stop() returned {} tasks, model {want}",
                    never_ran.len()
                );
                for (id, task) in &mut self.tasks {
                    if !task.done {
                        ensure!(
                            task.handle.is_cancelled(),
                            "task {id} not cancelled by stop()"
                        );
                        task.done = true;
                    }
                }
                ensure!(self.timer.is_stopped(), "is_stopped() false after stop()");
                self.stopped = true;
                common::settle().await;
                // Every timeout still pending is woken once (if registered)
                // and completes, cancelled.
                let ids: Vec<usize> = self.live.keys().copied().collect();
                for id in ids {
                    let l = &self.live[&id];
                    if l.done {
                        continue;
                    }
                    let expected = l.wakes_seen + usize::from(l.polled);
                    ensure!(
                        l.probe.wakes() == expected,
                        "timeout {id} woken {} times by stop(), expected {}",
                        l.probe.wakes() - l.wakes_seen,
                        expected - l.wakes_seen
                    );
                    ensure!(
                        self.poll(id)?.is_ready(),
                        "timeout {id} pending after stop()"
                    );
                }
            }
        }
        Ok(())
    }

    async fn advance(&mut self, d: Duration) {
        let uptime = Instant::now() - self.start;
        let d = d.min(MAX_UPTIME.saturating_sub(uptime));
        tokio::time::advance(d).await;
    }

    /// Accounts for the tasks that ran and the timeouts that were woken:
    /// each against the model. On the first pass, a due timeout not yet
    /// registered is polled (it registers); returns whether one was left
    /// pending. On the second pass every due one must have fired.
    fn account(&mut self, first: bool) -> Result<bool, String> {
        let now_tick = self.now_tick();
        let runs = std::mem::take(&mut *self.runs.lock().unwrap());
        for (id, at) in runs {
            let Some(task) = self.tasks.get_mut(&id) else {
                return Err(format!("unknown task {id} ran"));
            };
            ensure!(!task.done, "task {id} ran after it ran or was cancelled");
            ensure!(
                task.fire_tick < NEVER && task.fire_tick <= now_tick,
                "task {id} ran early: fire tick {}, now tick {now_tick}",
                task.fire_tick
            );
            if let Some(deadline) = task.deadline {
                ensure!(at >= deadline, "task {id} ran before its deadline");
            }
            ensure!(task.handle.is_expired(), "task {id} ran, not is_expired()");
            task.done = true;
        }
        for (id, task) in &self.tasks {
            let due = self.must_fire(task.due_by);
            ensure!(
                task.done || !due,
                "task {id} due at {} µs did not run by {now_tick} µs",
                task.fire_tick
            );
        }
        for (probe, wakes) in &self.dead {
            ensure!(
                probe.wakes() == *wakes,
                "cancelled timeout {} woken after cancellation",
                probe.id
            );
        }
        let ids: Vec<usize> = self.live.keys().copied().collect();
        let mut registered_late = false;
        for &id in &ids {
            let l = &self.live[&id];
            if l.done {
                ensure!(
                    l.probe.wakes() == l.wakes_seen,
                    "timeout {id} woken again after it completed"
                );
                continue;
            }
            let (must, may) = (self.is_due(l), self.may_fire(l.fire_tick));
            if !l.polled {
                // Not registered yet: a due one completes when polled (at
                // once, or on the driver's next turn, checked on the
                // second pass).
                if first && may && self.poll(id)?.is_pending() {
                    registered_late = true;
                }
                continue;
            }
            let woken = l.probe.wakes() - l.wakes_seen;
            ensure!(
                woken <= 1 && (woken == 1 || !must) && (woken == 0 || may),
                "timeout {id} woken {woken} times; must fire: {must}, may: {may} \
                 (deadline {} µs, now {} µs)",
                l.fire_tick,
                self.now_tick()
            );
            let due = woken == 1;
            if due && id % 4 == 0 {
                // Leave one in four fired but unpolled, as a task that has
                // not run yet would: later operations meet it in that state.
                let l = self.live.get_mut(&id).unwrap();
                l.done = true;
                l.wakes_seen += 1;
                continue;
            }
            let ready = self.poll(id)?.is_ready();
            ensure!(ready == due, "timeout {id} ready: {ready}, due: {due}");
        }
        Ok(registered_late)
    }

    /// Lets the driver run, then checks every timeout against the model.
    async fn check(&mut self, order_matters: bool) -> Result<(), String> {
        common::settle().await;
        let woken = std::mem::take(&mut *self.log.lock().unwrap());
        if order_matters {
            // A catch-up fires bucket by bucket. Only live timeouts can tell
            // their deadline; a cancelled one would have failed below.
            // Tasks are spawned (the default `TaskExecutor`) and run after
            // the turn's wakes, in the order they were spawned: the order
            // holds among timeouts and among tasks.
            // Following tokio's millisecond, a timeout is filed at the end
            // of its millisecond (but past the deadline words' range, about
            // 8.9 years of the timer's uptime), so that the timeouts of one
            // millisecond come out in the order they registered.
            let res = self.shape.res();
            let ms = self.follows_tokio_ms();
            for tasks in [false, true] {
                let order = |tick: u64| {
                    if ms && !tasks && tick < DEADLINE_WORDS {
                        (tick.div_ceil(1_000) * 1_000) >> res
                    } else {
                        tick >> res
                    }
                };
                let ticks: Vec<(usize, u64)> = woken
                    .iter()
                    .filter(|id| self.tasks.contains_key(id) == tasks)
                    .filter_map(|&id| self.fire_tick(id).map(|tick| (id, order(tick))))
                    .collect();
                ensure!(
                    ticks.windows(2).all(|w| w[0].1 <= w[1].1),
                    "woken out of deadline order: (id, tick) {ticks:?}"
                );
            }
        }
        let registered_late = self.account(true)?;
        if registered_late {
            // What registered late fires at the driver's next turn, with
            // whatever else that turn finds due.
            common::settle().await;
            self.log.lock().unwrap().clear();
            self.account(false)?;
        }
        let (got, want) = (self.timer.pending(), self.pending());
        ensure!(got == want, "pending() = {got}, model {want}");
        if !self.stopped {
            for (id, l) in &self.live {
                if !l.done && l.fire_tick < NEVER {
                    let want = self.instant_of(l.fire_tick);
                    let got = Instant::from_std(l.timeout.deadline());
                    ensure!(
                        got == want,
                        "timeout {id}: deadline() {got:?}, model {want:?}"
                    );
                }
            }
        }
        Ok(())
    }
}

async fn run_async(shape: Shape, ops: &[Op]) -> Result<(), String> {
    let mut builder = Timer::builder().tick(shape.tick).wheel_size(shape.buckets);
    if let Some(shards) = shape.shards {
        builder = builder.shards(shards);
    }
    let start = Instant::now();
    let timer = builder.build().unwrap();
    let mut model = Model {
        shape,
        timer,
        start,
        live: BTreeMap::new(),
        tasks: BTreeMap::new(),
        runs: Arc::new(Mutex::new(Vec::new())),
        dead: Vec::new(),
        log: Arc::new(Mutex::new(Vec::new())),
        next_id: 0,
        stopped: false,
    };
    for (i, op) in ops.iter().enumerate() {
        let order_matters = matches!(op, Op::Advance(_) | Op::AdvanceToNext { .. });
        if let Err(e) = model.step(op).await {
            return Err(format!("op {i} {op:?}: {e}"));
        }
        if let Err(e) = model.check(order_matters).await {
            return Err(format!("after op {i} {op:?}: {e}"));
        }
    }
    Ok(())
}

fn run(shape: Shape, ops: &[Op]) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(run_async(shape, ops))
    }));
    match res {
        Ok(res) => res,
        Err(panic) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("?")
        )),
    }
}

/// Drops operations, in chunks then one by one, while the case still fails.
fn shrink<T: Clone>(mut ops: Vec<T>, fails: impl Fn(&[T]) -> bool) -> Vec<T> {
    let mut chunk = ops.len().max(1);
    loop {
        let mut i = 0;
        while i < ops.len() {
            let mut smaller = ops.clone();
            smaller.drain(i..(i + chunk).min(ops.len()));
            if fails(&smaller) {
                ops = smaller;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 {
            return ops;
        }
        chunk /= 2;
    }
}

fn check_shape(shape: Shape, seeds: std::ops::Range<u64>, len: usize) {
    for seed in seeds {
        let mut rng = Rng(seed ^ (shape.buckets as u64) << 32 ^ nanos(shape.tick));
        let ops = gen_ops(&mut rng, &shape, len);
        if let Err(e) = run(shape, &ops) {
            let small = shrink(ops, |ops| run(shape, ops).is_err());
            let last = run(shape, &small).unwrap_err();
            panic!(
                "seed {seed}, {shape:?}: {e}\n\nshrunk to {} ops, failing with: {last}\n{small:#?}",
                small.len()
            );
        }
    }
}

const fn shape(buckets: usize, tick_ms: u64, shards: Option<usize>) -> Shape {
    Shape {
        buckets,
        tick: Duration::from_millis(tick_ms),
        shards,
    }
}

#[test]
fn default_wheel_1ms_tick_agrees_with_the_model() {
    check_shape(shape(512, 1, None), 0..150, 150);
}

#[test]
fn two_buckets_agree_with_the_model() {
    check_shape(shape(2, 1, Some(1)), 0..150, 150);
    check_shape(shape(2, 100, None), 0..80, 150);
}

#[test]
fn four_buckets_agree_with_the_model() {
    check_shape(shape(4, 10, Some(1)), 0..150, 150);
    check_shape(shape(4, 1, Some(3)), 0..80, 150);
}

#[test]
fn ticks_of_10ms_and_100ms_agree_with_the_model() {
    check_shape(shape(64, 10, None), 0..90, 150);
    check_shape(shape(16, 100, Some(1)), 0..90, 150);
}

#[test]
fn the_shrinker_keeps_only_what_makes_a_case_fail() {
    let ops: Vec<u32> = (0..100).collect();
    let small = shrink(ops, |ops| ops.contains(&17) && ops.contains(&42));
    assert_eq!(small, vec![17, 42]);
}
