//! `capvm bench --plot FILE.svg`: a grouped bar chart (one group per kernel plus the
//! geometric mean, one bar per chain) written as a self-contained SVG string.

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

/// `values[g][s]`: the bar of series `s` in group `g` (`None`: no bar).
pub fn bar_chart(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<Option<f64>>],
) -> String {
    let group_w = series.len() as f64 * BAR + GROUP_GAP;
    let plot_w = (groups.len() as f64 * group_w).max(200.0);
    let legend_h = series.len() as f64 * 18.0;
    let width = LEFT + plot_w + LEGEND_W;
    let height = TOP + PLOT_H.max(legend_h) + BOTTOM;
    let max = values
        .iter()
        .flatten()
        .flatten()
        .copied()
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
            let Some(v) = values.get(g).and_then(|r| r.get(k)).copied().flatten() else {
                continue;
            };
            if !v.is_finite() {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{n} {ch}: {v:.2}x</title></rect>"#,
                x = gx + k as f64 * BAR,
                top = y(v),
                w = BAR - 1.0,
                h = (TOP + PLOT_H - y(v)).max(0.0),
                c = PALETTE[k % PALETTE.len()],
                n = esc(name),
                ch = esc(chain),
            );
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
        let values = vec![vec![Some(3.0), None], vec![Some(2.0), Some(1.5)]];
        let svg = bar_chart("t", "slowdown", &groups, &series, &values);
        assert!(svg.starts_with("<svg "));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<title>").count(), 3);
        assert!(svg.contains("a&lt;b"));
        assert!(!svg.contains("a<b"));
        assert!(svg.contains(">sor</text>") && svg.contains(">geomean</text>"));
    }
}
