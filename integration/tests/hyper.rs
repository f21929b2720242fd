//! `impl hyper::rt::Timer for Timer`: a real hyper 1.x server and client on
//! loopback, with hyper's header-read timeout on the wheel, under paused
//! time. In the workspace member `hashwheel-integration`, which turns on the
//! features `hyper`, `tower` and `metrics` (hyper's server and client stay
//! out of the crate's own dev-dependencies, and so out of its examples'
//! builds).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use common::{advance, MS};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::rt::{Sleep, Timer as _};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

use hashwheel::Timer;

const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"hello"))))
}

/// A hyper HTTP/1.1 server on 127.0.0.1 whose timers are `timer`'s.
async fn serve(timer: Timer) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let timer = timer.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(timer)
                    .header_read_timeout(HEADER_TIMEOUT)
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello))
                    .await;
            });
        }
    });
    addr
}

#[tokio::test(start_paused = true)]
async fn header_read_timeout_closes_a_slow_connection() {
    let timer = Timer::new();
    let addr = serve(timer.clone()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let start = Instant::now();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut buf))
        .await
        .expect("the server closes the connection");
    // Closed (EOF or reset), without an answer, at the header deadline.
    assert!(read.is_err() || buf.is_empty() || buf.starts_with(b"HTTP/1.1 408"));
    let waited = start.elapsed();
    assert!(waited >= HEADER_TIMEOUT, "closed early, after {waited:?}");
    assert!(
        waited < HEADER_TIMEOUT + Duration::from_secs(1),
        "closed late, after {waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn keep_alive_requests_outlive_the_header_timeout() {
    let timer = Timer::new();
    let addr = serve(timer.clone()).await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    // Three requests on one connection, 3 s apart: 9 s in all, past the
    // 5 s header timeout, which hyper starts afresh for each request.
    for _ in 0..3 {
        sender.ready().await.unwrap();
        let req = Request::get("/")
            .header("host", "127.0.0.1")
            .body(Empty::new())
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        assert_eq!(res.status(), 200);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"hello");
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn sleep_and_sleep_until_complete_at_their_deadlines() {
    let timer = Timer::new();
    let mut s = task::spawn(hsleep(&timer, Duration::from_millis(10)));
    let std_deadline = timer.now() + Duration::from_millis(20);
    let mut u = task::spawn(hsleep_until(&timer, std_deadline));
    assert_pending!(s.poll());
    assert_pending!(u.poll());
    advance(Duration::from_millis(10)).await;
    assert_ready!(s.poll());
    assert_pending!(u.poll());
    advance(Duration::from_millis(10)).await;
    assert_ready!(u.poll());
}

#[tokio::test(start_paused = true)]
async fn now_follows_paused_time() {
    let timer = Timer::new();
    let before = timer.now();
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(timer.now() - before, Duration::from_secs(3600));
}

/// hyper's `sleep`, not the inherent `Timer::sleep`.
fn hsleep(timer: &Timer, d: Duration) -> Pin<Box<dyn Sleep>> {
    hyper::rt::Timer::sleep(timer, d)
}

fn hsleep_until(timer: &Timer, deadline: std::time::Instant) -> Pin<Box<dyn Sleep>> {
    hyper::rt::Timer::sleep_until(timer, deadline)
}

fn addr_of(sleep: &Pin<Box<dyn Sleep>>) -> *const () {
    &**sleep as *const dyn Sleep as *const ()
}

#[tokio::test(start_paused = true)]
async fn reset_moves_the_sleep_in_place() {
    let timer = Timer::new();
    let mut sleep = hsleep(&timer, Duration::from_millis(10));
    let before = addr_of(&sleep);
    let mut t = task::spawn(());
    assert_pending!(t.enter(|cx, _| sleep.as_mut().poll(cx)));
    timer.reset(&mut sleep, timer.now() + Duration::from_millis(30));
    assert_eq!(
        addr_of(&sleep),
        before,
        "reset reuses the sleep, no new box"
    );
    assert_eq!(timer.pending(), 1);
    advance(Duration::from_millis(29)).await;
    assert_pending!(t.enter(|cx, _| sleep.as_mut().poll(cx)));
    advance(MS).await;
    assert!(t.is_woken());
    assert!(t.enter(|cx, _| sleep.as_mut().poll(cx)).is_ready());
    // A completed sleep can be reset and awaited again.
    timer.reset(&mut sleep, timer.now() + Duration::from_millis(5));
    assert_eq!(addr_of(&sleep), before);
    assert_pending!(t.enter(|cx, _| sleep.as_mut().poll(cx)));
    advance(Duration::from_millis(5)).await;
    assert!(t.enter(|cx, _| sleep.as_mut().poll(cx)).is_ready());
}

#[tokio::test(start_paused = true)]
async fn foreign_sleeps_are_replaced_on_reset() {
    let timer = Timer::new();
    let tokio_timer = hyper_util::rt::TokioTimer::new();
    let mut sleep = tokio_timer.sleep(Duration::from_secs(1));
    timer.reset(&mut sleep, timer.now() + Duration::from_millis(5));
    assert_eq!(timer.pending(), 1, "now one of ours");
    sleep.await;
}

#[tokio::test(start_paused = true)]
async fn a_stopped_timer_fails_closed() {
    let timer = Timer::new();
    timer.stop();
    let start = Instant::now();
    hsleep(&timer, Duration::from_secs(60)).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    let mut sleep = hsleep_until(&timer, timer.now() + Duration::from_secs(60));
    timer.reset(&mut sleep, timer.now() + Duration::from_secs(60));
    sleep.await;
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn at_capacity_sleeps_complete_at_once() {
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _held = timer.sleep(Duration::from_secs(60));
    let start = Instant::now();
    hsleep(&timer, Duration::from_secs(60)).await;
    assert!(start.elapsed() < Duration::from_secs(1));
}
