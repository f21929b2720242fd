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
mod task;
mod timeout;
mod timer;
mod wheel;

pub use error::{Elapsed, Error};
pub use task::TaskHandle;
pub use timeout::{Timeout, WithTimeout};
pub use timer::{Builder, Timer};

/// Entry points for `cargo fuzz` (see `fuzz/README.md`); compiled only with
/// `--cfg fuzzing`, never part of the API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    /// Decodes `data` into operations on one wheel and checks each against
    /// a reference model; panics with a shrunk reproduction on a mismatch.
    pub fn wheel(data: &[u8]) {
        crate::wheel::model::check_bytes(data);
    }
}
