//! A `tracing` subscriber that records each event's level and message, and
//! each span's name and fields, for the tests of what the timer logs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Records every event and span up to its level (`TRACE` by default);
/// clones share the record.
#[derive(Default, Clone)]
pub struct Capture {
    events: Arc<Mutex<Vec<(Level, String)>>>,
    /// Each span's name and fields (as recorded last), by id less one.
    spans: Arc<Mutex<Vec<(&'static str, Fields)>>>,
    /// Only what is at least this severe, if set.
    max: Option<Level>,
}

/// A span's fields, by name, as their `Debug` forms.
pub type Fields = BTreeMap<&'static str, String>;

struct FieldsVisitor<'a>(&'a mut Fields);

impl Visit for FieldsVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
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
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.max.map_or(true, |max| *metadata.level() <= max)
    }
    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let mut fields = Fields::new();
        attributes.record(&mut FieldsVisitor(&mut fields));
        let mut spans = self.spans.lock().unwrap();
        spans.push((attributes.metadata().name(), fields));
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        values.record(&mut FieldsVisitor(&mut spans[id.into_u64() as usize - 1].1));
    }
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
    /// Records only events and spans of `max` or more severe ones.
    pub fn at_most(max: Level) -> Capture {
        Capture {
            max: Some(max),
            ..Capture::default()
        }
    }

    /// The fields of the spans named `name`, in order of creation.
    pub fn spans(&self, name: &str) -> Vec<Fields> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, f)| f.clone())
            .collect()
    }
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
