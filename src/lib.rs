//! hashwheel
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]

mod driver;
mod error;
#[cfg(feature = "hyper")]
mod hyper;
mod interval;
mod task;
mod timeout;
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
mod wheel;

pub use error::{Elapsed, Error};
pub use interval::{Interval, MissedTickBehavior};
pub use task::TaskHandle;
pub use timeout::{Timeout, WithTimeout};
pub use timer::{Builder, Timer};
