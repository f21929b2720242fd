//! Error types.

use std::fmt;

/// The error of a [`Timer`](crate::Timer) operation (the `try_` methods:
/// [`try_sleep`](crate::Timer::try_sleep),
/// [`try_timeout`](crate::Timer::try_timeout),
/// [`try_schedule`](crate::Timer::try_schedule),
/// [`try_interval`](crate::Timer::try_interval) and their `_at` forms,
/// whose panicking twins panic with its message) or of
/// [`Builder::build`](crate::Builder::build).
///
/// Opaque: ask what went wrong with [`is_stopped`](Error::is_stopped),
/// [`is_at_capacity`](Error::is_at_capacity),
/// [`is_invalid_config`](Error::is_invalid_config) and
/// [`is_out_of_memory`](Error::is_out_of_memory).
///
/// # Examples
///
/// ```
/// use hashwheel::Timer;
/// use std::time::Duration;
///
/// let err = Timer::builder().wheel_size(0).build().unwrap_err();
/// assert!(err.is_invalid_config());
/// assert_eq!(err.to_string(), "invalid timer configuration: wheel size must be between 1 and 2^20 (1048576), got 0");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
}

#[derive(Clone, PartialEq, Eq)]
enum Kind {
    Stopped(StopReason),
    AtCapacity(usize),
    InvalidConfig(String),
    OutOfMemory(String),
}

/// Why a timer stopped; the `Display` of [`Error`] and [`Elapsed`] says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// [`Timer::stop`](crate::Timer::stop) was called.
    Stopped,
    /// The runtime that ran the driver shut down (its driver task was
    /// dropped), so nothing will fire any more.
    RuntimeShutDown,
    /// The driver panicked while turning the wheels (a bug in hashwheel):
    /// the timer stopped rather than let the panic reach the runtime.
    DriverPanicked,
    /// A thread-driven timer spawns its callbacks on a runtime
    /// ([`TaskExecutor::spawn`](crate::TaskExecutor::spawn)), and that
    /// runtime shut down: no callback could run any more. (Only a build
    /// with both features `thread` and `tokio` has such a timer.)
    SpawnRuntimeGone,
}

impl StopReason {
    /// What the messages add to "timer is stopped".
    fn cause(self) -> &'static str {
        match self {
            StopReason::Stopped => "",
            StopReason::RuntimeShutDown => {
                ": the runtime that ran this timer's driver has shut down; \
                 build one Timer per runtime"
            }
            StopReason::DriverPanicked => {
                ": its driver panicked (a bug in hashwheel, please report it); \
                 build a new Timer"
            }
            StopReason::SpawnRuntimeGone => {
                ": the runtime its callbacks were spawned on (TaskExecutor::spawn) \
                 has shut down; give the timer a runtime that outlives it"
            }
        }
    }
}

impl Error {
    pub(crate) fn stopped(reason: StopReason) -> Error {
        Error {
            kind: Kind::Stopped(reason),
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

    pub(crate) fn out_of_memory(message: impl Into<String>) -> Error {
        Error {
            kind: Kind::OutOfMemory(message.into()),
        }
    }

    /// The timer was stopped with [`Timer::stop`](crate::Timer::stop), or
    /// the runtime that ran its driver shut down; the message says which.
    ///
    /// A timer lives on one runtime: once that runtime shuts down, the timer
    /// is stopped for good, and the message reads "timer is stopped: the
    /// runtime that ran this timer's driver has shut down; build one Timer
    /// per runtime". A `static` `Timer` shared by several `#[tokio::test]`s
    /// (each has its own runtime) hits this in the second test.
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
    ///
    /// After the runtime shut down:
    ///
    /// ```
    /// let rt = tokio::runtime::Runtime::new().unwrap();
    /// let timer = rt.block_on(async { hashwheel::Timer::new() });
    /// drop(rt);
    /// let err = timer.try_sleep(std::time::Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_stopped());
    /// assert_eq!(
    ///     err.to_string(),
    ///     "timer is stopped: the runtime that ran this timer's driver has shut down; \
    ///      build one Timer per runtime"
    /// );
    /// ```
    pub fn is_stopped(&self) -> bool {
        matches!(self.kind, Kind::Stopped(_))
    }

    /// The timer already holds [`Builder::max_pending`](crate::Builder::max_pending)
    /// pending timeouts and tasks.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timer = hashwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let _held = timer.sleep(std::time::Duration::from_secs(1));
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

    /// [`Builder::build`](crate::Builder::build) could not allocate the
    /// room [`Builder::capacity`](crate::Builder::capacity) asked it to
    /// reserve; the message says how much, and nothing of it is kept.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // 4 billion timeouts, 160 GiB: more than most machines have.
    /// let built = hashwheel::Timer::builder()
    ///     .shards(1)
    ///     .capacity(u32::MAX as usize - 3)
    ///     .build();
    /// if let Err(err) = built {
    ///     assert!(err.is_out_of_memory());
    /// }
    /// # }
    /// ```
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self.kind, Kind::OutOfMemory(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Stopped(reason) => write!(f, "timer is stopped{}", reason.cause()),
            Kind::AtCapacity(max) => write!(f, "timer is at capacity ({max} pending)"),
            Kind::InvalidConfig(message) => write!(f, "invalid timer configuration: {message}"),
            Kind::OutOfMemory(message) => write!(f, "out of memory: {message}"),
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
/// passed before the future completed, or the timer stopped first.
///
/// The counterpart of tokio's `tokio::time::error::Elapsed`. A timer that
/// stops (by [`Timer::stop`](crate::Timer::stop), or because the runtime
/// that ran its driver shut down) ends every pending deadline at once; the
/// `Elapsed` then has [`is_timer_stopped`](Elapsed::is_timer_stopped) true
/// and its message says why, so it is not taken for a deadline that passed.
///
/// Converts into a [`std::io::Error`] of kind
/// [`TimedOut`](std::io::ErrorKind::TimedOut), either way.
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
pub struct Elapsed {
    /// `None` for a deadline that passed.
    stopped: Option<StopReason>,
    /// The deadline that passed was a deadline scope's, not the call's own
    /// (see [`is_inherited`](Elapsed::is_inherited)).
    inherited: bool,
    /// The error of a deadline scope itself, not of a call made in it (see
    /// [`ended_by`](Elapsed::ended_by)).
    scope: bool,
}

impl Elapsed {
    /// The deadline passed.
    pub(crate) fn deadline() -> Elapsed {
        Elapsed {
            stopped: None,
            inherited: false,
            scope: false,
        }
    }

    /// The timer stopped before the deadline.
    pub(crate) fn timer_stopped(reason: StopReason) -> Elapsed {
        Elapsed {
            stopped: Some(reason),
            inherited: false,
            scope: false,
        }
    }

    /// This error, saying that the deadline that passed was a deadline
    /// scope's where `inherited` (a timer that stopped stays that).
    #[inline]
    pub(crate) fn inherited_if(self, inherited: bool) -> Elapsed {
        Elapsed {
            inherited: inherited && self.stopped.is_none(),
            ..self
        }
    }

    /// Whether the deadline that passed was inherited from a
    /// [deadline scope](crate::deadline) (the time left to the request)
    /// rather than the call's own: a timeout made inside a scope whose
    /// deadline came first ends at the scope's deadline with this `true`,
    /// so a handler can tell "the cache was slow" (`false`) from "the
    /// request ran out" (`true`). A scope's own error has it `true` where
    /// an enclosing scope's deadline came first, or where the scope was
    /// carried into a spawned task ([`Deadline::scope`](crate::deadline::Deadline::scope)).
    /// Always `false` where the [timer stopped](Elapsed::is_timer_stopped).
    ///
    /// A scope's error whose own deadline passed has it `false` too, as a
    /// call's own: [`ended_by`](Elapsed::ended_by) tells the two apart
    /// ([`EndedBy::Scope`]: at a request's boundary, the request ran out).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::time::{timeout, Duration};
    ///
    /// let request = hashwheel::deadline::scope(Duration::from_millis(200), async {
    ///     // The cache's own 50 ms: its own deadline.
    ///     let cache = timeout(Duration::from_millis(50), std::future::pending::<()>()).await;
    ///     assert!(!cache.unwrap_err().is_inherited());
    ///     // The downstream call's 1 s, cut to the 150 ms left.
    ///     let call = timeout(Duration::from_secs(1), std::future::pending::<()>()).await;
    ///     assert!(call.unwrap_err().is_inherited());
    /// });
    /// request.await.unwrap();
    /// # }
    /// ```
    pub fn is_inherited(&self) -> bool {
        self.inherited
    }

    /// Whether the timer stopped before the deadline, rather than the
    /// deadline passing: by [`Timer::stop`](crate::Timer::stop), or because
    /// the runtime that ran its driver shut down (the message says which).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let err = timer
    ///     .timeout(Duration::from_millis(5), std::future::pending::<()>())
    ///     .await
    ///     .unwrap_err();
    /// assert!(!err.is_timer_stopped());
    ///
    /// let mut fut = timer.timeout(Duration::from_secs(5), std::future::pending::<()>());
    /// assert!(futures_util::poll!(&mut fut).is_pending());
    /// timer.stop();
    /// let err = fut.await.unwrap_err();
    /// assert!(err.is_timer_stopped());
    /// assert_eq!(err.to_string(), "timer stopped before the deadline");
    /// # }
    /// ```
    pub fn is_timer_stopped(&self) -> bool {
        self.stopped.is_some()
    }
}

// Which deadline ended it (issue 57): a scope's own error, apart from a
// call's.
impl Elapsed {
    /// This error as a deadline scope's own (its deadline passed, its own
    /// or an enclosing one's, or its timer stopped): see [`EndedBy::Scope`].
    #[inline]
    pub(crate) fn of_scope(self) -> Elapsed {
        Elapsed {
            scope: true,
            ..self
        }
    }

    /// Which deadline ended the call or the scope this error is of: the
    /// call's own ([`EndedBy::Call`], "this call was slow"), a deadline
    /// inherited from an enclosing [deadline scope](crate::deadline)
    /// ([`EndedBy::Inherited`], "the request ran out", seen from a call
    /// inside it), the scope's own, on the error of a scope itself
    /// ([`EndedBy::Scope`]: at a request's boundary, a
    /// [`ScopeLayer`][ScopeLayer_link] or a [`DeadlineLayer`][DeadlineLayer_link],
    /// "the request ran out"), or none ([`EndedBy::TimerStopped`]).
    ///
    /// | the error of | its own deadline | an enclosing scope's, or one carried into a task | the timer stopped |
    /// |---|---|---|---|
    /// | a timeout ([`Timer::timeout`](crate::Timer::timeout), `hashwheel::time::timeout`, a propagated call) | `Call` | `Inherited` | `TimerStopped` |
    /// | a scope ([`Timer::scope`](crate::Timer::scope), `deadline::scope`, the tower layers') | `Scope` | `Inherited` | `TimerStopped` |
    ///
    /// [`is_inherited`](Elapsed::is_inherited) is `true` exactly where this
    /// is `Inherited`, and [`is_timer_stopped`](Elapsed::is_timer_stopped)
    /// where it is `TimerStopped`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::time::{timeout, Duration};
    /// use hashwheel::{deadline, EndedBy};
    ///
    /// let request = deadline::scope(Duration::from_millis(200), async {
    ///     // The cache's own 50 ms.
    ///     let cache = timeout(Duration::from_millis(50), std::future::pending::<()>()).await;
    ///     assert_eq!(cache.unwrap_err().ended_by(), EndedBy::Call);
    ///     // A downstream call's 1 s, cut to the 150 ms left.
    ///     let call = timeout(Duration::from_secs(1), std::future::pending::<()>()).await;
    ///     assert_eq!(call.unwrap_err().ended_by(), EndedBy::Inherited);
    ///     // The handler goes on, past the request's deadline.
    ///     std::future::pending::<()>().await
    /// });
    /// let err = request.await.unwrap_err();
    /// assert_eq!(err.ended_by(), EndedBy::Scope); // the request ran out
    /// assert!(!err.is_inherited());
    /// # }
    /// ```
    #[cfg_attr(feature = "tower", doc = "", doc = "[ScopeLayer_link]: crate::tower::ScopeLayer")]
    #[cfg_attr(not(feature = "tower"), doc = "", doc = "[ScopeLayer_link]: https://docs.rs/hashwheel/latest/hashwheel/tower/struct.ScopeLayer.html")]
    #[cfg_attr(feature = "tower", doc = "", doc = "[DeadlineLayer_link]: crate::tower::DeadlineLayer")]
    #[cfg_attr(not(feature = "tower"), doc = "", doc = "[DeadlineLayer_link]: https://docs.rs/hashwheel/latest/hashwheel/tower/struct.DeadlineLayer.html")]
    pub fn ended_by(&self) -> EndedBy {
        if self.stopped.is_some() {
            EndedBy::TimerStopped
        } else if self.inherited {
            EndedBy::Inherited
        } else if self.scope {
            EndedBy::Scope
        } else {
            EndedBy::Call
        }
    }
}

/// Which deadline ended a call or a deadline scope: what
/// [`Elapsed::ended_by`] says, so that a server can log "the request ran
/// out" apart from "this call was slow" without guessing.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::EndedBy;
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let handler = timer.scope(Duration::from_millis(300), std::future::pending::<()>());
/// match handler.await.unwrap_err().ended_by() {
///     EndedBy::Scope | EndedBy::Inherited => { /* the request ran out */ }
///     EndedBy::Call => unreachable!("a scope's error is never a call's"),
///     EndedBy::TimerStopped => unreachable!("the timer runs"),
///     _ => {}
/// }
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndedBy {
    /// The call's own deadline: the duration or instant given to this
    /// timeout passed, inside a scope or not ("this call was slow").
    Call,
    /// A deadline inherited from a [deadline scope](crate::deadline): the
    /// timeout (or the scope) was made inside one whose deadline came
    /// first, or the scope was carried into a spawned task
    /// ([`Deadline::scope`](crate::deadline::Deadline::scope)); the
    /// request ran out, seen from inside it.
    Inherited,
    /// The scope's own deadline, on the error of a deadline scope itself
    /// ([`Timer::scope`](crate::Timer::scope) and friends, the tower
    /// layers' scopes): at a request's boundary, the request ran out.
    Scope,
    /// No deadline: the timer stopped first (see
    /// [`Elapsed::is_timer_stopped`]).
    TimerStopped,
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stopped {
            None if self.inherited => f.write_str("deadline of the enclosing scope has elapsed"),
            None => f.write_str("deadline has elapsed"),
            Some(reason) => write!(f, "timer stopped before the deadline{}", reason.cause()),
        }
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(err: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, err)
    }
}
