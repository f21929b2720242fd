//! Through `hashwheel::time`, every panic `tokio::time` documents comes
//! with tokio's own message, word for word (issue 39: a `tokio::time`
//! program's `#[should_panic(expected = ...)]` tests failed once switched by
//! its `use` lines). Each test below is one of tokio's, its expected text
//! copied from tokio 1.x's source; the last checks each against what
//! `tokio::time` itself panics with, so a tokio that rewords one shows up.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use hashwheel::time::{
    interval, interval_at, sleep, sleep_until, timeout, timeout_at, Duration, Instant,
};

const MS: Duration = Duration::from_millis(1);

/// A current-thread runtime without its time driver, entered.
fn without_timers<R>(f: impl FnOnce() -> R) -> R {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _entered = rt.enter();
    f()
}

// Outside a runtime.

#[test]
#[should_panic(
    expected = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
)]
fn sleep_outside_a_runtime() {
    drop(sleep(MS));
}

#[test]
#[should_panic(
    expected = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
)]
fn sleep_until_outside_a_runtime() {
    drop(sleep_until(Instant::now() + MS));
}

#[test]
#[should_panic(
    expected = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
)]
fn timeout_outside_a_runtime() {
    drop(timeout(MS, async {}));
}

#[test]
#[should_panic(
    expected = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
)]
fn timeout_at_outside_a_runtime() {
    drop(timeout_at(Instant::now() + MS, async {}));
}

#[test]
#[should_panic(
    expected = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
)]
fn interval_outside_a_runtime() {
    drop(interval(MS));
}

#[test]
#[should_panic(
    expected = "there is no reactor running, must be called from the context of a Tokio 1.x runtime"
)]
fn interval_at_outside_a_runtime() {
    drop(interval_at(Instant::now(), MS));
}

// On a runtime built without `enable_time()`.

#[test]
#[should_panic(
    expected = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers."
)]
fn sleep_without_a_time_driver() {
    without_timers(|| drop(sleep(MS)));
}

#[test]
#[should_panic(
    expected = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers."
)]
fn sleep_until_without_a_time_driver() {
    without_timers(|| drop(sleep_until(Instant::now() + MS)));
}

#[test]
#[should_panic(
    expected = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers."
)]
fn timeout_without_a_time_driver() {
    without_timers(|| drop(timeout(MS, async {})));
}

#[test]
#[should_panic(
    expected = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers."
)]
fn timeout_at_without_a_time_driver() {
    without_timers(|| drop(timeout_at(Instant::now() + MS, async {})));
}

#[test]
#[should_panic(
    expected = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers."
)]
fn interval_without_a_time_driver() {
    without_timers(|| drop(interval(MS)));
}

#[test]
#[should_panic(
    expected = "A Tokio 1.x context was found, but timers are disabled. Call `enable_time` on the runtime builder to enable timers."
)]
fn interval_at_without_a_time_driver() {
    without_timers(|| drop(interval_at(Instant::now(), MS)));
}

// A zero period: checked before the runtime, as tokio does.

#[tokio::test(start_paused = true)]
#[should_panic(expected = "`period` must be non-zero.")]
async fn interval_of_a_zero_period() {
    drop(interval(Duration::ZERO));
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "`period` must be non-zero.")]
async fn interval_at_of_a_zero_period() {
    drop(interval_at(Instant::now(), Duration::ZERO));
}

#[test]
#[should_panic(expected = "`period` must be non-zero.")]
fn interval_of_a_zero_period_outside_a_runtime() {
    drop(interval(Duration::ZERO));
}

// The paused-time controls (feature `test-util`): tokio's own functions,
// re-exported.

#[cfg(feature = "test-util")]
mod paused {
    use hashwheel::time::{advance, pause, resume, Duration};

    #[tokio::test]
    #[should_panic(expected = "time is not frozen")]
    async fn advance_without_pause() {
        advance(Duration::from_millis(1)).await;
    }

    #[tokio::test]
    #[should_panic(expected = "time is not frozen")]
    async fn resume_without_pause() {
        resume();
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "time is already frozen")]
    async fn pause_twice() {
        pause();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    #[should_panic(
        expected = "`time::pause()` requires the `current_thread` Tokio runtime. This is the default Runtime used by `#[tokio::test]."
    )]
    async fn pause_on_a_multi_thread_runtime() {
        pause();
    }

    #[test]
    #[should_panic(expected = "time cannot be frozen from outside the Tokio runtime")]
    fn pause_outside_a_runtime() {
        pause();
    }

    #[test]
    #[should_panic(expected = "time cannot be frozen from outside the Tokio runtime")]
    fn resume_outside_a_runtime() {
        resume();
    }

    #[test]
    #[should_panic(expected = "time cannot be frozen from outside the Tokio runtime")]
    fn advance_outside_a_runtime() {
        futures::executor::block_on(advance(Duration::from_millis(1)));
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "overflow when adding duration to instant")]
    async fn advance_past_the_end_of_time() {
        advance(Duration::MAX).await;
    }
}

/// What `f` panics with.
fn panic_message<R>(f: impl FnOnce() -> R) -> String {
    let err = catch_unwind(AssertUnwindSafe(|| drop(f()))).expect_err("no panic");
    match err.downcast::<String>() {
        Ok(message) => *message,
        Err(err) => (*err.downcast::<&str>().unwrap()).to_owned(),
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn each_message_is_tokios_own() {
    let now = Instant::now();
    let pairs = [
        (
            panic_message(|| sleep(MS)),
            panic_message(|| tokio::time::sleep(MS)),
        ),
        (
            panic_message(|| timeout_at(now, async {})),
            panic_message(|| tokio::time::timeout_at(now, async {})),
        ),
        (
            panic_message(|| interval_at(now, MS)),
            panic_message(|| tokio::time::interval_at(now, MS)),
        ),
        (
            without_timers(|| panic_message(|| sleep_until(now))),
            without_timers(|| panic_message(|| tokio::time::sleep_until(now))),
        ),
        (
            without_timers(|| panic_message(|| timeout(MS, async {}))),
            without_timers(|| panic_message(|| tokio::time::timeout(MS, async {}))),
        ),
        (
            block_on(async { panic_message(|| interval(Duration::ZERO)) }),
            block_on(async { panic_message(|| tokio::time::interval(Duration::ZERO)) }),
        ),
    ];
    for (ours, tokios) in pairs {
        assert_eq!(ours, tokios);
    }
}

/// A difference `docs/MIGRATING.md` lists: tokio's `timeout` with a
/// duration too long to add to now sets no timer at all, so it needs no
/// runtime; hashwheel's sets one 30 years out, on the runtime's timer.
#[test]
fn a_timeout_too_long_to_add_to_now_needs_a_runtime_where_tokios_does_not() {
    drop(tokio::time::timeout(Duration::MAX, async {}));
    let message = panic_message(|| timeout(Duration::MAX, async {}));
    assert!(
        message.starts_with("there is no reactor running"),
        "{message}"
    );
}
