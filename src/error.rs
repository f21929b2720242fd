//! Error types.

use std::fmt;

/// The error of a [`Timer`](crate::Timer) operation or of
/// [`Builder::build`](crate::Builder::build).
///
/// Opaque: ask what went wrong with [`is_stopped`](Error::is_stopped),
/// [`is_at_capacity`](Error::is_at_capacity) and
/// [`is_invalid_config`](Error::is_invalid_config).
///
/// # Examples
///
/// ```
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let err = Timer::builder().wheel_size(0).build().unwrap_err();
/// assert!(err.is_invalid_config());
/// assert_eq!(err.to_string(), "invalid timer configuration: wheel size must be between 1 and 2^30, got 0");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
}

#[derive(Clone, PartialEq, Eq)]
enum Kind {
    Stopped,
    AtCapacity(usize),
    InvalidConfig(String),
}

impl Error {
    pub(crate) fn stopped() -> Error {
        Error {
            kind: Kind::Stopped,
        }
    }

    pub(crate) fn at_capacity(max: usize) -> Error {
        Error {
            kind: Kind::AtCapacity(max),
        }
    }

    pub(crate) fn invalid_config(message: impl Into<String>) -> Error {
        Error {
            kind: Kind::InvalidConfig(message.into()),
        }
    }

    /// The timer was stopped with [`Timer::stop`](crate::Timer::stop), or
    /// the runtime that ran its driver shut down.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::new();
    /// timer.stop();
    /// let err = timer.try_sleep(std::time::Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_stopped());
    /// assert_eq!(err.to_string(), "timer is stopped");
    /// # }
    /// ```
    pub fn is_stopped(&self) -> bool {
        matches!(self.kind, Kind::Stopped)
    }

    /// The timer already holds [`Builder::max_pending`](crate::Builder::max_pending)
    /// pending timeouts and tasks.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().max_pending(0).build().unwrap();
    /// let err = timer.try_sleep(std::time::Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_at_capacity());
    /// # }
    /// ```
    pub fn is_at_capacity(&self) -> bool {
        matches!(self.kind, Kind::AtCapacity(_))
    }

    /// [`Builder::build`](crate::Builder::build) was given a value it cannot
    /// use, or [`Timer::try_interval`](crate::Timer::try_interval) a zero
    /// period; the message names it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = hashwheel::Timer::builder().shards(0).build().unwrap_err();
    /// assert!(err.is_invalid_config());
    /// assert!(err.to_string().ends_with("got 0"));
    /// # }
    /// ```
    pub fn is_invalid_config(&self) -> bool {
        matches!(self.kind, Kind::InvalidConfig(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Stopped => f.write_str("timer is stopped"),
            Kind::AtCapacity(max) => write!(f, "timer is at capacity ({max} pending)"),
            Kind::InvalidConfig(message) => write!(f, "invalid timer configuration: {message}"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Error").field(&self.to_string()).finish()
    }
}

impl std::error::Error for Error {}

/// The error of [`Timer::timeout`](crate::Timer::timeout): the deadline
/// passed before the future completed.
///
/// Converts into a [`std::io::Error`] of kind
/// [`TimedOut`](std::io::ErrorKind::TimedOut).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let timer = Timer::new();
/// let never = std::future::pending::<()>();
/// let err = timer.timeout(Duration::from_millis(10), never).await.unwrap_err();
/// let io: std::io::Error = err.into();
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(pub(crate) ());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(err: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, err)
    }
}
