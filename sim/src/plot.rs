//! The pictures: SVG through plotters' SVG backend (text as `<text>` elements, sized by
//! plotters' own estimate, so no font library is needed).

use std::error::Error;
use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::SimError;
use crate::run::{Outcome, Run, Sample};
use crate::units::duration_text;

/// Legend texts: the smoke test looks for them in the files.
pub(crate) const USED: &str = "used: permits granted (cumulative)";
pub(crate) const FREED: &str = "freed: grants that left the window (cumulative)";
pub(crate) const EXACT_USED: &str = "granted by the exact log alone (cumulative)";
pub(crate) const EXACT_FREE: &str = "free: exact window over the same grants";
pub(crate) const REPORTED: &str = "free: as the limiter reports (remaining_at)";
pub(crate) const FALSE: &str = "false denial: the exact log would grant";
pub(crate) const OVER: &str = "window above the limit";
const LIMIT: &str = "the limit";

const FONT: &str = "sans-serif";
const BLUE_LINE: RGBColor = RGBColor(31, 97, 181);
const GREEN_LINE: RGBColor = RGBColor(24, 140, 60);
const GREY_LINE: RGBColor = RGBColor(150, 150, 150);
const ORANGE_LINE: RGBColor = RGBColor(232, 120, 0);
const FALSE_FILL: RGBColor = RGBColor(220, 40, 40);
const OVER_FILL: RGBColor = RGBColor(140, 60, 200);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), Box<dyn Error>>;
/// A series to draw: its legend text, its points, its line style.
type Labelled<'a> = (&'a str, Vec<(f64, f64)>, ShapeStyle);

/// How the time axis is shown: nanoseconds ÷ `div` in `unit`.
#[derive(Clone, Copy, Debug)]
struct TimeAxis {
    div: f64,
    unit: &'static str,
}

impl TimeAxis {
    fn for_span(end: u64) -> TimeAxis {
        let (div, unit) = if end >= 1_200_000_000_000 {
            (60e9, "min")
        } else if end >= 2_000_000_000 {
            (1e9, "s")
        } else {
            (1e6, "ms")
        };
        TimeAxis { div, unit }
    }

    fn x(&self, ns: u64) -> f64 {
        ns as f64 / self.div
    }
}

/// A tick label: whole numbers without decimals, others with at most two.
fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').to_string()
    }
}

/// One line of figures about an outcome, for a panel's caption.
fn summary(run: &Run, o: &Outcome) -> String {
    let over = o.over(run.limit);
    let over = if over > 0 {
        format!(", window up to {} (+{over})", o.worst)
    } else {
        String::new()
    };
    format!(
        "{}: {} granted ({:.1} % of the exact log), {} false denials{over}",
        o.label,
        o.granted,
        o.utilisation(&run.exact),
        o.false_denials,
    )
}

fn title(run: &Run) -> String {
    format!(
        "{}; limit {} per {}",
        run.trace_name,
        run.limit,
        duration_text(run.period)
    )
}

/// One limiter on one trace: above, permits used and freed over time (beside the exact log's
/// grants); below, what is free, with false denials and over-full windows shaded.
pub(crate) fn limiter_svg(run: &Run, o: &Outcome) -> Result<String, Box<dyn Error>> {
    let axis = TimeAxis::for_span(run.end);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 780)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root
            .titled(&o.label, (FONT, 24))?
            .titled(&title(run), (FONT, 19))?;
        let (top, bottom) = root.split_vertically(350);
        cumulative_panel(&top, run, o, axis)?;
        free_panel(&bottom, run, o, axis, &summary(run, o))?;
        root.present()?;
    }
    Ok(svg)
}

/// Several limiters on one trace, one "free" panel each, stacked on one time axis.
pub(crate) fn compare_svg(
    run: &Run,
    outcomes: &[&Outcome],
    heading: &str,
) -> Result<String, Box<dyn Error>> {
    let axis = TimeAxis::for_span(run.end);
    let mut svg = String::new();
    {
        let height = 80 + 330 * outcomes.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut svg, (1100, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root
            .titled(heading, (FONT, 24))?
            .titled(&title(run), (FONT, 19))?;
        let panels = root.split_evenly((outcomes.len().max(1), 1));
        for (area, o) in panels.iter().zip(outcomes) {
            free_panel(area, run, o, axis, &summary(run, o))?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// Writes `svg` to `path`.
pub(crate) fn write(path: &Path, svg: Result<String, Box<dyn Error>>) -> Result<(), SimError> {
    let svg = svg.map_err(|e| SimError::Plot {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    std::fs::write(path, svg).map_err(|e| SimError::io(path, e))
}

fn line(color: RGBColor, width: u32) -> ShapeStyle {
    color.stroke_width(width)
}

/// A legend entry's key: a short line in `style`.
fn line_key(style: ShapeStyle) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], style)
}

/// A legend entry's key: a small box filled with `fill`.
fn box_key(fill: ShapeStyle) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 6), (x + 22, y + 6)], fill)
}

/// The chart both panels draw on: time across, permits up.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A panel's chart on `area`, its mesh drawn: `caption` above, time from 0 to `end` across,
/// `y` up, described as `y_desc`.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
    axis: TimeAxis,
    end: u64,
    y: std::ops::Range<f64>,
    y_desc: &str,
) -> Result<Chart<'a, 'b>, Box<dyn Error>> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(72)
        .caption(caption, (FONT, 19))
        .build_cartesian_2d(0f64..axis.x(end), y)?;
    chart
        .configure_mesh()
        .x_desc(format!("time ({})", axis.unit))
        .x_label_formatter(&|v| tick(*v))
        .y_desc(y_desc)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT, 16))
        .draw()?;
    Ok(chart)
}

/// Both panels' legend: the labelled series at `position`, on a light box with a border.
fn draw_legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, position: SeriesLabelPosition) -> Drawn {
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, 16))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn cumulative_panel(area: &Area<'_>, run: &Run, o: &Outcome, axis: TimeAxis) -> Drawn {
    let last = |s: &[Sample]| s.last().map_or(0, |s| s.used);
    let top = last(&o.samples).max(last(&run.exact.samples)).max(1) as f64 * 1.08;
    let caption = "permits used and freed over time";
    let mut chart = panel(
        area,
        caption,
        axis,
        run.end,
        0f64..top,
        "permits (cumulative)",
    )?;
    let series = |samples: &[Sample], f: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
        std::iter::once((0.0, 0.0))
            .chain(samples.iter().map(|s| (axis.x(s.at), f(s) as f64)))
            .collect()
    };
    let lines: [Labelled; 3] = [
        (
            EXACT_USED,
            series(&run.exact.samples, |s| s.used),
            line(GREY_LINE, 2),
        ),
        (USED, series(&o.samples, |s| s.used), line(BLUE_LINE, 2)),
        (FREED, series(&o.samples, |s| s.freed), line(GREEN_LINE, 2)),
    ];
    for (label, points, style) in lines {
        chart
            .draw_series(LineSeries::new(points, style))?
            .label(label)
            .legend(line_key(style));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn free_panel(area: &Area<'_>, run: &Run, o: &Outcome, axis: TimeAxis, caption: &str) -> Drawn {
    let limit = run.limit as f64;
    let lowest = o
        .samples
        .iter()
        .map(|s| s.min_free.min(s.exact_free))
        .min()
        .unwrap_or(0)
        .min(0);
    let bottom = if lowest < 0 { lowest as f64 * 1.1 } else { 0.0 };
    let over = o.samples.iter().any(|s| s.min_free < 0);
    let entries = 3 + [over, !o.stretches.is_empty()]
        .iter()
        .filter(|&&b| b)
        .count();
    // Head room above the limit for the legend: about 21 pixels an entry, of the plot's
    // height (the panel less its caption, axis labels and margins).
    let plot_px = (f64::from(area.dim_in_pixel().1) - 110.0).max(100.0);
    let share = ((entries as f64 * 21.0 + 24.0) / plot_px).min(0.8);
    let top = (limit - share * bottom) / (1.0 - share);
    let y_desc = "free permits in the window";
    let mut chart = panel(area, caption, axis, run.end, bottom..top, y_desc)?;
    let cells = || {
        o.samples
            .iter()
            .scan(0u64, |start, s| Some((std::mem::replace(start, s.at), s)))
    };
    if !o.stretches.is_empty() {
        let fill = FALSE_FILL.mix(0.4).filled();
        chart
            .draw_series(o.stretches.iter().map(|&(from, to, room)| {
                Rectangle::new([(axis.x(from), 0.0), (axis.x(to), room as f64)], fill)
            }))?
            .label(FALSE)
            .legend(box_key(fill));
    }
    if over {
        let fill = OVER_FILL.mix(0.45).filled();
        chart
            .draw_series(cells().filter(|(_, s)| s.min_free < 0).map(|(from, s)| {
                Rectangle::new(
                    [(axis.x(from), s.min_free as f64), (axis.x(s.at), 0.0)],
                    fill,
                )
            }))?
            .label(OVER)
            .legend(box_key(fill));
    }
    let limit_style = line(GREY_LINE, 1);
    chart
        .draw_series(LineSeries::new(
            [(0.0, limit), (axis.x(run.end), limit)],
            limit_style,
        ))?
        .label(format!("{LIMIT} ({})", run.limit))
        .legend(line_key(limit_style));
    // The limiter's own report first, wide and light, so that the exact line drawn over it
    // stays visible where the two agree.
    let points = o.samples.iter().map(|s| (axis.x(s.at), s.reported as f64));
    let style = ORANGE_LINE.mix(0.75).stroke_width(5);
    chart
        .draw_series(LineSeries::new(points, style))?
        .label(REPORTED)
        .legend(line_key(style));
    let exact_style = line(BLACK, 2);
    chart
        .draw_series(LineSeries::new(
            o.samples
                .iter()
                .map(|s| (axis.x(s.at), s.exact_free as f64)),
            exact_style,
        ))?
        .label(EXACT_FREE)
        .legend(line_key(exact_style));
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
}
