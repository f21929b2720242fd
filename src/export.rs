//! [`MetricsExporter`]: a timer's [`Stats`] recorded to the `metrics` facade
//! (feature `metrics`). It reads only a [`Stats`] snapshot, so it sits
//! beside `stats.rs`, below nothing but the facade.

use ::metrics::{Label, SharedString};

use crate::stats::Stats;

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
/// | `p_created_total` | counter | [`Stats::created`] |
/// | `p_fired_total` | counter | [`Stats::fired`] |
/// | `p_cancelled_total` | counter | [`Stats::cancelled`] |
/// | `p_reset_total` | counter | [`Stats::reset`] |
/// | `p_ticks_total` | counter | [`Stats::ticks`] |
/// | `p_driver_wakeups_total` | counter | [`Stats::driver_wakeups`] |
/// | `p_late_ticks_total` | counter | [`Stats::late_ticks`] |
/// | `p_alarm_arms_total` | counter | [`Stats::alarm_arms`] |
/// | `p_longest_turn_seconds` | gauge | [`Stats::longest_turn`] |
/// | `p_lateness_seconds` | gauges, label `quantile` = `0`, `0.5`, `0.9`, `0.95`, `0.99`, `0.999`, `1` | the quantiles of the lateness the driver counted since the previous call ([`Lateness::quantile`](crate::Lateness::quantile) of [`Stats::lateness`]`.since(..)`: within 1/32 above the true values; `1` is the largest); 0 when nothing fired since |
/// | `p_lateness_seconds_count` | counter | how many lateness values were counted ([`Lateness::count`](crate::Lateness::count)) |
/// | `p_lateness_seconds_sum` | gauge, only added to | their sum, in seconds (each within 1/32 above its value) |
/// | `p_lateness_max_seconds` | gauge | [`Lateness::max`](crate::Lateness::max) over the timer's life (exact) |
///
/// The lateness series carry the names of a Prometheus summary
/// (`_seconds{quantile=..}`, `_sum`, `_count`), so that a dashboard built
/// on it reads them alike; the quantiles cover the interval between two
/// calls. Counters and the pending gauge are added to by what changed
/// since the previous call (`Counter::increment`, `Gauge::increment`), so
/// that two timers recorded under the same name and labels sum (a missed
/// call loses nothing); the quantiles and the other gauges are set, and
/// of two timers under the same labels, the last one recorded shows: give
/// each timer a label of its own for those.
///
/// # Cost
///
/// One exporter per timer: it keeps the previous snapshot. A call costs
/// work in proportion to the histogram's buckets (about 900) and one call
/// on each of its 20 series, however many timeouts fired: never a sample
/// per fire (a `metrics` histogram fed one per fire made the Prometheus
/// recorder store and render 10,000,000 samples for as many fires, 2.9 s
/// and 26 s of it). It allocates the metric names and labels once.
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
    /// The labels of each quantile's series: `labels` and the quantile.
    quantile_labels: Vec<Vec<Label>>,
    /// The snapshot recorded last, whose counts the next call leaves out
    /// (boxed: its histogram is 7 KiB).
    last: Box<Stats>,
    /// Whether the metrics were described to the recorder (on the first
    /// call: a recorder installed later would not have seen it at `new`).
    described: bool,
}

/// The quantiles recorded, and their labels: those of a Prometheus summary
/// (metrics-exporter-prometheus' default).
const QUANTILES: [(f64, &str); 7] = [
    (0.0, "0"),
    (0.5, "0.5"),
    (0.9, "0.9"),
    (0.95, "0.95"),
    (0.99, "0.99"),
    (0.999, "0.999"),
    (1.0, "1"),
];

/// The metric names under the prefix, built once.
#[derive(Debug, Clone)]
struct Names {
    pending: SharedString,
    created: SharedString,
    fired: SharedString,
    cancelled: SharedString,
    reset: SharedString,
    ticks: SharedString,
    driver_wakeups: SharedString,
    late_ticks: SharedString,
    alarm_arms: SharedString,
    longest_turn: SharedString,
    lateness: SharedString,
    lateness_count: SharedString,
    lateness_sum: SharedString,
    lateness_max: SharedString,
}

impl Names {
    /// Tells the recorder each metric's unit and meaning (Prometheus'
    /// `# HELP` lines).
    fn describe(&self) {
        use ::metrics::{describe_counter, describe_gauge, Unit};
        describe_gauge!(
            self.pending.clone(),
            Unit::Count,
            "Timeouts and tasks neither fired nor cancelled, and live intervals"
        );
        for (name, what) in [
            (
                &self.created,
                "Timeouts, tasks and intervals made pending (created = fired + cancelled + pending)",
            ),
            (
                &self.fired,
                "Timeouts and tasks that reached their deadline",
            ),
            (
                &self.cancelled,
                "Timeouts and tasks cancelled while pending, and intervals dropped",
            ),
            (&self.reset, "Resets of timeouts and intervals"),
            (&self.ticks, "Interval ticks that came due"),
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
            (
                &self.lateness_count,
                "Timeouts, tasks and interval ticks whose lateness was counted",
            ),
        ] {
            describe_counter!(name.clone(), Unit::Count, what);
        }
        describe_gauge!(
            self.longest_turn.clone(),
            Unit::Seconds,
            "The driver's longest turn of the wheels so far"
        );
        describe_gauge!(
            self.lateness.clone(),
            Unit::Seconds,
            "How late the driver fired timeouts since the last export, deadline to wake: \
             quantiles within 1/32"
        );
        describe_gauge!(
            self.lateness_sum.clone(),
            Unit::Seconds,
            "The lateness counted, summed (each within 1/32)"
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
                created: name("created_total"),
                fired: name("fired_total"),
                cancelled: name("cancelled_total"),
                reset: name("reset_total"),
                ticks: name("ticks_total"),
                driver_wakeups: name("driver_wakeups_total"),
                late_ticks: name("late_ticks_total"),
                alarm_arms: name("alarm_arms_total"),
                longest_turn: name("longest_turn_seconds"),
                lateness: name("lateness_seconds"),
                lateness_count: name("lateness_seconds_count"),
                lateness_sum: name("lateness_seconds_sum"),
                lateness_max: name("lateness_max_seconds"),
            },
            labels: Vec::new(),
            quantile_labels: quantile_labels(&[]),
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
        self.quantile_labels = quantile_labels(&self.labels);
        self
    }

    /// Records `stats` to the installed `metrics` recorder (see the table
    /// above); a no-op where none is installed.
    ///
    /// # Panics
    ///
    /// If `stats` is from another timer than the previous call's, or older:
    /// its [`Stats::lateness`] holds fewer values than the one recorded
    /// before (see [`Lateness::since`](crate::Lateness::since)).
    #[track_caller]
    pub fn record(&mut self, stats: &Stats) {
        let new = stats.lateness.since(&self.last.lateness);
        let last = std::mem::replace(&mut *self.last, *stats);
        let (names, labels) = (&self.names, &self.labels);
        if !std::mem::replace(&mut self.described, true) {
            names.describe();
        }
        // Added to by the change, so that timers under the same labels sum.
        ::metrics::gauge!(names.pending.clone(), labels.iter())
            .increment(stats.pending as f64 - last.pending as f64);
        for (name, total, before) in [
            (&names.created, stats.created, last.created),
            (&names.fired, stats.fired, last.fired),
            (&names.cancelled, stats.cancelled, last.cancelled),
            (&names.reset, stats.reset, last.reset),
            (&names.ticks, stats.ticks, last.ticks),
            (
                &names.driver_wakeups,
                stats.driver_wakeups,
                last.driver_wakeups,
            ),
            (&names.late_ticks, stats.late_ticks, last.late_ticks),
            (&names.alarm_arms, stats.alarm_arms, last.alarm_arms),
            (&names.lateness_count, new.count(), 0),
        ] {
            ::metrics::counter!(name.clone(), labels.iter())
                .increment(total.saturating_sub(before));
        }
        let sum: f64 = new
            .buckets()
            .map(|(late, count)| late.as_secs_f64() * count as f64)
            .sum();
        ::metrics::gauge!(names.lateness_sum.clone(), labels.iter()).increment(sum);
        ::metrics::gauge!(names.longest_turn.clone(), labels.iter()).set(stats.longest_turn);
        ::metrics::gauge!(names.lateness_max.clone(), labels.iter()).set(stats.lateness.max());
        for ((q, _), labels) in QUANTILES.iter().zip(&self.quantile_labels) {
            ::metrics::gauge!(names.lateness.clone(), labels.iter()).set(new.quantile(*q));
        }
    }
}

/// `labels` and each quantile's, for the quantiles' series.
fn quantile_labels(labels: &[Label]) -> Vec<Vec<Label>> {
    QUANTILES
        .iter()
        .map(|(_, q)| {
            let mut labels = labels.to_vec();
            labels.push(Label::new("quantile", *q));
            labels
        })
        .collect()
}
