//! `DelayQueue` under paused time: every method, expiry order, wake-ups,
//! stale keys, resets earlier and later, clear / compact / shrink, far
//! deadlines and sub-millisecond ones.

use std::cell::RefCell;
use std::time::Duration;

use futures_util::StreamExt;
use hashwheel::delay_queue::{DelayQueue, Expired, Key};
use tokio::time::{advance, Instant};
use tokio_test::task::{self, Spawn};
use tokio_test::{assert_pending, assert_ready};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// Takes out one expired item; panics on `Pending` or the end of the queue.
fn next<T: std::fmt::Debug>(queue: &mut Spawn<DelayQueue<T>>) -> Expired<T> {
    assert_ready!(queue.poll_next()).expect("the queue ended")
}

/// Everything expired now, until `Pending` (or the end).
fn drain<T>(queue: &mut Spawn<DelayQueue<T>>) -> Vec<T> {
    let mut out = Vec::new();
    while let std::task::Poll::Ready(Some(e)) = queue.poll_next() {
        assert!(e.deadline() <= Instant::now(), "early");
        out.push(e.into_inner());
    }
    out
}

#[tokio::test(start_paused = true)]
async fn an_item_comes_out_at_its_deadline_and_not_before() {
    let mut queue = task::spawn(DelayQueue::new());
    let start = Instant::now();
    let key = queue.insert("a", ms(5));
    assert_eq!(queue.try_deadline(&key), Some(start + ms(5)));
    assert_pending!(queue.poll_next());

    advance(ms(4)).await;
    assert!(!queue.is_woken());
    assert_pending!(queue.poll_next());

    advance(ms(1)).await;
    assert!(queue.is_woken());
    let e = next(&mut queue);
    assert_eq!(
        (e.key(), e.deadline(), *e.get_ref()),
        (key, start + ms(5), "a")
    );
    assert_eq!(Instant::now(), start + ms(5));
    assert!(
        assert_ready!(queue.poll_next()).is_none(),
        "empty: the stream ends"
    );
}

#[tokio::test(start_paused = true)]
async fn items_come_out_in_deadline_order() {
    let mut queue = task::spawn(DelayQueue::new());
    for (value, delay) in [(3, 30), (1, 10), (5, 50_000), (2, 20), (4, 300)] {
        queue.insert(value, ms(delay));
    }
    assert_pending!(queue.poll_next());
    advance(ms(25)).await;
    assert!(queue.is_woken());
    assert_eq!(drain(&mut queue), [1, 2]);
    advance(ms(60_000)).await;
    assert_eq!(drain(&mut queue), [3, 4, 5]);
}

#[tokio::test(start_paused = true)]
async fn the_stream_yields_items_in_order_on_time() {
    let mut queue = DelayQueue::new();
    let start = Instant::now();
    for delay in [700u64, 5, 300, 1, 129, 128, 127, 131_072, 2_000] {
        queue.insert_at(delay, start + ms(delay));
    }
    let mut got = Vec::new();
    while let Some(e) = queue.next().await {
        assert_eq!(
            Instant::now(),
            start + ms(e.get_ref().to_owned()),
            "late or early"
        );
        got.push(e.into_inner());
    }
    assert_eq!(got, [1, 5, 127, 128, 129, 300, 700, 2_000, 131_072]);
}

#[tokio::test(start_paused = true)]
async fn past_deadlines_and_zero_delays_come_out_on_the_next_poll() {
    let mut queue = task::spawn(DelayQueue::new());
    advance(ms(100)).await;
    queue.insert("zero", Duration::ZERO);
    queue.insert_at("past", Instant::now() - ms(50));
    queue.insert_at("before the queue", Instant::now() - ms(500));
    let mut got = drain(&mut queue);
    got.sort();
    assert_eq!(got, ["before the queue", "past", "zero"]);
}

#[tokio::test(start_paused = true)]
async fn an_earlier_insert_wakes_the_task_a_later_one_does_not() {
    let mut queue = task::spawn(DelayQueue::new());
    queue.insert("late", ms(100));
    assert_pending!(queue.poll_next());
    queue.insert("later", ms(200));
    assert!(!queue.is_woken());
    queue.insert("early", ms(10));
    assert!(queue.is_woken());
    assert_pending!(queue.poll_next());
    advance(ms(10)).await;
    assert!(queue.is_woken());
    assert_eq!(drain(&mut queue), ["early"]);
}

#[tokio::test(start_paused = true)]
async fn an_insert_into_an_ended_stream_wakes_it() {
    let mut queue = task::spawn(DelayQueue::new());
    assert!(assert_ready!(queue.poll_next()).is_none());
    queue.insert("a", ms(3));
    assert!(queue.is_woken());
    assert_pending!(queue.poll_next());
    advance(ms(3)).await;
    assert_eq!(drain(&mut queue), ["a"]);
}

#[tokio::test(start_paused = true)]
async fn reset_earlier_wakes_and_fires_at_the_new_deadline() {
    let mut queue = task::spawn(DelayQueue::new());
    let start = Instant::now();
    let key = queue.insert("a", ms(100));
    assert_pending!(queue.poll_next());
    queue.reset(&key, ms(10));
    assert!(queue.is_woken());
    assert_eq!(queue.try_deadline(&key), Some(start + ms(10)));
    assert_pending!(queue.poll_next());
    advance(ms(10)).await;
    assert!(queue.is_woken());
    assert_eq!(next(&mut queue).key(), key);
}

#[tokio::test(start_paused = true)]
async fn reset_later_does_not_fire_at_the_old_deadline() {
    let mut queue = task::spawn(DelayQueue::new());
    let start = Instant::now();
    let key = queue.insert("a", ms(10));
    assert_pending!(queue.poll_next());
    queue.reset_at(&key, start + ms(50));
    advance(ms(10)).await;
    // Woken for the old deadline, perhaps; nothing comes out.
    assert_pending!(queue.poll_next());
    advance(ms(39)).await;
    assert_pending!(queue.poll_next());
    advance(ms(1)).await;
    assert!(queue.is_woken());
    assert_eq!(next(&mut queue).deadline(), start + ms(50));
}

#[tokio::test(start_paused = true)]
async fn a_due_item_reset_later_stays_in() {
    let mut queue = task::spawn(DelayQueue::new());
    let key = queue.insert("a", ms(10));
    advance(ms(20)).await;
    queue.reset(&key, ms(10)); // due, not yet polled out: moved on
    assert_pending!(queue.poll_next());
    advance(ms(10)).await;
    assert_eq!(drain(&mut queue), ["a"]);
}

#[tokio::test(start_paused = true)]
async fn a_reset_into_the_past_comes_out_on_the_next_poll() {
    let mut queue = task::spawn(DelayQueue::new());
    let key = queue.insert("a", ms(1000));
    assert_pending!(queue.poll_next());
    queue.reset_at(&key, Instant::now() - ms(1));
    assert!(queue.is_woken());
    assert_eq!(next(&mut queue).key(), key);
    let key = queue.insert("b", ms(1000));
    queue.reset(&key, Duration::ZERO);
    assert_eq!(drain(&mut queue), ["b"]);
}

#[tokio::test(start_paused = true)]
async fn removed_items_never_come_out() {
    let mut queue = task::spawn(DelayQueue::new());
    let start = Instant::now();
    let a = queue.insert("a", ms(5));
    let b = queue.insert("b", ms(5));
    let removed = queue.remove(&a);
    assert_eq!((removed.key(), removed.deadline()), (a, start + ms(5)));
    assert_eq!(removed.into_inner(), "a");
    assert_eq!(queue.try_remove(&a).map(Expired::into_inner), None);
    assert_eq!(queue.len(), 1);
    advance(ms(5)).await;
    assert_eq!(drain(&mut queue), ["b"]);
    assert!(queue.try_remove(&b).is_none(), "expired");
}

#[tokio::test(start_paused = true)]
async fn removing_the_last_item_wakes_the_stream_to_end_it() {
    // tokio#6751: a task waiting on the stream never saw it end.
    let mut queue = task::spawn(DelayQueue::new());
    let a = queue.insert("a", ms(100));
    let b = queue.insert("b", ms(200));
    assert_pending!(queue.poll_next());
    queue.remove(&a);
    assert!(!queue.is_woken());
    queue.remove(&b);
    assert!(queue.is_woken());
    assert!(assert_ready!(queue.poll_next()).is_none());
}

#[tokio::test(start_paused = true)]
async fn clear_wakes_ends_the_stream_and_keeps_the_capacity() {
    let mut queue = task::spawn(DelayQueue::with_capacity(16));
    let keys: Vec<Key> = (0..10).map(|i| queue.insert(i, ms(10 + i))).collect();
    assert_pending!(queue.poll_next());
    queue.clear();
    assert!(queue.is_woken());
    assert!(queue.is_empty() && queue.capacity() >= 16);
    assert!(assert_ready!(queue.poll_next()).is_none());
    for key in &keys {
        assert!(queue.try_deadline(key).is_none());
    }
    advance(ms(100)).await;
    assert!(assert_ready!(queue.poll_next()).is_none());
}

#[tokio::test(start_paused = true)]
async fn stale_keys_never_touch_the_item_that_reuses_their_slot() {
    let mut queue = task::spawn(DelayQueue::new());
    let removed = queue.insert("removed", ms(5));
    queue.remove(&removed);
    let reuser = queue.insert("reuser", ms(5));
    assert_ne!(removed, reuser);
    assert!(queue.try_remove(&removed).is_none());
    assert!(queue.try_deadline(&removed).is_none());

    advance(ms(5)).await;
    let expired = next(&mut queue).key();
    assert_eq!(expired, reuser);
    let reuser2 = queue.insert("reuser2", ms(5));
    assert!(queue.try_remove(&expired).is_none());

    let mut other = DelayQueue::new();
    let foreign = other.insert("foreign", ms(5));
    assert!(queue.try_remove(&foreign).is_none());
    assert!(queue.try_deadline(&foreign).is_none());
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.remove(&reuser2).into_inner(), "reuser2");
    assert_eq!(other.remove(&foreign).into_inner(), "foreign");
}

/// Runs `f`, which must panic, and returns the file its panic points at.
fn panic_location(f: impl FnOnce() + std::panic::UnwindSafe) -> (String, String) {
    thread_local! {
        static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let file = info.location().map(|l| l.file().to_string());
        LOCATION.with(|l| *l.borrow_mut() = file);
    }));
    let payload = std::panic::catch_unwind(f).expect_err("no panic");
    std::panic::set_hook(previous);
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    (
        LOCATION.with(|l| l.borrow_mut().take()).unwrap_or_default(),
        message,
    )
}

#[test]
fn remove_reset_and_deadline_with_a_stale_key_panic_at_the_caller() {
    // No runtime needed: inserts, removals and resets never touch tokio's timer.
    let mut queue = DelayQueue::new();
    let key = queue.insert("a", ms(5));
    queue.remove(&key);
    let mut q = std::panic::AssertUnwindSafe(&mut queue);
    let (file, message) = panic_location(move || {
        q.remove(&key);
    });
    assert!(
        file.ends_with("delay_queue.rs") && file.contains("tests"),
        "{file}"
    );
    assert!(
        message.contains("DelayQueue::remove with a key that names no item"),
        "{message}"
    );

    let mut q = std::panic::AssertUnwindSafe(&mut queue);
    let (file, message) = panic_location(move || q.reset(&key, ms(1)));
    assert!(file.contains("tests"), "{file}");
    assert!(
        message.contains("DelayQueue::reset with a key"),
        "{message}"
    );

    let mut q = std::panic::AssertUnwindSafe(&mut queue);
    let (_, message) = panic_location(move || q.reset_at(&key, Instant::now()));
    assert!(
        message.contains("DelayQueue::reset_at with a key"),
        "{message}"
    );

    // `deadline` panics as tokio-util's does; `try_deadline` says `None`.
    let q = std::panic::AssertUnwindSafe(&mut queue);
    let (file, message) = panic_location(move || {
        let _ = q.deadline(&key);
    });
    assert!(file.contains("tests"), "{file}");
    assert!(
        message.contains("DelayQueue::deadline with a key that names no item"),
        "{message}"
    );
    assert_eq!(queue.try_deadline(&key), None);
    assert!(queue.is_empty());
}

#[test]
fn keys_debug_like_tokio_util() {
    let mut queue = DelayQueue::new();
    let key = queue.insert((), ms(5));
    assert_eq!(format!("{key:?}"), "Key { index: 0 }");
    let key = queue.insert((), ms(5));
    assert_eq!(format!("{key:?}"), "Key { index: 1 }");
}

#[tokio::test(start_paused = true)]
async fn peek_names_the_next_item_out() {
    let mut queue = task::spawn(DelayQueue::new());
    assert_eq!(queue.peek(), None);
    let mut seed = 0x2545_f491_u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..30 {
        // Ties and far items: 0–400 ms in whole milliseconds, some minutes away.
        for i in 0..20 {
            let delay = if i % 7 == 0 {
                ms(rand() % 400_000)
            } else {
                ms(rand() % 400)
            };
            queue.insert((round, i), delay);
        }
        advance(ms(rand() % 500)).await;
        loop {
            let peeked = queue.peek();
            match queue.poll_next() {
                std::task::Poll::Ready(Some(e)) => assert_eq!(peeked, Some(e.key())),
                _ => break,
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn compact_and_shrink_keep_keys_and_give_memory_back() {
    let mut queue = task::spawn(DelayQueue::with_capacity(10));
    assert_eq!(queue.capacity(), 10);
    let start = Instant::now();
    let keys: Vec<Key> = (0..10u64)
        .map(|i| queue.insert(i, ms(10 * (i + 1))))
        .collect();
    for key in &keys[..7] {
        queue.remove(key);
    }
    queue.compact();
    assert_eq!((queue.len(), queue.capacity()), (3, 3));
    for (i, key) in keys.iter().enumerate().skip(7) {
        assert_eq!(
            queue.try_deadline(key),
            Some(start + ms(10 * (i as u64 + 1)))
        );
    }
    queue.reset(&keys[9], ms(75));
    advance(ms(100)).await;
    let got: Vec<(Key, u64)> = std::iter::from_fn(|| match queue.poll_next() {
        std::task::Poll::Ready(Some(e)) => Some((e.key(), e.into_inner())),
        _ => None,
    })
    .collect();
    assert_eq!(got, [(keys[9], 9), (keys[7], 7), (keys[8], 8)]);
    queue.shrink_to_fit();
    assert_eq!(queue.capacity(), 0);
    queue.reserve(5);
    assert!(queue.capacity() >= 5);
}

#[tokio::test(start_paused = true)]
async fn deadlines_years_away_come_out_on_time_and_max_is_the_far_future() {
    let mut queue = task::spawn(DelayQueue::new());
    let start = Instant::now();
    let far = queue.insert("ten years", 10 * YEAR);
    // `Duration::MAX` is tokio's far future, about 30 years out, as
    // `Timer::sleep`'s (issue 43: it was 2.3e15 s, "never").
    let max = queue.insert("max", Duration::MAX);
    queue.insert("soon", ms(1));
    assert_eq!(queue.try_deadline(&far), Some(start + 10 * YEAR));
    let thirty = Duration::from_secs(86_400 * 365 * 30);
    let max_at = queue.try_deadline(&max).unwrap();
    assert!(max_at >= start + thirty && max_at <= start + thirty + ms(1));
    advance(ms(1)).await;
    assert_eq!(drain(&mut queue), ["soon"]);
    advance(10 * YEAR - ms(2)).await;
    assert_pending!(queue.poll_next());
    advance(ms(1)).await;
    assert!(queue.is_woken());
    assert_eq!(drain(&mut queue), ["ten years"]);
    advance(max_at - Instant::now() - ms(1)).await;
    assert_pending!(queue.poll_next());
    assert_eq!(queue.len(), 1);
    advance(ms(1)).await;
    assert_eq!(drain(&mut queue), ["max"]);
}

/// Deadlines round up to the millisecond, as tokio-util's: an item due
/// 300 µs out reports, and comes out at, the next millisecond (issue 56:
/// the queue is tokio-util's wheel, in its milliseconds; it rounded to
/// 125 µs before).
#[tokio::test(start_paused = true)]
async fn sub_millisecond_deadlines_round_up_to_the_millisecond() {
    let mut queue = task::spawn(DelayQueue::new());
    let start = Instant::now();
    let key = queue.insert("a", Duration::from_micros(300));
    assert_eq!(queue.try_deadline(&key), Some(start + ms(1)));
    assert_pending!(queue.poll_next());
    advance(Duration::from_micros(999)).await;
    assert_pending!(queue.poll_next());
    advance(Duration::from_micros(1)).await;
    assert_eq!(drain(&mut queue), ["a"]);
}

#[test]
fn queues_and_keys_are_plain_data() {
    fn send_sync_unpin<T: Send + Sync + Unpin>() {}
    send_sync_unpin::<DelayQueue<String>>();
    send_sync_unpin::<Key>();
    send_sync_unpin::<Expired<String>>();
    // Unpin whatever the value is.
    fn unpin<T: Unpin>() {}
    unpin::<DelayQueue<std::marker::PhantomPinned>>();
    let mut queue = DelayQueue::default();
    let key = queue.insert(1, ms(5));
    assert!(format!("{queue:?}").contains("len: 1"));
    assert!(format!("{key:?}").starts_with("Key"));
    // A 64-bit generation (tokio-util's key is 8 bytes, an index alone).
    assert_eq!(std::mem::size_of::<Key>(), 12);
}

/// Polled outside a tokio runtime, after an insert that needed none, the
/// queue says what it is and what to use instead (tokio's own panic, "there
/// is no reactor running", named neither).
#[test]
#[should_panic(
    expected = "hashwheel::DelayQueue polled outside a tokio runtime: it waits on tokio's timer"
)]
fn polled_outside_a_runtime_panics_naming_the_queue_and_its_executor_free_twin() {
    let mut queue = DelayQueue::new();
    queue.insert("a", Duration::from_secs(1));
    let _ = futures::executor::block_on(queue.next());
}

/// Issue 43: an item inserted with a zero delay, or a deadline already
/// past within the millisecond that has begun, comes out on the first
/// poll, with no alarm (it was rounded up to the queue's next tick:
/// outside a runtime that poll panicked for want of tokio's timer, where an
/// item 5 ms old came out); and a delay of `Duration::MAX` is capped about 30
/// years out, as `Timer::sleep`'s, not 2.3e15 s.
#[test]
fn an_item_due_when_inserted_comes_out_at_once_and_max_is_thirty_years() {
    use std::task::{Context, Poll};
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut queue = hashwheel::DelayQueue::new();
    queue.insert("zero", Duration::ZERO);
    queue.insert_at("just past", tokio::time::Instant::now());
    let mut out = Vec::new();
    while let Poll::Ready(Some(item)) = queue.poll_expired(&mut cx) {
        out.push(item.into_inner());
    }
    out.sort();
    assert_eq!(out, ["just past", "zero"]);
    let far = queue.insert("far", Duration::MAX);
    let thirty_years = Duration::from_secs(86_400 * 365 * 30);
    let left = queue.deadline(&far) - tokio::time::Instant::now();
    assert!(
        left >= thirty_years && left <= thirty_years + Duration::from_millis(1),
        "{left:?}"
    );
}
