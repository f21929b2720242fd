//! [`MetricsExporter`]: a timer's [`Stats`] recorded to the `metrics` facade
//! (feature `metrics`). It reads only a [`Stats`] snapshot, so it sits
//! beside `stats.rs`, below nothing but the facade.

use ::metrics::{Label, SharedString};

use crate::stats::{Lateness, Stats};

/// Records [`Timer::stats`](crate::Timer::stats) snapshots to the
/// [`metrics`](https://docs.rs/metrics/0.24) facade, which most services
/// already wire to Prometheus, StatsD or OpenTelemetry: call
/// [`record`](Self::record) every few seconds (or when the exporter
/// scrapes) with a fresh snapshot.
///
/// Under the prefix `p` (and the labels given with
/// [`label`](Self::label)), each call records:
///
/// | name | kind | what |
/// |---|---|---|
/// | `p_pending` | gauge | [`Stats::pending`] |
/// | `p_fired_total` | counter | [`Stats::fired`] |
/// | `p_cancelled_total` | counter | [`Stats::cancelled`] |
/// | `p_reset_total` | counter | [`Stats::reset`] |
/// | `p_driver_wakeups_total` | counter | [`Stats::driver_wakeups`] |
/// | `p_late_ticks_total` | counter | [`Stats::late_ticks`] |
/// | `p_alarm_arms_total` | counter | [`Stats::alarm_arms`] |
/// | `p_longest_turn_seconds` | gauge | [`Stats::longest_turn`] |
/// | `p_lateness_seconds` | histogram | each lateness the driver counted since the last call (from [`Stats::lateness`], one value per bucket with its count: within 1/32 of the true values) |
/// | `p_lateness_max_seconds` | gauge | [`Lateness::max`] over the timer's life |
///
/// Counters are set to the snapshot's totals (`Counter::absolute`), so a
/// missed call loses nothing. The histogram gets only what is new since
/// the previous call, so the exporter's own quantiles (a Prometheus
/// summary's, for one) cover the values of its window.
///
/// One exporter per timer: it keeps the previous snapshot's histogram.
/// It costs work in proportion to the histogram's buckets (about 900),
/// never to the number of timers, and allocates the metric names once.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use hashwheel::{MetricsExporter, Timer};
/// use std::time::Duration;
///
/// let timer = Timer::new();
/// let mut exporter = MetricsExporter::new("hashwheel").label("timer", "requests");
/// // In a task of its own: every second, whatever recorder is installed
/// // (metrics-exporter-prometheus, for one) gets the figures.
/// let mut every = timer.interval(Duration::from_secs(1));
/// for _ in 0..3 {
///     every.tick().await;
///     exporter.record(&timer.stats());
/// }
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
#[derive(Debug, Clone)]
pub struct MetricsExporter {
    names: Names,
    labels: Vec<Label>,
    /// The histogram recorded last, whose counts the next call leaves out.
    last: Box<Lateness>,
    /// Whether the metrics were described to the recorder (on the first
    /// call: a recorder installed later would not have seen it at `new`).
    described: bool,
}

/// The metric names under the prefix, built once.
#[derive(Debug, Clone)]
struct Names {
    pending: SharedString,
    fired: SharedString,
    cancelled: SharedString,
    reset: SharedString,
    driver_wakeups: SharedString,
    late_ticks: SharedString,
    alarm_arms: SharedString,
    longest_turn: SharedString,
    lateness: SharedString,
    lateness_max: SharedString,
}

impl Names {
    /// Tells the recorder each metric's unit and meaning (Prometheus'
    /// `# HELP` lines).
    fn describe(&self) {
        use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
        describe_gauge!(
            self.pending.clone(),
            Unit::Count,
            "Timeouts and tasks neither fired nor cancelled"
        );
        for (name, what) in [
            (
                &self.fired,
                "Timeouts, tasks and interval ticks that reached their deadline",
            ),
            (
                &self.cancelled,
                "Timeouts and tasks cancelled while pending",
            ),
            (
                &self.reset,
                "Resets of timeouts and re-arms of intervals by their tasks",
            ),
            (
                &self.driver_wakeups,
                "Times the driver woke up to turn the wheels",
            ),
            (
                &self.late_ticks,
                "Ticks the driver was behind its alarm when it woke, summed",
            ),
            (
                &self.alarm_arms,
                "Times the driver's alarm was armed or moved",
            ),
        ] {
            describe_counter!(name.clone(), Unit::Count, what);
        }
        describe_gauge!(
            self.longest_turn.clone(),
            Unit::Seconds,
            "The driver's longest turn of the wheels so far"
        );
        describe_histogram!(
            self.lateness.clone(),
            Unit::Seconds,
            "How late the driver fired timeouts: deadline to wake, within 1/32"
        );
        describe_gauge!(
            self.lateness_max.clone(),
            Unit::Seconds,
            "The largest lateness so far"
        );
    }
}

impl MetricsExporter {
    /// An exporter whose metric names start with `prefix` and an
    /// underscore (`hashwheel` gives `hashwheel_pending`, ...), with no
    /// labels.
    ///
    /// # Panics
    ///
    /// If `prefix` is empty.
    #[track_caller]
    pub fn new(prefix: impl Into<String>) -> MetricsExporter {
        let prefix = prefix.into();
        assert!(
            !prefix.is_empty(),
            "hashwheel: MetricsExporter::new: the prefix of the metric names is empty"
        );
        let name = |suffix: &str| SharedString::from(format!("{prefix}_{suffix}"));
        MetricsExporter {
            names: Names {
                pending: name("pending"),
                fired: name("fired_total"),
                cancelled: name("cancelled_total"),
                reset: name("reset_total"),
                driver_wakeups: name("driver_wakeups_total"),
                late_ticks: name("late_ticks_total"),
                alarm_arms: name("alarm_arms_total"),
                longest_turn: name("longest_turn_seconds"),
                lateness: name("lateness_seconds"),
                lateness_max: name("lateness_max_seconds"),
            },
            labels: Vec::new(),
            last: Box::default(),
            described: false,
        }
    }

    /// Adds the label `key = value` to every metric it records (to tell
    /// several timers apart, for one).
    pub fn label(
        mut self,
        key: impl Into<SharedString>,
        value: impl Into<SharedString>,
    ) -> MetricsExporter {
        self.labels.push(Label::new(key, value));
        self
    }

    /// Records `stats` to the installed `metrics` recorder (see the table
    /// above); a no-op where none is installed.
    ///
    /// # Panics
    ///
    /// If `stats` is from another timer than the previous call's, or older:
    /// its [`Stats::lateness`] holds fewer values than the one recorded
    /// before (see [`Lateness::since`]).
    #[track_caller]
    pub fn record(&mut self, stats: &Stats) {
        let new = stats.lateness.since(&self.last);
        *self.last = stats.lateness;
        let (names, labels) = (&self.names, &self.labels);
        if !std::mem::replace(&mut self.described, true) {
            names.describe();
        }
        ::metrics::gauge!(names.pending.clone(), labels.iter()).set(stats.pending as f64);
        for (name, total) in [
            (&names.fired, stats.fired),
            (&names.cancelled, stats.cancelled),
            (&names.reset, stats.reset),
            (&names.driver_wakeups, stats.driver_wakeups),
            (&names.late_ticks, stats.late_ticks),
            (&names.alarm_arms, stats.alarm_arms),
        ] {
            ::metrics::counter!(name.clone(), labels.iter()).absolute(total);
        }
        ::metrics::gauge!(names.longest_turn.clone(), labels.iter()).set(stats.longest_turn);
        ::metrics::gauge!(names.lateness_max.clone(), labels.iter()).set(stats.lateness.max());
        let histogram = ::metrics::histogram!(names.lateness.clone(), labels.iter());
        for (late, count) in new.buckets() {
            histogram.record_many(late, usize::try_from(count).unwrap_or(usize::MAX));
        }
    }
}
