//! The current runtime's default [`Timer`]: the one the functions of
//! [`hashwheel::time`](crate::time) and the scopes of
//! [`hashwheel::deadline`](crate::deadline) run on, one per runtime, built
//! on first use or set by [`Timer::set_current`]. Here, on the handle's
//! floor, so that both faces reach it without importing each other.

use std::cell::RefCell;
use std::sync::{Mutex, PoisonError};

use tokio::runtime::{Handle, Id};

use crate::error::Error;
use crate::timer::{Timer, NO_TIME_DRIVER};

/// What tokio panics with on a runtime without a time driver.
const TIMERS_DISABLED: &str = "A Tokio 1.x context was found, but timers are disabled. \
                               Call `enable_time` on the runtime builder to enable timers.";

/// Each runtime's default timer, by runtime id. Few entries: one per live
/// runtime that has used this module, and stopped timers are pruned on the
/// way.
static DEFAULTS: Mutex<Vec<(Id, Timer)>> = Mutex::new(Vec::new());

thread_local! {
    /// The default timer this thread used last, and its runtime.
    static CACHE: RefCell<Option<(Id, Timer)>> = const { RefCell::new(None) };
}

/// Runs `f` on the current runtime's default timer. `f` must not run user
/// code: it may run while the cache is borrowed.
///
/// A runtime's look-up (tokio names the current runtime through
/// `Handle::try_current` alone: a thread-local read and an `Arc` count up
/// and down) and this thread's cache; a miss (another runtime, or the
/// timer stopped) is out of line.
#[track_caller]
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Timer) -> R) -> R {
    let handle = runtime();
    let id = handle.id();
    let mut f = Some(f);
    let hit = CACHE
        .try_with(|cache| match &*cache.borrow() {
            Some((cached, timer)) if *cached == id && !timer.is_stopped() => {
                f.take().map(|f| f(timer))
            }
            _ => None,
        })
        .ok()
        .flatten();
    if let Some(res) = hit {
        return res;
    }
    let timer = cache_default(&handle, id);
    match f.take() {
        Some(f) => f(&timer),
        None => unreachable!("the closure ran on the cache's timer"),
    }
}

/// The default timer of runtime `id` (see [`default_of`]), now this
/// thread's cache.
#[cold]
#[track_caller]
fn cache_default(handle: &Handle, id: Id) -> Timer {
    let timer = default_of(handle, id);
    // Whatever the cache held is dropped after its borrow ends.
    let _old = CACHE
        .try_with(|cache| cache.borrow_mut().replace((id, timer.clone())))
        .ok()
        .flatten();
    timer
}

/// The runtime this thread is in, panicking with tokio's message outside
/// one (as `tokio::time::sleep` does), at the caller's location.
#[track_caller]
#[inline]
fn runtime() -> Handle {
    match Handle::try_current() {
        Ok(handle) => handle,
        Err(err) => panic!("{err}"),
    }
}

/// The default timer of runtime `id`, built on `handle` if it has none that
/// runs.
#[cold]
#[track_caller]
fn default_of(handle: &Handle, id: Id) -> Timer {
    let mut defaults = DEFAULTS.lock().unwrap_or_else(PoisonError::into_inner);
    let stopped = prune(&mut defaults);
    if let Some((_, timer)) = defaults.iter().find(|(of, _)| *of == id) {
        return timer.clone();
    }
    let built = Timer::builder().handle(handle.clone()).build();
    if let Ok(timer) = &built {
        defaults.push((id, timer.clone()));
    }
    // Timers are dropped outside the lock.
    drop(defaults);
    drop(stopped);
    match built {
        Ok(timer) => timer,
        Err(err) if err == Error::invalid_config(NO_TIME_DRIVER) => panic!("{TIMERS_DISABLED}"),
        Err(err) => panic!("hashwheel::time: the runtime's default timer: {err}"),
    }
}

/// Takes the stopped timers out of `defaults`.
fn prune(defaults: &mut Vec<(Id, Timer)>) -> Vec<(Id, Timer)> {
    let mut stopped = Vec::new();
    let mut i = 0;
    while i < defaults.len() {
        if defaults[i].1.is_stopped() {
            stopped.push(defaults.swap_remove(i));
        } else {
            i += 1;
        }
    }
    stopped
}

impl Timer {
    /// The current runtime's default timer: the one the functions of
    /// [`hashwheel::time`](crate::time) run on, built with the default
    /// [`Builder`](crate::Builder) if the runtime has none yet (or its last
    /// one has stopped).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, or on a runtime without a time driver, as
    /// `tokio::time::sleep` does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::Timer;
    /// use std::time::Duration;
    ///
    /// let idle = hashwheel::time::sleep(Duration::from_secs(30));
    /// let timer = Timer::current();
    /// assert_eq!(timer.pending(), 1);
    /// drop(idle);
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    #[must_use]
    #[track_caller]
    pub fn current() -> Timer {
        with_current(Timer::clone)
    }

    /// Makes this timer the current runtime's default, the one the
    /// functions of [`hashwheel::time`](crate::time) and
    /// [`Timer::current`] use: call it before they first run on the
    /// runtime, to give them a configured [`Builder`](crate::Builder).
    ///
    /// The timer is driven where it was built; it stays the default until
    /// it stops (its driver's runtime shuts down, or [`Timer::stop`]).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_config`] if the runtime already has a default
    /// timer that runs (another one; setting the same one again is fine),
    /// and [`Error::is_stopped`] if this timer has stopped.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::Timer;
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().max_pending(100_000).build().unwrap();
    /// timer.set_current().unwrap();
    /// let mut idle = Box::pin(hashwheel::time::sleep(Duration::from_secs(30)));
    /// assert!(futures_util::poll!(idle.as_mut()).is_pending());
    /// assert_eq!(timer.pending(), 1);
    /// assert!(Timer::builder().build().unwrap().set_current().is_err());
    /// # }
    /// ```
    #[track_caller]
    pub fn set_current(&self) -> Result<(), Error> {
        let id = runtime().id();
        self.check_running()?;
        let mut defaults = DEFAULTS.lock().unwrap_or_else(PoisonError::into_inner);
        let stopped = prune(&mut defaults);
        let res = match defaults.iter().find(|(of, _)| *of == id) {
            Some((_, timer)) if timer.same(self) => Ok(()),
            Some(_) => Err(Error::invalid_config(
                "the runtime already has a default timer: call Timer::set_current \
                 before any hashwheel::time function or Timer::current runs on it",
            )),
            None => {
                defaults.push((id, self.clone()));
                Ok(())
            }
        };
        drop(defaults);
        drop(stopped);
        res
    }
}
