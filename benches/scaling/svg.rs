//! The scaling table as a picture: one panel per path, total Mops/s against threads, one line
//! per row (hotlimit's solid, peers' dashed; floors left out), written as plain SVG.

use std::fmt::Write;

/// One path's figures: its name, the thread counts, and per row its name, whether it is one
/// of ours, and the median Mops/s at each thread count.
pub(crate) struct Panel {
    pub(crate) path: &'static str,
    pub(crate) threads: Vec<usize>,
    pub(crate) lines: Vec<(&'static str, bool, Vec<f64>)>,
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

/// The SVG document for `panels`, titled `title`.
pub(crate) fn render(title: &str, panels: &[Panel]) -> String {
    let height = TOP + PANEL_H + 60.0;
    // One legend: the rows are the same in every panel, save those a path leaves out; a row
    // has the color of its place in the legend in every panel.
    let mut names: Vec<(&str, bool)> = Vec::new();
    for p in panels {
        for &(name, ours, _) in &p.lines {
            if !names.iter().any(|&(n, _)| n == name) {
                names.push((name, ours));
            }
        }
    }
    let color =
        |name: &str| COLORS[names.iter().position(|&(n, _)| n == name).unwrap_or(0) % COLORS.len()];
    let width = LEFT + panels.len() as f64 * (PANEL_W + GAP) + LEGEND_W;
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
    for (pi, p) in panels.iter().enumerate() {
        let x0 = LEFT + pi as f64 * (PANEL_W + GAP);
        let max = p
            .lines
            .iter()
            .flat_map(|l| l.2.iter().copied())
            .fold(1.0, f64::max);
        let st = step(max);
        let top = (max / st).ceil() * st;
        let y = |v: f64| TOP + PANEL_H - v / top * PANEL_H;
        // threads sit at even spacing (they double), labelled with their count
        let n = p.threads.len().max(2) - 1;
        let x = |i: usize| x0 + i as f64 * PANEL_W / n as f64;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{} path</text>"#,
            x0 + PANEL_W / 2.0,
            TOP - 8.0,
            p.path
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
                TOP + PANEL_H + 16.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">threads</text>"#,
            x0 + PANEL_W / 2.0,
            TOP + PANEL_H + 32.0
        );
        if pi == 0 {
            let _ = writeln!(
                s,
                r#"<text transform="translate(14 {}) rotate(-90)" text-anchor="middle">total Mops/s, one shared limiter</text>"#,
                TOP + PANEL_H / 2.0
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
    let lx = LEFT + panels.len() as f64 * (PANEL_W + GAP);
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
