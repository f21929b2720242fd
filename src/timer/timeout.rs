//! The [`Timeout`] future and the [`WithTimeout`] wrapper.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, MutexGuard};
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;

use crate::engine::coop;
use crate::engine::deadlines::BEAT;
use crate::engine::scope::{self, Active, Clip};
use crate::engine::shard::{wake_all, AtomicCounts, Shard, ShardState};
use crate::error::{Elapsed, Error, StopReason};
use crate::wheel::raw::{Key, State, NEVER};

// A `Timeout` is two words: its shard (which wheel and lock, and through
// it the timer) and a state word. Holding the shard rather than the whole
// timer keeps threads on different shards off each other's reference count.
//
// | bits  | meaning                                                    |
// |-------|------------------------------------------------------------|
// | 62-63 | kind: one of the four below                                |
// | 0-61  | deadline (µs since the timer's start), or while            |
// |       | `REGISTERED` the store key (bits 0-31) and the generation  |
// |       | of its deadline word (bits 32-46, see `deadlines::LINKED`) |
//
// | kind           | in the wheel? | meaning                                  |
// |----------------|---------------|------------------------------------------|
// | `UNREGISTERED` | no            | created, not yet polled; counted pending |
// | `REGISTERED`   | yes, at key   | polled once; the entry has the state     |
// | `FIRED`        | no            | completed at its deadline                |
// | `CANCELLED`    | no            | completed because the timer stopped      |
//
// A `FIRED` word with bit 61 (`UNPOLLED`) set completed as it was created
// (its deadline had passed) and was not polled since: `is_expired` says
// `false` until its first poll, as tokio's `Sleep::is_elapsed` does before
// the sleep registers. A `FIRED` deadline is at most the timer's uptime, so
// bit 61 is free for 73,000 years of it; past that a completed timeout
// keeps its deadline saturated at 2^61 - 1 µs (`fired_tick`), and a
// timeout due at creation takes the registering path instead.
//
// Registration on the first poll (as tokio's `Sleep` does) saves a lock for
// the common create-poll-drop pattern. The entry of a registered timeout
// belongs to it until it is dropped or seen completed, so its key can never
// be reused under it; the generation in its deadline word guards the
// lock-free extension besides (see `deadlines::Deadlines::extend`).
//
// A registered timeout's deadline lives in its deadline word (the wheel may
// hold it at an earlier tick, from before an extension), except for
// deadlines too far for the word (`FAR`), which the wheel holds.
const KIND_MASK: u64 = 0b11 << 62;
const UNREGISTERED: u64 = 0b00 << 62;
const REGISTERED: u64 = 0b01 << 62;
const FIRED: u64 = 0b10 << 62;
const CANCELLED: u64 = 0b11 << 62;
const LOW_MASK: u64 = (1 << 62) - 1;
/// In a `FIRED` word: completed at creation, not polled since.
const UNPOLLED: u64 = 1 << 61;

/// `tick` as a polled `FIRED` word holds it (see `UNPOLLED`).
fn fired_tick(tick: u64) -> u64 {
    tick.min(UNPOLLED - 1)
}

/// A timeout: a future that completes at a deadline. Dropping it cancels it.
///
/// The counterpart of tokio's [`Sleep`][tokio::time::Sleep_link], the future of
/// [`tokio::time::sleep`] (the design of hashed wheel timers names it a
/// timeout). A future *with* a deadline, tokio's
/// [`tokio::time::Timeout<F>`], is [`WithTimeout`] here.
///
/// Created by [`Timer::sleep`](crate::Timer::sleep) and
/// [`Timer::sleep_until`](crate::Timer::sleep_until). It is `Unpin`, so it
/// can be kept in a struct and polled or `.await`ed by `&mut` without
/// pinning, and [`reset`](Timeout::reset) to a new deadline in O(1) any
/// number of times, before or after it completed.
///
/// It registers in the wheel on its first poll; until then it only counts in
/// [`Timer::pending`](crate::Timer::pending).
///
/// # Cancellation
///
/// Dropping a `Timeout` removes it from the wheel at once. If the timer is
/// [stopped](crate::Timer::stop) (or its runtime shuts down) the timeout
/// completes, with [`is_cancelled`](Timeout::is_cancelled) true.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let timer = Timer::new();
/// let mut idle = timer.sleep(Duration::from_secs(30));
/// // A message came in: push the idle deadline back.
/// idle.reset(Duration::from_secs(30));
/// (&mut idle).await;
/// assert!(idle.is_expired());
/// # }
/// ```
#[cfg_attr(feature = "tokio", doc = "", doc = "[tokio::time::Sleep_link]: tokio::time::Sleep")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[tokio::time::Sleep_link]: https://docs.rs/tokio/latest/tokio/time/struct.Sleep.html")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::sleep`]: https://docs.rs/tokio/latest/tokio/time/fn.sleep.html")]
#[cfg_attr(not(feature = "tokio"), doc = "", doc = "[`tokio::time::Timeout<F>`]: https://docs.rs/tokio/latest/tokio/time/struct.Timeout.html")]
#[must_use = "futures do nothing unless you `.await` or poll them"]
#[doc(alias = "Sleep")]
pub struct Timeout {
    shard: Arc<Shard>,
    word: u64,
}

impl Timeout {
    pub(crate) fn new(shard: Arc<Shard>, tick: u64) -> Timeout {
        Timeout {
            shard,
            word: UNREGISTERED | tick.min(NEVER),
        }
    }

    /// A timeout at `tick` on `shard`; `due` if its deadline is not after
    /// the instant it is created: it then completes on its first poll and
    /// never registers (zero delays and past deadlines cost no trip
    /// through the driver).
    ///
    /// On paused time, where the clock follows the runtime timer's
    /// millisecond (see `Clock`), only one whose millisecond that timer has
    /// processed completes at creation (it is due at its first poll,
    /// whenever that comes, by tokio's rule); for the others, the first
    /// poll decides (see [`register`](Self::register)).
    #[inline]
    pub(crate) fn on_shard(shard: &Arc<Shard>, tick: u64, due: bool) -> Result<Timeout, Error> {
        if due && Timeout::can_fire_at_creation(tick) && shard.common.due_at_creation(tick) {
            if let Some(reason) = shard.common.stop_reason() {
                return Err(Error::stopped(reason));
            }
            AtomicCounts::add(&shard.unlocked.fired);
            return Ok(Timeout::fired(shard.clone(), tick));
        }
        shard.acquire()?;
        Ok(Timeout::new(shard.clone(), tick))
    }

    /// The deadline tick of a timeout just made (not yet polled).
    pub(crate) fn unpolled_tick(&self) -> u64 {
        match self.kind() {
            FIRED => self.low() & !UNPOLLED,
            kind => {
                debug_assert_eq!(kind, UNREGISTERED);
                // [`NEVER`] and the ticks next to it have the bit of
                // `UNPOLLED` set, which only a `FIRED` word means so.
                self.low()
            }
        }
    }

    /// Whether the timeout completed as it was made (its deadline had
    /// passed, see [`fired`](Self::fired)) and was not polled since: its
    /// first poll, which this call stands for (it is polled: `is_expired`
    /// reads `true` from here on). `Delay`'s poll asks, to be pending at
    /// that poll as futures-timer's is.
    #[cfg(feature = "thread")]
    #[inline]
    pub(crate) fn take_first_poll_of_due(&mut self) -> bool {
        if self.word & (KIND_MASK | UNPOLLED) == FIRED | UNPOLLED {
            self.word &= !UNPOLLED;
            return true;
        }
        false
    }

    /// Its shard.
    pub(crate) fn shard(&self) -> &Arc<Shard> {
        &self.shard
    }

    /// Whether a timeout due at creation at `tick` can be made by
    /// [`fired`](Self::fired) (all but past 73,000 years of uptime).
    pub(crate) fn can_fire_at_creation(tick: u64) -> bool {
        tick < UNPOLLED
    }

    /// A timeout that completed as it was created (its deadline had
    /// passed): ready on its first poll, counted as fired, never pending;
    /// not [expired](Self::is_expired) until that poll.
    pub(crate) fn fired(shard: Arc<Shard>, tick: u64) -> Timeout {
        debug_assert!(Self::can_fire_at_creation(tick));
        Timeout {
            shard,
            word: FIRED | UNPOLLED | tick,
        }
    }

    fn kind(&self) -> u64 {
        self.word & KIND_MASK
    }

    fn low(&self) -> u64 {
        self.word & LOW_MASK
    }

    fn key(&self) -> Key {
        self.low() as Key
    }

    /// The generation of a registered timeout's deadline word.
    fn gen(&self) -> u64 {
        self.low() >> 32
    }

    /// The deadline tick of a registered timeout; `state` is its shard's,
    /// locked, where the word cannot say.
    fn registered_tick(&self, state: impl FnOnce() -> u64) -> u64 {
        self.shard.deadlines.tick(self.key()).unwrap_or_else(state)
    }

    fn set(&mut self, kind: u64, low: u64) {
        self.word = kind | low;
    }

    /// Completes a polled timeout as `done` (`FIRED` or `CANCELLED`) at
    /// `tick`.
    fn set_done(&mut self, done: u64, tick: u64) {
        let tick = if done == FIRED {
            fired_tick(tick)
        } else {
            tick
        };
        self.set(done, tick);
    }

    /// The state of the entry of a registered timeout: no lock while it is
    /// pending.
    fn entry_state(&self) -> State {
        if self.shard.deadlines.is_linked(self.key(), self.gen()) {
            return State::Pending;
        }
        // In a forked child whose parent held the lock at the fork, the
        // entry is out of reach for good: as if cancelled.
        self.shard
            .lock_unless_forked()
            .map_or(State::Cancelled, |state| state.wheel.state(self.key()))
    }

    /// The instant this timeout completes: its deadline as the timer keeps
    /// it, rounded up to the microsecond (a deadline before the timer's
    /// start reads as that start: the instant it was built, or on paused
    /// time the runtime timer's last millisecond then). About 30 years out
    /// for a timeout that never completes. The counterpart of tokio's
    /// `Sleep::deadline`, which returns the instant given to the
    /// nanosecond (`hashwheel::time::Sleep::deadline` does too).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let deadline = Instant::now() + Duration::from_secs(2);
    /// let timeout = timer.sleep_until(deadline);
    /// assert_eq!(timeout.deadline(), deadline.into_std());
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        let tick = match self.kind() {
            REGISTERED => self.registered_tick(|| {
                self.shard
                    .lock_unless_forked()
                    .map_or(NEVER, |state| state.wheel.tick(self.key()))
            }),
            FIRED => self.low() & !UNPOLLED,
            _ => self.low(),
        };
        self.shard.common.instant_of(tick)
    }

    /// Whether the timeout reached its deadline: the counterpart of tokio's
    /// `Sleep::is_elapsed`, with its rule. A timeout registers in the wheel
    /// on its first poll; until then (after its creation, and after a
    /// [`reset`](Timeout::reset) of one that had completed) it reports
    /// `false`, whatever its deadline, as tokio's `Sleep` does before its
    /// first poll. Once polled it reports `true` from the moment the
    /// timer fires it, before the task polls it again (one created with its
    /// deadline passed, or a zero delay, is ready and expired at its first
    /// poll).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut t = timer.sleep(Duration::from_millis(5));
    /// assert!(!t.is_expired());
    /// (&mut t).await;
    /// assert!(t.is_expired());
    ///
    /// // Never polled: `false`, though its deadline has passed.
    /// let mut past = timer.sleep_until(Instant::now() - Duration::from_secs(2));
    /// assert!(!past.is_expired());
    /// (&mut past).await; // ready at once
    /// assert!(past.is_expired());
    /// # }
    /// ```
    #[doc(alias = "is_elapsed")]
    pub fn is_expired(&self) -> bool {
        match self.kind() {
            FIRED => self.low() & UNPOLLED == 0,
            REGISTERED => self.entry_state() == State::Fired,
            _ => false,
        }
    }

    /// Whether the timeout was cancelled by the timer stopping (or its
    /// runtime shutting down). Cancelling by hand consumes the timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut t = timer.sleep(Duration::from_secs(5));
    /// timer.stop();
    /// (&mut t).await;
    /// assert!(t.is_cancelled());
    /// # }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        match self.kind() {
            CANCELLED => true,
            REGISTERED => self.entry_state() == State::Cancelled,
            UNREGISTERED => self.shard.common.is_stopped(),
            _ => false,
        }
    }

    /// Cancels the timeout. Returns `false` if it had already fired (or was
    /// cancelled by the timer stopping). Dropping cancels just the same.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let t = timer.sleep(Duration::from_secs(5));
    /// assert!(t.cancel());
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    pub fn cancel(mut self) -> bool {
        let stopped = self.shard.common.is_stopped();
        self.clear() && !stopped
    }

    /// Moves the deadline to `delay` from now, in O(1). Works whether the
    /// timeout is pending or already fired; a fired timeout becomes pending
    /// again and can be awaited again. The counterpart of tokio's
    /// `Sleep::reset`, without the `Pin`.
    ///
    /// # After the timer stopped
    ///
    /// Once the timer is stopped ([`Timer::stop`](crate::Timer::stop), or the
    /// shutdown of the runtime that ran its driver), `reset` is ignored: no
    /// driver is left to fire the new deadline. A timeout that already fired
    /// stays fired ([`is_expired`](Timeout::is_expired) true, ready at once)
    /// rather than becoming pending for ever, and a pending one stays
    /// cancelled. Check [`Timer::is_stopped`](crate::Timer::is_stopped) where
    /// that matters.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut t = timer.sleep(Duration::from_millis(1));
    /// (&mut t).await;
    /// t.reset(Duration::from_millis(10));
    /// assert!(!t.is_expired());
    /// (&mut t).await;
    /// assert!(t.is_expired());
    ///
    /// // Ignored once the timer is stopped: `t` stays fired.
    /// timer.stop();
    /// t.reset(Duration::from_secs(10));
    /// assert!(t.is_expired());
    /// let start = tokio::time::Instant::now();
    /// (&mut t).await;
    /// assert_eq!(start.elapsed(), Duration::ZERO);
    /// # }
    /// ```
    pub fn reset(&mut self, delay: Duration) {
        let tick = self.shard.common.clock.tick_after(delay);
        self.reset_tick(tick);
    }

    /// Moves the deadline to `deadline`, in O(1): as [`reset`](Timeout::reset),
    /// and like it ignored once the timer is stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut t = timer.sleep(Duration::from_secs(60));
    /// t.reset_at(Instant::now() + Duration::from_millis(5));
    /// t.await;
    /// # }
    /// ```
    pub fn reset_at(&mut self, deadline: impl Into<Instant>) {
        let tick = self.shard.common.clock.tick_of(deadline.into());
        self.reset_tick(tick);
    }

    /// Moves the deadline to `tick`. A registered timeout's later deadline
    /// is one compare-and-swap, no lock (the driver re-files the entry when
    /// its old deadline comes due): the inline part; the rest is
    /// [`reset_slow`](Self::reset_slow).
    #[inline]
    pub(crate) fn reset_tick(&mut self, tick: u64) {
        let tick = tick.min(NEVER);
        let shard = &*self.shard;
        if self.kind() == REGISTERED && shard.deadlines.extend(self.key(), self.gen(), tick) {
            AtomicCounts::add(&shard.unlocked.reset);
            return;
        }
        self.reset_slow(tick);
    }

    /// [`reset_tick`](Self::reset_tick) where a compare-and-swap will not
    /// do: an unregistered or fired timeout, or a registered one moved
    /// earlier, too far for its word, or fired (under the lock).
    #[inline(never)]
    fn reset_slow(&mut self, tick: u64) {
        let shard = &*self.shard;
        match self.kind() {
            UNREGISTERED => {
                AtomicCounts::add(&shard.unlocked.reset);
                self.set(UNREGISTERED, tick);
            }
            FIRED if !shard.common.is_stopped() => {
                AtomicCounts::add(&shard.unlocked.reset);
                shard.reacquire();
                self.set(UNREGISTERED, tick);
            }
            REGISTERED => {
                // Before the lock: on paused time it may ask the runtime's
                // timer (see `register`).
                let passed = shard.common.passed(tick);
                let (state, fired_now, emptied) = {
                    let Some(mut guard) = shard.lock_unless_forked() else {
                        // A forked child whose parent held the lock at the
                        // fork: the entry is out of reach for good. The
                        // timeout leaves it and holds the new deadline
                        // unregistered (a `Delay` moves to the child's own
                        // timer with it when polled).
                        self.set(UNREGISTERED, tick);
                        return;
                    };
                    // The driver of a stopped timer is gone: an entry that
                    // fired before the stop must not go back into the wheel,
                    // where it would never fire (checked under the lock
                    // `stop` drains by).
                    if shard.common.is_stopped() {
                        return;
                    }
                    // A deadline passed by tokio's rule fires now, as one
                    // the wheel has passed does.
                    let at = if passed {
                        tick.min(guard.wheel.elapsed())
                    } else {
                        tick
                    };
                    let res = shard.reset(&mut guard, self.key(), at);
                    if res.0 != State::Cancelled {
                        guard.counts.reset += 1;
                        let linked = res.1.is_none();
                        let flags = shard.common.tokio_ms_flag();
                        shard.deadlines.set(self.key(), self.gen(), tick, linked, flags);
                    }
                    match res {
                        (State::Pending, Some(_)) => {
                            guard.counts.fired += 1;
                            shard.release_locked(&mut guard, 1);
                        }
                        // Pending again: counted before the lock lets the
                        // driver fire it again, or `pending()` and a
                        // concurrent insert under `max_pending` see it
                        // uncounted (or a count gone below zero).
                        (State::Fired, None) => shard.reacquire(),
                        _ => {}
                    }
                    (res.0, res.1, guard.wheel.is_empty())
                };
                #[cfg(all(test, feature = "tokio"))]
                crate::engine::hooks::after_reset_unlock();
                match (state, fired_now) {
                    (State::Pending, Some(waker)) => {
                        wake_all(waker);
                        // Completed, not dropped: where it was its shard's
                        // last, the alarm armed for its old deadline is
                        // taken down by a turn now (which finds nothing
                        // and leaves the runtime no timer of the timer's
                        // to auto-advance a paused clock to), as a
                        // completion by the driver's fire leaves none.
                        if emptied {
                            shard.common.turn_soon();
                        }
                    }
                    (State::Pending, None) | (State::Fired, None) => {
                        shard.common.note_deadline(tick);
                    }
                    (State::Fired, Some(_)) | (State::Cancelled, _) => {}
                }
            }
            _ => {}
        }
    }

    /// The timer's clock.
    #[inline]
    pub(crate) fn clock(&self) -> &crate::engine::clock::Clock {
        &self.shard.common.clock
    }

    /// The timer's tick in microseconds, as it is kept.
    #[inline]
    pub(crate) fn tick_us(&self) -> u64 {
        self.shard.common.clock.tick_us
    }

    /// Whether this is the process that built the timer, not a child
    /// forked from it (see `Common::is_here`; a slow path).
    #[cfg(feature = "thread")]
    pub(crate) fn timer_is_here(&self) -> bool {
        self.shard.common.is_here()
    }

    /// The timer's identity within a process: the address of its shared
    /// state.
    #[cfg(feature = "thread")]
    pub(crate) fn timer_id(&self) -> usize {
        std::sync::Arc::as_ptr(&self.shard.common) as usize
    }

    /// Whether the timer's clock follows the runtime timer's millisecond
    /// (paused time, see `Clock`): one relaxed load.
    #[inline]
    pub(crate) fn follows_tokio_ms(&self) -> bool {
        self.shard.common.clock.follows_tokio_ms()
    }

    /// Whether a deadline at `tick` is due at its first poll by tokio's
    /// rule on paused time (see
    /// [`Common::passed`](crate::engine::shard::Common::passed)); `false`
    /// on the real clock.
    #[inline]
    pub(crate) fn passed(&self, tick: u64) -> bool {
        self.shard.common.passed(tick)
    }

    /// Counts an interval's tick its task completed without the driver
    /// ([`Stats::ticks`](crate::Stats::ticks)), where no re-arm counts it.
    pub(crate) fn count_tick(&self) {
        AtomicCounts::add(&self.shard.unlocked.ticks);
    }

    /// Whether the timer stopped: one atomic load.
    pub(crate) fn is_stopped(&self) -> bool {
        self.shard.common.is_stopped()
    }

    /// Whether the timeout has its entry in the wheel (it was polled, or
    /// registered as an interval's).
    pub(crate) fn is_registered(&self) -> bool {
        self.kind() == REGISTERED
    }

    /// Registers an unregistered timeout as an interval's entry, due at
    /// its tick, holding `waker`, and re-armed at `after` when it fires
    /// (see [`Deadlines::beat_due`](crate::engine::deadlines::Deadlines)). Returns
    /// `false` (and the timeout is cancelled) if the timer stopped.
    pub(crate) fn register_beat(&mut self, waker: Waker, after: u64) -> bool {
        self.register(waker, Some(after)) != CANCELLED
    }

    /// Registers an unregistered timeout (the one path for a first poll and
    /// for an interval's entry): inserts its entry into the wheel, to wake
    /// `waker` when it fires, an interval's if `beat` (its re-arm tick).
    /// Returns the kind the timeout is left in: `REGISTERED`; `CANCELLED`
    /// if the timer stopped; `FIRED` for a polled timeout whose deadline
    /// the wheel has passed, or on paused time whose millisecond the
    /// runtime's timer has processed (tokio's rule, see
    /// [`Common::passed`](crate::engine::shard::Common::passed)). (An
    /// interval's tick already past is clamped to the next one instead, and
    /// the driver fires it on its next turn.)
    fn register(&mut self, waker: Waker, beat: Option<u64>) -> u64 {
        debug_assert_eq!(self.kind(), UNREGISTERED);
        let tick = self.low();
        let shard = &*self.shard;
        // Before the lock: on paused time it may ask the runtime's timer.
        let passed = beat.is_none() && shard.common.passed(tick);
        let Some(mut state) = shard.lock_unless_forked() else {
            // A forked child whose parent held the lock at the fork: no
            // entry can go in, and no driver thread lives here to fire it.
            drop(waker);
            self.set(CANCELLED, tick);
            return CANCELLED;
        };
        let done = if shard.common.is_stopped() {
            state.counts.cancelled += 1;
            CANCELLED
        } else if beat.is_none() && (passed || tick <= state.wheel.elapsed()) {
            state.counts.fired += 1;
            FIRED
        } else {
            let (key, gen) = match beat {
                Some(after) => {
                    let key = shard.insert_marked(&mut state, tick, waker);
                    (key, shard.deadlines.insert(key, after, BEAT))
                }
                None => {
                    let key = shard.insert(&mut state, tick, false, Some(waker));
                    let flags = shard.common.tokio_ms_flag();
                    (key, shard.deadlines.insert(key, tick, flags))
                }
            };
            drop(state);
            shard.common.note_deadline(tick);
            self.set(REGISTERED, u64::from(key) | gen << 32);
            return REGISTERED;
        };
        shard.release_locked(&mut state, 1);
        drop(state);
        // A waker left unused is dropped after the lock: its drop is
        // foreign code.
        drop(waker);
        self.set_done(done, tick);
        done
    }

    /// An interval's word (see [`Deadlines::beat`](crate::engine::deadlines::Deadlines::beat)):
    /// whether a tick waits, and the re-arm tick. The timeout is registered.
    #[inline]
    pub(crate) fn beat_word(&self) -> u64 {
        self.shard.deadlines.beat(self.key())
    }

    /// An interval's word itself, to read and take a tick from with one
    /// look-up. The timeout is registered.
    #[inline]
    pub(crate) fn beat_slot(&self) -> &std::sync::atomic::AtomicU64 {
        self.shard.deadlines.slot(self.key())
    }

    /// Takes the tick waiting in an interval's `word`, re-armed at `after`
    /// from now on: one compare-and-swap (see
    /// [`Deadlines::take_beat`](crate::engine::deadlines::Deadlines::take_beat)).
    #[inline]
    pub(crate) fn take_beat(&self, word: u64, after: u64) -> bool {
        self.shard.deadlines.take_beat(self.key(), word, after)
    }

    /// Stores `waker` in an interval's registered entry, in place of the
    /// one it holds (if any; dropped after the lock). `false` where the
    /// entry is out of reach (a forked child whose parent held the lock).
    pub(crate) fn set_beat_waker(&mut self, waker: Waker) -> bool {
        let Some(mut state) = self.shard.lock_unless_forked() else {
            return false;
        };
        let old = state
            .wheel
            .get_mut(self.key())
            .map(|slot| slot.replace(waker));
        drop(state);
        drop(old);
        true
    }

    /// Re-arms an interval's entry under the lock: due at `tick`, re-armed
    /// at `after` when it fires, no tick waiting, holding `waker` (a clone
    /// of the handle's, made before the lock) if it holds none. An
    /// unregistered interval only takes the new tick. Returns whether the
    /// entry fired at once (its tick has passed, or `passed` says so by
    /// tokio's rule on paused time, see [`passed`](Self::passed): the word
    /// then says a tick waits, as after a stall, and the entry keeps its
    /// waker; the handle completes the tick itself). Does nothing once the
    /// timer is stopped.
    ///
    /// `why` says what to count: a reset by the interval's owner
    /// ([`Stats::reset`](crate::Stats::reset)), a tick its task completed
    /// without the driver ([`Stats::ticks`](crate::Stats::ticks)), or
    /// nothing (a tick the driver fired, counted as it fired).
    pub(crate) fn rearm_beat(
        &mut self,
        tick: u64,
        after: u64,
        waker: Option<Waker>,
        why: Rearm,
        passed: bool,
    ) -> bool {
        let tick = tick.min(NEVER);
        let shard = &*self.shard;
        if self.kind() != REGISTERED {
            if self.kind() == UNREGISTERED {
                match why {
                    Rearm::Reset => AtomicCounts::add(&shard.unlocked.reset),
                    Rearm::Tick => AtomicCounts::add(&shard.unlocked.ticks),
                    Rearm::Fired => {}
                }
                self.set(UNREGISTERED, tick);
            }
            return false;
        }
        let mut spare = waker;
        let res = {
            let Some(mut guard) = shard.lock_unless_forked() else {
                return false;
            };
            if shard.common.is_stopped() {
                return false;
            }
            let key = self.key();
            // A tick passed by tokio's rule fires now, as one the wheel has
            // passed does.
            let at = if passed {
                tick.min(guard.wheel.elapsed())
            } else {
                tick
            };
            let (state, taken) = shard.reset(&mut guard, key, at);
            if state == State::Cancelled {
                return false;
            }
            match why {
                Rearm::Reset => guard.counts.reset += 1,
                Rearm::Tick => guard.counts.ticks += 1,
                Rearm::Fired => {}
            }
            let fired_now = taken.is_some();
            shard.deadlines.set_beat(key, self.gen(), after, fired_now);
            if let Some(slot) = guard.wheel.get_mut(key) {
                // Fired by the reset itself: the waker it took goes back
                // (the handle completes the tick without a wake).
                if let Some(waker) = taken.flatten() {
                    *slot = Some(waker);
                }
                if slot.is_none() {
                    *slot = spare.take();
                }
            }
            // An interval counts pending for as long as it lives, its
            // entry fired or not: nothing to count here (a tick fired at
            // once is completed, and counted, by its task).
            (state, fired_now)
        };
        drop(spare);
        if !res.1 {
            shard.common.note_deadline(tick);
        }
        res.1
    }

    /// Moves a timeout not yet polled to the tick `scope` gives on its
    /// timer's clock, where that comes before its own deadline (a deadline
    /// scope's, see `deadline`); returns whether it moved. One that
    /// completed at creation (its deadline had passed) keeps it.
    pub(crate) fn clip_unpolled(
        &mut self,
        scope: impl FnOnce(&crate::engine::clock::Clock) -> u64,
    ) -> bool {
        if self.kind() != UNREGISTERED {
            return false;
        }
        let tick = scope(&self.shard.common.clock);
        if tick >= self.low() {
            return false;
        }
        self.set(UNREGISTERED, tick);
        true
    }

    /// Why the timer stopped, if it did.
    pub(crate) fn timer_stop_reason(&self) -> Option<StopReason> {
        self.shard.common.stop_reason()
    }

    /// The error of a deadline that completed: the deadline passed, or the
    /// timer stopped first (and cancelled it).
    pub(crate) fn elapsed(&self) -> Elapsed {
        match self.timer_stop_reason() {
            Some(reason) if self.is_cancelled() => Elapsed::timer_stopped(reason),
            _ => Elapsed::deadline(),
        }
    }

    /// Takes the timeout out of the wheel; returns whether it was pending.
    fn clear(&mut self) -> bool {
        let shard = &*self.shard;
        let was_pending = match self.kind() {
            UNREGISTERED => {
                AtomicCounts::add(&shard.unlocked.cancelled);
                shard.release(1);
                true
            }
            REGISTERED => {
                let (state, waker) = {
                    let Some(mut guard) = shard.lock_unless_forked() else {
                        // A forked child whose parent held the lock at the
                        // fork: the entry stays where it is, out of reach
                        // (waiting would hang the child for ever).
                        self.set(CANCELLED, 0);
                        return false;
                    };
                    // The word first: its line comes in while the
                    // entry's do (see `Deadlines::remove`). It says
                    // whether the entry is an interval's, which counts
                    // pending until its interval is dropped, fired (a tick
                    // untaken) or not.
                    let beat = shard.deadlines.remove(self.key(), self.gen());
                    let (state, waker) = guard.wheel.remove(self.key());
                    if state == State::Pending || beat && state == State::Fired {
                        guard.counts.cancelled += 1;
                        shard.release_locked(&mut guard, 1);
                    }
                    (state, waker)
                };
                drop(waker);
                state == State::Pending
            }
            _ => false,
        };
        self.set(CANCELLED, 0);
        was_pending
    }
}

/// How a clipped deadline ended (see [`Timeout::poll_clipped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its own timer fired it, or cancelled it (the timer stopped).
    Own,
    /// With the scope it was clipped to, in that scope's expiry poll.
    WithScope,
}

/// What an interval's re-arm counts (see [`Timeout::rearm_beat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rearm {
    /// Its owner reset it.
    Reset,
    /// Its task completed a tick without the driver (caught up on missed
    /// ticks, or one due at once).
    Tick,
    /// Its task took a tick the driver fired (and counted).
    Fired,
}

impl Future for Timeout {
    type Output = ();

    /// Takes part in tokio's cooperative budget as tokio's `Sleep` does
    /// (see `coop`): a ready poll spends a unit of the task's budget, and
    /// with none left it is pending instead, the task woken again at once
    /// (a fired timeout stays ready). A pending poll spends none.
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        ready!(this.poll_timer(cx));
        coop::spend(cx)
    }
}

impl Timeout {
    /// Moves this timeout, just made and not yet polled, to the deadline of
    /// the deadline scope being polled on this thread where that comes
    /// first; returns that deadline where it did. Outside any scope, one
    /// read of a thread-local.
    #[inline]
    pub(crate) fn clip_to_scope(&mut self) -> Option<Clip> {
        match scope::active() {
            Some(active) => self.clip_to(active),
            None => None,
        }
    }

    #[inline(never)]
    fn clip_to(&mut self, active: Active) -> Option<Clip> {
        self.clip_unpolled(|clock| active.tick_on(clock))
            .then(|| active.clip())
    }

    /// The deadline of a [`WithTimeout`] or a deadline scope clipped to
    /// `clip` (an enclosing scope's deadline, `None` where it keeps its
    /// own), polled after the future it bounds was pending: as
    /// [`poll_deadline`](Self::poll_deadline), and besides, pending in the
    /// expiry poll of a scope whose deadline passed (`scope::passed`), it
    /// ends there where `clip` has passed with that deadline, its own
    /// timer's driver not yet come to it (a tie between two timers, or two
    /// shards of one: the scope fired first). It is completed then, as
    /// fired, so it ends once. One registered before this poll (the call
    /// the future was waiting on when the deadline passed) ends without
    /// tokio's budget, so that the future sees its inherited `Elapsed` in
    /// that poll wherever the budget stands; one made in that poll ends as
    /// a timeout due at its creation does, through the budget, so that a
    /// loop that retries yields to the runtime.
    #[inline]
    pub(crate) fn poll_clipped(
        &mut self,
        cx: &mut Context<'_>,
        had_budget_before: bool,
        clip: Option<Clip>,
    ) -> Poll<Ended> {
        let Some(clip) = clip else {
            return self.poll_deadline(cx, had_budget_before).map(|()| Ended::Own);
        };
        let registered = self.kind() == REGISTERED;
        if self.poll_deadline(cx, had_budget_before).is_ready() {
            return Poll::Ready(Ended::Own);
        }
        if !scope::passed().is_some_and(|passed| clip.passed_with(passed)) {
            return Poll::Pending;
        }
        self.fire_with_scope();
        // One made in this poll: through the budget, as `poll_deadline`
        // (which sees through a budget the future spent this poll).
        let spent_here = had_budget_before && !coop::has_budget_remaining();
        if !registered && !spent_here {
            ready!(coop::spend(cx));
        }
        Poll::Ready(Ended::WithScope)
    }

    /// Completes this timeout as fired, now, where its deadline, a scope's,
    /// passed with the scope (see [`poll_clipped`](Self::poll_clipped)):
    /// out of the wheel, its waker dropped after the lock, counted fired
    /// (it reached its deadline: the inherited one). One the timer fired
    /// or cancelled meanwhile stays so.
    #[cold]
    #[inline(never)]
    fn fire_with_scope(&mut self) {
        if self.kind() != REGISTERED {
            return;
        }
        let shard = &*self.shard;
        let key = self.key();
        let Some(mut guard) = shard.lock_unless_forked() else {
            return;
        };
        let tick = self.registered_tick(|| guard.wheel.tick(key));
        // The word first, as `clear` does.
        shard.deadlines.remove(key, self.gen());
        let (state, waker) = guard.wheel.remove(key);
        if state == State::Pending {
            guard.counts.fired += 1;
            shard.release_locked(&mut guard, 1);
        }
        drop(guard);
        drop(waker);
        match state {
            State::Cancelled => self.set(CANCELLED, tick),
            _ => self.set_done(FIRED, tick),
        }
    }

    /// The deadline of a [`WithTimeout`] or a deadline scope, polled after
    /// the future it bounds was pending, as tokio's `Timeout` polls its
    /// `Sleep`: ready, it spends a unit of tokio's cooperative budget,
    /// unless the future spent the task's last unit during this same poll
    /// (`had_budget_before`, and none now), where the deadline is seen
    /// through the budget, so that a future that always exhausts it still
    /// times out.
    #[inline]
    pub(crate) fn poll_deadline(&mut self, cx: &mut Context<'_>, had_budget_before: bool) -> Poll<()> {
        // Pending (the common case: a request in time), the budget is not
        // looked at.
        ready!(self.poll_timer(cx));
        if had_budget_before && !coop::has_budget_remaining() {
            Poll::Ready(())
        } else {
            coop::spend(cx)
        }
    }

    /// [`poll`](Future::poll) without tokio's budget: for the faces whose
    /// originals take no part in it (futures-timer's `Delay`, async-io's
    /// `Timer`).
    #[inline]
    pub(crate) fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let this = self;
        match this.kind() {
            UNREGISTERED => {
                // Cloned before the lock: a waker's clone is foreign code.
                match this.register(cx.waker().clone(), None) {
                    REGISTERED => Poll::Pending,
                    _ => Poll::Ready(()),
                }
            }
            REGISTERED => {
                let key = this.key();
                let Some(mut state) = this.shard.lock_unless_forked() else {
                    return this.poll_registered(cx);
                };
                let done = match state.wheel.pending_value_mut(key) {
                    // Pending, and its entry holds a waker of this task:
                    // the steady state of an idle timeout polled again and
                    // again.
                    Ok(Some(waker)) if waker.will_wake(cx.waker()) => return Poll::Pending,
                    Ok(_) => {
                        drop(state);
                        return this.poll_registered(cx);
                    }
                    // Fired (or cancelled): taken out under this same lock,
                    // the common end of a sleep (W12, W13: one lock a
                    // completion, not two).
                    Err(State::Fired) => FIRED,
                    Err(_) => CANCELLED,
                };
                let tick = this.take_completed(state, key);
                this.set_done(done, tick);
                Poll::Ready(())
            }
            FIRED => {
                this.word &= !UNPOLLED;
                Poll::Ready(())
            }
            _ => Poll::Ready(()),
        }
    }

    /// [`poll`](Future::poll) of a registered timeout, but for the steady
    /// state: a new waker to store, or the entry completed.
    #[cold]
    #[inline(never)]
    fn poll_registered(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let key = self.key();
        // A new waker is cloned with the lock released (its clone is
        // foreign code that may call back into the timer), then stored if
        // the timeout is still pending.
        let mut fresh = None;
        loop {
            let Some(mut state) = self.shard.lock_unless_forked() else {
                // A forked child whose parent held the lock at the fork:
                // nothing will fire it here.
                drop(fresh);
                let tick = self.registered_tick(|| NEVER);
                self.set(CANCELLED, tick);
                return Poll::Ready(());
            };
            let done = match state.wheel.pending_value_mut(key) {
                Ok(slot) => {
                    if slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        return Poll::Pending;
                    }
                    let Some(waker) = fresh.take() else {
                        drop(state);
                        fresh = Some(cx.waker().clone());
                        continue;
                    };
                    let old = slot.replace(waker);
                    drop(state);
                    drop(old);
                    return Poll::Pending;
                }
                Err(State::Fired) => FIRED,
                Err(_) => CANCELLED,
            };
            let tick = self.take_completed(state, key);
            drop(fresh);
            self.set_done(done, tick);
            return Poll::Ready(());
        }
    }

    /// Takes the completed (fired or cancelled) entry `key` out of the
    /// wheel under the lock `state` already holds, then drops its waker
    /// with the lock released; returns the tick to record it at.
    fn take_completed(&self, mut state: MutexGuard<'_, ShardState>, key: Key) -> u64 {
        let tick = self.registered_tick(|| state.wheel.tick(key));
        let (_, waker) = state.wheel.remove(key);
        drop(state);
        drop(waker);
        tick
    }
}

impl Drop for Timeout {
    fn drop(&mut self) {
        self.clear();
    }
}

impl fmt::Debug for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("deadline", &self.deadline())
            .field("expired", &self.is_expired())
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// A future with a deadline, from [`Timer::timeout`](crate::Timer::timeout):
    /// resolves to the future's output, or to [`Elapsed`] if the deadline
    /// comes first.
    ///
    /// The counterpart of tokio's [`tokio::time::Timeout<F>`]; the name
    /// [`Timeout`] belongs to the sleep future here.
    ///
    /// `Unpin` when the future is. If the timer stops before the future
    /// completes, it resolves to an [`Elapsed`] with
    /// [`is_timer_stopped`](Elapsed::is_timer_stopped) true.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut fut = timer.timeout(Duration::from_secs(1), async { "done" });
    /// assert!(fut.timeout_mut().deadline() > tokio::time::Instant::now().into_std());
    /// assert_eq!(fut.await, Ok("done"));
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct WithTimeout<F> {
        #[pin]
        future: F,
        timeout: Timeout,
        // The enclosing deadline scope's deadline it holds, where that
        // came first (see `deadline`).
        clipped: Option<Clip>,
    }
}

impl<F> WithTimeout<F> {
    /// `future` bounded by `timeout`, or by the deadline scope it is made
    /// in where that comes first.
    #[inline]
    pub(crate) fn new(future: F, mut timeout: Timeout) -> WithTimeout<F> {
        let clipped = timeout.clip_to_scope();
        WithTimeout {
            future,
            timeout,
            clipped,
        }
    }

    /// The wrapped future.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let fut = timer.timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(fut.get_ref().clone().into_inner(), 3);
    /// # }
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The wrapped future, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut fut = timer.timeout(Duration::from_secs(1), std::future::ready(3));
    /// *fut.get_mut() = std::future::ready(4);
    /// assert_eq!(fut.await, Ok(4));
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The wrapped future, pinned.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let fut = std::pin::pin!(timer.timeout(Duration::from_secs(1), async { 5 }));
    /// let inner = fut.get_pin_mut();
    /// assert_eq!(inner.await, 5);
    /// # }
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut F> {
        self.project().future
    }

    /// The [`Timeout`] that bounds the future: reset it to move the deadline.
    /// Inside a [deadline scope](crate::deadline) whose deadline came first,
    /// the timeout holds that deadline; once taken here, the deadline is
    /// the caller's own, and an [`Elapsed`] no longer says
    /// [`is_inherited`](Elapsed::is_inherited).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut fut = timer.timeout(Duration::from_millis(1), std::future::pending::<()>());
    /// fut.timeout_mut().reset(Duration::from_secs(5));
    /// let start = tokio::time::Instant::now();
    /// assert!(fut.await.is_err());
    /// assert_eq!(start.elapsed(), Duration::from_secs(5));
    /// # }
    /// ```
    pub fn timeout_mut(&mut self) -> &mut Timeout {
        self.clipped = None;
        &mut self.timeout
    }

    /// Gives back the future, dropping (cancelling) the deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let fut = timer.timeout(Duration::from_secs(1), async { 6 });
    /// let inner = fut.into_inner();
    /// assert_eq!(timer.pending(), 0);
    /// assert_eq!(inner.await, 6);
    /// # }
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for WithTimeout<F> {
    type Output = Result<F::Output, Elapsed>;

    /// As tokio's `Timeout`: the deadline's poll spends a unit of tokio's
    /// cooperative budget when ready, and where the wrapped future spent
    /// the task's last unit, the deadline is polled with the budget lifted,
    /// so that a future that always exhausts it still times out.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let had_budget_before = coop::has_budget_remaining();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let timeout = this.timeout;
        let clipped = *this.clipped;
        let err = match ready!(timeout.poll_clipped(cx, had_budget_before, clipped)) {
            Ended::Own => timeout.elapsed(),
            Ended::WithScope => Elapsed::deadline(),
        };
        Poll::Ready(Err(err.inherited_if(clipped.is_some())))
    }
}
