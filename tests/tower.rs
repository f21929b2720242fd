//! The tower `TimeoutLayer`: passes responses and errors through, fails
//! late requests with tower's own `Elapsed` inside a `BoxError`, never
//! early. Needs the `tower` feature (`required-features` in Cargo.toml).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use common::{advance, MS};
use hashwheel::tower::{Timeout, TimeoutLayer};
use hashwheel::Timer;
use tokio_test::task;
use tokio_test::{assert_pending, assert_ready, assert_ready_ok};
use tower::timeout::error::Elapsed;
use tower::{service_fn, BoxError, Layer, Service, ServiceBuilder, ServiceExt};

fn sleepy(timer: &Timer) -> impl Service<u64, Response = u64, Error = BoxError> + Clone {
    let timer = timer.clone();
    service_fn(move |ms: u64| {
        let nap = timer.sleep(Duration::from_millis(ms));
        async move {
            nap.await;
            Ok::<_, BoxError>(ms)
        }
    })
}

#[test]
fn types_are_send_sync_and_debug() {
    fn assert<T: Send + Sync + std::fmt::Debug>() {}
    assert::<TimeoutLayer>();
    assert::<Timeout<()>>();
}

#[tokio::test(start_paused = true)]
async fn fast_response_passes_through() {
    let timer = Timer::new();
    let svc = TimeoutLayer::new(timer.clone(), Duration::from_secs(1)).layer(sleepy(&timer));
    assert_eq!(svc.oneshot(10).await.unwrap(), 10);
    assert_eq!(
        timer.pending(),
        0,
        "the deadline is cancelled with the future"
    );
}

#[tokio::test(start_paused = true)]
async fn late_response_fails_with_elapsed_at_the_deadline() {
    let timer = Timer::new();
    let mut svc =
        TimeoutLayer::new(timer.clone(), Duration::from_millis(100)).layer(sleepy(&timer));
    assert_ready_ok!(task::spawn(()).enter(|cx, _| svc.poll_ready(cx)));
    let mut fut = task::spawn(svc.call(500));
    assert_pending!(fut.poll());
    advance(Duration::from_millis(99)).await;
    assert_pending!(fut.poll());
    advance(MS).await;
    assert!(fut.is_woken());
    let err: BoxError = assert_ready!(fut.poll()).unwrap_err();
    assert!(err.is::<Elapsed>(), "{err:?}");
    assert_eq!(err.to_string(), "request timed out");
    drop(fut);
    assert_eq!(
        timer.pending(),
        0,
        "the inner future's timeout is dropped too"
    );
}

#[tokio::test(start_paused = true)]
async fn inner_errors_are_boxed_and_passed_on() {
    let timer = Timer::new();
    let failing = service_fn(|()| async { Err::<(), _>(std::io::Error::other("boom")) });
    let svc = Timeout::new(failing, timer, Duration::from_secs(1));
    let err = svc.oneshot(()).await.unwrap_err();
    let io = err
        .downcast_ref::<std::io::Error>()
        .expect("the inner error");
    assert_eq!(io.to_string(), "boom");
}

#[tokio::test(start_paused = true)]
async fn at_capacity_rejects_without_calling_the_inner_service() {
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _held = timer.sleep(Duration::from_secs(60));
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let inner = service_fn(move |()| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, BoxError>(()) }
    });
    let svc = Timeout::new(inner, timer, Duration::from_secs(1));
    let err = svc.oneshot(()).await.unwrap_err();
    let err = err
        .downcast_ref::<hashwheel::Error>()
        .expect("a timer error");
    assert!(err.is_at_capacity());
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// Regression: late requests failed with `hashwheel::Elapsed`, so
/// `err.is::<tower::timeout::error::Elapsed>()` was false and the usual
/// handlers (axum's `HandleErrorLayer` examples, tower's docs) missed it.
#[tokio::test(start_paused = true)]
async fn late_requests_fail_with_towers_own_elapsed_as_tower_timeout_does() {
    let timer = Timer::new();
    let ours = TimeoutLayer::new(timer.clone(), Duration::from_millis(10)).layer(sleepy(&timer));
    let towers = tower::timeout::TimeoutLayer::new(Duration::from_millis(10)).layer(sleepy(&timer));
    let ours = ours.oneshot(50).await.unwrap_err();
    let towers = towers.oneshot(50).await.unwrap_err();
    assert!(ours.is::<Elapsed>() && towers.is::<Elapsed>());
    assert!(!ours.is::<hashwheel::Elapsed>());
    assert_eq!(ours.to_string(), towers.to_string());
}

#[tokio::test(start_paused = true)]
async fn timer_stopping_fails_running_requests_with_a_stopped_error() {
    let timer = Timer::new();
    let never = service_fn(|()| std::future::pending::<Result<(), BoxError>>());
    let mut svc = Timeout::new(never, timer.clone(), Duration::from_secs(60));
    let mut fut = task::spawn(svc.call(()));
    assert_pending!(fut.poll());
    timer.stop();
    common::settle().await;
    let err = assert_ready!(fut.poll()).unwrap_err();
    assert!(!err.is::<Elapsed>(), "no deadline passed");
    assert!(err.downcast_ref::<hashwheel::Error>().unwrap().is_stopped());
}

/// A service that is ready only after `ready_after` polls.
#[derive(Clone)]
struct SlowToReady {
    polls: usize,
    ready_after: usize,
}

impl Service<()> for SlowToReady {
    type Response = ();
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<(), std::io::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        self.polls += 1;
        if self.polls > self.ready_after {
            Poll::Ready(Ok(()))
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    fn call(&mut self, (): ()) -> Self::Future {
        std::future::ready(Ok(()))
    }
}

#[tokio::test(start_paused = true)]
async fn readiness_is_the_inner_services() {
    let timer = Timer::new();
    let mut svc = Timeout::new(
        SlowToReady {
            polls: 0,
            ready_after: 2,
        },
        timer,
        Duration::from_secs(1),
    );
    let mut t = task::spawn(());
    assert_pending!(t.enter(|cx, _| svc.poll_ready(cx)));
    assert_pending!(t.enter(|cx, _| svc.poll_ready(cx)));
    assert_ready_ok!(t.enter(|cx, _| svc.poll_ready(cx)));
    assert_eq!(svc.get_ref().polls, 3);
}

#[tokio::test(start_paused = true)]
async fn works_in_a_service_builder_and_clones() {
    let timer = Timer::new();
    let svc = ServiceBuilder::new()
        .layer(TimeoutLayer::new(timer.clone(), Duration::from_millis(50)))
        .service(sleepy(&timer));
    let fast = svc.clone().oneshot(10);
    let slow = svc.oneshot(100);
    let (fast, slow) = tokio::join!(fast, slow);
    assert_eq!(fast.unwrap(), 10);
    assert!(slow.unwrap_err().is::<Elapsed>());
}

#[tokio::test(start_paused = true)]
async fn many_requests_leave_nothing_pending() {
    let timer = Timer::new();
    let svc = TimeoutLayer::new(timer.clone(), Duration::from_millis(20)).layer(sleepy(&timer));
    let results =
        futures_util::future::join_all((0..200u64).map(|i| svc.clone().oneshot(i % 40))).await;
    let elapsed = results.iter().filter(|r| r.is_err()).count();
    // 0..=19 ms succeed; 20 ms ties go to the response, polled first;
    // 21..=39 ms fail.
    assert_eq!(elapsed, 5 * 19);
    assert_eq!(timer.pending(), 0);
}
