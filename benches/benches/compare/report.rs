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

/// One contender's figure in a workload with many contenders (W4's and
/// W9's extra rivals, W10–W12): printed in a second table, one line per
/// contender, with the ratio to hashwheel's figure on the same line of the
/// same run.
pub struct Line {
    pub id: &'static str,
    pub figure: String,
    pub contender: &'static str,
    /// The figure: the best (lowest) of `rounds`.
    pub value: f64,
    /// Every round's figure, in the order run.
    pub rounds: Vec<f64>,
    /// hashwheel's figure for the ratio (`rival / hashwheel`); `None` on
    /// hashwheel's own line, or where no ratio means anything (the floor).
    pub base: Option<f64>,
    places: usize,
    /// The key a chart finds this figure by (`charts`), with `contender`.
    pub chart: Option<&'static str>,
}

impl Line {
    pub fn new(
        id: &'static str,
        figure: impl Into<String>,
        contender: &'static str,
        rounds: Vec<f64>,
    ) -> Line {
        Line {
            id,
            figure: figure.into(),
            contender,
            value: best(&rounds),
            rounds,
            base: None,
            places: 1,
            chart: None,
        }
    }

    pub fn base(mut self, base: f64) -> Line {
        self.base = Some(base);
        self
    }

    pub fn places(mut self, places: usize) -> Line {
        self.places = places;
        self
    }

    pub fn chart(mut self, key: &'static str) -> Line {
        self.chart = Some(key);
        self
    }

    pub fn print(&self) {
        let p = self.places;
        let rounds = if self.rounds.len() > 1 {
            let all: Vec<String> = self.rounds.iter().map(|v| format!("{v:.p$}")).collect();
            all.join(" / ")
        } else {
            "–".to_string()
        };
        let ratio = match self.base {
            Some(b) if b > 0.0 => format!("{:.2}×", self.value / b),
            Some(_) => "∞".to_string(),
            None => "–".to_string(),
        };
        println!(
            "| {} | {} | {} | {:.p$} | {} | {} |",
            self.id, self.figure, self.contender, self.value, rounds, ratio
        );
    }
}

/// The rows of one figure: a [`Line`] per contender that ran, each with
/// its ratio to `ours` (the best of its rounds), but the floor's; built as
/// `lines(id, figure, runs, ours)`, then what differs: `.floor(..)`,
/// `.places(..)`, `.chart(..)`, `.check(..)`, and `.rows()`.
pub struct Lines<'a> {
    id: &'static str,
    figure: String,
    runs: &'a [(&'static str, Vec<f64>)],
    ours: &'a str,
    floor: Option<&'a str>,
    places: usize,
    chart: Option<&'static str>,
    check: bool,
}

/// See [`Lines`].
pub fn lines<'a>(
    id: &'static str,
    figure: &str,
    runs: &'a [(&'static str, Vec<f64>)],
    ours: &'a str,
) -> Lines<'a> {
    Lines {
        id,
        figure: figure.to_string(),
        runs,
        ours,
        floor: None,
        places: 1,
        chart: None,
        check: false,
    }
}

impl<'a> Lines<'a> {
    /// The contender that is the runtime's floor (no timer): no ratio.
    pub fn floor(mut self, floor: Option<&'a str>) -> Self {
        self.floor = floor;
        self
    }

    /// Decimal places of the figures.
    pub fn places(mut self, places: usize) -> Self {
        self.places = places;
        self
    }

    /// The chart the rows are drawn in, if any.
    pub fn chart(mut self, chart: Option<&'static str>) -> Self {
        self.chart = chart;
        self
    }

    /// Whether the figure is a check (≥ 0: never early) or an index, not a
    /// cost: its rows have no ratio.
    pub fn check(mut self, check: bool) -> Self {
        self.check = check;
        self
    }

    /// The rows.
    pub fn rows(self) -> Vec<Line> {
        let base = self
            .runs
            .iter()
            .find(|(c, _)| *c == self.ours)
            .map(|(_, r)| best(r));
        self.runs
            .iter()
            .filter(|(_, r)| !r.is_empty())
            .map(|(c, r)| {
                let mut line = Line::new(self.id, &self.figure, c, r.clone()).places(self.places);
                if *c != self.ours && Some(*c) != self.floor && !self.check {
                    if let Some(b) = base {
                        line = line.base(b);
                    }
                }
                if let Some(key) = self.chart {
                    line = line.chart(key);
                }
                line
            })
            .collect()
    }
}

/// The second table: every [`Line`].
pub fn print_lines(lines: &[Line]) {
    if lines.is_empty() {
        return;
    }
    println!();
    println!("| id | figure | contender | best | rounds | rival / hashwheel |");
    println!("|----|--------|-----------|------|--------|-------------------|");
    for line in lines {
        line.print();
    }
}

/// The mean of a contender's rounds.
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The median of a contender's rounds (NaN for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The rounds' spread, `lo–hi` to `places` decimals, or the one figure
/// where they agree to that precision.
pub fn spread(v: &[f64], places: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if (hi - lo).abs() < 10f64.powi(-(places as i32)) {
        format!("{lo:.places$}")
    } else {
        format!("{lo:.places$}–{hi:.places$}")
    }
}
