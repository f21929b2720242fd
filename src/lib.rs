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
mod stats;
mod task;
mod timeout;
mod timer;
mod wheel;

pub use error::{Elapsed, Error};
pub use stats::Stats;
pub use task::TaskHandle;
pub use timeout::{Timeout, WithTimeout};
pub use timer::{Builder, Timer};
