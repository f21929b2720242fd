//! Every promise of docs/GUARANTEES.md on every way in, through every
//! lifecycle event that can meet it: a matrix, one `#[test]` per cell,
//! named `<row>::<column>` (`cargo test --test guarantees delay::`).
//!
//! Rows, the ways in ([`Way`]): `current_thread` (a runtime-driven `Timer`
//! on a current-thread runtime, on tokio's paused clock), `coarse_tick`
//! (the same with a 2 ms tick: its alarm batches on the runtime's
//! milliseconds, its ring of runtime timers a turn of its grid apart),
//! `coarse_tick_off_ms` (a 2.5 ms tick on a timer built 300 µs into its
//! runtime's millisecond: the alarm's grid and the runtime's disagree),
//! `multi_thread`
//! (on a 2-worker runtime, on the real clock: tokio pauses only
//! current-thread runtimes), `thread_driver` (`Builder::driver_thread`, on
//! std's clock; it sleeps on a timerfd on Linux, and on the `Condvar` of
//! other platforms when built with `--cfg hashwheel_condvar`, which CI runs
//! this file under too), `delay` (`hashwheel::Delay`, the process-wide
//! thread-driven timer) and `async_io` (`hashwheel::async_io::Timer`, on the
//! same timer). A new driver is one more line in the table at the
//! end, with the [`Way`] that builds it.
//!
//! Columns, the promises and the events: [`never_early`],
//! [`exactly_once`], [`cancel_at_drop`], [`exact_pending`], [`stop`]
//! (completes everything, hands back the tasks), [`runtime_shutdown`],
//! [`spawn_runtime_gone`], [`last_handle_dropped`], [`panics_contained`],
//! [`paused_clock`], [`interval_ticks`], [`interval_lifecycle`],
//! [`catch_up_in_order`], [`coop`] (tokio's cooperative budget, on every
//! row where tokio is present), [`contended`], [`deadline_scope`] and
//! [`deadline_scope_lifecycle`] (issue 46), [`reset_earlier`] (issue 55:
//! a protocol timer moved earlier after every packet). Every cell runs under a watchdog
//! ([`cell`]): a cell that hangs fails rather than stalling the run
//! ("nothing hangs"). Fork is
//! the column of `tests/fork.rs`, which forks a child per case (it needs a
//! process of its own); its rows are added there.
//!
//! A cell left out of the table does not apply to its row: `delay` (and
//! `async_io`) has no
//! `pending()`, `stop()`, callbacks or handle to drop (its timer is the
//! process's), and `multi_thread` no paused clock. The real-clock rows
//! sleep a few milliseconds at most per step and assert "never early" and
//! "it came" (generously bounded), never tight timings.

#![cfg(any(feature = "tokio", feature = "thread"))]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::counting_waker;
#[cfg(any(feature = "tokio", feature = "thread"))]
use hashwheel::Timer;

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// What the driver of a row is, for the cells whose promise differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Driven by the runtime it was built on.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    Runtime,
    /// Driven by a thread of its own.
    Thread,
}

/// A way in: how a row builds its timer, runs a future, reads its clock
/// and lets time pass.
trait Way: Sized {
    const NAME: &'static str;
    const KIND: Kind;
    /// How late past its deadline a sleep may complete and still count as
    /// "it came": exact under paused time, generous on the real clock.
    const LATE: Duration;
    /// A delay that surely has not passed by the next step of a cell: 2 ms
    /// under paused time, a few hundred on the real clock, where a loaded
    /// machine may stall a thread between two lines.
    const SHORT: Duration;
    /// A fresh row: a runtime and a timer on it, or a thread-driven timer.
    fn start() -> Self;
    /// A timer of the row whose callbacks are spawned on a runtime
    /// (`TaskExecutor::spawn`), and that runtime, unless the row's own.
    #[cfg(feature = "tokio")]
    fn start_spawning() -> Self;
    fn block_on<F: Future>(&self, f: F) -> F::Output;
    /// The row's timer (not for `delay`, which has none to hand).
    fn timer(&self) -> Timer;
    /// A sleep of `d`, as the row's users write it.
    fn sleep(&self, d: Duration) -> BoxFuture {
        Box::pin(self.timer().sleep(d))
    }
    /// The time by the row's clock.
    fn now(&self) -> Instant;
    /// Lets `d` pass on the row's clock, without holding up its driver.
    fn pass(&self, d: Duration) -> BoxFuture;
    /// Moves the row's clock on by `d` at once, so that its driver's next
    /// turn catches up on all of it, where the row can (tokio's paused
    /// clock); elsewhere [`pass`](Self::pass).
    fn jump(&self, d: Duration) -> BoxFuture {
        self.pass(d)
    }
    /// Drops the runtime the row's timer was built on (and spawns on).
    fn drop_runtime(&mut self);
    /// Drops the row's own handle to its timer.
    fn forget_timer(&mut self);
    /// Waits (bounded) until the driver of a timer whose every handle went
    /// has ended, where the row can see it; fails if it did not.
    fn driver_ended(&self) {}
}

/// A row that loses `/proc` once its timer is built (`W`'s timer, then a
/// `chroot` into an empty directory, as a daemon that drops its
/// privileges into a jail does; Landlock or an unmount do the same to the
/// timer): only inside [`jailed`]'s forked child, where the jail cannot
/// reach the rest of the test run. A process that lost `/proc` took
/// itself for a child forked from the one that built the timer (its pid
/// namespace read as another): contended sleeps completed at once as
/// cancelled, `pending()` counted entries long gone, and `stop()` woke
/// nothing.
#[cfg(target_os = "linux")]
struct NoProc<W>(W);

/// Set in [`jailed`]'s child: [`NoProc::start`] chroots there.
#[cfg(target_os = "linux")]
static IN_JAIL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The exit status of a jailed child that could not chroot (not root).
#[cfg(target_os = "linux")]
const NO_CHROOT: i32 = 77;

/// Chroots the calling process into an empty directory of its own, so
/// that `/proc` (and every other path) is gone; a child that may not do
/// so (not root) exits with [`NO_CHROOT`].
#[cfg(target_os = "linux")]
fn lose_proc() {
    use std::os::unix::ffi::OsStrExt;
    let dir = jail_dir(std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: a plain system call on a valid C string.
    if unsafe { libc::chroot(path.as_ptr()) } != 0 {
        eprintln!(
            "skipped: chroot refused (it needs root): {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(NO_CHROOT) };
    }
    std::env::set_current_dir("/").unwrap();
    assert!(
        std::fs::read_link("/proc/self/ns/pid").is_err(),
        "/proc is gone"
    );
}

/// The empty directory a jailed child `pid` chroots into.
#[cfg(target_os = "linux")]
fn jail_dir(pid: u32) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hashwheel-no-proc-{pid}"))
}

#[cfg(target_os = "linux")]
impl<W: Way> Way for NoProc<W> {
    const NAME: &'static str = W::NAME;
    const KIND: Kind = W::KIND;
    const LATE: Duration = W::LATE;
    const SHORT: Duration = W::SHORT;
    fn start() -> Self {
        let way = W::start();
        if IN_JAIL.load(Ordering::SeqCst) {
            lose_proc();
        }
        NoProc(way)
    }
    #[cfg(feature = "tokio")]
    fn start_spawning() -> Self {
        let way = W::start_spawning();
        if IN_JAIL.load(Ordering::SeqCst) {
            lose_proc();
        }
        NoProc(way)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.0.block_on(f)
    }
    fn timer(&self) -> Timer {
        self.0.timer()
    }
    fn sleep(&self, d: Duration) -> BoxFuture {
        self.0.sleep(d)
    }
    fn now(&self) -> Instant {
        self.0.now()
    }
    fn pass(&self, d: Duration) -> BoxFuture {
        self.0.pass(d)
    }
    fn jump(&self, d: Duration) -> BoxFuture {
        self.0.jump(d)
    }
    fn drop_runtime(&mut self) {
        self.0.drop_runtime();
    }
    fn forget_timer(&mut self) {
        self.0.forget_timer();
    }
    fn driver_ended(&self) {
        self.0.driver_ended();
    }
}

/// Set in the process of its own that [`jailed`] runs a cell in.
#[cfg(target_os = "linux")]
const JAILED: &str = "HASHWHEEL_NO_PROC_CELL";

/// Runs `column` in a process of its own (this test binary again, running
/// this one cell) that loses `/proc` once its row's timer is built (see
/// [`NoProc`]), under [`cell`]'s watchdog and one of its own that kills
/// the process; skipped, saying why, where it may not chroot. A fresh
/// process, not a fork of this one: a forked child inherits the state of
/// every lock the other test threads held (tokio's runtime parks its
/// workers in them), and a runtime built there could crash or hang on it.
#[cfg(target_os = "linux")]
fn jailed(name: &'static str, column: fn()) {
    if std::env::var_os(JAILED).is_some() {
        IN_JAIL.store(true, Ordering::SeqCst);
        column();
        return;
    }
    cell(name, move || {
        let (pid, status) = common::rerun_alone(name, JAILED, true);
        let _ = std::fs::remove_dir(jail_dir(pid));
        let Some(status) = status else {
            panic!("the jailed cell hung");
        };
        match status.code() {
            Some(0) => {}
            Some(NO_CHROOT) => eprintln!("skipped: the jailed cell could not chroot"),
            _ => panic!("the jailed cell failed ({status}; its panic is above)"),
        }
    });
}

fn poll<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// A callback counting its runs.
fn counted(runs: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let runs = runs.clone();
    move || {
        runs.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs `body` under a watchdog: a cell that hangs fails.
fn cell(name: &str, body: impl FnOnce() + Send + 'static) {
    const WATCHDOG: Duration = Duration::from_secs(120);
    let (tx, rx) = mpsc::channel();
    let runner = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            body();
            let _ = tx.send(());
        })
        .unwrap();
    match rx.recv_timeout(WATCHDOG) {
        Ok(()) => runner.join().unwrap(),
        // The body panicked: fail with its message.
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = runner.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: hung for {WATCHDOG:?}"),
    }
}

// ---- the rows ----

/// A runtime-driven timer on a current-thread runtime with paused time, of
/// a tick of `TICK_US` microseconds, built `OFFSET_US` into the runtime's
/// first millisecond (the clock then brought to the runtime's next one):
/// the default 1 ms tick at the runtime's start (`current_thread`), a
/// coarser tick there (`coarse_tick`, 2 ms), whose alarm batches on the
/// runtime's milliseconds and keeps its ring of runtime timers a turn of
/// its grid apart, or a coarser tick of no whole milliseconds built off the
/// runtime's millisecond (`coarse_tick_off_ms`, 2.5 ms at 300 µs: where
/// the alarm's grid and the runtime's disagree).
#[cfg(feature = "tokio")]
struct CurrentThread<const TICK_US: u64 = 1_000, const OFFSET_US: u64 = 0> {
    rt: Option<tokio::runtime::Runtime>,
    timer: Option<Timer>,
}

#[cfg(feature = "tokio")]
impl<const TICK_US: u64, const OFFSET_US: u64> CurrentThread<TICK_US, OFFSET_US> {
    fn with(executor: hashwheel::TaskExecutor) -> CurrentThread<TICK_US, OFFSET_US> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        if OFFSET_US > 0 {
            rt.block_on(tokio::time::advance(us(OFFSET_US)));
        }
        let timer = Timer::builder()
            .handle(rt.handle().clone())
            .task_executor(executor)
            .tick(us(TICK_US))
            .shards(2)
            .build()
            .unwrap();
        if OFFSET_US > 0 {
            rt.block_on(tokio::time::advance(us(1_000 - OFFSET_US % 1_000)));
        }
        CurrentThread {
            rt: Some(rt),
            timer: Some(timer),
        }
    }
}

#[cfg(feature = "tokio")]
impl<const TICK_US: u64, const OFFSET_US: u64> Way for CurrentThread<TICK_US, OFFSET_US> {
    const NAME: &'static str = match (TICK_US, OFFSET_US) {
        (1_000, 0) => "current_thread",
        (_, 0) => "coarse_tick",
        _ => "coarse_tick_off_ms",
    };
    const KIND: Kind = Kind::Runtime;
    /// Exact under paused time: a timeout fires at most a tick after its
    /// deadline.
    const LATE: Duration = Duration::from_micros(TICK_US);
    const SHORT: Duration = Duration::from_millis(2);
    fn start() -> Self {
        CurrentThread::with(hashwheel::TaskExecutor::default())
    }
    fn start_spawning() -> Self {
        CurrentThread::with(hashwheel::TaskExecutor::spawn())
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().unwrap().block_on(f)
    }
    fn timer(&self) -> Timer {
        self.timer.clone().expect("the row's timer was dropped")
    }
    fn now(&self) -> Instant {
        let _entered = self.rt.as_ref().map(|rt| rt.enter());
        tokio::time::Instant::now().into_std()
    }
    fn pass(&self, d: Duration) -> BoxFuture {
        Box::pin(tokio::time::sleep(d))
    }
    fn jump(&self, d: Duration) -> BoxFuture {
        Box::pin(tokio::time::advance(d))
    }
    fn drop_runtime(&mut self) {
        drop(self.rt.take());
    }
    fn forget_timer(&mut self) {
        self.timer = None;
    }
    fn driver_ended(&self) {
        // The driver's guard task ends with the timer's last handle.
        let rt = self.rt.as_ref().unwrap();
        rt.block_on(async {
            let start = Instant::now();
            while rt.metrics().num_alive_tasks() > 0 && start.elapsed() < Self::LATE {
                tokio::task::yield_now().await;
            }
        });
        assert_eq!(
            rt.metrics().num_alive_tasks(),
            0,
            "{}: driver ended",
            Self::NAME
        );
    }
}

/// A runtime-driven timer on a 2-worker runtime, on the real clock.
#[cfg(feature = "tokio")]
struct MultiThread {
    rt: Option<tokio::runtime::Runtime>,
    timer: Option<Timer>,
}

#[cfg(feature = "tokio")]
impl MultiThread {
    fn with(executor: hashwheel::TaskExecutor) -> MultiThread {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let timer = Timer::builder()
            .handle(rt.handle().clone())
            .task_executor(executor)
            .shards(2)
            .build()
            .unwrap();
        MultiThread {
            rt: Some(rt),
            timer: Some(timer),
        }
    }
}

#[cfg(feature = "tokio")]
impl Way for MultiThread {
    const NAME: &'static str = "multi_thread";
    const KIND: Kind = Kind::Runtime;
    const LATE: Duration = Duration::from_secs(5);
    const SHORT: Duration = Duration::from_millis(300);
    fn start() -> Self {
        MultiThread::with(hashwheel::TaskExecutor::default())
    }
    fn start_spawning() -> Self {
        MultiThread::with(hashwheel::TaskExecutor::spawn())
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().unwrap().block_on(f)
    }
    fn timer(&self) -> Timer {
        self.timer.clone().expect("the row's timer was dropped")
    }
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn pass(&self, d: Duration) -> BoxFuture {
        Box::pin(tokio::time::sleep(d))
    }
    fn drop_runtime(&mut self) {
        drop(self.rt.take());
    }
    fn forget_timer(&mut self) {
        self.timer = None;
    }
    fn driver_ended(&self) {
        // The driver's guard task ends with the timer's last handle.
        let rt = self.rt.as_ref().unwrap();
        rt.block_on(async {
            let start = Instant::now();
            while rt.metrics().num_alive_tasks() > 0 && start.elapsed() < Self::LATE {
                tokio::task::yield_now().await;
            }
        });
        assert_eq!(
            rt.metrics().num_alive_tasks(),
            0,
            "{}: driver ended",
            Self::NAME
        );
    }
}

/// A thread-driven timer (timerfd, or the Condvar under
/// `--cfg hashwheel_condvar`), run on `futures`' `block_on`.
#[cfg(feature = "thread")]
struct ThreadDriver {
    /// The runtime its callbacks are spawned on, for `start_spawning`.
    #[cfg(feature = "tokio")]
    rt: Option<tokio::runtime::Runtime>,
    timer: Option<Timer>,
}

#[cfg(feature = "thread")]
impl Way for ThreadDriver {
    const NAME: &'static str = "thread_driver";
    const KIND: Kind = Kind::Thread;
    const LATE: Duration = Duration::from_secs(5);
    const SHORT: Duration = Duration::from_millis(300);
    fn start() -> Self {
        ThreadDriver {
            #[cfg(feature = "tokio")]
            rt: None,
            timer: Some(Timer::builder().driver_thread().shards(2).build().unwrap()),
        }
    }
    #[cfg(feature = "tokio")]
    fn start_spawning() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let timer = Timer::builder()
            .driver_thread()
            .handle(rt.handle().clone())
            .task_executor(hashwheel::TaskExecutor::spawn())
            .shards(2)
            .build()
            .unwrap();
        ThreadDriver {
            rt: Some(rt),
            timer: Some(timer),
        }
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        futures::executor::block_on(f)
    }
    fn timer(&self) -> Timer {
        self.timer.clone().expect("the row's timer was dropped")
    }
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn pass(&self, d: Duration) -> BoxFuture {
        Box::pin(async move { std::thread::sleep(d) })
    }
    fn drop_runtime(&mut self) {
        #[cfg(feature = "tokio")]
        drop(self.rt.take());
    }
    fn forget_timer(&mut self) {
        self.timer = None;
    }
}

/// futures-timer's `Delay`, on the process-wide thread-driven timer.
#[cfg(feature = "thread")]
struct DelayWay;

#[cfg(feature = "thread")]
impl Way for DelayWay {
    const NAME: &'static str = "delay";
    const KIND: Kind = Kind::Thread;
    const LATE: Duration = Duration::from_secs(5);
    const SHORT: Duration = Duration::from_millis(300);
    /// Brings up the process's timer (a delay made and dropped), as the
    /// other rows build theirs at start: a `no_proc` cell then loses
    /// `/proc` with it running.
    fn start() -> Self {
        drop(hashwheel::Delay::new(Duration::ZERO));
        DelayWay
    }
    #[cfg(feature = "tokio")]
    fn start_spawning() -> Self {
        unreachable!("delay has no callbacks")
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        futures::executor::block_on(f)
    }
    fn timer(&self) -> Timer {
        unreachable!("delay has no Timer to hand: its cells never ask")
    }
    fn sleep(&self, d: Duration) -> BoxFuture {
        Box::pin(hashwheel::Delay::new(d))
    }
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn pass(&self, d: Duration) -> BoxFuture {
        Box::pin(async move { std::thread::sleep(d) })
    }
    fn drop_runtime(&mut self) {}
    fn forget_timer(&mut self) {}
}

/// async-io's `Timer` (`hashwheel::async_io::Timer`), on the same
/// process-wide thread-driven timer as `Delay`.
#[cfg(feature = "thread")]
struct AsyncIoWay;

#[cfg(feature = "thread")]
impl Way for AsyncIoWay {
    const NAME: &'static str = "async_io";
    const KIND: Kind = Kind::Thread;
    const LATE: Duration = Duration::from_secs(5);
    const SHORT: Duration = Duration::from_millis(300);
    /// As [`DelayWay::start`]: the process's timer comes up first.
    fn start() -> Self {
        drop(hashwheel::async_io::Timer::after(Duration::ZERO));
        AsyncIoWay
    }
    #[cfg(feature = "tokio")]
    fn start_spawning() -> Self {
        unreachable!("async_io has no callbacks")
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        futures::executor::block_on(f)
    }
    fn timer(&self) -> Timer {
        unreachable!("async_io has no Timer to hand: its cells never ask")
    }
    fn sleep(&self, d: Duration) -> BoxFuture {
        let timer = hashwheel::async_io::Timer::after(d);
        Box::pin(async move {
            timer.await;
        })
    }
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn pass(&self, d: Duration) -> BoxFuture {
        Box::pin(async move { std::thread::sleep(d) })
    }
    fn drop_runtime(&mut self) {}
    fn forget_timer(&mut self) {}
}

/// Lets time pass on the row's clock until `done` (bounded by
/// [`Way::LATE`] of real time, and at least 5 s of it: a loaded machine
/// may stall a thread, and on a paused row, whose `LATE` is a tick, for
/// longer than that: a cell on paused time failed so, one run in a few
/// dozen, with the other cells of the matrix running beside it).
async fn until<W: Way>(way: &W, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < W::LATE.max(Duration::from_secs(5)) {
        way.pass(ms(1)).await;
    }
}

/// Whether the row has a `Timer` (every row but `delay`).
fn has_timer<W: Way>() -> bool {
    W::NAME != "delay" && W::NAME != "async_io"
}

// ---- the columns ----

/// Never early: sleeps from zero to a few milliseconds, one after another
/// and twenty at once, each complete no earlier than its delay after it was
/// made, and (generously) come.
fn never_early<W: Way>() {
    let way = W::start();
    let way = &way;
    way.block_on(async {
        let delays = [0, 1, 500, 1_000, 1_500, 2_000, 3_333, 5_000];
        for d in delays.map(us) {
            let start = way.now();
            way.sleep(d).await;
            let took = way.now() - start;
            assert!(took >= d, "{}: {d:?} completed after {took:?}", W::NAME);
            assert!(took <= d + W::LATE, "{}: {d:?} took {took:?}", W::NAME);
        }
        let all = (0..20u64).map(|i| {
            let d = us(i * 397 % 6_000);
            let start = way.now();
            let sleep = way.sleep(d);
            async move {
                sleep.await;
                let took = way.now() - start;
                assert!(took >= d, "{}: {d:?} completed after {took:?}", W::NAME);
            }
        });
        futures::future::join_all(all).await;
    });
}

/// A waker that logs its id into a shared list as it is woken.
struct Logged(Arc<std::sync::Mutex<Vec<u64>>>, u64);

impl Wake for Logged {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.lock().unwrap().push(self.1);
    }
}

/// A starved driver catches up in order: sleeps due 5 ms apart (wider
/// than a bucket of every row's wheel), three to a deadline, made and
/// polled out of order, all come due by one move of the clock (on tokio's
/// paused clock, one jump: a single late turn; on the real clock, as they
/// come), and their wakers are woken in deadline order.
fn catch_up_in_order<W: Way>() {
    let way = W::start();
    way.block_on(async {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut sleeps = Vec::new();
        for k in [3, 0, 4, 1, 2, 4, 0, 3, 2, 1, 1, 2, 0, 4, 3] {
            let mut sleep = way.sleep(ms(5 * (k + 1)));
            let waker = Waker::from(Arc::new(Logged(log.clone(), k)));
            assert!(poll(&mut sleep, &waker).is_pending(), "{}", W::NAME);
            sleeps.push(sleep);
        }
        way.jump(ms(30)).await;
        until(&way, || log.lock().unwrap().len() >= sleeps.len()).await;
        let woken = log.lock().unwrap().clone();
        assert_eq!(woken.len(), sleeps.len(), "{}: {woken:?}", W::NAME);
        assert!(
            woken.windows(2).all(|w| w[0] <= w[1]),
            "{}: woken out of deadline order: {woken:?}",
            W::NAME
        );
    });
}

/// Exactly once: a polled sleep's waker is woken once, and not again after
/// it completed; on a timer, a task runs once, then reports expired.
fn exactly_once<W: Way>() {
    let way = W::start();
    way.block_on(async {
        let (counter, waker) = counting_waker();
        let mut sleep = way.sleep(W::SHORT);
        assert!(poll(&mut sleep, &waker).is_pending());
        way.pass(W::SHORT + ms(1)).await;
        until(&way, || counter.wakes() > 0).await;
        assert_eq!(counter.wakes(), 1, "{}: woken once", W::NAME);
        assert!(poll(&mut sleep, &waker).is_ready());
        way.pass(ms(5)).await;
        assert_eq!(counter.wakes(), 1, "{}: and only once", W::NAME);
        if has_timer::<W>() {
            let timer = way.timer();
            let runs = Arc::new(AtomicUsize::new(0));
            let tasks: Vec<_> = (0..8)
                .map(|i| timer.schedule(us(i * 300), counted(&runs)))
                .collect();
            way.pass(ms(3)).await;
            // A spawned task runs when the runtime gets to it.
            until(&way, || runs.load(Ordering::SeqCst) >= tasks.len()).await;
            way.pass(ms(5)).await;
            assert_eq!(runs.load(Ordering::SeqCst), tasks.len(), "{}", W::NAME);
            assert!(tasks.iter().all(|t| t.is_expired() && !t.is_cancelled()));
        }
    });
}

/// Cancel at drop: a dropped sleep, polled or not, is gone from
/// `pending()` at once and its waker is never woken; a cancelled task never
/// runs.
fn cancel_at_drop<W: Way>() {
    let way = W::start();
    way.block_on(async {
        let (counter, waker) = counting_waker();
        let mut polled = way.sleep(W::SHORT);
        assert!(poll(&mut polled, &waker).is_pending());
        let unpolled = way.sleep(W::SHORT);
        if has_timer::<W>() {
            assert_eq!(way.timer().pending(), 2, "{}", W::NAME);
        }
        drop(polled);
        if has_timer::<W>() {
            assert_eq!(way.timer().pending(), 1, "{}: at once", W::NAME);
        }
        drop(unpolled);
        if has_timer::<W>() {
            assert_eq!(way.timer().pending(), 0, "{}: at once", W::NAME);
        }
        way.pass(W::SHORT + ms(10)).await;
        assert_eq!(counter.wakes(), 0, "{}: woken after its drop", W::NAME);
        if has_timer::<W>() {
            let runs = Arc::new(AtomicUsize::new(0));
            let task = way.timer().schedule(W::SHORT, counted(&runs));
            assert!(task.cancel());
            way.pass(W::SHORT + ms(10)).await;
            assert_eq!(runs.load(Ordering::SeqCst), 0, "{}", W::NAME);
            assert!(task.is_cancelled() && !task.is_expired());
            assert_eq!(way.timer().pending(), 0);
        }
    });
}

/// Exact `pending()`: timeouts (polled or not) and tasks counted from
/// their creation until they fire or are cancelled, step by step; then,
/// brought due by resets, until they fire.
fn exact_pending<W: Way>() {
    let way = W::start();
    let timer = way.timer();
    way.block_on(async {
        let (_, waker) = counting_waker();
        // Far enough that no stall fires one between two counts.
        let far = Duration::from_secs(3600);
        let mut sleeps: Vec<_> = (0..10).map(|i| timer.sleep(far + ms(i))).collect();
        assert_eq!(timer.pending(), 10);
        for sleep in &mut sleeps[..5] {
            assert!(poll(sleep, &waker).is_pending());
        }
        assert_eq!(timer.pending(), 10, "polled or not");
        let runs = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..4)
            .map(|i| timer.schedule(far + ms(i), counted(&runs)))
            .collect();
        assert_eq!(timer.pending(), 14);
        sleeps.truncate(7); // three unpolled ones dropped
        assert_eq!(timer.pending(), 11);
        assert!(tasks[0].cancel());
        assert_eq!(timer.pending(), 10);
        let last = timer.sleep(far);
        assert_eq!(timer.pending(), 11);
        // A reset keeps the count: to other far deadlines, so that none
        // fires between the resets and the count on a busy machine (the
        // real clock's rows reset to 1 ms, 2 ms ... and found some fired).
        for (i, sleep) in (0..).zip(&mut sleeps) {
            sleep.reset(far + ms(10 + i));
        }
        assert_eq!(timer.pending(), 11, "a reset keeps the count");
        // Brought due: polled and unpolled ones fire and leave the count.
        for (i, sleep) in (0..).zip(&mut sleeps) {
            sleep.reset(ms(1 + i));
        }
        futures::future::join_all(sleeps).await;
        drop(tasks);
        until(&way, || timer.pending() <= 4).await;
        assert_eq!(
            timer.pending(),
            4,
            "{}: three tasks and the last one",
            W::NAME
        );
        drop(last);
        assert_eq!(timer.pending(), 3);
        timer.stop();
        assert_eq!(timer.pending(), 0);
        assert_eq!(timer.stats().pending, 0);
    });
}

/// A reset to an earlier deadline is never late and never lost: sleeps
/// made an hour out and polled (in the wheel) are moved earlier, one after
/// a move later first (the lock-free extension, as a protocol timer's ack
/// delay is set, cleared and set again), one after the driver turned past
/// the bucket it was made in, one twice, one to the past; each completes
/// no earlier than its new deadline and within the row's lateness of it.
/// Then the lifecycle: a sleep moved earlier outlives the row's own handle
/// to its timer, and one moved earlier but still pending meets the
/// timer's stop and completes, cancelled.
fn reset_earlier<W: Way>() {
    let mut way = W::start();
    let timer = way.timer();
    let far = Duration::from_secs(3600);
    way.block_on(async {
        let way = &way;
        let (_, waker) = counting_waker();
        let start = way.now();
        let mut sleeps = Vec::new();
        for (i, d) in [us(1_500), ms(3), us(4_700), ms(6)].into_iter().enumerate() {
            let mut sleep = timer.sleep(far);
            assert!(poll(&mut sleep, &waker).is_pending(), "{}", W::NAME);
            if i % 2 == 1 {
                sleep.reset(far + ms(1));
            }
            if i == 2 {
                sleep.reset_at(start + ms(5));
            }
            sleep.reset_at(start + d);
            sleeps.push((sleep, start + d));
        }
        let mut late = timer.sleep(ms(40));
        assert!(poll(&mut late, &waker).is_pending());
        way.pass(W::SHORT).await;
        let due = way.now() + ms(1);
        late.reset_at(due);
        sleeps.push((late, due));
        let mut past = timer.sleep(far);
        assert!(poll(&mut past, &waker).is_pending());
        let due = way.now();
        past.reset_at(due - ms(1));
        sleeps.push((past, due - ms(1)));
        let all = sleeps.into_iter().map(|(sleep, due)| async move {
            sleep.await;
            let now = way.now();
            assert!(now >= due, "{}: completed {:?} early", W::NAME, due - now);
            assert!(
                now <= due + W::LATE,
                "{}: completed {:?} late",
                W::NAME,
                now - due
            );
        });
        futures::future::join_all(all).await;
    });
    let mut kept = timer.sleep(far);
    let due = way.block_on(async {
        let (_, waker) = counting_waker();
        assert!(poll(&mut kept, &waker).is_pending());
        let due = way.now() + ms(2);
        kept.reset_at(due);
        due
    });
    drop(timer);
    way.forget_timer();
    way.block_on(async {
        (&mut kept).await;
        assert!(way.now() >= due, "{}: early after its handle went", W::NAME);
    });
    assert!(kept.is_expired(), "{}", W::NAME);
    drop(kept);
    way.driver_ended();
    let way = W::start();
    let timer = way.timer();
    way.block_on(async {
        let (_, waker) = counting_waker();
        let mut stopped = timer.sleep(far);
        assert!(poll(&mut stopped, &waker).is_pending());
        stopped.reset(far / 2);
        timer.stop();
        (&mut stopped).await;
        assert!(stopped.is_cancelled(), "{}: stopped, not lost", W::NAME);
    });
}

/// `stop()`: every pending timeout completes cancelled (woken if polled),
/// the tasks that never ran come back with their closures, `pending()` is
/// 0 and new timeouts are refused; one that fired before stays fired.
fn stop<W: Way>() {
    let way = W::start();
    let timer = way.timer();
    way.block_on(async {
        let mut fired = timer.sleep(ms(1));
        (&mut fired).await;
        let (counter, waker) = counting_waker();
        let mut polled = timer.sleep(Duration::from_secs(60));
        assert!(poll(&mut polled, &waker).is_pending());
        let mut unpolled = timer.sleep(Duration::from_secs(60));
        let runs = Arc::new(AtomicUsize::new(0));
        let task = timer.schedule(Duration::from_secs(60), counted(&runs));
        let never_ran = timer.stop();
        assert_eq!(counter.wakes(), 1, "{}: woken by stop", W::NAME);
        assert!(poll(&mut polled, &waker).is_ready());
        assert!(poll(&mut unpolled, &waker).is_ready());
        assert!(polled.is_cancelled() && unpolled.is_cancelled());
        assert!(fired.is_expired() && !fired.is_cancelled());
        assert_eq!(never_ran.len(), 1);
        assert!(task.is_cancelled() && !task.is_expired());
        assert!(never_ran[0].run(), "{}: handed back", W::NAME);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(timer.pending(), 0);
        assert!(timer.try_sleep(ms(1)).unwrap_err().is_stopped());
        assert!(timer.try_schedule(ms(1), || {}).unwrap_err().is_stopped());
        assert!(timer.stop().is_empty(), "only the first stop counts");
    });
}

/// Intervals, which the driver re-arms as it fires each tick: every tick
/// reports its nominal instant (the start and whole periods after it) and
/// completes no earlier, none is lost or doubled, and (generously) each
/// comes; a stop wakes an interval waiting for its tick and ends it (the
/// stream returns `None`).
fn interval_ticks<W: Way>() {
    use futures::StreamExt;
    let way = W::start();
    let way = &way;
    let timer = way.timer();
    way.block_on(async {
        let ticking = [1_000, 1_500, 2_333].map(us).map(|period| {
            let start = way.now() + us(700);
            let mut interval = timer.interval_at(start, period);
            async move {
                for n in 0..6u32 {
                    let due = interval.tick().await;
                    let now = way.now();
                    let nominal = start + period * n;
                    assert_eq!(due, nominal, "{}: {period:?}, tick {n}", W::NAME);
                    assert!(now >= due, "{}: {period:?}, tick {n} early", W::NAME);
                    assert!(
                        now - due <= W::LATE,
                        "{}: {period:?}, tick {n} {:?} late",
                        W::NAME,
                        now - due
                    );
                }
                interval
            }
        });
        let mut intervals = futures::future::join_all(ticking).await;
        let (counter, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let far = Duration::from_secs(60);
        let mut waiting = timer.interval_at(way.now() + far, far);
        assert!(waiting.poll_next_unpin(&mut cx).is_pending());
        intervals.push(waiting);
        timer.stop();
        assert!(counter.wakes() >= 1, "{}: stop woke no interval", W::NAME);
        for interval in &mut intervals {
            assert_eq!(
                interval.poll_next_unpin(&mut cx),
                Poll::Ready(None),
                "{}: an interval went on after stop",
                W::NAME
            );
        }
    });
}

/// Intervals through the events a timeout meets. An interval's waker lives
/// in its wheel entry, and the driver moves it out to wake it and puts it
/// back after (issue 36), so each event is met with the waker in either
/// place: a waker that panics is contained (the other intervals tick on,
/// and the panicky one ticks once polled with a good waker); with the
/// timer's last handle dropped an interval ticks on, and the driver ends
/// once it is dropped; with the runtime gone a runtime-driven timer's
/// interval is woken and ends (`None`), a thread-driven timer's (built
/// inside the runtime) ticks on.
fn interval_lifecycle<W: Way>() {
    use futures::StreamExt;
    struct Panics;
    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("an interval's waker panicked (expected by the test)");
        }
    }
    /// `n` ticks of `interval`, each at its nominal instant (`start` and
    /// whole periods after it), none early.
    async fn ticks<W: Way>(
        way: &W,
        interval: &mut hashwheel::Interval,
        start: Instant,
        period: Duration,
        n: u32,
    ) {
        for i in 0..n {
            let due = interval.tick().await;
            assert_eq!(due, start + period * i, "{}: tick {i}", W::NAME);
            assert!(way.now() >= due, "{}: tick {i} early", W::NAME);
        }
    }

    // A panicking waker.
    let way = W::start();
    let timer = way.timer();
    way.block_on(async {
        let period = W::SHORT;
        let start = way.now() + period;
        let mut panicky = timer.interval_at(start, period);
        let bad = Waker::from(Arc::new(Panics));
        let mut cx = Context::from_waker(&bad);
        assert!(panicky.poll_next_unpin(&mut cx).is_pending());
        let mut good = timer.interval_at(start, period);
        ticks(&way, &mut good, start, period, 2).await;
        assert!(!timer.is_stopped(), "{}: stopped by a waker", W::NAME);
        ticks(&way, &mut panicky, start, period, 1).await;
    });
    drop((timer, way));

    // The last handle dropped.
    let mut way = W::start();
    let timer = way.timer();
    let period = ms(2);
    let start = way.now() + period;
    let mut interval = timer.interval_at(start, period);
    drop(timer);
    way.forget_timer();
    way.block_on(ticks(&way, &mut interval, start, period, 3));
    drop(interval);
    way.driver_ended();

    // The runtime gone.
    let mut way = W::start();
    let rt = tokio_runtime();
    let timer = runtime_timer(&way, &rt);
    let (counter, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let far = Duration::from_secs(60);
    let mut waiting = timer.interval_at(way.now() + far, far);
    way.block_on(async { assert!(waiting.poll_next_unpin(&mut cx).is_pending()) });
    way.drop_runtime();
    drop(rt);
    match W::KIND {
        Kind::Runtime => {
            assert_eq!(counter.wakes(), 1, "{}: woken", W::NAME);
            assert_eq!(waiting.poll_next_unpin(&mut cx), Poll::Ready(None));
        }
        Kind::Thread => {
            assert!(!timer.is_stopped());
            let period = ms(2);
            let start = Instant::now() + period;
            let mut ticking = timer.interval_at(start, period);
            futures::executor::block_on(ticks(&way, &mut ticking, start, period, 3));
            assert!(waiting.poll_next_unpin(&mut cx).is_pending());
            assert_eq!(counter.wakes(), 0, "{}: woken for nothing", W::NAME);
        }
    }
}

/// Runtime shutdown. A runtime-driven timer stops with its runtime: its
/// timeouts complete cancelled (on any executor, none needed), the closures
/// of its tasks are freed, and its errors say why. A thread-driven timer
/// (and `Delay`) built inside a runtime does not depend on it: it goes on.
fn runtime_shutdown<W: Way>() {
    let mut way = W::start();
    #[cfg(feature = "thread")]
    if !has_timer::<W>() {
        // `Delay`: made inside a runtime, awaited after it is gone.
        let rt = tokio_runtime();
        let entered = rt.enter();
        let delay = hashwheel::Delay::new(ms(3));
        drop(entered);
        drop(rt);
        let start = Instant::now();
        way.block_on(delay);
        assert!(start.elapsed() <= ms(3) + W::LATE);
        return;
    }
    let rt = tokio_runtime();
    let timer = runtime_timer(&way, &rt);
    let (counter, waker) = counting_waker();
    let mut polled = timer.sleep(Duration::from_secs(60));
    way.block_on(async { assert!(poll(&mut polled, &waker).is_pending()) });
    let unpolled = timer.sleep(Duration::from_secs(60));
    let owned = Arc::new(());
    let freed = Arc::downgrade(&owned);
    let task = timer.schedule(Duration::from_secs(60), move || drop(owned));
    way.drop_runtime();
    drop(rt);
    match W::KIND {
        Kind::Runtime => {
            assert_eq!(counter.wakes(), 1, "{}: woken", W::NAME);
            futures::executor::block_on(async {
                polled.await;
                unpolled.await;
            });
            assert!(task.is_cancelled() && !task.is_expired());
            assert!(freed.upgrade().is_none(), "{}: closure freed", W::NAME);
            let err = timer.try_sleep(ms(1)).unwrap_err();
            assert!(err.is_stopped());
            assert!(err.to_string().contains("runtime"), "{err}");
        }
        Kind::Thread => {
            // Nothing here was the runtime's: it goes on.
            assert!(!timer.is_stopped());
            futures::executor::block_on(timer.sleep(ms(2)));
            assert_eq!(timer.pending(), 3);
            assert!(freed.upgrade().is_some());
            drop((polled, unpolled));
            assert!(task.cancel());
        }
    }
}

/// The timer a runtime-shutdown cell watches: the row's own, driven by
/// its runtime, or for a thread-driven row one built inside `rt` with the
/// default executor (which does not depend on it).
fn runtime_timer<W: Way>(way: &W, rt: &tokio::runtime::Runtime) -> Timer {
    match W::KIND {
        Kind::Runtime => way.timer(),
        #[cfg(feature = "thread")]
        Kind::Thread => {
            rt.block_on(async { Timer::builder().driver_thread().shards(2).build().unwrap() })
        }
        #[cfg(not(feature = "thread"))]
        Kind::Thread => {
            let _ = rt;
            unreachable!("no thread driver in this build")
        }
    }
}

/// A plain current-thread runtime (no paused clock).
fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The runtime callbacks are spawned on (`TaskExecutor::spawn`) goes away:
/// every due callback either runs or comes back cancelled, and
/// `is_expired()` never claims one that did not run. A runtime-driven
/// timer's spawn runtime is its own (it stops with it, freeing what never
/// ran); a thread-driven timer outlives it, stops saying why, and hands
/// back what never ran with its closure (issue 26, found 2).
#[cfg(feature = "tokio")]
fn spawn_runtime_gone<W: Way>() {
    let mut way = W::start_spawning();
    let timer = way.timer();
    let runs = Arc::new(AtomicUsize::new(0));
    let due: Vec<_> = way.block_on(async {
        // The last comes due with the end of the wait: the runtime may
        // still hold it, spawned and unrun, when it is dropped.
        let due = (0..6)
            .map(|i| timer.schedule(us(i * 600), counted(&runs)))
            .collect();
        way.pass(ms(3)).await;
        due
    });
    let pending = timer.schedule(Duration::from_secs(60), counted(&runs));
    way.drop_runtime();
    // A thread driver may be handing a callback on as the runtime goes: it
    // is neither expired nor cancelled until then.
    let start = Instant::now();
    while !due.iter().all(|t| t.is_expired() || t.is_cancelled()) && start.elapsed() < W::LATE {
        std::thread::sleep(ms(1));
    }
    let ran = runs.load(Ordering::SeqCst);
    let expired = due.iter().filter(|t| t.is_expired()).count();
    assert_eq!(expired, ran, "{}: expired but never ran", W::NAME);
    assert!(due.iter().all(|t| t.is_expired() || t.is_cancelled()));
    assert!(pending.is_cancelled(), "{}", W::NAME);
    assert!(timer.is_stopped(), "{}", W::NAME);
    let err = timer.try_schedule(ms(1), || {}).unwrap_err();
    assert!(err.is_stopped());
    assert!(err.to_string().contains("runtime"), "{err}");
    if W::KIND == Kind::Thread {
        // Handed back: what never ran runs here.
        let handed = due.iter().chain([&pending]).filter(|t| t.run()).count();
        assert_eq!(handed, due.len() + 1 - ran, "{}", W::NAME);
        assert_eq!(runs.load(Ordering::SeqCst), due.len() + 1);
    }
}

/// The last `Timer` handle dropped: what is pending still fires (a timeout
/// and a task keep the timer alive), and then the driver ends (on a
/// runtime, its guard task; a thread driver's thread is counted in
/// `tests/thread_exit.rs`).
fn last_handle_dropped<W: Way>() {
    let way = W::start();
    let timer = way.timer();
    let runs = Arc::new(AtomicUsize::new(0));
    let timeout = timer.sleep(ms(3));
    let task = timer.schedule(ms(4), counted(&runs));
    drop(timer);
    let mut way = way;
    way.forget_timer();
    way.block_on(async {
        timeout.await;
        until(&way, || runs.load(Ordering::SeqCst) > 0).await;
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{}: the task ran", W::NAME);
    assert!(task.is_expired());
    drop(task);
    way.driver_ended();
}

/// Panics contained: a panicking callback and a panicking waker, due with
/// other timeouts, are caught; the others fire, and the timer goes on.
fn panics_contained<W: Way>() {
    struct Panics;
    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("a waker panicked (expected by the test)");
        }
    }
    let way = W::start();
    way.block_on(async {
        let bad = Waker::from(Arc::new(Panics));
        let mut panicky = way.sleep(W::SHORT);
        assert!(poll(&mut panicky, &bad).is_pending());
        let runs = Arc::new(AtomicUsize::new(0));
        if has_timer::<W>() {
            way.timer().schedule(W::SHORT, || {
                panic!("a callback panicked (expected by the test)")
            });
            way.timer().schedule(W::SHORT, counted(&runs));
        }
        let (counter, waker) = counting_waker();
        let mut good = way.sleep(W::SHORT);
        assert!(poll(&mut good, &waker).is_pending());
        way.pass(W::SHORT + ms(1)).await;
        until(&way, || counter.wakes() > 0).await;
        assert_eq!(counter.wakes(), 1, "{}: the batch went on", W::NAME);
        let start = way.now();
        way.sleep(ms(2)).await;
        assert!(way.now() - start >= ms(2), "{}: goes on", W::NAME);
        if has_timer::<W>() {
            until(&way, || runs.load(Ordering::SeqCst) > 0).await;
            assert_eq!(runs.load(Ordering::SeqCst), 1);
            assert!(!way.timer().is_stopped());
        }
    });
}

/// Paused time, where the clock is tokio's (`current_thread`): a sleep
/// completes with a `tokio::time::Sleep` of the same deadline, and once
/// nothing is pending, an idle runtime's clock stays where `tokio::time`
/// leaves it (issue 26, found 1: it jumped 1 ms). On a thread-driven row
/// the clock is std's: paused time neither moves its sleeps (they take real
/// time) nor is moved by them.
fn paused_clock<W: Way>() {
    /// Idles on a channel fed by an OS thread; returns how far the paused
    /// clock moved meanwhile.
    async fn idle_moves_clock() -> Duration {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(ms(20));
            let _ = tx.send(());
        });
        let before = tokio::time::Instant::now();
        rx.await.unwrap();
        sender.join().unwrap();
        before.elapsed()
    }
    let way = W::start();
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    match W::KIND {
        Kind::Runtime => way.block_on(async {
            let timer = way.timer();
            let start = tokio::time::Instant::now();
            let first = timer.sleep(ms(10));
            let mut second = Box::pin(timer.sleep_until(start + ms(20)));
            let mut theirs = Box::pin(tokio::time::sleep_until(start + ms(20)));
            let (_, waker) = counting_waker();
            assert!(poll(&mut second, &waker).is_pending());
            first.await;
            if W::LATE <= ms(1) {
                assert_eq!(start.elapsed(), ms(10), "{}", W::NAME);
                theirs.as_mut().await;
                assert!(poll(&mut second, &waker).is_ready(), "with tokio's");
            } else {
                // A coarser tick: on its grid, within a tick.
                let took = start.elapsed();
                assert!(
                    took >= ms(10) && took <= ms(10) + W::LATE,
                    "{}: {took:?}",
                    W::NAME
                );
                second.as_mut().await;
                let took = start.elapsed();
                assert!(
                    took >= ms(20) && took <= ms(20) + W::LATE,
                    "{}: {took:?}",
                    W::NAME
                );
            }
            assert_eq!(timer.pending(), 0);
            assert_eq!(idle_moves_clock().await, Duration::ZERO, "{}", W::NAME);
        }),
        Kind::Thread => paused.block_on(async {
            let before = tokio::time::Instant::now();
            let start = Instant::now();
            way.sleep(ms(3)).await;
            assert!(start.elapsed() >= ms(3), "{}: real time", W::NAME);
            assert_eq!(before.elapsed(), Duration::ZERO, "{}", W::NAME);
            assert_eq!(idle_moves_clock().await, Duration::ZERO, "{}", W::NAME);
        }),
    }
}

/// Contended: two other threads make, poll and drop far sleeps on the
/// row's timer without pause (its shards' locks are taken when another
/// thread wants them, the fork checks' path), while a task sleeps and
/// times out on it: every sleep completes no earlier than its deadline and
/// fired (none at once as cancelled), every timeout elapses at its
/// deadline (none at once), `pending()` comes back to what is alive, and
/// `stop()` wakes a task waiting an hour.
fn contended<W: Way>() {
    use std::sync::atomic::AtomicBool;
    let way = W::start();
    let timer = way.timer();
    let quit = Arc::new(AtomicBool::new(false));
    let touchers: Vec<_> = (0..2)
        .map(|_| {
            let (timer, quit) = (timer.clone(), quit.clone());
            std::thread::spawn(move || {
                let (_, waker) = counting_waker();
                while !quit.load(Ordering::Relaxed) {
                    let mut far = timer.sleep(Duration::from_secs(3_600));
                    assert!(poll(&mut far, &waker).is_pending());
                    let mut far_too = timer.sleep(Duration::from_secs(3_600));
                    assert!(poll(&mut far_too, &waker).is_pending());
                    drop((far, far_too));
                }
            })
        })
        .collect();
    way.block_on(async {
        for i in 0..200u64 {
            let d = us(200 + i % 7 * 100);
            let start = way.now();
            let mut sleep = timer.sleep(d);
            (&mut sleep).await;
            assert!(way.now() >= start + d, "{}: sleep {i} early", W::NAME);
            assert!(!sleep.is_cancelled(), "{}: sleep {i} cancelled", W::NAME);
            let start = way.now();
            let timed = timer.timeout(d, std::future::pending::<()>()).await;
            assert!(timed.is_err(), "{}", W::NAME);
            assert!(way.now() >= start + d, "{}: timeout {i} early", W::NAME);
        }
    });
    quit.store(true, Ordering::Relaxed);
    for toucher in touchers {
        toucher.join().unwrap();
    }
    assert_eq!(timer.pending(), 0, "{}: nothing alive", W::NAME);
    let (counter, waker) = counting_waker();
    let mut hour = timer.sleep(Duration::from_secs(3_600));
    assert!(poll(&mut hour, &waker).is_pending());
    assert_eq!(timer.pending(), 1);
    timer.stop();
    assert_eq!(
        counter.wakes(),
        1,
        "{}: stop woke the waiting task",
        W::NAME
    );
    assert!(poll(&mut hour, &waker).is_ready() && hour.is_cancelled());
    assert_eq!(timer.pending(), 0);
}

/// A child forked from a process that lost `/proc` (a grandchild of the
/// test) arms and stops the thread-driven timer it inherited: it leaves
/// its parent's timer alone (the timerfd is the parent's too), which keeps
/// firing. Its `getpid` tells it apart even without `/proc`. The thread
/// driver's row only, as `tests/fork.rs`'s cases: a child forked from a
/// process that runs a tokio runtime inherits its workers' locks mid-use.
#[cfg(all(target_os = "linux", feature = "thread"))]
fn child_leaves_the_timer_alone<W: Way>() {
    let way = W::start();
    let timer = way.timer();
    let (_, waker) = counting_waker();
    let mut armed = timer.sleep(Duration::from_secs(3_600));
    assert!(poll(&mut armed, &waker).is_pending());
    // SAFETY: the child touches only what it inherited and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let mut soon = timer.sleep(Duration::from_nanos(1_500));
        let (_, noop) = counting_waker();
        let _ = poll(&mut soon, &noop);
        armed.reset(Duration::from_millis(1));
        timer.stop();
        // SAFETY: ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: our own child; `status` is a valid out-pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    assert!(
        !timer.is_stopped(),
        "{}: the child's stop is its own",
        W::NAME
    );
    assert!(poll(&mut armed, &waker).is_pending(), "{}", W::NAME);
    way.block_on(async {
        let start = way.now();
        timer.sleep(ms(2)).await;
        assert!(way.now() >= start + ms(2));
        let mut interval = timer.interval(ms(1));
        for _ in 0..3 {
            interval.tick().await;
        }
    });
    drop(armed);
    assert_eq!(timer.pending(), 0, "{}", W::NAME);
}

/// tokio's cooperative budget (tokio's 128 ready polls a task poll): the
/// row's sleeps, zero timeouts and immediate interval ticks, polled from a
/// tokio task (the row's own runtime, or a current-thread one for a
/// thread-driven timer), each spend a unit when ready, so the task's poll
/// sees the budget run out after as many ready polls as with
/// `tokio::time`, and yields. `delay` and `async_io` keep futures-timer's
/// and async-io's behaviour: they spend none; a zero `Delay` is pending at
/// its first poll, as futures-timer's (whose helper thread fires even a
/// zero delay), so a loop of them yields every time (issue 56), where
/// async-io's `Timer::after(ZERO)` is ready at once.
#[cfg(feature = "tokio")]
fn coop<W: Way>() {
    use std::future::poll_fn;
    const BUDGET: usize = 128;
    /// Ready polls of futures `make` makes, in one poll of the task, until
    /// one is pending (at most four budgets).
    async fn ready_polls<F: Future + Unpin>(mut make: impl FnMut() -> F) -> usize {
        tokio::task::yield_now().await;
        poll_fn(|cx| {
            let mut n = 0;
            while n < 4 * BUDGET && Pin::new(&mut make()).poll(cx).is_ready() {
                n += 1;
            }
            Poll::Ready(n)
        })
        .await
    }
    let way = W::start();
    let spends = has_timer::<W>();
    let check = async {
        let expected = match W::NAME {
            _ if spends => BUDGET,
            "delay" => 0,
            _ => 4 * BUDGET,
        };
        let sleeps = ready_polls(|| way.sleep(Duration::ZERO)).await;
        assert_eq!(sleeps, expected, "{}: zero sleeps", W::NAME);
        if W::NAME == "delay" {
            // Pending at its first poll, the delay woke its task at once:
            // ready at the next.
            let mut zero = way.sleep(Duration::ZERO);
            let polls = poll_fn(|cx| Poll::Ready([(); 2].map(|()| zero.as_mut().poll(cx))));
            assert_eq!(
                polls.await,
                [Poll::Pending, Poll::Ready(())],
                "delay: next poll"
            );
        }
        if spends {
            let timer = way.timer();
            let timeouts =
                ready_polls(|| timer.timeout(Duration::ZERO, std::future::pending::<()>())).await;
            assert_eq!(timeouts, BUDGET, "{}: zero timeouts", W::NAME);
            let mut interval = timer.interval(Duration::from_secs(1));
            tokio::task::yield_now().await;
            let ticks = poll_fn(|cx| {
                let mut n = 0;
                loop {
                    interval.reset_immediately();
                    if n == 4 * BUDGET || interval.poll_tick(cx).is_pending() {
                        return Poll::Ready(n);
                    }
                    n += 1;
                }
            })
            .await;
            assert_eq!(ticks, BUDGET, "{}: immediate ticks", W::NAME);
        }
    };
    match W::KIND {
        Kind::Runtime => way.block_on(check),
        Kind::Thread => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(check),
    }
}

/// Deadline scopes (issue 46): a far timeout made inside a scope ends at
/// the scope's deadline, never early and (generously) not late, saying it
/// inherited it; nested, the inner scope's call ends at the inner deadline
/// and the outer's at the outer; a call shorter than the time left keeps
/// its own deadline; a scope dropped mid-way cancels its deadline and its
/// call at once (never woken after); nothing is left pending once a scope
/// ends. On `delay` and `async_io`, sleeps that keep their own deadline
/// inside a scope, a scope on a thread-driven timer ends first and drops
/// the sleep.
fn deadline_scope<W: Way>() {
    use std::future::pending;
    let way = W::start();
    let way = &way;
    let far = Duration::from_secs(3600);
    #[cfg(feature = "thread")]
    if !has_timer::<W>() {
        let timer = Timer::builder().driver_thread().build().unwrap();
        way.block_on(async {
            let start = way.now();
            let res = timer.scope(W::SHORT, way.sleep(W::SHORT * 4)).await;
            let took = way.now() - start;
            assert!(!res.unwrap_err().is_inherited(), "{}", W::NAME);
            assert!(took >= W::SHORT, "{}: early, {took:?}", W::NAME);
            assert!(took < W::SHORT * 4, "{}: the sleep ran on", W::NAME);
        });
        assert_eq!(timer.pending(), 0, "{}", W::NAME);
        return;
    }
    let timer = way.timer();
    let timer = &timer;
    let before = timer.pending();
    way.block_on(async {
        // A far call, cut to the scope's deadline.
        let start = way.now();
        let (call, took) = timer
            .scope(W::SHORT, async {
                let call = timer.timeout(far, pending::<()>()).await;
                (call, way.now() - start)
            })
            .await
            .expect("the call ends with its scope");
        assert!(call.unwrap_err().is_inherited(), "{}", W::NAME);
        assert!(took >= W::SHORT, "{}: early, {took:?}", W::NAME);
        assert!(took <= W::SHORT + W::LATE, "{}: {took:?}", W::NAME);

        // Nested: the inner call at the inner deadline, the outer at the outer.
        let start = way.now();
        let outer = timer.scope(W::SHORT * 3, async {
            let inner = timer
                .scope(W::SHORT, async {
                    timer.timeout(far, pending::<()>()).await
                })
                .await;
            let inner_took = way.now() - start;
            let call = timer.timeout(far, pending::<()>()).await;
            (inner, inner_took, call, way.now() - start)
        });
        let (inner, inner_took, call, took) = outer.await.expect("the call ends with its scope");
        let inner = inner.expect("the inner call ends with its scope");
        assert!(inner.unwrap_err().is_inherited(), "{}", W::NAME);
        assert!(inner_took >= W::SHORT, "{}: early, {inner_took:?}", W::NAME);
        assert!(
            inner_took <= W::SHORT + W::LATE,
            "{}: {inner_took:?}",
            W::NAME
        );
        assert!(call.unwrap_err().is_inherited(), "{}", W::NAME);
        assert!(took >= W::SHORT * 3, "{}: early, {took:?}", W::NAME);
        assert!(took <= W::SHORT * 3 + W::LATE, "{}: {took:?}", W::NAME);

        // Shorter than the time left: its own deadline.
        let start = way.now();
        let call = timer
            .scope(far, async {
                timer.timeout(W::SHORT, pending::<()>()).await
            })
            .await
            .unwrap();
        let took = way.now() - start;
        assert!(!call.unwrap_err().is_inherited(), "{}", W::NAME);
        assert!(took >= W::SHORT, "{}: early, {took:?}", W::NAME);

        // Dropped mid-way: cancelled at once, never woken.
        let (counter, waker) = counting_waker();
        let mut scope = Box::pin(timer.scope(W::SHORT, async {
            timer.timeout(far, pending::<()>()).await
        }));
        assert!(poll(&mut scope, &waker).is_pending());
        assert_eq!(
            timer.pending(),
            before + 2,
            "{}: the scope's and its call's",
            W::NAME
        );
        drop(scope);
        assert_eq!(timer.pending(), before, "{}: at once", W::NAME);
        way.pass(W::SHORT + ms(10)).await;
        assert_eq!(counter.wakes(), 0, "{}: woken after its drop", W::NAME);
    });
    assert_eq!(timer.pending(), before, "{}: nothing left", W::NAME);
}

/// Deadline scopes through the events: `stop()` ends a scope and the call
/// inside it at once, saying the timer stopped (not a deadline that
/// passed, not inherited), and refuses new scopes; the shutdown of the
/// runtime that runs a timer's driver does the same to its scopes (polled
/// afterwards, on no runtime), and a thread-driven timer built inside the
/// runtime goes on: its scope still ends the call inside it at its
/// deadline.
fn deadline_scope_lifecycle<W: Way>() {
    use std::future::pending;
    let far = Duration::from_secs(3600);
    let way = W::start();
    let timer = way.timer();
    way.block_on(async {
        let (counter, waker) = counting_waker();
        let mut scope = Box::pin(timer.scope(Duration::from_secs(60), async {
            timer.timeout(far, pending::<()>()).await
        }));
        assert!(poll(&mut scope, &waker).is_pending());
        timer.stop();
        assert!(counter.wakes() >= 1, "{}: woken by stop", W::NAME);
        match poll(&mut scope, &waker) {
            Poll::Ready(Ok(call)) => {
                let err = call.unwrap_err();
                assert!(err.is_timer_stopped() && !err.is_inherited(), "{}", W::NAME);
            }
            other => panic!("{}: {other:?}", W::NAME),
        }
        drop(scope);
        assert!(timer.try_scope(ms(1), async {}).unwrap_err().is_stopped());
        assert_eq!(timer.pending(), 0, "{}", W::NAME);
    });
    drop((timer, way));

    let mut way = W::start();
    let rt = tokio_runtime();
    let timer = runtime_timer(&way, &rt);
    let (counter, waker) = counting_waker();
    let mut scope = Box::pin(timer.scope(Duration::from_secs(60), async {
        timer.timeout(far, pending::<()>()).await
    }));
    way.block_on(async { assert!(poll(&mut scope, &waker).is_pending()) });
    way.drop_runtime();
    drop(rt);
    match W::KIND {
        Kind::Runtime => {
            assert!(counter.wakes() >= 1, "{}: woken", W::NAME);
            let call = futures::executor::block_on(scope).expect("the call ends first");
            let err = call.unwrap_err();
            assert!(err.is_timer_stopped() && !err.is_inherited(), "{}", W::NAME);
            assert!(err.to_string().contains("runtime"), "{err}");
            assert_eq!(timer.pending(), 0);
        }
        Kind::Thread => {
            assert!(!timer.is_stopped());
            drop(scope);
            assert_eq!(timer.pending(), 0);
            let start = Instant::now();
            let call = futures::executor::block_on(
                timer.scope(ms(2), async { timer.timeout(far, pending::<()>()).await }),
            )
            .expect("the call ends with its scope");
            assert!(call.unwrap_err().is_inherited(), "{}", W::NAME);
            assert!(start.elapsed() >= ms(2), "{}: early", W::NAME);
            assert_eq!(timer.pending(), 0);
        }
    }
}

// ---- the table ----

/// `matrix! { row: Way [columns] ... }`: a module per row, a `#[test]` per
/// cell, each under the watchdog.
macro_rules! matrix {
    ($($(#[$cfg:meta])* $row:ident: $way:ty [$($(#[$ccfg:meta])* $column:ident),* $(,)?])*) => {$(
        $(#[$cfg])*
        mod $row {
            $(
                $(#[$ccfg])*
                #[test]
                fn $column() {
                    super::cell(
                        concat!(stringify!($row), "::", stringify!($column)),
                        super::$column::<$way>,
                    );
                }
            )*
        }
    )*};
}

matrix! {
    #[cfg(feature = "tokio")]
    current_thread: super::CurrentThread [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, spawn_runtime_gone, last_handle_dropped,
        panics_contained, paused_clock, interval_ticks, interval_lifecycle,
        catch_up_in_order, coop, contended, deadline_scope, deadline_scope_lifecycle,
        reset_earlier,
    ]
    #[cfg(feature = "tokio")]
    coarse_tick: super::CurrentThread<2_000> [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, spawn_runtime_gone, last_handle_dropped,
        panics_contained, paused_clock, interval_ticks, interval_lifecycle,
        catch_up_in_order, coop, contended, deadline_scope, deadline_scope_lifecycle,
        reset_earlier,
    ]
    #[cfg(feature = "tokio")]
    coarse_tick_off_ms: super::CurrentThread<2_500, 300> [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, spawn_runtime_gone, last_handle_dropped,
        panics_contained, paused_clock, interval_ticks, interval_lifecycle,
        catch_up_in_order, coop, contended, deadline_scope, deadline_scope_lifecycle,
        reset_earlier,
    ]
    #[cfg(feature = "tokio")]
    multi_thread: super::MultiThread [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, spawn_runtime_gone, last_handle_dropped,
        panics_contained, interval_ticks, interval_lifecycle, catch_up_in_order,
        coop, contended, deadline_scope, deadline_scope_lifecycle, reset_earlier,
    ]
    #[cfg(feature = "thread")]
    thread_driver: super::ThreadDriver [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown,
        #[cfg(feature = "tokio")] spawn_runtime_gone,
        last_handle_dropped, panics_contained, paused_clock, interval_ticks, interval_lifecycle,
        catch_up_in_order, contended, deadline_scope, deadline_scope_lifecycle,
        reset_earlier,
        #[cfg(feature = "tokio")] coop,
    ]
    #[cfg(feature = "thread")]
    delay: super::DelayWay [
        never_early, exactly_once, cancel_at_drop, runtime_shutdown,
        panics_contained, paused_clock, catch_up_in_order, deadline_scope,
        #[cfg(feature = "tokio")] coop,
    ]
    #[cfg(feature = "thread")]
    async_io: super::AsyncIoWay [
        never_early, exactly_once, cancel_at_drop, runtime_shutdown,
        panics_contained, paused_clock, catch_up_in_order, deadline_scope,
        #[cfg(feature = "tokio")] coop,
    ]
}

/// `no_proc! { row: Way [columns] ... }`: as [`matrix!`], each cell in a
/// forked child that loses `/proc` once its row's timer is built.
#[cfg(target_os = "linux")]
macro_rules! no_proc {
    ($($(#[$cfg:meta])* $row:ident: $way:ty [$($(#[$ccfg:meta])* $column:ident),* $(,)?])*) => {
        mod no_proc {$(
            $(#[$cfg])*
            mod $row {
                $(
                    $(#[$ccfg])*
                    #[test]
                    fn $column() {
                        super::super::jailed(
                            concat!("no_proc::", stringify!($row), "::", stringify!($column)),
                            super::super::$column::<super::super::NoProc<$way>>,
                        );
                    }
                )*
            }
        )*}
    };
}

#[cfg(target_os = "linux")]
no_proc! {
    #[cfg(feature = "tokio")]
    current_thread: super::super::CurrentThread [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, last_handle_dropped, paused_clock, interval_ticks,
        interval_lifecycle, contended,
    ]
    #[cfg(feature = "tokio")]
    multi_thread: super::super::MultiThread [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, last_handle_dropped, interval_ticks,
        interval_lifecycle, contended,
    ]
    #[cfg(feature = "thread")]
    thread_driver: super::super::ThreadDriver [
        never_early, exactly_once, cancel_at_drop, exact_pending, stop,
        runtime_shutdown, last_handle_dropped, interval_ticks,
        interval_lifecycle, contended, child_leaves_the_timer_alone,
    ]
    #[cfg(feature = "thread")]
    delay: super::super::DelayWay [
        never_early, exactly_once, cancel_at_drop, runtime_shutdown, deadline_scope,
    ]
    #[cfg(feature = "thread")]
    async_io: super::super::AsyncIoWay [
        never_early, exactly_once, cancel_at_drop, runtime_shutdown, deadline_scope,
    ]
}
