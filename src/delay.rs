//! [`Delay`]: futures-timer's `Delay` on a process-wide thread-driven
//! [`Timer`], for code that runs on any executor.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::timeout::Timeout;
use crate::timer::Timer;

/// See [`Delay::TICK`].
const DELAY_TICK: Duration = Duration::from_micros(50);

/// The process's default thread-driven timer, and the process it was
/// started in.
static DEFAULT: OnceLock<(u32, Timer)> = OnceLock::new();

/// The default timer of a child process forked after [`DEFAULT`] started:
/// its driver thread did not survive the `fork`.
static FORKED: Mutex<Option<(u32, &'static Timer)>> = Mutex::new(None);

/// The process-wide timer behind [`Delay`], started on first use, and again
/// on first use in a forked child.
///
/// # Panics
///
/// If its thread (or, on Linux, its timerfd) cannot be created.
#[track_caller]
fn default_timer() -> &'static Timer {
    default_timer_of(std::process::id())
}

/// [`default_timer`] in the process `pid` (a parameter, so that a test can
/// play a forked child without forking).
#[track_caller]
fn default_timer_of(pid: u32) -> &'static Timer {
    let (started_in, timer) = DEFAULT.get_or_init(|| (pid, build()));
    if *started_in == pid {
        return timer;
    }
    // A child after `fork()`: the timer above belongs to the parent (its
    // thread is not here, and its timerfd is shared with the parent's: it
    // must not be armed from here). One new timer per process, leaked: a
    // process-wide timer lives as long as the process anyway.
    let mut forked = FORKED.lock().unwrap_or_else(|p| p.into_inner());
    match *forked {
        Some((child, timer)) if child == pid => timer,
        _ => {
            let timer: &'static Timer = Box::leak(Box::new(build()));
            *forked = Some((pid, timer));
            timer
        }
    }
}

#[track_caller]
fn build() -> Timer {
    match Timer::builder().tick(DELAY_TICK).driver_thread().build() {
        Ok(timer) => timer,
        Err(err) => panic!("hashwheel: the default timer of Delay could not start: {err}"),
    }
}

/// A future that completes after a duration: futures-timer 3's `Delay`, on
/// hashwheel's wheel, for code on any executor (smol, `futures`' executors,
/// plain threads, tokio too).
///
/// It runs on a process-wide [`Timer`] driven by a thread of its own,
/// started on first use, with a tick of [`Delay::TICK`] (50 µs): a delay
/// completes within tens of microseconds after its deadline, never before.
/// That thread sleeps while nothing is pending, and wakes at most once per
/// 50 µs tick with work. The clock is std's: tokio's paused time does not
/// move it (use [`Timer`] on a runtime for that).
///
/// A futures-timer user switches by the `use` line:
/// `use hashwheel::Delay;` for `use futures_timer::Delay;`. See the
/// migration guide's "From futures-timer" for the differences.
///
/// It is `Unpin`, `Send` and `Sync`; dropping it cancels it.
///
/// # fork
///
/// A child process forked after the default timer started has no driver
/// thread: the first `Delay::new` in the child starts a timer of its own
/// (the process id tells). Delays created before the `fork` must not be
/// used in the child (they belong to the parent's timer); neither may a
/// thread-driven [`Timer`] of yours: build a new one there.
///
/// That check is a `getpid` system call in every [`Delay::new`] (about
/// 100 ns on a virtual machine, more than the rest of a `Delay`'s life):
/// safe Rust has no cheaper exact way to tell a forked child (no
/// `pthread_atfork`, and every thread-local or shared flag is copied into
/// the child unchanged), and a child that used its parent's timer would
/// lose its delays (no driver thread) or wake its parent's. A hot path
/// that creates many delays (a timeout per request) builds a thread-driven
/// [`Timer`] once and calls [`Timer::sleep`]: the same wheel and thread,
/// with no system call per delay.
///
/// # Examples
///
/// ```
/// use hashwheel::Delay;
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// futures::executor::block_on(Delay::new(Duration::from_millis(5)));
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Delay {
    timeout: Timeout,
}

impl Delay {
    /// The tick of the process-wide timer behind every `Delay`: 50 µs, so
    /// that a delay completes within tens of microseconds after its
    /// deadline, at the cost of at most one wake-up of the timer's thread
    /// per 50 µs tick that has work (none on others, none while idle).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hashwheel::Delay::TICK, std::time::Duration::from_micros(50));
    /// ```
    pub const TICK: Duration = DELAY_TICK;

    /// A delay that completes `dur` from now.
    ///
    /// Reads the process id (a system call) to start a timer of its own in
    /// a forked child: see [the type's docs](Delay#fork).
    ///
    /// # Panics
    ///
    /// On the first use in a process, if the default timer's thread (or,
    /// on Linux, its timerfd) cannot be created.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use hashwheel::Delay;
    /// use std::time::Duration;
    ///
    /// Delay::new(Duration::from_micros(300)).await;
    /// # });
    /// ```
    #[track_caller]
    pub fn new(dur: Duration) -> Delay {
        Delay {
            timeout: default_timer().sleep(dur),
        }
    }

    /// Moves the deadline to `dur` from now, earlier or later; a delay that
    /// completed becomes pending again.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use hashwheel::Delay;
    /// use std::time::{Duration, Instant};
    ///
    /// let start = Instant::now();
    /// let mut delay = Delay::new(Duration::from_secs(3600));
    /// delay.reset(Duration::from_millis(2));
    /// (&mut delay).await;
    /// assert!(start.elapsed() < Duration::from_secs(3600));
    /// # });
    /// ```
    pub fn reset(&mut self, dur: Duration) {
        self.timeout.reset(dur);
    }
}

impl Future for Delay {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().timeout).poll(cx)
    }
}

impl fmt::Debug for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delay")
            .field("deadline", &self.timeout.deadline())
            .field("expired", &self.timeout.is_expired())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fork check, without forking (that needs `unsafe`): a process id
    /// other than the one that started the default timer gets a timer of
    /// its own, once per process; the starter keeps its own.
    #[test]
    fn a_forked_child_gets_a_default_timer_of_its_own() {
        let parent = default_timer() as *const Timer;
        let me = std::process::id();
        assert_eq!(default_timer_of(me) as *const Timer, parent);
        let child = me.wrapping_add(1);
        let in_child = default_timer_of(child);
        assert_ne!(in_child as *const Timer, parent, "a new timer in the child");
        assert!(std::ptr::eq(default_timer_of(child), in_child), "once");
        let grandchild = me.wrapping_add(2);
        assert!(!std::ptr::eq(default_timer_of(grandchild), in_child));
        assert_eq!(default_timer() as *const Timer, parent);
        // The child's timer works.
        let start = std::time::Instant::now();
        let mut sleep = in_child.sleep(Duration::from_millis(2));
        while futures_util::FutureExt::now_or_never(&mut sleep).is_none() {
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(start.elapsed() >= Duration::from_millis(2));
    }
}
