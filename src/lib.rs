//! A hashed wheel timer built into tokio, for services that hold many
//! timeouts.
//!
//! Network servers keep a timeout or two per connection and per request:
//! idle and heartbeat timeouts reset on every message, deadlines around
//! requests, retries. Almost all of them are cancelled or reset long before
//! they fire. hashwheel makes those operations O(1) and cheap, keeps each
//! timeout small, and lets the timer sleep when there is nothing to do.
//!
//! Switching from `tokio::time` is a change of `use` line:
//! [`hashwheel::time`](time) has tokio's free functions and types, on a
//! default timer per runtime.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! // Was: use tokio::time::{sleep, timeout, Duration};
//! use hashwheel::time::{sleep, timeout, Duration};
//!
//! sleep(Duration::from_millis(10)).await;
//! let res = timeout(Duration::from_millis(50), async { 42 }).await;
//! assert_eq!(res, Ok(42));
//! # }
//! ```
//!
//! Keep a [`Timer`] handle where you want several timers, a configured
//! [`Builder`] (tick, wheel size, `max_pending`), [`stats`](Timer::stats),
//! Netty-style callbacks or the `try_` methods that return errors:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use hashwheel::Timer;
//! use std::time::Duration;
//!
//! let timer = Timer::new(); // 1 ms tick, 512 buckets
//!
//! // A timeout is a future; dropping it cancels it.
//! timer.sleep(Duration::from_millis(10)).await;
//!
//! // Idle timeouts: reset in O(1) on every message.
//! let mut idle = timer.sleep(Duration::from_secs(30));
//! idle.reset(Duration::from_secs(30));
//!
//! // Deadlines around futures.
//! let res = timer.timeout(Duration::from_millis(50), async { 42 }).await;
//! assert_eq!(res, Ok(42));
//!
//! // Netty-style callbacks, run by the timer's driver.
//! let task = timer.schedule(Duration::from_millis(5), || println!("fired"));
//! timer.sleep(Duration::from_millis(10)).await; // the task runs meanwhile
//! assert!(task.is_expired());
//! # }
//! ```
//!
//! # Which one do I use
//!
//! * [`time`]: `tokio::time`'s free functions (`sleep`, `timeout`,
//!   `interval`, ...) on the current runtime's default timer: code written
//!   against `tokio::time`, switched by its `use` lines.
//! * [`Timer`]: shared by many tasks (`Clone + Send + Sync`), one future
//!   per timeout ([`Timeout`], [`Interval`], [`Timer::timeout`]) or a
//!   callback ([`Timer::schedule`]).
//! * [`DelayQueue`]: one task owns many keyed deadlines and takes out what
//!   expired from one [`Stream`](futures_core::Stream): expiring caches, retry and
//!   rate-limit maps, session tables. tokio-util's `DelayQueue` API, with
//!   generation-checked keys.
//! * [`wheel::Wheel`]: the wheel alone, no clock, no runtime, no lock, for
//!   your own event loop. Without the default `tokio` feature
//!   (`default-features = false`) the crate is just this, on `slab`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use futures_util::StreamExt;
//! use hashwheel::DelayQueue;
//! use std::time::Duration;
//!
//! let mut sessions = DelayQueue::new();
//! let key = sessions.insert("session 42", Duration::from_secs(30));
//! sessions.reset(&key, Duration::from_secs(30)); // it was used
//! let expired = sessions.next().await.unwrap();
//! assert_eq!(expired.into_inner(), "session 42");
//! # }
//! ```
//!
//! # How the wheel works
//!
//! Every deadline is kept to the **microsecond** (rounded up, so nothing
//! fires early). Time is cut into **buckets** one [tick](Builder::tick)
//! wide (1 ms by default, rounded up to a power of two of microseconds:
//! 1,024 µs); a wheel has [`wheel_size`](Builder::wheel_size) of them (512
//! by default, a power of two), and one turn of the wheel is a **round**.
//!
//! * A timeout due in the current round sits in its bucket. A bucket is a
//!   doubly linked list threaded through a slab of 32-byte entries by key: no
//!   allocation per timeout once the slab has grown, no pointers, no
//!   `unsafe`. Each entry keeps its own deadline: a bucket only partly due
//!   gives up just its due entries.
//! * A timeout due in a later round waits in a **round ring** slot keyed by
//!   its round number, and moves into its bucket when its round begins.
//!   Netty's wheel stores a remaining-rounds counter in every entry and
//!   decrements it on every pass, visiting every far timeout on every turn;
//!   here the ring counts the rounds, so a turn visits only what is due
//!   (plus, once per turn of the ring, timeouts more than a ring away).
//! * The **driver** turns the wheels. It is no task: it arms one runtime
//!   timer (a `tokio::time::Sleep`) for the earliest deadline with work
//!   (found with occupancy bit sets), and turns when the runtime's timer
//!   fires it, inside the runtime's own timer processing. So the wakes it
//!   makes are batched by the runtime exactly as those of `tokio::time` are
//!   (no worker is unparked per wake), and a timeout completes when a
//!   `tokio::time::Sleep` with the same deadline would. Nothing pending,
//!   nothing armed: no wake-ups at all. It wakes expired tasks in batches
//!   after releasing the lock. If the runtime starves it, it catches up on
//!   everything overdue, bucket by bucket. Under load (a turn that expired
//!   32 timeouts or more) its next turn comes half a tick later at the
//!   soonest, so that each turn, and the wakes, steals and parks it sets off
//!   in the runtime, serves more timeouts. With a tick over 1 ms it rings
//!   only on multiples of the tick: coarser ticks batch more.
//! * Each thread works on its own **shard** (wheel + lock), so threads
//!   rarely contend; a timeout stays on the shard it was created on.
//!
//! | operation | cost |
//! |---|---|
//! | [`Timer::sleep`] | one clock read, no lock (the timeout registers on its first poll; a zero delay never registers) |
//! | first poll | one uncontended lock, a slab insert and a list push |
//! | drop / [`Timeout::cancel`] | one lock, a list unlink and a slab remove |
//! | [`Timeout::reset`] | one clock read, one lock, an unlink and a push |
//! | expiry | per due entry: an unlink and a wake, outside the lock |
//! | a turn with nothing due | nothing: the alarm is not armed for it |
//!
//! Time comes from [`tokio::time::Instant`], so `#[tokio::test(start_paused = true)]`,
//! `tokio::time::pause` and `tokio::time::advance` work with hashwheel
//! exactly as with `tokio::time`.
//!
//! # Coming from `tokio::time`
//!
//! Change the `use` lines to [`hashwheel::time`](time): the same free
//! functions and types, on the current runtime's default timer
//! ([`Timer::current`]). [`migrating`] (`docs/MIGRATING.md`) maps every call
//! of `tokio::time`, tokio-util's `DelayQueue` and Netty's
//! `HashedWheelTimer` to hashwheel's, and lists each difference with the
//! test that shows it.
//!
//! With a handle, tokio's free functions become methods of a [`Timer`]
//! value with the same names. The one name that moves:
//! [`Timeout`] is the sleep future (the name hashed wheel timers give it),
//! so a future *with* a deadline is a [`WithTimeout`].
//!
//! | `tokio::time` | hashwheel |
//! |---|---|
//! | [`sleep`](tokio::time::sleep), [`sleep_until`](tokio::time::sleep_until) → [`Sleep`](tokio::time::Sleep) | [`Timer::sleep`], [`Timer::sleep_until`] → [`Timeout`] (`Unpin`) |
//! | `Sleep::reset` (pinned), `Sleep::deadline`, `Sleep::is_elapsed` | [`Timeout::reset_at`] or [`Timeout::reset`], [`Timeout::deadline`], [`Timeout::is_expired`] |
//! | [`timeout`](tokio::time::timeout), [`timeout_at`](tokio::time::timeout_at) → [`Timeout<F>`](tokio::time::Timeout) | [`Timer::timeout`], [`Timer::timeout_at`] → [`WithTimeout<F>`](WithTimeout) |
//! | [`error::Elapsed`](tokio::time::error::Elapsed) | [`Elapsed`] |
//! | [`interval`](tokio::time::interval), [`interval_at`](tokio::time::interval_at) → [`Interval`](tokio::time::Interval), [`MissedTickBehavior`](tokio::time::MissedTickBehavior) | [`Timer::interval`], [`Timer::interval_at`] → [`Interval`], [`MissedTickBehavior`] |
//! | `tower::timeout::TimeoutLayer` | `hashwheel::tower::TimeoutLayer` (feature `tower`) |
//! | `hyper_util::rt::TokioTimer` | [`Timer`] itself (feature `hyper`) |
//! | – | [`Timer::schedule`] → [`TaskHandle`] (Netty's `newTimeout`) |
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//!
//! let timer = hashwheel::Timer::new();
//! let slow = std::future::pending::<()>();
//!
//! // tokio::time::sleep(Duration::from_millis(5)).await;
//! timer.sleep(Duration::from_millis(5)).await;
//!
//! // tokio::time::timeout(Duration::from_millis(5), slow).await.is_err()
//! assert!(timer.timeout(Duration::from_millis(5), slow).await.is_err());
//!
//! // let mut sleep = Box::pin(tokio::time::sleep(Duration::from_secs(1)));
//! // sleep.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(2));
//! let mut sleep = timer.sleep(Duration::from_secs(1));
//! sleep.reset(Duration::from_secs(2));
//! (&mut sleep).await;
//! assert!(sleep.is_expired()); // tokio: sleep.is_elapsed()
//! # }
//! ```
//!
//! # When to pick hashwheel over `tokio::time`
//!
//! Pick hashwheel when you hold many timeouts that are mostly cancelled or
//! reset: per-connection idle timeouts, per-request deadlines, retry timers.
//! Its [`Timeout`] is 16 bytes and `Unpin` (tokio's `Sleep` is `!Unpin`, so
//! it is usually boxed), cancel and reset are cheaper, threads do not share a
//! lock, and [`Timer::pending`] is exact. You also get Netty's callback API
//! ([`Timer::schedule`]), a pending limit ([`Builder::max_pending`]) and
//! [`Timer::stop`].
//!
//! Stay with `tokio::time` when you hold only a handful of timers. Neither
//! gives sub-millisecond resolution: both ride the runtime's 1 ms timer.
//!
//! # Lateness
//!
//! A timeout never fires before its deadline. On a light load it fires when
//! a `tokio::time::Sleep` with the same deadline would: the runtime's timer
//! works in whole milliseconds, and the driver arms it at the deadline
//! itself, adding no rounding of its own (with a tick over 1 ms, at the next
//! multiple of the tick). Under load the driver batches its turns half a
//! tick apart, which may add up to a tick. Under paused time that is the same instant as
//! tokio's, and a timeout made due by `tokio::time::advance` has been woken
//! by the time `advance` returns. When the driver turns it fires everything
//! whose deadline has passed, so a timeout often fires a little before the
//! runtime's millisecond would have fired a `Sleep`. Measured (workload W4
//! in the repository's `BENCHMARKS.md`: 100,000 tasks each awaiting a
//! deadline spread over one second, on a 2-worker runtime, 1 ms tick), a
//! timeout completes **0.90 ms after its deadline at the median and
//! 2.30 ms at p99**, against 1.12 ms and 2.11 ms for
//! `tokio::time` in the same run. A busy or starved runtime adds its own
//! delay to both; [`Stats::late_ticks`] shows the driver's part of it.
//!
//! # Stopping and shutdown
//!
//! [`Timer::stop`] cancels everything: pending timeouts complete with
//! [`Timeout::is_cancelled`] true, and the tasks that never ran come back.
//! If the runtime that runs the driver shuts down, the timer stops the same
//! way, so no timeout hangs, and for good: build one `Timer` per runtime (a
//! `static` `Timer` shared by several `#[tokio::test]`s, each with a runtime
//! of its own, stops with the first; later calls panic saying so). A
//! [`Timer::timeout`] cut short by a stop fails with an [`Elapsed`] whose
//! [`is_timer_stopped`](Elapsed::is_timer_stopped) is true. The driver also
//! ends by itself when every [`Timer`], [`Timeout`] and pending task is
//! gone.
//!
//! # More
//!
//! * [`time`]: `tokio::time`'s free functions on a default timer per
//!   runtime; [`migrating`]: from `tokio::time`, tokio-util and Netty.
//! * [`wheel`]: the wheel on its own, with a plain-thread event loop
//!   example; [`delay_queue`]: the keyed queue's [`Key`](delay_queue::Key)
//!   and [`Expired`](delay_queue::Expired).
//! * [`Interval`]: heartbeats with tokio's [`MissedTickBehavior`]s, one wheel
//!   entry reset in O(1) per tick.
//! * [`Timer::stats`]: pending, fired, cancelled, reset, driver wake-ups and
//!   late ticks, cheap enough to leave on.
//! * Feature `hyper`: `impl hyper::rt::Timer for Timer`, so hyper 1.x servers
//!   run their header-read timeout and other sleeps on the wheel.
//! * Feature `tower`: `tower::TimeoutLayer`, a drop-in for tower 0.5's own
//!   `TimeoutLayer`: late requests fail with tower's own
//!   `tower::timeout::error::Elapsed` inside a `tower::BoxError`.
//!
#![doc = include_str!("../docs/GUARANTEES.md")]
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "tokio")]
pub mod delay_queue;
#[cfg(feature = "tokio")]
mod driver;
#[cfg(feature = "tokio")]
mod error;
#[cfg(feature = "hyper")]
mod hyper;
#[cfg(feature = "tokio")]
mod interval;
#[cfg(feature = "tokio")]
mod shard;
#[cfg(feature = "tokio")]
mod stats;
#[cfg(feature = "tokio")]
mod task;
#[cfg(feature = "tokio")]
mod ticks;
#[cfg(feature = "tokio")]
pub mod time;
#[cfg(feature = "tokio")]
mod timeout;
#[cfg(feature = "tokio")]
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
pub mod wheel;

#[cfg(feature = "tokio")]
pub use delay_queue::DelayQueue;
#[cfg(feature = "tokio")]
pub use error::{Elapsed, Error};
#[cfg(feature = "tokio")]
pub use interval::{Interval, MissedTickBehavior};
#[cfg(feature = "tokio")]
pub use stats::Stats;
#[cfg(feature = "tokio")]
pub use task::TaskHandle;
#[cfg(feature = "tokio")]
pub use timeout::{Timeout, WithTimeout};
#[cfg(feature = "tokio")]
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
