//! Plain-text tables for `capvm bench`: a left-aligned first column, right-aligned
//! numbers, columns two spaces apart, a rule under the header.

/// A table under construction.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Row>,
}

#[derive(Clone, Debug)]
enum Row {
    Cells(Vec<String>),
    /// A horizontal rule (before summary rows).
    Rule,
}

impl Table {
    pub fn new(header: Vec<String>) -> Table {
        Table {
            header,
            rows: Vec::new(),
        }
    }

    /// Append a row; missing trailing cells are blank.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(Row::Cells(cells));
    }

    pub fn rule(&mut self) {
        self.rows.push(Row::Rule);
    }

    /// The rendered table, one line per row, each ending in `\n`, no trailing spaces.
    pub fn render(&self) -> String {
        let ncols = self
            .rows
            .iter()
            .map(|r| match r {
                Row::Cells(c) => c.len(),
                Row::Rule => 0,
            })
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut width = vec![0usize; ncols];
        let cells = std::iter::once(&self.header).chain(self.rows.iter().filter_map(|r| match r {
            Row::Cells(c) => Some(c),
            Row::Rule => None,
        }));
        for row in cells {
            for (i, c) in row.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let total = width.iter().sum::<usize>() + 2 * ncols.saturating_sub(1);
        let mut out = line(&self.header, &width);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        for r in &self.rows {
            match r {
                Row::Cells(c) => out.push_str(&line(c, &width)),
                Row::Rule => {
                    out.push_str(&"-".repeat(total));
                    out.push('\n');
                }
            }
        }
        out
    }
}

fn line(cells: &[String], width: &[usize]) -> String {
    let mut s = String::new();
    for (i, w) in width.iter().enumerate() {
        let c = cells.get(i).map(String::as_str).unwrap_or("");
        if i == 0 {
            s.push_str(&format!("{c:<w$}"));
        } else {
            s.push_str(&format!("  {c:>w$}"));
        }
    }
    let trimmed = s.trim_end().len();
    s.truncate(trimmed);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn aligns_first_column_left_and_numbers_right() {
        let mut t = Table::new(strings(&["chain", "sor", "geomean"]));
        t.row(strings(&["none", "0.05", "0.05"]));
        t.row(strings(&["fasttrack", "12.5x", "3.0x"]));
        t.rule();
        t.row(strings(&["all", "1x"]));
        // Widths: 9 ("fasttrack"), 5 ("12.5x"), 7 ("geomean"); two spaces apart.
        let got = t.render();
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines[0], "chain        sor  geomean");
        assert_eq!(lines[1], "-".repeat(25));
        assert_eq!(lines[2], "none        0.05     0.05");
        assert_eq!(lines[3], "fasttrack  12.5x     3.0x");
        assert_eq!(lines[4], "-".repeat(25));
        assert_eq!(lines[5], "all           1x");
        assert_eq!(lines.len(), 6);
    }

    #[test]
    fn counts_characters_not_bytes() {
        let mut t = Table::new(strings(&["k", "×"]));
        t.row(strings(&["a", "10"]));
        let got = t.render();
        assert_eq!(got.lines().next(), Some("k   ×"));
        assert_eq!(got.lines().nth(2), Some("a  10"));
    }
}
