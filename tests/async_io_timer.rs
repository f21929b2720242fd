//! async-io 2.6.0's own `tests/timer.rs`, with only its `use async_io::Timer;`
//! line changed to hashwheel's, then async-io's `Timer` doc examples (its
//! `src/lib.rs`), each a test here with the same one line changed. The
//! doc example that resolves `google.com:80` through `async-net` (a
//! network, and a crate, that these tests do not have) keeps its code over
//! a stand-in `async_net::resolve` that never answers, so its timeout wins;
//! and async-io's `spawn` helper keeps its code over a stand-in for the two
//! calls of `async-channel` it makes (a `futures` channel), so that the
//! crate's own dev-dependencies stay light (every example builds them).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use futures_lite::{future, FutureExt, StreamExt};
use hashwheel::async_io::Timer;

/// `async_channel::bounded`, as `spawn` below uses it (`send` and `recv`
/// through `&self`), over a `futures` channel.
mod async_channel {
    use futures::channel::mpsc;
    use futures::lock::Mutex;
    use futures::{SinkExt, StreamExt};

    pub struct Sender<T>(mpsc::Sender<T>);
    pub struct Receiver<T>(Mutex<mpsc::Receiver<T>>);

    pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
        // `futures`' channel holds `cap` plus one per sender (each `send`
        // clones one): the bound does not matter here, one value each way.
        let (s, r) = mpsc::channel(cap);
        (Sender(s), Receiver(Mutex::new(r)))
    }

    impl<T> Sender<T> {
        pub async fn send(&self, value: T) -> Result<(), mpsc::SendError> {
            self.0.clone().send(value).await
        }
    }

    impl<T> Receiver<T> {
        pub async fn recv(&self) -> Result<T, ()> {
            self.0.lock().await.next().await.ok_or(())
        }
    }
}

fn spawn<T: Send + 'static>(
    f: impl Future<Output = T> + Send + 'static,
) -> impl Future<Output = T> + Send + 'static {
    let (s, r) = async_channel::bounded(1);

    thread::spawn(move || {
        future::block_on(async {
            s.send(f.await).await.ok();
        })
    });

    Box::pin(async move { r.recv().await.unwrap() })
}

#[test]
fn smoke() {
    future::block_on(async {
        let start = Instant::now();
        Timer::after(Duration::from_secs(1)).await;
        assert!(start.elapsed() >= Duration::from_secs(1));
    });
}

#[test]
fn interval() {
    future::block_on(async {
        let period = Duration::from_secs(1);
        let jitter = Duration::from_millis(500);
        let start = Instant::now();
        let mut timer = Timer::interval(period);
        timer.next().await;
        let elapsed = start.elapsed();
        assert!(elapsed >= period && elapsed - period < jitter);
        timer.next().await;
        let elapsed = start.elapsed();
        assert!(elapsed >= period * 2 && elapsed - period * 2 < jitter);
    });
}

#[test]
fn poll_across_tasks() {
    future::block_on(async {
        let start = Instant::now();
        let (sender, receiver) = async_channel::bounded(1);

        let task1 = spawn(async move {
            let mut timer = Timer::after(Duration::from_secs(1));

            async {
                (&mut timer).await;
                panic!("timer should not be ready")
            }
            .or(async {})
            .await;

            sender.send(timer).await.ok();
        });

        let task2 = spawn(async move {
            let timer = receiver.recv().await.unwrap();
            timer.await;
        });

        task1.await;
        task2.await;

        assert!(start.elapsed() >= Duration::from_secs(1));
    });
}

#[test]
fn set() {
    future::block_on(async {
        let start = Instant::now();
        let timer = Arc::new(Mutex::new(Timer::after(Duration::from_secs(10))));

        thread::spawn({
            let timer = timer.clone();
            move || {
                thread::sleep(Duration::from_secs(1));
                timer.lock().unwrap().set_after(Duration::from_secs(2));
            }
        });

        poll_fn(|cx| Pin::new(&mut *timer.lock().unwrap()).poll(cx)).await;

        assert!(start.elapsed() >= Duration::from_secs(2));
        assert!(start.elapsed() < Duration::from_secs(10));
    });
}

// ---- async-io's `Timer` doc examples, in the order of its `src/lib.rs` ----

/// A stand-in for `async-net`'s resolver: no network here, so it never
/// answers, and the example's timeout wins.
mod async_net {
    pub async fn resolve(_host: &str) -> std::io::Result<Vec<std::net::SocketAddr>> {
        std::future::pending().await
    }
}

#[test]
fn doc_sleep_for_1_second() {
    future::block_on(async {
        Timer::after(Duration::from_secs(1)).await;
    });
}

#[test]
fn doc_timeout_after_1_second() {
    let result: std::io::Result<()> = future::block_on(async {
        let addrs = async_net::resolve("google.com:80")
            .or(async {
                Timer::after(Duration::from_secs(1)).await;
                Err(std::io::ErrorKind::TimedOut.into())
            })
            .await?;
        drop(addrs);
        std::io::Result::Ok(())
    });
    assert_eq!(result.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
}

#[test]
fn doc_never() {
    future::block_on(async {
        async fn run_with_timeout(timeout: Option<Duration>) {
            let timer = timeout
                .map(|timeout| Timer::after(timeout))
                .unwrap_or_else(Timer::never);

            run_lengthy_operation().or(timer).await;
        }
        // Note that since a Timer as a Future returns an Instant,
        // this function needs to return an Instant to be used
        // in "or".
        async fn run_lengthy_operation() -> std::time::Instant {
            std::time::Instant::now()
        }

        // Times out after 5 seconds.
        run_with_timeout(Some(Duration::from_secs(5))).await;
        // Does not time out.
        run_with_timeout(None).await;
    });
}

#[test]
fn doc_after() {
    future::block_on(async {
        Timer::after(Duration::from_secs(1)).await;
    });
}

#[test]
fn doc_at() {
    future::block_on(async {
        let now = Instant::now();
        let when = now + Duration::from_secs(1);
        Timer::at(when).await;
    });
}

#[test]
fn doc_interval() {
    future::block_on(async {
        let period = Duration::from_secs(1);
        Timer::interval(period).next().await;
    });
}

#[test]
fn doc_interval_at() {
    future::block_on(async {
        let start = Instant::now();
        let period = Duration::from_secs(1);
        Timer::interval_at(start, period).next().await;
    });
}

#[test]
fn doc_will_fire() {
    future::block_on(async {
        // `never` will never fire.
        assert!(!Timer::never().will_fire());

        // `after` will fire if the duration is not too large.
        assert!(Timer::after(Duration::from_secs(1)).will_fire());
        assert!(!Timer::after(Duration::MAX).will_fire());

        // However, once an `after` timer has fired, it will never fire again.
        let mut t = Timer::after(Duration::from_secs(1));
        assert!(t.will_fire());
        (&mut t).await;
        assert!(!t.will_fire());

        // Interval timers will fire periodically.
        let mut t = Timer::interval(Duration::from_secs(1));
        assert!(t.will_fire());
        t.next().await;
        assert!(t.will_fire());
    });
}

#[test]
fn doc_set_after() {
    future::block_on(async {
        let mut t = Timer::after(Duration::from_secs(1));
        t.set_after(Duration::from_millis(100));
    });
}

#[test]
fn doc_set_at() {
    future::block_on(async {
        let mut t = Timer::after(Duration::from_secs(1));

        let now = Instant::now();
        let when = now + Duration::from_secs(1);
        t.set_at(when);
    });
}

#[test]
fn doc_set_interval() {
    future::block_on(async {
        let mut t = Timer::after(Duration::from_secs(1));

        let period = Duration::from_secs(2);
        t.set_interval(period);
    });
}

#[test]
fn doc_set_interval_at() {
    future::block_on(async {
        let mut t = Timer::after(Duration::from_secs(1));

        let start = Instant::now();
        let period = Duration::from_secs(2);
        t.set_interval_at(start, period);
    });
}
