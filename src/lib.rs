//! A hashed wheel timer built into tokio, for services that hold many
//! timeouts.
//!
//! Network servers keep a timeout or two per connection and per request:
//! idle and heartbeat timeouts reset on every message, deadlines around
//! requests, retries. Almost all of them are cancelled or reset long before
//! they fire. hashwheel makes those operations O(1) and cheap, keeps each
//! timeout small, and lets the timer sleep when there is nothing to do.
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
//! // Netty-style callbacks, run on the timer's driver task.
//! let task = timer.schedule(Duration::from_millis(5), || println!("fired"));
//! # drop(task);
//! # }
//! ```
//!
//! # Which one do I use
//!
//! * [`Timer`]: shared by many tasks (`Clone + Send + Sync`), one future
//!   per timeout ([`Timeout`], [`Interval`], [`Timer::timeout`]) or a
//!   callback ([`Timer::schedule`]).
//! * [`DelayQueue`]: one task owns many keyed deadlines and takes out what
//!   expired from one [`Stream`](futures::Stream): expiring caches, retry and
//!   rate-limit maps, session tables. tokio-util's `DelayQueue` API, with
//!   generation-checked keys.
//! * [`wheel::Wheel`]: the wheel alone, no clock, no runtime, no lock, for
//!   your own event loop. Without the default `tokio` feature
//!   (`default-features = false`) the crate is just this, on `slab`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use futures::StreamExt;
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
//! Time is cut into **ticks** ([`Builder::tick`], 1 ms by default) and every
//! deadline is rounded *up* to a tick, so nothing fires early. A wheel has
//! [`wheel_size`](Builder::wheel_size) **buckets** (512 by default, a power
//! of two); tick `t` belongs to bucket `t % wheel_size`, and one turn of the
//! wheel is a **round** of `wheel_size` ticks.
//!
//! * A timeout due in the current round sits in its bucket. A bucket is a
//!   doubly linked list threaded through a slab of 32-byte entries by key: no
//!   allocation per timeout once the slab has grown, no pointers, no
//!   `unsafe`.
//! * A timeout due in a later round waits in a **round ring** slot keyed by
//!   its round number, and moves into its bucket when its round begins.
//!   Netty's wheel stores a remaining-rounds counter in every entry and
//!   decrements it on every pass, visiting every far timeout on every turn;
//!   here the ring counts the rounds, so a turn visits only what is due
//!   (plus, once per turn of the ring, timeouts more than a ring away).
//! * One tokio task, the **driver**, turns the wheels. It sleeps until the
//!   next tick that has work (found with occupancy bit sets), not on every
//!   tick, and not at all while nothing is pending. It wakes expired tasks in
//!   batches after releasing the lock. If the runtime starves it, it catches
//!   up on every missed tick in order.
//! * Each thread works on its own **shard** (wheel + lock), so threads
//!   rarely contend; a timeout stays on the shard it was created on.
//!
//! | operation | cost |
//! |---|---|
//! | [`Timer::sleep`] | one clock read, no lock (the timeout registers on its first poll) |
//! | first poll | one uncontended lock, a slab insert and a list push |
//! | drop / [`Timeout::cancel`] | one lock, a list unlink and a slab remove |
//! | [`Timeout::reset`] | one clock read, one lock, an unlink and a push |
//! | expiry | per due entry: an unlink and a wake, outside the lock |
//! | a turn with nothing due | nothing: the driver is asleep |
//!
//! Time comes from [`tokio::time::Instant`], so `#[tokio::test(start_paused = true)]`,
//! `tokio::time::pause` and `tokio::time::advance` work with hashwheel
//! exactly as with `tokio::time`.
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
//! Stay with `tokio::time` when you need sub-millisecond resolution (the
//! smallest tick is 1 ms, and a timeout may fire up to one tick after its
//! deadline) or hold only a handful of timers.
//!
//! # Stopping and shutdown
//!
//! [`Timer::stop`] cancels everything: pending timeouts complete with
//! [`Timeout::is_cancelled`] true, and the tasks that never ran come back.
//! If the runtime that runs the driver shuts down, the timer stops the same
//! way, so no timeout hangs. The driver also ends by itself when every
//! [`Timer`], [`Timeout`] and pending task is gone.
//!
//! # More
//!
//! * [`wheel`]: the wheel on its own, with a plain-thread event loop
//!   example; [`delay_queue`]: the keyed queue's [`Key`](delay_queue::Key)
//!   and [`Expired`](delay_queue::Expired).
//! * [`Interval`]: heartbeats with tokio's [`MissedTickBehavior`]s, one wheel
//!   entry reset in O(1) per tick.
//! * [`Timer::stats`]: pending, fired, cancelled, reset, driver wake-ups and
//!   late ticks, cheap enough to leave on.
//! * Feature `hyper`: `impl hyper::rt::Timer for Timer`, so hyper 1.x servers
//!   run their header-read timeout and other sleeps on the wheel.
//! * Feature `tower`: `tower::TimeoutLayer`, a tower 0.5 middleware that fails
//!   late requests with [`Elapsed`] inside a `tower::BoxError`.
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
