// Floor 4, a face (docs/ARCHITECTURE.md): it imports the handle and
// `Delay`, its sibling face, and the engine's clock.
//! async-io's timer API on hashwheel's thread driver, for smol and every
//! other executor: [`Timer`], a drop-in for `async_io::Timer` (what
//! `smol::Timer` re-exports), and [`DelayQueue`], the keyed delay queue
//! without tokio.
//!
//! A smol program switches by its `use` line: `use hashwheel::async_io::Timer;`
//! for `use async_io::Timer;` (or `smol::Timer`), and nothing else changes.
//! Both types run on the process-wide thread-driven timer that
//! [`Delay`](crate::Delay) uses (50 µs tick, started on first use, asleep
//! while nothing is pending, never firing early), so they need no runtime,
//! no reactor and no task of their own, and they work in the same process
//! as tokio. The clock is std's `Instant`: tokio's paused time does not move
//! it.
//!
//! Available with the feature `thread` (no tokio, no async-io in the build).
//!
//! # Examples
//!
//! A request with a deadline, smol's way:
//!
//! ```
//! use futures_lite::FutureExt;
//! use hashwheel::async_io::Timer;
//! use std::time::Duration;
//!
//! # futures_lite::future::block_on(async {
//! let slow = async {
//!     Timer::after(Duration::from_secs(60)).await;
//!     Ok(())
//! };
//! let result = slow
//!     .or(async {
//!         Timer::after(Duration::from_millis(5)).await;
//!         Err(std::io::ErrorKind::TimedOut)
//!     })
//!     .await;
//! assert_eq!(result, Err(std::io::ErrorKind::TimedOut));
//! # });
//! ```

pub mod delay_queue;
mod timer;

#[doc(inline)]
pub use delay_queue::DelayQueue;
pub use timer::Timer;
