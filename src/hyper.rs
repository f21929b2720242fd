//! hyper 1.x integration: `impl hyper::rt::Timer for Timer`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::hyper::rt::{Sleep, Timer as HyperTimer};

use crate::timer::timeout::Timeout;
use crate::timer::Timer;

/// hyper's timers on the wheel: pass a [`Timer`] to hyper's
/// `Builder::timer` and hyper 1.x runs its header-read timeout, keep-alive
/// timers and other sleeps on hashwheel. Enabled by the `hyper` feature.
///
/// Each sleep is one [`Timeout`] (boxed, as hyper requires), and hyper's
/// [`reset`](HyperTimer::reset) moves it in O(1) instead of allocating a new
/// one. [`now`](HyperTimer::now) reads `tokio::time::Instant`, so paused
/// time in tests applies to hyper too.
///
/// hyper cannot be told that a timer failed: if the timer is
/// [stopped](Timer::stop) or at its [`max_pending`](crate::Builder::max_pending)
/// limit, hyper's sleeps complete at once (so hyper times out whatever it
/// was waiting for: the connection fails closed).
///
/// # Examples
///
/// A server's connection builder (hyper's features `server` and `http1`):
///
/// ```ignore
/// use hyper::server::conn::http1;
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let mut builder = http1::Builder::new();
/// builder
///     .timer(timer.clone())
///     .header_read_timeout(Duration::from_secs(10))
///     .keep_alive(true);
/// // builder.serve_connection(io, service) as usual.
/// ```
///
/// (Not compiled here: the crate's own doctests build without hyper's
/// server, so that its examples build quickly; the workspace's
/// `hashwheel-integration` package runs a real server and client with this
/// builder, in its `tests/hyper.rs`.) Or use the trait directly:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let timer = hashwheel::Timer::new();
/// let start = tokio::time::Instant::now();
/// hyper::rt::Timer::sleep(&timer, Duration::from_millis(20)).await;
/// assert!(start.elapsed() >= Duration::from_millis(20));
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
impl HyperTimer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        Box::pin(WheelSleep(self.try_sleep(duration).ok()))
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn Sleep>> {
        let deadline = tokio::time::Instant::from_std(deadline);
        Box::pin(WheelSleep(self.try_sleep_until(deadline).ok()))
    }

    fn now(&self) -> std::time::Instant {
        tokio::time::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: std::time::Instant) {
        let deadline = tokio::time::Instant::from_std(new_deadline);
        match sleep.as_mut().downcast_mut_pin::<WheelSleep>() {
            Some(ours) => {
                let ours = Pin::into_inner(ours);
                match &mut ours.0 {
                    Some(timeout) => timeout.reset_at(deadline),
                    None => ours.0 = self.try_sleep_until(deadline).ok(),
                }
            }
            None => *sleep = HyperTimer::sleep_until(self, new_deadline),
        }
    }
}

/// The sleep handed to hyper: a [`Timeout`], or nothing (complete at once)
/// when the timer could not take one.
#[derive(Debug)]
struct WheelSleep(Option<Timeout>);

impl Future for WheelSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.get_mut().0 {
            Some(timeout) => Pin::new(timeout).poll(cx),
            None => Poll::Ready(()),
        }
    }
}

impl Sleep for WheelSleep {}
