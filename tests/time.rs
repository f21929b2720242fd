//! `hashwheel::time`, the drop-in for `tokio::time`: a program written
//! against `tokio::time` compiles and behaves the same with its `use` line
//! changed, and each runtime gets a default timer of its own (runtimes one
//! after another and side by side, current-thread and multi-thread, paused
//! time), never a stopped one.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use futures_util::FutureExt;
use hashwheel::Timer;
use tokio::runtime::Builder;
use tokio_test::{assert_pending, task};

/// One program, written against `tokio::time`, compiled twice: once with
/// `use tokio::time::...` and once with `use hashwheel::time::...`. It
/// records what happened when (milliseconds after its start), so that the
/// two runs can be compared event for event.
macro_rules! program {
    ($name:ident, $($time:ident)::+) => {
        mod $name {
            use $($time)::+::{
                interval, sleep, sleep_until, timeout, timeout_at, Duration, Instant,
                MissedTickBehavior,
            };
            use $($time)::+::error::Elapsed;
            use tokio::sync::mpsc;

            pub async fn run() -> Vec<(u128, String)> {
                let start = Instant::now();
                let mut log = Vec::new();
                let mut note = |what: String| log.push((start.elapsed().as_millis(), what));

                sleep(Duration::from_millis(5)).await;
                note("slept".into());
                sleep_until(start + Duration::from_millis(20)).await;
                note("slept until 20".into());

                let ok = timeout(Duration::from_millis(10), async { 7 }).await;
                note(format!("timeout ok {ok:?}"));
                let late: Result<(), Elapsed> =
                    timeout(Duration::from_millis(10), std::future::pending()).await;
                note(format!("timeout late {}", late.is_err()));
                let at = timeout_at(start + Duration::from_millis(50), sleep(Duration::from_secs(1))).await;
                note(format!("timeout_at {}", at.is_err()));
                let io: std::io::Error = at.unwrap_err().into();
                note(format!("as io error {:?}", io.kind()));

                // A connection: messages reset its idle timeout; a heartbeat
                // ticks meanwhile; it closes after 100 ms without a message.
                let (tx, mut rx) = mpsc::channel::<u32>(8);
                tokio::spawn(async move {
                    for (i, gap) in [10u64, 30, 60, 90].into_iter().enumerate() {
                        sleep(Duration::from_millis(gap)).await;
                        if tx.send(i as u32).await.is_err() {
                            return;
                        }
                    }
                    sleep(Duration::from_secs(3600)).await;
                    drop(tx);
                });
                let mut heartbeat = interval(Duration::from_millis(40));
                heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
                let idle = sleep(Duration::from_millis(100));
                tokio::pin!(idle);
                loop {
                    tokio::select! {
                        Some(msg) = rx.recv() => {
                            note(format!("message {msg}"));
                            idle.as_mut().reset(Instant::now() + Duration::from_millis(100));
                        }
                        at = heartbeat.tick() => note(format!("heartbeat due {}", (at - start).as_millis())),
                        () = &mut idle => {
                            note(format!("idle, elapsed {}", idle.is_elapsed()));
                            break;
                        }
                    }
                }
                note(format!("deadline was {}", (idle.deadline() - start).as_millis()));
                log
            }
        }
    };
}

program!(on_tokio, tokio::time);
program!(on_hashwheel, hashwheel::time);

#[tokio::test(start_paused = true)]
async fn a_tokio_time_program_behaves_the_same_with_its_use_line_changed() {
    let theirs = on_tokio::run().await;
    let ours = on_hashwheel::run().await;
    assert!(theirs.iter().any(|(_, what)| what.starts_with("idle")));
    assert!(theirs.len() > 10, "{theirs:?}");
    assert_eq!(ours, theirs);
}

/// The same on a multi-thread runtime, on the real clock, whose
/// millisecond-grained timing both may miss by a little: the events, in
/// order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_program_runs_on_a_multi_thread_runtime() {
    let events = |log: Vec<(u128, String)>| -> Vec<String> {
        log.into_iter()
            .map(|(_, what)| what)
            .filter(|what| !what.starts_with("heartbeat") && !what.starts_with("deadline"))
            .collect()
    };
    let (ours, theirs) = tokio::join!(on_hashwheel::run(), on_tokio::run());
    assert_eq!(events(ours), events(theirs));
}

fn paused_runtime() -> tokio::runtime::Runtime {
    Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Runs `f` on a fresh paused runtime, which is dropped after.
fn on_paused_runtime<F: Future>(f: F) -> F::Output {
    paused_runtime().block_on(f)
}

#[test]
fn runtimes_one_after_another_each_get_a_running_timer() {
    let mut previous: Option<Timer> = None;
    for i in 0..50 {
        let timer = on_paused_runtime(async {
            hashwheel::time::sleep(Duration::from_millis(10)).await;
            let timer = Timer::current();
            assert!(!timer.is_stopped(), "runtime {i}");
            assert!(timer.stats().fired >= 1, "runtime {i}: the sleep ran on it");
            timer
        });
        // The runtime is gone: so is its timer, which is never handed out again.
        assert!(timer.is_stopped());
        if let Some(previous) = previous.replace(timer) {
            assert!(previous.is_stopped());
        }
    }
}

/// One thread enters runtime A, then B, then A again (and B from inside A,
/// by `Handle::enter`): every call finds the runtime entered at that moment,
/// never the one the thread used last.
#[test]
fn a_thread_that_enters_a_then_b_then_a_finds_each_ones_timer() {
    let a = paused_runtime();
    let b = paused_runtime();
    let pending = |rt: &tokio::runtime::Runtime| rt.block_on(async { Timer::current().pending() });
    let (mut on_a,) = a.block_on(async {
        let mut sleep = task::spawn(hashwheel::time::sleep(Duration::from_millis(10)));
        assert_pending!(sleep.poll());
        (sleep,)
    });
    assert_eq!((pending(&a), pending(&b)), (1, 0));
    let b_slept = b.block_on(async {
        let start = tokio::time::Instant::now();
        hashwheel::time::sleep(Duration::from_millis(30)).await;
        start.elapsed()
    });
    assert_eq!(
        b_slept,
        Duration::from_millis(30),
        "B's sleep ran on B's timer"
    );
    assert_eq!((pending(&a), pending(&b)), (1, 0));
    // Back on A: its sleep is still A's, and A's driver fires it.
    a.block_on(async {
        let mut b_sleep = {
            let _b = b.handle().enter();
            task::spawn(hashwheel::time::sleep(Duration::from_secs(60)))
        };
        // Created inside `enter`, on B's timer; polled here, it registers
        // there (its timeout holds its timer).
        assert_pending!(b_sleep.poll());
        let b_timer = {
            let _b = b.handle().enter();
            Timer::current()
        };
        assert_eq!(b_timer.pending(), 1);
        hashwheel::time::sleep(Duration::from_millis(20)).await;
        assert!(on_a.is_woken());
        assert!(on_a.poll().is_ready());
        assert_eq!(Timer::current().pending(), 0, "A's timer holds none of B's");
        drop(b_sleep);
    });
    assert_eq!((pending(&a), pending(&b)), (0, 0));
}

#[test]
fn runtimes_side_by_side_have_timers_of_their_own() {
    let a = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let b = Builder::new_current_thread().enable_all().build().unwrap();
    // A pending sleep on each: each timer counts only its own.
    let mut sleeps = Vec::new();
    for (rt, n) in [(&a, 3), (&b, 1)] {
        let (timer, pending) = rt.block_on(async {
            for _ in 0..n {
                let mut sleep = task::spawn(hashwheel::time::sleep(Duration::from_secs(60)));
                assert_pending!(sleep.poll());
                sleeps.push(sleep);
            }
            let timer = Timer::current();
            let pending = timer.pending();
            (timer, pending)
        });
        assert_eq!(pending, n);
        assert!(!timer.is_stopped());
    }
    // From the worker threads of `a` too: the same timer.
    let pending = a.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| tokio::spawn(async { Timer::current().pending() }))
            .collect();
        let mut seen = Vec::new();
        for task in tasks {
            seen.push(task.await.unwrap());
        }
        seen
    });
    assert!(pending.iter().all(|&n| n == 3), "{pending:?}");
    drop(sleeps);
    let b_timer = b.block_on(async { Timer::current() });
    drop(b);
    assert!(b_timer.is_stopped());
    let a_timer = a.block_on(async { Timer::current() });
    assert!(!a_timer.is_stopped(), "a's timer lives on with a");
}

#[tokio::test(start_paused = true)]
async fn a_stopped_default_timer_is_replaced() {
    let first = Timer::current();
    first.stop();
    // Not handed out again: the next call builds a fresh one.
    let start = tokio::time::Instant::now();
    hashwheel::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    let second = Timer::current();
    assert!(first.is_stopped() && !second.is_stopped());
    assert_eq!(second.stats().fired, 1);
}

#[tokio::test(start_paused = true)]
async fn set_current_installs_a_configured_timer_before_first_use() {
    let timer = Timer::builder().max_pending(2).build().unwrap();
    timer.set_current().unwrap();
    timer.set_current().unwrap(); // the same one again: fine
    let mut a = task::spawn(hashwheel::time::sleep(Duration::from_secs(1)));
    assert_pending!(a.poll());
    assert_eq!(timer.pending(), 1);
    assert_eq!(Timer::current().pending(), 1);
    let other = Timer::new();
    let err = other.set_current().unwrap_err();
    assert!(err.is_invalid_config(), "{err}");
    other.stop();
    assert!(other.set_current().unwrap_err().is_stopped());
}

/// Runs `f`, which must panic, and returns its message.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("no panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn outside_a_runtime_every_function_panics_as_tokio_does() {
    let ms = Duration::from_millis(1);
    let now = tokio::time::Instant::now();
    let messages = [
        panic_message(|| drop(hashwheel::time::sleep(ms))),
        panic_message(|| drop(hashwheel::time::sleep_until(now))),
        panic_message(|| drop(hashwheel::time::timeout(ms, async {}))),
        panic_message(|| drop(hashwheel::time::timeout_at(now, async {}))),
        panic_message(|| drop(hashwheel::time::interval(ms))),
        panic_message(|| drop(hashwheel::time::interval_at(now, ms))),
        panic_message(|| drop(Timer::current())),
    ];
    for message in messages {
        assert!(
            message.contains(
                "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
            ),
            "{message}"
        );
    }
    // tokio's own says the same.
    let theirs = panic_message(|| drop(tokio::time::sleep(ms)));
    assert!(theirs.contains("there is no reactor running"), "{theirs}");
}

#[test]
fn a_runtime_without_timers_panics_as_tokio_does() {
    let rt = Builder::new_current_thread().build().unwrap();
    let _entered = rt.enter();
    let message = panic_message(|| drop(hashwheel::time::sleep(Duration::from_millis(1))));
    assert!(message.contains("timers are disabled"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn sleep_is_unpin_and_reports_is_elapsed_only_once_polled_as_tokio_does() {
    fn unpin<T: Unpin>(_: &T) {}
    let now = tokio::time::Instant::now();
    let mut sleep = hashwheel::time::sleep_until(now);
    unpin(&sleep);
    // tokio's `Sleep` says `false` here too: not yet polled. So does the
    // `Timer` API's `Timeout`.
    assert!(!sleep.is_elapsed());
    assert!(!Timer::current().sleep_until(now).is_expired());
    (&mut sleep).await;
    assert!(sleep.is_elapsed());
    assert!(format!("{sleep:?}").starts_with("Sleep"));
    // Far durations sleep about 30 years, as tokio's: paused time gets there.
    assert!(hashwheel::time::sleep(Duration::MAX)
        .now_or_never()
        .is_none());
    hashwheel::time::sleep(Duration::MAX).await;
    assert!(now.elapsed() >= Duration::from_secs(86_400 * 365 * 30));
}

/// Issue 27: `Sleep::deadline()` was the deadline rounded up to the
/// timer's microsecond, not the instant given (tokio returns it exactly),
/// also after `reset`. On the real clock, where instants have nanoseconds:
/// of several offsets at least one is not a whole microsecond from the
/// default timer's start.
#[tokio::test]
async fn sleep_deadline_is_the_instant_given_on_the_real_clock() {
    use hashwheel::time::{sleep_until, Instant};
    let base = Instant::now() + Duration::from_millis(50);
    for ns in [1u64, 250, 333, 500, 999] {
        let deadline = base + Duration::from_nanos(ns);
        let mut sleep = sleep_until(deadline);
        assert_eq!(sleep.deadline(), deadline, "{ns} ns");
        let later = deadline + Duration::from_nanos(1_000_000 + ns);
        std::pin::Pin::new(&mut sleep).reset(later);
        assert_eq!(sleep.deadline(), later, "{ns} ns, after reset");
    }
}

/// Issue 27: a `sleep(d)`'s deadline is now + `d` exactly, as tokio's,
/// though `d` is not a whole microsecond.
#[tokio::test(start_paused = true)]
async fn sleep_deadline_is_now_plus_the_duration_to_the_nanosecond() {
    use hashwheel::time::{sleep, Instant};
    tokio::time::advance(Duration::from_nanos(123)).await;
    let d = Duration::from_nanos(1_234_567);
    let sleep = sleep(d);
    let deadline = Instant::now() + d;
    assert_eq!(sleep.deadline(), deadline);
    sleep.await;
    assert!(Instant::now() >= deadline);
}

/// Issue 27: when the first `hashwheel::time` call of a runtime was a
/// `sleep_until` 20 ms in the past, its `deadline()` said about "now" (the
/// default timer, built by that call, starts then).
#[test]
fn a_past_deadline_on_a_fresh_runtime_is_reported_as_given() {
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        use hashwheel::time::{sleep_until, Instant};
        let past = Instant::now() - Duration::from_millis(20);
        let sleep = sleep_until(past);
        assert_eq!(sleep.deadline(), past);
        sleep.await;
    });
}

/// Issue 27: `IntervalStream::new(hashwheel::time::interval(..))` does not
/// compile (tokio-stream's wrapper takes tokio's `Interval`); the interval
/// is a `Stream` itself, of tokio's `Instant`s, the same ticks as `tick`.
#[tokio::test(start_paused = true)]
async fn an_interval_is_a_stream_of_tokio_instants_without_a_wrapper() {
    use futures_util::StreamExt;
    use hashwheel::time::{interval, Instant};
    fn stream<S: futures_util::Stream<Item = Instant> + Unpin>(s: S) -> S {
        s
    }
    let start = Instant::now();
    let mut ticks = stream(interval(Duration::from_millis(10)));
    let got: Vec<Instant> = (&mut ticks).take(3).collect().await;
    let ms = Duration::from_millis;
    assert_eq!(got, [start, start + ms(10), start + ms(20)]);
    assert_eq!(ticks.tick().await, start + ms(30));
}

/// tokio 1.54's "far future": its `safe_delay` caps a duration at 30 years.
const CAP: Duration = Duration::from_secs(86_400 * 365 * 30);
const YEAR: Duration = Duration::from_secs(86_400 * 365);

/// Issue 37, item 2: tokio caps every `sleep`'s duration at 30 years
/// (`safe_delay`); `hashwheel::time::sleep` capped only a duration whose
/// deadline overflowed, so `sleep(31 years).deadline()` was a year after
/// tokio's. Around the cap and at its extremes, the deadline is tokio's
/// own `Sleep::deadline()` to the nanosecond, and the sleep completes when
/// tokio's does.
#[tokio::test(start_paused = true)]
async fn sleep_deadlines_are_tokios_around_its_30_year_cap() {
    let ns = Duration::from_nanos;
    tokio::time::advance(ns(1_234_567)).await;
    for d in [
        CAP - ns(1),
        CAP,
        CAP + ns(1),
        CAP + YEAR,
        Duration::from_secs(u64::MAX / 2),
        Duration::MAX,
    ] {
        let ours = hashwheel::time::sleep(d);
        let theirs = tokio::time::sleep(d);
        assert_eq!(ours.deadline(), theirs.deadline(), "{d:?}");
    }
    // A year past the cap completes with tokio's, 30 years out.
    let start = tokio::time::Instant::now();
    let mut ours = task::spawn(hashwheel::time::sleep(CAP + YEAR));
    let mut theirs = task::spawn(tokio::time::sleep(CAP + YEAR));
    assert_pending!(ours.poll());
    assert_pending!(theirs.poll());
    tokio::time::advance(CAP - Duration::from_millis(1)).await;
    woken_together(&mut ours, &mut theirs).await;
    assert!(start.elapsed() >= CAP && start.elapsed() < CAP + Duration::from_millis(2));
}

/// Lets paused time pass in steps of 100 µs until `theirs` (tokio's) is
/// woken: `ours` is woken at the same step, not before.
async fn woken_together<A: Future, B: Future>(
    ours: &mut task::Spawn<A>,
    theirs: &mut task::Spawn<B>,
) {
    for _ in 0..50 {
        assert_eq!(ours.is_woken(), theirs.is_woken(), "woken together");
        if theirs.is_woken() {
            return;
        }
        tokio::time::advance(Duration::from_micros(100)).await;
    }
    panic!("tokio's never completed");
}

/// tokio's `timeout` is not capped: its deadline is now plus the duration,
/// and a duration too long to add to now never elapses (it has no `Sleep`
/// at all). `hashwheel::time::timeout` put such a duration 30 years out,
/// where it elapsed.
#[tokio::test(start_paused = true)]
async fn timeouts_elapse_with_tokios_past_its_30_year_cap() {
    use std::future::pending;
    for d in [CAP + YEAR, CAP + Duration::from_nanos(1)] {
        let mut ours = task::spawn(hashwheel::time::timeout(d, pending::<()>()));
        let mut theirs = task::spawn(tokio::time::timeout(d, pending::<()>()));
        assert_pending!(ours.poll());
        assert_pending!(theirs.poll());
        tokio::time::advance(d - Duration::from_millis(1)).await;
        assert!(!theirs.is_woken(), "{d:?}: tokio's, short of its deadline");
        woken_together(&mut ours, &mut theirs).await;
        assert!(ours.poll().is_ready() && theirs.poll().is_ready());
    }
    let mut ours = task::spawn(hashwheel::time::timeout(Duration::MAX, pending::<()>()));
    let mut theirs = task::spawn(tokio::time::timeout(Duration::MAX, pending::<()>()));
    assert_pending!(ours.poll());
    assert_pending!(theirs.poll());
    tokio::time::advance(CAP + 10 * YEAR).await;
    assert_pending!(theirs.poll(), "tokio's never elapses");
    assert_pending!(ours.poll(), "nor ours");
}

/// An interval's period is capped at 30 years as tokio's (`period()` says
/// so), and so is `reset_after`'s duration: the next tick comes when
/// tokio's does.
#[tokio::test(start_paused = true)]
async fn interval_periods_and_resets_are_capped_as_tokios() {
    let long = CAP + YEAR;
    let ours = hashwheel::time::interval(long);
    let theirs = tokio::time::interval(long);
    assert_eq!(ours.period(), theirs.period());
    assert_eq!(ours.period(), CAP);
    let start = tokio::time::Instant::now() + Duration::from_millis(1);
    let ours = hashwheel::time::interval_at(start, long);
    assert_eq!(
        ours.period(),
        tokio::time::interval_at(start, long).period()
    );

    let mut ours = hashwheel::time::interval(Duration::from_millis(1));
    let mut theirs = tokio::time::interval(Duration::from_millis(1));
    ours.tick().await;
    theirs.tick().await;
    ours.reset_after(long);
    theirs.reset_after(long);
    let (a, b) = tokio::join!(ours.tick(), theirs.tick());
    assert_eq!(a, b);
    assert_eq!(a.elapsed(), Duration::ZERO);
}
