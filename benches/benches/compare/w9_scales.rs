//! W9 across scales (`--only=W9 --w9-scales`): the heartbeat storm at
//! 1,000, 10,000, 100,000 and 1,000,000 connections on 2 workers and at
//! 1,000, 10,000 and 100,000 on 1 worker (small servers are most servers),
//! every contender (`Timer`, `hashwheel::time`, `tokio::time`, tokio's
//! alternative timer where built in, and the runtime's floor: the same
//! wakes with no timer) in a child process of its own, the contenders alternating within each of
//! `--w9-rounds` rounds (3 by default: single rounds swing by 15–20% on
//! these machines). Prints one table with every round, the mean, the ratio
//! of the means to tokio's and the highest single-round ratio, and draws
//! `w9-scales.svg`: CPU per heartbeat against the connection count. Its
//! "came in" column is the share of the heartbeats due in a child's window
//! that came in by its end: below 1.00 the contender fell behind, and its
//! CPU is what the machine let it spend, not what the load asks; the last
//! column, each contender's CPU per heartbeat that came in against
//! tokio's, is the ratio that holds then.
//! `--w9-scale=100000x1,1000000x16` (a comma-separated list of
//! `CONNECTIONSxWORKERS`, any counts) runs those rows instead.

use std::path::Path;

use plotters::prelude::*;

use crate::charts::{header, run_note, thousands, GREY, INK};
use crate::child::{get, Figures, ALT_NOTE, ALT_TIMER};
use crate::config::Config;
use crate::report::{mean, median, spread};
use crate::w9::w9_run_at;

/// The scales run: (connections, workers).
const SCALES: [(usize, usize); 7] = [
    (1_000, 2),
    (10_000, 2),
    (100_000, 2),
    (1_000_000, 2),
    (1_000, 1),
    (10_000, 1),
    (100_000, 1),
];

/// The contenders, as the child knows them, and as the table names them.
fn contenders() -> Vec<(&'static str, &'static str)> {
    let mut out = vec![
        ("hashwheel", "hashwheel Timer"),
        ("time", "hashwheel::time"),
        ("tokio", "tokio::time"),
        ("floor", FLOOR),
    ];
    if ALT_TIMER {
        out.push(("alt", "tokio alternative timer"));
    }
    out
}

/// The runtime's floor (`w9::w9_conn_floor`): the same wakes with no timer.
const FLOOR: &str = "runtime floor (no timer)";

/// One contender's rounds at one scale.
struct Rounds {
    name: &'static str,
    figures: Vec<Figures>,
}

impl Rounds {
    fn each(&self, key: &str) -> Vec<f64> {
        self.figures.iter().map(|f| get(f, key)).collect()
    }

    fn mean(&self, key: &str) -> f64 {
        mean(&self.each(key))
    }
}

/// Runs every scale and prints its table; draws the chart if `cfg.charts`.
pub fn w9_scales(cfg: &Config) {
    let rounds = cfg.w9_rounds.max(1);
    let who = contenders();
    if !ALT_TIMER {
        eprintln!("W9 scales: {ALT_NOTE}");
    }
    let mut results: Vec<((usize, usize), Vec<Rounds>)> = Vec::new();
    // `--w9-scale=100000x1,1000000x16` runs those rows instead
    // (`CONNECTIONSxWORKERS`, any counts).
    let picked: Option<String> = crate::config::arg("w9-scale");
    let scales: Vec<(usize, usize)> = match &picked {
        None => SCALES.to_vec(),
        Some(list) => list
            .split(',')
            .map(|s| {
                s.split_once('x')
                    .and_then(|(n, w)| Some((n.parse().ok()?, w.parse().ok()?)))
                    .filter(|&(n, w)| n > 0 && w > 0)
                    .unwrap_or_else(|| {
                        panic!("--w9-scale: {s} is not CONNECTIONSxWORKERS (e.g. 1000000x16)")
                    })
            })
            .collect(),
    };
    for &(n, workers) in &scales {
        let mut these: Vec<Rounds> = who
            .iter()
            .map(|&(_, name)| Rounds {
                name,
                figures: Vec::new(),
            })
            .collect();
        for round in 0..rounds {
            for (i, &(which, _)) in who.iter().enumerate() {
                // Spawning a million connections takes seconds: the
                // window starts once they all beat.
                let warmup = cfg.w9_warmup_ms.max(n as u64 / 250);
                let f = w9_run_at(which, cfg, n, workers, warmup);
                eprintln!(
                    "W9 {n} conns, {workers} workers, round {}: {which} {:.1} CPU ms/s",
                    round + 1,
                    get(&f, "cpu_ms_s")
                );
                these[i].figures.push(f);
            }
        }
        results.push(((n, workers), these));
    }
    println!();
    println!(
        "W9 across scales, variant `{}` (`--w9-variant=`: bench, pinned, inside, sample64, warm, \
         indep; see w9::Variant): CPU ms/s per round, the mean's ratio to tokio::time's, the median \
         of the single-round ratios (round i against tokio's round i: a neighbour's burst on \
         the shared machine moves one round, not the median) and the highest, CPU ns per \
         heartbeat (mean) and above the runtime's floor (the same tasks woken at the same \
         instants by a cursor over them, no timer: what any timer pays on this runtime) with its \
         ratio to tokio's, lateness p50 / p99 ms (spread over rounds), RSS growth bytes per \
         connection (mean), the share of the heartbeats due in the window that came in by its end \
         and 300 ms more (the lowest round; below 1.00 the contender fell behind, and its CPU is what it \
         could spend, not what the load asks), and the mean CPU per heartbeat that came in (each \
         round's CPU over its share) against tokio's: the ratio that holds where tokio fell \
         behind)",
        crate::w9::Variant::from_args().name()
    );
    println!();
    println!("| connections | workers | contender | CPU ms/s (rounds) | mean ÷ tokio | median round ÷ tokio | worst round ÷ tokio | ns per beat | above the floor (÷ tokio's) | p50 ms | p99 ms | min µs | bytes/conn | came in | ÷ tokio per beat that came in |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for ((n, workers), these) in &results {
        let tokio = these
            .iter()
            .find(|r| r.name == "tokio::time")
            .expect("tokio ran");
        let tokio_each = tokio.each("cpu_ms_s");
        let due = due(*n, cfg);
        let tokio_per_beat_in = per_beat_in(tokio, &shares_in(tokio, due));
        let floor = these.iter().find(|r| r.name == FLOOR);
        let above =
            |r: &Rounds| floor.map(|f| (r.mean("cpu_ms_s") - f.mean("cpu_ms_s")) * 1e6 / *n as f64);
        for r in these {
            let each = r.each("cpu_ms_s");
            let cpu: Vec<String> = each.iter().map(|v| format!("{v:.1}")).collect();
            let ratios: Vec<f64> = each.iter().zip(&tokio_each).map(|(a, b)| a / b).collect();
            let worst = ratios.iter().copied().reduce(f64::max).unwrap_or(f64::NAN);
            let median = median(&ratios);
            let per_beat = r.mean("cpu_ms_s") * 1e6 / *n as f64;
            let p50: Vec<f64> = r.each("p50_us").iter().map(|v| v / 1e3).collect();
            let p99: Vec<f64> = r.each("p99_us").iter().map(|v| v / 1e3).collect();
            let min = r
                .each("min_us")
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let per_conn: f64 = r
                .figures
                .iter()
                .map(|f| (get(f, "rss") - get(f, "rss_base")) / *n as f64)
                .sum::<f64>()
                / r.figures.len() as f64;
            let above_floor = match (above(r), above(tokio)) {
                _ if r.name == FLOOR => "–".to_string(),
                // Within the rounds' spread of the floor, tokio's timer
                // costs nothing measurable: no ratio.
                (Some(a), Some(t)) if t <= 0.0 => format!("{a:.0} (tokio's ≤ 0)"),
                (Some(a), Some(t)) => format!("{a:.0} ({:.2}×)", a / t),
                _ => "–".to_string(),
            };
            let shares = shares_in(r, due);
            let came_in = shares.iter().copied().fold(f64::INFINITY, f64::min);
            let per_beat_in = per_beat_in(r, &shares) / tokio_per_beat_in;
            println!(
                "| {} | {workers} | {} | {} | {:.2}× | {median:.2}× | {:.2}× | {per_beat:.0} | {above_floor} | {} | {} | {min:.0} | {per_conn:.0} | {came_in:.2} | {per_beat_in:.2}× |",
                thousands(*n),
                r.name,
                cpu.join(", "),
                r.mean("cpu_ms_s") / tokio.mean("cpu_ms_s"),
                worst,
                spread(&p50, 2),
                spread(&p99, 2),
            );
        }
    }
    if let Some(dir) = &cfg.charts {
        if let Err(e) = chart(dir, &results, rounds) {
            eprintln!("W9 scales: chart not drawn: {e}");
        }
    }
}

/// Each round's share of the `due` heartbeats of its window (see [`due`])
/// that came in by its end.
fn shares_in(r: &Rounds, due: f64) -> Vec<f64> {
    r.each("count").iter().map(|count| count / due).collect()
}

/// `r`'s mean CPU (ms/s) per heartbeat that came in, each round's CPU over
/// its share (`shares`, from [`shares_in`]): where a contender fell
/// behind, what a beat it did cost it.
fn per_beat_in(r: &Rounds, shares: &[f64]) -> f64 {
    let each: Vec<f64> = r
        .each("cpu_ms_s")
        .iter()
        .zip(shares)
        .map(|(cpu, share)| cpu / share.max(f64::MIN_POSITIVE))
        .collect();
    mean(&each)
}

/// The heartbeats due in a child's window among the connections it times
/// (every one, or every 64th for `sample64`): one a second each.
fn due(n: usize, cfg: &Config) -> f64 {
    let timed = if crate::w9::Variant::from_args().sample64 {
        n.div_ceil(64)
    } else {
        n
    };
    timed as f64 * cfg.w9_window_ms as f64 / 1000.0
}

type Error = Box<dyn std::error::Error>;

fn color(name: &str) -> RGBColor {
    match name {
        "hashwheel Timer" => RGBColor(31, 119, 180),
        "hashwheel::time" => RGBColor(110, 175, 225),
        "tokio::time" => RGBColor(230, 120, 20),
        FLOOR => RGBColor(140, 140, 140),
        _ => RGBColor(150, 100, 190),
    }
}

/// `w9-scales.svg`: mean CPU ns per heartbeat against connections (log
/// scale), a line per contender and worker count, each round as a dot.
fn chart(
    dir: &Path,
    results: &[((usize, usize), Vec<Rounds>)],
    rounds: usize,
) -> Result<(), Error> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("w9-scales.svg");
    let root = SVGBackend::new(&path, (1000, 560)).into_drawing_area();
    let notes = [
        format!(
            "N tasks, each a 1 s heartbeat interval and a 30 s idle timeout reset on every beat; \
             process CPU over the window ÷ N heartbeats per second; {rounds} rounds, contenders \
             alternating, each in a child process of its own."
        ),
        "Thick lines: 2 workers; thin: 1 worker. Dots: single rounds. Lower is better.".to_string(),
        run_note(),
    ];
    let top = header(&root, "W9 heartbeat storm: CPU ns per heartbeat", &notes)?;
    let (_, body) = root.split_vertically(top);
    let per_beat = |f: &Figures, n: usize| get(f, "cpu_ms_s") * 1e6 / n as f64;
    let hi = results
        .iter()
        .flat_map(|((n, _), rs)| {
            rs.iter()
                .flat_map(move |r| r.figures.iter().map(move |f| per_beat(f, *n)))
        })
        .fold(0.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&body)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((500f64..2_000_000f64).log_scale(), 0f64..hi)?;
    chart
        .configure_mesh()
        .x_desc("connections (log scale)")
        .y_desc("CPU ns per heartbeat")
        .x_label_formatter(&|x| thousands(x.round() as usize))
        .label_style(("sans-serif", 14).into_font().color(&INK))
        .light_line_style(WHITE)
        .bold_line_style(GREY.mix(0.15))
        .draw()?;
    let names: Vec<&str> = results
        .first()
        .map(|(_, rs)| rs.iter().map(|r| r.name).collect())
        .unwrap_or_default();
    for name in names {
        let c = color(name);
        for workers in [2, 1] {
            let points: Vec<(f64, f64)> = results
                .iter()
                .filter(|((_, w), _)| *w == workers)
                .filter_map(|((n, _), rs)| {
                    let r = rs.iter().find(|r| r.name == name)?;
                    let mean = r.figures.iter().map(|f| per_beat(f, *n)).sum::<f64>()
                        / r.figures.len() as f64;
                    Some((*n as f64, mean))
                })
                .collect();
            let style = c.stroke_width(if workers == 2 { 3 } else { 1 });
            let line = chart.draw_series(std::iter::once(PathElement::new(points, style)))?;
            if workers == 2 {
                line.label(name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3))
                });
            }
            for ((n, _), rs) in results.iter().filter(|((_, w), _)| *w == workers) {
                if let Some(r) = rs.iter().find(|r| r.name == name) {
                    chart.draw_series(
                        r.figures
                            .iter()
                            .map(|f| Circle::new((*n as f64, per_beat(f, *n)), 3, c.filled())),
                    )?;
                }
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(("sans-serif", 14).into_font().color(&INK))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    eprintln!("W9 scales: drew {}", path.display());
    Ok(())
}
