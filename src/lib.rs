// The crate's front page: with the default feature `tokio`, the whole crate
// (docs/CRATE.md, then docs/GUARANTEES.md); without it, the wheel alone, so
// that page describes only what that build has.
#![cfg_attr(feature = "tokio", doc = include_str!("../docs/CRATE.md"))]
// CRATE.md names the thread driver's items, which a build without the
// feature `thread` lacks: there its links go to docs.rs.
#![cfg_attr(
    all(feature = "tokio", not(feature = "thread")),
    doc = "",
    doc = "[`Builder::driver_thread`]: https://docs.rs/hashwheel/latest/hashwheel/struct.Builder.html#method.driver_thread",
    doc = "[`Delay`]: https://docs.rs/hashwheel/latest/hashwheel/struct.Delay.html"
)]
#![cfg_attr(feature = "tokio", doc = include_str!("../docs/GUARANTEES.md"))]
#![cfg_attr(
    not(any(feature = "tokio", feature = "thread")),
    doc = "A hashed wheel timer: this build (without the default feature `tokio`)
is the wheel alone, [`wheel::Wheel`], with no clock, no runtime and no lock,
for your own event loop (mio or io_uring loops, game and simulation loops,
embedded schedulers), with no dependency. See [`wheel`] for how to drive it.

The default feature `tokio` adds the timer that runs on tokio: a shared
timer handle, a keyed delay queue and a drop-in for `tokio::time`. The
feature `thread` adds the timer on a driver thread of its own, for any
executor."
)]
#![cfg_attr(
    all(feature = "thread", not(feature = "tokio")),
    doc = "A hashed wheel timer on a thread of its own, for any executor or none:
this build (the feature `thread`, without the default `tokio`) has no tokio
in it.

[`Timer`] is a cheap, cloneable handle to a set of wheels that a driver
thread turns, Netty's worker thread done our way: it sleeps until the next
tick with work (none while idle), wakes what expired outside every lock, and
ends when the timer is stopped or its last handle is gone. [`Timeout`],
[`WithTimeout`], [`Interval`] and [`Timer::schedule`] work from any
executor (`futures`' executors, smol, plain threads with `block_on`).
[`Delay`] is futures-timer's `Delay` on a process-wide timer with a 50 µs
tick. The clock is std's `Instant`; ticks go down to 10 µs.

```
use std::time::Duration;

// Its own thread: no runtime needed. (Say `driver_thread()` rather than
// `Timer::new()`: with tokio turned on by another crate, `new` would use the
// current runtime instead.)
let timer = hashwheel::Timer::builder().driver_thread().build().unwrap();
futures::executor::block_on(async {
    timer.sleep(Duration::from_millis(1)).await;
    let slow = timer.timeout(Duration::from_millis(1), std::future::pending::<()>());
    assert!(slow.await.is_err());
    hashwheel::Delay::new(Duration::from_micros(200)).await;
});
```

The default feature `tokio` adds the timer that runs inside tokio's own
timer processing, a keyed delay queue and a drop-in for `tokio::time`; the
wheel alone is [`wheel::Wheel`]."
)]
// Every intra-doc link resolves in every build (CI documents the default,
// thread-only and wheel-alone builds with warnings denied): a link to an
// item of a feature a build lacks goes to docs.rs there (the item's
// `cfg_attr(not(feature = ..), doc = ..)` link definitions).
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[macro_use]
mod macros;

// The floors, from the ground up (docs/ARCHITECTURE.md): the wheel (no
// clock, no runtime); the engine (private: shards, clock, deadlines,
// drivers and their alarms, the process, tokio's budget) with the leaf
// types it reports in (errors, stats); the handle (`Timer`, its builder,
// `Timeout`, `Interval`, scheduled tasks) and the keyed queue's core; then
// the faces over them.
pub mod wheel;

cfg_timer! {
    mod engine;
    mod error;
    mod queue;
    mod stats;
    mod timer;

    pub use engine::executor::TaskExecutor;
    pub use timer::deadline;
    pub use error::{Elapsed, EndedBy, Error};
    pub use stats::{Lateness, Stats};
    pub use timer::interval::{Interval, MissedTickBehavior};
    pub use timer::task::TaskHandle;
    pub use timer::timeout::{Timeout, WithTimeout};
    pub use timer::{Builder, Timer};
}

// The faces: `tokio::time`'s drop-in and tokio-util's queue (tokio),
// futures-timer's and async-io's (the thread driver), hyper's and tower's
// timers, and the `metrics` export.
cfg_tokio! {
    pub mod delay_queue;
    pub mod time;

    pub use delay_queue::DelayQueue;
}

cfg_thread! {
    pub mod async_io;
    mod delay;

    pub use delay::Delay;
}

#[cfg(feature = "hyper")]
mod hyper;

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[cfg(all(feature = "metrics", any(feature = "tokio", feature = "thread")))]
mod export;
#[cfg(all(feature = "metrics", any(feature = "tokio", feature = "thread")))]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use export::MetricsExporter;

#[cfg(feature = "tokio")]
#[doc = include_str!("../docs/MIGRATING.md")]
pub mod migrating {}

/// The README's Rust examples, run as doctests so that they keep working
/// (they are tokio's).
#[cfg(all(doctest, feature = "tokio"))]
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

    /// Decodes `data` into operations on the wheel's paged store (insert,
    /// remove, vacant keys, reserve, shrink, compact, clear, across page
    /// boundaries) and checks each against a reference model; panics with
    /// a shrunk reproduction on a mismatch.
    pub fn store(data: &[u8]) {
        crate::wheel::store_model::check_bytes(data);
    }
}
