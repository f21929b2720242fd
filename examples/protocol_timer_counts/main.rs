//! W15 (a protocol timer reset after every packet, see the bench's
//! `w15.rs`) on paused time, for counting what a reset costs with
//! `valgrind --tool=cachegrind` (or `callgrind`): N connection tasks on a
//! current-thread runtime, each keeping one timer that it moves, after
//! every packet and every expiry, to the earliest of its idle, loss and
//! ack-delay deadlines (`protocol.rs`, the same model as W15's). A router
//! task sends the peer's packets, a batch a millisecond, about 20 a second
//! a connection in flights of one to three; tokio advances the clock from
//! one batch or expiry to the next. No wall clock is involved, so a run
//! under valgrind does the same work as one without it, and two runs that
//! differ only in their length differ by the resets, packets and expiries
//! each prints: divide the difference of the counts by the difference of
//! those.
//!
//! ```text
//! cargo build --release --example protocol_timer_counts
//! valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64 \
//!     target/release/examples/protocol_timer_counts timer 10000 2
//! valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64 \
//!     target/release/examples/protocol_timer_counts timer 10000 4
//! ```
//!
//! Run natively, it prints the CPU time a packet took after the warm-up
//! (every connection's timer then moved by packets and expiries): the
//! timer's and the runtime's work without the parks, system calls and
//! idle wake-ups of a real clock's run.
//!
//! Arguments: the contender (`floor`: the same deadlines kept, no timer;
//! `timer`: a `Timer` handle's `Timeout`, `reset_at`; `time`:
//! `hashwheel::time::Sleep`, boxed, `reset`; `tokio`:
//! `tokio::time::Sleep`, boxed, `reset`), the connections, the seconds
//! measured after [`WARM_UP`], and optionally the packets a second a
//! connection (20).

#[path = "../counting/mod.rs"]
mod counting;
mod protocol;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc::unbounded_channel;
use tokio::time::Instant;

use protocol::{connection, plan, Conn, Expired, Feeder, NoTimer, Record};

const WARM_UP: Duration = Duration::from_secs(2);
/// The router sends at most a batch a millisecond.
const BATCH: Duration = Duration::from_millis(1);
/// The plan's seed, W15's.
const SEED: u64 = 0x5eed_0015;

static PACKETS: AtomicU64 = AtomicU64::new(0);
static RESETS: AtomicU64 = AtomicU64::new(0);
static EARLIER: AtomicU64 = AtomicU64::new(0);
static EXPIRIES: AtomicU64 = AtomicU64::new(0);
static ACK_EXPIRIES: AtomicU64 = AtomicU64::new(0);
static LOSS_EXPIRIES: AtomicU64 = AtomicU64::new(0);
/// Each expiry's lateness in microseconds (the instant its task saw it
/// less the deadline it armed), in order.
static LATENESS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Counts into the statics (one thread: the runtime's).
struct Counts;

impl Record for Counts {
    fn packet(&self) {
        PACKETS.fetch_add(1, Ordering::Relaxed);
    }

    fn reset(&self, earlier: bool) {
        RESETS.fetch_add(1, Ordering::Relaxed);
        if earlier {
            EARLIER.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn expired(&self, deadline: Instant, now: Instant, what: Expired) {
        assert!(now >= deadline, "expired {:?} early", deadline - now);
        let late = (now - deadline).as_micros() as u64;
        LATENESS.lock().unwrap().push(late);
        EXPIRIES.fetch_add(1, Ordering::Relaxed);
        if what.ack {
            ACK_EXPIRIES.fetch_add(1, Ordering::Relaxed);
        }
        if what.loss {
            LOSS_EXPIRIES.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The counters, in the order printed.
fn counts() -> [u64; 6] {
    [
        &PACKETS,
        &RESETS,
        &EARLIER,
        &EXPIRIES,
        &ACK_EXPIRIES,
        &LOSS_EXPIRIES,
    ]
    .map(|c| c.load(Ordering::Relaxed))
}

/// The driver turns of the contender's timer so far, for `timer` and
/// `time`.
fn turns(timer: &hashwheel::Timer, which: &str) -> Option<u64> {
    match which {
        "timer" => Some(timer.stats().driver_wakeups),
        "time" => Some(hashwheel::Timer::current().stats().driver_wakeups),
        _ => None,
    }
}

fn main() {
    let usage =
        "usage: protocol_timer_counts floor|timer|time|tokio CONNECTIONS SECONDS [PACKETS_A_SECOND]";
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).expect(usage).clone();
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).expect(usage);
    let secs: u32 = args.get(3).and_then(|a| a.parse().ok()).expect(usage);
    let rate: u32 = args.get(4).map_or(20, |a| a.parse().expect(usage));
    assert!(n > 0 && rate > 0, "{usage}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let timer = counting::timers_on_a_running_clock(true, which == "time")
            .expect("a Timer was asked for");
        let plan = plan(n, rate, SEED);
        let now = Instant::now();
        let mut senders = Vec::with_capacity(n);
        for &pto in &plan.pto {
            let (tx, rx) = unbounded_channel();
            senders.push(tx);
            let conn = Conn::new(now, pto);
            let at = conn.deadline();
            match which.as_str() {
                "floor" => drop(tokio::spawn(connection(rx, conn, NoTimer, Counts))),
                "timer" => drop(tokio::spawn(connection(
                    rx,
                    conn,
                    timer.sleep_until(at),
                    Counts,
                ))),
                "time" => drop(tokio::spawn(connection(
                    rx,
                    conn,
                    Box::pin(hashwheel::time::sleep_until(at)),
                    Counts,
                ))),
                "tokio" => drop(tokio::spawn(connection(
                    rx,
                    conn,
                    Box::pin(tokio::time::sleep_until(at)),
                    Counts,
                ))),
                _ => panic!("{usage}"),
            }
        }
        let start = Instant::now() + BATCH;
        let measured_from = start + WARM_UP;
        let end = measured_from + Duration::from_secs(u64::from(secs));
        let mut feeder = Feeder::new(plan, senders, start);
        let mut before = None;
        let mut last = start - BATCH;
        loop {
            let at = feeder.next_at().max(last + BATCH);
            if before.is_none() && at >= measured_from {
                // Let the connections take the warm-up's last batch first.
                tokio::time::sleep_until(measured_from).await;
                let late_from = LATENESS.lock().unwrap().len();
                before = Some((
                    counting::thread_cpu(),
                    counts(),
                    late_from,
                    turns(&timer, &which),
                ));
            }
            if at >= end {
                tokio::time::sleep_until(end).await;
                break;
            }
            tokio::time::sleep_until(at).await;
            last = Instant::now();
            feeder.send_due(last);
        }
        let (cpu0, c0, late_from, turns0) = before.expect("the warm-up ended");
        let cpu = counting::thread_cpu() - cpu0;
        let c1 = counts();
        let d: Vec<u64> = c1.iter().zip(c0).map(|(b, a)| b - a).collect();
        println!(
            "{which} {n} connections, {rate} packets/s each, {secs} s after {} s of warm-up: \
             {} packets, {} resets ({} earlier), {} expiries ({} ack delays, {} losses); \
             {:.0} ns of CPU a packet",
            WARM_UP.as_secs(),
            d[0],
            d[1],
            d[2],
            d[3],
            d[4],
            d[5],
            cpu.as_nanos() as f64 / d[0].max(1) as f64,
        );
        // On paused time the expiries' lateness is the timer's alone (the
        // runtime's timer's millisecond), the same from run to run.
        let mut late = LATENESS.lock().unwrap()[late_from..].to_vec();
        late.sort_unstable();
        let q = |q: f64| late.get(((late.len() as f64 - 1.0) * q) as usize).copied();
        println!(
            "lateness (µs): p50 {:?}, p99 {:?}, max {:?}, sum {}; driver turns {}",
            q(0.5),
            q(0.99),
            late.last(),
            late.iter().sum::<u64>(),
            turns(&timer, &which).map_or("-".into(), |t| (t - turns0.unwrap_or(0)).to_string()),
        );
    });
    // Tearing the tasks down is no part of the figures.
    std::process::exit(0);
}
