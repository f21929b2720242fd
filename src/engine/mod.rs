// Floor 2, the engine (docs/ARCHITECTURE.md): it imports the wheel and
// the leaf types (`error`, `stats`), nothing above.
//! The engine: the timer's private machinery, under every handle and face.
//!
//! Its floor: it imports the wheel (`crate::wheel`) and the leaf types it
//! reports in (`crate::error`, `crate::stats`), and nothing above it: no
//! handle (`crate::timer`), no face. Who owns what:
//!
//! - `shard`: the shards (a wheel and its lock each), what they share with
//!   the driver (`Common`: the clock, the alarm, the stop flag, the
//!   counts), the stop protocol and a scheduled task's state.
//! - `clock`: the timer's clock and the conversions between its instants
//!   and ticks. `deadlines`: the deadline words of a shard's owned entries
//!   (a timeout's lock-free extension, an interval's beat).
//! - `driver`: one turn of the wheels, shared by both drivers, and the
//!   drivers themselves, `driver::runtime` (inside tokio's timer
//!   processing) and `driver::thread` (a thread of its own); `alarm`: what
//!   wakes each, named as its driver is.
//! - `executor`: where scheduled callbacks run. `process`: which process
//!   built the timer (the fork checks). `live`: how many timers a runtime
//!   holds. `coop`: tokio's cooperative budget. `scope`: the deadline of
//!   the deadline scope being polled, which every timeout made reads.
//!   `hooks`: test-only pauses.

pub(crate) mod alarm;
pub(crate) mod clock;
pub(crate) mod coop;
pub(crate) mod deadlines;
pub(crate) mod driver;
pub(crate) mod executor;
#[cfg(all(test, feature = "tokio"))]
pub(crate) mod hooks;
#[cfg(feature = "tokio")]
pub(crate) mod live;
pub(crate) mod process;
pub(crate) mod scope;
pub(crate) mod shard;
