//! How many timers are live on each runtime, and Netty's warning when a
//! program makes too many: a `Timer` per connection or per request instead
//! of one shared `Timer`.
//!
//! A timer counts from [`Builder::build`](crate::Builder::build) until its
//! driver's alarm is dropped: when it stops (by
//! [`Timer::stop`](crate::Timer::stop) or the shutdown of its runtime), or
//! when every `Timer` clone, `Timeout`, `Interval` and pending task of it is
//! gone, whichever comes first. Clones share one alarm, so they count once.
//!
//! The warning goes to stderr as well as to `tracing`: a program without a
//! `tracing` subscriber, the common case for the mistake it points at,
//! would otherwise never see it. Once per process keeps it to one line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::runtime::Id;

/// Live timers on one runtime that are still fine: the next one warns
/// (once per process). Netty's figure for its `HashedWheelTimer` instances.
pub(crate) const TOO_MANY: usize = 64;

/// Live timers per runtime, for the runtimes that have any.
static LIVE: Mutex<Vec<(Id, usize)>> = Mutex::new(Vec::new());

/// Whether this process has warned already.
static WARNED: AtomicBool = AtomicBool::new(false);

fn live() -> MutexGuard<'static, Vec<(Id, usize)>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One live timer of a runtime: counted in when made, out when dropped.
pub(crate) struct LiveTimer {
    runtime: Id,
}

impl LiveTimer {
    /// Counts a new timer on `runtime`; warns, once per process, when it
    /// is the 65th live one there.
    pub(crate) fn new(runtime: Id) -> LiveTimer {
        let count = {
            let mut live = live();
            match live.iter_mut().find(|(id, _)| *id == runtime) {
                Some((_, count)) => {
                    *count += 1;
                    *count
                }
                None => {
                    live.push((runtime, 1));
                    1
                }
            }
        };
        if count > TOO_MANY && !WARNED.swap(true, Ordering::Relaxed) {
            warn_too_many(count, runtime);
        }
        LiveTimer { runtime }
    }
}

/// Netty's warning, on stderr and through `tracing`.
#[cold]
fn warn_too_many(count: usize, runtime: Id) {
    const WARNING: &str = "hashwheel: too many live Timers on one runtime. A Timer is a \
        shared resource (its own wheels, driver, runtime timer and guard task): build one \
        per runtime and share clones of it, which are cheap, rather than one per \
        connection or request. Warned once per process.";
    eprintln!("{WARNING} ({count} live on runtime {runtime})");
    tracing::warn!(live = count, runtime = %runtime, "{WARNING}");
}

impl Drop for LiveTimer {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(at) = live.iter().position(|(id, _)| *id == self.runtime) {
            live[at].1 -= 1;
            if live[at].1 == 0 {
                live.swap_remove(at);
            }
        }
    }
}
