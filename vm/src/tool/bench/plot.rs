//! `capvm bench --plot FILE.svg`: a grouped bar chart (one group per kernel plus the
//! geometric mean, one bar per chain) written as a self-contained SVG string. A lower
//! bound (a run that hit a limit) is drawn faded with a dashed outline; a bar's mark
//! (`>60s`, `OOM`, what a mean covers) is written above it.

use std::fmt::Write;

/// Tableau 10.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

const BAR: f64 = 10.0;
const GROUP_GAP: f64 = 22.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const PLOT_H: f64 = 320.0;
const BOTTOM: f64 = 40.0;
const LEGEND_W: f64 = 300.0;

/// One bar: its height, whether it is a lower bound, and a note written above it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bar {
    /// `None`: no bar (only the mark, if any, on the axis).
    pub value: Option<f64>,
    /// The value is a lower bound (a run hit a limit).
    pub lower_bound: bool,
    /// Written above the bar: `>60s`, `OOM`, `9/10 kernels`.
    pub mark: Option<String>,
}

impl Bar {
    pub fn exact(value: Option<f64>) -> Bar {
        Bar {
            value,
            ..Bar::default()
        }
    }
}

/// `values[g][s]`: the bar of series `s` in group `g`.
pub fn bar_chart(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<Bar>],
) -> String {
    let group_w = series.len() as f64 * BAR + GROUP_GAP;
    let plot_w = (groups.len() as f64 * group_w).max(200.0);
    let legend_h = series.len() as f64 * 18.0;
    let width = LEFT + plot_w + LEGEND_W;
    let height = TOP + PLOT_H.max(legend_h + 40.0) + BOTTOM;
    let max = values
        .iter()
        .flatten()
        .filter_map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max);
    let step = nice_step(max);
    let y_max = (max / step).ceil() * step;
    let y = |v: f64| TOP + PLOT_H - v / y_max * PLOT_H;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/>
<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    // Y axis: grid lines and tick labels.
    let mut t = 0.0;
    while t <= y_max + step / 2.0 {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{x2:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{t}</text>"##,
            yy = y(t),
            x2 = LEFT + plot_w,
            tx = LEFT - 6.0,
            ty = y(t) + 4.0,
        );
        t += step;
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {cy:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        esc(y_label),
        cy = TOP + PLOT_H / 2.0
    );
    // Bars.
    for (g, name) in groups.iter().enumerate() {
        let gx = LEFT + g as f64 * group_w + GROUP_GAP / 2.0;
        for (k, chain) in series.iter().enumerate() {
            let Some(bar) = values.get(g).and_then(|r| r.get(k)) else {
                continue;
            };
            let x = gx + k as f64 * BAR;
            let c = PALETTE[k % PALETTE.len()];
            let v = bar.value.filter(|v| v.is_finite());
            if let Some(v) = v {
                let style = if bar.lower_bound {
                    format!(r#" fill-opacity="0.35" stroke="{c}" stroke-dasharray="2 2""#)
                } else {
                    String::new()
                };
                let tip = format!(
                    "{}{v:.2}x{}",
                    if bar.lower_bound { "&gt;" } else { "" },
                    bar.mark
                        .as_ref()
                        .map_or_else(String::new, |m| format!(" ({})", esc(m)))
                );
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"{style}><title>{n} {ch}: {tip}</title></rect>"#,
                    top = y(v),
                    w = BAR - 1.0,
                    h = (TOP + PLOT_H - y(v)).max(0.0),
                    n = esc(name),
                    ch = esc(chain),
                );
            }
            if let Some(m) = &bar.mark {
                // Written upwards from just above the bar (or the axis).
                let _ = writeln!(
                    s,
                    r#"<text class="mark" transform="translate({tx:.1} {ty:.1}) rotate(-90)" font-size="9" fill="{c}">{}</text>"#,
                    esc(m),
                    tx = x + BAR / 2.0 + 3.0,
                    ty = y(v.unwrap_or(0.0)) - 3.0,
                );
            }
        }
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{ty:.1}" text-anchor="middle">{}</text>"#,
            esc(name),
            x = gx + series.len() as f64 * BAR / 2.0,
            ty = TOP + PLOT_H + 16.0
        );
    }
    // The bare baseline (1x) and the x axis.
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{y1:.1}" x2="{x2:.1}" y2="{y1:.1}" stroke="#333" stroke-dasharray="4 3"/>
<line x1="{LEFT}" y1="{y0:.1}" x2="{x2:.1}" y2="{y0:.1}" stroke="#333"/>"##,
        y1 = y(1.0),
        y0 = y(0.0),
        x2 = LEFT + plot_w
    );
    // Legend.
    let lx = LEFT + plot_w + 20.0;
    for (k, chain) in series.iter().enumerate() {
        let ly = TOP + k as f64 * 18.0;
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{ly:.1}" width="12" height="12" fill="{c}"/><text x="{tx:.1}" y="{ty:.1}">{}</text>"#,
            esc(chain),
            c = PALETTE[k % PALETTE.len()],
            tx = lx + 18.0,
            ty = ly + 10.0
        );
    }
    if values
        .iter()
        .flatten()
        .any(|b| b.lower_bound || b.mark.is_some())
    {
        let ly = TOP + series.len() as f64 * 18.0 + 10.0;
        let _ = writeln!(
            s,
            r#"<text x="{lx:.1}" y="{ly:.1}" font-size="10">faded: a lower bound, a run hit a limit</text>
<text x="{lx:.1}" y="{ly2:.1}" font-size="10">(&gt;T time, OOM memory; on a mean: how many)</text>"#,
            ly2 = ly + 14.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A grid step of 1, 2 or 5 times a power of ten giving at most 8 lines up to `max`.
fn nice_step(max: f64) -> f64 {
    let raw = max / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&st| st >= raw)
        .unwrap_or(10.0 * mag)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(8.0), 1.0);
        assert_eq!(nice_step(10.0), 2.0);
        assert_eq!(nice_step(35.0), 5.0);
        assert_eq!(nice_step(1.0), 0.2);
    }

    #[test]
    fn one_bar_per_value_and_a_legend_entry_per_series() {
        let groups = vec!["sor".to_string(), "geomean".to_string()];
        let series = vec!["fasttrack".to_string(), "a<b".to_string()];
        let values = vec![
            vec![Bar::exact(Some(3.0)), Bar::exact(None)],
            vec![Bar::exact(Some(2.0)), Bar::exact(Some(1.5))],
        ];
        let svg = bar_chart("t", "slowdown", &groups, &series, &values);
        assert!(svg.starts_with("<svg "));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<title>").count(), 3);
        assert!(svg.contains("a&lt;b"));
        assert!(!svg.contains("a<b"));
        assert!(svg.contains(">sor</text>") && svg.contains(">geomean</text>"));
        assert!(!svg.contains("class=\"mark\"") && !svg.contains("fill-opacity"));
    }

    #[test]
    fn lower_bounds_are_faded_and_marked() {
        let groups = vec!["sor".to_string()];
        let series = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let mark = |m: &str| Some(m.to_string());
        let values = vec![vec![
            Bar {
                value: Some(40.0),
                lower_bound: true,
                mark: mark(">60s"),
            },
            Bar {
                value: None,
                lower_bound: true,
                mark: mark("OOM"),
            },
            Bar::exact(Some(2.0)),
        ]];
        let svg = bar_chart("t", "slowdown", &groups, &series, &values);
        assert_eq!(svg.matches("<title>").count(), 2);
        assert_eq!(svg.matches("fill-opacity=\"0.35\"").count(), 1);
        assert!(svg.contains("sor a: &gt;40.00x (&gt;60s)"));
        assert_eq!(svg.matches("class=\"mark\"").count(), 2);
        assert!(svg.contains(">&gt;60s</text>") && svg.contains(">OOM</text>"));
        assert!(svg.contains("a lower bound"));
        // A mark without a lower bound (a mean over fewer kernels) is not faded.
        let values = vec![vec![Bar {
            value: Some(3.0),
            lower_bound: false,
            mark: mark("2/3 kernels"),
        }]];
        let svg = bar_chart("t", "slowdown", &groups, &series[..1], &values);
        assert!(!svg.contains("fill-opacity") && svg.contains("sor a: 3.00x (2/3 kernels)"));
    }
}
