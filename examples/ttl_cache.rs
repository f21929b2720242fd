//! An expiring cache: values in a `HashMap`, their expiry in a
//! `DelayQueue`, with the time to live reset on every read, as with
//! tokio-util's `DelayQueue` (only the `use` line differs).
//!
//! One task serves 2,000 reads a second for 2 s: most go to a few hot keys,
//! which stay cached because every read resets their 200 ms TTL; the rest go
//! to many cold keys, which are fetched on a miss and expire unread. The
//! same task drains the queue's stream of expired keys. It prints the hit,
//! miss and expiry counts every half second, then exits.
//!
//! ```text
//! cargo run --example ttl_cache
//! ```

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use hashwheel::delay_queue::{DelayQueue, Key};
use tokio::time::{interval, sleep, Instant, MissedTickBehavior};

const TTL: Duration = Duration::from_millis(200);
const HOT_KEYS: u64 = 20;
const COLD_KEYS: u64 = 5_000;

#[derive(Default)]
struct Stats {
    hits: u64,
    misses: u64,
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

    fn insert(&mut self, key: u64, value: String) {
        let expiry = self.expirations.insert(key, TTL);
        if let Some((_, old)) = self.entries.insert(key, (value, expiry)) {
            self.expirations.remove(&old);
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

    fn expire(&mut self, key: u64) {
        let (_, expiry) = self
            .entries
            .remove(&key)
            .expect("an expiry without its entry");
        // The key has left the queue: it names nothing any more.
        assert!(self.expirations.deadline(&expiry).is_none());
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

    /// 80% of reads go to the hot keys.
    fn key(&mut self) -> u64 {
        let n = self.next();
        if n % 10 < 8 {
            n / 10 % HOT_KEYS
        } else {
            HOT_KEYS + n / 10 % COLD_KEYS
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let start = Instant::now();
    let mut cache = Cache::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Two reads a millisecond (tokio's timer resolution).
    let mut reads = interval(Duration::from_millis(1));
    reads.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut report = interval(Duration::from_millis(500));
    report.tick().await;
    let end = sleep(Duration::from_secs(2));
    tokio::pin!(end);

    println!("  time   hits  misses  expired  cached");
    loop {
        tokio::select! {
            _ = reads.tick() => {
                cache.read(rng.key());
                cache.read(rng.key());
            }
            Some(expired) = cache.expirations.next() => cache.expire(expired.into_inner()),
            _ = report.tick() => {
                let s = &cache.stats;
                println!(
                    "{:>5} ms {:>6} {:>7} {:>8} {:>7}",
                    start.elapsed().as_millis(),
                    s.hits,
                    s.misses,
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
        "{reads} reads in {} ms: {} hits ({:.0}%), {} misses, {} expired, {} cached at the end",
        start.elapsed().as_millis(),
        s.hits,
        100.0 * s.hits as f64 / reads.max(1) as f64,
        s.misses,
        s.expired,
        cache.entries.len()
    );
}
