//! tokio-util 0.7.20's `DelayQueue` tests (its `tests/time_delay_queue.rs`,
//! as `tests/tokio_util_delay_queue.rs` runs them on tokio), on
//! `hashwheel::async_io::DelayQueue` under no runtime at all: each test
//! blocks on futures-lite, waits on the real clock through
//! `hashwheel::async_io::Timer`, and polls the queue through tokio-test's
//! mock task (which needs no runtime). What changed: the `use` lines, the
//! `#[tokio::test]` attribute (now `#[test]` and a `block_on`), the
//! `time::pause()` lines (there is no tokio clock to pause), the two
//! `time::sleep(ms(1000))` lines before an insert in the past (a wasm
//! workaround; on the real clock they waited 10 s each, and the queue takes
//! an instant before its start as its start), and `ms`,
//! which stretches every duration ×10 so that a loaded machine's
//! scheduling cannot turn "not yet" into "already" (5 ms becomes 50 ms).
//! Left out: the three `#[ignore]`d there (they assert tokio-util's own
//! wake-ups), and those that assert tokio's clock, an instant that the real
//! clock cannot meet exactly (the queue's deadline rounds up to its
//! millisecond from an instant of its own, so an item due "when the sleep
//! ends" comes out up to a millisecond after: never early, but not at that
//! poll):
//! * `item_expiry_greater_than_wheel`: moves tokio's clock (`tokio::time::advance`) by 2^35 ms.
//! * `multi_delay_at_start`: an item due at the instant its sleep ends.
//! * `expires_before_last_insert`: an item due at the instant its sleep ends.
//! * `insert_after_ready_poll`: an item due at the instant its sleep ends.
//! * `reset_earlier_after_slot_starts`: an item due at the instant its sleep ends.
//! * `compact_remove_remapped_keys`: an item due at the instant its sleep ends.
//!
//! The other tests' sleeps end a queue millisecond ([`TICK`]) after tokio's would:
//! an item due at the instant a sleep ends but for the few microseconds
//! between `Instant::now()` and the sleep's start (as in
//! `reset_first_expiring_item_to_expire_later` and
//! `compact_change_deadline`) is then due by the queue's tick too, where a
//! punctual sleep came within a tick of it and the item was not out yet
//! (4 runs of 30 of this file failed under load).

#![allow(clippy::disallowed_names)]
#![warn(rust_2018_idioms)]

use futures_lite::future::block_on;
use hashwheel::async_io::{DelayQueue, Timer};
use std::time::{Duration, Instant};
use tokio_test::{assert_pending, assert_ready, task};

/// `tokio::time`'s `sleep` and `sleep_until`, on the real clock, a queue
/// [`TICK`] longer (see the top of the file).
mod time {
    use super::{Duration, Instant, Timer, TICK};

    pub async fn sleep(d: Duration) {
        Timer::after(d + TICK).await;
    }

    pub async fn sleep_until(at: Instant) {
        Timer::at(at + TICK).await;
    }
}

use time::sleep;

/// The queue's resolution, tokio-util's: a deadline rounds up to the
/// millisecond (from the queue's start).
const TICK: Duration = Duration::from_millis(1);

macro_rules! poll {
    ($queue:ident) => {
        $queue.enter(|cx, mut queue| queue.poll_expired(cx))
    };
}

macro_rules! assert_ready_some {
    ($e:expr) => {{
        match assert_ready!($e) {
            Some(v) => v,
            None => panic!("None"),
        }
    }};
}

#[test]
fn single_immediate_delay() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let _key = queue.insert_at("foo", Instant::now());

        // Advance time by 1ms to handle thee rounding
        sleep(ms(1)).await;

        assert_ready_some!(poll!(queue));

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none())
    });
}

#[test]
fn multi_immediate_delays() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let _k = queue.insert_at("1", Instant::now());
        let _k = queue.insert_at("2", Instant::now());
        let _k = queue.insert_at("3", Instant::now());

        sleep(ms(1)).await;

        let mut res = vec![];

        while res.len() < 3 {
            let entry = assert_ready_some!(poll!(queue));
            res.push(entry.into_inner());
        }

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none());

        res.sort_unstable();

        assert_eq!("1", res[0]);
        assert_eq!("2", res[1]);
        assert_eq!("3", res[2]);
    });
}

#[test]
fn single_short_delay() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let _key = queue.insert_at("foo", Instant::now() + ms(5));

        assert_pending!(poll!(queue));

        sleep(ms(1)).await;

        assert!(!queue.is_woken());

        sleep(ms(5)).await;

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(*entry.get_ref(), "foo");

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none());
    });
}

#[test]
fn insert_in_past_fires_immediately() {
    block_on(async {
        println!("running insert_in_past_fires_immediately");

        let mut queue = task::spawn(DelayQueue::new());
        let now = Instant::now();

        sleep(ms(10)).await;

        queue.insert_at("foo", now);

        assert_ready!(poll!(queue));
        println!("finished insert_in_past_fires_immediately");
    });
}

#[test]
fn remove_entry() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let key = queue.insert_at("foo", Instant::now() + ms(5));

        assert_pending!(poll!(queue));

        let entry = queue.remove(&key);
        assert_eq!(entry.into_inner(), "foo");

        sleep(ms(10)).await;

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none());
    });
}

#[test]
fn reset_to_past_wakes_pending_queue() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let key = queue.insert("foo", ms(10_000));

        assert_pending!(poll!(queue));
        assert!(!queue.is_woken());

        queue.reset_at(&key, Instant::now() - ms(100));

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(*entry.get_ref(), "foo");

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none());
    });
}

// Reproduces tokio-rs/tokio#849.
#[test]
fn reset_much_later() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();
        sleep(ms(1)).await;

        let key = queue.insert_at("foo", now + ms(200));
        assert_pending!(poll!(queue));

        sleep(ms(3)).await;

        queue.reset_at(&key, now + ms(10));

        sleep(ms(20)).await;

        assert!(queue.is_woken());
    });
}

// Reproduces tokio-rs/tokio#849.
#[test]
fn reset_twice() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let now = Instant::now();

        sleep(ms(1)).await;

        let key = queue.insert_at("foo", now + ms(200));

        assert_pending!(poll!(queue));

        sleep(ms(3)).await;

        queue.reset_at(&key, now + ms(50));

        sleep(ms(20)).await;

        queue.reset_at(&key, now + ms(40));

        sleep(ms(20)).await;

        assert!(queue.is_woken());
    });
}

/// Regression test: Given an entry inserted with a deadline in the past, so
/// that it is placed directly on the expired queue, reset the entry to a
/// deadline in the future. Validate that this leaves the entry and queue in an
/// internally consistent state by running an additional reset on the entry
/// before polling it to completion.
#[test]
fn repeatedly_reset_entry_inserted_as_expired() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let now = Instant::now();

        let key = queue.insert_at("foo", now - ms(100));

        queue.reset_at(&key, now + ms(100));
        queue.reset_at(&key, now + ms(50));

        assert_pending!(poll!(queue));

        time::sleep_until(now + ms(60)).await;

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue)).into_inner();
        assert_eq!(entry, "foo");

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none());
    });
}

#[test]
fn remove_expired_item() {
    block_on(async {
        let mut queue = DelayQueue::new();

        let now = Instant::now();

        sleep(ms(10)).await;

        let key = queue.insert_at("foo", now);

        let entry = queue.remove(&key);
        assert_eq!(entry.into_inner(), "foo");
    });
}

/// Regression test: it should be possible to remove entries which fall in the
/// 0th slot of the internal timer wheel — that is, entries whose expiration
/// (a) falls at the beginning of one of the wheel's hierarchical levels and (b)
/// is equal to the wheel's current elapsed time.
#[test]
fn remove_at_timer_wheel_threshold() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        let key1 = queue.insert_at("foo", now + ms(64));
        let key2 = queue.insert_at("bar", now + ms(64));

        sleep(ms(80)).await;

        let entry = assert_ready_some!(poll!(queue)).into_inner();

        match entry {
            "foo" => {
                let entry = queue.remove(&key2).into_inner();
                assert_eq!(entry, "bar");
            }
            "bar" => {
                let entry = queue.remove(&key1).into_inner();
                assert_eq!(entry, "foo");
            }
            other => panic!("other: {other:?}"),
        }
    });
}

#[test]
fn multi_reset() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        let one = queue.insert_at("one", now + ms(200));
        let two = queue.insert_at("two", now + ms(250));

        assert_pending!(poll!(queue));

        queue.reset_at(&one, now + ms(300));
        queue.reset_at(&two, now + ms(350));
        queue.reset_at(&one, now + ms(400));

        sleep(ms(310)).await;

        assert_pending!(poll!(queue));

        sleep(ms(50)).await;

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(*entry.get_ref(), "two");

        assert_pending!(poll!(queue));

        sleep(ms(50)).await;

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(*entry.get_ref(), "one");

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none())
    });
}

#[test]
fn expire_first_key_when_reset_to_expire_earlier() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        let one = queue.insert_at("one", now + ms(200));
        queue.insert_at("two", now + ms(250));

        assert_pending!(poll!(queue));

        queue.reset_at(&one, now + ms(100));

        sleep(ms(100)).await;

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue)).into_inner();
        assert_eq!(entry, "one");
    });
}

#[test]
fn expire_second_key_when_reset_to_expire_earlier() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        queue.insert_at("one", now + ms(200));
        let two = queue.insert_at("two", now + ms(250));

        assert_pending!(poll!(queue));

        queue.reset_at(&two, now + ms(100));

        sleep(ms(100)).await;

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue)).into_inner();
        assert_eq!(entry, "two");
    });
}

#[test]
fn reset_first_expiring_item_to_expire_later() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        let one = queue.insert_at("one", now + ms(200));
        let _two = queue.insert_at("two", now + ms(250));

        assert_pending!(poll!(queue));

        queue.reset_at(&one, now + ms(300));
        sleep(ms(250)).await;

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue)).into_inner();
        assert_eq!(entry, "two");
    });
}

#[test]
fn reset_inserted_expired() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let now = Instant::now();

        let key = queue.insert_at("foo", now - ms(100));

        // this causes the panic described in #2473
        queue.reset_at(&key, now + ms(100));

        assert_eq!(1, queue.len());

        sleep(ms(200)).await;

        let entry = assert_ready_some!(poll!(queue)).into_inner();
        assert_eq!(entry, "foo");

        assert_eq!(queue.len(), 0);
    });
}

#[test]
fn insert_in_past_after_poll_fires_immediately() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        queue.insert_at("foo", now + ms(200));

        assert_pending!(poll!(queue));

        sleep(ms(80)).await;

        assert!(!queue.is_woken());
        queue.insert_at("bar", now + ms(40));

        assert!(queue.is_woken());

        let entry = assert_ready_some!(poll!(queue)).into_inner();
        assert_eq!(entry, "bar");
    });
}

#[test]
fn delay_queue_poll_expired_when_empty() {
    block_on(async {
        let mut delay_queue = task::spawn(DelayQueue::new());
        let key = delay_queue.insert(0, std::time::Duration::from_secs(10));
        assert_pending!(poll!(delay_queue));

        delay_queue.remove(&key);
        assert!(assert_ready!(poll!(delay_queue)).is_none());
    });
}

#[test]
fn compact_expire_empty() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        queue.insert_at("foo1", now + ms(10));
        queue.insert_at("foo2", now + ms(10));

        sleep(ms(10)).await;

        let mut res = vec![];
        while res.len() < 2 {
            let entry = assert_ready_some!(poll!(queue));
            res.push(entry.into_inner());
        }

        queue.compact();

        assert_eq!(queue.len(), 0);
        assert_eq!(queue.capacity(), 0);
    });
}

#[test]
fn compact_remove_empty() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        let key1 = queue.insert_at("foo1", now + ms(10));
        let key2 = queue.insert_at("foo2", now + ms(10));

        queue.remove(&key1);
        queue.remove(&key2);

        queue.compact();

        assert_eq!(queue.len(), 0);
        assert_eq!(queue.capacity(), 0);
    });
}

#[test]
fn compact_change_deadline() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let mut now = Instant::now();

        queue.insert_at("foo1", now + ms(10));
        queue.insert_at("foo2", now + ms(10));

        // should be assigned indices 3 and 4
        queue.insert_at("foo3", now + ms(20));
        let key4 = queue.insert_at("foo4", now + ms(20));

        sleep(ms(10)).await;

        let mut res = vec![];
        while res.len() < 2 {
            let entry = assert_ready_some!(poll!(queue));
            res.push(entry.into_inner());
        }

        // items corresponding to `foo3` and `foo4` should be assigned
        // new indices
        queue.compact();

        now = Instant::now();

        queue.insert_at("foo5", now + ms(10));
        let key6 = queue.insert_at("foo6", now + ms(10));

        queue.reset_at(&key4, now + ms(20));
        queue.reset_at(&key6, now + ms(20));

        // foo3 and foo5 will expire
        sleep(ms(10)).await;

        while res.len() < 4 {
            let entry = assert_ready_some!(poll!(queue));
            res.push(entry.into_inner());
        }

        sleep(ms(10)).await;

        while res.len() < 6 {
            let entry = assert_ready_some!(poll!(queue));
            res.push(entry.into_inner());
        }

        let entry = assert_ready!(poll!(queue));
        assert!(entry.is_none());
    });
}

#[cfg_attr(target_os = "wasi", ignore = "FIXME: Does not seem to work with WASI")]
#[test]
#[cfg(panic = "unwind")]
fn remove_after_compact() {
    block_on(async {
        let now = Instant::now();
        let mut queue = DelayQueue::new();

        let foo_key = queue.insert_at("foo", now + ms(10));
        queue.insert_at("bar", now + ms(20));
        queue.remove(&foo_key);
        queue.compact();

        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            queue.remove(&foo_key);
        }));
        assert!(panic.is_err());
    });
}

#[cfg_attr(target_os = "wasi", ignore = "FIXME: Does not seem to work with WASI")]
#[test]
#[cfg(panic = "unwind")]
fn remove_after_compact_poll() {
    block_on(async {
        let now = Instant::now();
        let mut queue = task::spawn(DelayQueue::new());

        let foo_key = queue.insert_at("foo", now + ms(10));
        queue.insert_at("bar", now + ms(20));

        sleep(ms(10)).await;
        assert_eq!(assert_ready_some!(poll!(queue)).key(), foo_key);

        queue.compact();

        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            queue.remove(&foo_key);
        }));
        assert!(panic.is_err());
    });
}

#[test]
fn peek() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        let key = queue.insert_at("foo", now + ms(5));
        let key2 = queue.insert_at("bar", now);
        let key3 = queue.insert_at("baz", now + ms(10));

        assert_eq!(queue.peek(), Some(key2));

        sleep(ms(6)).await;

        assert_eq!(queue.peek(), Some(key2));

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(entry.get_ref(), &"bar");

        assert_eq!(queue.peek(), Some(key));

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(entry.get_ref(), &"foo");

        assert_eq!(queue.peek(), Some(key3));

        assert_pending!(poll!(queue));

        sleep(ms(5)).await;

        assert_eq!(queue.peek(), Some(key3));

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(entry.get_ref(), &"baz");

        assert!(queue.peek().is_none());
    });
}

#[test]
fn peek_entries_sharing_a_wheel_slot() {
    block_on(async {
        // Only the lowest level of the timer wheel has one deadline per slot. A
        // level-one slot spans 64ms, so entries with different deadlines share it
        // and are only ordered once the slot cascades down.
        let mut queue = task::spawn(DelayQueue::new());

        let now = Instant::now();

        // 64ms..=127ms all fall in the same level-one slot. Entries are pushed onto
        // the front of a slot, so inserting the later deadline second puts it at the
        // head.
        let early = queue.insert_at("early", now + ms(100));
        let late = queue.insert_at("late", now + ms(120));

        assert_eq!(queue.peek(), Some(early));

        sleep(ms(105)).await;

        assert_eq!(queue.peek(), Some(early));

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(entry.key(), early);
        assert_eq!(entry.get_ref(), &"early");

        assert_eq!(queue.peek(), Some(late));

        sleep(ms(20)).await;

        let entry = assert_ready_some!(poll!(queue));
        assert_eq!(entry.key(), late);

        assert!(queue.peek().is_none());
    });
}

#[test]
fn wake_after_remove_last() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        let key = queue.insert("foo", ms(1000));

        assert_pending!(poll!(queue));

        queue.remove(&key);

        assert!(queue.is_woken());
        assert!(assert_ready!(poll!(queue)).is_none());
    });
}

#[test]
fn wake_after_clear() {
    block_on(async {
        let mut queue = task::spawn(DelayQueue::new());
        queue.insert("foo", ms(1000));

        assert_pending!(poll!(queue));
        assert!(!queue.is_woken());

        queue.clear();

        assert!(queue.is_woken());
        assert!(assert_ready!(poll!(queue)).is_none());
    });
}

/// tokio-util's `ms`, stretched ×10 (see the top of the file).
fn ms(n: u64) -> Duration {
    Duration::from_millis(n * 10)
}
