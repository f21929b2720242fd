//! The thread driver's alarm: where its thread sleeps until the next tick
//! with work, and what wakes it sooner (a new earliest deadline, a stop, the
//! last handle going).
//!
//! One of the two implementations of the alarm (see `alarm`). It sits below
//! the shard state, which arms it (see `Common::note_deadline`), and knows
//! nothing of wheels: a tick number (for "is this earlier than what is
//! armed") and the instant it stands for.
//!
//! # Why no wake-up is lost
//!
//! Every change (arm, disarm, shut) happens under [`ThreadAlarm::state`]'s lock,
//! and the thread decides to sleep, and for how long, under that lock too:
//!
//! - on Linux the alarm is a timerfd, set under the lock: arming it sooner
//!   is re-setting it, and a time already past makes it readable at once.
//!   The thread sleeps in a blocking `read` of it, which returns once the
//!   time set last has come, whenever it was set (before or during the
//!   read). A timerfd has no timer slack, where `futex` and `nanosleep`
//!   (what `Condvar::wait_timeout` and `thread::park_timeout` use) get the
//!   kernel's default 50 µs.
//! - elsewhere a `Condvar`: the thread waits on it with the lock, so an
//!   arm, made under the lock, comes either before the thread looks at the
//!   deadline or while it waits, and then notifies it.
//!
//! A single ring of the timerfd (not the periodic one) 250 µs or more
//! ahead is set as much sooner as the thread has lately woken late from
//! one, at most `timerfd::LEAD` (25 µs), and the woken thread spins the
//! rest: a turn comes at its instant rather than a wake-up's latency after
//! it, never before.
//!
//! Modelled, with a broken variant that loses the wake-up, in
//! `tests/shuttle_thread.rs`. `--cfg hashwheel_condvar` picks the Condvar
//! on Linux too, so that CI runs the other platforms' path.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Rearmed;
use crate::engine::clock::Clock;
use crate::engine::process::Origin;
use crate::wheel::raw::NEVER;

// The bell the driver's thread sleeps on: a timerfd on Linux, a
// `Condvar` elsewhere (and on Linux under `--cfg hashwheel_condvar`, so
// that CI runs the other platforms' path): the one seam of this file.
#[cfg(all(target_os = "linux", not(hashwheel_condvar)))]
use timerfd::{Bell, Lead};
#[cfg(any(not(target_os = "linux"), hashwheel_condvar))]
use condvar::{Bell, Lead};

/// The state under the lock.
#[derive(Debug)]
struct State {
    /// The tick the alarm is armed for; `u64::MAX` when disarmed.
    armed: u64,
    /// The instant of `armed` (ignored when disarmed).
    at: Instant,
    /// The timer stopped or is gone: the thread ends.
    shut: bool,
    /// The alarm rings on every tick of the driver's grid (a periodic
    /// timerfd, set by [`ThreadAlarm::rearm`]) rather than once: while it does,
    /// the driver's re-arm for the next tick of the grid is no syscall.
    periodic: bool,
    /// How early the bell rings a single ring (the timerfd's; nothing for
    /// the `Condvar`, which reads none of it).
    #[cfg_attr(any(not(target_os = "linux"), hashwheel_condvar), allow(dead_code))]
    lead: Lead,
}

/// The thread driver's alarm.
#[derive(Debug)]
pub(crate) struct ThreadAlarm {
    state: Mutex<State>,
    /// The process whose driver thread sleeps here (the timer's, shared
    /// with its shards). A child forked from it has no such thread, shares
    /// the timerfd with the parent (the same open file), and may find the
    /// lock held for ever: see [`ThreadAlarm::is_foreign`].
    origin: Arc<Origin>,
    bell: Bell,
}

/// What [`ThreadAlarm::wait`] returns.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// The armed time came (or may have: turn and see).
    Due,
    /// Shut: the thread ends.
    Shut,
}

impl ThreadAlarm {
    /// A disarmed alarm.
    ///
    /// # Errors
    ///
    /// The OS's, where it has no timerfd to give (too many open files).
    pub(crate) fn new(origin: Arc<Origin>) -> std::io::Result<ThreadAlarm> {
        Ok(ThreadAlarm {
            state: Mutex::new(State {
                armed: u64::MAX,
                at: Instant::now(),
                shut: false,
                periodic: false,
                lead: Lead::new(),
            }),
            origin,
            bell: Bell::new()?,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Arms the alarm for `tick`, at `at`, if it is armed for later (a new
    /// earliest deadline, which then wakes the sleeping thread sooner; the
    /// driver's own re-arm is [`rearm`](Self::rearm)). Returns whether it
    /// changed anything.
    pub(crate) fn arm(&self, tick: u64, at: Instant) -> bool {
        if self.is_foreign() {
            return false;
        }
        let mut state = self.lock();
        if state.shut || tick >= state.armed {
            return false;
        }
        state.armed = tick;
        state.at = at;
        state.periodic = false;
        self.bell.ring(&mut state, Some(at));
        true
    }

    /// The driver's re-arm after a turn, for `tick` at `at` (`u64::MAX`:
    /// nothing pending). `grid` is the tick of the driver's grid when
    /// `tick` is its next one (the soonest the driver turns again): the
    /// alarm then rings on every tick of the grid from `at` on, and a later
    /// re-arm for the next tick of the grid finds it so and changes nothing.
    /// A timer with work on every tick (many short sleeps) then pays no
    /// `timerfd_settime` per turn, only the read it sleeps in. Anything
    /// else sets a single ring (or disarms), as [`arm`](Self::arm) does.
    /// Returns whether it changed the alarm.
    ///
    /// While the alarm rings on the grid, it rings no later than the next
    /// tick of the grid after any turn, which is never after `at` (`tick`
    /// is that next tick): an insert that needs it sooner arms it once,
    /// which ends the periodic ringing (`arm` clears `periodic`, under the
    /// lock). With nothing pending, a single ring already rang (the driver
    /// woke from it) unless an insert set one during the turn, which rings
    /// once for nothing at worst: only a periodic alarm is disarmed.
    pub(crate) fn rearm(&self, tick: u64, at: Instant, grid: Option<Duration>) -> bool {
        let mut state = self.lock();
        if state.shut {
            return false;
        }
        state.armed = tick;
        state.at = at;
        self.bell.rearm(&mut state, tick, at, grid)
    }

    /// See [`Alarm::rearm`](super::Alarm::rearm): at most one turn per
    /// tick of the driver's grid (the tick after `now`'s: a turn late in
    /// its tick does not push the next one a whole tick later), and while
    /// the next tick of the grid has work, the alarm rings on every tick of
    /// the grid, set once for as long as that lasts (see
    /// [`rearm`](Self::rearm)).
    pub(crate) fn rearm_after_turn(&self, clock: &Clock, now: u64, target: u64) -> Rearmed {
        let tick_us = clock.tick_us;
        let (alarm, soonest) = after_turn(tick_us, now, target);
        let grid = (alarm == soonest).then(|| Duration::from_micros(tick_us));
        Rearmed {
            set: self.rearm(alarm, clock.instant_of(alarm), grid),
            soonest,
        }
    }

    /// Whether this is a child forked from the process of the driver's
    /// thread (see [`Origin::is_current`]), on the paths that make a system call anyway (an
    /// insert's arm, a shut). There the alarm is left alone: setting
    /// the timerfd, which the child shares with its parent, would move the
    /// parent's alarm (and end its periodic ringing, which the parent would
    /// not know, and its driver would sleep for good), and its lock may be
    /// held for ever by a thread of the parent. A child's timer of its own
    /// has a alarm of its own.
    fn is_foreign(&self) -> bool {
        !self.origin.is_current()
    }

    /// Takes the tick the alarm was armed for, leaving it disarmed (the
    /// driver, as it starts a turn: inserts during the turn leave the arming
    /// to it).
    pub(crate) fn take_armed(&self) -> u64 {
        std::mem::replace(&mut self.lock().armed, u64::MAX)
    }

    /// Shuts the alarm: the thread wakes (now or at its next wait) and
    /// ends. For good.
    pub(crate) fn shut(&self) {
        if self.is_foreign() {
            return;
        }
        let mut state = self.lock();
        state.shut = true;
        state.periodic = false;
        let now = state.at.min(Instant::now());
        self.bell.ring(&mut state, Some(now));
    }

    /// Sleeps until the armed time, or until shut.
    pub(crate) fn wait(&self) -> Woke {
        self.bell.wait(self)
    }
}

/// The bell of Linux: a timerfd, which the kernel does not delay by the
/// 50 µs of timer slack it adds to `nanosleep` and `futex`.
#[cfg(all(target_os = "linux", not(hashwheel_condvar)))]
mod timerfd {
    use std::time::{Duration, Instant};

    use super::{State, ThreadAlarm, Woke};

    /// The most a single ring is set sooner than its instant (see
    /// [`Bell::wait`]). A thread asleep on the timerfd wakes a wake-up's
    /// latency after its time, 7 to 30 µs at the median on a 2-core VM
    /// (the driver's own lateness, `Stats::lateness`, in rows of 300 µs
    /// and 1 ms sleeps), and a timer's task wakes a second thread's
    /// wake-up after that, where async-io's reactor wakes the task's
    /// thread once. W13's rows on smol (three rounds, load average 3-4),
    /// lateness p50: `after(300 µs)` 7.5 µs, 17.7 without the lead,
    /// async-io 13.8; `after(1 ms)` 18.5, 31.6, async-io 29.4; W12 light on
    /// 2 workers, `Delay` 27 µs, 63 without; the process's CPU within the
    /// rounds' spread.
    pub(super) const LEAD: Duration = Duration::from_micros(25);

    /// A single ring sooner than this is set at its instant, so that the
    /// spin costs at most a tenth of the time the thread sleeps; a
    /// periodic ring (every tick of the grid has work: W12 `busy`, W9) is
    /// never early.
    pub(super) const LEAD_FROM: Duration = Duration::from_micros(250);

    /// How early the bell sets a single ring, learnt from how late the
    /// thread wakes from one (under the alarm's lock).
    #[derive(Debug, Default)]
    pub(super) struct Lead {
        /// The instant a single ring was set for, where it was ahead of
        /// the clock when set: how late the thread woke from it is a
        /// sample of [`late`](Lead::late).
        pub(super) ring: Option<Instant>,
        /// How late the thread wakes from a ring (a moving average): how
        /// much sooner the next single ring is set, up to [`LEAD`].
        pub(super) late: Duration,
    }

    impl Lead {
        pub(super) fn new() -> Lead {
            Lead::default()
        }
    }

    #[derive(Debug)]
    pub(super) struct Bell(rustix::fd::OwnedFd);

    impl Bell {
        pub(super) fn new() -> std::io::Result<Bell> {
            Ok(Bell(rustix::time::timerfd_create(
                rustix::time::TimerfdClockId::Monotonic,
                rustix::time::TimerfdFlags::CLOEXEC,
            )?))
        }

        /// Rings once at `at` (at once if it has passed), as much sooner
        /// as the thread has lately woken late (at most [`LEAD`], where
        /// `at` is [`LEAD_FROM`] or more ahead; see [`wait`](Self::wait));
        /// `None` disarms. Under the alarm's lock.
        pub(super) fn ring(&self, state: &mut State, at: Option<Instant>) {
            let now = Instant::now();
            let lead = &mut state.lead;
            let ring = at.map(|at| {
                if at.saturating_duration_since(now) >= LEAD_FROM {
                    at - lead.late.min(LEAD)
                } else {
                    at
                }
            });
            lead.ring = ring.filter(|ring| *ring > now);
            self.set(ring, None);
        }

        /// [`ThreadAlarm::rearm`]'s setting of the bell, under the lock:
        /// on the grid, a periodic ring set once; otherwise a single ring,
        /// or nothing where the bell is disarmed already.
        pub(super) fn rearm(
            &self,
            state: &mut State,
            tick: u64,
            at: Instant,
            grid: Option<Duration>,
        ) -> bool {
            match grid {
                Some(_) if state.periodic => false,
                Some(period) => {
                    state.periodic = true;
                    state.lead.ring = None;
                    self.set(Some(at), Some(period));
                    true
                }
                None if tick == u64::MAX && !state.periodic => false,
                None => {
                    state.periodic = false;
                    self.ring(state, (tick != u64::MAX).then_some(at));
                    true
                }
            }
        }

        /// Sleeps in a read of the timerfd. A single ring was set a little
        /// early (see [`ring`](Self::ring)): the rest is spun, so that the
        /// turn comes at the instant rather than a wake-up's latency after
        /// it. Bounded: an arm meanwhile only moves the instant sooner, and
        /// none is waited for longer than twice the most lead.
        pub(super) fn wait(&self, alarm: &ThreadAlarm) -> Woke {
            if alarm.lock().shut {
                return Woke::Shut;
            }
            let mut buf = [0u8; 8];
            loop {
                match rustix::io::read(&self.0, &mut buf) {
                    Ok(_) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(err) => {
                        // Not expected from a blocking timerfd; sleep a
                        // little rather than spin, and turn.
                        tracing::warn!(%err, "hashwheel: reading the driver's timerfd failed");
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        break;
                    }
                }
            }
            let woke = Instant::now();
            let spin_to = {
                let mut state = alarm.lock();
                if state.shut {
                    return Woke::Shut;
                }
                let lead = &mut state.lead;
                if let Some(ring) = lead.ring.take() {
                    let late = woke.saturating_duration_since(ring).min(4 * LEAD);
                    lead.late = lead.late - lead.late / 8 + late / 8;
                }
                (!state.periodic && state.armed != u64::MAX).then_some(state.at)
            };
            if let Some(at) = spin_to {
                let until = at.min(woke + 2 * LEAD);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            Woke::Due
        }

        /// Sets the timerfd to ring at `at` (at once if it has passed), and
        /// then every `period` if one is given, or disarms it (`None`);
        /// under the lock. A set also clears an expiry not yet read.
        fn set(&self, at: Option<Instant>, period: Option<Duration>) {
            use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec};
            let value = match at {
                None => Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                Some(at) => {
                    // Relative: std's `Instant` is CLOCK_MONOTONIC, but
                    // opaque. Zero would disarm: a time already past rings
                    // in 1 ns.
                    let d = at.saturating_duration_since(Instant::now());
                    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2);
                    let nanos = i64::from(d.subsec_nanos());
                    Timespec {
                        tv_sec: secs,
                        tv_nsec: if secs == 0 && nanos == 0 { 1 } else { nanos },
                    }
                }
            };
            let interval = match (at, period) {
                (Some(_), Some(p)) => Timespec {
                    tv_sec: i64::try_from(p.as_secs()).unwrap_or(i64::MAX / 2),
                    tv_nsec: i64::from(p.subsec_nanos()),
                },
                _ => Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
            };
            let spec = Itimerspec {
                it_interval: interval,
                it_value: value,
            };
            if let Err(err) =
                rustix::time::timerfd_settime(&self.0, TimerfdTimerFlags::empty(), &spec)
            {
                // EINVAL is the only failure for valid arguments on a valid
                // fd.
                tracing::error!(%err, "hashwheel: setting the driver's timerfd failed");
            }
        }
    }
}

/// The bell of other platforms: a `Condvar` the thread waits on with a
/// timeout, looking at the armed time under the lock before it waits.
#[cfg(any(not(target_os = "linux"), hashwheel_condvar))]
mod condvar {
    use std::sync::Condvar;
    use std::time::{Duration, Instant};

    use super::{State, ThreadAlarm, Woke};

    /// A `Condvar` waits to the instant: no lead.
    #[derive(Debug)]
    pub(super) struct Lead;

    impl Lead {
        pub(super) fn new() -> Lead {
            Lead
        }
    }

    #[derive(Debug)]
    pub(super) struct Bell(Condvar);

    impl Bell {
        pub(super) fn new() -> std::io::Result<Bell> {
            Ok(Bell(Condvar::new()))
        }

        /// Wakes the thread, which looks at the armed time again.
        pub(super) fn ring(&self, _state: &mut State, _at: Option<Instant>) {
            self.0.notify_one();
        }

        /// Nothing to set, nothing to notify: the thread re-arms itself,
        /// before it waits.
        pub(super) fn rearm(
            &self,
            state: &mut State,
            _tick: u64,
            _at: Instant,
            _grid: Option<Duration>,
        ) -> bool {
            state.periodic = false;
            true
        }

        /// Waits on the `Condvar` until the armed time, or until shut.
        pub(super) fn wait(&self, alarm: &ThreadAlarm) -> Woke {
            let mut state = alarm.lock();
            loop {
                if state.shut {
                    return Woke::Shut;
                }
                if state.armed == u64::MAX {
                    state = self
                        .0
                        .wait(state)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    continue;
                }
                let now = Instant::now();
                if now >= state.at {
                    return Woke::Due;
                }
                let wait = state.at - now;
                state = self
                    .0
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
            }
        }
    }
}

/// The tick the thread driver's alarm rings at after a turn at `now`, for
/// the earliest work at `target` (`u64::MAX` if none, or nothing pending),
/// and the soonest tick it turns again: the next tick of its grid since
/// the timer's start (a turn late in its tick does not push the next one
/// a whole tick later). The alarm rings at that very instant (no
/// rounding), so work due after `now` rings within a tick of its
/// deadline; an insert arms it at its deadline itself.
pub(crate) fn after_turn(tick_us: u64, now: u64, target: u64) -> (u64, u64) {
    let soonest = (now / tick_us).saturating_add(1).saturating_mul(tick_us);
    let alarm = if target < NEVER {
        target.max(soonest)
    } else {
        u64::MAX
    };
    (alarm, soonest)
}

#[cfg(all(test, target_os = "linux", not(hashwheel_condvar)))]
mod tests {
    use super::*;

    /// The driver's re-arm for the next tick of its grid sets a periodic
    /// timerfd once: it rings tick after tick with no further set, a second
    /// re-arm on the grid changes nothing, and an insert's arm or a re-arm
    /// off the grid ends it.
    #[test]
    fn a_rearm_on_the_grid_rings_every_tick_from_one_set() {
        let alarm = ThreadAlarm::new(Arc::new(Origin::here())).unwrap();
        let tick = Duration::from_micros(200);
        let start = Instant::now();
        assert!(alarm.rearm(1, start + tick, Some(tick)), "set once");
        assert!(!alarm.rearm(2, start + 2 * tick, Some(tick)), "kept");
        // Rings three times, never before its first time, with no set.
        for _ in 0..3 {
            assert_eq!(alarm.wait(), Woke::Due);
        }
        assert!(start.elapsed() >= tick, "rang early");
        // An insert's arm sets a single ring: the next re-arm on the grid
        // sets the fd again.
        assert!(alarm.arm(0, Instant::now()));
        assert_eq!(alarm.wait(), Woke::Due);
        assert!(
            alarm.rearm(5, Instant::now() + tick, Some(tick)),
            "set again"
        );
        // Nothing pending: a periodic alarm is disarmed, once.
        assert!(alarm.rearm(u64::MAX, Instant::now(), None), "disarmed");
        assert!(!alarm.rearm(u64::MAX, Instant::now(), None), "already");
        // Off the grid: a single ring.
        assert!(alarm.rearm(9, Instant::now() + tick, None));
        assert_eq!(alarm.wait(), Woke::Due);
        alarm.shut();
        assert_eq!(alarm.wait(), Woke::Shut);
    }

    /// A single ring far enough ahead is set sooner by how late the thread
    /// has lately woken, and the wait spins the rest: it returns at its
    /// instant, never before (the driver's turn then finds everything due
    /// at it), however late the thread woke before.
    #[test]
    fn a_ring_set_early_returns_no_sooner_than_its_instant() {
        use super::timerfd::{LEAD, LEAD_FROM};
        let alarm = ThreadAlarm::new(Arc::new(Origin::here())).unwrap();
        alarm.lock().lead.late = LEAD * 2;
        for ahead in [LEAD_FROM, LEAD_FROM * 4, Duration::from_micros(40)] {
            for _ in 0..5 {
                let at = Instant::now() + ahead;
                assert!(alarm.arm(1, at));
                assert_eq!(alarm.wait(), Woke::Due);
                assert!(Instant::now() >= at, "returned before its instant");
                alarm.rearm(u64::MAX, Instant::now(), None);
            }
        }
        let at = Instant::now() + LEAD_FROM;
        assert!(alarm.rearm(2, at, None));
        assert_eq!(alarm.wait(), Woke::Due);
        assert!(Instant::now() >= at, "the driver's re-arm, early too");
    }
}
