//! [`PropagateDeadlineLayer`]: the client side of a request's deadline
//! across services, written into each call's headers.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::tower::{BoxError, Layer, Service};
use http::header::{Entry, HeaderMap, HeaderName, HeaderValue, ValueIter};
use http::Request;
use pin_project_lite::pin_project;

use super::grpc_timeout::{encode_grpc_timeout, parse_grpc_timeout, GRPC_TIMEOUT};
use crate::engine::scope;
use crate::error::Elapsed;
use crate::timer::timeout::{Timeout, WithTimeout};
use crate::timer::Timer;

/// A [`Layer`] for clients (hyper-util's `Client`, tonic's `Channel`, any
/// `Service<http::Request<_>>`) that carries the deadline of the
/// [deadline scope](crate::deadline) a call is made in to the service it
/// calls: inside a scope (a request run by a
/// [`DeadlineLayer`](super::DeadlineLayer) or a
/// [`ScopeLayer`](super::ScopeLayer), a [`Timer::scope`]), each call
///
/// - writes the time left into its request's `grpc-timeout` (gRPC's
///   format, rounded down: see
///   [`encode_grpc_timeout`](super::encode_grpc_timeout)), and into the
///   header of milliseconds [`millis_header`](PropagateDeadlineLayer::millis_header)
///   names, if any (rounded down too), so that the callee's deadline is
///   never later than the caller's; a request that carries a smaller one
///   already keeps it;
/// - ends at the scope's deadline with an [`Elapsed`] whose
///   [`ended_by`](Elapsed::ended_by) is
///   [`EndedBy::Inherited`](crate::EndedBy::Inherited), dropping the
///   inner call (its connection's protocol cancels it: an HTTP/2 stream
///   reset, an HTTP/1 connection closed);
/// - with no time left, ends at once with that `Elapsed`, without calling
///   the inner service: nothing is sent.
///
/// Outside any scope a call is the inner service's, untouched: its cost is
/// one read of a thread-local.
///
/// The services' errors are [`BoxError`]s: the inner service's, boxed, or
/// hashwheel's [`Elapsed`] (or its [`Error`](crate::Error), where the
/// timer is stopped or full). tonic's clients take them as they are: the
/// `Status` of a call ended so has the `Elapsed` as its source.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::tower::PropagateDeadlineLayer;
/// use hashwheel::{EndedBy, Timer};
/// use http::{Request, Response};
/// use std::time::Duration;
/// use tower::{service_fn, BoxError, Layer, ServiceExt};
///
/// // A "client" that answers with the deadline its request carried.
/// let client = service_fn(|req: Request<()>| async move {
///     let sent = req.headers().get("grpc-timeout").cloned();
///     Ok::<_, BoxError>(Response::new(sent))
/// });
/// let timer = Timer::new();
/// let client = PropagateDeadlineLayer::new(timer.clone()).layer(client);
///
/// // Outside a scope: nothing is sent.
/// let res = client.clone().oneshot(Request::new(())).await.unwrap();
/// assert_eq!(res.into_body(), None);
///
/// // Inside one: the time left.
/// let res = timer
///     .scope(Duration::from_millis(200), client.clone().oneshot(Request::new(())))
///     .await
///     .unwrap()
///     .unwrap();
/// assert_eq!(res.into_body().unwrap(), "200000u");
///
/// // None left: not sent, an inherited Elapsed.
/// let call = timer.scope(Duration::from_millis(200), async {
///     tokio::time::sleep(Duration::from_millis(200)).await;
///     client.oneshot(Request::new(())).await
/// });
/// let err = call.await.unwrap().unwrap_err();
/// let err = err.downcast_ref::<hashwheel::Elapsed>().unwrap();
/// assert_eq!(err.ended_by(), EndedBy::Inherited);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PropagateDeadlineLayer {
    timer: Timer,
    millis: Option<HeaderName>,
}

impl PropagateDeadlineLayer {
    /// A layer whose services write the time left of the scope each call
    /// is made in into its `grpc-timeout`, and end it at the scope's
    /// deadline, timed by `timer`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let layer = hashwheel::tower::PropagateDeadlineLayer::new(hashwheel::Timer::new());
    /// assert!(layer.millis_header_name().is_none());
    /// # }
    /// ```
    pub fn new(timer: Timer) -> PropagateDeadlineLayer {
        PropagateDeadlineLayer {
            timer,
            millis: None,
        }
    }

    /// Writes the time left, in whole milliseconds (rounded down), into
    /// the header `name` too, beside `grpc-timeout`: for a callee that
    /// reads a header of milliseconds (a
    /// [`DeadlineLayer`](super::DeadlineLayer) with the same
    /// [`millis_header`](super::DeadlineLayer::millis_header), a proxy's
    /// own).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use http::HeaderName;
    ///
    /// let layer = hashwheel::tower::PropagateDeadlineLayer::new(hashwheel::Timer::new())
    ///     .millis_header(HeaderName::from_static("x-request-deadline"));
    /// assert_eq!(layer.millis_header_name().unwrap(), "x-request-deadline");
    /// # }
    /// ```
    pub fn millis_header(mut self, name: HeaderName) -> PropagateDeadlineLayer {
        self.millis = Some(name);
        self
    }

    /// The header of milliseconds written beside `grpc-timeout`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let layer = hashwheel::tower::PropagateDeadlineLayer::new(hashwheel::Timer::new());
    /// assert_eq!(layer.millis_header_name(), None);
    /// # }
    /// ```
    pub fn millis_header_name(&self) -> Option<&HeaderName> {
        self.millis.as_ref()
    }
}

impl<S> Layer<S> for PropagateDeadlineLayer {
    type Service = PropagateDeadline<S>;

    fn layer(&self, inner: S) -> PropagateDeadline<S> {
        PropagateDeadline {
            inner,
            timer: self.timer.clone(),
            millis: self.millis.clone(),
        }
    }
}

/// A tower [`Service`] for clients that carries the deadline of the
/// scope each call is made in to the service it calls; made by
/// [`PropagateDeadlineLayer`], see there.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use hashwheel::tower::{PropagateDeadline, PropagateDeadlineLayer};
/// use tower::Layer;
///
/// let layer = PropagateDeadlineLayer::new(hashwheel::Timer::new());
/// let mut client: PropagateDeadline<u8> = layer.layer(5);
/// *client.get_mut() += 1;
/// assert_eq!(*client.get_ref(), 6);
/// assert_eq!(client.into_inner(), 6);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PropagateDeadline<S> {
    inner: S,
    timer: Timer,
    millis: Option<HeaderName>,
}

inner_accessors!(PropagateDeadline);

impl<S> PropagateDeadline<S> {
    /// What a call inside a scope with `left` to its deadline needs before
    /// it is made: the time left in its headers, and a timeout at the
    /// scope's deadline (made first, so that a full or stopped timer sends
    /// nothing); or why it is not made.
    #[inline(never)]
    fn before_call(&self, left: Duration, headers: &mut HeaderMap) -> Result<Timeout, BoxError> {
        if left.is_zero() {
            // The caller's caller has given up: nothing is sent.
            return Err(Box::new(Elapsed::deadline().inherited_if(true)));
        }
        // Its own deadline is none: the scope's comes first (clipped to it
        // as the call is made, inside the scope).
        let timeout = self.timer.try_sleep(Duration::MAX)?;
        write_deadline(headers, left, self.millis.as_ref());
        Ok(timeout)
    }
}

impl<S, B> Service<Request<B>> for PropagateDeadline<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = PropagateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, mut request: Request<B>) -> PropagateFuture<S::Future> {
        let Some(active) = scope::active() else {
            // Outside any scope: one read of a thread-local, and the
            // request goes to the inner service as it came.
            let call = self.inner.call(request);
            return PropagateFuture {
                state: State::Outside { call },
            };
        };
        match self.before_call(active.remaining(), request.headers_mut()) {
            Ok(timeout) => {
                let call = self.inner.call(request);
                PropagateFuture {
                    state: State::Inside {
                        call: WithTimeout::new(call, timeout),
                    },
                }
            }
            Err(error) => PropagateFuture::failed(error),
        }
    }
}

/// Writes `left` into `grpc-timeout`, and into the header of milliseconds
/// `millis`, rounded down, unless the request carries a smaller deadline
/// already (kept; its other values, and any malformed one, are replaced).
fn write_deadline(headers: &mut HeaderMap, left: Duration, millis: Option<&HeaderName>) {
    let carried = |values: ValueIter<'_, HeaderValue>,
                   read: fn(&HeaderValue) -> Option<Duration>| {
        values.filter_map(read).min().map_or(left, |d| d.min(left))
    };
    match headers.entry(GRPC_TIMEOUT) {
        Entry::Vacant(entry) => {
            entry.insert(encode_grpc_timeout(left));
        }
        Entry::Occupied(mut entry) => {
            let send = carried(entry.iter(), |v| parse_grpc_timeout(v).ok());
            entry.insert(encode_grpc_timeout(send));
        }
    }
    if let Some(name) = millis {
        let millis =
            |d: Duration| HeaderValue::from(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        match headers.entry(name) {
            Entry::Vacant(entry) => {
                entry.insert(millis(left));
            }
            Entry::Occupied(mut entry) => {
                let read =
                    |v: &HeaderValue| Some(Duration::from_millis(v.to_str().ok()?.parse().ok()?));
                let send = carried(entry.iter(), read);
                entry.insert(millis(send));
            }
        }
    }
}

pin_project! {
    /// The response future of [`PropagateDeadline`]: the inner response,
    /// or, for a call made inside a scope, hashwheel's
    /// [`Elapsed`] once the scope's deadline passes (dropping the inner
    /// future), or at once where no time was left.
    ///
    /// `Unpin` when the inner future is.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use http::Request;
    /// use tower::{service_fn, BoxError, Layer, Service};
    ///
    /// let echo = service_fn(|req: Request<u8>| async move { Ok::<_, BoxError>(*req.body()) });
    /// let mut client = hashwheel::tower::PropagateDeadlineLayer::new(hashwheel::Timer::new()).layer(echo);
    /// let fut: hashwheel::tower::PropagateFuture<_> = client.call(Request::new(3));
    /// assert_eq!(fut.await.unwrap(), 3);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct PropagateFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Outside {
            #[pin]
            call: F,
        },
        Inside {
            #[pin]
            call: WithTimeout<F>,
        },
        Failed {
            error: Option<BoxError>,
        },
    }
}

impl<F> PropagateFuture<F> {
    #[cold]
    fn failed(error: BoxError) -> PropagateFuture<F> {
        PropagateFuture {
            state: State::Failed { error: Some(error) },
        }
    }
}

impl<F, T, E> Future for PropagateFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Outside { call } => call.poll(cx).map(|res| res.map_err(Into::into)),
            StateProj::Inside { call } => call.poll(cx).map(|res| match res {
                Ok(res) => res.map_err(Into::into),
                Err(elapsed) => Err(Box::new(elapsed) as BoxError),
            }),
            StateProj::Failed { error } => Poll::Ready(Err(error
                .take()
                .expect("PropagateFuture polled after completion"))),
        }
    }
}

impl<F> fmt::Debug for PropagateFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Outside { .. } => "outside a scope",
            State::Inside { .. } => "inside a scope",
            State::Failed { .. } => "failed",
        };
        f.debug_struct("PropagateFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}
