//! tower 0.5 middleware: fail requests that take longer than a deadline.
//!
//! A drop-in for tower's own timeout middleware: [`TimeoutLayer`] is the
//! counterpart of [`tower::timeout::TimeoutLayer`], and wraps a service in a
//! [`Timeout`], the counterpart of [`tower::timeout::Timeout`]. Late requests
//! fail with tower's own [`tower::timeout::error::Elapsed`] (in a
//! [`tower::BoxError`]), so the usual handlers that check
//! `err.is::<tower::timeout::error::Elapsed>()` (axum's `HandleErrorLayer`,
//! for one) catch them unchanged; but each deadline is one O(1) wheel entry
//! instead of a boxed `tokio::time::Sleep`.
//!
//! [`ScopeLayer`] runs each request in a [deadline scope](crate::deadline)
//! instead: the timeouts the request makes inherit its deadline.
//!
//! Across services, with [`http`] requests, as gRPC's deadline propagation
//! and Go's `context` do: [`DeadlineLayer`], on a server, reads the
//! deadline a request's caller sent (`grpc-timeout`, and a header of
//! milliseconds of the user's choosing) and runs the request in a scope of
//! it, answering a malformed header by a policy the user chooses
//! ([`OnInvalid`]); [`PropagateDeadlineLayer`], on a client (hyper-util's
//! `Client`, tonic's `Channel`), writes the time left of the scope each
//! call is made in into its request, and ends the call, unsent, when none
//! is left. Through both, a chain of services stops when its first caller
//! gives up. [`parse_grpc_timeout`] and [`encode_grpc_timeout`] read and
//! write gRPC's format.
//!
//! Enabled by the `tower` feature.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use hashwheel::tower::TimeoutLayer;
//! use hashwheel::Timer;
//! use std::time::Duration;
//! use tower::timeout::error::Elapsed;
//! use tower::{service_fn, BoxError, Layer, Service, ServiceExt};
//!
//! let timer = Timer::new();
//! let layer = TimeoutLayer::new(timer, Duration::from_secs(1));
//! let mut svc = layer.layer(service_fn(|secs: u64| async move {
//!     tokio::time::sleep(Duration::from_secs(secs)).await;
//!     Ok::<_, BoxError>(secs)
//! }));
//!
//! assert_eq!(svc.ready().await.unwrap().call(0).await.unwrap(), 0);
//! let err = svc.ready().await.unwrap().call(5).await.unwrap_err();
//! assert!(err.is::<Elapsed>());
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::tower::timeout::error::Elapsed;
use ::tower::{BoxError, Layer, Service};
use pin_project_lite::pin_project;

use crate::error::Error;
use crate::timer::Timer;

/// The accessors that [`Timeout`] and [`ScopeService`] share (each wraps an
/// inner service, a timer and a duration): `timeout`, `get_ref`, `get_mut`
/// and `into_inner`, with their doc examples, written once.
macro_rules! service_accessors {
    ($ty:ident, $timeout_doc:literal) => {
        impl<S> $ty<S> {
            #[doc = $timeout_doc]
            ///
            /// # Examples
            ///
            /// ```
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() {
            /// use std::time::Duration;
            ///
            #[doc = concat!("let svc = hashwheel::tower::", stringify!($ty), "::new((), hashwheel::Timer::new(), Duration::from_secs(3));")]
            /// assert_eq!(svc.timeout(), Duration::from_secs(3));
            /// # }
            /// ```
            pub fn timeout(&self) -> Duration {
                self.timeout
            }

            /// The inner service.
            ///
            /// # Examples
            ///
            /// ```
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() {
            /// use std::time::Duration;
            ///
            #[doc = concat!("let svc = hashwheel::tower::", stringify!($ty), "::new(5u8, hashwheel::Timer::new(), Duration::from_secs(3));")]
            /// assert_eq!(*svc.get_ref(), 5);
            /// # }
            /// ```
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            /// The inner service, mutably.
            ///
            /// # Examples
            ///
            /// ```
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() {
            /// use std::time::Duration;
            ///
            #[doc = concat!("let mut svc = hashwheel::tower::", stringify!($ty), "::new(5u8, hashwheel::Timer::new(), Duration::from_secs(3));")]
            /// *svc.get_mut() += 1;
            /// assert_eq!(*svc.get_ref(), 6);
            /// # }
            /// ```
            pub fn get_mut(&mut self) -> &mut S {
                &mut self.inner
            }

            /// Gives back the inner service.
            ///
            /// # Examples
            ///
            /// ```
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() {
            /// use std::time::Duration;
            ///
            #[doc = concat!("let svc = hashwheel::tower::", stringify!($ty), "::new(\"inner\", hashwheel::Timer::new(), Duration::from_secs(3));")]
            /// assert_eq!(svc.into_inner(), "inner");
            /// # }
            /// ```
            pub fn into_inner(self) -> S {
                self.inner
            }
        }
    };
}

/// `get_ref`, `get_mut` and `into_inner` of the services a layer makes
/// with no constructor of their own ([`DeadlineService`],
/// [`PropagateDeadline`]; each type's docs show them).
macro_rules! inner_accessors {
    ($ty:ident) => {
        impl<S> $ty<S> {
            /// The inner service.
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            /// The inner service, mutably.
            pub fn get_mut(&mut self) -> &mut S {
                &mut self.inner
            }

            /// Gives back the inner service.
            pub fn into_inner(self) -> S {
                self.inner
            }
        }
    };
}

mod deadline;
mod grpc_timeout;
mod propagate;
mod scope;

pub use deadline::{DeadlineFuture, DeadlineLayer, DeadlineService, OnInvalid};
pub use grpc_timeout::{encode_grpc_timeout, parse_grpc_timeout, InvalidTimeout};
pub use propagate::{PropagateDeadline, PropagateDeadlineLayer, PropagateFuture};
pub use scope::{ScopeFuture, ScopeLayer, ScopeService};

/// A [`Layer`] that wraps services in [`Timeout`]: requests fail with
/// tower's [`Elapsed`] after a deadline.
///
/// The counterpart of [`tower::timeout::TimeoutLayer`], with a [`Timer`]
/// beside the duration.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use hashwheel::tower::TimeoutLayer;
/// use std::time::Duration;
/// use tower::{service_fn, BoxError, ServiceBuilder};
///
/// let timer = hashwheel::Timer::new();
/// let svc = ServiceBuilder::new()
///     .layer(TimeoutLayer::new(timer, Duration::from_secs(30)))
///     .service(service_fn(|req: String| async move { Ok::<_, BoxError>(req.len()) }));
/// assert_eq!(svc.timeout(), Duration::from_secs(30));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    timer: Timer,
    timeout: Duration,
}

impl TimeoutLayer {
    /// A layer whose services fail each request not answered within
    /// `timeout`, timed by `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let layer = hashwheel::tower::TimeoutLayer::new(timer, Duration::from_secs(5));
    /// assert_eq!(layer.timeout(), Duration::from_secs(5));
    /// # }
    /// ```
    pub fn new(timer: Timer, timeout: Duration) -> TimeoutLayer {
        TimeoutLayer { timer, timeout }
    }

    /// The deadline given to each request.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::TimeoutLayer::new(hashwheel::Timer::new(), Duration::from_secs(5));
    /// assert_eq!(layer.timeout(), Duration::from_secs(5));
    /// # }
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout::new(inner, self.timer.clone(), self.timeout)
    }
}

/// A tower [`Service`] that fails requests not answered within a deadline.
///
/// The counterpart of [`tower::timeout::Timeout`] (not to be confused with
/// [`hashwheel::Timeout`](crate::Timeout), the sleep future, which it uses).
/// Each [`call`](Service::call) starts a hashwheel
/// [`Timeout`](crate::Timeout) beside the inner service's future; the
/// response future resolves to the inner response, or, if the deadline comes
/// first, to tower's own [`Elapsed`] error in a [`BoxError`], exactly as
/// `tower::timeout::Timeout` fails, dropping the inner future. The inner
/// service's errors are boxed and passed on. Readiness is the inner
/// service's.
///
/// If the timer is stopped or at its
/// [`max_pending`](crate::Builder::max_pending) limit, the request is not
/// sent to the inner service at all: the response future fails at once with
/// that [`Error`] ([`Error::is_at_capacity`] doubles as load
/// shedding). If the timer stops while a request runs, the request fails
/// with an [`Error`] too ([`Error::is_stopped`]), not with `Elapsed`: no
/// deadline passed.
///
/// Inside a [deadline scope](crate::deadline) it keeps its own deadline:
/// tower's [`Elapsed`] cannot say whether the scope's deadline or its own
/// passed. Put a [`ScopeLayer`] outside it to bound a request by its
/// deadline, or call [`Timer::timeout`] inside the scope.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::tower::Timeout;
/// use std::time::Duration;
/// use tower::timeout::error::Elapsed;
/// use tower::{service_fn, BoxError, ServiceExt};
///
/// let timer = hashwheel::Timer::new();
/// let slow = service_fn(|()| async {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok::<_, BoxError>("late")
/// });
/// let svc = Timeout::new(slow, timer, Duration::from_secs(1));
/// let err = svc.oneshot(()).await.unwrap_err();
/// assert!(err.is::<Elapsed>());
/// assert_eq!(err.to_string(), "request timed out");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timer: Timer,
    timeout: Duration,
}

impl<S> Timeout<S> {
    /// Wraps `inner`: each request fails after `timeout`, timed by `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tower::{service_fn, BoxError, ServiceExt};
    ///
    /// let echo = service_fn(|x: u32| async move { Ok::<_, BoxError>(x) });
    /// let svc = hashwheel::tower::Timeout::new(echo, hashwheel::Timer::new(), Duration::from_secs(1));
    /// assert_eq!(svc.oneshot(7).await.unwrap(), 7);
    /// # }
    /// ```
    pub fn new(inner: S, timer: Timer, timeout: Duration) -> Timeout<S> {
        Timeout {
            inner,
            timer,
            timeout,
        }
    }
}

service_accessors!(Timeout, "The deadline given to each request.");

impl<S, Request> Service<Request> for Timeout<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> ResponseFuture<S::Future> {
        let state = match self.timer.try_sleep(self.timeout) {
            Ok(timeout) => State::Running {
                response: self.inner.call(request),
                timeout,
            },
            Err(error) => State::Failed { error: Some(error) },
        };
        ResponseFuture { state }
    }
}

pin_project! {
    /// The response future of [`Timeout`]: the inner response, or tower's
    /// [`Elapsed`] error once the deadline passes.
    ///
    /// The counterpart of `tower::timeout::future::ResponseFuture`.
    ///
    /// `Unpin` when the inner future is. Dropping it drops the inner future
    /// and cancels the deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tower::{service_fn, BoxError, Service};
    ///
    /// let echo = service_fn(|x: u32| async move { Ok::<_, BoxError>(x) });
    /// let mut svc = hashwheel::tower::Timeout::new(echo, hashwheel::Timer::new(), Duration::from_secs(1));
    /// let fut: hashwheel::tower::ResponseFuture<_> = svc.call(3);
    /// assert_eq!(fut.await.unwrap(), 3);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running {
            #[pin]
            response: F,
            timeout: crate::Timeout,
        },
        Failed {
            error: Option<Error>,
        },
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running { response, timeout } => {
                if let Poll::Ready(res) = response.poll(cx) {
                    return Poll::Ready(res.map_err(Into::into));
                }
                Pin::new(&mut *timeout).poll(cx).map(|()| {
                    Err(match timeout.timer_stop_reason() {
                        Some(reason) if timeout.is_cancelled() => Box::new(Error::stopped(reason)),
                        _ => Box::new(Elapsed::new()) as BoxError,
                    })
                })
            }
            StateProj::Failed { error } => {
                let error = error
                    .take()
                    .expect("ResponseFuture polled after completion");
                Poll::Ready(Err(Box::new(error)))
            }
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ResponseFuture");
        match &self.state {
            State::Running { timeout, .. } => d.field("timeout", timeout),
            State::Failed { error } => d.field("error", error),
        };
        d.finish_non_exhaustive()
    }
}
