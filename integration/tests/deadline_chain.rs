//! A request's deadline across three services on loopback (issue 57), each
//! a real server with a timer of its own: A and B hyper HTTP/1.1 servers,
//! C a tonic gRPC server (the health service, whose generated code ships
//! in tonic-health). The first caller runs its call in a 200 ms deadline
//! scope and gives up at its end; A calls B through hyper-util's `Client`,
//! B calls C through tonic's `Channel`, and C is slow (it works in 10 ms
//! steps for seconds).
//!
//! With the layers (`DeadlineLayer` on each server, `PropagateDeadlineLayer`
//! on each client) every service's deadline is no later than its caller's,
//! B's call to C ends at the first caller's deadline with an inherited
//! `Elapsed`, and every handler is dropped then: nothing works on after
//! the first caller gave up. On paused time all of it is exact: each
//! deadline is the first caller's, and each handler ends at that instant,
//! never before it. On the real clock (50 requests at once, on two
//! workers) the test asserts only what no load can break: the ordering
//! of the deadlines, that no handler ends before its own deadline, that C
//! never runs its work to its end; the figures (how long each service
//! worked on after the first caller gave up, with the layers and without
//! them) are printed (`--nocapture`), not judged.

use std::collections::HashMap;
use std::convert::Infallible;
use std::error::Error as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::util::{option_layer, BoxCloneService};
use tower::{BoxError, Layer, ServiceBuilder, ServiceExt};

use hashwheel::tower::{parse_grpc_timeout, DeadlineLayer, PropagateDeadlineLayer};
use hashwheel::{deadline, Elapsed, Timer};

/// The first caller's deadline.
const DEADLINE: Duration = Duration::from_millis(200);
/// One step of C's work.
const STEP: Duration = Duration::from_millis(10);
/// The servers' own limit, far above the caller's deadline.
const LIMIT: Duration = Duration::from_secs(30);
/// The first id of the requests that open the chain's connections before
/// the measured ones (C answers them at once).
const WARM: u64 = 1_000_000;

/// The clock of every timer here: tokio's (paused time's, in the paused
/// tests), as a std `Instant`, as the scopes give theirs.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Hop {
    /// The first caller.
    Caller,
    A,
    B,
    C,
}

/// The services, in the order of the calls.
const SERVICES: [Hop; 3] = [Hop::A, Hop::B, Hop::C];

/// What one service saw and did for one request.
#[derive(Clone, Debug, Default)]
struct Record {
    /// Its deadline scope's deadline, where it ran in one (the first
    /// caller's: when it gave up).
    deadline: Option<Instant>,
    /// When its handler began, inside its scope.
    began: Option<Instant>,
    /// When it made its call downstream.
    called: Option<Instant>,
    /// The `grpc-timeout` its request carried.
    sent: Option<Duration>,
    /// When its handler ended: dropped, or done.
    ended: Option<Instant>,
    /// Whether it ran its work to its end.
    finished: bool,
    /// C: its steps of work, when each was done.
    steps: Vec<Instant>,
    /// A and B: how their call downstream ended, where it failed.
    call: Option<String>,
}

/// Every service's records, by request.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<HashMap<(Hop, u64), Record>>>);

impl Log {
    fn with<T>(&self, hop: Hop, id: u64, f: impl FnOnce(&mut Record) -> T) -> T {
        f(self.0.lock().unwrap().entry((hop, id)).or_default())
    }

    fn get(&self, hop: Hop, id: u64) -> Record {
        self.0
            .lock()
            .unwrap()
            .get(&(hop, id))
            .cloned()
            .unwrap_or_default()
    }

    /// A handler has begun: its deadline and what its request carried.
    fn begin(&self, hop: Hop, id: u64, sent: Option<&HeaderValue>) -> Ended {
        let began = now();
        self.with(hop, id, |r| {
            r.deadline = deadline::current().map(|d| d.instant());
            r.sent = sent.and_then(|v| parse_grpc_timeout(v).ok());
            r.began = Some(began);
        });
        Ended {
            log: self.clone(),
            hop,
            id,
        }
    }
}

/// Notes when the handler holding it ends.
struct Ended {
    log: Log,
    hop: Hop,
    id: u64,
}

impl Drop for Ended {
    fn drop(&mut self) {
        let at = now();
        self.log.with(self.hop, self.id, |r| r.ended = Some(at));
    }
}

/// C: a health service whose check works in 10 ms steps for `work`, the
/// request's id in its `service` field.
struct SlowHealth {
    log: Log,
    work: Duration,
}

#[tonic::async_trait]
impl Health for SlowHealth {
    async fn check(
        &self,
        request: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<HealthCheckResponse>, tonic::Status> {
        let id: u64 = request.get_ref().service.parse().unwrap();
        if id >= WARM {
            return Ok(tonic::Response::new(HealthCheckResponse {
                status: ServingStatus::Serving.into(),
            }));
        }
        let sent = request
            .metadata()
            .get("grpc-timeout")
            .map(|v| HeaderValue::from_bytes(v.as_bytes()).unwrap());
        let _ended = self.log.begin(Hop::C, id, sent.as_ref());
        let end = now() + self.work;
        while now() < end {
            tokio::time::sleep(STEP).await;
            let at = now();
            self.log.with(Hop::C, id, |r| r.steps.push(at));
        }
        self.log.with(Hop::C, id, |r| r.finished = true);
        Ok(tonic::Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    type WatchStream =
        tonic::codegen::tokio_stream::Empty<Result<HealthCheckResponse, tonic::Status>>;

    async fn watch(
        &self,
        _: tonic::Request<HealthCheckRequest>,
    ) -> Result<tonic::Response<Self::WatchStream>, tonic::Status> {
        Ok(tonic::Response::new(tonic::codegen::tokio_stream::empty()))
    }
}

type HttpService = BoxCloneService<Request<Incoming>, Response<Full<Bytes>>, Infallible>;

/// `svc` behind the server layer on `timer`, or alone.
fn with_server_layer<S>(layers: bool, timer: &Timer, svc: S) -> HttpService
where
    S: tower::Service<Request<Incoming>, Response = Response<Full<Bytes>>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    match server_layer(layers, timer) {
        Some(layer) => BoxCloneService::new(layer.layer(svc)),
        None => BoxCloneService::new(svc),
    }
}

/// A hyper HTTP/1.1 server of `svc` on a free loopback port.
async fn serve_http(svc: HttpService) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let svc = TowerToHyperService::new(svc.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// A service's own timer, with the default shards: a call's timeout
/// clipped to the request's scope and the scope's own deadline may fire
/// from two shards in either order, and the handler sees its call's error
/// all the same (the scope's last poll, see "At the deadline" in
/// `hashwheel::deadline`).
fn timer() -> Timer {
    Timer::new()
}

/// The server layer of a service, or none.
fn server_layer(layers: bool, timer: &Timer) -> Option<DeadlineLayer> {
    layers.then(|| DeadlineLayer::new(timer.clone(), LIMIT))
}

/// The chain, with or without the layers: C, B and A, each on its own
/// timer; A's address.
async fn chain(layers: bool, log: &Log, work: Duration) -> SocketAddr {
    // C: tonic, the health service.
    let timer_c = timer();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c_addr = listener.local_addr().unwrap();
    let health = HealthServer::new(SlowHealth {
        log: log.clone(),
        work,
    });
    tokio::spawn(
        Server::builder()
            .layer(option_layer(server_layer(layers, &timer_c)))
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );

    // B: hyper, calling C through tonic's Channel.
    let timer_b = timer();
    let channel = Channel::from_shared(format!("http://{c_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let to_c = ServiceBuilder::new()
        // tonic's `Status`, which keeps the error as its source (a boxed
        // error type here trips the compiler's proof that the handler's
        // future is `Send`).
        .map_err(tonic::Status::from_error)
        .layer(option_layer(
            layers.then(|| PropagateDeadlineLayer::new(timer_b.clone())),
        ))
        .map_err(Into::<BoxError>::into)
        .service(channel);
    let to_c = HealthClient::new(BoxCloneService::new(to_c));
    let b_log = log.clone();
    let b = tower::service_fn(move |req: Request<Incoming>| {
        let (log, mut to_c) = (b_log.clone(), to_c.clone());
        let id = request_id(&req);
        let ended = log.begin(Hop::B, id, req.headers().get("grpc-timeout"));
        async move {
            let _ended = ended;
            let check = HealthCheckRequest {
                service: id.to_string(),
            };
            let called = now();
            log.with(Hop::B, id, |r| r.called = Some(called));
            let status = match to_c.check(check).await {
                Ok(_) => StatusCode::OK,
                Err(status) => {
                    let by = status
                        .source()
                        .and_then(|e| e.downcast_ref::<Elapsed>())
                        .map(Elapsed::ended_by);
                    let call = match by {
                        Some(by) => format!("{by:?}"),
                        None => format!("{:?}", status.code()),
                    };
                    log.with(Hop::B, id, |r| r.call = Some(call));
                    StatusCode::GATEWAY_TIMEOUT
                }
            };
            log.with(Hop::B, id, |r| r.finished = true);
            let mut res = Response::new(Full::default());
            *res.status_mut() = status;
            Ok::<_, Infallible>(res)
        }
    });
    let b_addr = serve_http(with_server_layer(layers, &timer_b, b)).await;

    // A: hyper, calling B through hyper-util's Client.
    let timer_a = timer();
    let to_b = http_client(layers.then(|| timer_a.clone()));
    let a_log = log.clone();
    let a = tower::service_fn(move |req: Request<Incoming>| {
        let (log, to_b) = (a_log.clone(), to_b.clone());
        let id = request_id(&req);
        let ended = log.begin(Hop::A, id, req.headers().get("grpc-timeout"));
        async move {
            let _ended = ended;
            let req = Request::get(format!("http://{b_addr}/{id}"))
                .body(Empty::new())
                .unwrap();
            let called = now();
            log.with(Hop::A, id, |r| r.called = Some(called));
            let status = match to_b.oneshot(req).await {
                Ok(res) => {
                    if res.status() != StatusCode::OK {
                        let call = res.status().as_str().to_string();
                        log.with(Hop::A, id, |r| r.call = Some(call));
                    }
                    res.status()
                }
                Err(err) => {
                    let call = match err.downcast_ref::<Elapsed>() {
                        Some(elapsed) => format!("{:?}", elapsed.ended_by()),
                        None => err.to_string(),
                    };
                    log.with(Hop::A, id, |r| r.call = Some(call));
                    StatusCode::GATEWAY_TIMEOUT
                }
            };
            log.with(Hop::A, id, |r| r.finished = true);
            let mut res = Response::new(Full::default());
            *res.status_mut() = status;
            Ok::<_, Infallible>(res)
        }
    });
    serve_http(with_server_layer(layers, &timer_a, a)).await
}

type HttpClient = BoxCloneService<Request<Empty<Bytes>>, Response<Incoming>, BoxError>;

/// hyper-util's client, through the client layer on `timer` where given.
fn http_client(timer: Option<Timer>) -> HttpClient {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(option_layer(timer.map(PropagateDeadlineLayer::new)))
        .map_err(Into::<BoxError>::into)
        .service(client);
    BoxCloneService::new(svc)
}

fn request_id<B>(req: &Request<B>) -> u64 {
    req.uri().path().trim_start_matches('/').parse().unwrap()
}

/// How the first caller gives up at its 200 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// It runs its call in a deadline scope, through the client layer, and
    /// drops it at the scope's end: its connection to A closes.
    Drops,
    /// It sends `grpc-timeout: 200m` and no longer needs the answer after
    /// 200 ms, but leaves its call running to its end (a proxy that has
    /// answered its own client, a client that keeps its connection).
    WalksAway,
}

/// The first caller's requests to A, all at once: the deadline each gave
/// up at, in the log.
async fn call_all(log: &Log, a: SocketAddr, requests: u64, caller: Caller) {
    let timer = timer();
    let client = http_client(Some(timer.clone()));
    // Opens the connections the requests will take (a connection opened
    // after a call's time left was written into it delays the call).
    let warm = (WARM..WARM + requests).map(|id| {
        let req = Request::get(format!("http://{a}/{id}"))
            .body(Empty::new())
            .unwrap();
        tokio::spawn(client.clone().oneshot(req))
    });
    for call in warm.collect::<Vec<_>>() {
        let res = call.await.unwrap().expect("the chain answers");
        assert_eq!(res.status(), StatusCode::OK);
    }
    let mut calls = Vec::new();
    for id in 0..requests {
        let client = client.clone();
        let mut req = Request::get(format!("http://{a}/{id}"))
            .body(Empty::new())
            .unwrap();
        let log = log.clone();
        calls.push(match caller {
            Caller::Drops => {
                let in_scope = log.clone();
                let call = timer.scope(DEADLINE, async move {
                    let called = now();
                    in_scope.with(Hop::Caller, id, |r| r.called = Some(called));
                    let res = client.oneshot(req).await?;
                    res.into_body().collect().await?;
                    Ok::<_, BoxError>(())
                });
                let gave_up = call.deadline();
                tokio::spawn(async move {
                    log.with(Hop::Caller, id, |r| r.deadline = Some(gave_up));
                    // Its deadline ends it at the latest.
                    let _ = call.await;
                })
            }
            Caller::WalksAway => {
                req.headers_mut()
                    .insert("grpc-timeout", HeaderValue::from_static("200m"));
                tokio::spawn(async move {
                    let called = now();
                    log.with(Hop::Caller, id, |r| {
                        r.called = Some(called);
                        r.deadline = Some(called + DEADLINE);
                    });
                    if let Ok(res) = client.oneshot(req).await {
                        let _ = res.into_body().collect().await;
                    }
                })
            }
        });
    }
    for call in calls {
        call.await.unwrap();
    }
}

/// How long each service worked on after the first caller gave up, over
/// the requests that reached it: the median and the longest, in ms; and
/// C's steps of work done after.
fn after_giving_up(log: &Log, requests: u64) -> String {
    let gave_up = |id| log.get(Hop::Caller, id).deadline.expect("called");
    let mut line = String::new();
    for hop in SERVICES {
        let mut after: Vec<f64> = (0..requests)
            .filter_map(|id| {
                let ended = log.get(hop, id).ended?;
                Some(ended.saturating_duration_since(gave_up(id)).as_secs_f64() * 1e3)
            })
            .collect();
        after.sort_by(f64::total_cmp);
        let reached = after.len();
        if let (Some(p50), Some(max)) = (after.get(reached / 2), after.last()) {
            line += &format!("{hop:?} ({reached} reached) p50 {p50:.1} ms, max {max:.1} ms");
        }
        // Its deadline against the first caller's: later by the time the
        // calls took to reach it.
        let mut later: Vec<f64> = (0..requests)
            .filter_map(|id| {
                let own = log.get(hop, id).deadline?;
                let by = own.saturating_duration_since(gave_up(id));
                Some(by.as_secs_f64() * 1e3)
            })
            .collect();
        later.sort_by(f64::total_cmp);
        if let (Some(p50), Some(max)) = (later.get(later.len() / 2), later.last()) {
            line += &format!(" (its deadline later by p50 {p50:.2} ms, max {max:.2} ms)");
        }
        line += "; ";
    }
    let steps: usize = (0..requests)
        .map(|id| {
            let at = gave_up(id);
            log.get(Hop::C, id)
                .steps
                .iter()
                .filter(|&&s| s > at)
                .count()
        })
        .sum();
    line + &format!(
        "C's steps after: {steps} ({:.1} a request)",
        steps as f64 / requests as f64
    )
}

/// Waits until every handler that began has ended (on the real clock a
/// call cut short before it reached a service never begins there); on
/// paused time, every handler.
async fn all_ended(log: &Log, requests: u64) {
    for _ in 0..10_000 {
        let done = (0..requests).all(|id| {
            SERVICES.iter().all(|&hop| {
                let r = log.get(hop, id);
                r.ended.is_some() || r.began.is_none()
            })
        });
        if done {
            return;
        }
        tokio::time::sleep(STEP).await;
    }
    panic!("handlers still running");
}

/// Runs the chain, with the layers or without, for `requests` requests of
/// `caller` at once; C works for `work` unless stopped. The log, once
/// every handler that began has ended.
async fn run(layers: bool, caller: Caller, requests: u64, work: Duration) -> Log {
    let log = Log::default();
    let a = chain(layers, &log, work).await;
    call_all(&log, a, requests, caller).await;
    all_ended(&log, requests).await;
    log
}

/// On paused time, with the layers, whichever way the first caller gives
/// up: every service's deadline is the first caller's, and every handler
/// ends at that instant, never before; C's last step is at it, and none
/// comes after. B's call to C ends then too: with an inherited `Elapsed`
/// where B's handler sees its own deadline first, or with C's answer to
/// the same deadline where that came in first in the same instant
/// (`CANCELLED` from tonic's own `grpc-timeout`, `DEADLINE_EXCEEDED` from
/// C's layer); A's call to B likewise (an inherited `Elapsed`, or B's 504).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn on_paused_time_the_chain_stops_at_the_first_callers_deadline() {
    for caller in [Caller::Drops, Caller::WalksAway] {
        let requests = 10;
        let log = run(true, caller, requests, Duration::from_secs(60)).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut calls: HashMap<(Hop, String), usize> = HashMap::new();
        for id in 0..requests {
            let at = log.get(Hop::Caller, id).deadline.unwrap();
            for hop in SERVICES {
                let r = log.get(hop, id);
                let what = format!("{caller:?}: {hop:?} {id}");
                assert_eq!(r.deadline, Some(at), "{what}: the first caller's deadline");
                assert_eq!(r.sent, Some(DEADLINE), "{what}: sent the time left");
                assert_eq!(r.ended, Some(at), "{what}: ended at it");
                if hop != Hop::C {
                    let call = r.call.expect("the call ended short");
                    *calls.entry((hop, call)).or_default() += 1;
                }
            }
            let c = log.get(Hop::C, id);
            assert!(!c.finished, "{id}: C ran its work to its end");
            assert_eq!(c.steps.len(), 20, "{id}: 200 ms of 10 ms steps");
            assert_eq!(c.steps.last(), Some(&at));
        }
        for (hop, call) in calls.keys() {
            let by_the_deadline = match hop {
                Hop::A => ["Inherited", "504"].contains(&call.as_str()),
                _ => ["Inherited", "Cancelled", "DeadlineExceeded"].contains(&call.as_str()),
            };
            assert!(by_the_deadline, "{hop:?}'s call ended with {call}");
        }
        println!(
            "with the layers, paused, the caller {caller:?}: {}; calls ended: {calls:?}",
            after_giving_up(&log, requests)
        );
    }
}

/// The same chain without the layers, on paused time: no deadline is sent
/// past A and no service runs in a scope. A first caller that drops its
/// call stops the chain all the same, as its connection closes (hyper
/// sees its HTTP/1 connection end mid-request, tonic its HTTP/2 stream
/// reset); one that walks away leaves C working for its whole 2 s.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn on_paused_time_without_the_layers_the_chain_works_on_for_a_caller_that_walks_away() {
    let work = Duration::from_secs(2);
    for caller in [Caller::Drops, Caller::WalksAway] {
        let requests = 10;
        let log = run(false, caller, requests, work).await;
        for id in 0..requests {
            // The first caller sends its deadline to A, which reads none.
            assert_eq!(log.get(Hop::A, id).sent, Some(DEADLINE));
            for hop in SERVICES {
                let r = log.get(hop, id);
                assert_eq!(r.deadline, None, "{hop:?} {id}: no scope");
                if hop != Hop::A {
                    assert_eq!(r.sent, None, "{hop:?} {id}: no deadline sent");
                }
            }
            let at = log.get(Hop::Caller, id).deadline.unwrap();
            let c = log.get(Hop::C, id);
            if caller == Caller::WalksAway {
                assert!(c.finished, "{id}: C ran its work to its end");
                assert_eq!(c.ended, Some(at - DEADLINE + work));
            } else {
                assert_eq!(c.ended, Some(at), "{id}: stopped by the closed connections");
            }
        }
        println!(
            "without the layers, paused, the caller {caller:?}: {}",
            after_giving_up(&log, requests)
        );
    }
}

/// On the real clock, 50 requests at once on two workers, with the layers,
/// for each way the first caller gives up; then without the layers. What
/// no load can break is asserted: each service is sent no more than the
/// time its caller had left (so its deadline is its caller's at the
/// latest, but for the time the call took to reach it), no handler is
/// dropped before the earliest deadline of the chain up to it, and C
/// never runs its 60 s of work to its end. The figures are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_real_clock_the_chain_stops_with_the_layers() {
    let requests = 50;
    for caller in [Caller::Drops, Caller::WalksAway] {
        let log = run(true, caller, requests, Duration::from_secs(60)).await;
        for id in 0..requests {
            let mut up = log.get(Hop::Caller, id);
            let mut earliest = up.deadline.unwrap();
            for hop in SERVICES {
                let r = log.get(hop, id);
                let what = format!("{caller:?}: {hop:?} {id}");
                let (Some(began), Some(ended)) = (r.began, r.ended) else {
                    // Cut short before it reached this service (or on its
                    // way still): nothing further down began either.
                    break;
                };
                let own = r.deadline.expect("in a scope");
                let called = up.called.expect("a call made");
                // Its scope began after the call was made, with no more
                // than the caller had left then (the scope's deadline is
                // rounded up to the microsecond).
                let left = up.deadline.unwrap().saturating_duration_since(called);
                assert!(
                    r.sent.unwrap() <= left,
                    "{what}: sent more than its caller had left"
                );
                assert!(
                    own <= up.deadline.unwrap() + (began - called) + Duration::from_micros(1),
                    "{what}: a deadline later than its caller's but for the transit"
                );
                // Never early: a handler ends at its own deadline, or
                // when its caller's call ends (at the caller's, or
                // further up), or when it is done. (tonic ends C's by
                // the `grpc-timeout` it was sent too, from the instant it
                // read it: no earlier than B's deadline less the
                // microsecond `encode_grpc_timeout` may round off.)
                earliest = earliest.min(own);
                if !r.finished {
                    let slack = Duration::from_micros(1);
                    assert!(
                        ended + slack >= earliest,
                        "{what}: dropped before any deadline"
                    );
                }
                up = r;
            }
            assert!(
                !log.get(Hop::C, id).finished,
                "{id}: C ran its work to its end"
            );
            if let Some(call) = log.get(Hop::B, id).call {
                // B's own deadline, or C's answer to the same deadline.
                let ok = ["Inherited", "Cancelled", "DeadlineExceeded"].contains(&call.as_str());
                assert!(ok, "{id}: B's call ended with {call}");
            }
        }
        println!(
            "with the layers, real clock, the caller {caller:?}: {}",
            after_giving_up(&log, requests)
        );
    }
    for caller in [Caller::Drops, Caller::WalksAway] {
        let log = run(false, caller, requests, Duration::from_secs(2)).await;
        println!(
            "without the layers, real clock, the caller {caller:?}: {}",
            after_giving_up(&log, requests)
        );
    }
}
