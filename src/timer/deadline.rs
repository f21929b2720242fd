//! Deadline scopes: a request's deadline, inherited by the timeouts made
//! inside it.
//!
//! A server's handler has a deadline for the whole request (a gRPC
//! `grpc-timeout`, a load balancer's limit), and inside it calls a cache
//! with a 100 ms timeout, a database with 300 ms, a downstream service with
//! 1 s, each written on its own, often inside a library. Run the handler in
//! a [`Scope`] ([`scope`], [`Timer::scope`]) and every timeout made while
//! it is being polled takes the earlier of its own deadline and the
//! scope's, as Go's `context.WithDeadline` and Finagle's deadline
//! propagation do, without a change at the call sites:
//! [`hashwheel::time::timeout`][time::timeout_link] and
//! [`timeout_at`][time::timeout_at_link], [`Timer::timeout`],
//! [`Timer::timeout_at`] and their `try_` forms, and scopes inside it. When
//! the scope's deadline comes first, the timeout ends there with an
//! [`Elapsed`] whose [`is_inherited`](Elapsed::is_inherited) is `true`:
//! "the request ran out", where `false` says "this call was slow". The
//! scope itself ends with [`Elapsed`] when its deadline passes, dropping
//! (cancelling) everything inside it; its
//! [`ended_by`](Elapsed::ended_by) names the deadline at every level
//! ([`EndedBy`](crate::EndedBy): the call's own, an inherited one, the
//! scope's own).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use hashwheel::deadline;
//! use hashwheel::time::{sleep, timeout, Duration, Instant};
//!
//! let start = Instant::now();
//! let handled = deadline::scope(Duration::from_millis(200), async {
//!     // A library's own timeout of 1 s, cut to the 200 ms left.
//!     let slow = timeout(Duration::from_secs(1), sleep(Duration::from_secs(5))).await;
//!     slow.unwrap_err()
//! })
//! .await;
//! let err = handled.unwrap(); // the handler ran to its end...
//! assert!(err.is_inherited()); // ...where its call ran out of the request's time
//! assert_eq!(start.elapsed(), Duration::from_millis(200));
//! # }
//! ```
//!
//! # Inside, and not
//!
//! "Inside" is *made while the scope's future is being polled*, as tokio's
//! task-locals work: the scope sets a thread-local for the length of each
//! poll of its future. Scopes nest: inside two, the earlier deadline
//! holds. A task spawned from inside is not inside (its polls are the
//! runtime's, not the scope's), as tokio's task-locals do not cross
//! `spawn` either: carry the deadline across with [`current`] and
//! [`Deadline::scope`]. (What the scope's future polls itself is inside:
//! its `join!`s and `select!`s, and also the tasks of a `LocalSet` it runs
//! with `run_until`, or a `block_on` nested in it.) A timeout made outside
//! and awaited inside keeps its own deadline; the scope still ends at its
//! own.
//!
//! What keeps its own deadline inside a scope: sleeps and intervals
//! ([`Timer::sleep`], [`hashwheel::time::sleep`][time::sleep_link],
//! [`Interval`](crate::Interval)), [`Delay`][Delay_link] and
//! [`hashwheel::async_io::Timer`][async_io::Timer_link]: a sleep is not a
//! timeout, it returns no error to say which deadline ended it, and a
//! sleep cut short would tell its caller that the time it asked for had
//! passed when it had not. `tower::TimeoutLayer` keeps its own too: it
//! fails with tower's `Elapsed`, which cannot say which deadline passed
//! (put a `hashwheel::tower::ScopeLayer`, feature `tower`, outside it
//! instead).
//! `tokio::time` knows nothing of scopes. Ask [`remaining`] for the time
//! left, to size a sleep or a request's own deadline to it.
//!
//! # Clocks
//!
//! A runtime-driven timer reads tokio's clock (which paused time stops and
//! `advance` moves), a thread-driven one std's; a scope on one and a
//! timeout on the other compare by the time left. The scope keeps its
//! deadline as an instant of its own timer's clock; a timeout made inside
//! it on a timer of the same clock takes that instant itself (exact to the
//! microsecond, as the timer keeps deadlines), and one on a timer of the
//! other clock takes the time left by the scope's clock at the moment it
//! is made, from now by its own. Never early on either: the time left is
//! read before the other clock's now, and deadlines round up.
//!
//! A deadline given as an instant past the wheel's range (over 146,000
//! years, where a timer's own deadlines never fire) never passes: the
//! scope never ends on it, clips no timeout on any timer, and its
//! [`deadline`](Scope::deadline) is the instant given. A delay too long to
//! keep ([`Duration::MAX`]) is tokio's "far future", 30 years out, for a
//! scope as for a timeout: the scope ends there, and so does a call in it.
//!
//! # At the deadline
//!
//! A scope and a call clipped to it end at the same instant, and the two
//! may be fired by two drivers (a timer each), or one after the other by
//! one driver (two shards of a timer, turned in turn): the scope's may come
//! first. So when its own deadline passes, a scope polls its future once
//! more before it ends: there, a timeout clipped to that deadline (or to
//! an earlier one) that is still pending ends at once with the inherited
//! [`Elapsed`], without waiting for its own timer, and is counted as
//! fired. The future gets its call's answer, and where it then completes,
//! its output is the scope's: a handler answers "out of time" on every
//! driver and shard count, whichever timer fires first. The call it was
//! waiting on ends there whatever is left of tokio's cooperative budget; a
//! call made in that poll ends as a timeout due at once does, through the
//! budget (so a loop that retries yields to the runtime). Nothing else
//! ends there: a timeout that keeps its own deadline, or was clipped to a
//! later scope's, is dropped with the future, never ended early; and a
//! scope whose timer stops ends at once, without that poll.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use hashwheel::Timer;
//! use std::time::Duration;
//!
//! // The call's timer turns every 7 ms: it comes to the 300 ms the scope
//! // and the call share after the scope's timer does.
//! let requests = Timer::new();
//! let calls = Timer::builder().tick(Duration::from_millis(7)).build().unwrap();
//! let handled = requests.scope(Duration::from_millis(300), async {
//!     match calls.timeout(Duration::from_secs(1), std::future::pending::<()>()).await {
//!         Err(e) if e.is_inherited() => "out of time",
//!         _ => "in time",
//!     }
//! });
//! assert_eq!(handled.await, Ok("out of time"));
//! assert_eq!(calls.pending(), 0);
//! # }
//! ```
//!
//! # Cost
//!
//! Outside any scope a timeout pays one read of a thread-local (a
//! `const`-initialised `Cell`) and nothing else; it behaves exactly as
//! without this module. Inside one, a timeout pays that read and a
//! comparison of its deadline with the scope's (a clock reading only
//! where the scope's clock is the other one). A scope is a timeout of its
//! own (registered at its first pending poll, and checked at each pending
//! poll after, as [`Timer::timeout`]'s), and two thread-local swaps per
//! poll of its future; it touches no reference count shared between
//! threads. A timeout clipped to a scope reads one more thread-local when
//! it is found pending (whether its scope's last poll is on). See W10 in
//! the repository's `BENCHMARKS.md` for the figures.
//!
//! # Cancellation
//!
//! Dropping a [`Scope`] drops its future and cancels its deadline: nothing
//! of it is left pending ([`Timer::pending`] is back where it was). When
//! its timer stops ([`Timer::stop`], or the shutdown of the runtime that
//! ran its driver), the scope ends at once with an [`Elapsed`] whose
//! [`is_timer_stopped`](Elapsed::is_timer_stopped) is `true`.
#![cfg_attr(not(feature = "tokio"), doc = "", doc = "[`scope`]: https://docs.rs/hashwheel/latest/hashwheel/deadline/fn.scope.html")]
#![cfg_attr(feature = "tokio", doc = "", doc = "[time::timeout_link]: crate::time::timeout")]
#![cfg_attr(not(feature = "tokio"), doc = "", doc = "[time::timeout_link]: https://docs.rs/hashwheel/latest/hashwheel/time/fn.timeout.html")]
#![cfg_attr(feature = "tokio", doc = "", doc = "[time::timeout_at_link]: crate::time::timeout_at")]
#![cfg_attr(not(feature = "tokio"), doc = "", doc = "[time::timeout_at_link]: https://docs.rs/hashwheel/latest/hashwheel/time/fn.timeout_at.html")]
#![cfg_attr(feature = "tokio", doc = "", doc = "[time::sleep_link]: crate::time::sleep")]
#![cfg_attr(not(feature = "tokio"), doc = "", doc = "[time::sleep_link]: https://docs.rs/hashwheel/latest/hashwheel/time/fn.sleep.html")]
#![cfg_attr(feature = "thread", doc = "", doc = "[Delay_link]: crate::Delay")]
#![cfg_attr(not(feature = "thread"), doc = "", doc = "[Delay_link]: https://docs.rs/hashwheel/latest/hashwheel/struct.Delay.html")]
#![cfg_attr(feature = "thread", doc = "", doc = "[async_io::Timer_link]: crate::async_io::Timer")]
#![cfg_attr(not(feature = "thread"), doc = "", doc = "[async_io::Timer_link]: https://docs.rs/hashwheel/latest/hashwheel/async_io/struct.Timer.html")]

use std::cell::Cell;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;

use crate::engine::coop;
use crate::engine::clock::Clock;
use crate::engine::scope::{self, Active, Clip};
use crate::error::{Elapsed, Error};
use crate::engine::shard::Shard;
use crate::timer::timeout::{Ended, Timeout};
use crate::wheel::raw::NEVER;
use crate::timer::Timer;

thread_local! {
    /// The own timeout of the innermost scope whose future this thread is
    /// polling (its deadline is in `engine::scope`), which it needs only
    /// once its future's poll is over: moved here for the length of the
    /// poll (no reference count touched), so that [`current`] finds the
    /// scope's timer in it.
    static HELD: Cell<Option<Timeout>> = const { Cell::new(None) };
}

/// A scope's future being polled: the thread-locals hold its deadline (or
/// an enclosing one's, if earlier) and its own timeout until this is
/// dropped, which puts back what they held, on unwinding too.
struct Inside<'a> {
    prev: Option<Active>,
    /// What [`HELD`] held, where the scope's timeout went in its place.
    prev_held: Option<Option<Timeout>>,
    timeout: &'a mut Option<Timeout>,
}

impl<'a> Inside<'a> {
    fn enter(active: Active, timeout: &'a mut Option<Timeout>) -> Inside<'a> {
        let prev = scope::enter(active);
        let prev_held = HELD.try_with(|cell| cell.replace(timeout.take())).ok();
        Inside {
            prev,
            prev_held,
            timeout,
        }
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        scope::restore(self.prev);
        if let Some(prev_held) = self.prev_held.take() {
            if let Ok(ours) = HELD.try_with(|cell| cell.replace(prev_held)) {
                *self.timeout = ours;
            }
        }
    }
}

/// A scope's expiry poll: the thread's passed deadline (`scope::passed`)
/// until this is dropped, which puts back what it was, on unwinding too.
struct Passed(Option<Active>);

impl Passed {
    fn enter(passed: Active) -> Passed {
        Passed(scope::enter_passed(passed))
    }
}

impl Drop for Passed {
    fn drop(&mut self) {
        scope::restore_passed(self.0);
    }
}

/// What a scope is made of, before its future.
struct Parts {
    timeout: Timeout,
    active: Active,
    clipped: Option<Clip>,
}

impl Parts {
    /// A scope bounded by `timeout`, or by the scope it is made in where
    /// that comes first; `carried` from another task's scope. `at` is the
    /// instant its deadline was given as, if it was: where that lies past
    /// the wheel's range, the scope never ends, and keeps the instant
    /// (the timeout's `deadline()` would say 30 years out).
    fn new(mut timeout: Timeout, carried: Option<Active>, at: Option<Instant>) -> Parts {
        let clipped = timeout.clip_to_scope().or(carried.map(Active::clip));
        let clock = timeout.clock();
        let tick = timeout.unpolled_tick();
        let given = if tick >= NEVER {
            at.or(carried.map(|carried| carried.at))
        } else {
            None
        };
        let active = Active {
            at: given.unwrap_or_else(|| timeout.deadline()),
            source: clock.source(),
            clock: clock as *const Clock as usize,
            tick,
        };
        Parts {
            timeout,
            active,
            clipped,
        }
    }

    fn scope<F>(self, future: F) -> Scope<F> {
        Scope {
            future,
            timeout: Some(self.timeout),
            active: self.active,
            clipped: self.clipped,
        }
    }

    /// The scope of the future `make` returns, made inside the scope (a
    /// tower service's `call`, which may start timeouts before its future
    /// is polled).
    #[cfg(feature = "tower")]
    fn scope_with<F>(self, make: impl FnOnce() -> F) -> Scope<F> {
        let mut timeout = Some(self.timeout);
        let future = {
            let _inside = Inside::enter(self.active, &mut timeout);
            make()
        };
        Scope {
            future,
            timeout,
            active: self.active,
            clipped: self.clipped,
        }
    }
}

/// [`Timer::try_scope`] of the future `make` returns, made inside the
/// scope (for [`ScopeLayer`](crate::tower::ScopeLayer)).
#[cfg(feature = "tower")]
pub(crate) fn try_scope_with<F>(
    timer: &Timer,
    delay: Duration,
    make: impl FnOnce() -> F,
) -> Result<Scope<F>, Error> {
    let timeout = timer.try_sleep(delay)?;
    Ok(Parts::new(timeout, None, None).scope_with(make))
}

#[track_caller]
fn unwrap<T>(res: Result<T, Error>) -> T {
    match res {
        Ok(value) => value,
        Err(err) => panic!("hashwheel: {err}"),
    }
}

pin_project! {
    /// A future run under a deadline that the timeouts made inside it
    /// inherit: see the [module](self). Resolves to the future's output,
    /// or to [`Elapsed`] once the deadline passes (dropping the future).
    ///
    /// Made by [`scope`], [`scope_at`], [`Timer::scope`] and its friends,
    /// and [`Deadline::scope`]. `Unpin` when the future is; `Send` and
    /// `Sync` when it is.
    ///
    /// # Cancellation
    ///
    /// Dropping it drops the future and cancels the deadline. If its timer
    /// stops first, it resolves to an [`Elapsed`] with
    /// [`is_timer_stopped`](Elapsed::is_timer_stopped) `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let slow = timer.scope(Duration::from_millis(100), std::future::pending::<()>());
    /// let err = slow.await.unwrap_err();
    /// assert!(!err.is_inherited()); // its own deadline
    /// assert_eq!(timer.pending(), 0);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Scope<F> {
        #[pin]
        future: F,
        // Its deadline; in `HELD` while its future is polled (`None` here
        // then, and only then).
        timeout: Option<Timeout>,
        active: Active,
        // The deadline it was clipped to (an enclosing scope's, where that
        // came first) or carried from.
        clipped: Option<Clip>,
    }
}

impl<F> Scope<F> {
    /// The scope's deadline: its own, or the enclosing scope's it was made
    /// in where that came first, rounded up to the microsecond; an instant
    /// of its timer's clock (tokio's for a runtime-driven timer, std's for
    /// a thread-driven one). A deadline given past the wheel's range (over
    /// 146,000 years), which never passes, is the instant given.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let deadline = Instant::now() + Duration::from_millis(300);
    /// let scope = timer.scope_at(deadline, async { 1 });
    /// assert_eq!(scope.deadline(), deadline.into_std());
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.active.at
    }

    /// The time left until [`deadline`](Scope::deadline), by its timer's
    /// clock; zero once it has passed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let scope = timer.scope(Duration::from_millis(300), async { 1 });
    /// tokio::time::advance(Duration::from_millis(100)).await;
    /// assert_eq!(scope.remaining(), Duration::from_millis(200));
    /// # }
    /// ```
    pub fn remaining(&self) -> Duration {
        self.active.remaining()
    }

    /// The future run in the scope.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let scope = timer.scope(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(scope.get_ref().clone().into_inner(), 3);
    /// # }
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The future run in the scope, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let mut scope = timer.scope(Duration::from_secs(1), std::future::ready(3));
    /// *scope.get_mut() = std::future::ready(4);
    /// assert_eq!(scope.await, Ok(4));
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// Gives back the future, dropping (cancelling) the deadline: it runs
    /// outside the scope from then on.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let scope = timer.scope(Duration::from_secs(1), async { 6 });
    /// let inner = scope.into_inner();
    /// assert_eq!(timer.pending(), 0);
    /// assert_eq!(inner.await, 6);
    /// # }
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Scope<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let had_budget_before = coop::has_budget_remaining();
        let polled = {
            let _inside = Inside::enter(*this.active, this.timeout);
            this.future.as_mut().poll(cx)
        };
        if let Poll::Ready(output) = polled {
            return Poll::Ready(Ok(output));
        }
        let Some(timeout) = this.timeout.as_mut() else {
            // Only where the thread's locals were torn down during the
            // poll (a scope polled by a thread-local's destructor): its
            // deadline went with them.
            return Poll::Ready(Err(Elapsed::deadline().of_scope()));
        };
        let clipped = *this.clipped;
        // As `WithTimeout`'s: the deadline is seen through a budget the
        // future spent (see `coop`); and a scope clipped to one whose
        // expiry poll this is ends with it.
        let err = match ready!(timeout.poll_clipped(cx, had_budget_before, clipped)) {
            Ended::WithScope => {
                return Poll::Ready(Err(Elapsed::deadline().inherited_if(true).of_scope()))
            }
            Ended::Own => timeout.elapsed().inherited_if(clipped.is_some()).of_scope(),
        };
        if err.is_timer_stopped() {
            return Poll::Ready(Err(err));
        }
        // The deadline passed: the expiry poll. The future is polled once
        // more, where the timeouts clipped to this deadline that are still
        // pending (their timer's driver has not come to them yet: another
        // timer, or another shard) end with the inherited `Elapsed` (see
        // `Timeout::poll_clipped`), so that a call and its scope that end
        // at the same instant give the future its answer on every driver,
        // whichever fires first.
        let polled = {
            let _passed = Passed::enter(*this.active);
            let _inside = Inside::enter(*this.active, this.timeout);
            this.future.poll(cx)
        };
        match polled {
            Poll::Ready(output) => Poll::Ready(Ok(output)),
            Poll::Pending => Poll::Ready(Err(err)),
        }
    }
}

impl<F> fmt::Debug for Scope<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("deadline", &self.active.at)
            .field("inherited", &self.clipped.is_some())
            .finish_non_exhaustive()
    }
}

/// The deadline of the scope being polled, to carry into a spawned task:
/// [`current`] returns it, [`Deadline::scope`] runs a future under it.
///
/// `Clone`, `Send` and `Sync`; it keeps the scope's timer alive (its
/// shard of the thread the scope was made on, where it makes its scopes).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::deadline;
/// use hashwheel::time::{timeout, Duration};
///
/// let start = tokio::time::Instant::now();
/// let task = deadline::scope(Duration::from_millis(100), async {
///     let deadline = deadline::current().unwrap();
///     tokio::spawn(deadline.scope(async {
///         timeout(Duration::from_secs(1), std::future::pending::<()>()).await
///     }))
/// });
/// let task = task.await.unwrap();
/// let call = task.await.unwrap().unwrap(); // its scope ran to its end...
/// assert!(call.unwrap_err().is_inherited()); // ...where the call ran out of the request's time
/// assert_eq!(start.elapsed(), Duration::from_millis(100));
/// # }
/// ```
#[derive(Clone)]
pub struct Deadline {
    active: Active,
    shard: Arc<Shard>,
}

impl Deadline {
    /// The deadline, an instant of the scope's timer's clock (tokio's for a
    /// runtime-driven timer, std's for a thread-driven one).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::deadline;
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let at = Instant::now() + Duration::from_millis(50);
    /// let seen = deadline::scope_at(at, async { deadline::current().unwrap().instant() });
    /// assert_eq!(seen.await.unwrap(), at.into_std());
    /// # }
    /// ```
    pub fn instant(&self) -> Instant {
        self.active.at
    }

    /// The time left, by the scope's clock; zero once the deadline passed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::deadline;
    /// use std::time::Duration;
    ///
    /// let seen = deadline::scope(Duration::from_millis(50), async {
    ///     tokio::time::sleep(Duration::from_millis(20)).await;
    ///     deadline::current().unwrap().remaining()
    /// });
    /// assert_eq!(seen.await.unwrap(), Duration::from_millis(30));
    /// # }
    /// ```
    pub fn remaining(&self) -> Duration {
        self.active.remaining()
    }

    /// Runs `fut` under this deadline, on the scope's timer: for a task
    /// spawned from inside the scope, which is not inside it otherwise. It
    /// ends with an [`Elapsed`] whose [`is_inherited`](Elapsed::is_inherited)
    /// is `true` once the deadline passes; the timeouts made inside it
    /// inherit the deadline as in the scope it came from.
    ///
    /// # Panics
    ///
    /// If the scope's timer is stopped or at its
    /// [`max_pending`](crate::Builder::max_pending) limit;
    /// [`try_scope`](Deadline::try_scope) returns those as errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use hashwheel::deadline;
    /// use std::time::Duration;
    ///
    /// let carried = deadline::scope(Duration::from_millis(100), async {
    ///     deadline::current().unwrap()
    /// })
    /// .await
    /// .unwrap();
    /// let start = tokio::time::Instant::now();
    /// let err = carried.scope(std::future::pending::<()>()).await.unwrap_err();
    /// assert!(err.is_inherited());
    /// assert_eq!(start.elapsed(), Duration::from_millis(100));
    /// # }
    /// ```
    #[track_caller]
    pub fn scope<F: IntoFuture>(&self, fut: F) -> Scope<F::IntoFuture> {
        unwrap(self.try_scope(fut))
    }

    /// Like [`scope`](Deadline::scope), but returns an error instead of
    /// panicking. On an error `fut` is dropped without being polled.
    ///
    /// # Errors
    ///
    /// As [`Timer::try_sleep`]: [`Error::is_stopped`] once the scope's timer
    /// is stopped, [`Error::is_at_capacity`] at its
    /// [`max_pending`](crate::Builder::max_pending) limit.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let carried = timer
    ///     .scope(Duration::from_millis(100), async { hashwheel::deadline::current().unwrap() })
    ///     .await
    ///     .unwrap();
    /// timer.stop();
    /// assert!(carried.try_scope(async {}).unwrap_err().is_stopped());
    /// # }
    /// ```
    pub fn try_scope<F: IntoFuture>(&self, fut: F) -> Result<Scope<F::IntoFuture>, Error> {
        let common = &self.shard.common;
        let tick = self.active.tick_on(&common.clock);
        let due = if common.clock.source() == self.active.source {
            self.active.at <= common.now()
        } else {
            self.active.remaining().is_zero()
        };
        let timeout = Timeout::on_shard(&self.shard, tick, due)?;
        Ok(Parts::new(timeout, Some(self.active), None).scope(fut.into_future()))
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("instant", &self.active.at)
            .field("remaining", &self.active.remaining())
            .finish_non_exhaustive()
    }
}

/// The deadline of the scope whose future is being polled on this thread
/// (the earliest, inside several), to carry into a task spawned from it
/// ([`Deadline::scope`]); `None` outside any scope.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::deadline;
/// use std::time::Duration;
///
/// assert!(deadline::current().is_none());
/// let inside = deadline::scope(Duration::from_secs(1), async { deadline::current().is_some() });
/// assert!(inside.await.unwrap());
/// # }
/// ```
pub fn current() -> Option<Deadline> {
    let active = scope::active()?;
    let shard = HELD
        .try_with(|cell| {
            let held = cell.take();
            let shard = held.as_ref().map(|timeout| timeout.shard().clone());
            cell.set(held);
            shard
        })
        .ok()
        .flatten()?;
    Some(Deadline { active, shard })
}

/// The time left to the scope whose future is being polled on this thread
/// (the earliest deadline, inside several), by its timer's clock: zero once
/// it has passed, `None` outside any scope. For what does not inherit the
/// deadline by itself: a sleep, an interval, a request's own timeout
/// header to a downstream service, a `tokio::time` timeout.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::deadline;
/// use std::time::Duration;
///
/// assert_eq!(deadline::remaining(), None);
/// let left = deadline::scope(Duration::from_millis(500), async {
///     tokio::time::sleep(Duration::from_millis(120)).await;
///     deadline::remaining()
/// });
/// assert_eq!(left.await.unwrap(), Some(Duration::from_millis(380)));
/// # }
/// ```
pub fn remaining() -> Option<Duration> {
    scope::active().map(Active::remaining)
}

/// Runs `future` in a deadline scope of `duration` from now, on the current
/// runtime's default [`Timer`] (the one of [`hashwheel::time`](crate::time)):
/// the timeouts made inside it end by its deadline at the latest, and it
/// ends with [`Elapsed`] when the deadline passes. See the
/// [module](self).
///
/// Inside another scope it ends by the earlier of the two deadlines.
///
/// # Panics
///
/// Outside a tokio runtime, or on a runtime without a time driver, as
/// [`hashwheel::time::timeout`](crate::time::timeout); if the timer is at
/// its [`max_pending`](crate::Builder::max_pending) limit.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::deadline;
/// use hashwheel::time::{timeout, Duration, Instant};
///
/// let start = Instant::now();
/// let outer = deadline::scope(Duration::from_millis(300), async {
///     let inner = deadline::scope(Duration::from_millis(100), std::future::pending::<()>());
///     assert!(inner.await.is_err());
///     assert_eq!(start.elapsed(), Duration::from_millis(100));
///     timeout(Duration::from_secs(1), std::future::pending::<()>()).await
/// });
/// let call = outer.await.unwrap();
/// assert!(call.unwrap_err().is_inherited());
/// assert_eq!(start.elapsed(), Duration::from_millis(300));
/// # }
/// ```
#[cfg(feature = "tokio")]
#[track_caller]
pub fn scope<F: IntoFuture>(duration: Duration, future: F) -> Scope<F::IntoFuture> {
    let future = future.into_future();
    let timeout = unwrap(crate::timer::current::with_current(|timer| timer.try_sleep(duration)));
    Parts::new(timeout, None, None).scope(future)
}

/// Runs `future` in a deadline scope that ends at `deadline`, on the
/// current runtime's default [`Timer`]: as [`scope`], at an instant (of
/// tokio's clock, as [`hashwheel::time`](crate::time)'s).
///
/// # Panics
///
/// As [`scope`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::deadline;
/// use hashwheel::time::{Duration, Instant};
///
/// let at = Instant::now() + Duration::from_millis(40);
/// assert!(deadline::scope_at(at, std::future::pending::<()>()).await.is_err());
/// assert_eq!(Instant::now(), at);
/// # }
/// ```
#[cfg(feature = "tokio")]
#[track_caller]
pub fn scope_at<F: IntoFuture>(deadline: tokio::time::Instant, future: F) -> Scope<F::IntoFuture> {
    let future = future.into_future();
    let timeout = unwrap(crate::timer::current::with_current(|timer| {
        timer.try_sleep_until(deadline)
    }));
    Parts::new(timeout, None, Some(deadline.into_std())).scope(future)
}

impl Timer {
    /// Runs `fut` in a deadline scope of `delay` from now on this timer:
    /// the timeouts made inside it end by its deadline at the latest, and
    /// it ends with [`Elapsed`] when the deadline passes. See
    /// [`hashwheel::deadline`](crate::deadline).
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep); [`try_scope`](Timer::try_scope) returns
    /// those as errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let request = timer.scope(Duration::from_millis(200), async {
    ///     timer.timeout(Duration::from_secs(1), std::future::pending::<()>()).await
    /// });
    /// let call = request.await.unwrap();
    /// assert!(call.unwrap_err().is_inherited());
    /// # }
    /// ```
    #[track_caller]
    pub fn scope<F: IntoFuture>(&self, delay: Duration, fut: F) -> Scope<F::IntoFuture> {
        unwrap(self.try_scope(delay, fut))
    }

    /// Runs `fut` in a deadline scope that ends at `deadline`: as
    /// [`scope`](Timer::scope), at an instant. A deadline already passed
    /// ends the scope at its first poll (after `fut`'s poll and the last
    /// one of [At the deadline](crate::deadline#at-the-deadline)). One past
    /// the wheel's range (over 146,000 years) never passes, and shortens
    /// no timeout made inside.
    ///
    /// # Panics
    ///
    /// As [`sleep`](Timer::sleep); [`try_scope_at`](Timer::try_scope_at)
    /// returns those as errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// let passed = Instant::now() - Duration::from_millis(1);
    /// assert!(timer.scope_at(passed, std::future::pending::<()>()).await.is_err());
    /// # }
    /// ```
    #[track_caller]
    pub fn scope_at<F: IntoFuture>(
        &self,
        deadline: impl Into<Instant>,
        fut: F,
    ) -> Scope<F::IntoFuture> {
        unwrap(self.try_scope_at(deadline, fut))
    }

    /// Like [`scope`](Timer::scope), but returns an error instead of
    /// panicking. On an error `fut` is dropped without being polled.
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep): [`Error::is_stopped`],
    /// [`Error::is_at_capacity`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let timer = hashwheel::Timer::builder().max_pending(1).build().unwrap();
    /// let held = timer.sleep(Duration::from_secs(1));
    /// let err = timer.try_scope(Duration::from_secs(1), async {}).unwrap_err();
    /// assert!(err.is_at_capacity());
    /// drop(held);
    /// assert!(timer.try_scope(Duration::from_secs(1), async {}).unwrap().await.is_ok());
    /// # }
    /// ```
    pub fn try_scope<F: IntoFuture>(
        &self,
        delay: Duration,
        fut: F,
    ) -> Result<Scope<F::IntoFuture>, Error> {
        let timeout = self.try_sleep(delay)?;
        Ok(Parts::new(timeout, None, None).scope(fut.into_future()))
    }

    /// Like [`scope_at`](Timer::scope_at), but returns an error instead of
    /// panicking. On an error `fut` is dropped without being polled.
    ///
    /// # Errors
    ///
    /// As [`try_scope`](Timer::try_scope).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let timer = hashwheel::Timer::new();
    /// timer.stop();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// assert!(timer.try_scope_at(at, async {}).unwrap_err().is_stopped());
    /// # }
    /// ```
    pub fn try_scope_at<F: IntoFuture>(
        &self,
        deadline: impl Into<Instant>,
        fut: F,
    ) -> Result<Scope<F::IntoFuture>, Error> {
        let deadline = deadline.into();
        let timeout = self.try_sleep_until(deadline)?;
        Ok(Parts::new(timeout, None, Some(deadline)).scope(fut.into_future()))
    }
}
