//! Auto traits, decided on purpose and asserted at compile time.

use hashwheel::{
    Builder, Elapsed, EndedBy, Error, TaskExecutor, TaskHandle, Timeout, Timer, WithTimeout,
};

fn send_sync<T: Send + Sync>() {}
fn unpin<T: Unpin>() {}
fn clone<T: Clone>() {}
fn debug<T: std::fmt::Debug>() {}
fn error<T: std::error::Error + Send + Sync + 'static>() {}

#[test]
fn public_types_are_send_sync_and_debug() {
    send_sync::<Timer>();
    send_sync::<Timeout>();
    send_sync::<TaskHandle>();
    send_sync::<Builder>();
    send_sync::<TaskExecutor>();
    send_sync::<Error>();
    send_sync::<Elapsed>();
    send_sync::<EndedBy>();
    send_sync::<WithTimeout<std::future::Ready<()>>>();
    debug::<Timer>();
    debug::<Timeout>();
    debug::<TaskHandle>();
    debug::<Builder>();
    debug::<TaskExecutor>();
    debug::<WithTimeout<std::future::Ready<()>>>();
    debug::<EndedBy>();
    error::<Error>();
    error::<Elapsed>();
}

#[test]
fn handles_are_clone_and_timeouts_unpin() {
    clone::<Timer>();
    clone::<TaskHandle>();
    clone::<TaskExecutor>();
    clone::<Builder>();
    unpin::<Timeout>();
    unpin::<WithTimeout<std::future::Ready<()>>>();
}

#[test]
fn a_timeout_is_two_words() {
    assert_eq!(
        std::mem::size_of::<Timeout>(),
        2 * std::mem::size_of::<usize>()
    );
    assert_eq!(std::mem::size_of::<Timer>(), std::mem::size_of::<usize>());
}

/// An interval lives in its task's future, which every beat touches, and
/// a task's memory comes in blocks of 128 bytes: it stays within 56 bytes
/// on 64-bit targets (tokio's takes 32, its timer entry boxed apart): its
/// timeout (16), a clone of the waker its entry holds (16: a poll that
/// would wake the same task registers nothing and takes no lock), its next
/// tick in nanoseconds from the timer's start (16: an `i128`, so that an
/// uptime past 292 years keeps its ticks; issue 43) and its period with its
/// flags (8). Its shared state is its wheel entry and deadline word, with
/// no allocation of its own (issue 36: before, 48 bytes here and a
/// 96-byte allocation apart).
#[cfg(target_pointer_width = "64")]
#[test]
fn an_interval_takes_at_most_56_bytes() {
    let size = std::mem::size_of::<hashwheel::Interval>();
    assert!(size <= 56, "an Interval takes {size} bytes");
}
