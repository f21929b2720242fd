//! [`DeadlineLayer`]: the server side of a request's deadline across
//! services, read from its headers.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ::tower::{Layer, Service};
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use http::{Request, Response, StatusCode};
use pin_project_lite::pin_project;

use super::grpc_timeout::{escaped, parse_grpc_timeout, GRPC_TIMEOUT};
use crate::error::Elapsed;
use crate::timer::deadline::{try_scope_with, Scope};
use crate::timer::Timer;

/// gRPC's status codes the layer answers with.
const INVALID_ARGUMENT: u16 = 3;
const DEADLINE_EXCEEDED: u16 = 4;
const UNAVAILABLE: u16 = 14;

/// What a [`DeadlineLayer`] does with a request whose deadline header is
/// malformed or out of range: a `grpc-timeout` that
/// [`parse_grpc_timeout`](super::parse_grpc_timeout) refuses (`abc`,
/// `-5m`, `100ms`, `99999999999H`, an empty value), or a header of
/// milliseconds that is not 1 to 20 ASCII digits of a `u64`.
///
/// Either way every deadline header of the request is read first, so a
/// valid one beside a malformed one is never hidden, and the layer's
/// [`invalid_requests`](DeadlineLayer::invalid_requests) counts the
/// request.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use hashwheel::tower::{DeadlineLayer, OnInvalid};
/// use std::time::Duration;
///
/// let layer = DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(5))
///     .on_invalid(OnInvalid::Ignore);
/// assert_eq!(layer.invalid_policy(), OnInvalid::Ignore);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnInvalid {
    /// Answer the request at once, without calling the service: HTTP `400
    /// Bad Request`, or, for a gRPC request (a `content-type` of
    /// `application/grpc...`), gRPC's `INVALID_ARGUMENT`: a trailers-only
    /// response (HTTP `200`, `grpc-status: 3` and a `grpc-message` that
    /// names the header and what is wrong with it, in its headers, and no
    /// body), as gRPC allows for a call that fails before its first
    /// message. The default: a client that sends a deadline it did not
    /// mean hears of it.
    #[default]
    Reject,
    /// Run the request as if the malformed header were not there: under
    /// its valid deadline headers and the layer's limit. A `tracing`
    /// warning names the header, its value and what is wrong with it; the
    /// layer's [`invalid_requests`](DeadlineLayer::invalid_requests)
    /// counts it (what a server without a `tracing` subscriber can watch).
    Ignore,
}

/// A [`Layer`] for servers that runs each request in a
/// [deadline scope](crate::deadline) of the deadline its caller sent: the
/// smaller of its headers' (`grpc-timeout`, in gRPC's format, and, where
/// [`millis_header`](DeadlineLayer::millis_header) names one, a header of
/// milliseconds) and the layer's own limit. Every timeout the handler
/// makes ([`hashwheel::time::timeout`](crate::time::timeout),
/// [`Timer::timeout`], a downstream call through a
/// [`PropagateDeadlineLayer`](super::PropagateDeadlineLayer), which writes
/// the time left into it) ends by the caller's deadline at the latest,
/// and the handler is dropped when it passes: nothing works on after the
/// caller gave up.
///
/// Its services take and give [`http`] requests and responses and answer
/// themselves where the request cannot run (so their error type is the
/// inner service's, and they slot under hyper's `serve_connection` or
/// tonic's `Server::layer`):
///
/// | what happened | HTTP | gRPC (trailers-only: HTTP 200, `grpc-status`) |
/// |---|---|---|
/// | a deadline header malformed or out of range, under [`OnInvalid::Reject`] | `400 Bad Request` | `3` `INVALID_ARGUMENT` |
/// | the deadline passed (or was zero: the service is not called) | `504 Gateway Timeout` | `4` `DEADLINE_EXCEEDED` |
/// | the timer stopped, or is at its [`max_pending`](crate::Builder::max_pending) limit | `503 Service Unavailable` | `14` `UNAVAILABLE` |
///
/// These answers have an empty body (the response body type's
/// [`Default`]), and the deadline's [`Elapsed`] (whose
/// [`ended_by`](Elapsed::ended_by) is [`EndedBy::Scope`](crate::EndedBy::Scope):
/// the request ran out), or the timer's [`Error`](crate::Error), in their
/// [extensions](Response::extensions), for a logging layer outside. A
/// request is gRPC's when its `content-type` starts with
/// `application/grpc`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::time::{timeout, Duration};
/// use hashwheel::tower::DeadlineLayer;
/// use http::{HeaderName, Request, Response, StatusCode};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let timer = hashwheel::Timer::new();
/// let layer = DeadlineLayer::new(timer, Duration::from_secs(5))
///     .millis_header(HeaderName::from_static("x-request-deadline"));
/// let svc = layer.layer(service_fn(|_req: Request<()>| async {
///     // A downstream call's own 1 s, cut to the caller's 200 ms.
///     let call = timeout(Duration::from_secs(1), std::future::pending::<()>()).await;
///     assert!(call.unwrap_err().is_inherited());
///     Ok::<_, std::convert::Infallible>(Response::new("the request ran out".to_string()))
/// }));
///
/// let req = Request::get("/").header("grpc-timeout", "200m").body(()).unwrap();
/// let res = svc.clone().oneshot(req).await.unwrap();
/// assert_eq!(res.into_body(), "the request ran out");
///
/// let bad = Request::get("/").header("x-request-deadline", "-5").body(()).unwrap();
/// let res = svc.oneshot(bad).await.unwrap();
/// assert_eq!(res.status(), StatusCode::BAD_REQUEST);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct DeadlineLayer {
    settings: Settings,
}

/// What a layer and its services share.
#[derive(Debug, Clone)]
struct Settings {
    timer: Timer,
    limit: Duration,
    millis: Option<HeaderName>,
    on_invalid: OnInvalid,
    /// Requests with a malformed or out-of-range deadline header.
    invalid: Arc<AtomicU64>,
}

impl DeadlineLayer {
    /// A layer whose services run each request in a deadline scope of the
    /// smaller of its `grpc-timeout` and `limit`, timed by `timer`;
    /// malformed headers are [rejected](OnInvalid::Reject).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(5));
    /// assert_eq!(layer.limit(), Duration::from_secs(5));
    /// assert_eq!(layer.invalid_requests(), 0);
    /// # }
    /// ```
    pub fn new(timer: Timer, limit: Duration) -> DeadlineLayer {
        DeadlineLayer {
            settings: Settings {
                timer,
                limit,
                millis: None,
                on_invalid: OnInvalid::default(),
                invalid: Arc::default(),
            },
        }
    }

    /// Reads a request's deadline from the header `name` too, a number of
    /// milliseconds (1 to 20 ASCII digits of a `u64`, as
    /// `x-request-deadline: 250`), beside `grpc-timeout`: the smallest
    /// deadline of the two and the limit holds.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use http::HeaderName;
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(5))
    ///     .millis_header(HeaderName::from_static("x-request-deadline"));
    /// assert_eq!(layer.millis_header_name().unwrap(), "x-request-deadline");
    /// # }
    /// ```
    pub fn millis_header(mut self, name: HeaderName) -> DeadlineLayer {
        self.settings.millis = Some(name);
        self
    }

    /// What to do with a request whose deadline header is malformed or out
    /// of range ([`OnInvalid::Reject`] by default).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::tower::{DeadlineLayer, OnInvalid};
    /// use std::time::Duration;
    ///
    /// let layer = DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(5));
    /// assert_eq!(layer.invalid_policy(), OnInvalid::Reject);
    /// let layer = layer.on_invalid(OnInvalid::Ignore);
    /// assert_eq!(layer.invalid_policy(), OnInvalid::Ignore);
    /// # }
    /// ```
    pub fn on_invalid(mut self, policy: OnInvalid) -> DeadlineLayer {
        self.settings.on_invalid = policy;
        self
    }

    /// The longest a request runs, whatever its headers say.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(2));
    /// assert_eq!(layer.limit(), Duration::from_secs(2));
    /// # }
    /// ```
    pub fn limit(&self) -> Duration {
        self.settings.limit
    }

    /// The header of milliseconds read beside `grpc-timeout`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let layer = hashwheel::tower::DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(2));
    /// assert!(layer.millis_header_name().is_none());
    /// # }
    /// ```
    pub fn millis_header_name(&self) -> Option<&HeaderName> {
        self.settings.millis.as_ref()
    }

    /// What the layer does with a malformed or out-of-range deadline
    /// header.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::tower::{DeadlineLayer, OnInvalid};
    /// use std::time::Duration;
    ///
    /// let layer = DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(2));
    /// assert_eq!(layer.invalid_policy(), OnInvalid::Reject);
    /// # }
    /// ```
    pub fn invalid_policy(&self) -> OnInvalid {
        self.settings.on_invalid
    }

    /// How many requests carried a malformed or out-of-range deadline
    /// header, whatever the policy did with them, through every service
    /// this layer (or a clone of it) made.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use hashwheel::tower::{DeadlineLayer, OnInvalid};
    /// use http::{Request, Response};
    /// use std::time::Duration;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// let layer = DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(2))
    ///     .on_invalid(OnInvalid::Ignore);
    /// let svc = layer.layer(service_fn(|_: Request<()>| async {
    ///     Ok::<_, std::convert::Infallible>(Response::new(()))
    /// }));
    /// let req = Request::get("/").header("grpc-timeout", "abc").body(()).unwrap();
    /// svc.oneshot(req).await.unwrap();
    /// assert_eq!(layer.invalid_requests(), 1);
    /// # }
    /// ```
    pub fn invalid_requests(&self) -> u64 {
        self.settings.invalid.load(Ordering::Relaxed)
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;

    fn layer(&self, inner: S) -> DeadlineService<S> {
        DeadlineService {
            inner,
            settings: self.settings.clone(),
        }
    }
}

/// A tower [`Service`] that runs each request in a deadline scope of the
/// deadline its caller sent; made by [`DeadlineLayer`], see there.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::tower::{DeadlineLayer, DeadlineService};
/// use http::{Request, Response, StatusCode};
/// use std::time::Duration;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let slow = service_fn(|_: Request<()>| async {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok::<_, std::convert::Infallible>(Response::new(String::from("late")))
/// });
/// let layer = DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(5));
/// let svc: DeadlineService<_> = layer.layer(slow);
/// let req = Request::get("/").header("grpc-timeout", "1S").body(()).unwrap();
/// let res = svc.oneshot(req).await.unwrap();
/// assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
/// let elapsed = res.extensions().get::<hashwheel::Elapsed>().unwrap();
/// assert_eq!(elapsed.ended_by(), hashwheel::EndedBy::Scope);
/// # }
/// ```
///
/// The inner service:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use tower::Layer;
///
/// let layer = hashwheel::tower::DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(1));
/// let mut svc = layer.layer(5u8);
/// *svc.get_mut() += 1;
/// assert_eq!(*svc.get_ref(), 6);
/// assert_eq!(svc.into_inner(), 6);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct DeadlineService<S> {
    inner: S,
    settings: Settings,
}

inner_accessors!(DeadlineService);

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for DeadlineService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: Default,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = DeadlineFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let settings = &self.settings;
        let grpc = is_grpc(request.headers());
        let read = read_deadline(request.headers(), settings.millis.as_ref());
        if let Some(invalid) = read.invalid {
            settings.invalid.fetch_add(1, Ordering::Relaxed);
            match settings.on_invalid {
                OnInvalid::Reject => {
                    tracing::debug!(
                        header = %invalid.name,
                        "hashwheel: rejected a request: {invalid}"
                    );
                    let answer = answer(grpc, Answer::Invalid, &invalid.to_string());
                    return DeadlineFuture::answered(answer);
                }
                OnInvalid::Ignore => tracing::warn!(
                    header = %invalid.name,
                    "hashwheel: ignored a deadline header: {invalid}"
                ),
            }
        }
        let delay = read
            .deadline
            .map_or(settings.limit, |d| d.min(settings.limit));
        if delay.is_zero() {
            // Its caller has given up already: the service is not called.
            let mut answer = answer(grpc, Answer::Elapsed, "deadline exceeded");
            answer
                .extensions_mut()
                .insert(Elapsed::deadline().of_scope());
            return DeadlineFuture::answered(answer);
        }
        let inner = &mut self.inner;
        match try_scope_with(&settings.timer, delay, || inner.call(request)) {
            Ok(scope) => DeadlineFuture {
                state: State::Running { scope, grpc },
            },
            Err(error) => {
                let mut answer = answer(grpc, Answer::Unavailable, &error.to_string());
                answer.extensions_mut().insert(error);
                DeadlineFuture::answered(answer)
            }
        }
    }
}

/// What a request's headers say of its deadline.
struct ReadDeadline {
    /// The smallest of its valid deadline headers.
    deadline: Option<Duration>,
    /// The first malformed or out-of-range one.
    invalid: Option<InvalidHeader>,
}

/// A malformed or out-of-range deadline header: its name, and its value
/// and what is wrong with it.
struct InvalidHeader {
    name: HeaderName,
    message: String,
}

impl fmt::Display for InvalidHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Reads every value of `grpc-timeout` and of the header of milliseconds
/// `millis`: a malformed one never hides a valid one.
fn read_deadline(headers: &HeaderMap, millis: Option<&HeaderName>) -> ReadDeadline {
    let mut read = ReadDeadline {
        deadline: None,
        invalid: None,
    };
    let mut take = |name: &HeaderName, parsed: Result<Duration, String>| match parsed {
        Ok(d) => read.deadline = Some(read.deadline.map_or(d, |min| min.min(d))),
        Err(message) => {
            read.invalid.get_or_insert(InvalidHeader {
                name: name.clone(),
                message,
            });
        }
    };
    for value in headers.get_all(GRPC_TIMEOUT) {
        take(
            &GRPC_TIMEOUT,
            parse_grpc_timeout(value).map_err(|e| e.to_string()),
        );
    }
    if let Some(name) = millis {
        for value in headers.get_all(name) {
            take(name, parse_millis(name, value));
        }
    }
    read
}

/// A header of milliseconds: 1 to 20 ASCII digits, a `u64`.
fn parse_millis(name: &HeaderName, value: &HeaderValue) -> Result<Duration, String> {
    let bytes = value.as_bytes();
    let why = if bytes.is_empty() {
        "empty"
    } else if !bytes.iter().all(u8::is_ascii_digit) {
        "not a number of milliseconds (ASCII digits)"
    } else {
        match std::str::from_utf8(bytes).ok().and_then(|s| s.parse().ok()) {
            Some(ms) => return Ok(Duration::from_millis(ms)),
            None => "out of range (at most 18446744073709551615 ms)",
        }
    };
    Err(format!("invalid {name} \"{}\": {why}", escaped(bytes)))
}

/// Whether a request is gRPC's (`application/grpc`, `application/grpc+proto`
/// and the like).
fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// The layer's own answers.
#[derive(Clone, Copy)]
enum Answer {
    Invalid,
    Elapsed,
    Unavailable,
}

/// An answer of the layer's, with an empty body: HTTP's status, or gRPC's
/// trailers-only response, its status and message in the headers.
fn answer<B: Default>(grpc: bool, what: Answer, message: &str) -> Response<B> {
    let mut res = Response::new(B::default());
    if grpc {
        let code = match what {
            Answer::Invalid => INVALID_ARGUMENT,
            Answer::Elapsed => DEADLINE_EXCEEDED,
            Answer::Unavailable => UNAVAILABLE,
        };
        let headers = res.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert("grpc-status", HeaderValue::from(code));
        if let Ok(message) = HeaderValue::from_str(&percent_encode(message)) {
            headers.insert("grpc-message", message);
        }
    } else {
        *res.status_mut() = match what {
            Answer::Invalid => StatusCode::BAD_REQUEST,
            Answer::Elapsed => StatusCode::GATEWAY_TIMEOUT,
            Answer::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        };
    }
    res
}

/// gRPC's encoding of `grpc-message`: the bytes outside printable ASCII,
/// and `%`, percent-encoded.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pin_project! {
    /// The response future of [`DeadlineService`]: the inner response, or
    /// the layer's answer once the request's deadline passes (dropping the
    /// inner future), or at once where the request could not run.
    ///
    /// `Unpin` when the inner future is. Dropping it drops the inner
    /// future and cancels the deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use http::{Request, Response};
    /// use std::time::Duration;
    /// use tower::{service_fn, Layer, Service};
    ///
    /// let echo = service_fn(|req: Request<String>| async move {
    ///     Ok::<_, std::convert::Infallible>(Response::new(req.into_body()))
    /// });
    /// let layer = hashwheel::tower::DeadlineLayer::new(hashwheel::Timer::new(), Duration::from_secs(1));
    /// let mut svc = layer.layer(echo);
    /// let fut: hashwheel::tower::DeadlineFuture<_, String> = svc.call(Request::new("hi".into()));
    /// assert_eq!(fut.await.unwrap().into_body(), "hi");
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct DeadlineFuture<F, B> {
        #[pin]
        state: State<F, B>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, B> {
        Running {
            #[pin]
            scope: Scope<F>,
            grpc: bool,
        },
        Answered {
            response: Option<Response<B>>,
        },
    }
}

impl<F, B> DeadlineFuture<F, B> {
    fn answered(response: Response<B>) -> DeadlineFuture<F, B> {
        DeadlineFuture {
            state: State::Answered {
                response: Some(response),
            },
        }
    }
}

impl<F, B, E> Future for DeadlineFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running { scope, grpc } => scope.poll(cx).map(|res| match res {
                Ok(response) => response,
                Err(elapsed) => Ok(elapsed_answer(*grpc, elapsed)),
            }),
            StateProj::Answered { response } => Poll::Ready(Ok(response
                .take()
                .expect("DeadlineFuture polled after completion"))),
        }
    }
}

/// The answer to a request whose scope ended: its deadline passed, or its
/// timer stopped.
#[cold]
fn elapsed_answer<B: Default>(grpc: bool, elapsed: Elapsed) -> Response<B> {
    let what = if elapsed.is_timer_stopped() {
        Answer::Unavailable
    } else {
        Answer::Elapsed
    };
    let mut res = answer(grpc, what, &elapsed.to_string());
    res.extensions_mut().insert(elapsed);
    res
}

impl<F, B> fmt::Debug for DeadlineFuture<F, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("DeadlineFuture");
        match &self.state {
            State::Running { scope, grpc } => d.field("scope", scope).field("grpc", grpc),
            State::Answered { response } => {
                d.field("answered", &response.as_ref().map(Response::status))
            }
        };
        d.finish_non_exhaustive()
    }
}
