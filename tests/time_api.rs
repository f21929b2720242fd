//! `tokio::time`'s API, written out once as function-pointer types and
//! trait bounds, the way a user's code names it, and checked against both
//! `tokio::time` and `hashwheel::time`: any drift of `hashwheel::time` from
//! tokio's names and signatures fails to compile here.

use std::future::Ready;

/// The API of one `time` module, checked at compile time; run to make sure
/// the pointers are real.
macro_rules! time_api {
    ($name:ident, $($time:ident)::+) => {
        mod $name {
            use std::fmt::Debug;
            use std::pin::Pin;
            use std::task::{Context, Poll};

            use $($time)::+::error::Elapsed;
            use $($time)::+::{
                Duration, Instant, Interval, MissedTickBehavior, Sleep, Timeout,
            };
            use $($time)::+ as time;

            use super::Taken;

            type F = super::Ready<u8>;

            #[allow(clippy::type_complexity)]
            pub(crate) struct Api {
                sleep: fn(Duration) -> Sleep,
                sleep_until: fn(Instant) -> Sleep,
                timeout: fn(Duration, F) -> Timeout<F>,
                timeout_at: fn(Instant, F) -> Timeout<F>,
                interval: fn(Duration) -> Interval,
                interval_at: fn(Instant, Duration) -> Interval,
                sleep_deadline: fn(&Sleep) -> Instant,
                sleep_is_elapsed: fn(&Sleep) -> bool,
                sleep_reset: fn(Pin<&mut Sleep>, Instant),
                timeout_get_ref: fn(&Timeout<F>) -> &F,
                timeout_get_mut: fn(&mut Timeout<F>) -> &mut F,
                timeout_into_inner: fn(Timeout<F>) -> F,
                interval_poll_tick: fn(&mut Interval, &mut Context<'_>) -> Poll<Instant>,
                interval_reset: fn(&mut Interval),
                interval_reset_immediately: fn(&mut Interval),
                interval_reset_after: fn(&mut Interval, Duration),
                interval_reset_at: fn(&mut Interval, Instant),
                interval_period: fn(&Interval) -> Duration,
                interval_missed_tick_behavior: fn(&Interval) -> MissedTickBehavior,
                interval_set_missed_tick_behavior: fn(&mut Interval, MissedTickBehavior),
                elapsed_into_io: fn(Elapsed) -> std::io::Error,
            }

            pub(crate) const API: Api = Api {
                sleep: time::sleep,
                sleep_until: time::sleep_until,
                timeout: time::timeout,
                timeout_at: time::timeout_at,
                interval: time::interval,
                interval_at: time::interval_at,
                sleep_deadline: Sleep::deadline,
                sleep_is_elapsed: Sleep::is_elapsed,
                sleep_reset: Sleep::reset,
                timeout_get_ref: Timeout::get_ref,
                timeout_get_mut: Timeout::get_mut,
                timeout_into_inner: Timeout::into_inner,
                interval_poll_tick: Interval::poll_tick,
                interval_reset: Interval::reset,
                interval_reset_immediately: Interval::reset_immediately,
                interval_reset_after: Interval::reset_after,
                interval_reset_at: Interval::reset_at,
                interval_period: Interval::period,
                interval_missed_tick_behavior: Interval::missed_tick_behavior,
                interval_set_missed_tick_behavior: Interval::set_missed_tick_behavior,
                elapsed_into_io: std::io::Error::from,
            };

            /// The traits tokio's types have (`Sleep`'s `!Unpin` aside).
            pub(crate) fn traits() {
                fn future<T: std::future::Future + Send + Sync + Debug>() {}
                fn elapsed<E: std::error::Error + Debug + PartialEq + Eq + Send + Sync>() {}
                fn behavior<B: Debug + Clone + Copy + PartialEq + Eq + Default>() {}
                fn interval<I: Debug + Send + Sync + Unpin>() {}
                future::<Sleep>();
                future::<Timeout<F>>();
                elapsed::<Elapsed>();
                behavior::<MissedTickBehavior>();
                interval::<Interval>();
                let _ = [
                    MissedTickBehavior::Burst,
                    MissedTickBehavior::Delay,
                    MissedTickBehavior::Skip,
                ];
            }

            /// Uses every pointer once.
            pub(crate) async fn run() {
                traits();
                let api = &API;
                let ms = Duration::from_millis;
                let mut s = Box::pin((api.sleep)(ms(5)));
                let deadline = (api.sleep_deadline)(&s);
                (api.sleep_reset)(s.as_mut(), deadline + ms(5));
                s.as_mut().await;
                assert!((api.sleep_is_elapsed)(&s));
                (api.sleep_until)(Instant::now()).await;
                let mut t = (api.timeout)(ms(5), std::future::ready(1));
                assert!((api.timeout_get_ref)(&t).is_ready_to_take());
                assert!((api.timeout_get_mut)(&mut t).is_ready_to_take());
                assert_eq!((api.timeout_into_inner)(t).await, 1);
                let t = (api.timeout_at)(Instant::now() + ms(5), std::future::ready(2));
                assert_eq!(t.await, Ok(2));
                let mut i = (api.interval)(ms(10));
                std::future::poll_fn(|cx| (api.interval_poll_tick)(&mut i, cx)).await;
                (api.interval_reset)(&mut i);
                (api.interval_reset_immediately)(&mut i);
                (api.interval_reset_after)(&mut i, ms(1));
                (api.interval_reset_at)(&mut i, Instant::now());
                (api.interval_set_missed_tick_behavior)(&mut i, MissedTickBehavior::Skip);
                assert_eq!((api.interval_missed_tick_behavior)(&i), MissedTickBehavior::Skip);
                assert_eq!((api.interval_period)(&i), ms(10));
                let j = (api.interval_at)(Instant::now(), ms(10));
                assert_eq!(j.period(), ms(10));
                let late = time::timeout(ms(1), std::future::pending::<()>()).await;
                let io = (api.elapsed_into_io)(late.unwrap_err());
                assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
            }
        }
    };
}

/// `Ready` has no accessor on stable: this says the reference is there.
trait Taken {
    fn is_ready_to_take(&self) -> bool {
        true
    }
}
impl<T> Taken for Ready<T> {}

time_api!(tokio_api, tokio::time);
time_api!(hashwheel_api, hashwheel::time);

#[tokio::test(start_paused = true)]
async fn hashwheel_time_has_tokio_times_api() {
    tokio_api::run().await;
    hashwheel_api::run().await;
}
