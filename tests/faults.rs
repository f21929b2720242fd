//! Faults: panicking callbacks and wakers, wakers that drop the timer or
//! schedule more work from inside `wake`, runtime shutdown with timeouts
//! pending, a starved driver, and `reset` after `stop`.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::{advance, counting_waker, settle, MS};
use futures_util::FutureExt;
use hashwheel::{Timeout, Timer};
use tokio::time::Instant;

fn poll(t: &mut Timeout, waker: &Waker) -> Poll<()> {
    Pin::new(t).poll(&mut Context::from_waker(waker))
}

/// A waker whose `wake` panics.
struct PanicWaker(AtomicUsize);

impl Wake for PanicWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("waker panicked on purpose");
    }
}

#[tokio::test(start_paused = true)]
async fn panicking_tasks_in_one_batch_do_not_stop_the_rest() {
    let timer = Timer::builder().shards(1).build().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    // More than one batch of 32, all due on the same tick, every tenth
    // panicking.
    for i in 0..100 {
        let ran = ran.clone();
        timer.schedule(Duration::from_millis(2), move || {
            assert!(i % 10 != 0, "task {i} panicked on purpose");
            ran.fetch_add(1, Ordering::SeqCst);
        });
    }
    let mut later = tokio_test::task::spawn(timer.sleep(Duration::from_millis(3)));
    assert!(later.poll().is_pending());
    advance(Duration::from_millis(2)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 90);
    assert_eq!(timer.pending(), 1);
    advance(MS).await;
    assert!(later.is_woken());
    assert!(later.poll().is_ready());
    assert!(!timer.is_stopped());
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_waker_does_not_stop_the_others() {
    let timer = Timer::builder().shards(1).build().unwrap();
    let bad = Arc::new(PanicWaker(AtomicUsize::new(0)));
    let bad_waker = Waker::from(bad.clone());
    let (good, good_waker) = counting_waker();

    let mut panicky = timer.sleep(MS);
    let mut same_tick = timer.sleep(MS);
    let mut next_tick = timer.sleep(2 * MS);
    assert!(poll(&mut panicky, &bad_waker).is_pending());
    assert!(poll(&mut same_tick, &good_waker).is_pending());
    assert!(poll(&mut next_tick, &good_waker).is_pending());

    advance(MS).await;
    assert_eq!(bad.0.load(Ordering::SeqCst), 1);
    assert_eq!(good.wakes(), 1);
    advance(MS).await;
    assert_eq!(good.wakes(), 2);
    // The timeout whose waker panicked fired all the same.
    assert!(poll(&mut panicky, &bad_waker).is_ready());
    assert!(panicky.is_expired());
    assert!(poll(&mut same_tick, &good_waker).is_ready());
    assert!(poll(&mut next_tick, &good_waker).is_ready());
    assert_eq!(timer.pending(), 0);
    assert!(!timer.is_stopped());
    // And the timer goes on.
    let before = Instant::now();
    timer.sleep(5 * MS).await;
    assert_eq!(before.elapsed(), 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_waker_does_not_stop_stop() {
    let timer = Timer::new();
    let bad = Arc::new(PanicWaker(AtomicUsize::new(0)));
    let (good, good_waker) = counting_waker();
    let mut a = timer.sleep(Duration::from_secs(1));
    let mut b = timer.sleep(Duration::from_secs(1));
    assert!(poll(&mut a, &Waker::from(bad.clone())).is_pending());
    assert!(poll(&mut b, &good_waker).is_pending());
    timer.stop();
    assert_eq!(bad.0.load(Ordering::SeqCst), 1);
    assert_eq!(good.wakes(), 1);
    assert!(poll(&mut b, &good_waker).is_ready());
    assert!(b.is_cancelled());
}

/// A waker that, when woken, drops what it holds: here the last `Timer`
/// handle and the very timeout it was registered for.
struct DropOnWake {
    held: Mutex<Option<(Timer, Timeout)>>,
    wakes: AtomicUsize,
}

impl Wake for DropOnWake {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        drop(self.held.lock().unwrap().take());
    }
}

#[tokio::test(start_paused = true)]
async fn a_waker_that_drops_the_last_timer_handle_ends_the_driver_cleanly() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let other = Timer::new();
    let base = metrics.num_alive_tasks();

    let timer = Timer::new();
    assert_eq!(metrics.num_alive_tasks(), base + 1, "the driver runs");
    let state = Arc::new(DropOnWake {
        held: Mutex::new(None),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(state.clone());
    let mut t = timer.sleep(MS);
    assert!(poll(&mut t, &waker).is_pending());
    let mut late = timer.sleep(2 * MS);
    assert!(poll(&mut late, &waker).is_pending());
    drop(late);
    *state.held.lock().unwrap() = Some((timer, t));

    let mut survivor = tokio_test::task::spawn(other.sleep(2 * MS));
    assert!(survivor.poll().is_pending());
    advance(MS).await;
    assert_eq!(state.wakes.load(Ordering::SeqCst), 1);
    assert!(state.held.lock().unwrap().is_none());
    settle().await;
    assert_eq!(
        metrics.num_alive_tasks(),
        base,
        "the driver of the dropped timer ended"
    );
    // The other timer is unaffected.
    advance(MS).await;
    assert!(survivor.is_woken());
    assert!(survivor.poll().is_ready());
}

/// A waker that schedules a task and registers a new timeout, from inside
/// `wake`, until it has done so `left` times.
struct Chain {
    timer: Timer,
    held: Mutex<Vec<Timeout>>,
    fired_at: Mutex<Vec<Instant>>,
    tasks_ran: Arc<AtomicUsize>,
    left: AtomicUsize,
}

impl Wake for Chain {
    fn wake(self: Arc<Self>) {
        self.fired_at.lock().unwrap().push(Instant::now());
        if self.left.fetch_sub(1, Ordering::SeqCst) == 0 {
            return;
        }
        let ran = self.tasks_ran.clone();
        self.timer.schedule(3 * MS, move || {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        let mut next = self.timer.sleep(2 * MS);
        let waker = Waker::from(self.clone());
        assert!(poll(&mut next, &waker).is_pending());
        self.held.lock().unwrap().push(next);
    }
}

#[tokio::test(start_paused = true)]
async fn a_waker_that_schedules_from_inside_wake_is_served_on_time() {
    let timer = Timer::new();
    let chain = Arc::new(Chain {
        timer: timer.clone(),
        held: Mutex::new(Vec::new()),
        fired_at: Mutex::new(Vec::new()),
        tasks_ran: Arc::new(AtomicUsize::new(0)),
        left: AtomicUsize::new(5),
    });
    let start = Instant::now();
    let mut first = timer.sleep(2 * MS);
    assert!(poll(&mut first, &Waker::from(chain.clone())).is_pending());
    for _ in 0..20 {
        advance(MS).await;
    }
    let fired: Vec<Duration> = chain
        .fired_at
        .lock()
        .unwrap()
        .iter()
        .map(|t| *t - start)
        .collect();
    // Each timeout, created while the previous one fired, fired 2 ms later.
    let want: Vec<Duration> = (1..=6).map(|i| 2 * i * MS).collect();
    assert_eq!(fired, want);
    assert_eq!(chain.tasks_ran.load(Ordering::SeqCst), 5);
    assert_eq!(timer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_task_that_stops_the_timer_cancels_the_rest_without_deadlock() {
    let timer = Timer::builder().shards(1).build().unwrap();
    let stopper = timer.clone();
    timer.schedule(MS, move || {
        let never_ran = stopper.stop();
        assert_eq!(never_ran.len(), 1);
    });
    let later_task = timer.schedule(5 * MS, || unreachable!("cancelled by stop"));
    let mut later = tokio_test::task::spawn(timer.sleep(5 * MS));
    assert!(later.poll().is_pending());
    advance(MS).await;
    assert!(timer.is_stopped());
    assert!(later.is_woken());
    assert!(later.poll().is_ready());
    assert!(later.is_cancelled());
    assert!(later_task.is_cancelled());
    assert_eq!(timer.pending(), 0);
}

/// What a runtime shutdown leaves behind, checked after the runtime is gone.
struct Leftovers {
    timer: Timer,
    registered: Timeout,
    unpolled: Timeout,
    probe: Arc<common::CountingWaker>,
    task: hashwheel::TaskHandle,
    /// Held by the task's closure; the count shows whether it was freed.
    token: Arc<()>,
}

fn shut_down_with_pending_timeouts(rt: tokio::runtime::Runtime) -> Leftovers {
    let token = Arc::new(());
    let (probe, waker) = counting_waker();
    let leftovers = rt.block_on(async {
        let timer = Timer::new();
        let mut registered = timer.sleep(Duration::from_secs(10));
        assert!(poll(&mut registered, &waker).is_pending());
        let unpolled = timer.sleep(Duration::from_secs(10));
        let held = token.clone();
        let task = timer.schedule(Duration::from_secs(10), move || drop(held));
        // A task of the runtime awaiting a timeout: dropped with it.
        tokio::spawn(timer.sleep(Duration::from_secs(10)));
        tokio::task::yield_now().await;
        assert_eq!(timer.pending(), 4);
        Leftovers {
            timer,
            registered,
            unpolled,
            probe,
            task,
            token: token.clone(),
        }
    });
    drop(rt);
    leftovers
}

fn check_leftovers(mut l: Leftovers) {
    assert!(l.timer.is_stopped(), "shutdown stops the timer");
    assert_eq!(l.timer.pending(), 0);
    // The registered timeout was woken, and completes, cancelled.
    assert_eq!(l.probe.wakes(), 1);
    let waker = Waker::from(l.probe.clone());
    assert!(poll(&mut l.registered, &waker).is_ready());
    assert!(l.registered.is_cancelled());
    assert!(!l.registered.is_expired());
    // So does one never polled before.
    assert!(poll(&mut l.unpolled, &waker).is_ready());
    assert!(l.unpolled.is_cancelled());
    // The task is cancelled and its closure freed.
    assert!(l.task.is_cancelled());
    assert!(!l.task.cancel());
    assert_eq!(Arc::strong_count(&l.token), 1, "the task's closure leaked");
    assert!(l.task.take_task().is_none(), "no one gets it back");
    // Nothing new can be created, and nothing panics.
    assert!(l.timer.try_sleep(MS).unwrap_err().is_stopped());
    assert!(l.timer.try_schedule(MS, || {}).unwrap_err().is_stopped());
    l.registered.reset(MS);
    assert!(poll(&mut l.registered, &waker).is_ready());
    l.timer.shrink();
    drop(l);
}

#[test]
fn current_thread_runtime_shutdown_cancels_pending_timeouts() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    check_leftovers(shut_down_with_pending_timeouts(rt));
}

#[test]
fn multi_thread_runtime_shutdown_cancels_pending_timeouts() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    check_leftovers(shut_down_with_pending_timeouts(rt));
}

/// Regression: the driver's drop guard was made on its first poll, so a
/// runtime shut down before it polled the driver left the timer running
/// with no driver, and its timeouts hung.
#[test]
fn shutdown_of_a_runtime_that_never_polled_the_driver_stops_the_timer() {
    let (driver_rt, timer) = common::timer_on_its_own_runtime();
    let user_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let waiter = user_rt.spawn({
        let timer = timer.clone();
        async move {
            let mut t = timer.sleep(Duration::from_secs(3600));
            (&mut t).await;
            t.is_cancelled()
        }
    });
    // Let the user task register, then shut the driver's runtime down:
    // the waiting task wakes, cancelled, instead of hanging.
    user_rt.block_on(tokio::task::yield_now());
    drop(driver_rt);
    let cancelled = user_rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .expect("the timeout hung after its driver's runtime shut down")
            .unwrap()
    });
    assert!(cancelled);
}

/// Regression, as above: the driver future of a timer built for a runtime
/// that is already shut down is dropped unpolled; the timer used to stay
/// "running" with no driver.
#[test]
fn a_timer_built_for_a_shut_down_runtime_is_stopped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    drop(rt);
    let timer = Timer::builder().handle(handle).build().unwrap();
    assert!(timer.is_stopped());
    assert!(timer.try_sleep(MS).unwrap_err().is_stopped());
}

/// Regression: a timeout that fired and was not polled yet went back into
/// the wheel when reset after `stop`, and then never completed.
#[tokio::test(start_paused = true)]
async fn reset_after_stop_does_not_rearm_a_fired_timeout() {
    let timer = Timer::new();
    let (probe, waker) = counting_waker();
    let mut t = timer.sleep(MS);
    assert!(poll(&mut t, &waker).is_pending());
    advance(MS).await;
    assert_eq!(probe.wakes(), 1, "fired, not polled yet");
    timer.stop();
    t.reset(MS);
    advance(Duration::from_secs(1)).await;
    assert!(poll(&mut t, &waker).is_ready(), "hangs: the driver is gone");
    assert!(t.is_expired());
    assert_eq!(timer.pending(), 0);
}

/// A waker that logs its id and the time of each wake, in one shared order.
struct Logger {
    id: usize,
    log: Arc<Mutex<Vec<(usize, Instant)>>>,
}

impl Wake for Logger {
    fn wake(self: Arc<Self>) {
        self.log.lock().unwrap().push((self.id, Instant::now()));
    }
}

/// Moves the paused clock without yielding: the runtime stays busy with
/// this task, so the driver cannot run (a starved worker).
fn advance_while_busy(d: Duration) {
    assert!(tokio::time::advance(d).now_or_never().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_starved_driver_fires_every_overdue_timeout_in_order_none_early() {
    let timer = Timer::new();
    let start = Instant::now();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut timeouts = Vec::new();
    let add = |timeouts: &mut Vec<(Timeout, Instant, bool)>, deadline: Instant| {
        let id = timeouts.len();
        let mut t = timer.sleep_until(deadline);
        let waker = Waker::from(Arc::new(Logger {
            id,
            log: log.clone(),
        }));
        // A deadline already past when the timeout is created completes on
        // its first poll, without the driver, once the runtime's timer has
        // processed its millisecond (tokio's rule on paused time). The
        // runtime, starved, has processed none since the start: each waits
        // for the driver, as a `tokio::time::Sleep` would.
        let overdue = deadline <= Instant::now();
        assert!(poll(&mut t, &waker).is_pending());
        timeouts.push((t, deadline, overdue));
    };
    // Deadlines spread over 0-400 ms, off tick boundaries, created out of
    // order.
    for i in 0..400u64 {
        let us = (i * 7_919) % 400_000 + 1;
        add(&mut timeouts, start + Duration::from_micros(us));
    }
    // The worker is busy for 250 ms in four steps; more timeouts are created
    // meanwhile, some already overdue by the clock.
    for step in 1..=4u64 {
        advance_while_busy(Duration::from_micros(62_500));
        let now = Instant::now();
        add(&mut timeouts, now - Duration::from_micros(step * 10_000));
        add(&mut timeouts, now + Duration::from_micros(step * 1_500));
    }
    assert!(
        log.lock().unwrap().is_empty(),
        "the driver ran while starved"
    );
    let resumed = Instant::now();
    assert_eq!(resumed - start, Duration::from_millis(250));

    settle().await;
    let woken = std::mem::take(&mut *log.lock().unwrap());
    // Deadlines are kept to the microsecond; on paused time the driver
    // fires them by the runtime timer's millisecond, as that timer does.
    let ms = |d: Instant| (d - start).as_nanos().div_ceil(1_000_000);
    let due: Vec<usize> = (0..timeouts.len())
        .filter(|&i| timeouts[i].1 <= resumed)
        .collect();
    assert!(due.len() > 200);
    let mut seen: Vec<usize> = woken.iter().map(|(id, _)| *id).collect();
    // In deadline order, millisecond by millisecond.
    for pair in woken.windows(2) {
        let (a, b) = (pair[0].0, pair[1].0);
        assert!(
            ms(timeouts[a].1) <= ms(timeouts[b].1),
            "woke {a} (due {:?}) before {b} (due {:?})",
            timeouts[a].1 - start,
            timeouts[b].1 - start
        );
    }
    // Every overdue one, each once, none early.
    for &(id, at) in &woken {
        assert!(at >= timeouts[id].1, "timeout {id} fired early");
    }
    seen.sort_unstable();
    assert_eq!(seen, due, "woken: each overdue timeout exactly once");
    let overdue = timeouts.iter().filter(|t| t.2).count();
    assert_eq!(overdue, 4, "one created overdue per busy step");
    assert_eq!(timer.pending(), timeouts.len() - due.len());

    // The rest fire on time once the driver runs normally again.
    for _ in 0..200 {
        advance(MS).await;
    }
    assert_eq!(timer.pending(), 0);
    for &(id, at) in log.lock().unwrap().iter() {
        assert!(at >= timeouts[id].1, "timeout {id} fired early");
        assert!(at - timeouts[id].1 < MS, "timeout {id} fired late");
    }
}
