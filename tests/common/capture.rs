//! A `tracing` subscriber that records each event's level and message, for
//! the tests of what the timer logs.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Records every event; clones share the record.
#[derive(Default, Clone)]
pub struct Capture {
    events: Arc<Mutex<Vec<(Level, String)>>>,
    next_id: Arc<AtomicU64>,
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        let level = *event.metadata().level();
        self.events.lock().unwrap().push((level, message.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Capture {
    /// Whether an event of `level` said exactly `message`.
    pub fn has(&self, level: Level, message: &str) -> bool {
        self.events
            .lock()
            .unwrap()
            .iter()
            .any(|(l, m)| *l == level && m == message)
    }

    /// The messages of the events of `level`, in order.
    pub fn messages(&self, level: Level) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|(l, _)| *l == level)
            .map(|(_, m)| m.clone())
            .collect()
    }
}
