//! Deadline scopes (`hashwheel::deadline`, issue 46): the timeouts made
//! inside a scope end by its deadline at the latest, saying so; scopes
//! nest; a spawned task is outside unless the deadline is carried; the
//! time left; sleeps, `Delay` and `async_io::Timer` keep their own
//! deadlines; nothing is left pending; on tokio's paused clock and on
//! std's, and across the two clocks. The matrix's `deadline_scope`
//! columns (`tests/guarantees.rs`) check the promises on every driver.

use std::future::{pending, Future};
use std::pin::Pin;
use std::task::{Context, Poll};

use hashwheel::deadline::{self, Deadline, Scope};
use hashwheel::time::{timeout, timeout_at, Duration, Instant};
use hashwheel::{Elapsed, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    Pin::new(fut).poll(&mut Context::from_waker(&waker))
}

#[test]
fn scope_types_are_send_sync_unpin_clone_and_debug() {
    fn send_sync_debug<T: Send + Sync + std::fmt::Debug>() {}
    fn unpin<T: Unpin>() {}
    fn clone<T: Clone>() {}
    send_sync_debug::<Scope<std::future::Ready<()>>>();
    send_sync_debug::<Deadline>();
    unpin::<Scope<std::future::Ready<()>>>();
    clone::<Deadline>();
}

/// A 1 s timeout inside a 200 ms scope ends at 200 ms, with the error
/// naming the scope; the scope's own deadline, met at the same instant,
/// leaves the handler its answer.
#[tokio::test(start_paused = true)]
async fn a_timeout_inside_a_scope_ends_at_the_scopes_deadline_naming_it() {
    let start = Instant::now();
    let handled = deadline::scope(ms(200), async {
        let err = timeout(Duration::from_secs(1), pending::<()>())
            .await
            .unwrap_err();
        (err, start.elapsed())
    })
    .await;
    let (err, took) = handled.expect("the handler ran to its end");
    assert_eq!(took, ms(200));
    assert!(err.is_inherited());
    assert!(!err.is_timer_stopped());
    assert_eq!(
        err.to_string(),
        "deadline of the enclosing scope has elapsed"
    );
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(Timer::current().pending(), 0);
}

/// Every way to make a timeout inside a scope is clipped: `timeout_at`,
/// `Timer::timeout`, `timeout_at`, `try_timeout`, `try_timeout_at`, and
/// `hashwheel::time::timeout` of `Duration::MAX` (which never elapses
/// outside a scope).
#[tokio::test(start_paused = true)]
async fn every_form_of_timeout_is_clipped() {
    let timer = Timer::new();
    let far = Duration::from_secs(3600);
    type Made = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), Elapsed>>>>>;
    let forms: Vec<(&str, Made)> = vec![
        (
            "time::timeout_at",
            Box::new(move || Box::pin(timeout_at(Instant::now() + far, pending()))),
        ),
        (
            "time::timeout(MAX)",
            Box::new(|| Box::pin(timeout(Duration::MAX, pending()))),
        ),
        ("Timer::timeout", {
            let timer = timer.clone();
            Box::new(move || Box::pin(timer.timeout(far, pending())))
        }),
        ("Timer::timeout_at", {
            let timer = timer.clone();
            Box::new(move || Box::pin(timer.timeout_at(Instant::now() + far, pending())))
        }),
        ("Timer::try_timeout", {
            let timer = timer.clone();
            Box::new(move || Box::pin(timer.try_timeout(far, pending()).unwrap()))
        }),
        ("Timer::try_timeout_at", {
            let timer = timer.clone();
            Box::new(move || {
                Box::pin(
                    timer
                        .try_timeout_at(Instant::now() + far, pending())
                        .unwrap(),
                )
            })
        }),
    ];
    for (name, make) in forms {
        let start = Instant::now();
        let res = timer.scope(ms(30), async { make().await }).await;
        let err = res.unwrap_or_else(|_| panic!("{name}: the scope's own error came first"));
        assert!(err.unwrap_err().is_inherited(), "{name}");
        assert_eq!(start.elapsed(), ms(30), "{name}");
    }
    assert_eq!(timer.pending(), 0);
}

/// Nested scopes of 300 and 100 ms: the inner one (and a call inside it)
/// ends at 100 ms, the outer one's call at 300; an inner scope longer than
/// the outer ends at the outer's deadline, saying it inherited it.
#[tokio::test(start_paused = true)]
async fn nested_scopes_end_the_inner_call_at_its_deadline_and_the_outer_at_its_own() {
    let start = Instant::now();
    let outer = deadline::scope(ms(300), async {
        let inner = deadline::scope(ms(100), async {
            timeout(Duration::from_secs(1), pending::<()>()).await
        })
        .await;
        let inner_call = inner.expect("the inner call ends with its scope");
        assert!(inner_call.unwrap_err().is_inherited());
        assert_eq!(start.elapsed(), ms(100));
        assert_eq!(deadline::remaining(), Some(ms(200)));
        let longer = deadline::scope(ms(500), pending::<()>()).await;
        (longer.unwrap_err(), start.elapsed())
    });
    let (longer, took) = outer.await.expect("the outer call ends with its scope");
    assert_eq!(took, ms(300));
    assert!(longer.is_inherited(), "clipped by the outer scope");

    // The inner scope's own deadline, unclipped, is its own.
    let start = Instant::now();
    let outer = deadline::scope(ms(300), async {
        deadline::scope(ms(100), pending::<()>()).await.unwrap_err()
    });
    let own = outer.await.unwrap();
    assert!(!own.is_inherited());
    assert_eq!(own.to_string(), "deadline has elapsed");
    assert_eq!(start.elapsed(), ms(100));
    assert_eq!(Timer::current().pending(), 0);
}

/// A scope made outside another and polled inside it takes the earlier
/// deadline for what is made inside it.
#[tokio::test(start_paused = true)]
async fn a_scope_polled_inside_an_earlier_one_gives_its_calls_the_earlier_deadline() {
    let start = Instant::now();
    let made_outside = deadline::scope(Duration::from_secs(10), async {
        let left = deadline::remaining();
        (left, timeout(Duration::from_secs(5), pending::<()>()).await)
    });
    let (left, call) = deadline::scope(ms(100), made_outside)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(left, Some(ms(100)));
    assert!(call.unwrap_err().is_inherited());
    assert_eq!(start.elapsed(), ms(100));
}

/// A timeout shorter than the time left keeps its own deadline, to the
/// nanosecond, as outside any scope: the same `deadline()`, the same
/// instant of completion, its own error.
#[tokio::test(start_paused = true)]
async fn a_timeout_shorter_than_the_time_left_keeps_its_own_deadline() {
    let timer = Timer::new();
    let d = Duration::new(0, 70_000_123); // 70 ms and 123 ns
    let mut outside = timer.timeout(d, pending::<()>());
    let at = Instant::now() + d;
    let mut outside_at = timeout_at(at, pending::<()>());
    let (inside, inside_at) = timer
        .scope(Duration::from_secs(1), async {
            (
                timer.timeout(d, pending::<()>()),
                timeout_at(at, pending::<()>()),
            )
        })
        .await
        .unwrap();
    let (mut inside, mut inside_at) = (inside, inside_at);
    assert_eq!(
        inside.timeout_mut().deadline(),
        outside.timeout_mut().deadline()
    );
    assert_eq!(
        inside_at.timeout_mut().deadline(),
        outside_at.timeout_mut().deadline()
    );
    assert!(inside_at.timeout_mut().deadline() >= at.into_std());
    // Awaited inside the scope, it ends when the one outside does, by its
    // own deadline.
    let start = Instant::now();
    let inner = timer
        .scope(Duration::from_secs(1), async {
            let call = timer.timeout(d, pending::<()>()).await;
            (call, start.elapsed())
        })
        .await
        .unwrap();
    let _ = outside.await;
    let took_outside = start.elapsed();
    assert!(!inner.0.unwrap_err().is_inherited());
    assert_eq!(inner.1, took_outside);
    assert!(inner.1 >= d);
    let _ = (inside.await, inside_at.await, outside_at.await);
    assert_eq!(timer.pending(), 0);
}

/// A spawned task is outside the scope it was spawned from: its timeout
/// keeps its own deadline. Carried by `current()` and `Deadline::scope`,
/// its timeout is clipped, saying so, and its scope ends with the
/// request's.
#[tokio::test(start_paused = true)]
async fn a_spawned_task_is_outside_the_scope_unless_the_deadline_is_carried() {
    let start = Instant::now();
    let (plain, carried) = deadline::scope(ms(100), async {
        let plain = tokio::spawn(async move {
            let left = deadline::remaining();
            let call = timeout(Duration::from_secs(1), pending::<()>()).await;
            (left, call, start.elapsed())
        });
        let deadline = deadline::current().expect("inside a scope");
        assert_eq!(deadline.remaining(), ms(100));
        let carried = tokio::spawn(deadline.scope(async move {
            let left = deadline::remaining();
            let call = timeout(Duration::from_secs(1), pending::<()>()).await;
            (left, call, start.elapsed())
        }));
        (plain, carried)
    })
    .await
    .unwrap();
    let (left, call, took) = carried.await.unwrap().expect("its call ends first");
    assert_eq!(left, Some(ms(100)));
    assert!(call.unwrap_err().is_inherited());
    assert_eq!(took, ms(100));
    let (left, call, took) = plain.await.unwrap();
    assert_eq!(left, None, "a spawned task is outside");
    assert!(!call.unwrap_err().is_inherited());
    assert_eq!(took, Duration::from_secs(1));

    // The carried scope itself ends at the deadline, saying it inherited it.
    let start = Instant::now();
    let deadline = deadline::scope(ms(50), async { deadline::current().unwrap() })
        .await
        .unwrap();
    let err = tokio::spawn(deadline.scope(pending::<()>()))
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.is_inherited());
    assert_eq!(start.elapsed(), ms(50));
    assert_eq!(Timer::current().pending(), 0);
}

/// A scope entered after its deadline ends at once (at its first poll),
/// never before the deadline, never later than a tick after the poll; so
/// does a call made inside it.
#[tokio::test(start_paused = true)]
async fn a_scope_entered_after_its_deadline_ends_at_once() {
    let timer = Timer::new();
    // Already passed when it is made.
    let start = Instant::now();
    let err = timer
        .scope_at(start - ms(5), pending::<()>())
        .await
        .unwrap_err();
    assert!(!err.is_inherited());
    assert_eq!(start.elapsed(), Duration::ZERO);

    // Made in time, first polled after its deadline.
    let deadline_at = Instant::now() + ms(10);
    let mut scope = Box::pin(timer.scope_at(deadline_at, async {
        let call = timer.timeout(Duration::from_secs(1), pending::<()>()).await;
        (call, Instant::now())
    }));
    tokio::time::advance(ms(25)).await;
    let entered = Instant::now();
    let ended = match poll_once(&mut scope) {
        Poll::Ready(res) => Some(res),
        Poll::Pending => None,
    };
    // On paused time it ends at this first poll, as tokio's runtime timer
    // has processed its deadline; the scope, kept, still holds its own
    // timeout (never polled), pending until it is dropped.
    let (call, at) = match ended {
        Some(res) => {
            drop(scope);
            res.expect("the call inside ends with the scope")
        }
        None => scope.await.expect("the call inside ends with the scope"),
    };
    assert!(call.unwrap_err().is_inherited());
    assert!(at >= deadline_at, "never early");
    assert!(
        at - entered <= ms(1),
        "at most a tick late: {:?}",
        at - entered
    );
    assert_eq!(timer.pending(), 0);
}

/// The time left, by the scope's clock (tokio's paused one here), from
/// inside: `remaining()` and `current()`; `None` outside, and after a
/// scope's poll, also one that panicked.
#[tokio::test(start_paused = true)]
async fn the_time_left_is_read_inside_and_none_outside() {
    assert_eq!(deadline::remaining(), None);
    assert!(deadline::current().is_none());
    let at = Instant::now() + ms(500);
    let scope = deadline::scope_at(at, async {
        tokio::time::sleep(ms(120)).await;
        let current = deadline::current().unwrap();
        assert_eq!(current.instant(), at.into_std());
        assert!(format!("{current:?}").contains("remaining: 380ms"));
        deadline::remaining()
    });
    assert_eq!(scope.remaining(), ms(500));
    assert_eq!(scope.deadline(), at.into_std());
    assert!(format!("{scope:?}").starts_with("Scope {"));
    assert_eq!(scope.await.unwrap(), Some(ms(380)));
    assert_eq!(deadline::remaining(), None);

    // A future that panics inside a scope leaves the thread outside it.
    let mut panicky = Box::pin(deadline::scope(ms(10), async {
        assert!(deadline::remaining().is_some());
        panic!("inside a scope (expected by the test)");
    }));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(&mut panicky)));
    assert!(caught.is_err());
    assert_eq!(deadline::remaining(), None);
    assert!(deadline::current().is_none());
    let call = timeout(ms(30), pending::<()>()).await.unwrap_err();
    assert!(!call.is_inherited(), "a timeout made after it is its own");
}

/// Nothing of a scope is left pending once it ends, whichever way:
/// completed, elapsed, or dropped mid-way with a call registered inside.
#[tokio::test(start_paused = true)]
async fn nothing_is_left_pending_after_a_scope() {
    let timer = Timer::new();
    let _unrelated = timer.sleep(Duration::from_secs(60));
    let before = timer.pending();
    assert_eq!(before, 1);
    assert_eq!(timer.scope(ms(50), async { 1 }).await, Ok(1));
    assert_eq!(timer.pending(), before);
    let call = timer
        .scope(ms(50), async {
            timer.timeout(Duration::from_secs(5), pending::<()>()).await
        })
        .await
        .unwrap();
    assert!(call.unwrap_err().is_inherited());
    assert_eq!(timer.pending(), before);
    let mut dropped = Box::pin(timer.scope(ms(50), async {
        timer.timeout(Duration::from_secs(5), pending::<()>()).await
    }));
    assert!(poll_once(&mut dropped).is_pending());
    assert_eq!(timer.pending(), before + 2, "the scope's and its call's");
    drop(dropped);
    assert_eq!(timer.pending(), before, "cancelled at drop");
    let unpolled = timer.scope(ms(50), async {});
    assert_eq!(timer.pending(), before + 1);
    drop(unpolled);
    assert_eq!(timer.pending(), before);
}

/// A stopped timer ends its scopes at once with `is_timer_stopped`, never
/// as a deadline that passed; `try_scope` refuses new ones; a full timer
/// refuses them with `is_at_capacity`.
#[tokio::test(start_paused = true)]
async fn a_stopped_timer_ends_its_scopes_saying_so() {
    let timer = Timer::new();
    let mut scope = timer.scope(Duration::from_secs(10), pending::<()>());
    assert!(poll_once(&mut scope).is_pending());
    timer.stop();
    let err = scope.await.unwrap_err();
    assert!(err.is_timer_stopped());
    assert!(!err.is_inherited());
    assert!(timer.try_scope(ms(1), async {}).unwrap_err().is_stopped());

    let full = Timer::builder().max_pending(1).build().unwrap();
    let held = full.sleep(Duration::from_secs(1));
    assert!(full
        .try_scope(ms(1), async {})
        .unwrap_err()
        .is_at_capacity());
    drop(held);
}

/// `Elapsed::ended_by` names the deadline at every level (issue 57): a
/// call's own (`Call`), a call's inherited from its scope (`Inherited`),
/// the scope's own at the request's boundary (`Scope`, where
/// `is_inherited` is `false`), a nested scope's from the enclosing one and
/// a carried scope's (`Inherited`), a stopped timer (`TimerStopped`).
#[tokio::test(start_paused = true)]
async fn elapsed_says_which_deadline_ended_it_at_every_level() {
    use hashwheel::EndedBy;
    let timer = Timer::new();
    let (own, inherited) = timer
        .scope(ms(200), async {
            let own = timer.timeout(ms(50), pending::<()>()).await.unwrap_err();
            let inherited = timer.timeout(Duration::from_secs(1), pending::<()>()).await;
            (own, inherited.unwrap_err())
        })
        .await
        .unwrap();
    assert_eq!(own.ended_by(), EndedBy::Call);
    assert_eq!(inherited.ended_by(), EndedBy::Inherited);
    assert!(inherited.is_inherited());

    // The request's boundary: the scope's own deadline.
    let boundary = timer.scope(ms(100), pending::<()>()).await.unwrap_err();
    assert_eq!(boundary.ended_by(), EndedBy::Scope);
    assert!(!boundary.is_inherited());
    assert_eq!(boundary.to_string(), "deadline has elapsed");
    // A call outside any scope: its own.
    let alone = timer.timeout(ms(10), pending::<()>()).await.unwrap_err();
    assert_eq!(alone.ended_by(), EndedBy::Call);

    // A scope inside an earlier one, and one carried into a task.
    let (nested, carried) = timer
        .scope(ms(100), async {
            let nested = timer.scope(Duration::from_secs(1), pending::<()>()).await;
            let carried = deadline::current().expect("inside");
            (nested.unwrap_err(), carried)
        })
        .await
        .unwrap_or_else(|e| panic!("the nested scope's error is the handler's answer: {e}"));
    assert_eq!(nested.ended_by(), EndedBy::Inherited);
    let carried = carried.scope(pending::<()>()).await.unwrap_err();
    assert_eq!(carried.ended_by(), EndedBy::Inherited);

    // A nested scope whose own deadline comes first: its own.
    let inner = timer
        .scope(Duration::from_secs(1), timer.scope(ms(10), pending::<()>()))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(inner.ended_by(), EndedBy::Scope);

    let mut scope = timer.scope(Duration::from_secs(10), pending::<()>());
    let mut call = timer.timeout(Duration::from_secs(10), pending::<()>());
    assert!(poll_once(&mut scope).is_pending());
    assert!(poll_once(&mut call).is_pending());
    timer.stop();
    assert_eq!(scope.await.unwrap_err().ended_by(), EndedBy::TimerStopped);
    assert_eq!(call.await.unwrap_err().ended_by(), EndedBy::TimerStopped);
}

/// `Timer::scope` panics where `try_scope` errs, at its caller.
#[tokio::test]
#[should_panic(expected = "hashwheel: timer is stopped")]
async fn scope_on_a_stopped_timer_panics() {
    let timer = Timer::new();
    timer.stop();
    drop(timer.scope(ms(1), async {}));
}

/// A timeout made outside a scope and awaited inside keeps its deadline:
/// inside is where a timeout is made.
#[tokio::test(start_paused = true)]
async fn a_timeout_made_outside_and_awaited_inside_keeps_its_deadline() {
    let start = Instant::now();
    let made_outside = timeout(Duration::from_secs(1), pending::<()>());
    let err = deadline::scope(ms(100), made_outside).await.unwrap_err();
    assert!(!err.is_inherited(), "the scope's own error");
    assert_eq!(start.elapsed(), ms(100));
    let start = Instant::now();
    let made_outside = timeout(ms(100), pending::<()>());
    let call = deadline::scope(Duration::from_secs(1), made_outside)
        .await
        .unwrap();
    assert!(!call.unwrap_err().is_inherited());
    assert_eq!(start.elapsed(), ms(100));
}

/// Sleeps keep their own deadline inside a scope (a sleep is not a
/// timeout: no error says which deadline ended it): `Timer::sleep`,
/// `hashwheel::time::sleep`, intervals.
#[tokio::test(start_paused = true)]
async fn sleeps_and_intervals_keep_their_own_deadline_inside_a_scope() {
    let timer = Timer::new();
    let made = timer
        .scope(ms(10), async {
            let at = Instant::now();
            (
                timer.sleep(ms(200)),
                hashwheel::time::sleep(ms(200)),
                timer.interval_at(at + ms(200), ms(200)),
                at,
            )
        })
        .await
        .unwrap();
    let (sleep, time_sleep, mut interval, at) = made;
    assert_eq!(sleep.deadline(), (at + ms(200)).into_std());
    assert_eq!(time_sleep.deadline(), at + ms(200));
    sleep.await;
    assert_eq!(at.elapsed(), ms(200));
    time_sleep.await;
    interval.tick().await;
    assert_eq!(at.elapsed(), ms(200));
}

/// The tower layers: `ScopeLayer` runs each request in a scope (the
/// inner service's `call` included) and fails a late one with
/// hashwheel's `Elapsed`; hashwheel's `TimeoutLayer` keeps its own
/// deadline inside a scope (tower's `Elapsed` cannot say which passed).
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn the_tower_scope_layer_runs_each_request_in_a_scope() {
    use tower::{service_fn, BoxError, Layer, ServiceExt};
    fn send_sync_debug<T: Send + Sync + std::fmt::Debug>() {}
    send_sync_debug::<hashwheel::tower::ScopeLayer>();
    send_sync_debug::<hashwheel::tower::ScopeService<()>>();
    send_sync_debug::<hashwheel::tower::ScopeFuture<std::future::Ready<Result<(), BoxError>>>>();
    let timer = Timer::new();
    let layer = hashwheel::tower::ScopeLayer::new(timer.clone(), ms(200));
    let svc = layer.layer(service_fn(|()| {
        // Made in `call`, before the future is polled: inside too.
        let call = timeout(Duration::from_secs(1), pending::<()>());
        async move { Ok::<_, BoxError>(call.await) }
    }));
    let start = Instant::now();
    let call = svc.clone().oneshot(()).await.unwrap();
    assert!(call.unwrap_err().is_inherited());
    assert_eq!(start.elapsed(), ms(200));
    let slow = layer.layer(service_fn(|()| async {
        pending::<()>().await;
        Ok::<_, BoxError>(())
    }));
    let err = slow.oneshot(()).await.unwrap_err();
    let err = err.downcast::<Elapsed>().expect("hashwheel's Elapsed");
    assert!(!err.is_inherited());
    assert_eq!(
        err.ended_by(),
        hashwheel::EndedBy::Scope,
        "the request ran out"
    );
    assert_eq!(timer.pending(), 0);

    // hashwheel's TimeoutLayer inside a scope: its own 300 ms.
    let start = Instant::now();
    let inner =
        hashwheel::tower::TimeoutLayer::new(timer.clone(), ms(300)).layer(service_fn(|()| async {
            pending::<()>().await;
            Ok::<_, BoxError>(())
        }));
    let res = timer
        .scope(Duration::from_secs(1), inner.oneshot(()))
        .await
        .unwrap();
    assert!(res.unwrap_err().is::<tower::timeout::error::Elapsed>());
    assert_eq!(start.elapsed(), ms(300));
}

// ---- a scope and the call clipped to it, at the same instant ----

/// A handler whose call, clipped to its request's scope, says whether it
/// ran out of the request's time, and when it answered: the shape of
/// `ScopeLayer`'s doc example.
async fn answer<T>(call: impl Future<Output = Result<T, Elapsed>>) -> (&'static str, Instant) {
    let said = match call.await {
        Err(e) if e.is_inherited() => "out of time",
        Err(_) => "its own deadline",
        Ok(_) => "in time",
    };
    (said, Instant::now())
}

/// Issue 56: a scope and the call clipped to it on two timers end at the
/// same instant, and the scope's timer fires first (the call's turns every
/// 7 ms, so it comes to the call a millisecond later): the layer's own
/// `Elapsed` dropped the handler, its answer lost. The scope now polls its
/// future a last time, where the call ends with the inherited `Elapsed`
/// and the handler answers, at the deadline; the call counts as fired,
/// nothing is left pending. `ScopeLayer::new(Timer::new(), ..)` around
/// `hashwheel::time::timeout`, as its doc example.
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn a_scope_that_fires_before_its_calls_timer_still_gives_the_handler_its_answer() {
    use tokio_test::{assert_pending, assert_ready, task};
    use tower::{service_fn, BoxError, Layer, Service};
    // The counts that must balance: created, fired, cancelled, pending.
    let counts = |timer: &Timer| {
        let stats = timer.stats();
        (stats.created, stats.fired, stats.cancelled, stats.pending)
    };
    let calls = Timer::builder().tick(ms(7)).build().unwrap();
    calls.set_current().unwrap();
    let scopes = Timer::new();
    let layer = hashwheel::tower::ScopeLayer::new(scopes.clone(), ms(300));
    let mut svc = layer.layer(service_fn(|()| async {
        Ok::<_, BoxError>(answer(timeout(Duration::from_secs(1), pending::<()>())).await)
    }));
    let start = Instant::now();
    let mut request = task::spawn(svc.call(()));
    assert_pending!(request.poll());
    tokio::time::advance(ms(300)).await;
    assert!(request.is_woken());
    let (said, at) = assert_ready!(request.poll()).expect("the handler answers");
    assert_eq!(said, "out of time");
    assert_eq!(at - start, ms(300), "at the deadline, never before");
    assert_eq!(
        counts(&calls),
        (1, 1, 0, 0),
        "the call fired with its scope"
    );
    assert_eq!(counts(&scopes), (1, 1, 0, 0));
}

/// The same tie both ways round, and on one timer: whichever timer comes
/// first to the deadline the scope and its call share, the handler gets
/// its answer at the deadline.
#[tokio::test(start_paused = true)]
async fn a_scope_and_its_call_that_tie_give_the_handler_its_answer_whichever_fires_first() {
    let fine = Timer::new();
    let coarse = Timer::builder().tick(ms(7)).build().unwrap();
    let pairs = [
        (&fine, &coarse),
        (&coarse, &fine),
        (&fine, &fine),
        (&coarse, &coarse),
    ];
    for (i, (scopes, calls)) in pairs.into_iter().enumerate() {
        let start = Instant::now();
        let deadline_at = start + ms(300);
        let handled = scopes.scope_at(deadline_at, async {
            answer(calls.timeout(Duration::from_secs(1), pending::<()>())).await
        });
        let (said, at) = handled
            .await
            .unwrap_or_else(|_| panic!("pair {i}: the handler dropped"));
        assert_eq!(said, "out of time", "pair {i}");
        let scope_at = deadline_at
            .into_std()
            .max(scopes.sleep_until(deadline_at).deadline());
        assert!(at.into_std() >= scope_at, "pair {i}: early");
        assert!(at - start <= ms(307), "pair {i}: {:?}", at - start);
    }
    assert_eq!(fine.pending() + coarse.pending(), 0);
}

/// Nested: a scope on the call's timer, clipped to an outer one on
/// another, and the call inside it. At the outer deadline the inner
/// scope's future answers; an inner one that would not answer ends with
/// the inherited `Elapsed` (never its own).
#[tokio::test(start_paused = true)]
async fn a_nested_scope_on_another_timer_ends_with_the_outer_one_and_its_call_answers() {
    let outer_timer = Timer::new();
    let inner_timer = Timer::builder().tick(ms(7)).build().unwrap();
    let start = Instant::now();
    let outer = outer_timer.scope(ms(300), async {
        let inner = inner_timer.scope(
            Duration::from_secs(1),
            answer(inner_timer.timeout(Duration::from_secs(5), pending::<()>())),
        );
        let (said, at) = inner.await.expect("the inner scope's future answers");
        let silent = inner_timer.scope(Duration::from_secs(1), pending::<()>());
        (said, at, silent)
    });
    let (said, at, _) = outer.await.expect("the outer one answers");
    assert_eq!((said, at - start), ("out of time", ms(300)));

    let start = Instant::now();
    let outer = outer_timer.scope(ms(300), async {
        let silent = inner_timer
            .scope(Duration::from_secs(1), pending::<()>())
            .await;
        (silent, Instant::now())
    });
    let (silent, at) = outer.await.expect("the outer one answers");
    assert!(silent.unwrap_err().is_inherited());
    assert_eq!(at - start, ms(300));
    assert_eq!(outer_timer.pending() + inner_timer.pending(), 0);
}

/// The last poll of a scope whose deadline passed ends only what was
/// clipped to that deadline (or an earlier one): a call clipped to a later
/// scope, or keeping its own deadline, is dropped with the future, never
/// ended early.
#[tokio::test(start_paused = true)]
async fn a_scopes_last_poll_never_ends_a_call_clipped_to_a_later_deadline() {
    let fine = Timer::new();
    let coarse = Timer::builder().tick(ms(7)).build().unwrap();
    let start = Instant::now();
    let outer = fine.scope(ms(500), async {
        // Clipped to the outer 500 ms, awaited in an inner 300 ms scope.
        let call = coarse.timeout(Duration::from_secs(1), pending::<()>());
        let inner = fine.scope(ms(300), answer(call)).await;
        (inner, Instant::now())
    });
    let (inner, at) = outer.await.expect("the outer scope's future ends first");
    let err = inner.expect_err("the call was not ended at 300 ms");
    assert!(!err.is_inherited(), "the inner scope's own deadline");
    assert_eq!(at - start, ms(300));

    let start = Instant::now();
    let own = coarse.timeout(Duration::from_secs(1), pending::<()>());
    let err = fine.scope(ms(300), answer(own)).await.unwrap_err();
    assert!(!err.is_inherited());
    assert_eq!(start.elapsed(), ms(300));
    assert_eq!(fine.pending() + coarse.pending(), 0);
}

/// Spends what is left of the task's budget at each poll, then waits.
struct SpendBudget;

impl Future for SpendBudget {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        while tokio::task::coop::has_budget_remaining() {
            let spend = std::pin::pin!(tokio::task::coop::consume_budget());
            let _ = spend.poll(cx);
        }
        Poll::Pending
    }
}

/// The call a future was waiting on ends in its scope's last poll whatever
/// is left of tokio's budget (its future spent it all here); a call made
/// in that poll ends through the budget, as a timeout due at once does, so
/// that a loop that retries yields to the runtime rather than spin there.
#[tokio::test(start_paused = true)]
async fn a_scopes_last_poll_ends_the_awaited_call_whatever_the_budget_and_a_retry_loop_yields() {
    let fine = Timer::new();
    let coarse = Timer::builder().tick(ms(7)).build().unwrap();
    let start = Instant::now();
    let scope = fine.scope(ms(300), async {
        // Polled in this order (tokio's `select!` would itself yield with
        // the budget spent).
        let call = answer(coarse.timeout(Duration::from_secs(1), pending::<()>()));
        match futures::future::select(SpendBudget, Box::pin(call)).await {
            futures::future::Either::Right((answer, _)) => answer,
            futures::future::Either::Left(_) => unreachable!(),
        }
    });
    let (said, at) = scope.await.expect("the handler answers");
    assert_eq!((said, at - start), ("out of time", ms(300)));

    let start = Instant::now();
    let tries = std::cell::Cell::new(0u32);
    let retries = fine.scope(ms(300), async {
        // Bounded, so that a spin fails rather than hangs.
        while tries.get() < 10_000 {
            tries.set(tries.get() + 1);
            let call = coarse
                .timeout(Duration::from_secs(1), pending::<()>())
                .await;
            if !call.unwrap_err().is_inherited() {
                break;
            }
        }
    });
    assert!(retries.await.is_err(), "the scope ends");
    assert_eq!(start.elapsed(), ms(300));
    assert!(
        tries.get() > 1 && tries.get() <= 200,
        "{} tries",
        tries.get()
    );
    assert_eq!(fine.pending() + coarse.pending(), 0);
}

/// A scope whose timer stops ends saying so, without a last poll: the
/// calls inside have not run out of the request's time.
#[tokio::test(start_paused = true)]
async fn a_scope_whose_timer_stops_ends_its_calls_with_the_future_not_as_inherited() {
    let scopes = Timer::new();
    let calls = Timer::new();
    let mut scope = Box::pin(scopes.scope(Duration::from_secs(10), async {
        answer(calls.timeout(Duration::from_secs(30), pending::<()>())).await
    }));
    assert!(poll_once(&mut scope).is_pending());
    scopes.stop();
    let err = scope.await.unwrap_err();
    assert!(err.is_timer_stopped());
    assert_eq!(calls.stats().fired, 0, "the call was dropped, not ended");
    assert_eq!(calls.pending(), 0);
}

// ---- deadlines past the wheel's range ----

/// Issue 56: a scope at an instant past the wheel's range (over 146,000
/// years) never passes, so it shortens no call: on its own timer, on
/// another, or one carried. It keeps the instant it was given (it said
/// 30 years out, and cut another timer's 40-year call there with an
/// inherited `Elapsed`).
#[tokio::test(start_paused = true)]
// A timeout made in a carried scope, awaited outside it, on purpose.
#[allow(clippy::async_yields_async)]
async fn a_scope_past_the_wheels_range_never_shortens_a_call() {
    let year = Duration::from_secs(86_400 * 365);
    let (a, b) = (Timer::new(), Timer::new());
    let far = Instant::now() + year * 200_000;
    assert_eq!(a.scope_at(far, async {}).deadline(), far.into_std());
    for calls in [&a, &b] {
        let start = Instant::now();
        let scope = a.scope_at(far, async {
            let left = deadline::remaining().unwrap();
            let carried = deadline::current().unwrap();
            let call = calls.timeout(year * 40, pending::<()>());
            (left, carried, call.await)
        });
        let (left, carried, call) = scope.await.expect("the scope never ends");
        assert!(left > year * 199_000, "{left:?}");
        assert_eq!(carried.instant(), far.into_std());
        assert!(!call.unwrap_err().is_inherited(), "its own 40 years");
        assert_eq!(start.elapsed(), year * 40);
        let mut made = Box::pin(carried.scope(async { calls.timeout(year * 50, pending::<()>()) }));
        let mut made = poll_once(&mut made);
        let Poll::Ready(Ok(ref mut call)) = made else {
            panic!("made at once")
        };
        assert!(call.timeout_mut().deadline() >= (Instant::now() + year * 50).into_std());
    }
    // A delay too long to keep is tokio's "far future", 30 years, for a
    // scope as for a timeout (the scope ends there, and so does a call in it).
    let start = Instant::now();
    let res = a
        .scope(Duration::MAX, async {
            b.timeout(year * 40, pending::<()>()).await
        })
        .await;
    assert!(res.unwrap().unwrap_err().is_inherited());
    assert_eq!(start.elapsed(), year * 30);
}

// ---- the thread driver, std's clock, and the two clocks together ----

/// On the thread driver (std's clock) under `futures`' `block_on`: a long
/// timeout inside a scope ends at the scope's deadline (never before it,
/// well before its own), naming it; nested; nothing left pending.
#[cfg(feature = "thread")]
#[test]
fn a_scope_on_the_thread_driver_clips_on_any_executor() {
    let timer = Timer::builder().driver_thread().build().unwrap();
    futures::executor::block_on(async {
        let start = std::time::Instant::now();
        let call = timer
            .scope(ms(30), async {
                assert!(deadline::remaining().unwrap() <= ms(30));
                timer
                    .timeout(Duration::from_secs(30), pending::<()>())
                    .await
            })
            .await
            .unwrap();
        let took = start.elapsed();
        assert!(call.unwrap_err().is_inherited());
        assert!(took >= ms(30), "early: {took:?}");
        assert!(took < Duration::from_secs(10), "{took:?}");

        let start = std::time::Instant::now();
        let outer = timer.scope(ms(200), async {
            let inner = timer
                .scope(ms(20), async {
                    timer
                        .timeout(Duration::from_secs(30), pending::<()>())
                        .await
                })
                .await;
            assert!(inner.unwrap().unwrap_err().is_inherited());
            let inner_took = start.elapsed();
            let call = timer
                .timeout(Duration::from_secs(30), pending::<()>())
                .await;
            (call, inner_took)
        });
        let (call, inner_took) = outer.await.expect("its call ends first");
        assert!(call.unwrap_err().is_inherited());
        assert!(
            inner_took >= ms(20) && inner_took < ms(200),
            "{inner_took:?}"
        );
        let took = start.elapsed();
        assert!(took >= ms(200), "early: {took:?}");
        assert!(took < Duration::from_secs(10), "{took:?}");
        assert_eq!(timer.pending(), 0);
    });
}

/// `Delay` and `hashwheel::async_io::Timer` keep their own deadline inside
/// a scope: sleeps, with no error to say which deadline passed. Made
/// inside a 10 ms scope, they complete at their own 60 ms.
#[cfg(feature = "thread")]
#[test]
fn delay_and_async_io_timers_keep_their_own_deadline_inside_a_scope() {
    let timer = Timer::builder().driver_thread().build().unwrap();
    let (made, delay, io_timer) = futures::executor::block_on(timer.scope(ms(10), async {
        (
            std::time::Instant::now(),
            hashwheel::Delay::new(ms(60)),
            hashwheel::async_io::Timer::after(ms(60)),
        )
    }))
    .unwrap();
    futures::executor::block_on(delay);
    assert!(made.elapsed() >= ms(60), "a Delay cut short");
    let fired = futures::executor::block_on(io_timer);
    assert!(fired >= made + ms(60), "an async_io::Timer cut short");
    // And awaited inside, the scope ends first.
    let start = std::time::Instant::now();
    let res = futures::executor::block_on(timer.scope(ms(10), async {
        hashwheel::Delay::new(ms(500)).await;
    }));
    assert!(res.is_err());
    assert!(start.elapsed() < ms(500));
}

/// A scope on tokio's paused clock and a timeout on a thread-driven timer
/// (std's clock) made inside it: the timeout takes the time left by the
/// scope's clock, from std's now, whatever the gap between the two clocks
/// (an hour of `advance` here), and ends then on std's clock.
#[cfg(feature = "thread")]
#[tokio::test(start_paused = true)]
// The timeouts are made inside the scope and awaited outside it, on purpose.
#[allow(clippy::async_yields_async)]
async fn a_paused_clock_scope_gives_a_thread_driven_timeout_the_time_left() {
    tokio::time::advance(Duration::from_secs(3600)).await;
    let threaded = Timer::builder().driver_thread().build().unwrap();
    let before = std::time::Instant::now();
    let mut call = deadline::scope(ms(50), async {
        threaded.timeout(Duration::from_secs(30), pending::<()>())
    })
    .await
    .unwrap();
    let after = std::time::Instant::now();
    let mut probe = deadline::scope(ms(50), async {
        threaded.timeout(Duration::from_secs(30), pending::<()>())
    })
    .await
    .unwrap();
    let at = probe.timeout_mut().deadline();
    assert!(
        at >= before + ms(50) && at <= std::time::Instant::now() + ms(51),
        "{:?}",
        at - before
    );
    drop(probe);
    // Awaited on std's clock: it ends after 50 ms of real time, naming the
    // scope.
    let err = futures::executor::block_on(&mut call).unwrap_err();
    assert!(err.is_inherited());
    assert!(after.elapsed() >= ms(40), "{:?}", after.elapsed());
    assert!(
        before.elapsed() >= ms(50),
        "never early: {:?}",
        before.elapsed()
    );
    assert_eq!(threaded.pending(), 0);
}

/// The other way: a scope on a thread-driven timer (std's clock) and a
/// timeout on a runtime-driven one (tokio's clock, paused and moved an
/// hour on) made inside it take the time left by std's clock, from tokio's
/// now.
#[cfg(feature = "thread")]
#[tokio::test(start_paused = true)]
async fn a_thread_driven_scope_gives_a_paused_clock_timeout_the_time_left() {
    tokio::time::advance(Duration::from_secs(3600)).await;
    let threaded = Timer::builder().driver_thread().build().unwrap();
    let start = Instant::now();
    let scope = threaded.scope(ms(300), async {
        let call = timeout(Duration::from_secs(30), pending::<()>()).await;
        (call, start.elapsed())
    });
    // The call is made inside at the first poll; tokio's clock reaches its
    // deadline by auto-advance, long before std's reaches the scope's.
    let (call, took) = scope.await.expect("the call ends first");
    let err = call.unwrap_err();
    assert!(err.is_inherited());
    assert!(took <= ms(300) && took >= ms(200), "{took:?}");
}

/// A scope at an instant past the wheel's range on one clock shortens no
/// call on a timer of the other: its time left is not taken for the
/// other clock's "far future" (30 years out).
#[cfg(feature = "thread")]
#[tokio::test(start_paused = true)]
#[allow(clippy::async_yields_async)]
async fn a_scope_past_the_wheels_range_shortens_no_call_on_the_other_clock() {
    let year = Duration::from_secs(86_400 * 365);
    let threaded = Timer::builder().driver_thread().build().unwrap();
    let far = std::time::Instant::now() + year * 200_000;
    let mut call = threaded
        .scope_at(far, async { timeout(year * 40, pending::<()>()) })
        .await
        .unwrap();
    assert!(call.timeout_mut().deadline() >= (Instant::now() + year * 40).into_std());
    let far = Instant::now() + year * 200_000;
    let before = std::time::Instant::now();
    let mut call = deadline::scope_at(far, async { threaded.timeout(year * 40, pending::<()>()) })
        .await
        .unwrap();
    assert!(call.timeout_mut().deadline() >= before + year * 40);
}

// ---- the tie on the real clock, 1,000 requests (ignored: run with --ignored) ----
//
// What the deterministic tests above show, at the scale. The count
// cannot fall short on a busy machine: whichever timer comes first to the
// deadline a request's scope and its call share, the handler answers (the
// call's first: its inherited `Elapsed`; the scope's first: its last poll
// ends the call the handler waits on, and any call made after it, with
// the inherited `Elapsed`, at most a handful of tokio's 128 budget units
// spent in that poll), and the handlers await nothing but calls clipped to
// the scope (their first two calls wrap a yield, not a timer). Only the
// time they take depends on the load.

/// A handler whose third call is `hashwheel::time::timeout(1 s, ..)`, its
/// answer mapping an inherited `Elapsed` to "out of time".
#[cfg(feature = "tower")]
async fn three_calls() -> Result<&'static str, tower::BoxError> {
    timeout(Duration::from_secs(1), async {}).await?;
    timeout(Duration::from_secs(1), tokio::task::yield_now()).await?;
    match timeout(Duration::from_secs(1), pending::<()>()).await {
        Err(e) if e.is_inherited() => Ok("out of time"),
        _ => Ok("in time"),
    }
}

/// Issue 56's 20 of 40: `ScopeLayer::new(Timer::new(), 300 ms)` around
/// `three_calls` on 2 workers on the real clock: 1,000 requests at once,
/// 1,000 answered.
#[cfg(feature = "tower")]
#[test]
#[ignore = "real clock, 1,000 requests: cargo test --all-features --test deadline -- --ignored"]
fn a_thousand_requests_on_two_workers_all_get_their_handlers_answer() {
    use tower::{service_fn, Layer, ServiceExt};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let answered = rt.block_on(async {
        let layer = hashwheel::tower::ScopeLayer::new(Timer::new(), ms(300));
        let svc = layer.layer(service_fn(|()| three_calls()));
        let requests: Vec<_> = (0..1_000)
            .map(|_| tokio::spawn(svc.clone().oneshot(())))
            .collect();
        let mut answered = 0;
        for request in requests {
            if request
                .await
                .unwrap()
                .is_ok_and(|said| said == "out of time")
            {
                answered += 1;
            }
        }
        answered
    });
    eprintln!("answered {answered} of 1,000");
    assert_eq!(answered, 1_000);
}

/// Issue 56's 3, 1 and 1 of 100: one thread-driven timer of two shards,
/// the scopes made on this thread and polled on a pool's: 1,000 requests
/// at once, 1,000 answered.
#[cfg(feature = "thread")]
#[test]
#[ignore = "real clock, 1,000 requests: cargo test --all-features --test deadline -- --ignored"]
fn a_thousand_scopes_on_a_two_shard_thread_driven_timer_polled_elsewhere_all_answer() {
    use futures::channel::oneshot;
    let timer = Timer::builder().driver_thread().shards(2).build().unwrap();
    let pool = futures::executor::ThreadPool::builder()
        .pool_size(2)
        .create()
        .unwrap();
    let answers: Vec<_> = (0..1_000)
        .map(|_| {
            let calls = timer.clone();
            let scope = timer.scope(ms(30), async move {
                let call = calls.timeout(Duration::from_secs(1), pending::<()>());
                match call.await {
                    Err(e) if e.is_inherited() => "out of time",
                    _ => "in time",
                }
            });
            let (tx, rx) = oneshot::channel();
            pool.spawn_ok(async move {
                let _ = tx.send(scope.await);
            });
            rx
        })
        .collect();
    let answered = futures::executor::block_on(async {
        let mut answered = 0;
        for answer in answers {
            if answer.await.unwrap() == Ok("out of time") {
                answered += 1;
            }
        }
        answered
    });
    eprintln!("answered {answered} of 1,000");
    assert_eq!(answered, 1_000);
    assert_eq!(timer.pending(), 0);
}
