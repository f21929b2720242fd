//! tokio's cooperative budget: a task that keeps finding its timers ready
//! yields to the runtime, as it does with `tokio::time`, so that the loops
//! below (how real code polls for a flag or drains a burst) let another
//! task of a current-thread runtime run and finish, where a timer that
//! ignored the budget would spin for ever. Each runs under a watchdog
//! thread (a hang fails the test), on paused time and on the real clock,
//! through `hashwheel::time`, the `Timer` API, and a thread-driven `Timer`
//! polled from a tokio task; tokio's own `tokio::time` runs the same loops
//! first, so that the test says what it mirrors.

#![cfg(feature = "tokio")]

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::Duration;

use hashwheel::Timer;

mod common;

/// tokio's budget: ready polls a task may make before it must yield.
const BUDGET: usize = 128;
/// The most loop passes before another task runs: the budget, and the
/// pass whose await yielded, which completes once the task is polled again.
const PASSES: usize = BUDGET + 1;

/// Runs `body` on a fresh current-thread runtime (paused or not) under a
/// watchdog: a loop that never yields hangs the runtime's thread, and the
/// test fails naming it instead of hanging.
fn on_current_thread<F, Fut>(name: &str, paused: bool, body: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (tx, rx) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(paused)
            .build()
            .unwrap();
        rt.block_on(body());
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => runner.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = runner.join() {
                std::panic::resume_unwind(panic);
            }
        }
        // The runtime's thread spins for ever: leave it (the process ends
        // with the test run).
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{name} (paused: {paused}): the loop never yielded to the other task")
        }
    }
}

/// A flag another task sets, and that task.
fn flag_set_by_another_task() -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let set = done.clone();
    tokio::spawn(async move { set.store(true, Ordering::SeqCst) });
    done
}

/// Which timer a loop uses.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `tokio::time`: what the others mirror.
    Tokio,
    /// `hashwheel::time`, the drop-in.
    Time,
    /// A runtime-driven `Timer`.
    Timer,
    /// A thread-driven `Timer`, polled from the tokio task.
    #[cfg(feature = "thread")]
    Thread,
}

const ALL: &[Via] = &[
    Via::Tokio,
    Via::Time,
    Via::Timer,
    #[cfg(feature = "thread")]
    Via::Thread,
];

fn timer(via: Via) -> Timer {
    match via {
        #[cfg(feature = "thread")]
        Via::Thread => Timer::builder().driver_thread().build().unwrap(),
        _ => Timer::new(),
    }
}

type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

fn sleep_zero(via: Via, timer: &Timer) -> Sleep {
    match via {
        Via::Tokio => Box::pin(tokio::time::sleep(Duration::ZERO)),
        Via::Time => Box::pin(hashwheel::time::sleep(Duration::ZERO)),
        _ => Box::pin(timer.sleep(Duration::ZERO)),
    }
}

/// `while !done { sleep(Duration::ZERO).await }`: a poll for a flag.
#[test]
fn a_loop_of_zero_sleeps_lets_other_tasks_run() {
    for &via in ALL {
        for paused in [true, false] {
            on_current_thread("sleep(0) loop", paused, move || async move {
                let timer = timer(via);
                let done = flag_set_by_another_task();
                let mut sleeps = 0usize;
                while !done.load(Ordering::SeqCst) {
                    sleep_zero(via, &timer).await;
                    sleeps += 1;
                }
                assert!(sleeps <= PASSES, "{via:?}: {sleeps} sleeps before yielding");
            });
        }
    }
}

/// `timeout(Duration::ZERO, rx.recv())` in a loop, until a message comes.
#[test]
fn a_loop_of_zero_timeouts_lets_the_sender_run() {
    for &via in ALL {
        for paused in [true, false] {
            on_current_thread("timeout(0) loop", paused, move || async move {
                let timer = timer(via);
                let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
                tokio::spawn(async move { tx.send(7).await.unwrap() });
                let mut elapsed = 0usize;
                loop {
                    let got = match via {
                        Via::Tokio => tokio::time::timeout(Duration::ZERO, rx.recv()).await.ok(),
                        Via::Time => hashwheel::time::timeout(Duration::ZERO, rx.recv())
                            .await
                            .ok(),
                        _ => timer.timeout(Duration::ZERO, rx.recv()).await.ok(),
                    };
                    match got {
                        Some(got) => {
                            assert_eq!(got, Some(7));
                            break;
                        }
                        None => elapsed += 1,
                    }
                }
                assert!(
                    elapsed <= PASSES,
                    "{via:?}: {elapsed} timeouts before yielding"
                );
            });
        }
    }
}

/// `interval.reset_immediately(); interval.tick().await` in a loop.
#[test]
fn a_loop_of_immediate_ticks_lets_other_tasks_run() {
    for &via in ALL {
        for paused in [true, false] {
            on_current_thread("reset_immediately loop", paused, move || async move {
                let timer = timer(via);
                let done = flag_set_by_another_task();
                let mut ticks = 0usize;
                match via {
                    Via::Tokio => {
                        let mut interval = tokio::time::interval(Duration::from_secs(1));
                        while !done.load(Ordering::SeqCst) {
                            interval.reset_immediately();
                            interval.tick().await;
                            ticks += 1;
                        }
                    }
                    Via::Time => {
                        let mut interval = hashwheel::time::interval(Duration::from_secs(1));
                        while !done.load(Ordering::SeqCst) {
                            interval.reset_immediately();
                            interval.tick().await;
                            ticks += 1;
                        }
                    }
                    _ => {
                        let mut interval = timer.interval(Duration::from_secs(1));
                        while !done.load(Ordering::SeqCst) {
                            interval.reset_immediately();
                            interval.tick().await;
                            ticks += 1;
                        }
                    }
                }
                assert!(ticks <= PASSES, "{via:?}: {ticks} ticks before yielding");
            });
        }
    }
}

/// After a stall, an interval's burst of missed ticks (tokio's default
/// `Burst`) is delivered a budget at a time: another task runs within
/// tokio's count, where a timer that ignored the budget delivered all
/// 5,000 first.
#[test]
fn a_burst_after_a_stall_lets_other_tasks_run() {
    on_current_thread("burst after a stall", true, || async {
        let mut interval = hashwheel::time::interval(Duration::from_micros(200));
        interval.tick().await;
        // One second passes with the task not polled: 5,000 ticks due.
        tokio::time::advance(Duration::from_secs(1)).await;
        let done = flag_set_by_another_task();
        let mut ticks = 0usize;
        while !done.load(Ordering::SeqCst) {
            interval.tick().await;
            ticks += 1;
        }
        assert!(ticks <= PASSES, "{ticks} burst ticks before yielding");
    });
}

/// A keyed queue drained in a loop yields too: a burst of items due at
/// once comes out a budget at a time.
#[test]
fn draining_a_delay_queue_lets_other_tasks_run() {
    use futures::StreamExt;
    for paused in [true, false] {
        on_current_thread("DelayQueue drain", paused, || async {
            let mut queue = hashwheel::DelayQueue::new();
            for i in 0..1_000u32 {
                queue.insert(i, Duration::ZERO);
            }
            let done = flag_set_by_another_task();
            let mut items = 0usize;
            while !done.load(Ordering::SeqCst) {
                queue.next().await.unwrap();
                items += 1;
            }
            assert!(items <= PASSES, "{items} items before yielding");
        });
    }
}

/// What the budget costs a poll: a ready poll spends one unit and a
/// pending poll none, so the count of ready polls before the first forced
/// yield is tokio's budget, whichever hashwheel future spends it; and a
/// timeout whose inner future spent the last unit still sees its
/// deadline (the inner future is not starved of an answer).
#[test]
fn ready_polls_spend_the_budget_pending_polls_do_not() {
    on_current_thread("budget count", true, || async {
        let timer = Timer::new();
        // Pending polls of a far sleep spend nothing...
        let mut far = timer.sleep(Duration::from_secs(60));
        for _ in 0..1_000 {
            assert!(poll_fn(|cx| Poll::Ready(Pin::new(&mut far).poll(cx)))
                .await
                .is_pending());
        }
        // ...so the task still has its whole budget for ready ones.
        let ready = AtomicUsize::new(0);
        poll_fn(|cx| loop {
            let mut zero = timer.sleep(Duration::ZERO);
            match Pin::new(&mut zero).poll(cx) {
                Poll::Ready(()) => {
                    ready.fetch_add(1, Ordering::Relaxed);
                }
                Poll::Pending => return Poll::Ready(()),
            }
        })
        .await;
        assert_eq!(ready.load(Ordering::Relaxed), BUDGET);

        // A timeout whose future spends the budget still times out.
        tokio::task::yield_now().await;
        let busy = poll_fn(|cx| {
            // Spend every unit left, then wait.
            while tokio::task::coop::has_budget_remaining() {
                let mut zero = timer.sleep(Duration::ZERO);
                let _ = Pin::new(&mut zero).poll(cx);
            }
            Poll::<()>::Pending
        });
        let mut timed = std::pin::pin!(timer.timeout(Duration::from_millis(5), busy));
        assert!(poll_fn(|cx| Poll::Ready(timed.as_mut().poll(cx)))
            .await
            .is_pending());
        tokio::time::advance(Duration::from_millis(5)).await;
        tokio::task::yield_now().await;
        assert!(
            timed.await.is_err(),
            "the deadline came through a spent budget"
        );
    });
}

/// With the budget spent, a timeout that has not fired is pending and
/// waits for its own wake (it looks at the budget only once ready: the
/// common poll costs no thread-local read); one that has fired is pending
/// too, its task woken at once, and ready on the next poll (a fired
/// timeout stays ready). A `WithTimeout` whose deadline had passed before
/// the budget ran out elsewhere in the task yields the same way, and ends
/// with `Elapsed` once polled again. Each poll gets a waker of its own
/// (tokio defers the wakes of a spent budget to the end of the task's
/// poll, one per waker).
#[test]
fn a_spent_budget_holds_back_only_ready_timeouts() {
    on_current_thread("spent budget", true, || async {
        let timer = Timer::new();
        let mut far = timer.sleep(Duration::from_secs(60));
        let mut zero = timer.sleep(Duration::ZERO);
        let mut elapsed =
            std::pin::pin!(timer.timeout(Duration::ZERO, std::future::pending::<()>()));
        let wakers: Vec<_> = (0..4).map(|_| common::counting_waker()).collect();
        poll_fn(|_| {
            let cx = |i: usize| std::task::Context::from_waker(&wakers[i].1);
            // Spend the task's budget.
            while let Poll::Ready(unit) = tokio::task::coop::poll_proceed(&mut cx(0)) {
                unit.made_progress();
            }
            assert!(Pin::new(&mut far).poll(&mut cx(1)).is_pending());
            assert!(Pin::new(&mut zero).poll(&mut cx(2)).is_pending());
            assert!(elapsed.as_mut().poll(&mut cx(3)).is_pending());
            Poll::Ready(())
        })
        .await;
        tokio::task::yield_now().await;
        let wakes: Vec<usize> = wakers.iter().map(|(w, _)| w.wakes()).collect();
        assert_eq!(
            wakes,
            [1, 0, 1, 1],
            "woken at once: the spent budget, the fired sleep, the elapsed \
             timeout; not the pending sleep"
        );
        assert!(poll_fn(|cx| Poll::Ready(Pin::new(&mut zero).poll(cx)))
            .await
            .is_ready());
        assert!(elapsed.await.is_err());
        assert!(poll_fn(|cx| Poll::Ready(Pin::new(&mut far).poll(cx)))
            .await
            .is_pending());
    });
}

/// `Delay` and `hashwheel::async_io::Timer` keep futures-timer's and
/// async-io's behaviour: they take no part in tokio's budget. A completed
/// `Delay` is ready at every poll, budget or not; a zero one is pending at
/// its first poll (futures-timer's helper thread fires even a zero delay),
/// budget or not: a loop of them yields on every executor (issue 56).
#[cfg(feature = "thread")]
#[test]
fn delay_takes_no_part_like_futures_timer() {
    on_current_thread("Delay", false, || async {
        let mut done = hashwheel::Delay::new(Duration::from_micros(1));
        (&mut done).await;
        let (ready, zeros) = poll_fn(|cx| {
            let mut ready = 0;
            while ready < 4 * BUDGET && Pin::new(&mut done).poll(cx).is_ready() {
                ready += 1;
            }
            let zeros = (0..BUDGET)
                .filter(|_| {
                    let mut zero = hashwheel::Delay::new(Duration::ZERO);
                    Pin::new(&mut zero).poll(cx).is_pending()
                })
                .count();
            Poll::Ready((ready, zeros))
        })
        .await;
        assert_eq!(ready, 4 * BUDGET, "a completed delay spends no budget");
        assert_eq!(zeros, BUDGET, "a zero delay is pending at its first poll");
    });
}

/// A deadline scope (issue 46) whose future spends the whole budget on
/// every poll still ends at its deadline, as `WithTimeout` does: its
/// deadline is polled with the budget lifted.
#[test]
fn a_scope_whose_future_spends_the_budget_still_ends() {
    on_current_thread("scope through a spent budget", true, || async {
        let timer = Timer::new();
        let busy = poll_fn(|cx| {
            while tokio::task::coop::has_budget_remaining() {
                let mut zero = timer.sleep(Duration::ZERO);
                let _ = Pin::new(&mut zero).poll(cx);
            }
            Poll::<()>::Pending
        });
        let mut scope = std::pin::pin!(timer.scope(Duration::from_millis(5), busy));
        assert!(poll_fn(|cx| Poll::Ready(scope.as_mut().poll(cx)))
            .await
            .is_pending());
        tokio::time::advance(Duration::from_millis(5)).await;
        tokio::task::yield_now().await;
        assert!(
            scope.await.is_err(),
            "the deadline came through a spent budget"
        );
    });
}
