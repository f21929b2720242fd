//! The public wheel (`hashwheel::wheel`), with no clock and no runtime:
//! order and timing of `poll`, ticks already polled, stale keys, resets,
//! the horizon, `next_tick`, `peek`, `compact` and capacity.
//!
//! These tests use nothing but the wheel, so they also run against the
//! crate built without tokio (`cargo test --no-default-features --lib --test wheel`).

use hashwheel::wheel::{Expired, Key, Wheel, MAX_TICK};

fn drain<T>(wheel: &mut Wheel<T>, now: u64) -> Vec<Expired<T>> {
    std::iter::from_fn(|| wheel.poll(now)).collect()
}

fn values<T>(expired: Vec<Expired<T>>) -> Vec<T> {
    expired.into_iter().map(|e| e.value).collect()
}

#[test]
fn entries_come_out_at_their_tick_in_order_never_early() {
    let mut wheel = Wheel::with_shape(4, 2);
    for tick in [9u64, 1, 4, 3, 100, 8, 17, 5] {
        wheel.insert(tick, tick);
    }
    for now in 0..=120 {
        for e in drain(&mut wheel, now) {
            assert_eq!(e.tick, now, "taken out at the wrong tick");
            assert_eq!(e.value, now);
        }
    }
    assert!(wheel.is_empty());
}

#[test]
fn a_jump_takes_everything_due_in_tick_order() {
    let mut wheel = Wheel::with_shape(4, 4);
    for tick in [50u64, 3, 1000, 7, 16, 64, 65, 0] {
        wheel.insert(tick, tick);
    }
    assert_eq!(values(drain(&mut wheel, 999)), [0, 3, 7, 16, 50, 64, 65]);
    assert_eq!(values(drain(&mut wheel, 5000)), [1000]);
    assert_eq!(wheel.next_tick(), None);
}

#[test]
fn tick_zero_is_not_due_before_the_first_poll() {
    let mut wheel = Wheel::new();
    let key = wheel.insert(0, "zero");
    assert_eq!(wheel.next_tick(), Some(0));
    let e = wheel.poll(0).unwrap();
    assert_eq!((e.key, e.tick, e.value), (key, 0, "zero"));
}

#[test]
fn a_tick_already_polled_is_due_at_once() {
    let mut wheel = Wheel::new();
    wheel.insert(20, "later");
    assert!(drain(&mut wheel, 10).is_empty());
    let past = wheel.insert(3, "past");
    let now = wheel.insert(10, "now");
    // Due at once: `next_tick` says so, and a poll at the same tick (or an
    // earlier one) takes them out, with the tick they were inserted at.
    assert_eq!(wheel.next_tick(), Some(10));
    let mut got: Vec<_> = drain(&mut wheel, 5)
        .into_iter()
        .map(|e| (e.key, e.tick))
        .collect();
    got.sort();
    let mut want = vec![(past, 3), (now, 10)];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(wheel.next_tick(), Some(20));

    // A reset into the past is due at once too.
    let key = wheel.insert(500, "reset");
    assert!(wheel.reset(key, 1));
    assert_eq!(wheel.poll(10).map(|e| e.key), Some(key));
}

#[test]
fn reset_earlier_and_later() {
    let mut wheel = Wheel::with_shape(8, 8);
    let a = wheel.insert(5, 'a');
    let b = wheel.insert(300, 'b');
    assert!(wheel.reset(a, 400)); // later, into the ring
    assert!(wheel.reset(b, 6)); // earlier, into a bucket
    assert_eq!(wheel.tick(a), Some(400));
    assert_eq!(values(drain(&mut wheel, 10)), ['b']);
    assert!(wheel.reset(a, 11)); // from the ring to the next tick
    assert_eq!(wheel.next_tick(), Some(11));
    assert_eq!(values(drain(&mut wheel, 11)), ['a']);
}

#[test]
fn stale_keys_never_touch_the_entry_that_reuses_their_slot() {
    let mut wheel = Wheel::new();
    let removed = wheel.insert(5, "removed");
    assert_eq!(wheel.remove(removed), Some("removed"));
    let reuser = wheel.insert(5, "reuser");
    assert_ne!(removed, reuser);

    assert!(!wheel.contains(removed));
    assert_eq!(wheel.get(removed), None);
    assert_eq!(wheel.get_mut(removed), None);
    assert_eq!(wheel.tick(removed), None);
    assert!(!wheel.reset(removed, 1));
    assert_eq!(wheel.remove(removed), None);

    // Polled out, then the slot is reused.
    let polled = wheel.poll(5).unwrap().key;
    let reuser2 = wheel.insert(7, "reuser2");
    assert!(!wheel.contains(polled) && wheel.remove(polled).is_none());

    // A key of another wheel with the same slot number.
    let mut other = Wheel::new();
    let foreign = other.insert(7, "foreign");
    assert!(!wheel.contains(foreign));
    assert_eq!(wheel.remove(foreign), None);

    // Cleared.
    wheel.clear();
    assert!(!wheel.contains(reuser2));
    let fresh = wheel.insert(1, "fresh");
    assert_eq!(wheel.remove(reuser2), None);
    assert_eq!(wheel.remove(fresh), Some("fresh"));
    assert_eq!(other.remove(foreign), Some("foreign"));
}

/// Regression: generations came from one process-wide 32-bit counter in
/// blocks of 4,096 per wheel, so it wrapped after 2^20 wheels that inserted
/// at least once (a `DelayQueue` per connection gets there within a day),
/// and a stale key then reached a live item of its own queue or another.
/// Wheels of one bucket and one ring slot make this cheap.
#[test]
fn keys_stay_unique_across_more_than_a_million_wheels() {
    let mut first = Wheel::with_shape(1, 1);
    let stale = first.insert(5, "removed");
    assert_eq!(first.remove(stale), Some("removed"));

    const WHEELS: usize = (1 << 20) + (1 << 13);
    let mut keys = std::collections::HashSet::with_capacity(WHEELS);
    for _ in 0..WHEELS {
        // A queue per connection: an item or two, the slot reused.
        let mut wheel = Wheel::with_shape(1, 1);
        let gone = wheel.insert(1, ());
        wheel.remove(gone);
        let live = wheel.insert(1, ());
        assert!(!wheel.contains(gone) && !wheel.contains(stale));
        assert!(!first.contains(live));
        assert!(keys.insert(live), "a key handed out twice: {live:?}");
    }
    assert!(!keys.contains(&stale));

    // The first wheel's slot, reused many times over: the stale key reaches
    // none of its new entries.
    for _ in 0..(1 << 13) {
        let live = first.insert(5, "live");
        assert!(first.remove(stale).is_none());
        assert!(!keys.contains(&live));
        assert_eq!(first.remove(live), Some("live"));
    }
}

#[test]
fn entries_of_one_tick_come_out_last_in_first_out() {
    let mut wheel = Wheel::new();
    for value in ["a", "b", "c"] {
        wheel.insert(5, value);
    }
    let c = wheel.peek().unwrap();
    assert_eq!(wheel.get(c), Some(&"c"));
    assert_eq!(values(drain(&mut wheel, 5)), ["c", "b", "a"]);
}

#[test]
fn clear_keeps_the_cursor_and_elapsed_reads_it() {
    let mut wheel = Wheel::new();
    assert_eq!(wheel.elapsed(), None);
    wheel.insert(3, "a");
    assert!(drain(&mut wheel, 1_000).len() == 1);
    assert_eq!(wheel.elapsed(), Some(1_000));
    wheel.clear();
    assert_eq!(wheel.elapsed(), Some(1_000));
    // Tick 500 has been polled: due at once, whatever tick is polled next.
    wheel.insert(500, "b");
    wheel.insert(2_000, "c");
    assert_eq!(values(drain(&mut wheel, 10)), ["b"]);
    assert_eq!(
        wheel.elapsed(),
        Some(1_000),
        "a `now` below it polls it again"
    );
}

#[test]
fn next_tick_wakes_early_and_empty_for_entries_past_the_ring() {
    // 4 buckets × 4 ring slots: entries more than 16 ticks away share ring
    // slots with nearer turns.
    let mut wheel = Wheel::with_shape(4, 4);
    wheel.insert(100, "far");
    let mut early_wakes = 0;
    loop {
        let next = wheel.next_tick().unwrap();
        assert!(next <= 100, "never late");
        let due = drain(&mut wheel, next);
        if !due.is_empty() {
            assert_eq!((next, values(due)), (100, vec!["far"]));
            break;
        }
        early_wakes += 1;
        assert!(
            early_wakes < 100 / 16 + 2,
            "about once per turn of the ring"
        );
    }
    assert!(early_wakes >= 1, "woke early at least once");
}

#[test]
fn ticks_past_the_horizon_never_come_due() {
    let mut wheel = Wheel::new();
    let never = wheel.insert(u64::MAX, "never");
    let last = wheel.insert(MAX_TICK, "last");
    assert_eq!(wheel.tick(never), Some(u64::MAX));
    assert_eq!(wheel.tick(last), Some(MAX_TICK));
    assert_eq!(wheel.next_tick().map(|t| t <= MAX_TICK), Some(true));
    assert_eq!(values(drain(&mut wheel, MAX_TICK - 1)), Vec::<&str>::new());
    assert_eq!(values(drain(&mut wheel, u64::MAX)), ["last"]);
    assert_eq!(wheel.next_tick(), None);
    assert_eq!(wheel.peek(), Some(never));
    assert_eq!(wheel.remove(never), Some("never"));
}

#[test]
fn a_jump_of_years_over_far_entries_is_quick() {
    // 2^40 ticks is 35 years of milliseconds; the ring is tiny.
    let mut wheel = Wheel::with_shape(2, 2);
    let far = 1u64 << 40;
    for i in 0..100 {
        wheel.insert(far + i * (1 << 30), i);
    }
    wheel.insert(3, 1000);
    assert_eq!(values(drain(&mut wheel, 10)), [1000]);
    assert_eq!(drain(&mut wheel, far + 99 * (1 << 30)).len(), 100);
}

#[test]
fn next_tick_is_exact_in_the_current_turn_and_never_late() {
    let mut wheel = Wheel::with_shape(16, 16);
    wheel.insert(7, ());
    assert_eq!(wheel.next_tick(), Some(7));
    drain(&mut wheel, 7);
    assert_eq!(wheel.next_tick(), None);
    // Several turns of the ring away: the start of a turn at the latest.
    let far = 16 * 16 * 3 + 5;
    wheel.insert(far, ());
    let mut now = 7;
    let mut wakeups = 0;
    while let Some(next) = wheel.next_tick() {
        assert!(next > now && next <= far);
        now = next;
        wakeups += 1;
        drain(&mut wheel, now);
    }
    assert_eq!(now, far);
    assert!(wakeups <= 5, "{wakeups} wake-ups for one far entry");
}

#[test]
fn peek_names_what_poll_takes_out_next() {
    let mut wheel = Wheel::with_shape(4, 4);
    let mut seed = 7u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut now = 0;
    for _ in 0..2000 {
        match rand() % 4 {
            0 | 1 => {
                // Many ties, near and a few turns of the ring away.
                wheel.insert(now + rand() % 80, ());
            }
            2 => {
                if let Some(key) = wheel.peek() {
                    assert!(wheel.reset(key, now + rand() % 80));
                }
            }
            _ => {
                now += rand() % 20;
                loop {
                    let peeked = wheel.peek();
                    let Some(e) = wheel.poll(now) else { break };
                    assert_eq!(peeked, Some(e.key));
                }
            }
        }
    }
}

#[test]
fn compact_keeps_every_key_and_gives_memory_back() {
    let mut wheel = Wheel::new();
    let keys: Vec<Key> = (0..100).map(|i| wheel.insert(1000 + i, i)).collect();
    for &key in keys.iter().step_by(2) {
        wheel.remove(key);
    }
    wheel.compact();
    assert_eq!(wheel.capacity(), 50);
    let live: Vec<Key> = keys.iter().copied().skip(1).step_by(2).collect();
    for (i, &key) in live.iter().enumerate() {
        assert_eq!(wheel.get(key), Some(&(2 * i as u64 + 1)));
        assert_eq!(wheel.tick(key), Some(1001 + 2 * i as u64));
    }
    // New entries, then a second compact: old and new keys still work.
    let new = wheel.insert(5, 500);
    wheel.remove(live[0]);
    wheel.remove(live[49]);
    wheel.compact();
    assert_eq!(wheel.capacity(), 49);
    assert_eq!(wheel.poll(5).map(|e| (e.key, e.value)), Some((new, 500)));
    assert!(wheel.reset(live[1], 6));
    // Polled entries come out under the key handed out at insert.
    assert_eq!(wheel.poll(6).map(|e| e.key), Some(live[1]));
    let rest: Vec<Key> = drain(&mut wheel, 5000).into_iter().map(|e| e.key).collect();
    assert_eq!(rest, live[2..49]);
    for key in keys {
        assert!(!wheel.contains(key));
    }
}

#[test]
fn capacity_reserve_and_shrink() {
    let mut wheel: Wheel<u64> = Wheel::new();
    assert_eq!(wheel.capacity(), 0);
    wheel.reserve(64);
    assert!(wheel.capacity() >= 64);
    let keys: Vec<Key> = (0..64).map(|i| wheel.insert(i, i)).collect();
    assert_eq!(wheel.len(), 64);
    for key in keys {
        wheel.remove(key);
    }
    wheel.shrink_to_fit();
    assert_eq!(wheel.capacity(), 0);
}

#[test]
#[should_panic(expected = "powers of two")]
fn a_shape_that_is_not_a_power_of_two_panics() {
    let _ = Wheel::<()>::with_shape(100, 64);
}

#[test]
fn keys_and_wheels_are_plain_data() {
    fn send_sync<T: Send + Sync + Unpin>() {}
    send_sync::<Wheel<String>>();
    send_sync::<Key>();
    send_sync::<Expired<String>>();
    let mut wheel = Wheel::new();
    let key = wheel.insert(1, "a");
    assert!(format!("{wheel:?}").contains("len: 1"));
    assert!(format!("{key:?}").starts_with("Key"));
    assert_eq!(Wheel::<()>::default().len(), 0);
}
