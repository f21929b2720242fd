//! The client deadline layer's cost per call (issue 57), for callgrind:
//! `N` calls through a service that answers at once, bare, through
//! `PropagateDeadline` outside any deadline scope, and through it inside
//! one (the time left written into `grpc-timeout`, the call bounded by the
//! scope's deadline). Each call builds its `http::Request` (with one header
//! already), calls, and polls the answer once, on a current-thread runtime.
//!
//! Instructions per call: run it twice under callgrind with two counts
//! and divide the difference of the totals by the difference of the counts
//! (the setup cancels out):
//!
//! ```sh
//! cargo bench -p hashwheel-benches --bench propagate --no-run
//! BIN=$(ls -t target/release/deps/propagate-* | grep -v '\.d$' | head -1)
//! for v in bare outside inside; do for n in 100000 200000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$v.$n "$BIN" $v $n 2>&1 | grep 'refs'
//! done; done
//! ```
//!
//! With no arguments (as `cargo bench` runs it) it runs each variant once,
//! briefly, and prints its time per call: a smoke check, not a figure (the
//! figures are W10's, in the compare bench).

use std::future::{ready, Future, Ready};
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use hashwheel::tower::PropagateDeadlineLayer;
use hashwheel::Timer;
use tower::{Layer, Service};

/// A service that answers at once: the count of the headers the layer
/// wrote.
#[derive(Clone)]
struct Answer;

impl Service<http::Request<()>> for Answer {
    type Response = usize;
    type Error = std::convert::Infallible;
    type Future = Ready<Result<usize, std::convert::Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<()>) -> Self::Future {
        ready(Ok(req.headers().len() - 1))
    }
}

/// `n` calls through `svc`, each polled once (ready).
fn calls<S>(svc: &mut S, n: u64) -> usize
where
    S: Service<http::Request<()>, Response = usize>,
    S::Error: std::fmt::Debug,
{
    let mut cx = Context::from_waker(Waker::noop());
    let mut headers = 0;
    for _ in 0..n {
        // A request with a header already, as a client's are (its header
        // map allocated in every variant).
        let req = http::Request::get("/")
            .header("accept", "*/*")
            .body(())
            .unwrap();
        let fut = pin!(svc.call(black_box(req)));
        match fut.poll(&mut cx) {
            Poll::Ready(Ok(h)) => headers += h,
            other => panic!("not answered at once: {:?}", other.map(|r| r.map(|_| ()))),
        }
    }
    headers
}

/// Runs `variant` for `n` calls; the headers the service saw.
fn run(variant: &str, n: u64) -> usize {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let timer = Timer::new();
        let mut layered = PropagateDeadlineLayer::new(timer.clone()).layer(Answer);
        match variant {
            "bare" => calls(&mut Answer, n),
            "outside" => calls(&mut layered, n),
            "inside" => {
                let scope =
                    timer.scope(Duration::from_secs(3600), async { calls(&mut layered, n) });
                scope.await.expect("within the hour")
            }
            other => panic!("unknown variant {other}: bare, outside or inside"),
        }
    })
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    if let Some(variant) = args.next() {
        let n = args.next().map_or(100_000, |n| n.parse().expect("a count"));
        let headers = run(&variant, n);
        assert_eq!(headers as u64, if variant == "inside" { n } else { 0 });
        return;
    }
    for variant in ["bare", "outside", "inside"] {
        let n = 200_000;
        let start = Instant::now();
        run(variant, n);
        let per = start.elapsed().as_nanos() as f64 / n as f64;
        println!("propagate {variant:<8} {per:6.1} ns a call (smoke check, not a figure)");
    }
}
