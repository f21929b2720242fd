//! The thread driver: Netty's worker thread, our way. A thread of its own
//! sleeps until the next tick with work, turns the wheels (`driver/mod.rs`, as the
//! tokio driver does) and wakes what expired, outside every lock.
//!
//! It is chosen with [`Builder::driver_thread`](crate::Builder::driver_thread),
//! and is the only driver of a build without the feature `tokio`. Its clock
//! is std's (`std::time::Instant`): tokio's paused time does not move it.
//!
//! # Sleeping
//!
//! The thread sleeps on its [`ThreadAlarm`] (a timerfd on Linux, a condition
//! variable elsewhere), armed for the earliest tick with work: after a turn
//! by the thread itself, and sooner by an insert whose deadline is earlier
//! than the one armed (`Common::note_deadline`, as for the tokio driver).
//! With nothing pending the alarm is disarmed and the thread sleeps until
//! an insert arms it: no wake-up at all while idle, none on an empty tick.
//! The thread turns at most once per tick: after a turn at `now`, its own
//! re-arm is for `now + tick` at the soonest (an insert may still arm it for
//! an earlier deadline of its own, once). While every tick has work (many
//! short sleeps), the alarm rings on each tick of the grid, set once for
//! all of them: a turn then costs the read the thread sleeps in, and no
//! `timerfd_settime` (see `ThreadAlarm::rearm`).
//!
//! # Why no wake-up is lost
//!
//! As for the tokio driver (see `driver/mod.rs`, which both share): the thread
//! marks itself [`TURNING`], turns and re-arms ([`turn::turn_once`]), marks
//! itself [`IDLE`], and arms again if an insert lowered `planned` meanwhile
//! ([`turn::after_turn`]). Every arm happens under the alarm's lock, and
//! the sleep sees the last (see `alarm/thread.rs`). Modelled in
//! `tests/shuttle_thread.rs`.
//!
//! # Ending
//!
//! The thread holds the timer weakly. It ends when the timer is stopped
//! ([`Timer::stop`](crate::Timer::stop) shuts the alarm) or when every
//! `Timer`, `Timeout`, `Interval` and pending task of it is gone (the
//! timer's shared state shuts the alarm as it is dropped): it wakes, finds
//! that, and returns. It is detached, not joined (the last handle may be
//! dropped on the thread itself, by a callback); it holds nothing but the
//! alarm and weak references once it is past its last turn.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crate::engine::alarm::thread::{ThreadAlarm, Woke};
use crate::engine::executor::TaskRunner;
use crate::engine::shard::{Common, Shard, Shared, IDLE, TURNING};
use crate::engine::driver::{self, BATCH};

/// The name of the driver's thread.
pub(crate) const THREAD_NAME: &str = "hashwheel-timer";

/// Driver threads running in the process, and Netty's warning past
/// [`TOO_MANY`] of them (a thread-driven `Timer` per connection or request
/// is a thread each).
static LIVE: AtomicUsize = AtomicUsize::new(0);
static WARNED: AtomicBool = AtomicBool::new(false);
const TOO_MANY: usize = 64;

/// Starts the driver thread of `shared`, sleeping on `alarm` (the one in
/// its `Common`); due callbacks go to `runner`.
///
/// # Errors
///
/// The OS's, where it cannot start a thread.
pub(crate) fn start(
    shared: &Shared,
    alarm: Arc<ThreadAlarm>,
    runner: TaskRunner,
) -> std::io::Result<()> {
    #[cfg(feature = "tokio")]
    let runner = {
        let mut runner = runner;
        runner.watch(shared);
        runner
    };
    let (common, shards) = shared.driver_parts();
    let weak = Arc::downgrade(&common);
    drop(common);
    let live = LIVE.fetch_add(1, Ordering::Relaxed) + 1;
    let (started, running) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            let _ = started.send(());
            run(&weak, &shards, &alarm, &runner);
            LIVE.fetch_sub(1, Ordering::Relaxed);
        });
    if let Err(err) = spawned {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        return Err(err);
    }
    // The timer is not handed out before its thread runs our code: std
    // starts a thread under a lock of its own (the stack-overflow
    // handler's table), and a process that forked while a new driver
    // thread held it left its child that lock held for ever, so that the
    // child's first `thread::spawn` (its own default timer's) hung. A
    // `Delay` whose deadline passed while the timer started completes at
    // once, and its parent forked within microseconds (tests/fork.rs, a
    // line of forks, on a loaded machine). A thread that ends takes that
    // lock too: a thread-driven `Timer` dropped just before a `fork` may
    // still leave it to the child (the default timer never ends).
    let _ = running.recv();
    if live > TOO_MANY && !WARNED.swap(true, Ordering::Relaxed) {
        // On stderr too, as the runtime's too-many-timers warning (see
        // `live.rs`): it must reach a program without a subscriber.
        const WARNING: &str = "hashwheel: too many thread-driven Timers: each has a \
            thread of its own. Build one and share clones of it, which are cheap, rather \
            than one per connection or request. Warned once per process.";
        eprintln!("{WARNING} ({live} live)");
        tracing::warn!(live, "{WARNING}");
    }
    tracing::debug!(
        shards = shared.shards.len(),
        "hashwheel: driver thread started"
    );
    Ok(())
}

/// The thread's life: sleep, turn, until shut or gone.
fn run(common: &Weak<Common>, shards: &[Weak<Shard>], alarm: &ThreadAlarm, runner: &TaskRunner) {
    let mut batch = Vec::with_capacity(BATCH);
    let why = loop {
        if alarm.wait() == Woke::Shut {
            break "timer stopped or gone";
        }
        let Some(common) = common.upgrade() else {
            break "every timer handle and timeout dropped";
        };
        if common.is_stopped() {
            break "timer stopped";
        }
        common.turn_state.store(TURNING, Ordering::SeqCst);
        let turned = catch_unwind(AssertUnwindSafe(|| {
            driver::turn_once(&common, shards, runner, &mut batch, common.now_tick())
        }));
        match turned {
            Ok(turned) => {
                common.turn_state.store(IDLE, Ordering::SeqCst);
                driver::after_turn(&common, turned);
            }
            Err(panic) => {
                // Nothing of ours is expected to panic (user callbacks and
                // wakers are caught where they run); if something does, the
                // timer stops with a reason every pending timeout reports.
                driver::contain_panic(&common, shards, runner, &mut batch, &*panic);
                common.turn_state.store(IDLE, Ordering::SeqCst);
                break "driver panicked";
            }
        }
        // Not held while asleep: the last handle may go meanwhile.
        drop(common);
    };
    tracing::debug!(why, "hashwheel: driver thread ended");
}
