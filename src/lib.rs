// The crate's front page: with the default feature `tokio`, the whole crate
// (docs/CRATE.md, then docs/GUARANTEES.md); without it, the wheel alone, so
// that page describes only what that build has.
#![cfg_attr(feature = "tokio", doc = include_str!("../docs/CRATE.md"))]
#![cfg_attr(feature = "tokio", doc = include_str!("../docs/GUARANTEES.md"))]
#![cfg_attr(
    not(feature = "tokio"),
    doc = "A hashed wheel timer: this build (without the default feature `tokio`)
is the wheel alone, [`wheel::Wheel`], with no clock, no runtime and no lock,
for your own event loop (mio or io_uring loops, game and simulation loops,
embedded schedulers), on `slab` alone. See [`wheel`] for how to drive it.

The default feature `tokio` adds the timer that runs on tokio: a shared
timer handle, a keyed delay queue and a drop-in for `tokio::time`."
)]
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "thread")]
mod delay;
#[cfg(feature = "tokio")]
pub mod delay_queue;
#[cfg(feature = "tokio")]
mod driver;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod error;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod executor;
#[cfg(all(test, feature = "tokio"))]
mod hooks;
#[cfg(feature = "hyper")]
mod hyper;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod interval;
#[cfg(feature = "tokio")]
mod live;
#[cfg(all(test, feature = "tokio"))]
mod regressions;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod shard;
#[cfg(feature = "thread")]
mod sleeper;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod stats;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod task;
#[cfg(feature = "thread")]
mod thread_driver;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod ticks;
#[cfg(feature = "tokio")]
pub mod time;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod timeout;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
#[cfg(any(feature = "tokio", feature = "thread"))]
mod turn;
pub mod wheel;

#[cfg(feature = "thread")]
#[cfg_attr(docsrs, doc(cfg(feature = "thread")))]
pub use delay::Delay;
#[cfg(feature = "tokio")]
pub use delay_queue::DelayQueue;
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use error::{Elapsed, Error};
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use executor::TaskExecutor;
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use interval::{Interval, MissedTickBehavior};
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use stats::Stats;
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use task::TaskHandle;
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use timeout::{Timeout, WithTimeout};
#[cfg(any(feature = "tokio", feature = "thread"))]
pub use timer::{Builder, Timer};

#[cfg(feature = "tokio")]
#[doc = include_str!("../docs/MIGRATING.md")]
pub mod migrating {}

/// The README's Rust examples, run as doctests so that they keep working.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Entry points for `cargo fuzz` (see `fuzz/README.md`); compiled only with
/// `--cfg fuzzing`, never part of the API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    /// Decodes `data` into operations on one wheel and checks each against
    /// a reference model, twice: as the timer uses the wheel's core, and
    /// through the public [`Wheel`](crate::wheel::Wheel); panics with a
    /// shrunk reproduction on a mismatch.
    pub fn wheel(data: &[u8]) {
        crate::wheel::model::check_bytes(data);
        crate::wheel::keyed_model::check_bytes(data);
    }
}
