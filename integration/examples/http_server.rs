//! A hyper 1.x HTTP/1.1 keep-alive server with three timeouts, all on
//! hashwheel (or, with `--timer tokio`, all on `tokio::time`, to compare):
//!
//! - hyper's header-read timeout (`impl hyper::rt::Timer for Timer`);
//! - a per-connection idle timeout, reset on every read (keep it above the
//!   request timeout: it counts time without reads, even mid-request);
//! - a per-request deadline through the tower layer
//!   `hashwheel::tower::DeadlineLayer`: the request's own limit, or the
//!   deadline its client sends where that comes first, `grpc-timeout`
//!   (gRPC's format: up to 8 digits and a unit, `H`, `M`, `S`, `m`, `u` or
//!   `n`: `100m` is 100 ms, `5S` five seconds) or `x-request-deadline`
//!   (milliseconds). The handler runs in a deadline scope of it
//!   (`hashwheel::deadline`), so the timeouts it makes end by it at the
//!   latest; its downstream calls go through
//!   `hashwheel::tower::PropagateDeadlineLayer`, which writes the time left
//!   into them. A malformed deadline header is answered 400. (With
//!   `--timer tokio`: tower's `TimeoutLayer` for the limit and a
//!   `tokio::time::timeout` of the client's deadline around the handler,
//!   which its own timeouts know nothing of, and nothing sent downstream.)
//!
//! The header-read timeout bounds the time to receive a request's whole
//! head, however fast its bytes trickle in (hyper also runs it while a
//! keep-alive connection waits for its next request); the idle timeout
//! closes a connection that sends nothing for a while.
//!
//! Routes: `/` answers `hello`; `/sleep/MS` answers after MS milliseconds,
//! or 504 once the request's deadline passes; `/downstream/MS` calls a
//! "downstream service", this server's own `/sleep/MS` over a hyper-util
//! client, under a timeout of its own of 1 s, and says what ended it (its
//! answer, its own timeout, or the request's deadline: 504), with the time
//! left when it started, the `grpc-timeout` the downstream request
//! carried, and how long it took.
//!
//! ```sh
//! cargo run -p hashwheel-integration --example http_server                  # serve until Ctrl-C
//! cargo run -p hashwheel-integration --example http_server -- --demo        # try each timeout, then exit
//! cargo run -p hashwheel-integration --example http_server -- --timer tokio --run-for 10
//! ```
//!
//! Options: `--addr 127.0.0.1:8080`, `--timer hashwheel|tokio`,
//! `--header-timeout-ms 10000`, `--idle-timeout-ms 5000`,
//! `--request-timeout-ms 1000`, `--run-for SECS` (0: until Ctrl-C),
//! `--demo`. The server binds to loopback addresses only.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderName;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::util::BoxCloneService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

type Body = Full<Bytes>;
type Svc = BoxCloneService<Request<Incoming>, Response<Body>, BoxError>;

/// Which timer runs every timeout of the server.
#[derive(Clone)]
enum Clock {
    Wheel(hashwheel::Timer),
    Tokio,
}

impl Clock {
    fn name(&self) -> &'static str {
        match self {
            Clock::Wheel(_) => "hashwheel",
            Clock::Tokio => "tokio::time",
        }
    }

    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        match self {
            Clock::Wheel(timer) => Box::pin(timer.sleep(d)),
            Clock::Tokio => Box::pin(tokio::time::sleep(d)),
        }
    }

    /// `fut` under a timeout of `d`; `Err(true)` where the request's
    /// deadline (a scope's, inherited) ended it rather than `d`.
    async fn timeout<T>(&self, d: Duration, fut: impl Future<Output = T>) -> Result<T, bool> {
        match self {
            Clock::Wheel(timer) => timer.timeout(d, fut).await.map_err(|e| e.is_inherited()),
            Clock::Tokio => tokio::time::timeout(d, fut).await.map_err(|_| false),
        }
    }

    fn idle(&self, d: Duration) -> Idle {
        match self {
            Clock::Wheel(timer) => Idle::Wheel(timer.sleep(d)),
            Clock::Tokio => Idle::Tokio(Box::pin(tokio::time::sleep(d))),
        }
    }
}

/// An idle timeout: a hashwheel `Timeout` is `Unpin` and resets in place;
/// tokio's `Sleep` must be pinned (boxed) to be reset.
enum Idle {
    Wheel(hashwheel::Timeout),
    Tokio(Pin<Box<tokio::time::Sleep>>),
}

impl Idle {
    fn reset(&mut self, d: Duration) {
        match self {
            Idle::Wheel(t) => t.reset(d),
            Idle::Tokio(s) => s.as_mut().reset(tokio::time::Instant::now() + d),
        }
    }

    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            Idle::Wheel(t) => Pin::new(t).poll(cx),
            Idle::Tokio(s) => s.as_mut().poll(cx),
        }
    }
}

/// A connection whose reads reset its idle timeout; once the connection is
/// idle for too long, a read fails with `TimedOut` and hyper closes it.
struct IdleIo {
    io: TcpStream,
    idle: Idle,
    period: Duration,
    stats: Arc<Stats>,
}

impl AsyncRead for IdleIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(res) => {
                if buf.filled().len() > before {
                    this.idle.reset(this.period);
                }
                Poll::Ready(res)
            }
            Poll::Pending => match this.idle.poll_expired(cx) {
                Poll::Ready(()) => {
                    this.stats.closed_idle.fetch_add(1, Ordering::Relaxed);
                    Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "idle")))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for IdleIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[derive(Default)]
struct Stats {
    connections: AtomicU64,
    open: AtomicU64,
    closed_idle: AtomicU64,
    requests: AtomicU64,
    timed_out: AtomicU64,
}

impl Stats {
    fn line(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "connections {} (open {}, closed idle {}), requests {} (timed out {})",
            get(&self.connections),
            get(&self.open),
            get(&self.closed_idle),
            get(&self.requests),
            get(&self.timed_out),
        )
    }
}

#[derive(Clone)]
struct Config {
    addr: SocketAddr,
    clock: Clock,
    header_timeout: Duration,
    idle_timeout: Duration,
    request_timeout: Duration,
    run_for: Duration,
    demo: bool,
}

fn parse_args() -> Result<Config, String> {
    let ms = |v: String| -> Result<Duration, String> {
        v.parse()
            .map(Duration::from_millis)
            .map_err(|e| format!("{v}: {e}"))
    };
    let mut timer = "hashwheel".to_string();
    let mut addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let (mut header, mut idle, mut request) = (None, None, None);
    let mut run_for = Duration::ZERO;
    let mut demo = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--timer" => timer = value()?,
            "--addr" => addr = value()?.parse().map_err(|e| format!("--addr: {e}"))?,
            "--header-timeout-ms" => header = Some(ms(value()?)?),
            "--idle-timeout-ms" => idle = Some(ms(value()?)?),
            "--request-timeout-ms" => request = Some(ms(value()?)?),
            "--run-for" => {
                let secs: u64 = value()?.parse().map_err(|e| format!("--run-for: {e}"))?;
                run_for = Duration::from_secs(secs);
            }
            "--demo" => demo = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if let (Some(idle), Some(request)) = (idle, request) {
        if idle < request {
            eprintln!("warning: an idle timeout under the request timeout can close a connection mid-request");
        }
    }
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--addr {addr}: this example binds to loopback addresses only"
        ));
    }
    let clock = match timer.as_str() {
        "hashwheel" => Clock::Wheel(hashwheel::Timer::new()),
        "tokio" => Clock::Tokio,
        other => return Err(format!("--timer {other}: expected hashwheel or tokio")),
    };
    // The demo waits out each timeout, so it uses short ones.
    let (dh, di, dr) = if demo {
        (1000, 500, 300)
    } else {
        (10_000, 5000, 1000)
    };
    if demo && addr.port() == 8080 {
        addr.set_port(0);
    }
    Ok(Config {
        addr,
        clock,
        header_timeout: header.unwrap_or(Duration::from_millis(dh)),
        idle_timeout: idle.unwrap_or(Duration::from_millis(di)),
        request_timeout: request.unwrap_or(Duration::from_millis(dr)),
        run_for,
        demo,
    })
}

/// The header of milliseconds the server reads beside `grpc-timeout`.
const X_REQUEST_DEADLINE: &str = "x-request-deadline";

type Client = BoxCloneService<Request<Empty<Bytes>>, Response<Incoming>, BoxError>;

/// The "downstream service": this server's own `/sleep/MS`, over a
/// hyper-util client; with hashwheel through `PropagateDeadlineLayer`,
/// which writes the time left of the request's deadline into each call.
#[derive(Clone)]
struct Downstream {
    client: Client,
    addr: SocketAddr,
}

impl Downstream {
    fn new(clock: &Clock, addr: SocketAddr) -> Downstream {
        let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .build_http::<Empty<Bytes>>()
            .map_err(BoxError::from);
        let client = match clock {
            Clock::Wheel(timer) => BoxCloneService::new(
                ServiceBuilder::new()
                    .layer(hashwheel::tower::PropagateDeadlineLayer::new(timer.clone()))
                    .service(client),
            ),
            Clock::Tokio => BoxCloneService::new(client),
        };
        Downstream { client, addr }
    }

    /// `GET path`: the status, and the `grpc-timeout` it carried (what the
    /// downstream handler says it read).
    fn get(&self, path: &str) -> impl Future<Output = Result<(StatusCode, String), BoxError>> {
        let client = self.client.clone();
        let uri = format!("http://{}{path}", self.addr);
        async move {
            let req = Request::get(uri).body(Empty::new())?;
            let res = client.oneshot(req).await?;
            let sent = res.headers().get("x-grpc-timeout-read");
            let sent = sent.map_or("none", |v| v.to_str().unwrap_or("?"));
            Ok((res.status(), sent.to_string()))
        }
    }
}

/// The application: `/`, `/sleep/MS` and `/downstream/MS`.
async fn handle(
    clock: Clock,
    downstream: Downstream,
    req: Request<Incoming>,
) -> Result<Response<Body>, BoxError> {
    let path = req.uri().path();
    if let Some(ms) = path.strip_prefix("/downstream/") {
        let ms: u64 = ms.parse()?;
        // The downstream call's own timeout, as a client library sets it:
        // inside a deadline scope it ends by the request's deadline.
        let own = Duration::from_secs(1);
        let left = hashwheel::deadline::remaining();
        let start = tokio::time::Instant::now();
        let res = clock
            .timeout(own, downstream.get(&format!("/sleep/{ms}")))
            .await;
        let took = start.elapsed();
        let (status, what) = match res {
            Ok(Ok((StatusCode::OK, sent))) => (
                StatusCode::OK,
                format!("answered (sent grpc-timeout {sent})"),
            ),
            Ok(Ok((status, sent))) => (
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "it answered {status} (sent grpc-timeout {sent}): its deadline, ours, passed"
                ),
            ),
            // The client layer ends the call at the request's deadline
            // (an inherited `Elapsed`), or sends nothing with none left.
            Ok(Err(err)) => (
                StatusCode::GATEWAY_TIMEOUT,
                format!("the call ended at the request's deadline: {err}"),
            ),
            Err(true) => (
                StatusCode::GATEWAY_TIMEOUT,
                "cut to the time left: the request's deadline passed".to_string(),
            ),
            Err(false) => (
                StatusCode::GATEWAY_TIMEOUT,
                format!("its own {own:?} timeout passed"),
            ),
        };
        let left = left.map_or("none".to_string(), |l| format!("{l:.1?}"));
        let mut res = Response::new(Full::from(format!(
            "downstream: own timeout {own:?}, time left {left}, takes {ms} ms: {what} after {took:.1?}\n"
        )));
        *res.status_mut() = status;
        return Ok(res);
    }
    if let Some(ms) = path.strip_prefix("/sleep/") {
        let ms: u64 = ms.parse()?;
        // What deadline the request carried, for `/downstream/MS` to show.
        let read = req.headers().get("grpc-timeout").cloned();
        clock.sleep(Duration::from_millis(ms)).await;
        let mut res = Response::new(Full::from(format!("slept {ms} ms\n")));
        if let Some(read) = read {
            res.headers_mut().insert("x-grpc-timeout-read", read);
        }
        return Ok(res);
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"hello\n"))))
}

/// The application behind the per-request deadline of the clock: with
/// hashwheel, `DeadlineLayer` (the request timeout, or the client's
/// deadline where it comes first, a scope the handler's timeouts inherit;
/// a malformed deadline header answered 400); with tokio, tower's
/// `TimeoutLayer` and a `tokio::time::timeout` of the client's deadline.
fn service(config: &Config, downstream: Downstream) -> Svc {
    let clock = config.clock.clone();
    let app = tower::service_fn(move |req| handle(clock.clone(), downstream.clone(), req));
    match &config.clock {
        Clock::Wheel(timer) => ServiceBuilder::new()
            .layer(
                hashwheel::tower::DeadlineLayer::new(timer.clone(), config.request_timeout)
                    .millis_header(HeaderName::from_static(X_REQUEST_DEADLINE)),
            )
            .service(app)
            .boxed_clone(),
        Clock::Tokio => ServiceBuilder::new()
            .layer(tower::timeout::TimeoutLayer::new(config.request_timeout))
            .service(tower::service_fn(move |req: Request<Incoming>| {
                let app = app.clone();
                async move {
                    let Some(deadline) = tokio_deadline(&req) else {
                        return app.oneshot(req).await;
                    };
                    tokio::time::timeout(deadline, app.oneshot(req))
                        .await
                        .unwrap_or_else(|elapsed| Err(Box::new(elapsed)))
                }
            }))
            .boxed_clone(),
    }
}

/// With `--timer tokio`, the deadline a request carries, read with the
/// crate's parser (`DeadlineLayer` reads it so, and answers a malformed
/// one); none where it is malformed.
fn tokio_deadline<B>(req: &Request<B>) -> Option<Duration> {
    let grpc = req.headers().get("grpc-timeout");
    let grpc = grpc.and_then(|v| hashwheel::tower::parse_grpc_timeout(v).ok());
    let millis = req.headers().get(X_REQUEST_DEADLINE);
    let millis = millis.and_then(|v| v.to_str().ok()?.parse().ok());
    [grpc, millis.map(Duration::from_millis)]
        .into_iter()
        .flatten()
        .min()
}

/// The deadline layers answer late requests themselves (504, with the
/// deadline's `Elapsed` in the response's extensions); tower's
/// `TimeoutLayer` and `tokio::time::timeout` fail them with their own
/// `Elapsed`.
fn timed_out(err: &BoxError) -> bool {
    err.is::<tower::timeout::error::Elapsed>() || err.is::<tokio::time::error::Elapsed>()
}

async fn serve_connection(stream: TcpStream, config: Config, svc: Svc, stats: Arc<Stats>) {
    let _ = stream.set_nodelay(true);
    let io = IdleIo {
        io: stream,
        idle: config.clock.idle(config.idle_timeout),
        period: config.idle_timeout,
        stats: stats.clone(),
    };
    let per_request = {
        let stats = stats.clone();
        hyper::service::service_fn(move |req| {
            let (svc, stats) = (svc.clone(), stats.clone());
            async move {
                stats.requests.fetch_add(1, Ordering::Relaxed);
                match svc.oneshot(req).await {
                    Ok(res) => {
                        if let Some(elapsed) = res.extensions().get::<hashwheel::Elapsed>() {
                            // The request ran out (`EndedBy::Scope`).
                            debug_assert_eq!(elapsed.ended_by(), hashwheel::EndedBy::Scope);
                            stats.timed_out.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok::<_, Infallible>(res)
                    }
                    Err(err) => {
                        let status = if timed_out(&err) {
                            stats.timed_out.fetch_add(1, Ordering::Relaxed);
                            StatusCode::GATEWAY_TIMEOUT
                        } else {
                            StatusCode::BAD_REQUEST
                        };
                        let mut res = Response::new(Full::from(format!("{err}\n")));
                        *res.status_mut() = status;
                        Ok(res)
                    }
                }
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    match &config.clock {
        Clock::Wheel(timer) => builder.timer(timer.clone()),
        Clock::Tokio => builder.timer(TokioTimer::new()),
    };
    builder
        .header_read_timeout(config.header_timeout)
        .keep_alive(true);
    let _ = builder
        .serve_connection(TokioIo::new(io), per_request)
        .await;
}

async fn run_server(listener: TcpListener, config: Config, stats: Arc<Stats>) {
    let addr = listener.local_addr().expect("bound");
    let svc = service(&config, Downstream::new(&config.clock, addr));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of file descriptors and the like: back off a little.
                eprintln!("accept: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        stats.connections.fetch_add(1, Ordering::Relaxed);
        stats.open.fetch_add(1, Ordering::Relaxed);
        let (config, svc, stats) = (config.clone(), svc.clone(), stats.clone());
        tokio::spawn(async move {
            serve_connection(stream, config, svc, stats.clone()).await;
            stats.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// One GET on a fresh connection; the status, or why it failed.
async fn get(addr: SocketAddr, path: &str) -> Result<StatusCode, BoxError> {
    Ok(get_with(addr, path, None).await?.0)
}

/// One GET on a fresh connection with a header (a deadline); the status
/// and the body.
async fn get_with(
    addr: SocketAddr,
    path: &str,
    header: Option<(&str, &str)>,
) -> Result<(StatusCode, String), BoxError> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut req = Request::get(path).header("host", addr.to_string());
    if let Some((name, value)) = header {
        req = req.header(name, value);
    }
    let res = sender
        .send_request(req.body(Empty::<Bytes>::new())?)
        .await?;
    let status = res.status();
    let body = res.into_body().collect().await?.to_bytes();
    Ok((
        status,
        String::from_utf8_lossy(&body).trim_end().to_string(),
    ))
}

/// Tries each timeout against the running server.
async fn demo(addr: SocketAddr, config: &Config) -> Result<(), BoxError> {
    let t = tokio::time::Instant::now;
    let start = t();
    println!("GET /            -> {}", get(addr, "/").await?);
    println!("GET /sleep/100   -> {}", get(addr, "/sleep/100").await?);
    let slow = format!("/sleep/{}", config.request_timeout.as_millis() * 3);
    println!(
        "GET {slow:<12} -> {} (request timeout)",
        get(addr, &slow).await?
    );

    // Deadlines the client sends: the handler runs in a deadline scope,
    // and its downstream call's own 1 s timeout is cut to the time left.
    // A malformed deadline is answered 400 (hashwheel's DeadlineLayer).
    for (path, header) in [
        ("/downstream/50", ("x-request-deadline", "200")),
        ("/downstream/2000", ("grpc-timeout", "100m")),
        ("/downstream/2000", ("grpc-timeout", "5S")),
        ("/sleep/2000", ("grpc-timeout", "150m")),
        ("/sleep/10", ("grpc-timeout", "100ms")),
    ] {
        let at = t();
        let (status, mut body) = get_with(addr, path, Some(header)).await?;
        if body.is_empty() {
            body = "(the deadline layer's answer)".to_string();
        }
        println!(
            "GET {path:<16} {:<31} -> {status} after {:.0?}: {body}",
            format!("{}: {}", header.0, header.1),
            at.elapsed()
        );
    }

    // Headers trickling in a byte at a time (slowloris): each byte resets
    // the idle timeout, but hyper's header-read timeout closes it.
    let stream = TcpStream::connect(addr).await?;
    let (mut rd, mut wr) = stream.into_split();
    let at = t();
    let trickle = async {
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaa\r\n" {
            if wr.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(config.idle_timeout / 3).await;
        }
    };
    let closed = async {
        let mut buf = Vec::new();
        let _ = rd.read_to_end(&mut buf).await;
    };
    tokio::select! {
        _ = closed => println!("slow headers     -> closed after {:?} (header timeout)", at.elapsed()),
        _ = trickle => println!("slow headers     -> sent them all: not closed!"),
    }

    // Headers that stop coming: the idle timeout closes it first.
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(b"GET / HTTP/1.1\r\n").await?;
    let at = t();
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf).await;
    println!(
        "stalled headers  -> closed after {:?} (idle timeout)",
        at.elapsed()
    );

    // A keep-alive connection that goes quiet: the idle timeout closes it.
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let conn = tokio::spawn(conn);
    let req = Request::get("/")
        .header("host", "x")
        .body(Empty::<Bytes>::new())?;
    sender
        .send_request(req)
        .await?
        .into_body()
        .collect()
        .await?;
    let at = t();
    let _ = conn.await;
    println!(
        "idle keep-alive  -> closed after {:?} (idle timeout)",
        at.elapsed()
    );
    println!("demo took {:?}", start.elapsed());
    Ok(())
}

#[tokio::main]
async fn main() {
    let config = match parse_args() {
        Ok(config) => config,
        Err(err) => {
            if !err.is_empty() {
                eprintln!("error: {err}");
            }
            eprintln!(
                "usage: http_server [--timer hashwheel|tokio] [--addr 127.0.0.1:8080] \
                 [--header-timeout-ms N] [--idle-timeout-ms N] [--request-timeout-ms N] \
                 [--run-for SECS] [--demo]"
            );
            std::process::exit(2);
        }
    };
    let listener = match TcpListener::bind(config.addr).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("error: bind {}: {err}", config.addr);
            std::process::exit(1);
        }
    };
    let addr = listener.local_addr().expect("bound");
    let stats = Arc::new(Stats::default());
    println!(
        "http_server on http://{addr} with {} timers: header read {:?}, idle {:?}, request {:?}",
        config.clock.name(),
        config.header_timeout,
        config.idle_timeout,
        config.request_timeout,
    );
    tokio::spawn(run_server(listener, config.clone(), stats.clone()));

    if config.demo {
        if let Err(err) = demo(addr, &config).await {
            eprintln!("demo failed: {err}");
            std::process::exit(1);
        }
    } else {
        println!("try: curl http://{addr}/  and  curl http://{addr}/sleep/2000");
        let stop = async {
            if config.run_for.is_zero() {
                std::future::pending::<()>().await
            } else {
                tokio::time::sleep(config.run_for).await
            }
        };
        tokio::select! {
            _ = stop => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    println!("{}", stats.line());
}
