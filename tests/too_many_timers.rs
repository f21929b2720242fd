//! Netty's too-many-timers warning: the 65th live `Timer` of one runtime
//! logs `tracing::warn!`, once per process; 64 do not, clones count once,
//! and a timer stops counting when it stops or its last handle goes.
//!
//! A test binary of its own, with one test: the warning is once per
//! process, so no other test may build timers beside it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hashwheel::Timer;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

const WARNING: &str = "hashwheel: too many live Timers on one runtime";

/// Records each `WARN` event's message.
#[derive(Default, Clone)]
struct Capture {
    warnings: Arc<Mutex<Vec<String>>>,
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
        if *event.metadata().level() == Level::WARN {
            let mut message = Message(String::new());
            event.record(&mut message);
            self.warnings.lock().unwrap().push(message.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Capture {
    fn too_many(&self) -> usize {
        let warnings = self.warnings.lock().unwrap();
        warnings.iter().filter(|m| m.starts_with(WARNING)).count()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_65th_live_timer_of_a_runtime_warns_once() {
    let capture = Capture::default();
    let _subscriber = tracing::subscriber::set_default(capture.clone());
    let rt = runtime();
    let _runtime = rt.enter();

    // 64 live timers, some cloned many times, are fine.
    let mut timers: Vec<Timer> = (0..64).map(|_| Timer::new()).collect();
    let clones: Vec<Timer> = (0..100).map(|_| timers[0].clone()).collect();
    assert_eq!(capture.too_many(), 0);

    // Another runtime's timers count for that runtime only.
    let other = runtime();
    let on_other: Vec<Timer> = (0..10)
        .map(|_| {
            Timer::builder()
                .handle(other.handle().clone())
                .build()
                .unwrap()
        })
        .collect();
    assert_eq!(capture.too_many(), 0);

    // A stopped timer no longer counts, though its handles live on.
    timers[0].stop();
    timers.push(Timer::new());
    assert_eq!(capture.too_many(), 0, "64 live: one of 65 is stopped");

    // Nor one whose every handle is gone.
    drop(timers.remove(1));
    timers.push(Timer::new());
    assert_eq!(capture.too_many(), 0, "64 live: one of 66 is gone");

    // One whose `Timer`s are gone but which a timeout keeps counts still.
    let timeout = timers.remove(1).sleep(Duration::from_secs(60));
    assert_eq!(capture.too_many(), 0);
    timers.push(Timer::new());
    assert_eq!(capture.too_many(), 1, "the 65th live timer warns");
    let warnings = capture.warnings.lock().unwrap().clone();
    let warning = warnings.iter().find(|m| m.starts_with(WARNING)).unwrap();
    assert!(warning.contains("build one per runtime"), "{warning}");

    // Once per process.
    timers.extend((0..10).map(|_| Timer::new()));
    let more_on_other: Vec<Timer> = (0..60)
        .map(|_| {
            Timer::builder()
                .handle(other.handle().clone())
                .build()
                .unwrap()
        })
        .collect();
    assert_eq!(capture.too_many(), 1);
    drop((clones, on_other, more_on_other, timeout));
}
