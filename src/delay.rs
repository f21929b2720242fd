//! [`Delay`]: futures-timer's `Delay` on a process-wide thread-driven
//! [`Timer`], for code that runs on any executor.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::engine::clock::on_grid;
use crate::engine::process::Process;
use crate::timer::timeout::Timeout;
use crate::timer::Timer;

/// See [`Delay::TICK`].
const DELAY_TICK: Duration = Duration::from_micros(50);

/// One process's default timer: the process that claimed the slot, and
/// the timer it started there.
struct Slot {
    /// The claimer ([`Process::to_bits`]); 0 while free.
    owner: AtomicU64,
    timer: OnceLock<Timer>,
}

/// A free [`Slot`], to fill the pages with (each element is a fresh copy).
#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    owner: AtomicU64::new(0),
    timer: OnceLock::new(),
};

/// The slots of the first page: the processes of a line of forks that
/// start a default timer each (the first process, its child, grandchild,
/// ...) take one each, in order (see [`timer_of`]). A child inherits its
/// parent's slots (their timers have no driver thread in the child) and
/// claims one of its own.
const FIRST: usize = 64;

/// Pages after the first, page `p` of `FIRST << p` slots: a line of forks
/// may be as deep as it likes. Each page is allocated once, when a process
/// that deep first needs it, and never moves; on a 64-bit target the
/// slots of all 48 pages would serve 64 × (2^48 - 1) processes down one
/// line (at tens of microseconds a fork, millennia of forking).
const MORE: usize = usize::BITS as usize - 17;

static FIRST_PAGE: [Slot; FIRST] = [FREE; FIRST];

/// A page after the first: allocated by the one process that claimed it.
struct Page {
    /// The process allocating it ([`Process::to_bits`]); 0 while free.
    claim: AtomicU64,
    slots: OnceLock<Box<[Slot]>>,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE_PAGE: Page = Page {
    claim: AtomicU64::new(0),
    slots: OnceLock::new(),
};

static MORE_PAGES: [Page; MORE] = [FREE_PAGE; MORE];

/// Where [`CURRENT`] keeps the page of a slot: its offset in the page
/// below, the page above (in the top byte).
const PAGE_SHIFT: u32 = usize::BITS - 8;

/// The slot of the timer [`Delay::new`] used last, as `page << PAGE_SHIFT
/// | offset`: this process's, once it has one (a child inherits its
/// parent's, and corrects it at its first poll of a `Delay`, see
/// [`Delay::poll`]). `usize::MAX` (no such page) until then.
static CURRENT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The slots of page `page`, if it exists in this process's memory.
#[inline]
fn page(page: usize) -> Option<&'static [Slot]> {
    match page {
        0 => Some(&FIRST_PAGE),
        _ => MORE_PAGES.get(page - 1)?.slots.get().map(|slots| &**slots),
    }
}

/// The slots of page `index` for `me` to look through: allocated if no
/// process has claimed it. `None` where another process claimed it and
/// this memory holds no allocation (an ancestor's thread was allocating
/// it at the fork, and never will finish here: nothing waits on it).
fn page_for(index: usize, me: u64) -> Option<&'static [Slot]> {
    if let Some(slots) = page(index) {
        return Some(slots);
    }
    let more = MORE_PAGES.get(index - 1)?;
    let claimer = match more
        .claim
        .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
    {
        Ok(_) => me,
        Err(claimer) => claimer,
    };
    if claimer != me {
        return None;
    }
    // Only this process's threads wait here, for one of their own.
    Some(more.slots.get_or_init(|| {
        (0..FIRST << index)
            .map(|_| FREE)
            .collect::<Vec<_>>()
            .into_boxed_slice()
    }))
}

/// The default timer as [`Delay::new`] finds it: two atomic loads (three
/// for a process more than 64 forks down a line), no system call. In a forked child it may be the parent's until the child's
/// first poll of a `Delay` (which moves the delay to the child's own timer).
///
/// # Panics
///
/// As [`timer_of`].
#[track_caller]
#[inline]
fn default_timer() -> &'static Timer {
    let current = CURRENT.load(Ordering::Acquire);
    let found = page(current >> PAGE_SHIFT)
        .and_then(|slots| slots.get(current & ((1 << PAGE_SHIFT) - 1)))
        .and_then(|slot| slot.timer.get());
    match found {
        Some(timer) => timer,
        None => {
            let (process, read) = Process::current_read();
            timer_of(process, read)
        }
    }
}

/// The default timer of `process`, started on first use (a parameter, so
/// that a test can play a forked child without forking); `read` if its
/// pid namespace was read now (see [`Process::current_read`]).
///
/// Never waits on another process's slot or page: a child forked while a
/// thread of its parent was starting the parent's timer (or allocating a
/// page) would wait for ever (that thread is not in the child). It waits
/// only for a thread of its own process doing that.
///
/// A slot claimed under `process`'s word by another thread is this
/// process's where the word is sure (its namespace `read`); where it is
/// not, an ancestor may have claimed it under the same word (a pid 1 that
/// lost `/proc`, forking a pid 1 into a new pid namespace), so a timer
/// found there is taken only if its witness says it is this process's
/// (a `getpid` and an `F_GETLK`), and a slot whose timer is still starting
/// is passed over rather than waited on.
///
/// # Panics
///
/// If the timer's thread (or, on Linux, its timerfd) cannot be created, or
/// in a process more forks down a line of processes that each started a
/// default timer than all pages hold (see [`MORE`]).
#[track_caller]
fn timer_of(process: Process, read: bool) -> &'static Timer {
    let me = process.to_bits();
    for index in 0..=MORE {
        let Some(slots) = page_for(index, me) else {
            continue;
        };
        for (offset, slot) in slots.iter().enumerate() {
            let claimed = match slot
                .owner
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => true,
                Err(owner) if owner == me => false,
                Err(_) => continue,
            };
            let timer = match slot.timer.get() {
                Some(timer) if claimed || read || timer.shared.common.is_here() => timer,
                // An ancestor's under the same word: its thread is not here.
                Some(_) => continue,
                None if claimed || read => slot.timer.get_or_init(build),
                // Maybe an ancestor's, starting at the fork: never done here.
                None => continue,
            };
            CURRENT.store(index << PAGE_SHIFT | offset, Ordering::Release);
            return timer;
        }
    }
    panic!("hashwheel: no room for the default timer of Delay: a line of forks too deep")
}

/// How soon after a thread's last poll of a pending `Delay` its next one
/// trusts the process it found then: no `fork` fits in between. After a
/// fork only the forking thread lives on in the child, and that thread
/// spent the whole `fork` in the kernel (which copies the process's page
/// tables, among much else): tens of microseconds at the very least (93 µs
/// at the least measured on a 2-core VM; `tests/fork.rs` checks a tenfold
/// margin wherever it runs). Polls of one thread closer together than this
/// are the busy case the check would cost most in (W10).
const SAME_PROCESS_WITHIN: Duration = Duration::from_micros(1);

/// Whether the clock moves by much less than [`SAME_PROCESS_WITHIN`]
/// between readings (a coarse clock could read the same before and after
/// a fork); probed as a default timer starts. Until then, and with a coarse
/// clock, every poll of a pending `Delay` checks the process.
static FINE_CLOCK: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// When this thread was last known to be in the process of a timer
    /// (by [`Timeout::timer_id`]), and that timer: a poll that left a
    /// `Delay` of it pending, or a `Delay` made within the window of one
    /// (see [`renew`]).
    static LAST_POLL: Cell<Option<(Instant, usize)>> = const { Cell::new(None) };
}

/// Whether the timer of `timeout`, a pending `Delay`'s, is this process's
/// (not a parent's, inherited at a fork): without a system call when this
/// thread polled a pending `Delay` of the same timer less than
/// [`SAME_PROCESS_WITHIN`] ago, else the timer's fork check (a `getpid`,
/// and where the id is the timer's process's, an `F_GETLK` on the timer's
/// witness: a child forked into a new pid namespace may have its parent's
/// id; see `process`). Each poll renews the window: a fork between two
/// polls of this thread leaves at least the fork's length between them.
#[inline]
fn is_here(timeout: &Timeout) -> bool {
    let now = Instant::now();
    let timer = timeout.timer_id();
    let last = LAST_POLL.try_with(Cell::get).ok().flatten();
    if FINE_CLOCK.load(Ordering::Relaxed) && in_window(last, timer, now) {
        let _ = LAST_POLL.try_with(|last| last.set(Some((now, timer))));
        true
    } else {
        // Not in the window, another timer, or a clock that went back (a
        // child in a time namespace of its own): ask.
        ask(timeout)
    }
}

/// Whether `now` falls in the window `last` opened for `timer`: the same
/// timer, and less than [`SAME_PROCESS_WITHIN`] after it (not before: a
/// clock that went back says nothing).
#[inline]
fn in_window(last: Option<(Instant, usize)>, timer: usize, now: Instant) -> bool {
    last.is_some_and(|(at, checked)| {
        checked == timer
            && now
                .checked_duration_since(at)
                .is_some_and(|since| since < SAME_PROCESS_WITHIN)
    })
}

/// A clock reading `now` this thread took as it made a delay on the timer
/// of `timeout`: if the thread was in that timer's process less than
/// [`SAME_PROCESS_WITHIN`] before it, no fork came between, and the window
/// starts again at it. Free (the reading gives the delay its deadline),
/// and it keeps a busy thread in its window from one delay to the next
/// where the polls alone are further apart: W12 busy left 40% of its
/// pending polls out of the window, each a `getpid` and an `F_GETLK`.
#[inline]
fn renew(timeout: &Timeout, now: Instant) {
    let timer = timeout.timer_id();
    let _ = LAST_POLL.try_with(|last| {
        if in_window(last.get(), timer, now) {
            last.set(Some((now, timer)));
        }
    });
}

/// [`is_here`] out of its window: the timer's fork check, and a window
/// that starts where the check ended (from its start, the check's own
/// few hundred nanoseconds left the next poll out of it, and a busy thread
/// once out paid the check on every poll: W10's `Delay` cost 1,200 ns a
/// request on a loaded machine, 3× a `Timer::timeout`). A fork between
/// the check and the reading would be inside this very poll, which the
/// check could not see either.
#[cold]
#[inline(never)]
fn ask(timeout: &Timeout) -> bool {
    let here = timeout.timer_is_here();
    if here {
        let at = Instant::now();
        let _ = LAST_POLL.try_with(|last| last.set(Some((at, timeout.timer_id()))));
    }
    here
}

/// Whether two readings of the clock in a row differ by less than a
/// quarter of [`SAME_PROCESS_WITHIN`] (the clock's step, or a preemption:
/// either way `false` is the safe answer).
fn clock_is_fine() -> bool {
    let start = Instant::now();
    for _ in 0..100_000 {
        let now = Instant::now();
        if now != start {
            return now - start < SAME_PROCESS_WITHIN / 4;
        }
    }
    false
}

#[track_caller]
fn build() -> Timer {
    if clock_is_fine() {
        FINE_CLOCK.store(true, Ordering::Relaxed);
    }
    match Timer::builder().tick(DELAY_TICK).driver_thread().build() {
        Ok(timer) => timer,
        Err(err) => panic!("hashwheel: the default timer of Delay could not start: {err}"),
    }
}

/// A future that completes after a duration: futures-timer 3's `Delay`, on
/// hashwheel's wheel, for code on any executor (smol, `futures`' executors,
/// plain threads, tokio too).
///
/// It runs on a process-wide [`Timer`] driven by a thread of its own,
/// started on first use, with a tick of [`Delay::TICK`] (50 µs): a delay
/// completes within tens of microseconds after its deadline, never before.
/// That thread sleeps while nothing is pending, and wakes at most once per
/// 50 µs tick with work. The clock is std's: tokio's paused time does not
/// move it (use [`Timer`] on a runtime for that).
///
/// A futures-timer user switches by the `use` line:
/// `use hashwheel::Delay;` for `use futures_timer::Delay;`. See the
/// migration guide's "From futures-timer" for the differences.
///
/// It is `Unpin`, `Send` and `Sync`; dropping it cancels it.
///
/// # A zero delay
///
/// A zero `Delay` is pending at its first poll and wakes its task at once:
/// it is ready at the next poll, as futures-timer's is (whose helper thread
/// fires even a zero delay). So a loop of zero delays (a retry with zero
/// backoff, or `Delay::new(Duration::ZERO)` used as a yield) lets the
/// executor's other tasks run, on tokio's current-thread runtime, smol or
/// a `LocalPool`, every time. It takes no part in tokio's cooperative
/// budget, as futures-timer's does not. A delay whose deadline the timer's
/// thread has passed is ready at its first poll.
///
/// ```
/// use hashwheel::Delay;
/// use std::future::Future;
/// use std::task::{Context, Poll};
/// use std::time::Duration;
///
/// let waker = futures::task::noop_waker();
/// let mut cx = Context::from_waker(&waker);
/// let mut zero = Delay::new(Duration::ZERO);
/// assert_eq!(std::pin::Pin::new(&mut zero).poll(&mut cx), Poll::Pending);
/// assert_eq!(std::pin::Pin::new(&mut zero).poll(&mut cx), Poll::Ready(()));
/// ```
///
/// # Inside a deadline scope
///
/// A `Delay` keeps its own deadline inside a
/// [deadline scope](crate::deadline): it is a sleep, not a timeout, and
/// completes with `()`, so no error could say that the scope's deadline,
/// not the delay asked for, ended it, and one cut short would tell its
/// caller that its time had passed when it had not. The scope itself ends
/// at its deadline and drops the `Delay` (cancelling it); to size a delay
/// to the time left, ask [`deadline::remaining`](crate::deadline::remaining).
///
/// # fork
///
/// After `fork()` only the forking thread lives on in the child: the
/// default timer's thread is not there. The child gets a default timer of
/// its own, started by its first poll of a `Delay` (or by its first
/// `Delay::new` when the parent had not started one), and a `Delay` it
/// inherited keeps working there: polled in the child, it moves to the
/// child's timer with its deadline (the parent's copy completes in the
/// parent). Dropping, resetting or polling an inherited `Delay` never
/// waits for a lock that a thread of the parent held at the fork (it stays
/// held for ever in the child), and never touches the parent's alarm.
/// A child forked while a thread of its parent was starting the default
/// timer starts its own. In a child, the first poll panics as
/// [`Delay::new`] does if the child's timer cannot start.
///
/// The check is in a poll that leaves the `Delay` pending (a poll that
/// completes it waits on nothing, and checks nothing); [`Delay::new`] and
/// [`reset`](Delay::reset) make no system call. A poll asks the kernel
/// whether this is the process whose timer the delay is on (a `getpid`,
/// and where the id is that process's, an `F_GETLK`: the timer's process
/// holds a record lock that no child inherits, so a child forked into a
/// new pid namespace, which may have its parent's id, is told apart too;
/// about <!--fig:fork-check.ns-->400 ns on a virtual machine, more than the rest of a delay's
/// life) unless the same thread left a `Delay` of the same timer pending
/// less than a microsecond before: no fork fits in that time (only the
/// forking thread lives on in the child, and it spent the whole fork in
/// the kernel, tens of microseconds at the least), so a busy thread (a
/// timeout per request) pays a clock reading instead. Safe Rust has no
/// other cheap exact test: every flag, thread-local or shared, is copied
/// into the child unchanged, and `pthread_atfork` or `MADV_WIPEONFORK`
/// need `unsafe`. With a clock coarser than a quarter microsecond, every
/// such poll asks. A thread-driven [`Timer`]'s [`sleep`](Timer::sleep)
/// makes no check at all.
///
/// Any depth of forks works: each process down a line of forks gets a
/// default timer of its own, in slots that grow as the line does.
///
/// A thread-driven [`Timer`] of yours does not move: in a child, build a
/// new one. What the child inherited of it may be dropped there (never
/// waiting for a parent's lock, never setting the parent's alarm), and
/// [`Timer::stop`] there only marks the child's copy stopped, but its
/// timeouts polled in the child are fired by no thread.
///
/// # Examples
///
/// ```
/// use hashwheel::Delay;
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// futures::executor::block_on(Delay::new(Duration::from_millis(5)));
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Delay {
    timeout: Timeout,
}

impl Delay {
    /// The tick of the process-wide timer behind every `Delay`: 50 µs, so
    /// that a delay completes within tens of microseconds after its
    /// deadline, at the cost of at most one wake-up of the timer's thread
    /// per 50 µs tick that has work (none on others, none while idle).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hashwheel::Delay::TICK, std::time::Duration::from_micros(50));
    /// ```
    pub const TICK: Duration = DELAY_TICK;

    /// A delay that completes `dur` from now.
    ///
    /// No system call: the fork check is in the poll (see [the type's
    /// docs](Delay#fork)).
    ///
    /// # Panics
    ///
    /// On the first use in a process, if the default timer's thread (or,
    /// on Linux, its timerfd) cannot be created.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use hashwheel::Delay;
    /// use std::time::Duration;
    ///
    /// Delay::new(Duration::from_micros(300)).await;
    /// # });
    /// ```
    #[track_caller]
    #[inline]
    pub fn new(dur: Duration) -> Delay {
        let (timeout, now) = default_timer().sleep_read(dur);
        renew(&timeout, now);
        Delay { timeout }
    }

    /// Moves the deadline to `dur` from now, earlier or later; a delay that
    /// completed becomes pending again.
    ///
    /// # Examples
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use hashwheel::Delay;
    /// use std::time::{Duration, Instant};
    ///
    /// let start = Instant::now();
    /// let mut delay = Delay::new(Duration::from_secs(3600));
    /// delay.reset(Duration::from_millis(2));
    /// (&mut delay).await;
    /// assert!(start.elapsed() < Duration::from_secs(3600));
    /// # });
    /// ```
    pub fn reset(&mut self, dur: Duration) {
        self.timeout.reset(dur);
    }

    /// A delay that completes at `deadline` (at once if it has passed):
    /// `hashwheel::async_io`'s timer and delay queue, on the same default
    /// timer and with the same fork handling.
    #[track_caller]
    pub(crate) fn until(deadline: Instant) -> Delay {
        Delay {
            timeout: default_timer().sleep_until(deadline),
        }
    }

    /// [`Delay::new`], and the instant it stands for (now plus `dur`, to
    /// the nanosecond; `None` if that overflows, and the delay never
    /// completes), from one clock reading. The delay completes at that
    /// instant rounded up to a grid of `grid` microseconds (1: exact).
    #[track_caller]
    #[inline]
    pub(crate) fn new_exact(dur: Duration, grid: u64) -> (Delay, Option<Instant>) {
        let (timeout, deadline, now) = default_timer().sleep_exact_read(dur, grid);
        renew(&timeout, now);
        (Delay { timeout }, deadline)
    }

    /// Moves the deadline to `deadline` rounded up to a grid of `grid`
    /// microseconds from its timer's start (1: exact), as
    /// [`reset`](Delay::reset) does.
    #[inline]
    pub(crate) fn reset_at(&mut self, deadline: Instant, grid: u64) {
        let tick = on_grid(self.timeout.clock().tick_of(deadline), grid);
        self.timeout.reset_tick(tick);
    }

    /// Moves the delay, created in another process (a forked child's
    /// parent, or the parent's timer found by [`Delay::new`] in a child
    /// before its first poll), to the default timer of `process` (whose
    /// namespace was read now, or not: see [`timer_of`]), keeping its
    /// deadline. The entry it leaves (in the child's copy of
    /// the parent's timer) is removed, or left where it is if a thread of
    /// the parent held its shard's lock at the fork.
    #[track_caller]
    fn move_to(&mut self, (process, read): (Process, bool)) {
        let deadline = self.timeout.deadline();
        let moved = timer_of(process, read).sleep_until(deadline);
        drop(std::mem::replace(&mut self.timeout, moved));
    }
}

impl Future for Delay {
    type Output = ();

    /// Pending at the first poll of a delay due as it was made (a zero
    /// one), waking its task at once, as futures-timer's is (its helper
    /// thread fires even a zero delay): a loop of zero delays lets the
    /// executor's other tasks run. Otherwise ready once its deadline has
    /// passed (see [`Delay`]).
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.timeout.take_first_poll_of_due() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.poll_timer(cx)
    }
}

impl Delay {
    /// The delay's poll, ready at once where its deadline has passed (a
    /// zero delay at its first poll too): `hashwheel::async_io`'s timer
    /// and queue, which are ready there as async-io's are.
    #[inline]
    pub(crate) fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let this = self;
        // futures-timer's `Delay` takes no part in tokio's budget.
        let poll = this.timeout.poll_timer(cx);
        // The fork check, where the poll leaves the delay waiting on its
        // timer's thread, which a forked child does not have, or says it
        // was cancelled (a child's copy of its parent's timer cancels what
        // it cannot reach). A delay that fired waits on nothing: its
        // deadline has passed, whichever process polls it (a poll in a
        // child reads its copy of the parent's timer, and sets nothing of
        // the parent's: see `ThreadAlarm::arm`), and a busy thread (W12)
        // completes its delays with no clock reading.
        if poll.is_ready() && !this.timeout.is_cancelled() || is_here(&this.timeout) {
            return poll;
        }
        this.move_to(Process::current_read());
        this.timeout.poll_timer(cx)
    }
}

impl fmt::Debug for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delay")
            .field("deadline", &self.timeout.deadline())
            .field("expired", &self.timeout.is_expired())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default timer of each process, without forking (that needs
    /// `unsafe`): a process other than the one that started the default
    /// timer gets a timer of its own, once per process, also one with the
    /// same id in another pid namespace; the starter keeps its own
    /// (`tests/fork.rs` forks).
    #[test]
    fn a_forked_child_gets_a_default_timer_of_its_own() {
        let me = Process::current();
        let parent = timer_of(me, true) as *const Timer;
        assert_eq!(default_timer() as *const Timer, parent);
        let child = Process::from_bits(me.to_bits() + 1);
        let in_child = timer_of(child, true);
        assert_ne!(in_child as *const Timer, parent, "a new timer in the child");
        assert!(std::ptr::eq(timer_of(child, true), in_child), "once");
        let grandchild = Process::from_bits(me.to_bits() + 2);
        assert!(!std::ptr::eq(timer_of(grandchild, true), in_child));
        let namesake = Process::from_bits(me.to_bits() ^ 1 << 32);
        assert_eq!(namesake.pid(), me.pid());
        let in_namesake = timer_of(namesake, true) as *const Timer;
        assert_ne!(in_namesake, parent, "the parent's id, another namespace");
        assert_eq!(timer_of(me, true) as *const Timer, parent);
        assert_eq!(
            timer_of(me, false) as *const Timer,
            parent,
            "its namespace not read now: the timer's witness says it is ours"
        );
        // The child's timer works.
        let start = std::time::Instant::now();
        let mut sleep = in_child.sleep(Duration::from_millis(2));
        while futures_util::FutureExt::now_or_never(&mut sleep).is_none() {
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(start.elapsed() >= Duration::from_millis(2));
    }

    /// A clock reading taken as a delay is made moves the window only from
    /// inside it, and only for the timer it was opened for: a reading
    /// after a gap as long as a fork (a child's first) leaves it where it
    /// was, and the next poll asks.
    #[test]
    fn a_delay_made_renews_the_window_only_from_inside_it() {
        let timeout = default_timer().sleep(Duration::from_secs(60));
        let timer = timeout.timer_id();
        let last = || LAST_POLL.with(Cell::get);
        let long_ago = Instant::now() - Duration::from_millis(10);
        LAST_POLL.with(|last| last.set(Some((long_ago, timer))));
        renew(&timeout, Instant::now());
        assert_eq!(last(), Some((long_ago, timer)), "out of the window");
        let just_now = Instant::now();
        LAST_POLL.with(|last| last.set(Some((just_now, timer ^ 1))));
        renew(&timeout, just_now);
        assert_eq!(last(), Some((just_now, timer ^ 1)), "another timer's");
        LAST_POLL.with(|last| last.set(Some((just_now, timer))));
        let soon = just_now + SAME_PROCESS_WITHIN / 2;
        renew(&timeout, soon);
        assert_eq!(last(), Some((soon, timer)), "inside: renewed");
        renew(&timeout, just_now);
        assert_eq!(last(), Some((soon, timer)), "a reading before it");
    }

    /// Past the first page of slots (a process more than 63 forks down a
    /// line used to panic), each page is twice the one before, allocated
    /// by the first process that needs it; a page another process claimed
    /// but this memory holds no allocation of (its thread was allocating it
    /// at the fork) is passed over, not waited on.
    #[test]
    fn pages_of_slots_grow_without_waiting_on_another_process() {
        let me = Process::current().to_bits();
        let first = page_for(1, me).expect("claimed and allocated");
        assert_eq!(first.len(), FIRST << 1);
        let other = me + 1;
        assert!(
            std::ptr::eq(page_for(1, other).unwrap(), first),
            "allocated: anyone's"
        );
        let last = &MORE_PAGES[MORE - 1];
        last.claim.store(other, Ordering::SeqCst);
        assert!(
            page_for(MORE, me).is_none(),
            "another's, never allocated here"
        );
        assert!(page_for(MORE + 1, me).is_none(), "past the last page");
        assert!(
            page(MORE - 1).is_none(),
            "pages are allocated only when needed"
        );
    }
}
