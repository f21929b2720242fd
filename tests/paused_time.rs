//! Paused time behaves as with `tokio::time`: written like tokio's own
//! `time_pause.rs` and `time_sleep.rs` tests, with `tokio_test::task::spawn`,
//! `is_woken()` and no extra yields, and where it helps, with a
//! `tokio::time::Sleep` beside each timeout as the reference.

use std::time::Duration;

use hashwheel::Timer;
use tokio::time::{self, Instant};
use tokio_test::{assert_pending, assert_ready, task};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// The case: the timer is created half a millisecond into the
/// paused clock, a sleep 200 µs later. It completes when tokio's does (it
/// used to take 3 ms: the deadline rounded up to the timer's own 1 ms grid,
/// then to the runtime's).
#[tokio::test(start_paused = true)]
async fn sleep_completes_with_tokio_wherever_the_timer_started() {
    time::advance(us(500)).await;
    let timer = Timer::new();
    time::advance(us(200)).await;
    let start = Instant::now();
    let mut ours = task::spawn(timer.sleep(ms(1)));
    let mut theirs = task::spawn(time::sleep(ms(1)));
    assert_pending!(ours.poll());
    assert_pending!(theirs.poll());
    for _ in 0..40 {
        time::advance(us(100)).await;
        assert_eq!(
            ours.is_woken(),
            theirs.is_woken(),
            "at {:?}",
            start.elapsed()
        );
        if theirs.is_woken() {
            assert_ready!(ours.poll());
            assert_ready!(theirs.poll());
            return;
        }
    }
    panic!("tokio's sleep never completed");
}

/// The same over many offsets of the timer's start and of the sleep within
/// the runtime's millisecond, and over delays of 1 to 3 ms.
#[tokio::test(start_paused = true)]
async fn sleeps_complete_with_tokio_at_any_offset() {
    for start_offset in [0, 1, 200, 500, 999] {
        time::advance(us(start_offset)).await;
        let timer = Timer::new();
        for offset in [0, 1, 100, 250, 999] {
            for delay in [us(1), ms(1), us(1_500), ms(2), us(2_999), ms(3)] {
                time::advance(us(offset)).await;
                let mut ours = task::spawn(timer.sleep(delay));
                let mut theirs = task::spawn(time::sleep(delay));
                assert_pending!(ours.poll());
                assert_pending!(theirs.poll());
                let created = Instant::now();
                while !theirs.is_woken() {
                    assert!(!ours.is_woken(), "early: {delay:?} at {offset} µs");
                    time::advance(us(50)).await;
                    assert!(created.elapsed() < ms(10));
                }
                assert!(
                    ours.is_woken(),
                    "late: {delay:?} at {offset} µs, timer started at {start_offset} µs"
                );
                assert_ready!(ours.poll());
                assert!(created.elapsed() >= delay, "early");
            }
        }
    }
}

/// tokio's `advance_once_with_timer`: a timeout made due by `advance` has
/// been woken by the time `advance` returns.
#[tokio::test(start_paused = true)]
async fn advance_once_with_timer() {
    let timer = Timer::new();
    let mut sleep = task::spawn(timer.sleep(ms(1)));
    assert_pending!(sleep.poll());

    time::advance(us(250)).await;
    assert_pending!(sleep.poll());

    time::advance(us(1500)).await;

    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
}

/// tokio's `advance_multi_with_timer`.
#[tokio::test(start_paused = true)]
async fn advance_multi_with_timer() {
    let timer = Timer::new();
    let mut sleep = task::spawn(timer.sleep(ms(1)));
    assert_pending!(sleep.poll());

    for _ in 0..3 {
        time::advance(us(250)).await;
        assert_pending!(sleep.poll());
    }
    time::advance(us(250)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
}

/// tokio's `advance_after_poll` and `regression_3710_with_submillis_advance`:
/// advancing short of the deadline neither wakes nor completes it.
#[tokio::test(start_paused = true)]
async fn advance_short_of_the_deadline_leaves_it_pending() {
    let timer = Timer::new();
    time::sleep(ms(1)).await;
    let start = Instant::now();
    let mut sleep = task::spawn(timer.sleep_until(start + ms(300)));
    assert_pending!(sleep.poll());
    time::advance(ms(100)).await;
    assert!(!sleep.is_woken());
    assert_pending!(sleep.poll());
    time::advance(us(51_592)).await;
    assert!(!sleep.is_woken());
    assert_pending!(sleep.poll());
    time::advance(ms(149)).await;
    assert!(sleep.is_woken());
    assert_ready!(sleep.poll());
}

/// tokio's `delayed_sleep_level_0`: `sleep_until(now + d).await` takes
/// exactly `d`.
#[tokio::test(start_paused = true)]
async fn delayed_sleep_takes_exactly_its_delay() {
    let timer = Timer::new();
    for i in [1, 10, 60] {
        let now = Instant::now();
        timer.sleep_until(now + ms(i)).await;
        assert_eq!(now.elapsed(), ms(i));
    }
}

/// tokio's `immediate_sleep` and `sleep_until_past_deadline`: a deadline at
/// or before now is ready on the first poll, with no driver turn.
#[tokio::test(start_paused = true)]
async fn a_past_deadline_is_ready_on_the_first_poll() {
    let timer = Timer::new();
    time::advance(ms(5)).await;
    let now = Instant::now();
    assert_ready!(task::spawn(timer.sleep_until(now)).poll());
    assert_ready!(task::spawn(timer.sleep_until(now - ms(1))).poll());
    assert_ready!(task::spawn(timer.sleep(Duration::ZERO)).poll());
    let mut fut = task::spawn(timer.timeout_at(now - ms(1), std::future::pending::<()>()));
    assert!(assert_ready!(fut.poll()).is_err());
    let mut fut = task::spawn(timer.timeout(Duration::ZERO, std::future::ready(7)));
    assert_eq!(assert_ready!(fut.poll()), Ok(7));
    assert_eq!(timer.stats().driver_wakeups, 0, "no turn of the driver");
    assert_eq!(timer.stats().fired, 5);
    assert_eq!(timer.pending(), 0);
}

/// Issue 27: `is_expired` follows tokio's `Sleep::is_elapsed`: a timeout
/// never polled reports `false` whatever its deadline (a never-polled
/// `sleep_until(2 s ago)` reported `true`), and once polled reports `true`
/// from its deadline on. `hashwheel::time::Sleep::is_elapsed` agrees.
#[tokio::test(start_paused = true)]
async fn is_expired_is_false_until_the_first_poll_whatever_the_deadline() {
    let timer = Timer::new();
    time::advance(ms(5000)).await;

    // Its deadline had passed when it was created.
    let mut past = task::spawn(timer.sleep_until(Instant::now() - ms(2000)));
    assert!(!past.is_expired(), "never polled");
    let mut zero = task::spawn(timer.sleep(Duration::ZERO));
    assert!(!zero.is_expired(), "never polled");
    let mut sleep = task::spawn(hashwheel::time::sleep_until(Instant::now() - ms(2000)));
    assert!(!sleep.is_elapsed(), "never polled");

    // Its deadline passes before its first poll.
    let mut later = timer.sleep(ms(5));
    time::advance(ms(20)).await;
    assert!(!later.is_expired(), "never polled");

    assert_ready!(past.poll());
    assert_ready!(zero.poll());
    assert_ready!(sleep.poll());
    assert!(past.is_expired() && zero.is_expired());
    assert!(sleep.is_elapsed());
    let start = Instant::now();
    (&mut later).await;
    assert!(later.is_expired());
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(!past.is_cancelled());

    // Polled while pending: `true` as the driver fires it, before the
    // task polls it again.
    let mut polled = task::spawn(timer.sleep(ms(5)));
    assert_pending!(polled.poll());
    assert!(!polled.is_expired());
    time::advance(ms(5)).await;
    assert!(polled.is_woken());
    assert!(polled.is_expired());

    // A reset makes it pending again, unpolled: `false` until polled.
    past.reset(ms(1));
    assert!(!past.is_expired());
    time::advance(ms(2)).await;
    assert!(!past.is_expired());
    let mut past = past.into_inner();
    (&mut past).await;
    assert!(past.is_expired());
}

/// tokio's `interval` test of `time_pause.rs`, on a hashwheel `Interval`.
#[tokio::test(start_paused = true)]
async fn interval_ticks_as_tokio_does() {
    let timer = Timer::new();
    let start = Instant::now();
    time::advance(ms(1)).await;
    let mut i = task::spawn(timer.interval_at(start, ms(300)));
    let mut next = || i.enter(|cx, mut i| i.poll_tick(cx));

    assert_eq!(Instant::from_std(assert_ready!(next())), start);
    assert_pending!(next());

    time::advance(ms(100)).await;
    assert_pending!(next());

    time::advance(ms(200)).await;
    assert_eq!(Instant::from_std(assert_ready!(next())), start + ms(300));
    assert_pending!(next());

    time::advance(ms(400)).await;
    assert_eq!(Instant::from_std(assert_ready!(next())), start + ms(600));
    assert_pending!(next());

    time::advance(ms(500)).await;
    assert_eq!(Instant::from_std(assert_ready!(next())), start + ms(900));
    assert_eq!(Instant::from_std(assert_ready!(next())), start + ms(1200));
    assert_pending!(next());
}

/// `deadline()` is the deadline itself, to the microsecond: no rounding to
/// the tick.
#[tokio::test(start_paused = true)]
async fn deadline_is_kept_to_the_microsecond() {
    let timer = Timer::new();
    time::advance(us(300)).await;
    let deadline = Instant::now() + us(1_234);
    assert_eq!(timer.sleep_until(deadline).deadline(), deadline.into_std());
    let coarse = Timer::builder().tick(ms(10)).build().unwrap();
    assert_eq!(coarse.sleep_until(deadline).deadline(), deadline.into_std());
}

/// With a tick over 1 ms the driver batches: a timeout completes at the
/// next multiple of the tick since the timer's start, never before its
/// deadline.
#[tokio::test(start_paused = true)]
async fn a_coarse_tick_batches_on_its_grid() {
    let timer = Timer::builder().tick(ms(10)).build().unwrap();
    let start = Instant::now();
    let mut a = task::spawn(timer.sleep(ms(3)));
    let mut b = task::spawn(timer.sleep(ms(7)));
    assert_pending!(a.poll());
    assert_pending!(b.poll());
    time::advance(ms(9)).await;
    assert!(!a.is_woken() && !b.is_woken());
    time::advance(ms(1)).await;
    assert!(a.is_woken() && b.is_woken());
    assert_eq!(start.elapsed(), ms(10));
    assert_eq!(timer.stats().driver_wakeups, 1);
}

/// The sleeps of [`late_by_at_most_a_tick`], one after another from
/// offsets that walk the runtime's millisecond, and all at once.
const COARSE_DELAYS_US: [u64; 14] = [
    1, 100, 499, 999, 1_000, 1_001, 1_500, 2_000, 2_400, 3_100, 4_900, 5_000, 7_300, 12_345,
];

/// On a paused runtime started `offset` into its first millisecond (the
/// timer built there), a timer of tick `tick` fires every sleep of
/// [`COARSE_DELAYS_US`] no earlier than its deadline and at most a tick
/// after it: the clock is brought to a nanosecond before each deadline
/// (not woken) and then to the deadline plus the tick (woken).
fn late_by_at_most_a_tick(tick: Duration, offset: Duration) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        time::advance(offset).await;
        let timer = Timer::builder().tick(tick).build().unwrap();
        let what = |d: u64| format!("tick {tick:?}, timer {offset:?} into the runtime, {d} µs");
        // One after another, each from a new offset within the runtime's
        // millisecond.
        for (i, d) in (0u64..).zip(COARSE_DELAYS_US) {
            time::advance(us(137 * i % 1_000 + 1)).await;
            let deadline = Instant::now() + us(d);
            let mut sleep = task::spawn(timer.sleep(us(d)));
            assert_pending!(sleep.poll());
            time::advance(deadline - Instant::now() - Duration::from_nanos(1)).await;
            assert!(!sleep.is_woken(), "{}: early", what(d));
            time::advance(deadline + tick - Instant::now()).await;
            assert!(sleep.is_woken(), "{}: more than a tick late", what(d));
            assert_ready!(sleep.poll());
        }
        // All at once: each checked at its own deadline, in order.
        let start = Instant::now();
        let mut sleeps: Vec<_> = COARSE_DELAYS_US
            .iter()
            .map(|&d| (d, task::spawn(timer.sleep(us(d)))))
            .collect();
        for (_, sleep) in &mut sleeps {
            assert_pending!(sleep.poll());
        }
        let mut checks: Vec<(Instant, bool, usize)> = Vec::new();
        for (i, &d) in COARSE_DELAYS_US.iter().enumerate() {
            checks.push((start + us(d) - Duration::from_nanos(1), false, i));
            checks.push((start + us(d) + tick, true, i));
        }
        checks.sort();
        for (at, woken, i) in checks {
            if at > Instant::now() {
                time::advance(at - Instant::now()).await;
            }
            let (d, sleep) = &mut sleeps[i];
            if woken {
                assert!(
                    sleep.is_woken(),
                    "{} at once: more than a tick late",
                    what(*d)
                );
            } else {
                assert!(!sleep.is_woken(), "{} at once: early", what(*d));
            }
        }
        timer.stop();
    });
}

/// Issue 37, item 1: "at most one tick late, never early" holds for ticks
/// over a millisecond wherever the runtime's millisecond lies. The alarm
/// rang on multiples of the tick since the timer's start, and the
/// runtime's timer then rounded each up to its own millisecond: a 1.5 ms
/// tick fired `sleep(100 µs)` 1.9 ms late, a 2 ms tick on a timer built
/// half a millisecond into its runtime 2.9 ms late. Every start offset
/// within the runtime's millisecond (to the microsecond, and off it by
/// nanoseconds), ticks of 1.5, 2, 2.5 and 5 ms.
#[test]
fn a_coarse_tick_fires_at_most_a_tick_late_from_any_start_offset() {
    let mut offsets: Vec<Duration> = (0..1_000).step_by(50).map(us).collect();
    offsets.extend([
        us(1),
        us(999),
        Duration::from_nanos(333),
        Duration::from_nanos(999_999),
    ]);
    for tick in [us(1_500), ms(2), us(2_500), ms(5)] {
        for &offset in &offsets {
            late_by_at_most_a_tick(tick, offset);
        }
    }
}

/// Idles on a oneshot sent from an OS thread after 30 ms of real time, and
/// returns how far the paused clock moved meanwhile.
async fn paused_clock_moved_while_idle() -> Duration {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(ms(30));
        tx.send(()).unwrap();
    });
    let before = Instant::now();
    rx.await.unwrap();
    sender.join().unwrap();
    Instant::now() - before
}

/// Issue 26, found 1: once nothing is pending, the timer leaves no runtime
/// timer registered for tokio's auto-advance to jump to. Two sleeps (the
/// second polled once before the first completes), both completed; then
/// the runtime idles on a channel: the paused clock stays where
/// `tokio::time` leaves it (it used to jump 1 ms, to the alarm's spare).
#[tokio::test(start_paused = true)]
async fn the_paused_clock_stays_put_once_nothing_is_pending() {
    // The reference: tokio::time's sleeps.
    {
        let first = time::sleep(ms(10));
        let mut second = task::spawn(time::sleep(ms(20)));
        assert_pending!(second.poll());
        first.await;
        second.await;
    }
    let tokio_moved = paused_clock_moved_while_idle().await;
    assert_eq!(tokio_moved, Duration::ZERO, "tokio::time's reference");
    let timer = Timer::new();
    let start = Instant::now();
    let first = timer.sleep(ms(10));
    let mut second = task::spawn(timer.sleep(ms(20)));
    assert_pending!(second.poll());
    first.await;
    second.await;
    assert_eq!(start.elapsed(), ms(20));
    assert_eq!(timer.pending(), 0);
    assert_eq!(paused_clock_moved_while_idle().await, tokio_moved);
}

/// The same through `hashwheel::time`, switched by its `use` line.
#[tokio::test(start_paused = true)]
async fn the_paused_clock_stays_put_through_hashwheel_time() {
    let start = Instant::now();
    let first = hashwheel::time::sleep(ms(10));
    let mut second = task::spawn(hashwheel::time::sleep(ms(20)));
    assert_pending!(second.poll());
    first.await;
    second.await;
    assert_eq!(start.elapsed(), ms(20));
    assert_eq!(paused_clock_moved_while_idle().await, Duration::ZERO);
}

/// Issue 43, item 3: a timeout completed by a reset to the past is a
/// completion, not a drop: once it was the timer's last, the idle paused
/// clock stays put, as tokio's does (it jumped 10 s, to the deadline the
/// alarm was left armed for), through `Timer` and `hashwheel::time`.
#[tokio::test(start_paused = true)]
async fn a_timeout_completed_by_a_reset_to_the_past_leaves_no_alarm() {
    assert_eq!(
        moved_after_a_reset_to_the_past(Duration::ZERO).await,
        Duration::ZERO
    );

    hashwheel::time::sleep(ms(5)).await;
    let mut sleep = Box::pin(hashwheel::time::sleep(Duration::from_secs(10)));
    assert_pending!(task::spawn(&mut sleep).poll());
    sleep.as_mut().reset(Instant::now() - ms(1));
    sleep.as_mut().await;
    assert_eq!(paused_clock_moved_while_idle().await, Duration::ZERO);
}

/// A timer built `offset` into the paused clock completes its last timeout
/// by a reset to the past; then the runtime idles: how far its clock moved.
async fn moved_after_a_reset_to_the_past(offset: Duration) -> Duration {
    time::advance(offset).await;
    let timer = Timer::new();
    // The driver turns once: the wheel's time is 5 ms (after the offset).
    timer.sleep(ms(5)).await;
    let mut sleep = task::spawn(timer.sleep(Duration::from_secs(10)));
    assert_pending!(sleep.poll());
    sleep.reset_at(Instant::now() - ms(1));
    assert_ready!(sleep.poll());
    assert!(sleep.is_expired());
    assert_eq!(timer.pending(), 0);
    paused_clock_moved_while_idle().await
}

/// A timer built outside its runtime (`Builder::handle`) starts its clock
/// by the runtime's paused time, not std's: its sleeps complete with
/// tokio's (found by the guarantees matrix: it completed 1 ms late, its
/// start read from std's clock, a little after the paused one).
#[test]
fn a_timer_built_outside_its_paused_runtime_keeps_tokios_time() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    std::thread::sleep(us(300));
    let timer = Timer::builder()
        .handle(rt.handle().clone())
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        timer.sleep(ms(10)).await;
        assert_eq!(start.elapsed(), ms(10));
    });
}

/// Where paused time still differs from `tokio::time` (docs/MIGRATING.md):
/// a timeout dropped before its deadline leaves the driver's alarm armed
/// at that deadline (disarming it would cost every cancel a look at the
/// whole timer), so an idle paused runtime auto-advances to it once, and
/// from then on stays put.
#[tokio::test(start_paused = true)]
async fn a_dropped_timeout_leaves_the_alarm_for_one_auto_advance() {
    let timer = Timer::new();
    let mut dropped = task::spawn(timer.sleep(ms(10)));
    assert_pending!(dropped.poll());
    drop(dropped);
    assert_eq!(timer.pending(), 0);
    assert_eq!(paused_clock_moved_while_idle().await, ms(10));
    assert_eq!(paused_clock_moved_while_idle().await, Duration::ZERO);
}

/// The runtime's parks over a paused run of deadlines every 500 µs for
/// 200 ms on a timer of tick `tick`, and the timer's turns.
fn parks_and_turns(tick: Duration) -> (u64, u64) {
    parks_and_turns_built_at(tick, Duration::ZERO, Duration::ZERO)
}

/// [`parks_and_turns`] for a timer built `offset` into the runtime, the
/// clock then moved on by `realign` before the run.
fn parks_and_turns_built_at(tick: Duration, offset: Duration, realign: Duration) -> (u64, u64) {
    counting_parks(true, || async {
        time::advance(offset).await;
        let timer = Timer::builder().tick(tick).build().unwrap();
        time::advance(realign).await;
        let start = Instant::now();
        let dues = (0..400u64).map(|i| start + us(500 * i + 250));
        await_each(dues.map(|due| (due, Box::pin(timer.sleep_until(due)) as Waiting))).await;
        timer.stats().driver_wakeups
    })
}

/// A wait of [`await_each`].
type Waiting = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs `f`'s future on a current-thread runtime of its own (its time
/// paused from the start if `paused`); returns the runtime's parks and the
/// future's output.
fn counting_parks<F: std::future::Future>(paused: bool, f: impl FnOnce() -> F) -> (u64, F::Output) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    let parks = Arc::new(AtomicU64::new(0));
    let counter = parks.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(paused)
        .on_thread_park(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let out = rt.block_on(f());
    (parks.load(Ordering::Relaxed), out)
}

/// Awaits each wait due at its instant in a task of its own, checking it
/// ends no earlier.
async fn await_each(waits: impl Iterator<Item = (Instant, Waiting)>) {
    let tasks: Vec<_> = waits
        .map(|(due, wait)| {
            tokio::spawn(async move {
                wait.await;
                assert!(Instant::now() >= due, "never early");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// A coarser tick parks the runtime once a turn: the alarm's ring goes a
/// turn of its grid apart, not a millisecond (at a millisecond, a timer of
/// a 2 ms tick woke its runtime every millisecond for nothing, the parks
/// of a 1 ms tick for half the turns). On paused time every runtime timer
/// is a park: the runtime advances its clock to it. The grid is the tick's
/// whole milliseconds (the runtime's timer rings on nothing finer): a
/// 1.5 ms tick turns every millisecond, a 2.5 ms one every 2, and a
/// 1.999 ms one every millisecond, twice a tick (issue 43, item 6: the docs
/// said at most once per tick, which holds for ticks of whole milliseconds
/// and on the thread driver only; they say this now).
#[test]
fn a_coarser_tick_parks_the_runtime_once_a_turn() {
    for tick in [ms(1), us(1_500), us(1_999), ms(2), us(2_500), ms(5)] {
        let (parks, turns) = parks_and_turns(tick);
        let grid_us = tick.as_micros() as u64 / 1_000 * 1_000;
        let expected = 200_000 / grid_us;
        assert!(
            turns >= expected - 2 && turns <= expected + 2,
            "tick {tick:?}: {turns} turns in 200 ms, {expected} expected"
        );
        // A park for each turn, and a few around the run (the first
        // poll, the tasks' joins).
        assert!(
            parks <= turns + 5,
            "tick {tick:?}: {parks} parks for {turns} turns"
        );
    }
}

/// The same for a timer built off the runtime's millisecond (its start
/// 300 µs into it), with the paused clock then on the runtime's
/// milliseconds again or still off them: the driver turns once per turn of
/// its grid on the runtime's milliseconds, one park each (ringing on
/// multiples of the tick since the timer's start, a timer off the
/// millisecond turned on the right grid only because the runtime rounded
/// every ring up a millisecond late).
#[test]
fn a_coarser_tick_built_off_the_millisecond_parks_once_a_turn() {
    for tick in [us(1_500), ms(2), us(2_500), ms(5)] {
        for realign in [us(700), Duration::ZERO] {
            let (parks, turns) = parks_and_turns_built_at(tick, us(300), realign);
            let grid_us = tick.as_micros() as u64 / 1_000 * 1_000;
            let expected = 200_000 / grid_us;
            assert!(
                turns >= expected - 2 && turns <= expected + 2,
                "tick {tick:?}, realigned by {realign:?}: {turns} turns in 200 ms, \
                 {expected} expected"
            );
            assert!(
                parks <= turns + 5,
                "tick {tick:?}, realigned by {realign:?}: {parks} parks for {turns} turns"
            );
        }
    }
}

// ---- issue 56, item 2: the values and instants of `tokio::time` ----
//
// Each case runs the same code twice on a paused runtime of its own, with
// `t` naming `tokio::time`, then `hashwheel::time` (switched by the `use`
// line alone), and checks tokio's answer first, then ours against it.
// `tests/paused_time_differential.rs` does the same over random scripts.

/// Runs `f`'s future on a current-thread runtime of its own, its time
/// paused from the start.
fn paused<F: std::future::Future>(f: impl FnOnce() -> F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(f())
}

/// `$body` with `$t` naming `tokio::time`, then `hashwheel::time`: both
/// answers.
macro_rules! both {
    (|$t:ident| $body:expr) => {{
        let theirs = {
            use tokio::time as $t;
            $body
        };
        let ours = {
            use hashwheel::time as $t;
            $body
        };
        (theirs, ours)
    }};
}

/// A clock off the runtime timer's millisecond (advanced by a whole
/// number of microseconds, not of milliseconds): a deadline completes
/// when tokio's runtime timer processes its millisecond, rounded up, and
/// not before. `timeout(237 µs, sleep(875 µs))` elapses (it was `Ok`: the
/// driver turned at the microsecond, 1.5 ms, and fired the sleep due at
/// 1.375 ms with the timeout); two sleeps of 237 and 875 µs wake 1 and
/// 2 ms later (both woke after 1 ms).
#[test]
fn off_the_millisecond_a_deadline_completes_in_tokios_millisecond() {
    let (theirs, ours) = both!(|t| paused(|| async {
        tokio::time::advance(us(500)).await;
        let start = Instant::now();
        let elapsed = t::timeout(us(237), t::sleep(us(875))).await.is_err();
        let timed_out = (elapsed, start.elapsed());
        let start = Instant::now();
        let short = tokio::spawn(async move {
            t::sleep(us(237)).await;
            start.elapsed()
        });
        let long = tokio::spawn(async move {
            t::sleep(us(875)).await;
            start.elapsed()
        });
        (timed_out, short.await.unwrap(), long.await.unwrap())
    }));
    assert_eq!(theirs, ((true, ms(1)), ms(1), ms(2)), "tokio::time");
    assert_eq!(ours, theirs);
}

/// The default timer first used off the microsecond (a third of a
/// millisecond in): `sleep_until(start + 2 ms)` completes with tokio's, at
/// 2.333 ms (it completed at 3.333 ms: the timer's clock started at its
/// first use, its deadline rounded up to the microsecond from there fell
/// past the runtime's millisecond, later than tokio's).
#[test]
fn a_timer_first_used_off_the_microsecond_keeps_tokios_millisecond() {
    let (theirs, ours) = both!(|t| paused(|| async {
        let start = Instant::now();
        tokio::time::advance(ms(1) / 3).await;
        t::sleep_until(start + ms(2)).await;
        start.elapsed()
    }));
    assert_eq!(theirs, ms(2) + ms(1) / 3, "tokio::time");
    assert_eq!(ours, theirs);
}

/// Zero and past deadlines complete at their first poll only once tokio's
/// runtime timer has processed their millisecond. Off the millisecond
/// (its current one not processed), a zero sleep, a deadline 100 µs in
/// the past and an interval's first tick each take a millisecond (they
/// took none); on it, a task that runs between two advances of the clock
/// sees its interval's first tick when the runtime next processes its
/// timer, after the second advance, at 22 ms (it saw it at 18 ms).
#[test]
fn zero_and_past_deadlines_wait_for_tokios_millisecond() {
    let (theirs, ours) = both!(|t| paused(|| async {
        tokio::time::advance(us(300)).await;
        let start = Instant::now();
        t::sleep(Duration::ZERO).await;
        let zero = start.elapsed();
        let start = Instant::now();
        t::sleep_until(start - us(100)).await;
        let past = start.elapsed();
        let start = Instant::now();
        let mut interval = t::interval(ms(10));
        let first = interval.tick().await;
        (zero, past, first == start, start.elapsed())
    }));
    assert_eq!(theirs, (ms(1), ms(1), true, ms(1)), "tokio::time");
    assert_eq!(ours, theirs);

    let (theirs, ours) = both!(|t| paused(|| async {
        let start = Instant::now();
        let task = tokio::spawn(async move {
            let mut interval = t::interval(ms(10));
            let first = interval.tick().await;
            (first - start, start.elapsed())
        });
        tokio::time::advance(ms(18)).await;
        tokio::time::advance(ms(4)).await;
        task.await.unwrap()
    }));
    assert_eq!(theirs, (ms(18), ms(22)), "tokio::time");
    assert_eq!(ours, theirs);
}

/// Issue 43, item 3, off the millisecond: a timeout completed by a reset
/// to the past, the timer's last, leaves no alarm for an idle paused
/// runtime to auto-advance to (the driver's turn that takes the alarm down
/// is armed for a millisecond tokio's timer has processed; armed for now,
/// it waited for the next one, and the clock jumped 1 ms to it).
#[tokio::test(start_paused = true)]
async fn off_the_millisecond_a_reset_to_the_past_leaves_no_alarm() {
    assert_eq!(
        moved_after_a_reset_to_the_past(us(400)).await,
        Duration::ZERO
    );
}

/// Resumed, the runtime's time is the real clock again, and a timer built
/// on paused time keeps the microsecond again from its driver's next turn:
/// a zero sleep completes as it is made (following tokio's millisecond, it
/// waits for its first poll and the runtime timer's next one).
#[tokio::test(start_paused = true)]
async fn resumed_a_timer_built_on_paused_time_keeps_the_microsecond() {
    let timer = Timer::new();
    let zero = timer.sleep(Duration::ZERO);
    assert_eq!(
        timer.pending(),
        0,
        "the runtime's timer processed its millisecond"
    );
    drop(zero);
    time::advance(us(300)).await;
    let zero = timer.sleep(Duration::ZERO);
    assert_eq!(
        timer.pending(),
        1,
        "paused, off the millisecond: decided at its first poll"
    );
    drop(zero);
    time::resume();
    timer.sleep(ms(1)).await;
    let zero = timer.sleep(Duration::ZERO);
    assert_eq!(timer.pending(), 0, "resumed: completed as it was made");
    drop(zero);
}

/// Off the millisecond, a deadline due by the clock whose millisecond the
/// runtime's timer has not processed registers, and its alarm rings at
/// that timer's next processing, as a `tokio::time::Sleep` registered then
/// does: no task is spawned to turn the driver sooner (one was: the
/// alarm, finding its instant passed, spawned a task to wake the driver,
/// whose turn then found nothing due by tokio's rule).
#[tokio::test(start_paused = true)]
async fn off_the_millisecond_a_deadline_due_by_the_clock_waits_without_a_task() {
    time::advance(us(300)).await;
    let timer = Timer::new();
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks = metrics.num_alive_tasks();
    let start = Instant::now();
    let mut sleep = timer.sleep_until(start);
    assert!(futures::poll!(&mut sleep).is_pending());
    assert_eq!(metrics.num_alive_tasks(), tasks, "a task was spawned");
    sleep.await;
    assert_eq!(start.elapsed(), ms(1));
}

/// The order of wakes within a millisecond: tokio's timer wakes the tasks
/// due in one millisecond in the order their sleeps registered, and a
/// task's interval registers its next tick as the task polls for it. Two
/// sleeps of 900 and 300 µs, registered in that order, wake in that order
/// (the 300 µs one woke first: the driver fired by the microsecond); an
/// interval whose next tick falls in the millisecond of a sleep that
/// registered before the interval's task polled for it wakes after it
/// (first: the driver re-armed the interval as it fired the tick before).
#[test]
fn tasks_due_in_one_millisecond_wake_in_the_order_they_registered() {
    use std::sync::{Arc, Mutex};
    let (theirs, ours) = both!(|t| paused(|| async {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sleeper = |name: &'static str, d: Duration| {
            let log = log.clone();
            tokio::spawn(async move {
                t::sleep(d).await;
                log.lock().unwrap().push(name);
            })
        };
        let (a, b) = (sleeper("900 µs", us(900)), sleeper("300 µs", us(300)));
        a.await.unwrap();
        b.await.unwrap();

        let start = Instant::now();
        let sleeps = {
            let log = log.clone();
            tokio::spawn(async move {
                t::sleep(ms(1)).await;
                t::sleep(ms(1)).await;
                log.lock().unwrap().push("sleep");
            })
        };
        let ticks = {
            let log = log.clone();
            tokio::spawn(async move {
                let mut interval = t::interval_at(start + ms(1), ms(1));
                interval.tick().await;
                interval.tick().await;
                log.lock().unwrap().push("interval");
            })
        };
        sleeps.await.unwrap();
        ticks.await.unwrap();
        let log = log.lock().unwrap().clone();
        log
    }));
    assert_eq!(
        theirs,
        ["900 µs", "300 µs", "sleep", "interval"],
        "tokio::time"
    );
    assert_eq!(ours, theirs);
}

/// A registered sleep moved to a later millisecond stays where it was
/// until its old millisecond comes, then goes behind what registered in
/// its new one meanwhile, as tokio's does: a 500 µs sleep moved to 1.7 ms
/// wakes after a 1.9 ms sleep registered after the move (it woke first:
/// the driver filed it again at its microsecond, ahead of the other).
#[test]
fn a_sleep_moved_later_wakes_behind_what_registered_meanwhile() {
    use std::sync::{Arc, Mutex};
    let (theirs, ours) = both!(|t| paused(|| async {
        let log = Arc::new(Mutex::new(Vec::new()));
        let moved = {
            let log = log.clone();
            tokio::spawn(async move {
                let sleep = t::sleep(us(500));
                tokio::pin!(sleep);
                assert!(futures::poll!(sleep.as_mut()).is_pending());
                sleep.as_mut().reset(Instant::now() + us(1_700));
                sleep.await;
                log.lock().unwrap().push("moved");
            })
        };
        let other = {
            let log = log.clone();
            tokio::spawn(async move {
                t::sleep(us(1_900)).await;
                log.lock().unwrap().push("other");
            })
        };
        moved.await.unwrap();
        other.await.unwrap();
        let log = log.lock().unwrap().clone();
        log
    }));
    assert_eq!(theirs, ["other", "moved"], "tokio::time");
    assert_eq!(ours, theirs);
}

/// The runtime's parks over a paused run of 100 deadlines `every` apart
/// (a few tens of microseconds off the millisecond), each awaited by a
/// task of its own through a timeout of a timer built before the
/// runtime's time is paused (it keeps the microsecond, as on the real
/// clock) or on paused time, or through a `tokio::time::Sleep` (`tokio`);
/// and the timer's turns.
fn parks_for_deadlines(every: Duration, built_paused: bool, tokio: bool) -> (u64, u64) {
    counting_parks(false, || async {
        if built_paused {
            time::pause();
        }
        let timer = Timer::new();
        if !built_paused {
            time::pause();
        }
        let start = Instant::now();
        let dues = (0..100u32).map(|i| start + every * (i + 1) + us(u64::from(i % 7) * 37));
        await_each(dues.map(|due| {
            let wait: Waiting = if tokio {
                Box::pin(time::sleep_until(due))
            } else {
                Box::pin(timer.sleep_until(due))
            };
            (due, wait)
        }))
        .await;
        timer.stats().driver_wakeups
    })
}

/// Sparse deadlines (each a few milliseconds after the one before) park
/// the runtime as often as `tokio::time`'s sleeps do: once a deadline.
/// The alarm's ring keeps its later timers only while the work is in the
/// next turn of its grid; kept after a turn of sparse work, they woke the
/// runtime for nothing at the next two milliseconds (on the real clock a
/// wake-up each, in place of a write to its eventfd): 198 parks for 100
/// deadlines 2 ms apart, 295 for 3 ms (tokio: 103, 102).
#[test]
fn sparse_deadlines_park_the_runtime_once_each_as_tokio() {
    for every in [ms(1), ms(2), ms(3), ms(10)] {
        let (theirs, _) = parks_for_deadlines(every, false, true);
        for built_paused in [false, true] {
            let (parks, turns) = parks_for_deadlines(every, built_paused, false);
            assert!(
                (98..=102).contains(&turns),
                "every {every:?}, built paused {built_paused}: {turns} turns for 100 deadlines"
            );
            assert!(
                parks <= theirs + 2,
                "every {every:?}, built paused {built_paused}: {parks} parks, tokio's {theirs}"
            );
        }
    }
}
