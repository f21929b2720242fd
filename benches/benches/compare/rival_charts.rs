//! SVG charts of the workloads with many contenders (W10, W11, W12), drawn
//! with plotters from the [`Line`]s of the second table, on a log scale:
//!
//! - `w10.svg`: CPU ns per request of the request-timeout wrapper, one
//!   panel per runtime (current-thread, 1 and 2 workers), then the two
//!   "any executor" panels (a `futures` thread pool, 2 tokio workers);
//! - `w11.svg`: the tails (p50, p99, p99.99, worst) of insert, reset and
//!   cancel while growing to N pending timers;
//! - `w12.svg`: the lateness p50 and p99 of short sleeps, `light` and
//!   `busy`, current-thread and 2 workers;
//! - `w9-rivals.svg`: W9 (heartbeat storm) with tokio's alternative timer
//!   (when built in) and pingora-timeout's lighter heartbeats-only storm
//!   beside hashwheel and `tokio::time`.
//!
//! As in `charts`, a chart is drawn only by a run that measured all of its
//! figures.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::charts::{run_note, text_width, thousands, GREY, INK};
use crate::config::Config;
use crate::report::Line;

type Error = Box<dyn std::error::Error>;

/// hashwheel's contenders get the blues, in order of first appearance.
const BLUES: [RGBColor; 3] = [
    RGBColor(31, 119, 180),
    RGBColor(20, 60, 120),
    RGBColor(110, 175, 225),
];

/// Each rival keeps its colour in every chart (tokio's and tokio-util's as
/// in `charts`).
fn rival_color(name: &str) -> RGBColor {
    if name.contains("floor") {
        RGBColor(150, 150, 150)
    } else if name.starts_with("tokio alternative") {
        RGBColor(150, 100, 190)
    } else if name.starts_with("tokio-util") {
        RGBColor(70, 150, 70)
    } else if name.starts_with("tokio") {
        RGBColor(230, 120, 20)
    } else if name.starts_with("pingora") {
        RGBColor(200, 50, 50)
    } else if name.starts_with("futures-timer") {
        RGBColor(20, 170, 170)
    } else if name.starts_with("async-io") {
        RGBColor(140, 90, 60)
    } else {
        RGBColor(200, 170, 40)
    }
}

/// One panel: clusters of bars, one cluster per label, one bar per
/// contender that has a figure under the panel's keys.
struct Panel {
    title: String,
    /// The clusters: (label, chart key).
    groups: Vec<(&'static str, &'static str)>,
}

/// Every contender that has a line under one of `keys`, in order of first
/// appearance.
fn contenders<'a>(lines: &'a [Line], keys: &[&str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for l in lines {
        if l.chart.is_some_and(|k| keys.contains(&k)) && !out.contains(&l.contender) {
            out.push(l.contender);
        }
    }
    out
}

fn value(lines: &[Line], key: &str, contender: &str) -> Option<f64> {
    lines
        .iter()
        .find(|l| l.chart == Some(key) && l.contender == contender)
        .map(|l| l.value)
}

pub fn draw_all(cfg: &Config, dir: &Path, lines: &[Line]) {
    let run = run_note();
    let panel = |title: &str, groups: &[(&'static str, &'static str)]| Panel {
        title: title.to_string(),
        groups: groups.to_vec(),
    };
    write(
        dir,
        "w10.svg",
        lines,
        &[
            panel("current-thread", &[("", "W10 ct")]),
            panel("1 worker", &[("", "W10 1w")]),
            panel("2 workers", &[("", "W10 2w")]),
            panel("any executor:\nfutures pool, 2 threads", &[("", "W10 any pool")]),
            panel("any executor:\n2 tokio workers", &[("", "W10 any 2w")]),
        ],
        "W10 request-timeout wrapper: process CPU ns per request (log scale)",
        "CPU ns per request",
        &[
            format!(
                "1,000 tasks each loop timeout(30 s, f), f pending once then ready; {} requests per task; \
                 each contender in a child process of its own, best of {} alternating rounds.",
                thousands(cfg.w10_loops),
                cfg.w10_rounds
            ),
            "Lower is better. The floor runs the same loop with no timeout.".to_string(),
            run.clone(),
        ],
    );
    write(
        dir,
        "w9-rivals.svg",
        lines,
        &[
            panel("CPU ms per second", &[("", "W9r cpu")]),
            panel("context switches\nper second", &[("", "W9r csw")]),
            panel("heartbeat lateness, ms", &[("p50", "W9r p50"), ("p99", "W9r p99")]),
        ],
        &format!(
            "W9 heartbeat storm against every rival: {} connections, {} workers (log scale)",
            thousands(cfg.w9_connections),
            cfg.w9_workers
        ),
        "each panel's own unit",
        &[
            "Each connection: a 1 s heartbeat and a 30 s idle timeout pushed back on every beat; pingora's \
             storm is lighter work (heartbeats only, no idle timeout, deadlines rounded to 10 ms)."
                .to_string(),
            "Lower is better. Each contender in a child process of its own.".to_string(),
            run.clone(),
        ],
    );
    let ops = |op: &str| -> Vec<(&'static str, &'static str)> {
        let keys: [&'static str; 4] = match op {
            "insert" => [
                "W11 insert p50",
                "W11 insert p99",
                "W11 insert p99.99",
                "W11 insert worst",
            ],
            "reset" => [
                "W11 reset p50",
                "W11 reset p99",
                "W11 reset p99.99",
                "W11 reset worst",
            ],
            _ => [
                "W11 cancel p50",
                "W11 cancel p99",
                "W11 cancel p99.99",
                "W11 cancel worst",
            ],
        };
        ["p50", "p99", "p99.99", "worst"]
            .into_iter()
            .zip(keys)
            .collect()
    };
    write(
        dir,
        "w11.svg",
        lines,
        &[
            panel("insert", &ops("insert")),
            panel("reset", &ops("reset")),
            panel("cancel", &ops("cancel")),
        ],
        &format!(
            "W11 growth to {} pending timers: time of one operation (log scale)",
            thousands(cfg.w11_count)
        ),
        "ns per operation",
        &[
            "Timers inserted one at a time (60 s deadlines spread over one second), then each reset, then each \
             cancelled; every operation timed (one clock read included)."
                .to_string(),
            worst_at(lines),
            "Lower is better. Each contender in a child process of its own, current-thread runtime."
                .to_string(),
            run.clone(),
        ],
    );
    let lat = |mode: &str, fl: &str| -> Vec<(&'static str, &'static str)> {
        let keys: [&'static str; 2] = match (mode, fl) {
            ("light", "ct") => ["W12 light ct p50", "W12 light ct p99"],
            ("light", _) => ["W12 light 2w p50", "W12 light 2w p99"],
            ("busy", "ct") => ["W12 busy ct p50", "W12 busy ct p99"],
            _ => ["W12 busy 2w p50", "W12 busy 2w p99"],
        };
        ["p50", "p99"].into_iter().zip(keys).collect()
    };
    write(
        dir,
        "w12.svg",
        lines,
        &[
            panel("light, current-thread", &lat("light", "ct")),
            panel("light, 2 workers", &lat("light", "2w")),
            panel("busy, current-thread", &lat("busy", "ct")),
            panel("busy, 2 workers", &lat("busy", "2w")),
        ],
        "W12 short sleeps (50–2,000 µs): lateness after the deadline (log scale)",
        "µs late",
        &[
            format!(
                "light: one task, {} sleeps in a row; busy: 1,000 tasks looping sleeps for {} s. \
                 std::thread::sleep on plain threads is the floor (the same figures in both flavours).",
                thousands(cfg.w12_light),
                cfg.w12_busy_secs
            ),
            "Lower is better. Each contender in a child process of its own.".to_string(),
            run,
        ],
    );
}

/// Where each contender's worst insert happened, from W11's lines.
fn worst_at(lines: &[Line]) -> String {
    let at: Vec<String> = lines
        .iter()
        .filter(|l| l.id == "W11" && l.figure.ends_with("insert worst at operation #"))
        .map(|l| format!("{} #{}", l.contender, thousands(l.value as usize)))
        .collect();
    format!("Worst insert at: {}.", at.join("; "))
}

fn write(
    dir: &Path,
    file: &str,
    lines: &[Line],
    panels: &[Panel],
    title: &str,
    y_desc: &str,
    notes: &[String],
) {
    let path = dir.join(file);
    let complete = panels.iter().all(|p| {
        p.groups
            .iter()
            .all(|(_, key)| lines.iter().any(|l| l.chart == Some(*key)))
    });
    if !complete {
        eprintln!("charts: {file} left as it was (this run did not measure all of its workloads)");
        return;
    }
    match draw(&path, lines, panels, title, y_desc, notes) {
        Ok(()) => eprintln!("charts: wrote {}", path.display()),
        Err(e) => eprintln!("charts: cannot write {}: {e}", path.display()),
    }
}

fn draw(
    path: &Path,
    lines: &[Line],
    panels: &[Panel],
    title: &str,
    y_desc: &str,
    notes: &[String],
) -> Result<(), Error> {
    let (width, height) = (1200u32, 560u32);
    let all_keys: Vec<&str> = panels
        .iter()
        .flat_map(|p| p.groups.iter().map(|g| g.1))
        .collect();
    let everyone = contenders(lines, &all_keys);
    let ours: Vec<&str> = everyone
        .iter()
        .copied()
        .filter(|c| c.starts_with("hashwheel"))
        .collect();
    let color = |c: &str| match ours.iter().position(|o| *o == c) {
        Some(i) => BLUES[i % BLUES.len()],
        None => rival_color(c),
    };
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    let left_top = Pos::new(HPos::Left, VPos::Top);
    let mut y = crate::charts::header(&root, title, notes)?;
    // The legend, wrapped to the chart's width.
    let mut x = 16;
    for c in &everyone {
        let w = 20 + text_width(c, 13) + 24;
        if x + w > width as i32 - 16 {
            x = 16;
            y += 20;
        }
        root.draw(&Rectangle::new(
            [(x, y), (x + 14, y + 14)],
            color(c).filled(),
        ))?;
        root.draw(&Text::new(
            c.to_string(),
            (x + 20, y),
            ("sans-serif", 13).into_font().color(&INK).pos(left_top),
        ))?;
        x += w;
    }
    let header = (y + 26) as u32;
    let (_, body) = root.split_vertically(header);
    let areas = body.split_evenly((1, panels.len()));
    // One scale for every panel, so that bars compare across them.
    let values: Vec<f64> = all_keys
        .iter()
        .flat_map(|k| lines.iter().filter(move |l| l.chart == Some(*k)))
        .map(|l| l.value)
        .filter(|v| *v > 0.0)
        .collect();
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(1e-3)
        / 2.0;
    let hi = values.iter().copied().fold(0.0f64, f64::max).max(lo * 10.0) * 4.0;
    // The same room for the titles in every panel, so the axes line up.
    let title_lines = panels
        .iter()
        .map(|p| p.title.lines().count() as u32)
        .max()
        .unwrap_or(1);
    let scale = Scale {
        lo,
        hi,
        title_lines,
        y_desc,
    };
    for (panel, area) in panels.iter().zip(&areas) {
        let who = contenders(lines, &panel.groups.iter().map(|g| g.1).collect::<Vec<_>>());
        draw_panel(&root, area, panel, lines, &who, &color, &scale)?;
    }
    root.present()?;
    Ok(())
}

/// What every panel of a chart shares: the y range, the room for titles,
/// the y axis's name.
struct Scale<'a> {
    lo: f64,
    hi: f64,
    title_lines: u32,
    y_desc: &'a str,
}

fn draw_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    lines: &[Line],
    who: &[&str],
    color: &dyn Fn(&str) -> RGBColor,
    scale: &Scale,
) -> Result<(), Error>
where
    DB::ErrorType: 'static,
{
    let Scale {
        lo,
        hi,
        title_lines,
        y_desc,
    } = *scale;
    let n = panel.groups.len();
    let mut chart = ChartBuilder::on(area)
        .margin_left(6)
        .margin_right(10)
        .margin_top(8 + 16 * title_lines)
        .margin_bottom(4)
        .x_label_area_size(28)
        .y_label_area_size(58)
        .build_cartesian_2d(0.0..n as f64, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(16)
        .y_label_formatter(&|v| short(*v))
        .y_desc(y_desc)
        .axis_desc_style(("sans-serif", 12).into_font().color(&INK))
        .label_style(("sans-serif", 11).into_font().color(&GREY))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .axis_style(GREY)
        .draw()?;
    // The panel's title, above its plot.
    let (cx, top) = chart.backend_coord(&(n as f64 / 2.0, hi));
    let own = panel.title.lines().count() as i32;
    for (i, line) in panel.title.lines().enumerate() {
        root.draw(&Text::new(
            line.to_string(),
            (cx, top - 8 - 16 * (own - i as i32)),
            ("sans-serif", 14)
                .into_font()
                .style(FontStyle::Bold)
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    let k = who.len().max(1) as f64;
    let slot = 0.84 / k;
    for (ci, c) in who.iter().enumerate() {
        let bar = |gi: usize| {
            let x0 = gi as f64 + 0.08 + slot * ci as f64;
            (x0 + slot * 0.06, x0 + slot * 0.94)
        };
        let fill = color(c);
        for (gi, (_, key)) in panel.groups.iter().enumerate() {
            let Some(v) = value(lines, key, c) else {
                continue;
            };
            if v <= 0.0 {
                continue;
            }
            let (x0, x1) = bar(gi);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, lo), (x1, v)],
                fill.filled(),
            )))?;
            // The figure, written upwards above the bar.
            let (bx, by) = chart.backend_coord(&((x0 + x1) / 2.0, v));
            root.draw(&Text::new(
                short(v),
                (bx - 5, by - 3),
                ("sans-serif", 10)
                    .into_font()
                    .transform(FontTransform::Rotate270)
                    .color(&INK),
            ))?;
        }
    }
    for (gi, (label, _)) in panel.groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(gi as f64 + 0.5, lo));
        root.draw(&Text::new(
            label.to_string(),
            (x, y + 6),
            ("sans-serif", 12)
                .into_font()
                .style(FontStyle::Bold)
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// `1234567` as `1.2M`, `2500` as `2.5k`, `36.4` as `36`, `0.5` as `0.5`.
fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}
