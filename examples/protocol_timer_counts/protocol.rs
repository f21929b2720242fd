//! The protocol timer model of `protocol_timer_counts` and of the bench's
//! W15 (`benches/benches/compare/w15.rs` includes this file), so that the
//! counted run and the measured one reset their timers in the same
//! sequence.
//!
//! A connection keeps one timer, as a QUIC library keeps one `Sleep` per
//! connection, and after every packet (and every expiry) moves it to the
//! earliest of three protocol deadlines, when that changed:
//!
//! - the idle deadline, [`IDLE_TIMEOUT`] after the last packet (pushed
//!   later by every packet);
//! - the loss-detection deadline, the connection's probe timeout (6 to
//!   40 ms) after it sends, cleared by the peer's ack (a lost ack lets it
//!   expire: a loss detected, a probe sent, no deadline left);
//! - the ack-delay deadline, [`ACK_DELAY`] after an ack-eliciting packet
//!   comes in with none owed, cleared when an ack goes out (at the second
//!   such packet, or with the connection's own next packet).
//!
//! The peer's packets come in flights ([`plan`]): a connection gets
//! `rate / 2.5` flights a second, one in each equal slot of the second at
//! a random point of it, each one to three data packets at once, after
//! which half the flights send a response (the loss deadline set, the ack
//! owed carried), whose ack comes back a third of the probe timeout
//! later, but one in sixteen that is lost. About `rate` packets a second,
//! in bursts; an ack delay expires after about a third of the flights, a
//! loss after one in 32.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

/// The idle timeout, pushed later by every packet.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a receiver delays an ack (QUIC's default `max_ack_delay`).
pub const ACK_DELAY: Duration = Duration::from_millis(25);
/// The plan repeats every period.
pub const PERIOD: Duration = Duration::from_secs(1);
/// The mean packets a flight: two data packets, and half an ack.
const PACKETS_A_FLIGHT: f64 = 2.5;

/// A packet from the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Ack-eliciting data.
    Data,
    /// Ack-eliciting data, the flight's last, after which the connection
    /// sends (a response, carrying the ack owed).
    DataThenSend,
    /// The peer's ack of what the connection sent.
    Ack,
}

/// One packet of the plan: `packet` for connection `conn`, `at_us` into
/// each period.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub at_us: u32,
    pub conn: u32,
    pub packet: Packet,
}

/// Every connection's packets over one period (by instant; a flight's
/// packets in order) and each connection's probe timeout.
pub struct Plan {
    pub events: Vec<Event>,
    pub pto: Vec<Duration>,
}

/// xorshift64*: the same plan for every contender.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// The plan of `n` connections at about `rate` packets a second each.
pub fn plan(n: usize, rate: u32, seed: u64) -> Plan {
    let mut rng = Rng(seed | 1);
    let period_us = PERIOD.as_micros() as u64;
    let flights = (f64::from(rate) / PACKETS_A_FLIGHT).round().max(1.0) as u64;
    let slot = period_us / flights;
    let mut events = Vec::with_capacity(n * (rate as usize + 1));
    let mut pto = Vec::with_capacity(n);
    for conn in 0..n as u32 {
        let pto_us = 6_000 + rng.below(34_000);
        pto.push(Duration::from_micros(pto_us));
        for flight in 0..flights {
            let at = flight * slot + rng.below(slot);
            let data = 1 + rng.below(3);
            let send = rng.below(2) == 0;
            for k in 1..=data {
                let packet = if send && k == data {
                    Packet::DataThenSend
                } else {
                    Packet::Data
                };
                events.push(Event {
                    at_us: at as u32,
                    conn,
                    packet,
                });
            }
            if send && rng.below(16) != 0 {
                events.push(Event {
                    at_us: ((at + pto_us / 3) % period_us) as u32,
                    conn,
                    packet: Packet::Ack,
                });
            }
        }
    }
    // Stable: a flight's packets keep their order.
    events.sort_by_key(|e| e.at_us);
    Plan { events, pto }
}

/// Walks a [`Plan`] period after period from `start`, sending each packet
/// down its connection's channel.
pub struct Feeder {
    plan: Plan,
    senders: Vec<UnboundedSender<Packet>>,
    start: Instant,
    cursor: usize,
    round: u32,
    /// Packets sent.
    pub sent: u64,
}

impl Feeder {
    pub fn new(plan: Plan, senders: Vec<UnboundedSender<Packet>>, start: Instant) -> Feeder {
        assert_eq!(plan.pto.len(), senders.len(), "a sender a connection");
        assert!(!plan.events.is_empty(), "a plan with no packets");
        Feeder {
            plan,
            senders,
            start,
            cursor: 0,
            round: 0,
            sent: 0,
        }
    }

    /// When the next packet is due.
    pub fn next_at(&self) -> Instant {
        let at = self.plan.events[self.cursor].at_us;
        self.start + PERIOD * self.round + Duration::from_micros(u64::from(at))
    }

    /// Sends every packet due by `now`.
    pub fn send_due(&mut self, now: Instant) {
        while self.next_at() <= now {
            let e = self.plan.events[self.cursor];
            let _ = self.senders[e.conn as usize].send(e.packet);
            self.sent += 1;
            self.cursor += 1;
            if self.cursor == self.plan.events.len() {
                (self.cursor, self.round) = (0, self.round + 1);
            }
        }
    }
}

/// A connection's protocol deadlines.
pub struct Conn {
    idle: Instant,
    loss: Option<Instant>,
    ack: Option<Instant>,
    /// Ack-eliciting packets not acked yet.
    unacked: u8,
    pto: Duration,
}

/// What an expiry found due.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    pub ack: bool,
    pub loss: bool,
    pub idle: bool,
}

impl Conn {
    pub fn new(now: Instant, pto: Duration) -> Conn {
        Conn {
            idle: now + IDLE_TIMEOUT,
            loss: None,
            ack: None,
            unacked: 0,
            pto,
        }
    }

    /// The earliest deadline: where the timer goes.
    pub fn deadline(&self) -> Instant {
        let mut at = self.idle;
        for d in [self.loss, self.ack].into_iter().flatten() {
            at = at.min(d);
        }
        at
    }

    /// A packet came in at `now`.
    pub fn on_packet(&mut self, packet: Packet, now: Instant) {
        self.idle = now + IDLE_TIMEOUT;
        match packet {
            Packet::Data | Packet::DataThenSend => {
                self.unacked += 1;
                if self.unacked >= 2 {
                    self.send_ack();
                } else if self.ack.is_none() {
                    self.ack = Some(now + ACK_DELAY);
                }
                if packet == Packet::DataThenSend {
                    // The response carries the ack owed.
                    self.send_ack();
                    self.loss.get_or_insert(now + self.pto);
                }
            }
            Packet::Ack => self.loss = None,
        }
    }

    fn send_ack(&mut self) {
        self.unacked = 0;
        self.ack = None;
    }

    /// The timer expired at `now`: what was due is done (an ack sent, a
    /// probe sent for a loss, the connection closed for idleness).
    pub fn on_expiry(&mut self, now: Instant) -> Expired {
        let mut out = Expired::default();
        if self.ack.is_some_and(|d| d <= now) {
            self.send_ack();
            out.ack = true;
        }
        if self.loss.is_some_and(|d| d <= now) {
            self.loss = None;
            out.loss = true;
        }
        out.idle = self.idle <= now;
        out
    }
}

/// A connection's one timer: reset to an instant, awaited for expiry.
pub trait ProtocolTimer: Future<Output = ()> + Unpin {
    fn reset_to(&mut self, deadline: Instant);
}

/// tokio's `Sleep`, boxed as a library that keeps it in its connection
/// boxes it (its `reset` takes `Pin<&mut Self>`).
impl ProtocolTimer for Pin<Box<tokio::time::Sleep>> {
    fn reset_to(&mut self, deadline: Instant) {
        self.as_mut().reset(deadline);
    }
}

/// `hashwheel::time`'s `Sleep`: the code above with its `use` line
/// switched.
impl ProtocolTimer for Pin<Box<hashwheel::time::Sleep>> {
    fn reset_to(&mut self, deadline: Instant) {
        self.as_mut().reset(deadline);
    }
}

/// A `Timer` handle's `Timeout`, reset in place.
impl ProtocolTimer for hashwheel::Timeout {
    fn reset_to(&mut self, deadline: Instant) {
        self.reset_at(deadline);
    }
}

/// The floor: no timer (never expires; a reset does nothing).
pub struct NoTimer;

impl Future for NoTimer {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        std::task::Poll::Pending
    }
}

impl ProtocolTimer for NoTimer {
    fn reset_to(&mut self, _: Instant) {}
}

/// What a connection reports as it goes.
pub trait Record {
    /// A packet handled.
    fn packet(&self);
    /// The timer reset, `earlier` than it was (`false` also after an
    /// expiry).
    fn reset(&self, earlier: bool);
    /// The timer armed for `deadline` expired at `now`, finding `what`.
    fn expired(&self, deadline: Instant, now: Instant, what: Expired);
}

/// A connection's task: `timer`, made for `conn`'s deadline, moved to the
/// earliest deadline after every packet and expiry where it changed (as
/// quinn's connection driver does), until the channel closes or the idle
/// deadline passes.
pub async fn connection<T: ProtocolTimer, R: Record>(
    mut rx: UnboundedReceiver<Packet>,
    mut conn: Conn,
    mut timer: T,
    record: R,
) {
    // The deadline the timer is armed for; `None` after an expiry, when
    // it must be reset whatever the next deadline.
    let mut armed = Some(conn.deadline());
    loop {
        tokio::select! {
            packet = rx.recv() => {
                let Some(packet) = packet else { return };
                conn.on_packet(packet, Instant::now());
                record.packet();
            }
            () = &mut timer => {
                let now = Instant::now();
                let what = conn.on_expiry(now);
                record.expired(armed.expect("an expiry of an armed timer"), now, what);
                if what.idle {
                    return;
                }
                armed = None;
            }
        }
        let next = conn.deadline();
        if armed != Some(next) {
            record.reset(armed.is_some_and(|a| next < a));
            timer.reset_to(next);
            armed = Some(next);
        }
    }
}
