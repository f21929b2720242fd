//! SVG charts of the run, drawn with plotters from the same rows that fill
//! the table: nothing is typed in by hand, so a run that changes the
//! figures redraws the pictures.
//!
//! - `w9.svg`: W9 (heartbeat storm) CPU, context switches and lateness p50 /
//!   p99, hashwheel against `tokio::time`;
//! - `ops.svg`: W1–W3 time per operation and W2 bytes per pending timer,
//!   hashwheel against `tokio::time` and tokio-util's `DelayQueue`;
//! - `queue.svg`: Q1–Q4 time per operation and Q2 bytes per item,
//!   hashwheel's `DelayQueue` against tokio-util's.
//!
//! A chart is drawn only by a run that measured all of its workloads (a
//! `--only=W9` run redraws `w9.svg` and leaves the others as they are), into
//! `Config::charts` (see `config`: the repository's `docs/charts/` on a full
//! run, nowhere on a `--quick` run unless `--charts` is given).

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::config::{repository, Config};
use crate::report::Row;

type Error = Box<dyn std::error::Error>;

/// Which column of a row holds a contender's figure.
#[derive(Clone, Copy)]
enum Column {
    Ours,
    Tokio,
    DelayQueue,
}

/// One contender: its name in the legend, its colour, its column.
struct Contender {
    name: &'static str,
    color: RGBColor,
    column: Column,
}

const HASHWHEEL: RGBColor = RGBColor(31, 119, 180);
const TOKIO: RGBColor = RGBColor(230, 120, 20);
const TOKIO_UTIL: RGBColor = RGBColor(70, 150, 70);
const HASHWHEEL_TIMER: Contender = Contender {
    name: "hashwheel",
    color: HASHWHEEL,
    column: Column::Ours,
};
const HASHWHEEL_QUEUE: Contender = Contender {
    name: "hashwheel::DelayQueue",
    color: HASHWHEEL,
    column: Column::Ours,
};
const TOKIO_TIME: Contender = Contender {
    name: "tokio::time",
    color: TOKIO,
    column: Column::Tokio,
};
const TOKIO_UTIL_QUEUE: Contender = Contender {
    name: "tokio-util DelayQueue",
    color: TOKIO_UTIL,
    column: Column::DelayQueue,
};
pub const INK: RGBColor = RGBColor(40, 40, 40);
pub const GREY: RGBColor = RGBColor(90, 90, 90);

/// One cluster of bars: each contender's figure for one measurement.
struct Group {
    /// Below the cluster; `\n` starts a second line.
    label: &'static str,
    values: Vec<Option<f64>>,
}

/// One plot of a chart.
struct Panel {
    title: &'static str,
    /// The y axis, with its unit.
    y_desc: &'static str,
    groups: Vec<Group>,
    /// Its share of the chart's width.
    weight: u32,
}

/// What a chart plots: `(row key, label below the bars, transform)`.
type Pick = (&'static str, &'static str, fn(f64) -> f64);

fn same(v: f64) -> f64 {
    v
}

/// M items per second to ns per item.
fn ns_per_item(rate: f64) -> f64 {
    if rate > 0.0 {
        1e3 / rate
    } else {
        0.0
    }
}

/// The groups of `picks` from `rows`, or `None` if a row is missing (its
/// workload did not run).
fn groups(rows: &[Row], contenders: &[Contender], picks: &[Pick]) -> Option<Vec<Group>> {
    picks
        .iter()
        .map(|&(key, label, f)| {
            let row = rows.iter().find(|r| r.chart == Some(key))?;
            let values = contenders
                .iter()
                .map(|c| match c.column {
                    Column::Ours => Some(row.ours),
                    Column::Tokio => row.tokio,
                    Column::DelayQueue => row.delay_queue,
                })
                .map(|v| v.map(f))
                .collect();
            Some(Group { label, values })
        })
        .collect()
}

/// Draws every chart whose workloads this run measured into `cfg.charts`;
/// says on stderr what it wrote and what it left alone. A chart that cannot
/// be written is reported, and the run goes on.
pub fn draw_all(cfg: &Config, rows: &[Row]) {
    let Some(dir) = &cfg.charts else {
        eprintln!("charts: none drawn (--no-charts, or a --quick run without --charts)");
        return;
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("charts: cannot create {}: {e}", dir.display());
        return;
    }
    let run = run_note();
    let ratio_note =
        "Lower is better. On a rival's bar: its figure ÷ hashwheel's (above 1×: hashwheel is cheaper).";

    let duo = [HASHWHEEL_TIMER, TOKIO_TIME];
    let trio = [HASHWHEEL_TIMER, TOKIO_TIME, TOKIO_UTIL_QUEUE];
    let queues = [HASHWHEEL_QUEUE, TOKIO_UTIL_QUEUE];

    // W9: the heartbeat storm.
    let w9 = (|| {
        Some(vec![
            panel(
                rows,
                &duo,
                "CPU time",
                "CPU ms per second, all threads",
                "W9 cpu",
                same,
            )?,
            panel(
                rows,
                &duo,
                "Context switches",
                "context switches per second",
                "W9 csw",
                same,
            )?,
            Panel {
                title: "Heartbeat lateness",
                y_desc: "ms after the deadline",
                groups: groups(
                    rows,
                    &duo,
                    &[("W9 p50", "p50", same), ("W9 p99", "p99", same)],
                )?,
                weight: 2,
            },
        ])
    })();
    let title = format!(
        "W9 heartbeat storm: {} connections, {} workers",
        thousands(cfg.w9_connections),
        cfg.w9_workers
    );
    let notes = [
        format!(
            "Each connection: a 1 s heartbeat interval and a 30 s idle timeout pushed back on every beat. \
             Each contender in a child process of its own, measured over {} s after {} s of warm-up.",
            cfg.w9_window_ms as f64 / 1e3,
            cfg.w9_warmup_ms as f64 / 1e3
        ),
        ratio_note.to_string(),
        run.clone(),
    ];
    write(dir, "w9.svg", w9, (1000, 480), &title, &notes, &duo);

    // W1–W3: per-operation cost, each on a scale of its own.
    let ops = (|| {
        Some(vec![
            panel(
                rows,
                &trio,
                "W1 schedule + cancel",
                "ns per schedule + cancel",
                "W1",
                same,
            )?,
            panel(rows, &trio, "W2 insert", "ns per insert", "W2 ns", same)?,
            panel(rows, &trio, "W3 reset", "ns per reset", "W3", same)?,
            panel(
                rows,
                &trio,
                "W2 memory",
                "bytes per pending timer (heap + handle)",
                "W2 bytes",
                same,
            )?,
        ])
    })();
    let notes = [
        format!(
            "W1: schedule + cancel; W2: {} timeouts pending at once; W3: {} timeouts reset 10 times each. \
             One thread, best of {} interleaved runs.",
            thousands(cfg.w2_hold),
            thousands(cfg.w3_timers),
            cfg.reps
        ),
        ratio_note.to_string(),
        run.clone(),
    ];
    write(
        dir,
        "ops.svg",
        ops,
        (1000, 460),
        "Per-operation cost: hashwheel, tokio::time, tokio-util's DelayQueue",
        &notes,
        &trio,
    );

    // Q1–Q4: the keyed queues.
    let queue = (|| {
        Some(vec![
            panel(
                rows,
                &queues,
                "Q1 insert + remove",
                "ns per insert + remove",
                "Q1",
                same,
            )?,
            panel(rows, &queues, "Q2 insert", "ns per insert", "Q2 ns", same)?,
            panel(rows, &queues, "Q3 reset", "ns per reset", "Q3", same)?,
            panel(
                rows,
                &queues,
                "Q4 expire",
                "ns per item drained",
                "Q4 rate",
                ns_per_item,
            )?,
            panel(
                rows,
                &queues,
                "Q2 memory",
                "bytes per item (heap + key)",
                "Q2 bytes",
                same,
            )?,
        ])
    })();
    let notes = [
        format!(
            "Q1: insert + remove; Q2: {} items held; Q3: {} items reset 10 times each; Q4: {} items \
             expired, drained through the Stream. Best of {} interleaved runs.",
            thousands(cfg.q_hold),
            thousands(cfg.q_items),
            thousands(cfg.q_expire),
            cfg.reps
        ),
        ratio_note.to_string(),
        run,
    ];
    write(
        dir,
        "queue.svg",
        queue,
        (1000, 460),
        "Keyed queue: hashwheel's DelayQueue against tokio-util's",
        &notes,
        &queues,
    );
}

/// Fills `root` white and draws a chart's title and notes at its top;
/// returns the height they take, where the legend goes.
pub fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    notes: &[String],
) -> Result<i32, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let left_top = Pos::new(HPos::Left, VPos::Top);
    root.draw(&Text::new(
        title.to_string(),
        (16, 12),
        ("sans-serif", 21)
            .into_font()
            .style(FontStyle::Bold)
            .color(&INK)
            .pos(left_top),
    ))?;
    let mut y = 42;
    for note in notes {
        root.draw(&Text::new(
            note.clone(),
            (16, y),
            ("sans-serif", 12).into_font().color(&GREY).pos(left_top),
        ))?;
        y += 17;
    }
    Ok(y + 6)
}

/// A panel of one figure (one cluster of bars, no label below it).
fn panel(
    rows: &[Row],
    contenders: &[Contender],
    title: &'static str,
    y_desc: &'static str,
    key: &'static str,
    f: fn(f64) -> f64,
) -> Option<Panel> {
    Some(Panel {
        title,
        y_desc,
        groups: groups(rows, contenders, &[(key, "", f)])?,
        weight: 1,
    })
}

/// Writes one chart, or says why not.
fn write(
    dir: &Path,
    file: &str,
    panels: Option<Vec<Panel>>,
    size: (u32, u32),
    title: &str,
    notes: &[String],
    contenders: &[Contender],
) {
    let path = dir.join(file);
    let Some(panels) = panels else {
        eprintln!("charts: {file} left as it was (this run did not measure all of its workloads)");
        return;
    };
    match draw(&path, size, title, notes, contenders, &panels) {
        Ok(()) => eprintln!("charts: wrote {}", path.display()),
        Err(e) => eprintln!("charts: cannot write {}: {e}", path.display()),
    }
}

/// The last line of every chart's notes: when and how the run was made.
pub fn run_note() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_date(secs / 86_400);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    // The command line as typed after `--` (cargo adds `--bench`).
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let args = if args.is_empty() {
        String::new()
    } else {
        format!(" -- {}", args.join(" "))
    };
    let code = code_version().map_or(String::new(), |v| format!(" on {v}"));
    format!(
        "Drawn by cargo bench -p hashwheel-benches --bench compare{args}{code}, \
         {y:04}-{m:02}-{d:02}, {cpus} CPUs."
    )
}

/// The commit the measured code is at, `+` local changes if the work tree
/// differs from it (the charts themselves aside); `None` without git.
fn code_version() -> Option<String> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(repository())
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    let changes = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        ":(exclude)docs/charts",
    ])?;
    Some(if changes.is_empty() {
        format!("commit {commit}")
    } else {
        format!("commit {commit} + local changes")
    })
}

/// Year, month, day of a count of days since 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `100000` as `100,000`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A figure with three significant digits or so: `647`, `96.3`, `0.92`.
fn figure(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A y-axis tick on an axis that ends at `top`.
fn tick(v: f64, top: f64) -> String {
    if top >= 10.0 {
        format!("{v:.0}")
    } else if top >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Rough width in pixels of `text` at `size` px, for laying out the legend.
pub fn text_width(text: &str, size: u32) -> i32 {
    (text.chars().count() as f64 * size as f64 * 0.58) as i32
}

fn draw(
    path: &Path,
    (width, height): (u32, u32),
    title: &str,
    notes: &[String],
    contenders: &[Contender],
    panels: &[Panel],
) -> Result<(), Error> {
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    let left_top = Pos::new(HPos::Left, VPos::Top);
    // Header: title, notes, legend.
    let y = header(&root, title, notes)?;
    let mut x = 16;
    for c in contenders {
        root.draw(&Rectangle::new(
            [(x, y), (x + 14, y + 14)],
            c.color.filled(),
        ))?;
        root.draw(&Text::new(
            c.name.to_string(),
            (x + 20, y),
            ("sans-serif", 14).into_font().color(&INK).pos(left_top),
        ))?;
        x += 20 + text_width(c.name, 14) + 28;
    }
    let header = (y + 24) as u32;

    // Panels side by side, each its share of the width.
    let (_, body) = root.split_vertically(header);
    let total: u32 = panels.iter().map(|p| p.weight).sum();
    let mut breaks = Vec::new();
    let mut at = 0;
    for p in &panels[..panels.len() - 1] {
        at += width * p.weight / total;
        breaks.push(at);
    }
    let areas = body.split_by_breakpoints(breaks, [] as [u32; 0]);
    // Room below the axes for the clusters' labels, the same in every panel
    // so that the axes line up.
    let lines = panels
        .iter()
        .flat_map(|p| &p.groups)
        .map(|g| g.label.lines().count() as u32)
        .max()
        .unwrap_or(0);
    let below = 12 + 16 * lines;
    for (panel, area) in panels.iter().zip(&areas) {
        draw_panel(&root, area, panel, contenders, below)?;
    }
    root.present()?;
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    contenders: &[Contender],
    below: u32,
) -> Result<(), Error>
where
    DB::ErrorType: 'static,
{
    let n = panel.groups.len();
    let max = panel
        .groups
        .iter()
        .flat_map(|g| g.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    // Room above the tallest bar for its two lines of labels.
    let top = if max > 0.0 { max * 1.28 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, ("sans-serif", 16).into_font().color(&INK))
        .margin_left(6)
        .margin_right(14)
        .margin_top(2)
        .margin_bottom(4)
        .x_label_area_size(below)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..n as f64, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(6)
        .y_label_formatter(&|v| tick(*v, top))
        .y_desc(panel.y_desc)
        .axis_desc_style(("sans-serif", 13).into_font().color(&INK))
        .label_style(("sans-serif", 12).into_font().color(&GREY))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .axis_style(GREY)
        .draw()?;

    let k = contenders.len() as f64;
    let slot = 0.8 / k;
    let bottom_center = Pos::new(HPos::Center, VPos::Bottom);
    for (ci, c) in contenders.iter().enumerate() {
        let bar = |gi: usize| {
            let x0 = gi as f64 + 0.1 + slot * ci as f64;
            (x0 + slot * 0.08, x0 + slot * 0.92)
        };
        chart.draw_series(panel.groups.iter().enumerate().filter_map(|(gi, g)| {
            let v = g.values[ci]?;
            let (x0, x1) = bar(gi);
            Some(Rectangle::new([(x0, 0.0), (x1, v)], c.color.filled()))
        }))?;
        chart.draw_series(panel.groups.iter().enumerate().filter_map(|(gi, g)| {
            let v = g.values[ci]?;
            let (x0, x1) = bar(gi);
            let value = Text::new(
                figure(v),
                (0, -3),
                ("sans-serif", 12)
                    .into_font()
                    .color(&INK)
                    .pos(bottom_center),
            );
            // A rival's bar also says how many times hashwheel's figure it is.
            let ratio = match (ci, g.values[0]) {
                (1.., Some(ours)) if ours > 0.0 => format!("{:.2}×", v / ours),
                _ => String::new(),
            };
            let ratio = Text::new(
                ratio,
                (0, -18),
                ("sans-serif", 12)
                    .into_font()
                    .style(FontStyle::Bold)
                    .color(&c.color)
                    .pos(bottom_center),
            );
            Some(EmptyElement::at(((x0 + x1) / 2.0, v)) + value + ratio)
        }))?;
    }

    // The groups' labels, below the axis.
    let top_center = Pos::new(HPos::Center, VPos::Top);
    for (gi, g) in panel.groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(gi as f64 + 0.5, 0.0));
        for (li, line) in g.label.lines().enumerate() {
            let style = if li == 0 {
                ("sans-serif", 13)
                    .into_font()
                    .style(FontStyle::Bold)
                    .color(&INK)
            } else {
                ("sans-serif", 12).into_font().color(&GREY)
            };
            root.draw(&Text::new(
                line.to_string(),
                (x, y + 8 + 16 * li as i32),
                style.pos(top_center),
            ))?;
        }
    }
    Ok(())
}
