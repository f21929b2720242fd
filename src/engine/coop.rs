//! tokio's cooperative budget, where tokio's own timer types take part in
//! it: a task that keeps finding its timers ready yields to the runtime
//! every so often (tokio's budget is 128 ready polls a task poll), so that
//! a loop over ready sleeps, timeouts or interval ticks lets the runtime's
//! other tasks run, as it does with `tokio::time`.
//!
//! [`Timeout`](crate::Timeout)'s poll (and so `hashwheel::time::Sleep`'s,
//! [`WithTimeout`](crate::WithTimeout)'s, hyper's and tower's),
//! [`Interval`](crate::Interval)'s tick and the tokio
//! [`DelayQueue`](crate::DelayQueue)'s clock take a unit where tokio's
//! `Sleep`, `Timeout`, `Interval` and tokio-util's `DelayQueue` do: a
//! ready poll spends one, a pending poll none, and with none left the poll
//! is pending and the task is woken again at once. Outside a tokio task
//! (a thread-driven timer under another executor, or without the feature
//! `tokio`) there is no budget: every call here is free or a no-op.
//! `Delay` and `hashwheel::async_io` keep futures-timer's and async-io's
//! behaviour, which spend none.
//!
//! A leaf: it imports nothing of the crate.

#[cfg(feature = "tokio")]
use tokio_budget as imp;
#[cfg(not(feature = "tokio"))]
use no_budget as imp;

pub(crate) use imp::{has_budget_remaining, poll_proceed};

use std::task::{ready, Context, Poll};

/// Spends a unit of the task's budget for a ready poll: ready, or, with
/// none left, pending with the task woken again at once.
#[inline]
pub(crate) fn spend(cx: &mut Context<'_>) -> Poll<()> {
    ready!(poll_proceed(cx)).made_progress();
    Poll::Ready(())
}

/// tokio's budget, on a tokio task (none elsewhere: every call proceeds).
#[cfg(feature = "tokio")]
mod tokio_budget {
    /// `poll_proceed` takes a unit of the task's budget (pending with none
    /// left) and hands back a `RestoreOnPending`: dropped unused, it gives
    /// the unit back (the poll was pending); `made_progress` spends it.
    pub(crate) use tokio::task::coop::{has_budget_remaining, poll_proceed};
}

/// Without tokio there is no budget: every poll proceeds.
#[cfg(not(feature = "tokio"))]
mod no_budget {
    use std::task::{Context, Poll};

    /// What `poll_proceed` hands back.
    #[derive(Debug)]
    pub(crate) struct Progress;

    impl Progress {
        #[inline(always)]
        pub(crate) fn made_progress(&self) {}
    }

    #[inline(always)]
    pub(crate) fn poll_proceed(_cx: &mut Context<'_>) -> Poll<Progress> {
        Poll::Ready(Progress)
    }

    #[inline(always)]
    pub(crate) fn has_budget_remaining() -> bool {
        true
    }
}
