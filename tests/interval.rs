//! `Interval`: ticks on schedule, never early, and each missed-tick
//! behaviour after a stall.

mod common;

use std::task::Poll;
use std::time::Duration;

use common::{advance, settle, MS};
use futures_util::StreamExt;
use hashwheel::{Interval, MissedTickBehavior, Timer};
use tokio::time::Instant;
use tokio_test::task::{self, Spawn};
use tokio_test::{assert_pending, assert_ready, assert_ready_eq};

const PERIOD: Duration = Duration::from_millis(10);

fn poll_tick(t: &mut Spawn<Interval>) -> Poll<Instant> {
    t.enter(|cx, interval| interval.get_mut().poll_tick(cx).map(Instant::from_std))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn interval_is_send_sync_unpin() {
    fn assert<T: Send + Sync + Unpin + std::fmt::Debug + 'static>() {}
    assert::<Interval>();
    assert::<MissedTickBehavior>();
}

#[tokio::test(start_paused = true)]
async fn first_tick_at_once_then_every_period() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut t = task::spawn(timer.interval(PERIOD));
    assert_ready_eq!(poll_tick(&mut t), start);
    assert_pending!(poll_tick(&mut t));
    advance(ms(9)).await;
    assert!(!t.is_woken());
    assert_pending!(poll_tick(&mut t));
    advance(MS).await;
    assert!(t.is_woken());
    assert_ready_eq!(poll_tick(&mut t), start + PERIOD);
    assert_pending!(poll_tick(&mut t));
    advance(PERIOD).await;
    assert!(t.is_woken());
    assert_ready_eq!(poll_tick(&mut t), start + 2 * PERIOD);
}

#[tokio::test(start_paused = true)]
async fn interval_at_waits_for_start() {
    let timer = Timer::new();
    let start = Instant::now() + ms(25);
    let mut t = task::spawn(timer.interval_at(start, PERIOD));
    assert_pending!(poll_tick(&mut t));
    advance(ms(24)).await;
    assert_pending!(poll_tick(&mut t));
    advance(MS).await;
    assert!(t.is_woken());
    assert_ready_eq!(poll_tick(&mut t), start);
    advance(PERIOD).await;
    assert_ready_eq!(poll_tick(&mut t), start + PERIOD);
}

#[tokio::test]
#[should_panic(expected = "interval period must be non-zero")]
async fn zero_period_panics() {
    let _ = Timer::new().interval(Duration::ZERO);
}

#[tokio::test]
async fn zero_period_is_an_error_with_try() {
    let timer = Timer::new();
    assert!(timer
        .try_interval(Duration::ZERO)
        .unwrap_err()
        .is_invalid_config());
    let err = timer
        .try_interval_at(Instant::now(), Duration::ZERO)
        .unwrap_err();
    assert!(err.is_invalid_config());
    assert_eq!(timer.pending(), 0);
}

#[tokio::test]
async fn stopped_timer_is_an_error_with_try() {
    let timer = Timer::new();
    timer.stop();
    assert!(timer.try_interval(PERIOD).unwrap_err().is_stopped());
}

#[tokio::test]
async fn at_capacity_is_an_error_with_try() {
    let timer = Timer::builder().max_pending(1).build().unwrap();
    let _one = timer.interval(PERIOD);
    assert!(timer.try_interval(PERIOD).unwrap_err().is_at_capacity());
}

/// Ticks at 0, then the task stalls for 35 ms: the ticks due at 10, 20 and
/// 30 ms are missed.
async fn stalled(behavior: MissedTickBehavior) -> (Timer, Spawn<Interval>, Instant) {
    let timer = Timer::new();
    let start = Instant::now();
    let mut interval = timer.interval(PERIOD);
    interval.set_missed_tick_behavior(behavior);
    let mut t = task::spawn(interval);
    assert_ready_eq!(poll_tick(&mut t), start);
    assert_pending!(poll_tick(&mut t));
    advance(ms(35)).await;
    (timer, t, start)
}

#[tokio::test(start_paused = true)]
async fn burst_catches_up_then_keeps_the_schedule() {
    let (_timer, mut t, start) = stalled(MissedTickBehavior::Burst).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(10));
    assert_ready_eq!(poll_tick(&mut t), start + ms(20));
    assert_ready_eq!(poll_tick(&mut t), start + ms(30));
    assert_pending!(poll_tick(&mut t));
    advance(ms(4)).await;
    assert_pending!(poll_tick(&mut t));
    advance(MS).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(40));
    advance(PERIOD).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(50));
}

#[tokio::test(start_paused = true)]
async fn delay_restarts_the_period_from_the_late_tick() {
    let (_timer, mut t, start) = stalled(MissedTickBehavior::Delay).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(10));
    assert_pending!(poll_tick(&mut t));
    advance(ms(9)).await;
    assert_pending!(poll_tick(&mut t));
    advance(MS).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(45));
    advance(PERIOD).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(55));
}

#[tokio::test(start_paused = true)]
async fn skip_drops_missed_ticks_and_keeps_the_grid() {
    let (_timer, mut t, start) = stalled(MissedTickBehavior::Skip).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(10));
    assert_pending!(poll_tick(&mut t));
    advance(ms(4)).await;
    assert_pending!(poll_tick(&mut t));
    advance(MS).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(40));
    advance(PERIOD).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(50));
}

#[tokio::test(start_paused = true)]
async fn default_is_burst() {
    let timer = Timer::new();
    let interval = timer.interval(PERIOD);
    assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    assert_eq!(MissedTickBehavior::default(), MissedTickBehavior::Burst);
}

#[tokio::test(start_paused = true)]
async fn slightly_late_ticks_are_not_missed() {
    // 3 ms late is within the tolerance: Delay keeps the original grid.
    let timer = Timer::new();
    let start = Instant::now();
    let mut interval = timer.interval(PERIOD);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut t = task::spawn(interval);
    assert_ready_eq!(poll_tick(&mut t), start);
    advance(ms(13)).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(10));
    advance(ms(7)).await;
    assert_ready_eq!(poll_tick(&mut t), start + ms(20));
}

/// Issue 37: a tick taken more than 5 ms late counts as missed, as
/// tokio's (the tolerance was 5 ms plus the 1 ms tick: a tick taken 5.1 or
/// 5.5 ms late kept `Delay` on the old grid, where tokio's moved on from
/// the late tick). Side by side with tokio's `Interval`, at 4.9, 5, 5.1
/// and 5.5 ms late, under every missed-tick behavior.
#[tokio::test(start_paused = true)]
async fn a_tick_more_than_5ms_late_is_missed_as_tokios() {
    use hashwheel::time::MissedTickBehavior as Ours;
    use tokio::time::MissedTickBehavior as Theirs;
    for late_us in [4_900, 5_000, 5_100, 5_500] {
        for (ours_behavior, theirs_behavior) in [
            (Ours::Burst, Theirs::Burst),
            (Ours::Delay, Theirs::Delay),
            (Ours::Skip, Theirs::Skip),
        ] {
            let start = Instant::now();
            let mut ours = hashwheel::time::interval_at(start, PERIOD);
            let mut theirs = tokio::time::interval_at(start, PERIOD);
            ours.set_missed_tick_behavior(ours_behavior);
            theirs.set_missed_tick_behavior(theirs_behavior);
            assert_eq!(ours.tick().await, theirs.tick().await);
            // The next tick taken `late_us` after its instant (exactly:
            // a first tick may wait on the driver's turn).
            advance(start + PERIOD + Duration::from_micros(late_us) - Instant::now()).await;
            let mut got = Vec::new();
            for _ in 0..3 {
                let (a, b) = tokio::join!(ours.tick(), theirs.tick());
                got.push((a - start, b - start));
            }
            for (i, (a, b)) in got.iter().enumerate() {
                assert_eq!(
                    a, b,
                    "{late_us} µs late, {ours_behavior:?}, tick {i}: {got:?}"
                );
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn never_early_with_a_coarse_tick() {
    let timer = Timer::builder().tick(ms(10)).build().unwrap();
    let start = Instant::now();
    let mut interval = timer.interval(ms(15));
    for n in 0..20u32 {
        let due = interval.tick().await;
        assert_eq!(
            Instant::from_std(due),
            start + ms(15) * n,
            "nominal instants, no drift"
        );
        let now = Instant::now();
        assert!(
            now >= Instant::from_std(due),
            "tick {n} early: {now:?} < {due:?}"
        );
        assert!(
            now - Instant::from_std(due) <= ms(10),
            "tick {n} more than a tick late"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn reset_restarts_from_now() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.interval(PERIOD));
    assert_ready!(poll_tick(&mut t));
    advance(ms(7)).await;
    t.reset();
    let now = Instant::now();
    advance(ms(9)).await;
    assert_pending!(poll_tick(&mut t));
    advance(MS).await;
    assert_ready_eq!(poll_tick(&mut t), now + PERIOD);
}

#[tokio::test(start_paused = true)]
async fn reset_immediately_after_and_at() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.interval(ms(100)));
    assert_ready!(poll_tick(&mut t));
    t.reset_immediately();
    assert_ready_eq!(poll_tick(&mut t), Instant::now());
    t.reset_after(ms(3));
    let now = Instant::now();
    assert_pending!(poll_tick(&mut t));
    advance(ms(3)).await;
    assert_ready_eq!(poll_tick(&mut t), now + ms(3));
    let at = Instant::now() + ms(50);
    t.reset_at(at);
    advance(ms(50)).await;
    assert_ready_eq!(poll_tick(&mut t), at);
    advance(ms(100)).await;
    assert_ready_eq!(poll_tick(&mut t), at + ms(100));
}

#[tokio::test(start_paused = true)]
async fn one_wheel_entry_however_long_it_runs() {
    let timer = Timer::new();
    let mut interval = timer.interval(MS);
    for _ in 0..100 {
        interval.tick().await;
        assert_eq!(timer.pending(), 1);
    }
    drop(interval);
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn tick_is_cancel_safe() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut interval = timer.interval(PERIOD);
    interval.tick().await;
    {
        let mut fut = task::spawn(interval.tick());
        assert_pending!(fut.poll());
    }
    advance(PERIOD).await;
    assert_eq!(Instant::from_std(interval.tick().await), start + PERIOD);
}

#[tokio::test(start_paused = true)]
async fn stream_yields_nominal_instants() {
    let timer = Timer::new();
    let start = Instant::now();
    let ticks: Vec<_> = timer.interval(PERIOD).take(4).collect().await;
    let want: Vec<_> = (0..4u32).map(|n| (start + PERIOD * n).into_std()).collect();
    assert_eq!(ticks, want);
}

#[tokio::test(start_paused = true)]
async fn stream_ends_when_the_timer_stops() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.interval(PERIOD));
    assert_ready_eq!(t.poll_next(), Some(Instant::now().into_std()));
    assert_pending!(t.poll_next());
    timer.stop();
    settle().await;
    assert!(t.is_woken());
    assert_ready_eq!(t.poll_next(), None);
    assert_ready_eq!(t.poll_next(), None, "the stream stays ended");
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "hashwheel: timer is stopped, no interval tick can come")]
async fn tick_panics_instead_of_hanging_once_the_timer_stops() {
    let timer = Timer::new();
    let mut interval = timer.interval(PERIOD);
    interval.tick().await;
    let ticking = tokio::spawn(async move {
        interval.tick().await;
    });
    settle().await;
    timer.stop();
    if let Err(err) = ticking.await {
        std::panic::resume_unwind(err.into_panic());
    }
}

#[tokio::test(start_paused = true)]
async fn debug_shows_the_schedule() {
    let timer = Timer::new();
    let interval = timer.interval(PERIOD);
    let text = format!("{interval:?}");
    assert!(text.contains("period: 10ms"), "{text}");
    assert!(text.contains("Burst"), "{text}");
}

/// In the steady state the driver re-arms the interval as it fires a tick:
/// taking the tick is no reset (no lock, no insert).
#[tokio::test(start_paused = true)]
async fn steady_ticks_are_re_armed_by_the_driver() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.interval(PERIOD));
    assert_ready!(poll_tick(&mut t));
    assert_pending!(poll_tick(&mut t));
    let before = timer.stats();
    for _ in 0..20 {
        advance(PERIOD).await;
        assert!(t.is_woken());
        assert_ready!(poll_tick(&mut t));
        assert_pending!(poll_tick(&mut t));
    }
    let after = timer.stats();
    assert_eq!(after.reset, before.reset, "a tick took the lock to re-arm");
    assert_eq!(after.ticks - before.ticks, 20);
    assert_eq!(after.fired, before.fired, "ticks are no fired timeouts");
    assert_eq!(after.pending, 1);
}

/// An interval whose tick is not taken is not re-armed: its task is woken
/// once, not once a period, and the ticks come back by the missed-tick
/// rules when it calls `tick` again.
#[tokio::test(start_paused = true)]
async fn an_untaken_tick_wakes_once_and_is_not_re_armed() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut interval = timer.interval(PERIOD);
    let (wakes, waker) = common::counting_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(interval.poll_tick(&mut cx).is_ready());
    assert!(interval.poll_tick(&mut cx).is_pending());
    advance(PERIOD).await;
    assert_eq!(wakes.wakes(), 1);
    // Not taken for ten periods: no more wakes; the interval still counts
    // pending (it lives: issue 43, item 5, where a stall released it as if
    // it had fired).
    advance(PERIOD * 10).await;
    assert_eq!(wakes.wakes(), 1);
    assert_eq!(timer.pending(), 1);
    let ticks = timer.stats().ticks;
    advance(PERIOD * 10).await;
    assert_eq!(
        timer.stats().ticks,
        ticks,
        "the stalled interval fired again"
    );
    assert_eq!(timer.pending(), 1);
    // Burst (the default): the missed ticks at once, then on schedule.
    assert_eq!(
        interval.poll_tick(&mut cx),
        Poll::Ready((start + PERIOD).into_std())
    );
    assert_eq!(
        interval.poll_tick(&mut cx),
        Poll::Ready((start + PERIOD * 2).into_std())
    );
    let mut n = 2;
    while let Poll::Ready(at) = interval.poll_tick(&mut cx) {
        n += 1;
        assert_eq!(Instant::from_std(at), start + PERIOD * n);
    }
    assert_eq!(n, 21, "ticks 10 ms to 210 ms");
    assert_eq!(timer.pending(), 1);
    let stats = timer.stats();
    assert_eq!(stats.ticks, 22, "the first, and 21 from 10 ms to 210 ms");
    assert_eq!(stats.reset, 0, "catching up is no reset");
    advance(PERIOD).await;
    assert_eq!(
        interval.poll_tick(&mut cx),
        Poll::Ready((start + PERIOD * 22).into_std())
    );
}

/// A period too long for the driver's re-arm (years): the tick still comes,
/// and the next one is years away, never early.
#[tokio::test(start_paused = true)]
async fn a_period_of_years_still_ticks_and_is_never_early() {
    let timer = Timer::new();
    let start = Instant::now();
    let period = Duration::from_secs(86_400 * 365 * 10);
    let mut t = task::spawn(timer.interval_at(start + ms(5), period));
    assert_pending!(poll_tick(&mut t));
    advance(ms(5)).await;
    assert!(t.is_woken());
    assert_ready_eq!(poll_tick(&mut t), start + ms(5));
    assert_pending!(poll_tick(&mut t));
    advance(Duration::from_secs(86_400 * 365)).await;
    assert!(!t.is_woken());
    assert_pending!(poll_tick(&mut t));
    assert_eq!(timer.pending(), 1);
}

/// An interval's entry and a polled timeout register by one path: both
/// count pending once registered and cancelled once dropped.
#[tokio::test(start_paused = true)]
async fn an_interval_and_a_timeout_register_and_cancel_alike() {
    let timer = Timer::new();
    let mut t = task::spawn(timer.interval(PERIOD));
    assert_ready!(poll_tick(&mut t));
    assert_pending!(poll_tick(&mut t));
    let mut sleep = task::spawn(timer.sleep(PERIOD));
    assert_pending!(sleep.poll());
    assert_eq!(timer.pending(), 2);
    advance(PERIOD).await;
    assert!(t.is_woken() && sleep.is_woken());
    assert_ready!(sleep.poll());
    assert_ready!(poll_tick(&mut t));
    assert_eq!(timer.pending(), 1, "the interval was re-armed");
    drop(t);
    let stats = timer.stats();
    assert_eq!((stats.pending, stats.fired, stats.cancelled), (0, 1, 1));
    assert_eq!((stats.created, stats.ticks, stats.reset), (2, 2, 0));
}

/// Periods on both sides of every edge of a shard's wheel (a bucket list
/// of 256 µs, a round of 524 ms, a level 0 of four rounds: an interval
/// re-armed less than 1.5 s ahead goes straight into its bucket, a longer
/// one through the round ring), at phases that fall inside lists: every
/// tick reports its nominal instant and completes at it, never before and
/// at most a tick after (paused time turns the driver at each deadline).
#[tokio::test(start_paused = true)]
async fn ticks_on_schedule_across_the_wheel_s_edges() {
    let timer = Timer::new();
    let periods_us = [
        1_000, 7_300, 262_144, 524_288, 524_289, 999_999, 1_000_000, 1_572_000, 1_573_000,
        2_097_152, 2_200_000, 3_000_000,
    ];
    let end = Instant::now() + Duration::from_secs(8);
    let mut tasks = Vec::new();
    for (i, &period_us) in periods_us.iter().enumerate() {
        for phase in 0..3u64 {
            let timer = timer.clone();
            let period = Duration::from_micros(period_us);
            let start = Instant::now() + Duration::from_micros(337 * (i as u64 * 3 + phase) + 1);
            tasks.push(tokio::spawn(async move {
                let mut interval = timer.interval_at(start, period);
                let mut n = 0u32;
                loop {
                    let due = Instant::from_std(interval.tick().await);
                    let now = Instant::now();
                    assert_eq!(due, start + period * n, "period {period:?}: tick {n}");
                    assert!(
                        now >= due,
                        "period {period:?}: tick {n} early by {:?}",
                        due - now
                    );
                    assert!(
                        now - due <= ms(1),
                        "period {period:?}: tick {n} late by {:?}",
                        now - due
                    );
                    n += 1;
                    if now + period > end {
                        return n;
                    }
                }
            }));
        }
    }
    // A lost tick would leave its task waiting for good: tokio's own timer
    // (paused time jumps to it) ends the test instead.
    let all = async {
        for (task, &period_us) in tasks
            .iter_mut()
            .zip(periods_us.iter().flat_map(|p| [p, p, p]))
        {
            let ticks = task.await.unwrap();
            assert!(
                u64::from(ticks) >= 8_000_000 / period_us,
                "period {period_us} µs: {ticks} ticks in 8 s"
            );
        }
    };
    tokio::time::timeout(Duration::from_secs(60), all)
        .await
        .expect("a tick never came");
}

/// A shard of more intervals than the driver's read-ahead threshold
/// (32,768: a turn then reads a batch's beats before popping them), with
/// heartbeats spread over the second as a server's: every tick reports its
/// nominal instant, comes at it or at most 1 ms after, and none is lost.
#[tokio::test(start_paused = true)]
async fn a_shard_of_many_intervals_ticks_on_schedule() {
    const N: u64 = 40_000;
    let timer = Timer::builder().shards(1).build().unwrap();
    let period = Duration::from_secs(1);
    let start = Instant::now() + ms(10);
    let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..N {
        let (timer, ticks) = (timer.clone(), ticks.clone());
        let first = start + period * i as u32 / N as u32;
        tasks.push(tokio::spawn(async move {
            let mut interval = timer.interval_at(first, period);
            for n in 0..3u32 {
                let due = Instant::from_std(interval.tick().await);
                let now = Instant::now();
                assert_eq!(due, first + period * n, "interval {i}: tick {n}");
                assert!(
                    now >= due && now - due <= ms(1),
                    "interval {i}: tick {n} at {:?}",
                    now - due
                );
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
    }
    common::join_within(tasks, Duration::from_secs(60), "a tick never came").await;
    assert_eq!(ticks.load(std::sync::atomic::Ordering::Relaxed), 3 * N);
}
