//! A request's deadline across services (issue 57), in one process on
//! paused time: `DeadlineLayer` reads it from a request's headers and runs
//! the request in a scope of it (answering a malformed header by its
//! policy, for each of gRPC's and HTTP's), `PropagateDeadlineLayer` writes
//! the time left into a call's and ends it, unsent, when none is left; the
//! two together stop a chain at its first caller's deadline. The chain of
//! real servers on loopback is `integration/tests/deadline_chain.rs`.
//! Needs the `tower` feature (`required-features` in Cargo.toml).

mod common;

use std::convert::Infallible;
use std::future::pending;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::capture::Capture;
use hashwheel::time::{timeout, Instant};
use hashwheel::tower::{
    encode_grpc_timeout, DeadlineLayer, OnInvalid, PropagateDeadline, PropagateDeadlineLayer,
};
use hashwheel::{Elapsed, EndedBy, Timer};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use tower::util::Either;
use tower::{service_fn, BoxError, Layer, Service, ServiceExt};
use tracing::Level;

/// Held by the tests whose layer logs a malformed header: `tracing` caches
/// each call site's interest process-wide, and a test logging with no
/// subscriber while another sets or drops its own could leave the warning's
/// call site cached as uninteresting for the test that captures it.
static LOGS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const MILLIS: HeaderName = HeaderName::from_static("x-request-deadline");

/// What a handler saw and did: its calls, the headers of the last, the
/// time left in its scope, when it was dropped, and how many 10 ms steps
/// of work it did.
#[derive(Default)]
struct Probe {
    calls: AtomicUsize,
    headers: Mutex<Option<HeaderMap>>,
    left: Mutex<Option<Duration>>,
    dropped_at: Mutex<Option<Instant>>,
    steps: AtomicUsize,
}

/// Notes when the handler holding it is dropped.
struct DropGuard(Arc<Probe>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        *self.0.dropped_at.lock().unwrap() = Some(Instant::now());
    }
}

impl Probe {
    fn dropped_at(&self) -> Option<Instant> {
        *self.dropped_at.lock().unwrap()
    }
}

/// A handler that works in 10 ms steps for `work` and then answers "done".
fn slow(
    probe: &Arc<Probe>,
    work: Duration,
) -> impl Service<Request<()>, Response = Response<String>, Error = Infallible> + Clone {
    let probe = probe.clone();
    service_fn(move |req: Request<()>| {
        let probe = probe.clone();
        probe.calls.fetch_add(1, Ordering::SeqCst);
        *probe.headers.lock().unwrap() = Some(req.headers().clone());
        *probe.left.lock().unwrap() = hashwheel::deadline::remaining();
        async move {
            let _guard = DropGuard(probe.clone());
            let end = Instant::now() + work;
            while Instant::now() < end {
                tokio::time::sleep(ms(10)).await;
                probe.steps.fetch_add(1, Ordering::SeqCst);
            }
            Ok(Response::new("done".to_string()))
        }
    })
}

fn request(headers: &[(&str, &str)]) -> Request<()> {
    let mut req = Request::get("/");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.body(()).unwrap()
}

fn grpc_request(headers: &[(&str, &str)]) -> Request<()> {
    let mut req = request(headers);
    req.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    req
}

#[test]
fn types_are_send_sync_and_debug() {
    fn send_sync_debug<T: Send + Sync + std::fmt::Debug>() {}
    send_sync_debug::<DeadlineLayer>();
    send_sync_debug::<hashwheel::tower::DeadlineService<()>>();
    send_sync_debug::<hashwheel::tower::DeadlineFuture<std::future::Ready<()>, String>>();
    send_sync_debug::<PropagateDeadlineLayer>();
    send_sync_debug::<PropagateDeadline<()>>();
    send_sync_debug::<hashwheel::tower::PropagateFuture<std::future::Ready<()>>>();
    send_sync_debug::<hashwheel::tower::InvalidTimeout>();
}

// ---- the server side ----

/// The request runs in a scope of its `grpc-timeout`: the handler sees the
/// time left, its own timeouts end by it, inherited, and it is dropped at
/// the deadline (never before), answered 504 with the scope's `Elapsed`.
#[tokio::test(start_paused = true)]
async fn a_request_runs_in_a_scope_of_its_grpc_timeout() {
    let timer = Timer::new();
    let probe = Arc::new(Probe::default());
    let svc =
        DeadlineLayer::new(timer.clone(), Duration::from_secs(5)).layer(slow(&probe, ms(1000)));
    let start = Instant::now();
    let res = svc
        .oneshot(request(&[("grpc-timeout", "200m")]))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(res.body(), "");
    let elapsed = res
        .extensions()
        .get::<Elapsed>()
        .expect("the deadline's Elapsed");
    assert_eq!(elapsed.ended_by(), EndedBy::Scope, "the request ran out");
    assert_eq!(*probe.left.lock().unwrap(), Some(ms(200)));
    assert_eq!(probe.dropped_at(), Some(start + ms(200)));
    assert_eq!(start.elapsed(), ms(200));
    assert_eq!(timer.pending(), 0);

    // In time: the handler's answer, untouched.
    let probe = Arc::new(Probe::default());
    let svc = DeadlineLayer::new(timer.clone(), Duration::from_secs(5)).layer(slow(&probe, ms(50)));
    let res = svc
        .oneshot(request(&[("grpc-timeout", "200m")]))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.body(), "done");
    assert!(res.extensions().get::<Elapsed>().is_none());
}

/// The smallest of `grpc-timeout`, the header of milliseconds and the
/// layer's limit holds; without a header, the limit.
#[tokio::test(start_paused = true)]
async fn the_smallest_of_the_headers_and_the_limit_holds() {
    let timer = Timer::new();
    let cases: [(&[(&str, &str)], u64); 6] = [
        (&[], 300),
        (&[("grpc-timeout", "5S")], 300),
        (&[("grpc-timeout", "100m")], 100),
        (&[("x-request-deadline", "150")], 150),
        (
            &[("grpc-timeout", "100m"), ("x-request-deadline", "150")],
            100,
        ),
        (
            &[("grpc-timeout", "120000u"), ("x-request-deadline", "80")],
            80,
        ),
    ];
    for (headers, want) in cases {
        let probe = Arc::new(Probe::default());
        let svc = DeadlineLayer::new(timer.clone(), ms(300))
            .millis_header(MILLIS)
            .layer(slow(&probe, Duration::from_secs(10)));
        let start = Instant::now();
        let res = svc.oneshot(request(headers)).await.unwrap();
        assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT, "{headers:?}");
        assert_eq!(start.elapsed(), ms(want), "{headers:?}");
        assert_eq!(*probe.left.lock().unwrap(), Some(ms(want)), "{headers:?}");
    }
}

/// A deadline already passed (`0m`) is answered at once: the handler is
/// never called.
#[tokio::test(start_paused = true)]
async fn a_deadline_already_passed_is_answered_without_calling_the_service() {
    let timer = Timer::new();
    let probe = Arc::new(Probe::default());
    let layer = DeadlineLayer::new(timer.clone(), Duration::from_secs(5));
    let res = layer
        .layer(slow(&probe, ms(10)))
        .oneshot(request(&[("grpc-timeout", "0m")]))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        res.extensions().get::<Elapsed>().unwrap().ended_by(),
        EndedBy::Scope
    );
    let res = layer
        .layer(slow(&probe, ms(10)))
        .oneshot(grpc_request(&[("grpc-timeout", "0n")]))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["grpc-status"], "4");
    assert_eq!(probe.calls.load(Ordering::SeqCst), 0);
}

/// The malformed values of the issue, in `grpc-timeout` and in the header
/// of milliseconds.
const MALFORMED_GRPC: [&str; 5] = ["abc", "-5m", "100ms", "99999999999H", ""];
const MALFORMED_MILLIS: [&str; 5] = ["abc", "-5", "100ms", "99999999999999999999999", ""];

/// Each header, its malformed values, and a valid header of the other
/// kind (100 ms) to put beside them.
const MALFORMED: [(&str, [&str; 5], (&str, &str)); 2] = [
    (
        "grpc-timeout",
        MALFORMED_GRPC,
        ("x-request-deadline", "100"),
    ),
    (
        "x-request-deadline",
        MALFORMED_MILLIS,
        ("grpc-timeout", "100m"),
    ),
];

/// Under `OnInvalid::Reject` (the default) each malformed value is
/// answered 400 for HTTP and `INVALID_ARGUMENT` (grpc-status 3, trailers
/// only, a grpc-message naming it) for gRPC; the service is not called;
/// the layer counts each; a valid header beside it does not let it by.
#[tokio::test(start_paused = true)]
async fn reject_answers_each_malformed_header_400_or_invalid_argument() {
    let timer = Timer::new();
    let probe = Arc::new(Probe::default());
    let layer = DeadlineLayer::new(timer.clone(), Duration::from_secs(5)).millis_header(MILLIS);
    assert_eq!(layer.invalid_policy(), OnInvalid::Reject);
    let mut rejected = 0;
    for (name, values, valid) in MALFORMED {
        for value in values {
            for beside in [None, Some(valid)] {
                let headers: Vec<_> = [(name, value)].into_iter().chain(beside).collect();
                let res = layer
                    .layer(slow(&probe, ms(10)))
                    .oneshot(request(&headers))
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{headers:?}");
                assert_eq!(res.body(), "");

                let res = layer
                    .layer(slow(&probe, ms(10)))
                    .oneshot(grpc_request(&headers))
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::OK, "{headers:?}");
                assert_eq!(res.headers()["content-type"], "application/grpc");
                assert_eq!(res.headers()["grpc-status"], "3", "{headers:?}");
                let message = res.headers()["grpc-message"].to_str().unwrap();
                assert!(
                    message.starts_with(&format!("invalid {name} \"{value}\": ")),
                    "{message}"
                );
                rejected += 2;
            }
        }
    }
    assert_eq!(
        probe.calls.load(Ordering::SeqCst),
        0,
        "no request reached the service"
    );
    assert_eq!(layer.invalid_requests(), rejected);
}

/// Under `OnInvalid::Ignore` each malformed value is logged (a `tracing`
/// warning naming the header, its value and what is wrong) and counted,
/// and the request runs under the layer's limit, or under the valid
/// header beside the malformed one, never hidden by it.
#[tokio::test(start_paused = true)]
async fn ignore_logs_and_counts_each_malformed_header_and_keeps_a_valid_one() {
    let _logs = LOGS.lock().await;
    let capture = Capture::at_most(Level::WARN);
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    let layer = DeadlineLayer::new(timer.clone(), ms(300))
        .millis_header(MILLIS)
        .on_invalid(OnInvalid::Ignore);
    let mut ignored = 0;
    for (name, values, valid) in MALFORMED {
        for value in values {
            for (beside, want) in [(None, 300), (Some(valid), 100)] {
                let headers: Vec<_> = [(name, value)].into_iter().chain(beside).collect();
                let probe = Arc::new(Probe::default());
                let start = Instant::now();
                let res = layer
                    .layer(slow(&probe, Duration::from_secs(10)))
                    .oneshot(request(&headers))
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT, "{headers:?}");
                assert_eq!(start.elapsed(), ms(want), "{headers:?}");
                assert_eq!(*probe.left.lock().unwrap(), Some(ms(want)), "{headers:?}");
                ignored += 1;
                assert_eq!(layer.invalid_requests(), ignored);
                let warned = capture.messages(Level::WARN);
                let last = warned.last().expect("a warning");
                assert!(
                    last.starts_with(&format!(
                        "hashwheel: ignored a deadline header: invalid {name} \"{value}\": "
                    )),
                    "{last}"
                );
                assert_eq!(warned.len() as u64, ignored);
            }
        }
    }
}

/// Every value of a repeated header is read: the smallest valid one
/// holds, and a malformed one among them is the policy's.
#[tokio::test(start_paused = true)]
async fn every_value_of_a_repeated_header_is_read() {
    let _logs = LOGS.lock().await;
    let timer = Timer::new();
    let layer = DeadlineLayer::new(timer.clone(), ms(300)).on_invalid(OnInvalid::Ignore);
    let probe = Arc::new(Probe::default());
    let mut req = request(&[("grpc-timeout", "250m")]);
    req.headers_mut()
        .append("grpc-timeout", HeaderValue::from_static("40m"));
    req.headers_mut()
        .append("grpc-timeout", HeaderValue::from_static("bad"));
    let start = Instant::now();
    layer
        .layer(slow(&probe, Duration::from_secs(1)))
        .oneshot(req)
        .await
        .unwrap();
    assert_eq!(start.elapsed(), ms(40));
    assert_eq!(layer.invalid_requests(), 1);
}

/// A stopped timer: the request is answered 503 (gRPC: `UNAVAILABLE`,
/// 14), with the timer's error, never a deadline that passed; a timer
/// that stops while a request runs ends it so too.
#[tokio::test(start_paused = true)]
async fn a_stopped_timer_is_answered_unavailable() {
    let timer = Timer::new();
    let probe = Arc::new(Probe::default());
    let layer = DeadlineLayer::new(timer.clone(), Duration::from_secs(5));
    let mut running = tokio_test::task::spawn(
        layer
            .layer(slow(&probe, Duration::from_secs(10)))
            .oneshot(grpc_request(&[])),
    );
    assert!(running.poll().is_pending());
    timer.stop();
    let res = running.await.unwrap();
    assert_eq!(res.headers()["grpc-status"], "14");
    assert!(res
        .extensions()
        .get::<Elapsed>()
        .unwrap()
        .is_timer_stopped());

    let res = layer
        .layer(slow(&probe, ms(1)))
        .oneshot(request(&[]))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(res
        .extensions()
        .get::<hashwheel::Error>()
        .unwrap()
        .is_stopped());
    assert_eq!(probe.calls.load(Ordering::SeqCst), 1);
}

// ---- the client side ----

/// A "client" that notes what it was sent and answers at once, or after
/// `takes`.
fn client(
    probe: &Arc<Probe>,
    takes: Duration,
) -> impl Service<Request<()>, Response = Response<String>, Error = Infallible> + Clone {
    slow(probe, takes)
}

fn sent(probe: &Probe, name: &str) -> Option<String> {
    let headers = probe.headers.lock().unwrap();
    headers
        .as_ref()
        .expect("sent")
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

/// Outside a scope the request goes as it is: no header written.
#[tokio::test(start_paused = true)]
async fn outside_a_scope_a_call_is_sent_untouched() {
    let timer = Timer::new();
    let probe = Arc::new(Probe::default());
    let svc = PropagateDeadlineLayer::new(timer.clone())
        .millis_header(MILLIS)
        .layer(client(&probe, ms(0)));
    let res = svc.oneshot(request(&[("x-other", "1")])).await.unwrap();
    assert_eq!(res.body(), "done");
    let headers = probe.headers.lock().unwrap().clone().unwrap();
    assert_eq!(headers.len(), 1);
    assert_eq!(headers["x-other"], "1");
    assert_eq!(timer.pending(), 0);
}

/// Inside a scope the time left goes in `grpc-timeout` (and the header of
/// milliseconds), rounded down; a smaller deadline the request carries
/// already is kept, a larger or malformed one replaced.
#[tokio::test(start_paused = true)]
async fn inside_a_scope_a_call_carries_the_time_left_rounded_down() {
    let timer = Timer::new();
    let layer = PropagateDeadlineLayer::new(timer.clone()).millis_header(MILLIS);
    // The request's headers, the time spent in the scope before the call,
    // and what the callee is sent.
    type Case<'a> = (&'a [(&'a str, &'a str)], u64, &'a str, &'a str);
    let cases: [Case<'_>; 5] = [
        (&[], 0, "200000u", "200"),
        (&[], 75, "125000u", "125"),
        (
            &[("grpc-timeout", "50m"), ("x-request-deadline", "60")],
            0,
            "50000000n",
            "60",
        ),
        (
            &[("grpc-timeout", "9S"), ("x-request-deadline", "900")],
            0,
            "200000u",
            "200",
        ),
        (
            &[("grpc-timeout", "abc"), ("x-request-deadline", "-1")],
            0,
            "200000u",
            "200",
        ),
    ];
    for (headers, after, grpc, millis) in cases {
        let probe = Arc::new(Probe::default());
        let svc = layer.layer(client(&probe, ms(0)));
        let req = request(headers);
        timer
            .scope(ms(200), async {
                tokio::time::sleep(ms(after)).await;
                svc.oneshot(req).await.unwrap();
            })
            .await
            .unwrap();
        assert_eq!(
            sent(&probe, "grpc-timeout").as_deref(),
            Some(grpc),
            "{headers:?} after {after}"
        );
        assert_eq!(
            sent(&probe, "x-request-deadline").as_deref(),
            Some(millis),
            "{headers:?}"
        );
    }

    // Off the millisecond: rounded down, in the finest unit that holds it.
    let probe = Arc::new(Probe::default());
    let svc = layer.layer(client(&probe, ms(0)));
    timer
        .scope(Duration::from_micros(1_500), svc.oneshot(request(&[])))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sent(&probe, "grpc-timeout").as_deref(), Some("1500000n"));
    assert_eq!(sent(&probe, "x-request-deadline").as_deref(), Some("1"));
    assert_eq!(
        encode_grpc_timeout(Duration::from_micros(1_500)),
        "1500000n"
    );
}

/// A call that outlasts the scope ends at its deadline with an inherited
/// `Elapsed`, the handler getting its answer; the inner call is dropped
/// then. With no time left the call ends at once, unsent.
#[tokio::test(start_paused = true)]
async fn a_call_ends_at_the_scopes_deadline_and_none_is_sent_with_no_time_left() {
    let timer = Timer::new();
    let probe = Arc::new(Probe::default());
    let svc =
        PropagateDeadlineLayer::new(timer.clone()).layer(client(&probe, Duration::from_secs(10)));
    let start = Instant::now();
    let err = timer
        .scope(ms(200), svc.clone().oneshot(request(&[])))
        .await
        .expect("the handler gets the call's answer")
        .unwrap_err();
    let elapsed = err.downcast_ref::<Elapsed>().expect("hashwheel's Elapsed");
    assert_eq!(elapsed.ended_by(), EndedBy::Inherited);
    assert_eq!(start.elapsed(), ms(200));
    assert_eq!(probe.dropped_at(), Some(start + ms(200)));
    assert_eq!(probe.calls.load(Ordering::SeqCst), 1);

    let late = timer.scope(ms(100), async {
        tokio::time::sleep(ms(100)).await;
        svc.oneshot(request(&[])).await
    });
    let err = late.await.unwrap().unwrap_err();
    assert_eq!(
        err.downcast_ref::<Elapsed>().unwrap().ended_by(),
        EndedBy::Inherited
    );
    assert_eq!(probe.calls.load(Ordering::SeqCst), 1, "nothing sent");
    assert_eq!(timer.pending(), 0);
}

/// The inner service's errors are boxed and passed on, inside a scope and
/// out.
#[tokio::test(start_paused = true)]
async fn a_clients_errors_are_boxed_and_passed_on() {
    let timer = Timer::new();
    let failing =
        service_fn(|_: Request<()>| async { Err::<(), _>(std::io::Error::other("refused")) });
    let svc = PropagateDeadlineLayer::new(timer.clone()).layer(failing);
    let err = svc.clone().oneshot(request(&[])).await.unwrap_err();
    assert_eq!(
        err.downcast_ref::<std::io::Error>().unwrap().to_string(),
        "refused"
    );
    let err = timer
        .scope(ms(100), svc.oneshot(request(&[])))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.downcast_ref::<std::io::Error>().unwrap().to_string(),
        "refused"
    );
}

// ---- the two together ----

/// A service that calls `next` through the client layer and answers with
/// how the call ended: the callee's status and body, or 504 and which
/// deadline ended it.
fn hop<S>(
    probe: &Arc<Probe>,
    next: S,
) -> impl Service<Request<()>, Response = Response<String>, Error = Infallible> + Clone
where
    S: Service<Request<()>, Response = Response<String>, Error = BoxError> + Clone + 'static,
{
    let probe = probe.clone();
    service_fn(move |req: Request<()>| {
        let (probe, next) = (probe.clone(), next.clone());
        *probe.headers.lock().unwrap() = Some(req.headers().clone());
        *probe.left.lock().unwrap() = hashwheel::deadline::remaining();
        async move {
            let _guard = DropGuard(probe.clone());
            let res = next.oneshot(request(&[])).await;
            Ok(match res {
                Ok(res) => res,
                Err(err) => {
                    let by = err.downcast_ref::<Elapsed>().map(Elapsed::ended_by);
                    let mut res = Response::new(format!("{by:?}"));
                    *res.status_mut() = StatusCode::GATEWAY_TIMEOUT;
                    res
                }
            })
        }
    })
}

/// A chain in one process: A's caller sends 200 ms; A calls B through the
/// client layer, B calls C, C is slow. C sees a deadline no later than
/// A's; every handler is dropped at A's deadline, never before; no step
/// of work is done after it. With C behind the server layer too, C's
/// scope answers first (polled innermost); with C a service that knows
/// nothing of deadlines, B's call to it ends at A's deadline with an
/// inherited `Elapsed`, dropping C's handler.
#[tokio::test(start_paused = true)]
async fn a_chain_stops_at_its_first_callers_deadline() {
    for c_reads_deadlines in [true, false] {
        let timer = Timer::new();
        let server = DeadlineLayer::new(timer.clone(), Duration::from_secs(30));
        let client = PropagateDeadlineLayer::new(timer.clone());
        let c = Arc::new(Probe::default());
        let b = Arc::new(Probe::default());
        let a = Arc::new(Probe::default());
        let c_svc = slow(&c, Duration::from_secs(10));
        let c_svc = if c_reads_deadlines {
            Either::Left(server.layer(c_svc))
        } else {
            Either::Right(c_svc)
        };
        let b_svc = server.layer(hop(&b, client.layer(c_svc)));
        let a_svc = server.layer(hop(&a, client.layer(b_svc)));

        let start = Instant::now();
        let deadline = start + ms(200);
        let res = a_svc
            .oneshot(request(&[("grpc-timeout", "200m")]))
            .await
            .unwrap();
        assert_eq!(start.elapsed(), ms(200));
        assert_eq!(sent(&b, "grpc-timeout").as_deref(), Some("200000u"));
        assert_eq!(sent(&c, "grpc-timeout").as_deref(), Some("200000u"));
        if c_reads_deadlines {
            assert_eq!(*c.left.lock().unwrap(), Some(ms(200)));
            assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
            assert_eq!(res.body(), "", "C's layer's answer");
        } else {
            assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
            assert_eq!(res.body(), "Some(Inherited)", "B's call to C");
        }
        for probe in [&a, &b, &c] {
            assert_eq!(probe.dropped_at(), Some(deadline), "{c_reads_deadlines}");
        }
        assert_eq!(c.steps.load(Ordering::SeqCst), 20);
        // Nothing works on: later instants see no step.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(c.steps.load(Ordering::SeqCst), 20);
        assert_eq!(timer.pending(), 0);
    }
}

/// `timeout` inside the server layer's scope and the client layer's call
/// agree with `deadline::remaining`: the server layer is a scope as any.
#[tokio::test(start_paused = true)]
async fn a_handlers_own_timeouts_inherit_the_callers_deadline() {
    let timer = Timer::new();
    let svc = DeadlineLayer::new(timer, Duration::from_secs(5)).layer(service_fn(
        |_: Request<()>| async {
            let call = timeout(Duration::from_secs(1), pending::<()>()).await;
            let by = call.unwrap_err().ended_by();
            Ok::<_, Infallible>(Response::new(format!("{by:?}")))
        },
    ));
    let res = svc
        .oneshot(request(&[("grpc-timeout", "500m")]))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.body(), "Inherited");
}
