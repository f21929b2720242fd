//! What the timer reports through `tracing`: a capturing subscriber records
//! each event's level and message.

mod common;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::advance;
use hashwheel::{TaskExecutor, Timer};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

#[derive(Default, Clone)]
struct Capture {
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
    fn has(&self, level: Level, message: &str) -> bool {
        self.events
            .lock()
            .unwrap()
            .iter()
            .any(|(l, m)| *l == level && m == message)
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_task_is_reported_with_warn() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    timer.schedule(Duration::from_millis(1), || panic!("boom"));
    advance(Duration::from_millis(1)).await;
    assert!(capture.has(Level::WARN, "hashwheel: a scheduled task panicked"));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_task_is_reported_with_warn_under_each_choice() {
    let inline = TaskExecutor::custom(|callback| callback());
    let queued = tokio::runtime::Handle::current();
    let spawned = TaskExecutor::custom(move |callback| drop(queued.spawn(async { callback() })));
    let choices = [
        TaskExecutor::spawn(),
        TaskExecutor::driver(),
        inline,
        spawned,
    ];
    for executor in choices {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let name = format!("{executor:?}");
        let timer = Timer::builder().task_executor(executor).build().unwrap();
        timer.schedule(Duration::from_millis(1), || panic!("boom"));
        advance(Duration::from_millis(1)).await;
        assert!(
            capture.has(Level::WARN, "hashwheel: a scheduled task panicked"),
            "{name}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_executor_is_reported_with_warn() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let executor = TaskExecutor::custom(|_| panic!("executor down"));
    let timer = Timer::builder().task_executor(executor).build().unwrap();
    timer.schedule(Duration::from_millis(1), || {});
    advance(Duration::from_millis(1)).await;
    assert!(capture.has(Level::WARN, "hashwheel: the task executor panicked"));
    assert!(!capture.has(Level::WARN, "hashwheel: a scheduled task panicked"));
}

#[tokio::test(start_paused = true)]
async fn a_sub_millisecond_tick_is_raised_with_a_warning() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::builder()
        .tick(Duration::from_micros(100))
        .build()
        .unwrap();
    assert_eq!(timer.tick(), Duration::from_millis(1));
    assert!(capture.has(Level::WARN, "hashwheel: tick raised to the minimum of 1ms"));
}

#[tokio::test(start_paused = true)]
async fn a_driver_that_runs_late_warns_when_it_catches_up() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    let mut t = tokio_test::task::spawn(timer.sleep(Duration::from_millis(5)));
    assert!(t.poll().is_pending());
    common::settle().await;
    // One jump of 300 ms: the driver first runs 295 ticks after its plan,
    // as when a blocked worker starves it.
    advance(Duration::from_millis(300)).await;
    assert!(t.poll().is_ready());
    assert_eq!(timer.stats().late_ticks, 295);
    assert!(capture.has(Level::WARN, "hashwheel: driver ran late, catching up"));
}

#[tokio::test(start_paused = true)]
async fn stop_and_the_driver_lifecycle_are_debug_events() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let timer = Timer::new();
    let _t = timer.sleep(Duration::from_secs(1));
    common::settle().await;
    assert!(capture.has(Level::DEBUG, "hashwheel: driver started"));
    timer.stop();
    common::settle().await;
    assert!(capture.has(
        Level::DEBUG,
        "hashwheel: timer stopped; cancelled what was pending"
    ));
    assert!(capture.has(Level::DEBUG, "hashwheel: driver ended"));
}
