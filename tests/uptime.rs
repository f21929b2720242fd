//! Long uptime: a timer that has turned for years of paused time, with
//! deadlines across 2^32 ticks and timers longer than two years next to
//! short ones, still fires short timers on time (the class of tokio #8334
//! and tokio-timer #38).

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{advance, settle, MS};
use hashwheel::Timer;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};

const DAY: Duration = Duration::from_secs(86_400);
const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// Checks that a fresh `delay` timeout fires exactly at its deadline, not a
/// tick before.
async fn fires_exactly_after(timer: &Timer, delay: Duration) {
    let start = Instant::now();
    let mut t = task::spawn(timer.sleep(delay));
    assert_pending!(t.poll());
    if delay > MS {
        advance(delay - MS).await;
        assert_pending!(t.poll(), "{delay:?} fired a tick early after {start:?}");
    }
    advance(delay.min(MS)).await;
    assert!(t.is_woken(), "{delay:?} did not fire on time");
    assert_ready!(t.poll());
}

/// Moves the paused clock without waking the driver on the way (a jump).
async fn jump(d: Duration) {
    tokio::time::advance(d).await;
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn short_timers_stay_on_time_over_years_of_uptime() {
    let timer = Timer::new();
    let start = Instant::now();
    // Timers longer than two years, pending the whole time.
    let long_delays = [2 * YEAR + MS, 2 * YEAR + 37 * DAY + 5 * MS, 3 * YEAR];
    let mut long: Vec<_> = long_delays
        .iter()
        .map(|&d| task::spawn(timer.sleep(d)))
        .collect();
    for t in &mut long {
        assert_pending!(t.poll());
    }
    // 37-day jumps (more than 2^31 ms each, past 2^32 ms every other
    // jump), checking short timers on slot and round edges each time.
    let mut next_long = 0;
    while start.elapsed() + 37 * DAY < 3 * YEAR - DAY {
        jump(37 * DAY).await;
        for &ms in &[1u64, 7, 511, 512, 513] {
            fires_exactly_after(&timer, Duration::from_millis(ms)).await;
        }
        while next_long < long.len() && start.elapsed() >= long_delays[next_long] {
            next_long += 1;
        }
        for t in &mut long[next_long..] {
            assert!(!t.is_woken(), "a long timer fired early");
        }
    }
    assert!(start.elapsed() > 2 * YEAR + 37 * DAY);
    // The long ones fire at their deadline, exactly.
    for (t, &d) in long.iter_mut().zip(&long_delays) {
        if t.poll().is_ready() {
            continue;
        }
        let left = d - start.elapsed();
        jump(left - MS).await;
        assert_pending!(t.poll(), "fired a tick before {d:?}");
        advance(MS).await;
        assert!(t.is_woken());
        assert_ready!(t.poll());
        assert_eq!(start.elapsed(), d);
    }
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn deadlines_straddling_2_pow_32_ticks_fire_on_their_tick() {
    for tick_ms in [1u64, 10] {
        let tick = Duration::from_millis(tick_ms);
        let timer = Timer::builder().tick(tick).wheel_size(64).build().unwrap();
        let start = Instant::now();
        let edge = 1u64 << 32;
        let at =
            |ticks: u64| start + tick * 1000 * (ticks / 1000) as u32 + tick * (ticks % 1000) as u32;
        jump(at(edge - 3) - Instant::now()).await;
        let mut ts: Vec<_> = (edge - 2..=edge + 2)
            .map(|t| (t, task::spawn(timer.sleep_until(at(t)))))
            .collect();
        for (_, t) in &mut ts {
            assert_pending!(t.poll());
        }
        for now in edge - 2..=edge + 2 {
            advance(tick).await;
            assert_eq!(Instant::now(), at(now));
            for (due, t) in &mut ts {
                assert_eq!(t.is_woken(), *due == now, "tick {due} at tick {now}");
            }
            ts.retain_mut(|(_, t)| t.poll().is_pending());
        }
        assert!(ts.is_empty());
        fires_exactly_after(&timer, tick * 3).await;
    }
}

/// Regression: a jump over many turns of the round ring visited a far
/// entry's slot once per turn. With one bucket (a ring of 64 ticks) a
/// ten-year jump was 5 billion visits under the shard's lock.
#[test]
fn a_ten_year_jump_over_a_far_timer_with_a_tiny_wheel_does_not_hang() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let timer = Timer::builder().wheel_size(1).build().unwrap();
            let mut far = task::spawn(timer.sleep(20 * YEAR));
            assert_pending!(far.poll());
            jump(10 * YEAR).await;
            assert_pending!(far.poll());
            fires_exactly_after(&timer, 3 * MS).await;
            jump(10 * YEAR - 3 * MS).await;
            assert!(far.is_woken());
            assert_ready!(far.poll());
        });
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("a ten-year jump did not finish");
}

/// Regression: `deadline()` computed the instant in `u64` nanoseconds, which
/// end after 584 years, and reported far deadlines centuries early.
#[tokio::test(start_paused = true)]
async fn deadline_of_a_timeout_past_584_years_is_not_early() {
    let timer = Timer::new();
    for years in [583u32, 585, 1000, 2000] {
        let want = Instant::now() + YEAR * years;
        let t = timer.sleep_until(want);
        assert_eq!(Instant::from_std(t.deadline()), want, "{years} years");
    }
    // Past the wheel's range (2^46 ticks): "never", about 30 years out as
    // documented.
    let never = timer.sleep(YEAR * 3000);
    assert!(Instant::from_std(never.deadline()) >= Instant::now() + 29 * YEAR);
}

/// Regression: ticks were counted in `u64` nanoseconds, which end after 584
/// years: a later deadline was cut to 584 years (firing centuries early) and
/// the clock's tick stopped there (nothing fired after).
#[tokio::test(start_paused = true)]
async fn timers_keep_their_deadlines_past_584_years_of_uptime() {
    let timer = Timer::new();
    let start = Instant::now();
    let mut far = task::spawn(timer.sleep(YEAR * 700));
    assert_pending!(far.poll());
    jump(YEAR * 600).await;
    assert!(!far.is_woken(), "a 700-year timeout fired at 584 years");
    assert_pending!(far.poll());
    fires_exactly_after(&timer, 5 * MS).await;
    jump(YEAR * 100 - 5 * MS - MS).await;
    assert_pending!(far.poll());
    advance(MS).await;
    assert!(far.is_woken());
    assert_ready!(far.poll());
    assert_eq!(start.elapsed(), YEAR * 700);
}

/// Issue 43, item 4: an interval keeps its ticks past 292 years of the
/// timer's time (its next tick was an `i64` of nanoseconds, which
/// saturated there: every `tick()` was ready at once with the same
/// instant), as tokio's does, through `Timer` and `hashwheel::time`; and
/// one that starts 300 years out reports its start, not 7.5 years before
/// it.
#[tokio::test(start_paused = true)]
async fn intervals_keep_their_ticks_past_292_years_of_uptime() {
    let timer = Timer::new();
    let mut ours = timer.interval(Duration::from_secs(1));
    let mut drop_in = hashwheel::time::interval(Duration::from_secs(1));
    let mut theirs = tokio::time::interval(Duration::from_secs(1));
    ours.tick().await;
    drop_in.tick().await;
    theirs.tick().await;
    ours.set_missed_tick_behavior(hashwheel::MissedTickBehavior::Skip);
    drop_in.set_missed_tick_behavior(hashwheel::time::MissedTickBehavior::Skip);
    theirs.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    jump(YEAR * 300).await;
    // The late tick, then one a second apart.
    let (a, b, c) = (ours.tick().await, drop_in.tick().await, theirs.tick().await);
    assert_eq!(Instant::from_std(a), c);
    assert_eq!(b, c);
    for _ in 0..3 {
        let before = Instant::now();
        let (a, b, c) = (ours.tick().await, drop_in.tick().await, theirs.tick().await);
        assert_eq!(Instant::from_std(a), c);
        assert_eq!(b, c);
        assert!(Instant::now() > before, "a tick came at once");
    }

    let start = Instant::now() + YEAR * 300;
    let mut late = timer.interval_at(start.into_std(), Duration::from_secs(1));
    let mut late_drop_in = hashwheel::time::interval_at(start, Duration::from_secs(1));
    jump(YEAR * 300).await;
    assert_eq!(Instant::from_std(late.tick().await), start);
    assert_eq!(late_drop_in.tick().await, start);
    assert_eq!(
        Instant::from_std(late.tick().await),
        start + Duration::from_secs(1)
    );
}
