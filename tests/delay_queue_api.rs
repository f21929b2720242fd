//! tokio-util 0.7's whole `DelayQueue`, `Expired` and `Key` API, written out
//! as function-pointer types the way a user's code names them, against
//! `hashwheel::DelayQueue`: any drift (a method renamed, a signature
//! changed, a trait dropped) fails to compile here. Taken from tokio-util
//! 0.7.20's `time/delay_queue.rs`; only the `use` line differs.

use std::fmt::Debug;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::time::Instant;

// tokio-util: `use tokio_util::time::delay_queue::{DelayQueue, Expired, Key};`
use hashwheel::delay_queue::{DelayQueue, Expired, Key};

type T = String;

/// Every inherent method of tokio-util's `DelayQueue<T>`, with its exact
/// signature.
#[allow(clippy::type_complexity)]
struct DelayQueueApi {
    new: fn() -> DelayQueue<T>,
    with_capacity: fn(usize) -> DelayQueue<T>,
    insert_at: fn(&mut DelayQueue<T>, T, Instant) -> Key,
    poll_expired: fn(&mut DelayQueue<T>, &mut Context<'_>) -> Poll<Option<Expired<T>>>,
    insert: fn(&mut DelayQueue<T>, T, Duration) -> Key,
    deadline: fn(&DelayQueue<T>, &Key) -> Instant,
    remove: fn(&mut DelayQueue<T>, &Key) -> Expired<T>,
    try_remove: fn(&mut DelayQueue<T>, &Key) -> Option<Expired<T>>,
    reset_at: fn(&mut DelayQueue<T>, &Key, Instant),
    shrink_to_fit: fn(&mut DelayQueue<T>),
    compact: fn(&mut DelayQueue<T>),
    peek: fn(&DelayQueue<T>) -> Option<Key>,
    reset: fn(&mut DelayQueue<T>, &Key, Duration),
    clear: fn(&mut DelayQueue<T>),
    capacity: fn(&DelayQueue<T>) -> usize,
    len: fn(&DelayQueue<T>) -> usize,
    reserve: fn(&mut DelayQueue<T>, usize),
    is_empty: fn(&DelayQueue<T>) -> bool,
    // Traits: `Default`, `Stream<Item = Expired<T>>`.
    default: fn() -> DelayQueue<T>,
    poll_next: fn(Pin<&mut DelayQueue<T>>, &mut Context<'_>) -> Poll<Option<Expired<T>>>,
}

/// Every method of tokio-util's `Expired<T>`.
struct ExpiredApi {
    get_ref: fn(&Expired<T>) -> &T,
    get_mut: fn(&mut Expired<T>) -> &mut T,
    into_inner: fn(Expired<T>) -> T,
    deadline: fn(&Expired<T>) -> Instant,
    key: fn(&Expired<T>) -> Key,
}

const DELAY_QUEUE: DelayQueueApi = DelayQueueApi {
    new: DelayQueue::new,
    with_capacity: DelayQueue::with_capacity,
    insert_at: DelayQueue::insert_at,
    poll_expired: DelayQueue::poll_expired,
    insert: DelayQueue::insert,
    deadline: DelayQueue::deadline,
    remove: DelayQueue::remove,
    try_remove: DelayQueue::try_remove,
    reset_at: DelayQueue::reset_at,
    shrink_to_fit: DelayQueue::shrink_to_fit,
    compact: DelayQueue::compact,
    peek: DelayQueue::peek,
    reset: DelayQueue::reset,
    clear: DelayQueue::clear,
    capacity: DelayQueue::capacity,
    len: DelayQueue::len,
    reserve: DelayQueue::reserve,
    is_empty: DelayQueue::is_empty,
    default: <DelayQueue<T> as Default>::default,
    poll_next: <DelayQueue<T> as Stream>::poll_next,
};

const EXPIRED: ExpiredApi = ExpiredApi {
    get_ref: Expired::get_ref,
    get_mut: Expired::get_mut,
    into_inner: Expired::into_inner,
    deadline: Expired::deadline,
    key: Expired::key,
};

/// The traits tokio-util's types implement (auto traits included).
fn traits() {
    fn delay_queue<Q: Debug + Default + Unpin + Send + Sync + Stream<Item = Expired<T>>>() {}
    fn expired<E: Debug + Send + Sync + Unpin>() {}
    fn key<K: Debug + Clone + Copy + PartialEq + Eq + Hash + Send + Sync + Unpin + 'static>() {}
    // tokio-util's `DelayQueue<T>` is `Unpin` whatever `T` is.
    fn unpin<Q: Unpin>() {}
    delay_queue::<DelayQueue<T>>();
    expired::<Expired<T>>();
    key::<Key>();
    unpin::<DelayQueue<std::marker::PhantomPinned>>();
}

#[tokio::test(start_paused = true)]
async fn tokio_util_api_through_function_pointers() {
    traits();
    let d = &DELAY_QUEUE;
    let e = &EXPIRED;
    let mut queue = (d.with_capacity)(4);
    assert!((d.capacity)(&queue) >= 4);
    let a = (d.insert)(&mut queue, "a".into(), Duration::from_millis(10));
    let b = (d.insert_at)(
        &mut queue,
        "b".into(),
        Instant::now() + Duration::from_millis(5),
    );
    assert_eq!((d.len)(&queue), 2);
    assert_eq!((d.peek)(&queue), Some(b));
    assert!((d.deadline)(&queue, &b) < (d.deadline)(&queue, &a));
    (d.reset)(&mut queue, &a, Duration::from_millis(1));
    (d.reset_at)(&mut queue, &b, Instant::now() + Duration::from_millis(2));
    let mut first = std::future::poll_fn(|cx| (d.poll_expired)(&mut queue, cx))
        .await
        .unwrap();
    assert_eq!((e.key)(&first), a);
    (e.get_mut)(&mut first).push('!');
    assert_eq!((e.get_ref)(&first), "a!");
    assert!((e.deadline)(&first) <= Instant::now());
    assert_eq!((e.into_inner)(first), "a!");
    let second = std::future::poll_fn(|cx| (d.poll_next)(Pin::new(&mut queue), cx))
        .await
        .unwrap();
    assert_eq!(second.into_inner(), "b");
    let c = (d.insert)(&mut queue, "c".into(), Duration::from_secs(1));
    assert_eq!((d.remove)(&mut queue, &c).into_inner(), "c");
    assert!((d.try_remove)(&mut queue, &c).is_none());
    (d.insert)(&mut queue, "d".into(), Duration::from_secs(1));
    (d.reserve)(&mut queue, 10);
    (d.compact)(&mut queue);
    (d.shrink_to_fit)(&mut queue);
    (d.clear)(&mut queue);
    assert!((d.is_empty)(&queue));
    assert!((d.is_empty)(&(d.new)()) && (d.is_empty)(&(d.default)()));
}
