//! The wheel without tokio: idle timeouts in a plain `std::thread` event
//! loop, timed with `std::time::Instant`.
//!
//! Client threads open connections, send messages at their own pace and
//! close them; some go quiet. The loop waits on its channel with the next
//! tick with work as the timeout (as a mio or io_uring loop would use it as
//! its poll timeout), resets a connection's idle timeout on every message,
//! and closes connections idle for 300 ms. It exits by itself after about a
//! second.
//!
//! ```text
//! cargo run --example event_loop
//! cargo run --no-default-features --example event_loop   # the crate built without tokio
//! ```

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use hashwheel::wheel::{Key, Wheel};

const IDLE: Duration = Duration::from_millis(300);

/// Ticks of 1 ms from `start`. Deadlines round up and the clock rounds
/// down, so nothing is closed before its 300 ms are up.
struct Clock {
    start: Instant,
}

impl Clock {
    fn tick_of(&self, at: Instant) -> u64 {
        let ns = at.saturating_duration_since(self.start).as_nanos();
        u64::try_from(ns.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn instant_of(&self, tick: u64) -> Instant {
        self.start + Duration::from_millis(tick)
    }
}

enum Event {
    Open(u32),
    Message(u32),
    Close(u32),
}

/// A connection: when it opened, and when it last spoke.
struct Conn {
    key: Key,
    opened: Instant,
    last: Instant,
}

/// Client `id` sends `messages` messages `gap` apart, then closes the
/// connection, or (`quiet`) stops talking and leaves it open.
fn client(tx: mpsc::Sender<Event>, id: u32, messages: u32, gap: Duration, quiet: bool) {
    let _ = tx.send(Event::Open(id));
    for _ in 0..messages {
        thread::sleep(gap);
        let _ = tx.send(Event::Message(id));
    }
    if !quiet {
        let _ = tx.send(Event::Close(id));
    }
}

fn main() {
    let clock = Clock {
        start: Instant::now(),
    };
    let (tx, rx) = mpsc::channel();
    let clients: Vec<_> = (0..12u32)
        .map(|id| {
            let tx = tx.clone();
            // Gaps of 50–160 ms keep a connection alive; 400 ms does not.
            let (messages, gap) = match id % 4 {
                3 => (2, 400),
                _ => (6, 50 + 10 * u64::from(id)),
            };
            let gap = Duration::from_millis(gap);
            thread::spawn(move || client(tx, id, messages, gap, id % 3 == 0))
        })
        .collect();
    drop(tx);

    let mut wheel: Wheel<u32> = Wheel::new();
    let mut conns: HashMap<u32, Conn> = HashMap::new();
    let (mut messages, mut closed, mut idle, mut wakeups) = (0u32, 0u32, 0u32, 0u32);
    let mut clients_done = false;
    loop {
        // Wait for an event, or until the next tick with work.
        let timeout = wheel.next_tick().map(|tick| {
            clock
                .instant_of(tick)
                .saturating_duration_since(Instant::now())
        });
        let event = if clients_done {
            if let Some(timeout) = timeout {
                thread::sleep(timeout);
            }
            Err(RecvTimeoutError::Timeout)
        } else {
            match timeout {
                Some(timeout) => rx.recv_timeout(timeout),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            }
        };
        wakeups += 1;
        let now = Instant::now();
        match event {
            Ok(Event::Open(id)) => {
                let key = wheel.insert(clock.tick_of(now + IDLE), id);
                let conn = Conn {
                    key,
                    opened: now,
                    last: now,
                };
                conns.insert(id, conn);
            }
            Ok(Event::Message(id)) => {
                // A connection closed for idleness may still get late messages.
                if let Some(conn) = conns.get_mut(&id) {
                    wheel.reset(conn.key, clock.tick_of(now + IDLE));
                    conn.last = now;
                    messages += 1;
                }
            }
            Ok(Event::Close(id)) => {
                if let Some(conn) = conns.remove(&id) {
                    wheel.remove(conn.key);
                    closed += 1;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => clients_done = true,
        }
        while let Some(expired) = wheel.poll(clock.now()) {
            let conn = conns
                .remove(&expired.value)
                .expect("a timeout without its connection");
            let quiet = conn.last.elapsed();
            assert!(quiet >= IDLE, "closed after {quiet:?} of quiet: early");
            idle += 1;
            println!(
                "{:>5} ms  connection {:>2} idle for {:>3} ms, closed (open {} ms)",
                clock.start.elapsed().as_millis(),
                expired.value,
                quiet.as_millis(),
                conn.opened.elapsed().as_millis(),
            );
        }
        if clients_done && wheel.is_empty() {
            break;
        }
    }
    for client in clients {
        client.join().expect("a client thread panicked");
    }
    println!(
        "{} ms: {messages} messages, {closed} connections closed by their client, {idle} closed idle; {wakeups} loop wake-ups",
        clock.start.elapsed().as_millis()
    );
}
