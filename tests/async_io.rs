//! `hashwheel::async_io::Timer` keeps async-io 2's contract where its own
//! tests (tests/async_io_timer.rs) do not look: what the future and the
//! stream yield, the catch-up after a stall, `Duration::MAX`, the waker
//! that `set_*` keep, dropping, and the traits. On the real clock (the
//! thread driver's), with no runtime.

mod common;

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::counting_waker;
use futures_lite::future::{block_on, poll_fn};
use futures_lite::{FutureExt, StreamExt};
use hashwheel::async_io::{DelayQueue, Timer};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn poll_once(timer: &mut Timer, waker: &Waker) -> Poll<Instant> {
    timer.poll(&mut Context::from_waker(waker))
}

#[test]
fn the_future_yields_the_instant_it_was_set_for() {
    let when = Instant::now() + ms(5);
    assert_eq!(block_on(Timer::at(when)), when);

    let start = Instant::now();
    let fired = block_on(Timer::after(ms(5)));
    assert!(fired >= start + ms(5), "the instant set: now + 5 ms");
    assert!(fired <= Instant::now());
    assert!(Instant::now() >= fired, "never early");
}

#[test]
fn a_past_instant_is_ready_at_the_first_poll() {
    let past = Instant::now() - ms(100);
    let (_, waker) = counting_waker();
    assert_eq!(poll_once(&mut Timer::at(past), &waker), Poll::Ready(past));
    let mut zero = Timer::after(Duration::ZERO);
    assert!(poll_once(&mut zero, &waker).is_ready());
}

#[test]
fn duration_max_never_fires_and_overflowing_sets_clear() {
    let mut timer = Timer::after(Duration::MAX);
    assert!(!timer.will_fire());
    let (count, waker) = counting_waker();
    assert!(poll_once(&mut timer, &waker).is_pending());
    assert!(!Timer::interval(Duration::MAX).will_fire());

    // A never timer set later fires like any other.
    timer.set_after(ms(5));
    assert!(timer.will_fire());
    let start = Instant::now();
    block_on(&mut timer);
    assert!(start.elapsed() >= ms(5));

    // Overflowing sets clear, as async-io's do.
    let mut timer = Timer::after(ms(5));
    timer.set_after(Duration::MAX);
    assert!(!timer.will_fire());
    std::thread::sleep(ms(20));
    assert!(poll_once(&mut timer, &waker).is_pending());
    assert_eq!(count.wakes(), 0);
}

#[test]
fn a_one_shot_timer_fires_once_then_stays_pending() {
    let mut timer = Timer::after(ms(2));
    block_on(&mut timer);
    assert!(!timer.will_fire());
    let (_, waker) = counting_waker();
    assert!(poll_once(&mut timer, &waker).is_pending());
    block_on(async {
        let again = async {
            (&mut timer).await;
            true
        };
        assert!(
            !again
                .or(async {
                    Timer::after(ms(20)).await;
                    false
                })
                .await
        );
    });
}

#[test]
fn the_stream_yields_its_schedule_and_catches_up_after_a_stall() {
    // Long enough that a loaded machine does not make the fifth instant
    // due between the clock reading below and the polls (half a period).
    let period = ms(100);
    // Started 3.5 periods ago: four instants are due at once, in order.
    let start = Instant::now() - period * 7 / 2;
    let mut timer = Timer::interval_at(start, period);
    let (_, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    for i in 0..4 {
        assert_eq!(
            timer.poll_next(&mut cx),
            Poll::Ready(Some(start + period * i)),
            "instant {i} comes out at once"
        );
    }
    assert!(
        timer.poll_next(&mut cx).is_pending(),
        "the fifth is not due"
    );
    let fifth = block_on(timer.next()).unwrap();
    assert_eq!(fifth, start + period * 4);
    assert!(Instant::now() >= fifth);
    assert!(timer.will_fire());

    // `Timer::interval`: now + period, then every period.
    let before = Instant::now();
    let mut timer = Timer::interval(period);
    let first = block_on(timer.next()).unwrap();
    let second = block_on(timer.next()).unwrap();
    assert!(first >= before + period && first <= Instant::now());
    assert_eq!(second - first, period);
}

#[test]
fn set_at_keeps_the_period_and_set_interval_at_replaces_it() {
    let period = ms(10);
    let mut timer = Timer::interval(ms(1000));
    let at = Instant::now() + ms(2);
    timer.set_at(at);
    assert_eq!(block_on(timer.next()), Some(at));
    // Still the one-second period, as async-io's `set_at` leaves it.
    let (_, waker) = counting_waker();
    assert!(poll_once(&mut timer, &waker).is_pending());

    let start = Instant::now();
    timer.set_interval_at(start, period);
    assert_eq!(block_on(timer.next()), Some(start));
    assert_eq!(block_on(timer.next()), Some(start + period));
}

#[test]
fn set_and_clear_keep_the_waker_of_the_task_that_polled() {
    let (count, waker) = counting_waker();
    let mut timer = Timer::after(Duration::from_secs(60));
    assert!(poll_once(&mut timer, &waker).is_pending());

    // Moved earlier without a poll: the same waker is woken there.
    timer.set_after(ms(5));
    std::thread::sleep(ms(30));
    assert_eq!(count.wakes(), 1);
    assert!(poll_once(&mut timer, &waker).is_ready());

    // Cleared, then set: still that waker (async-io keeps it through
    // `clear`), and nothing fires while cleared.
    let (count, waker) = counting_waker();
    let mut timer = Timer::after(Duration::from_secs(60));
    assert!(poll_once(&mut timer, &waker).is_pending());
    timer.clear();
    assert!(!timer.will_fire());
    timer.set_after(ms(5));
    std::thread::sleep(ms(30));
    assert_eq!(count.wakes(), 1);
}

#[test]
fn a_set_from_another_thread_wakes_the_polling_task() {
    let timer = Arc::new(Mutex::new(Timer::after(Duration::from_secs(60))));
    let setter = {
        let timer = timer.clone();
        std::thread::spawn(move || {
            std::thread::sleep(ms(20));
            let mut timer = timer.lock().unwrap();
            timer.clear();
            timer.set_after(ms(10));
        })
    };
    let start = Instant::now();
    block_on(poll_fn(|cx| timer.lock().unwrap().poll(cx)));
    assert!(start.elapsed() >= ms(30));
    assert!(start.elapsed() < Duration::from_secs(60));
    setter.join().unwrap();
}

#[test]
fn dropping_a_polled_timer_deregisters_it() {
    let (count, waker) = counting_waker();
    let mut dropped = Timer::after(ms(5));
    assert!(poll_once(&mut dropped, &waker).is_pending());
    drop(dropped);
    let (kept_count, kept_waker) = counting_waker();
    let mut kept = Timer::after(ms(5));
    assert!(poll_once(&mut kept, &kept_waker).is_pending());
    std::thread::sleep(ms(40));
    assert_eq!(kept_count.wakes(), 1, "the kept one fired");
    assert_eq!(count.wakes(), 0, "the dropped one did not");
}

#[test]
fn traits_as_async_io_has_them() {
    fn assert_traits<T: Unpin + Send + Sync + std::fmt::Debug + 'static>() {}
    assert_traits::<Timer>();
    assert_traits::<DelayQueue<u32>>();
    let debug = format!("{:?}", Timer::never());
    assert!(debug.starts_with("Timer {"), "{debug}");
}

/// The executor-free queue on a `futures` thread pool: items come out on
/// time, in order, woken by the thread driver.
#[test]
fn the_delay_queue_runs_on_a_thread_pool() {
    use futures::task::SpawnExt;
    let pool = futures::executor::ThreadPool::builder()
        .pool_size(2)
        .create()
        .unwrap();
    let handle = pool
        .spawn_with_handle(async {
            let mut queue = DelayQueue::new();
            let start = Instant::now();
            for i in (1..=5u64).rev() {
                queue.insert(i, ms(4 * i));
            }
            let mut out = Vec::new();
            while let Some(expired) = queue.next().await {
                assert!(Instant::now() >= expired.deadline(), "never early");
                assert!(expired.deadline() >= start + ms(4 * expired.get_ref()));
                out.push(expired.into_inner());
            }
            out
        })
        .unwrap();
    assert_eq!(block_on(handle), vec![1, 2, 3, 4, 5]);
}

/// Deadlines 100 ms or more ahead are kept on a 250 µs grid (so that many
/// connections' timers share the driver's turns): never early, and the
/// instants yielded are still the ones set, exactly.
#[test]
fn far_deadlines_on_the_grid_are_never_early_and_yield_their_exact_instant() {
    let start = Instant::now();
    let fired = block_on(Timer::after(ms(100)));
    assert!(
        fired >= start + ms(100) && fired <= start + ms(101),
        "the instant set"
    );
    assert!(Instant::now() >= fired);

    let period = ms(100);
    let first = Instant::now() + ms(3);
    let mut beats = Timer::interval_at(first, period);
    for i in 0..3 {
        let due = block_on(beats.next()).unwrap();
        assert_eq!(due, first + period * i);
        assert!(Instant::now() >= due, "never early");
    }

    let mut idle = Timer::after(ms(1));
    idle.set_after(ms(150));
    let set = Instant::now();
    let fired = block_on(&mut idle);
    assert!(fired >= set && Instant::now() >= fired);
}
