//! An expiring cache: values in a `HashMap`, their expiry in a
//! `DelayQueue`, with the time to live reset on every read. It is written
//! against tokio-util's `DelayQueue` API: with
//! `use tokio_util::time::delay_queue::{DelayQueue, Key};` in place of the
//! `hashwheel` line it compiles and runs the same.
//!
//! One task serves 2,000 requests a second for 2 s: most are reads of a few
//! hot keys, which stay cached because every read resets their 200 ms TTL;
//! some go to many cold keys, which are fetched on a miss and expire
//! unread; one in twenty is a write, which replaces the value and its
//! expiry (removing the old one from the queue). The same task drains the
//! queue's stream of expired keys. It prints the hit, miss, write and expiry
//! counts every half second, then exits.
//!
//! ```text
//! cargo run --example ttl_cache
//! ```

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use hashwheel::delay_queue::{DelayQueue, Expired, Key};
use tokio::time::{interval, sleep, Instant, MissedTickBehavior};

const TTL: Duration = Duration::from_millis(200);
const HOT_KEYS: u64 = 20;
const COLD_KEYS: u64 = 5_000;

#[derive(Default)]
struct Stats {
    hits: u64,
    misses: u64,
    writes: u64,
    expired: u64,
}

/// Values by key, and when each expires.
struct Cache {
    entries: HashMap<u64, (String, Key)>,
    expirations: DelayQueue<u64>,
    stats: Stats,
}

impl Cache {
    fn new() -> Cache {
        Cache {
            entries: HashMap::new(),
            expirations: DelayQueue::new(),
            stats: Stats::default(),
        }
    }

    /// A read: a hit resets the key's TTL.
    fn get(&mut self, key: u64) -> Option<&str> {
        let (value, expiry) = self.entries.get(&key)?;
        self.expirations.reset(expiry, TTL);
        Some(value)
    }

    /// A write: the new value gets a fresh TTL, and the old expiry leaves
    /// the queue.
    fn insert(&mut self, key: u64, value: String) {
        let expiry = self.expirations.insert(key, TTL);
        if let Some((_, old)) = self.entries.insert(key, (value, expiry)) {
            let removed = self.expirations.remove(&old);
            assert_eq!(*removed.get_ref(), key);
        }
    }

    /// Serves a read of `key`, fetching the value on a miss.
    fn read(&mut self, key: u64) {
        if self.get(key).is_some() {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
            self.insert(key, format!("value of {key}"));
        }
    }

    /// Serves a write of `key`.
    fn write(&mut self, key: u64) {
        self.stats.writes += 1;
        self.insert(key, format!("value {} of {key}", self.stats.writes));
    }

    fn expire(&mut self, expired: Expired<u64>) {
        let key = *expired.get_ref();
        let (_, expiry) = self
            .entries
            .remove(&key)
            .expect("an expiry without its entry");
        // A write removes the old expiry, so what comes out is the latest.
        assert_eq!(expiry, expired.key());
        self.stats.expired += 1;
    }
}

/// xorshift64*: a small deterministic workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 80% of requests go to the hot keys; one in twenty is a write.
    fn request(&mut self) -> (u64, bool) {
        let n = self.next();
        let key = if n % 10 < 8 {
            n / 10 % HOT_KEYS
        } else {
            HOT_KEYS + n / 10 % COLD_KEYS
        };
        (key, n / 100_000 % 20 == 0)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let start = Instant::now();
    let mut cache = Cache::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Two requests a millisecond (tokio's timer resolution).
    let mut reads = interval(Duration::from_millis(1));
    reads.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut report = interval(Duration::from_millis(500));
    report.tick().await;
    let end = sleep(Duration::from_secs(2));
    tokio::pin!(end);

    println!("  time   hits  misses  writes  expired  cached");
    loop {
        tokio::select! {
            _ = reads.tick() => {
                for _ in 0..2 {
                    match rng.request() {
                        (key, true) => cache.write(key),
                        (key, false) => cache.read(key),
                    }
                }
            }
            Some(expired) = cache.expirations.next() => cache.expire(expired),
            _ = report.tick() => {
                let s = &cache.stats;
                println!(
                    "{:>5} ms {:>6} {:>7} {:>7} {:>8} {:>7}",
                    start.elapsed().as_millis(),
                    s.hits,
                    s.misses,
                    s.writes,
                    s.expired,
                    cache.entries.len(),
                );
            }
            () = &mut end => break,
        }
    }

    assert_eq!(cache.entries.len(), cache.expirations.len());
    let s = &cache.stats;
    let reads = s.hits + s.misses;
    println!(
        "{reads} reads and {} writes in {} ms: {} hits ({:.0}%), {} misses, {} expired, {} cached at the end",
        s.writes,
        start.elapsed().as_millis(),
        s.hits,
        100.0 * s.hits as f64 / reads.max(1) as f64,
        s.misses,
        s.expired,
        cache.entries.len()
    );
}
