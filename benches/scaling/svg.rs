//! The scaling table as a picture: one panel per path and machine, total Mops/s against
//! threads, one line per row (hotlimit's solid, peers' dashed; floors and variants left out),
//! written as plain SVG. Each machine's panels are one row of the picture, so a run on a
//! 16-core machine (`benches/device.sh`) and one on 2 cores can be drawn together from the
//! data files each run writes (`to_tsv`, `from_tsv`).

use std::fmt::Write;

/// One path's figures on one machine: the machine's label, the path's name, the thread
/// counts, and per row its name, whether it is one of ours, and the median Mops/s at each
/// thread count.
pub(crate) struct Panel {
    pub(crate) machine: String,
    pub(crate) path: String,
    pub(crate) threads: Vec<usize>,
    pub(crate) lines: Vec<(String, bool, Vec<f64>)>,
}

/// `panels` as tab-separated lines: machine, path, row, 1 if ours, the thread counts and the
/// medians (comma-separated).
pub(crate) fn to_tsv(panels: &[Panel]) -> String {
    let mut s = String::from("# machine\tpath\trow\tours\tthreads\tmedian Mops/s\n");
    for p in panels {
        let threads: Vec<String> = p.threads.iter().map(ToString::to_string).collect();
        for (name, ours, vals) in &p.lines {
            let vals: Vec<String> = vals.iter().map(|v| format!("{v:.2}")).collect();
            let _ = writeln!(
                s,
                "{}\t{}\t{name}\t{}\t{}\t{}",
                p.machine,
                p.path,
                u8::from(*ours),
                threads.join(","),
                vals.join(",")
            );
        }
    }
    s
}

/// The panels of a file [`to_tsv`] wrote, in its order.
pub(crate) fn from_tsv(text: &str) -> Result<Vec<Panel>, String> {
    let mut panels: Vec<Panel> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [machine, path, name, ours, threads, vals] = f[..] else {
            return Err(format!("line {}: expected 6 tab-separated fields", i + 1));
        };
        let nums = |v: &str| -> Result<Vec<f64>, String> {
            v.split(',')
                .map(|x| {
                    x.parse::<f64>()
                        .map_err(|e| format!("line {}: {x}: {e}", i + 1))
                })
                .collect()
        };
        let threads: Vec<usize> = nums(threads)?.into_iter().map(|t| t as usize).collect();
        let line = (name.to_owned(), ours == "1", nums(vals)?);
        match panels
            .iter_mut()
            .find(|p| p.machine == machine && p.path == path)
        {
            Some(p) => p.lines.push(line),
            None => panels.push(Panel {
                machine: machine.to_owned(),
                path: path.to_owned(),
                threads,
                lines: vec![line],
            }),
        }
    }
    Ok(panels)
}

const PANEL_W: f64 = 360.0;
const PANEL_H: f64 = 260.0;
const LEFT: f64 = 50.0;
const TOP: f64 = 56.0;
const GAP: f64 = 40.0;
const LEGEND_W: f64 = 290.0;
const COLORS: [&str; 16] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22", "#000000", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
];

/// A round step for about five grid lines up to `max`.
fn step(max: f64) -> f64 {
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The SVG document for `panels`, titled `title`: one row of panels per machine.
pub(crate) fn render(title: &str, panels: &[Panel]) -> String {
    let mut machines: Vec<&str> = Vec::new();
    for p in panels {
        if !machines.contains(&p.machine.as_str()) {
            machines.push(&p.machine);
        }
    }
    let per_row = machines
        .iter()
        .map(|m| panels.iter().filter(|p| p.machine == *m).count())
        .max()
        .unwrap_or(1);
    let row_h = PANEL_H + 60.0 + GAP;
    let height = TOP + machines.len() as f64 * row_h;
    // One legend: the rows are the same in every panel, save those a path leaves out; a row
    // has the color of its place in the legend in every panel.
    let mut names: Vec<(&str, bool)> = Vec::new();
    for p in panels {
        for (name, ours, _) in &p.lines {
            if !names.iter().any(|&(n, _)| n == name) {
                names.push((name, *ours));
            }
        }
    }
    let color =
        |name: &str| COLORS[names.iter().position(|&(n, _)| n == name).unwrap_or(0) % COLORS.len()];
    let width = LEFT + per_row as f64 * (PANEL_W + GAP) + LEGEND_W;
    let height = height.max(TOP + 10.0 + names.len() as f64 * 18.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="18" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    for p in panels {
        let row = machines.iter().position(|m| *m == p.machine).unwrap_or(0);
        let pi = panels[..]
            .iter()
            .take_while(|q| !std::ptr::eq(*q, p))
            .filter(|q| q.machine == p.machine)
            .count();
        let x0 = LEFT + pi as f64 * (PANEL_W + GAP);
        let top_y = TOP + row as f64 * row_h;
        let max = p
            .lines
            .iter()
            .flat_map(|l| l.2.iter().copied())
            .fold(1.0, f64::max);
        let st = step(max);
        let top = (max / st).ceil() * st;
        let y = |v: f64| top_y + PANEL_H - v / top * PANEL_H;
        // threads sit at even spacing (they double), labelled with their count
        let n = p.threads.len().max(2) - 1;
        let x = |i: usize| x0 + i as f64 * PANEL_W / n as f64;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{} path, {}</text>"#,
            x0 + PANEL_W / 2.0,
            top_y - 8.0,
            p.path,
            escape(&p.machine)
        );
        let mut v = 0.0;
        while v <= top + st / 2.0 {
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" x2="{x1}" y1="{yv}" y2="{yv}" stroke="#ddd"/><text x="{xl}" y="{yl}" text-anchor="end">{v}</text>"##,
                x1 = x0 + PANEL_W,
                yv = y(v),
                xl = x0 - 4.0,
                yl = y(v) + 4.0
            );
            v += st;
        }
        for (i, t) in p.threads.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{t}</text>"#,
                x(i),
                top_y + PANEL_H + 16.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">threads</text>"#,
            x0 + PANEL_W / 2.0,
            top_y + PANEL_H + 32.0
        );
        if pi == 0 {
            let _ = writeln!(
                s,
                r#"<text transform="translate(14 {}) rotate(-90)" text-anchor="middle">total Mops/s, one shared limiter</text>"#,
                top_y + PANEL_H / 2.0
            );
        }
        for (name, ours, vals) in &p.lines {
            let pts: Vec<String> = vals
                .iter()
                .enumerate()
                .map(|(i, &m)| format!("{:.1},{:.1}", x(i), y(m)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="2"{} points="{}"/>"#,
                color(name),
                if *ours {
                    ""
                } else {
                    r#" stroke-dasharray="6 3""#
                },
                pts.join(" ")
            );
        }
    }
    let lx = LEFT + per_row as f64 * (PANEL_W + GAP);
    for (li, &(name, ours)) in names.iter().enumerate() {
        let ly = TOP + 10.0 + li as f64 * 18.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{}" stroke-width="2"{}/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            color(name),
            if ours {
                ""
            } else {
                r#" stroke-dasharray="6 3""#
            },
            lx + 30.0,
            ly + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
