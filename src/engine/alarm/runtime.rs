//! The alarm of a timer driven by a runtime: a runtime timer (a tokio
//! `Sleep`) polled with the driver's waker, so the runtime's own timer calls
//! the driver while it processes its timers, and the wakes the driver makes
//! there are batched with the runtime's (see `driver/runtime.rs`).
//!
//! The alarm is a ring of three runtime timers, a turn of the driver's grid
//! apart (a runtime millisecond, or the whole milliseconds of a coarser
//! tick): the next ring of a busy timer is already registered when the
//! driver re-arms, which then moves only the one that rang to the far end
//! of the ring (see [`RuntimeAlarm::arm`]).
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Sleep;

use super::Rearmed;
use crate::engine::clock::{far_future, Clock, Source, RUNTIME_MS_US};
use crate::engine::live::LiveTimer;
use crate::wheel::raw::NEVER;

/// The alarm of a timer driven by a runtime.
pub(crate) struct RuntimeAlarm {
    /// The runtime timers, from the driver's start until the timer stops
    /// (or its last handle goes).
    armed: Mutex<Option<Armed>>,
    /// The tick the alarm is armed for; `u64::MAX` when disarmed, [`DUE`]
    /// when a wake of the driver is on its way. Written under the lock of
    /// `armed`; the driver takes it without the lock as a turn starts
    /// ([`take_armed`](Self::take_armed)): an arm that races the take reads
    /// and writes it as if the take came first or last.
    tick: AtomicU64,
    /// Ends the driver's guard task once the timer is stopped or gone.
    ended: Arc<Notify>,
}

/// The runtime timers of a started driver, and the waker they call.
struct Armed {
    /// The alarm's runtime timers, each polled with the driver's waker
    /// when registered (see [`RuntimeAlarm::arm`]).
    ring: [Ring; RING],
    /// Turns the wheels (see `driver`).
    waker: Waker,
    /// The runtime the alarm rings on.
    handle: Handle,
    /// The timer of the ring set to the earliest instant by the last
    /// re-arm (see [`Armed::set_ring`]).
    head: usize,
    /// The clock's reading (`now`) at the driver's last re-arm: work due
    /// after it rings no sooner than a turn of the grid after that turn
    /// (see [`alarm_tick`]).
    turned: u64,
    /// Counts the timer among its runtime's live ones while the alarm
    /// exists: until the timer stops or its last handle goes.
    _live: LiveTimer,
}

/// One runtime timer of the alarm's ring.
struct Ring {
    sleep: Pin<Box<Sleep>>,
    /// The tick it was last set to (see [`alarm_tick`]); `None` for one
    /// made and never set (it is not registered with the runtime's timer).
    at: Option<u64>,
}

impl Ring {
    /// A runtime timer made but not registered: the runtime's timer never
    /// reaches it, and a paused runtime does not auto-advance to it.
    fn fresh(clock: &Clock) -> Ring {
        Ring {
            sleep: Box::pin(tokio::time::sleep_until(never(clock))),
            at: None,
        }
    }

    /// Whether it is registered with the runtime's timer, pending, with the
    /// driver's waker: not made fresh, and not rung since it was set.
    fn pending(&self) -> bool {
        self.at.is_some() && !self.sleep.is_elapsed()
    }

    /// Sets it to tick `at`, registered; polled with `waker` unless it was
    /// pending (a pending one keeps its waker). Returns whether it is due
    /// already (see [`arming`]).
    fn set(&mut self, at: u64, clock: &Clock, waker: &Waker) -> bool {
        let pending = self.pending();
        let instant = clock.instant_of(at);
        self.sleep
            .as_mut()
            .reset(tokio::time::Instant::from_std(instant));
        self.at = Some(at);
        if pending {
            return false;
        }
        // Outside the task's budget: a budget-limited poll would wake the
        // driver instead of registering.
        let sleep = &mut self.sleep;
        let mut poll = tokio::task::unconstrained(poll_fn(|cx| sleep.as_mut().poll(cx)));
        Pin::new(&mut poll)
            .poll(&mut Context::from_waker(waker))
            .is_ready()
    }
}

/// [`RuntimeAlarm::tick`] when an arm found its instant passed and woke the
/// driver (or spawned its wake): the alarm is as good as armed for the
/// timer's start. No later arm sets it (the turn to come re-arms for
/// everything inserted by then), and the wake is never taken for a ring for
/// nothing ([`RuntimeAlarm::rang_for_nothing`]): with the alarm disarmed
/// instead, an insert for later could arm it before the spawned wake ran,
/// and the wake, finding the alarm armed for later, would leave an insert
/// already due pending (`tests/shuttle_timer.rs` catches it).
const DUE: u64 = 0;

/// The runtime timers of the alarm: one for the next ring, one for a turn
/// on time after it, a third for a turn a whole runtime millisecond late
/// (see [`RuntimeAlarm::arm`]).
const RING: usize = 3;

thread_local! {
    /// [`ARMING`] while this thread resets or polls an alarm under its
    /// lock, and [`RUNG`] once the alarm rang meanwhile.
    static STATE: Cell<u8> = const { Cell::new(0) };
}

/// [`STATE`]: this thread is arming an alarm.
const ARMING: u8 = 1;
/// [`STATE`]: the alarm rang while this thread was arming it.
const RUNG: u8 = 2;
/// [`STATE`]: this thread wakes a driver from a task, outside the runtime
/// timer's processing (see [`wake_from_task`]).
const FROM_TASK: u8 = 4;

/// Wakes a driver from the task an arm spawned (its instant had passed):
/// the turn then knows it runs outside the runtime timer's processing
/// ([`woken_from_task`]).
async fn wake_from_task(waker: Waker) {
    struct FromTask;
    impl Drop for FromTask {
        fn drop(&mut self) {
            STATE.set(STATE.get() & !FROM_TASK);
        }
    }
    STATE.set(STATE.get() | FROM_TASK);
    let _from_task = FromTask;
    waker.wake();
}

/// Whether the driver's waker runs from the task an arm spawned, rather
/// than inside the runtime timer's processing: on paused time such a turn
/// expires no further than the runtime's timer is known to have gone
/// (see `driver/runtime.rs`).
pub(crate) fn woken_from_task() -> bool {
    STATE.get() & FROM_TASK != 0
}

/// Runs `arm` (a reset and poll of the alarm, under its lock); returns
/// whether the alarm is due, by `arm`'s result or because the runtime woke
/// it from inside (a deadline already past).
pub(crate) fn arming(arm: impl FnOnce() -> bool) -> bool {
    /// Clears the state however `arm` ends: a panic in it (tokio's `Sleep`
    /// panics when polled as its runtime shuts down) must not leave this
    /// thread taking every later wake of a driver for its own arming.
    struct Arming;
    impl Drop for Arming {
        fn drop(&mut self) {
            STATE.set(STATE.get() & FROM_TASK);
        }
    }
    let outer = STATE.get() & FROM_TASK;
    STATE.set(ARMING | outer);
    let arming = Arming;
    let ready = arm();
    let rung = STATE.replace(outer) & RUNG != 0;
    std::mem::forget(arming);
    rung || ready
}

/// Called by the driver's waker: if this thread is arming the alarm (and
/// holds its lock), records the wake for [`arming`] and returns `true`; the
/// driver must then not turn here.
#[inline]
pub(crate) fn rung_while_arming() -> bool {
    let state = STATE.get();
    if state & ARMING != 0 {
        STATE.set(state | RUNG);
        return true;
    }
    false
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
            tick: AtomicU64::new(u64::MAX),
            ended: Arc::new(Notify::new()),
        }
    }

    /// Starts the alarm on `handle`'s runtime, disarmed: from now on it
    /// calls `waker` when it rings.
    pub(crate) fn start(&self, handle: &Handle, clock: &Clock, waker: Waker) {
        let ring = {
            let _entered = handle.enter();
            std::array::from_fn(|_| Ring::fresh(clock))
        };
        *lock(&self.armed) = Some(Armed {
            ring,
            waker,
            handle: handle.clone(),
            head: 0,
            turned: 0,
            _live: LiveTimer::new(handle.id()),
        });
    }

    /// Whether the runtime's timer has processed the millisecond of
    /// `tick` (see [`processed`]); `false` before the alarm started or
    /// once it stopped.
    pub(crate) fn processed(&self, clock: &Clock, tick: u64) -> bool {
        let Some(handle) = lock(&self.armed).as_ref().map(|armed| armed.handle.clone()) else {
            return false;
        };
        let _entered = handle.enter();
        processed(clock.instant_of(tick))
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

    /// See [`Alarm::arm`](super::Alarm::arm); the driver's re-arm after a
    /// turn is [`rearm`](Self::rearm).
    ///
    /// The alarm is a ring of runtime `Sleep`s polled with the driver's
    /// waker, so the runtime's own timer calls the driver while it
    /// processes its timers, and the wakes the driver makes are batched
    /// with the runtime's.
    ///
    /// The driver's re-arm sets the ring to the alarm's instant and one and two
    /// turns of the grid after it ([`grid_us`]: a runtime millisecond, or the
    /// tick's whole milliseconds; a turn of the grid after the alarm's instant
    /// is where the next re-arm rings at the soonest). Why three: the runtime
    /// computes its next wake-up before it calls the alarm's waker, and a
    /// registration earlier than that wake-up unparks its driver (an eventfd
    /// write, on every turn without the ring's later timers); the second keeps
    /// that wake-up at or before the next re-arm of a turn on time, and the
    /// third that of a turn a whole millisecond late, which tokio's rounding
    /// makes common (it parks for whole milliseconds counted from the start of
    /// the current one, so a park begun late in a millisecond ends late in the
    /// alarm's, and a little scheduling delay carries the turn into the next;
    /// without the third the turn unparked twice: 7-18% of the turns of a
    /// deadline a millisecond on one worker, which the bench `wakeups` counts).
    /// A turn two milliseconds late still does. In the steady state of a busy
    /// timer (work in every millisecond) the next timer of the ring rings in
    /// the millisecond of the next work already (see [`Armed::set_ring`]),
    /// and the re-arm moves only the timer that rang to the far end of the
    /// ring: one registration a turn, where an alarm with two spares
    /// re-registered the alarm and the first spare (both rang) and moved the
    /// second. A timer of the ring that is registered earlier than the instant
    /// it is moved to only has its deadline moved (an atomic store; the runtime
    /// still wakes at the old instant, finds it later and files it again,
    /// waking nothing), as the spares did. So where the next work is more
    /// than a turn of the grid away, the re-arm sets only the alarm's
    /// instant: spares moved on with it woke the runtime at the next two
    /// milliseconds for nothing after every turn of sparse work (two parks
    /// and wake-ups a turn), where its registration unparks the runtime's
    /// driver at most (an eventfd write, no wake-up). A timer of the ring
    /// left pending so calls the driver's waker once before the alarm's
    /// instant, which finds it rang for nothing
    /// ([`rang_for_nothing`](Self::rang_for_nothing): a clock reading and
    /// an atomic load). A re-arm with nothing pending replaces the
    /// ring with fresh timers, never registered, so that no runtime timer of
    /// ours is left: an idle runtime wakes for nothing, and a paused one does
    /// not auto-advance its clock to one (tokio leaves it where it is).
    pub(crate) fn arm(&self, clock: &Clock, tick: u64) -> bool {
        self.arm_after(clock, tick, None)
    }

    /// [`arm`](Self::arm); `now`, the driver's re-arm after a turn at that
    /// tick (see [`Armed::set_ring`]), which arms whatever the alarm was
    /// armed for.
    fn arm_after(&self, clock: &Clock, tick: u64, now: Option<u64>) -> bool {
        // The driver's re-arm: whatever the alarm was armed for.
        let force = now.is_some();
        let (set, wake) = {
            let mut guard = lock(&self.armed);
            let Some(alarm) = guard.as_mut() else {
                return false; // stopped: the runtime may be shutting down
            };
            if !force && tick >= self.tick.load(Ordering::Acquire) {
                return false;
            }
            if let Some(now) = now {
                alarm.turned = now;
            }
            self.tick.store(tick, Ordering::Release);
            if tick >= NEVER {
                // "Never" (or nothing pending) rings at no instant: an
                // alarm at a far but fixed instant would ring, past it,
                // on every turn.
                if force {
                    alarm.disarm(clock);
                }
                return false;
            }
            let at = alarm_tick(clock.tick_us, tick, alarm.turned);
            // An insert already due (registered after its deadline) turns
            // now rather than at the runtime's next millisecond. The driver's
            // own re-arm goes through the runtime's timer even when work
            // came due during the turn: it then rings at the runtime's next
            // millisecond with whatever else is due, as tokio's own timers
            // do, rather than turning again and again for each deadline.
            // On paused time, where the clock follows the runtime timer's
            // millisecond, it rings at the runtime timer's next processing
            // (or at once, where that has processed its millisecond), as a
            // `tokio::time::Sleep` due then would.
            let ready = !force && !clock.follows_tokio_ms() && clock.instant_of(at) <= clock.now()
                || arming(|| {
                    // The runtime wakes the alarm from inside `reset` when the
                    // instant has passed; `arming` records that wake.
                    match now {
                        Some(now) => alarm.set_ring(at, clock, now),
                        None => alarm.set_earlier(at, clock),
                    }
                });
            if ready {
                self.tick.store(DUE, Ordering::Release);
            }
            (
                true,
                ready.then(|| (alarm.waker.clone(), alarm.handle.clone())),
            )
        };
        match wake {
            Some((waker, _)) if force => waker.wake(),
            Some((waker, handle)) => drop(handle.spawn(wake_from_task(waker))),
            None => {}
        }
        set
    }

    /// See [`Alarm::rearm`](super::Alarm::rearm): the alarm rings at the
    /// next deadline itself, at once; the runtime's timer rounds it up to
    /// its millisecond (and a tick over 1 ms batches on its own grid, see
    /// [`alarm_tick`]).
    pub(crate) fn rearm(&self, clock: &Clock, now: u64, target: u64) -> Rearmed {
        Rearmed {
            set: self.arm_after(clock, target, Some(now)),
            soonest: 0,
        }
    }

    /// Whether the alarm rang for nothing: it is armed for a tick still to
    /// come. A turn a millisecond or more late finds the next timer of the
    /// ring due with the one it turns for, and the runtime calls the
    /// driver's waker for each: the first turns and re-arms the alarm for
    /// later work, and the second, which would turn again at the same
    /// instant and find nothing due, does not. `now`: the clock's tick,
    /// which the turn then uses. One atomic load; a wake while no tick is
    /// armed (the alarm taken by a turn) or while one is on its way
    /// ([`DUE`]) is never for nothing.
    pub(crate) fn rang_for_nothing(&self, now: u64) -> bool {
        let tick = self.tick.load(Ordering::Acquire);
        tick != u64::MAX && now < tick
    }

    /// See [`Alarm::take_armed`](super::Alarm::take_armed): one atomic
    /// swap, no lock.
    pub(crate) fn take_armed(&self) -> u64 {
        match self.tick.swap(u64::MAX, Ordering::AcqRel) {
            DUE => u64::MAX, // no instant the turn could be late for
            tick => tick,
        }
    }

    /// Disarms for good (the runtime may be shutting down: nothing may poll
    /// the alarm from now on), and ends the driver's guard task.
    pub(crate) fn shut(&self) {
        let alarm = lock(&self.armed).take();
        self.tick.store(u64::MAX, Ordering::Release);
        drop(alarm);
        self.ended.notify_one();
    }
}

impl Armed {
    /// Sets the ring for the driver's re-arm after a turn at `now`: to
    /// `at`, and, where that is within a turn of the grid ([`grid_us`]) of
    /// the turn, to `at + gap` and `at + 2 gap` too (see
    /// [`RuntimeAlarm::arm`]), with as few registrations as it can.
    /// Returns whether the ring rang already (an instant passed).
    ///
    /// Where `at` is after the turn (its work is in a later tick), nothing
    /// set to it or later has rung. A busy timer (work in every turn of its
    /// grid) takes one of two fast paths, each a registration of the timer
    /// that rang and no other look at the ring: where the two timers after
    /// the head are set to `at` and `at + gap` already, the head goes to
    /// `at + 2 gap` and the next becomes the head; and on a grid of a
    /// millisecond, where `at` falls in the millisecond the next timer
    /// rings in ([`Armed::rings_with_next`]), that timer rings for it as it
    /// is, and the head goes a turn after the last.
    fn set_ring(&mut self, at: u64, clock: &Clock, now: u64) -> bool {
        let gap = grid_us(clock.tick_us);
        let ahead = at > now;
        let (head, next, last) = (self.head, (self.head + 1) % RING, (self.head + 2) % RING);
        if ahead && self.ring[next].at == Some(at) && self.ring[last].at == Some(at + gap) {
            self.head = next;
            return self.ring[head].set(at + 2 * gap, clock, &self.waker);
        }
        if ahead && gap == RUNTIME_MS_US {
            if let Some(rung) = self.rings_with_next(at, gap) {
                self.head = next;
                return self.ring[head].set(rung + 3 * gap, clock, &self.waker);
            }
        }
        self.set_ring_anew(at, gap, clock, at <= now.saturating_add(gap))
    }

    /// Whether the next timer of the ring rings for `at`, a tick after the
    /// turn that re-arms, on a grid of a millisecond: the ring is a turn of
    /// the grid apart (the head at `r`, the next at `r + gap`, the last at
    /// `r + 2 gap`), the head has rung and the next not, and `at` is not
    /// after the next. Returns the head's tick, `r`.
    ///
    /// The runtime's timer rings a timer in the millisecond its instant
    /// rounds up to. The head rang, so the runtime's timer has processed
    /// its millisecond, `M`; the next, a millisecond later, has not, so it
    /// rings in `M + 1`, the runtime's next millisecond. The turn came at
    /// or after the start of `M` (in the runtime's timer processing, where
    /// no other thread processes it meanwhile; not from a task), and `at`
    /// is after the turn and at most a millisecond after `r`: in `M + 1`
    /// too. So the next rings when a runtime timer set to `at` would, and
    /// the turn it makes finds `at` due.
    #[inline]
    fn rings_with_next(&self, at: u64, gap: u64) -> Option<u64> {
        let (head, next, last) = (self.head, (self.head + 1) % RING, (self.head + 2) % RING);
        let rung = self.ring[head].at?;
        let fits = at <= rung.saturating_add(gap)
            && self.ring[next].at == Some(rung + gap)
            && self.ring[last].at == Some(rung + 2 * gap);
        (fits && !self.ring[head].pending() && self.ring[next].pending() && !woken_from_task())
            .then_some(rung)
    }

    /// [`set_ring`](Self::set_ring) in full, the ring's timers in the
    /// ring's order from the new head. `near`: the work is within a turn of
    /// the grid, and so, probably, the next turn's: the ring goes to `at`,
    /// `at + gap` and `at + 2 gap`. Otherwise only to `at`: work is sparse,
    /// and a timer of the ring at a later turn would wake the runtime for
    /// nothing there (moved later, a registered timer keeps its place in
    /// the runtime's timer, which wakes for it and files it again: a park
    /// and a wake-up for nothing, two a turn of sparse work); the
    /// registration at `at` then unparks the runtime's driver where
    /// nothing of ours rings before it (an eventfd write, no wake-up).
    ///
    /// The head is the timer already pending at `at`, or else one not
    /// pending (the one that rang, in a turn the ring made), or else the
    /// latest. A timer already pending at its place stays; one of the
    /// ring left pending elsewhere rings for nothing
    /// ([`RuntimeAlarm::rang_for_nothing`]).
    #[cold]
    fn set_ring_anew(&mut self, at: u64, gap: u64, clock: &Clock, near: bool) -> bool {
        let head = (0..RING)
            .map(|k| (self.head + k) % RING)
            .find(|&i| self.ring[i].at == Some(at) && self.ring[i].pending())
            .or_else(|| {
                (0..RING)
                    .map(|k| (self.head + k) % RING)
                    .find(|&i| !self.ring[i].pending())
            })
            .unwrap_or_else(|| (0..RING).max_by_key(|&i| self.ring[i].at).unwrap_or(0));
        self.head = head;
        let places = if near { RING } else { 1 };
        let mut ready = false;
        for k in 0..places {
            let want = at + k as u64 * gap;
            let ring = &mut self.ring[(head + k) % RING];
            if ring.at != Some(want) || !ring.pending() {
                ready |= ring.set(want, clock, &self.waker);
            }
        }
        ready
    }

    /// Moves the alarm earlier, to tick `at` (an insert with an earlier
    /// deadline): a timer of the ring not registered, or else the latest,
    /// goes there. Returns whether it rang already.
    fn set_earlier(&mut self, at: u64, clock: &Clock) -> bool {
        let i = match self.ring.iter().position(|ring| !ring.pending()) {
            Some(i) => i,
            None => (0..RING).max_by_key(|&i| self.ring[i].at).unwrap_or(0),
        };
        self.ring[i].set(at, clock, &self.waker)
    }

    /// Nothing pending after a turn: no runtime timer of ours may stay
    /// registered, or a paused runtime that idles would auto-advance its
    /// clock to it (issue 26, found 1). A later reset only moves a
    /// registration (an atomic store; the runtime still wakes at the old
    /// instant): fresh timers, never registered, replace the ring, which
    /// removes the old ones from the runtime's timer. Once per stretch of
    /// work, not per turn.
    #[cold]
    fn disarm(&mut self, clock: &Clock) {
        if self.ring.iter().all(|ring| ring.at.is_none()) {
            return;
        }
        let _entered = self.handle.enter();
        for ring in &mut self.ring {
            *ring = Ring::fresh(clock);
        }
    }
}

/// The clock of a timer driven by the current runtime (in its context),
/// of tick `tick_us`, started now; on paused time, for a tick under 2 ms
/// (a grid of one runtime millisecond, which `tokio::time` has), started
/// on a millisecond the runtime's timer has processed, and following that
/// timer's millisecond (see `Clock`).
pub(crate) fn clock(tick_us: u64) -> Clock {
    if grid_us(tick_us) == RUNTIME_MS_US && paused() {
        if let Some(start) = processed_ms(Source::Tokio.now()) {
            return Clock::starting_on_tokio_grid(start, tick_us);
        }
    }
    Clock::new(Source::Tokio, tick_us)
}

/// Whether the current runtime's time is paused: tokio's clock stays put
/// while std's moves on (tokio says it nowhere else). A few clock
/// readings; `false` where std's clock does not move within a thousand
/// readings (the timer then keeps the microsecond, as on the real clock).
pub(crate) fn paused() -> bool {
    let before = tokio::time::Instant::now();
    let std_before = std::time::Instant::now();
    let moved = (0..1_000).any(|_| std::time::Instant::now() > std_before);
    moved && tokio::time::Instant::now() == before
}

/// Whether the current runtime's timer has processed the millisecond of
/// `at`: a `tokio::time::Sleep` due then completes as it registers
/// (tokio fires at once a deadline whose millisecond, rounded up, is not
/// after the last one its timer processed; later ones wait for its next
/// processing). A runtime timer registered and removed; in the runtime's
/// context.
fn processed(at: Instant) -> bool {
    let at = tokio::time::Instant::from_std(at);
    let mut sleep = std::pin::pin!(tokio::time::sleep_until(at));
    sleep.as_mut().reset(at);
    sleep.is_elapsed()
}

/// The last millisecond the current runtime's timer has processed, at or
/// before `now`, to the nanosecond: the runtime's start plus a whole
/// number of milliseconds, the latest instant [`processed`] says yes to
/// (found by halving, about 20 runtime timers where the runtime's timer
/// processed the current millisecond, two more for each doubling of the
/// time since). `None` if the search leaves the range of `Instant`.
fn processed_ms(now: Instant) -> Option<Instant> {
    if processed(now) {
        return Some(now);
    }
    // `hi` never processed, `lo` processed.
    let mut hi = now;
    let mut back = Duration::from_millis(1);
    let mut lo = loop {
        let at = now.checked_sub(back)?;
        if processed(at) {
            break at;
        }
        hi = at;
        back = back.checked_mul(2)?;
    };
    while hi - lo > Duration::from_nanos(1) {
        let mid = lo + (hi - lo) / 2;
        if processed(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
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
