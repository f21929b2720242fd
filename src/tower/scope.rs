//! [`ScopeLayer`]: each request in a deadline scope.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::tower::{BoxError, Layer, Service};
use pin_project_lite::pin_project;

use crate::error::Error;
use crate::timer::deadline::{try_scope_with, Scope};
use crate::timer::Timer;

/// A [`Layer`] that runs each request of the services it wraps in a
/// [deadline scope](crate::deadline): the timeouts the request makes
/// ([`hashwheel::time::timeout`](crate::time::timeout),
/// [`Timer::timeout`] and their friends, in the inner service's `call` and
/// in its future) end by the request's deadline at the latest, and the
/// request fails with hashwheel's [`Elapsed`](crate::Elapsed) when it
/// passes.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{timeout, Duration};
/// use hashwheel::tower::ScopeLayer;
/// use tower::{service_fn, BoxError, Layer, ServiceExt};
///
/// let layer = ScopeLayer::new(hashwheel::Timer::new(), Duration::from_millis(200));
/// let svc = layer.layer(service_fn(|()| async {
///     // A downstream call with a timeout of its own, cut to the time left.
///     match timeout(Duration::from_secs(1), std::future::pending::<()>()).await {
///         Err(e) if e.is_inherited() => Ok::<_, BoxError>("out of time"),
///         _ => Ok("in time"),
///     }
/// }));
/// assert_eq!(svc.oneshot(()).await.unwrap(), "out of time");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScopeLayer {
    timer: Timer,
    timeout: Duration,
}

impl ScopeLayer {
    /// A layer whose services run each request in a deadline scope of
    /// `timeout`, timed by `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::ScopeLayer::new(hashwheel::Timer::new(), Duration::from_secs(5));
    /// assert_eq!(layer.timeout(), Duration::from_secs(5));
    /// # }
    /// ```
    pub fn new(timer: Timer, timeout: Duration) -> ScopeLayer {
        ScopeLayer { timer, timeout }
    }

    /// The deadline given to each request, from its call.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::ScopeLayer::new(hashwheel::Timer::new(), Duration::from_secs(2));
    /// assert_eq!(layer.timeout(), Duration::from_secs(2));
    /// # }
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl<S> Layer<S> for ScopeLayer {
    type Service = ScopeService<S>;

    fn layer(&self, inner: S) -> ScopeService<S> {
        ScopeService::new(inner, self.timer.clone(), self.timeout)
    }
}

/// A tower [`Service`] that runs each request in a
/// [deadline scope](crate::deadline); see [`ScopeLayer`].
///
/// Each [`call`](Service::call) enters a scope of its deadline, calls the
/// inner service inside it, and returns a [`ScopeFuture`] that polls the
/// inner future inside it: the response, or, once the deadline passes,
/// hashwheel's [`Elapsed`](crate::Elapsed) in a [`BoxError`], dropping the
/// inner future. At the deadline the inner future is polled a last time
/// first, where the calls clipped to the deadline end with the inherited
/// `Elapsed` ([At the deadline](crate::deadline#at-the-deadline)): a
/// handler that answers then has its response returned, whichever of the
/// layer's timer and its calls' (two timers, or two shards of one) fires
/// first. Inside an enclosing scope (a [`ScopeLayer`] further out,
/// or a scope around the call) the earlier deadline holds. The inner
/// service's errors are boxed and passed on; readiness is the inner
/// service's.
///
/// If the timer is stopped or at its
/// [`max_pending`](crate::Builder::max_pending) limit, the request is not
/// sent to the inner service: the future fails at once with that
/// [`Error`]. If the timer stops while a request runs, it fails with an
/// `Elapsed` whose [`is_timer_stopped`](crate::Elapsed::is_timer_stopped)
/// is `true`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tower::{service_fn, BoxError, ServiceExt};
///
/// let slow = service_fn(|()| async {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok::<_, BoxError>("late")
/// });
/// let svc = hashwheel::tower::ScopeService::new(slow, hashwheel::Timer::new(), Duration::from_secs(1));
/// let err = svc.oneshot(()).await.unwrap_err();
/// assert!(err.is::<hashwheel::Elapsed>());
/// assert_eq!(err.to_string(), "deadline has elapsed");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScopeService<S> {
    inner: S,
    timer: Timer,
    timeout: Duration,
}

impl<S> ScopeService<S> {
    /// Wraps `inner`: each request runs in a deadline scope of `timeout`,
    /// timed by `timer`.
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
    /// let svc = hashwheel::tower::ScopeService::new(echo, hashwheel::Timer::new(), Duration::from_secs(1));
    /// assert_eq!(svc.oneshot(7).await.unwrap(), 7);
    /// # }
    /// ```
    pub fn new(inner: S, timer: Timer, timeout: Duration) -> ScopeService<S> {
        ScopeService {
            inner,
            timer,
            timeout,
        }
    }
}

service_accessors!(
    ScopeService,
    "The deadline given to each request, from its call."
);

impl<S, Request> Service<Request> for ScopeService<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ScopeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> ScopeFuture<S::Future> {
        let inner = &mut self.inner;
        let state = match try_scope_with(&self.timer, self.timeout, || inner.call(request)) {
            Ok(scope) => State::Running { scope },
            Err(error) => State::Failed { error: Some(error) },
        };
        ScopeFuture { state }
    }
}

pin_project! {
    /// The response future of [`ScopeService`]: the inner response, or
    /// hashwheel's [`Elapsed`](crate::Elapsed) once the request's deadline
    /// passes.
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
    /// let mut svc = hashwheel::tower::ScopeService::new(echo, hashwheel::Timer::new(), Duration::from_secs(1));
    /// let fut: hashwheel::tower::ScopeFuture<_> = svc.call(3);
    /// assert_eq!(fut.await.unwrap(), 3);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct ScopeFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running {
            #[pin]
            scope: Scope<F>,
        },
        Failed {
            error: Option<Error>,
        },
    }
}

impl<F, T, E> Future for ScopeFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running { scope } => scope.poll(cx).map(|res| match res {
                Ok(response) => response.map_err(Into::into),
                Err(elapsed) => Err(Box::new(elapsed) as BoxError),
            }),
            StateProj::Failed { error } => {
                let error = error.take().expect("ScopeFuture polled after completion");
                Poll::Ready(Err(Box::new(error)))
            }
        }
    }
}

impl<F> fmt::Debug for ScopeFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ScopeFuture");
        match &self.state {
            State::Running { scope } => d.field("scope", scope),
            State::Failed { error } => d.field("error", error),
        };
        d.finish_non_exhaustive()
    }
}
