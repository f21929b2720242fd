//! W14 (see BENCHMARKS.md) on paused time, for counting what a read timeout
//! rebuilt on every `select!` pass costs with `valgrind --tool=cachegrind`:
//! N connection tasks on a current-thread runtime, each looping on
//! `tokio::select!` over its channel and a read from an in-memory pipe that
//! never delivers, the read wrapped in a fresh `timeout(7.5 s, …)` every
//! pass. A router task sends each connection one message every 5 s at a
//! random phase (a batch a millisecond), so nearly every timeout is
//! dropped pending. tokio advances the clock from one batch to the next: no
//! wall clock is involved, so a run under valgrind does the same work as a
//! run without it, and two runs that differ only in their length differ by
//! exactly `N / 5` messages a second.
//!
//! ```text
//! cargo build --release --example select_timeout_counts
//! valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64 \
//!     target/release/examples/select_timeout_counts time 50000 5
//! ```
//!
//! Run natively, it prints the CPU time (of the one thread, which runs the
//! runtime and every task) a message took after the 6 s of warm-up (every
//! connection then holds a timeout built after a message): the timer's
//! and the runtime's work without the parks, system calls and idle
//! wake-ups of a real clock's run. Alternate the contenders over rounds
//! and compare the medians, the floor's subtracted.
//!
//! Arguments: the contender (`floor`: no timeout; `tokio`:
//! `tokio::time::timeout`; `time`: `hashwheel::time::timeout`; `timer`: a
//! `Timer` handle's `timeout`), the connections, and the seconds of
//! messages after the warm-up. A fourth argument, `polluter`, adds a task
//! that writes a line of every 64 bytes of 2 MiB each millisecond (on
//! `tokio::time`, for every contender alike), as `heartbeat_counts` does:
//! what a park and the neighbours of a shared machine leave of the caches
//! between two batches on the real clock, where paused time keeps the
//! timer's own structures warm from one message to the next.

#[path = "counting/mod.rs"]
mod counting;

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::time::Instant;

const READ_TIMEOUT: Duration = Duration::from_millis(7_500);
const PERIOD: Duration = Duration::from_secs(5);
const WARM_UP: Duration = Duration::from_secs(6);

/// A connection's loop: `select!` over the channel and `$timeout` (built
/// from the pipe's read, `$read`, on every pass).
macro_rules! connection {
    ($rx:ident, |$read:ident| $timeout:expr) => {{
        let (mut reader, _writer) = tokio::io::duplex(64);
        let mut buf = [0u8; 64];
        loop {
            let $read = reader.read(&mut buf);
            tokio::select! {
                msg = $rx.recv() => {
                    if msg.is_none() {
                        break;
                    }
                }
                res = $timeout => {
                    assert!(res.is_err(), "the pipe never delivers");
                    break;
                }
            }
        }
    }};
}

async fn conn_tokio(mut rx: UnboundedReceiver<()>) {
    connection!(rx, |read| tokio::time::timeout(READ_TIMEOUT, read));
}

async fn conn_time(mut rx: UnboundedReceiver<()>) {
    connection!(rx, |read| hashwheel::time::timeout(READ_TIMEOUT, read));
}

async fn conn_timer(timer: hashwheel::Timer, mut rx: UnboundedReceiver<()>) {
    connection!(rx, |read| timer.timeout(READ_TIMEOUT, read));
}

async fn conn_floor(mut rx: UnboundedReceiver<()>) {
    connection!(rx, |read| async { Ok::<_, ()>(read.await) });
}

/// xorshift64*: the same phases for every contender.
fn phases(n: usize) -> Vec<(u64, usize)> {
    let mut x: u64 = 0x5eed_0014;
    let period = PERIOD.as_micros() as u64;
    let mut order: Vec<(u64, usize)> = (0..n)
        .map(|i| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % period, i)
        })
        .collect();
    order.sort_unstable();
    order
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("timer", String::as_str).to_string();
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let secs: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5);
    let polluter = match args.get(4).map(String::as_str) {
        None => false,
        Some("polluter") => true,
        Some(other) => panic!("unknown fourth argument {other}: polluter or none"),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let timer = counting::timers_on_a_running_clock(true, which == "time")
            .expect("a Timer was asked for");
        if polluter {
            tokio::spawn(counting::pollute());
        }
        let mut senders = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = unbounded_channel();
            senders.push(tx);
            match which.as_str() {
                "floor" => drop(tokio::spawn(conn_floor(rx))),
                "tokio" => drop(tokio::spawn(conn_tokio(rx))),
                "time" => drop(tokio::spawn(conn_time(rx))),
                "timer" => drop(tokio::spawn(conn_timer(timer.clone(), rx))),
                other => panic!("unknown contender {other}: floor, tokio, time or timer"),
            }
        }
        // The connection's future, which tokio keeps in the task's one
        // allocation (in blocks of 128 bytes).
        let (_tx, rx) = unbounded_channel::<()>();
        let size = match which.as_str() {
            "floor" => std::mem::size_of_val(&conn_floor(rx)),
            "tokio" => std::mem::size_of_val(&conn_tokio(rx)),
            "time" => std::mem::size_of_val(&conn_time(rx)),
            _ => std::mem::size_of_val(&conn_timer(timer.clone(), rx)),
        };
        eprintln!("{which}: a connection's future is {size} bytes");
        let start = Instant::now();
        let end = start + WARM_UP + Duration::from_secs(secs);
        let order = phases(n);
        // The router: every message due by the next millisecond, a batch a
        // millisecond.
        let router = tokio::spawn(async move {
            let (mut cursor, mut round) = (0usize, 0u32);
            let mut sent = 0u64;
            let mut measured = None;
            loop {
                let at = start + PERIOD * round + Duration::from_micros(order[cursor].0);
                let at = at.max(Instant::now() + Duration::from_millis(1));
                if at >= end {
                    return (sent, measured);
                }
                tokio::time::sleep_until(at).await;
                if measured.is_none() && at >= start + WARM_UP {
                    measured = Some((counting::thread_cpu(), sent));
                }
                let now = Instant::now();
                loop {
                    let (phase, i) = order[cursor];
                    if start + PERIOD * round + Duration::from_micros(phase) > now {
                        break;
                    }
                    let _ = senders[i].send(());
                    sent += 1;
                    cursor += 1;
                    if cursor == order.len() {
                        (cursor, round) = (0, round + 1);
                    }
                }
            }
        });
        let (sent, measured) = router.await.unwrap();
        if let Some((cpu0, sent0)) = measured {
            let messages = sent - sent0;
            println!(
                "{which} {n} connections, {secs} s after {} s of warm-up: {messages} messages, \
                 {:.0} ns of CPU each",
                WARM_UP.as_secs(),
                (counting::thread_cpu() - cpu0).as_nanos() as f64 / messages as f64
            );
        }
    });
    // Tearing the tasks down is no part of the figures.
    std::process::exit(0);
}
