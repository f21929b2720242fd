//! The table: one row per figure, with its ratios to the rivals, and the
//! floors (a clock read, a lock) measured in the same run.

use crate::common::{best, per};
use tokio::time::Instant;

/// One line of the table: a figure for hashwheel and for each rival
/// (`None` where the workload does not fit the rival).
pub struct Row {
    id: &'static str,
    figure: String,
    pub ours: f64,
    pub tokio: Option<f64>,
    pub delay_queue: Option<f64>,
    /// Decimal places to print.
    places: usize,
    /// Higher figures are better (a rate): the ratio is `hashwheel / rival`.
    rate: bool,
    /// The key a chart finds this figure by (`charts`), if one draws it.
    pub chart: Option<&'static str>,
}

impl Row {
    pub fn new(id: &'static str, figure: impl Into<String>, ours: f64) -> Row {
        Row {
            id,
            figure: figure.into(),
            ours,
            tokio: None,
            delay_queue: None,
            places: 1,
            rate: false,
            chart: None,
        }
    }

    pub fn tokio(mut self, v: f64) -> Row {
        self.tokio = Some(v);
        self
    }

    pub fn dq(mut self, v: f64) -> Row {
        self.delay_queue = Some(v);
        self
    }

    pub fn places(mut self, places: usize) -> Row {
        self.places = places;
        self
    }

    pub fn rate(mut self) -> Row {
        self.rate = true;
        self
    }

    /// Draws this figure in a chart, under `key` (see `charts`).
    pub fn chart(mut self, key: &'static str) -> Row {
        self.chart = Some(key);
        self
    }

    pub fn print(&self) {
        let p = self.places;
        let fig = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.p$}"));
        let ratio = |v: Option<f64>| match v {
            Some(v) if self.rate && v > 0.0 => format!("{:.2}×", self.ours / v),
            Some(v) if !self.rate && self.ours > 0.0 => format!("{:.2}×", v / self.ours),
            Some(0.0) => "=".to_string(),
            Some(_) => "∞".to_string(),
            None => "–".to_string(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            self.id,
            self.figure,
            fig(Some(self.ours)),
            fig(self.tokio),
            ratio(self.tokio),
            fig(self.delay_queue),
            ratio(self.delay_queue),
        );
    }
}

/// Floors: what one clock read and one uncontended lock cost in this run.
pub fn floors(n: usize) -> Vec<(&'static str, f64)> {
    let time = |f: &dyn Fn()| {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let start = std::time::Instant::now();
            for _ in 0..n {
                f();
            }
            runs.push(per(start.elapsed(), n));
        }
        best(&runs)
    };
    let lock = std::sync::Mutex::new(0u64);
    vec![
        (
            "`tokio::time::Instant::now()` (test-util on, clock never paused)",
            time(&|| {
                std::hint::black_box(Instant::now());
            }),
        ),
        (
            "`std::time::Instant::now()`",
            time(&|| {
                std::hint::black_box(std::time::Instant::now());
            }),
        ),
        (
            "uncontended `std::sync::Mutex` lock + unlock",
            time(&|| {
                *std::hint::black_box(&lock).lock().unwrap() += 1;
            }),
        ),
    ]
}
