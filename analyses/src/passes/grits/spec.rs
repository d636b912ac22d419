//! Grits spec files (`FILE.grits`): what `capvm infer-disciplines` prints and what
//! `--tools grits --spec FILE.grits` checks. Format (`docs/architecture.md`, "Command
//! line"): one line per location, `LOCATION: DISCIPLINE`, simple disciplines joined by
//! `; `, `race` for a racy location; `#` starts a comment line. A location may have
//! several lines: its instances followed different disciplines, and an instance must
//! follow one of them (see `docs/grits.md`, "Generalising across instances").

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::matcher::{Compound, Kind, SDisc};

/// The spec of one location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `race`: not checked.
    Race,
    /// The alternatives, at least one.
    Alts(Arc<Vec<Compound>>),
}

/// A parsed spec file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GritsSpec {
    pub locations: HashMap<String, Entry>,
}

/// A spec that does not parse: 1-based line and column and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

/// Parse one discipline (`race` → `None`). `col0` is the 1-based column of `text`.
pub fn parse_discipline(
    text: &str,
    line: usize,
    col0: usize,
) -> Result<Option<Compound>, SpecError> {
    let err = |off: usize, message: String| SpecError {
        line,
        col: col0 + off,
        message,
    };
    if text.trim() == "race" {
        return Ok(None);
    }
    let mut out = Vec::new();
    let mut off = 0;
    for part in text.split(';') {
        let lead = part.len() - part.trim_start().len();
        let p = part.trim();
        let at = off + lead;
        off += part.len() + 1;
        if p.is_empty() {
            return Err(err(
                at,
                "empty discipline (expected e.g. `guarded-by {m}`)".into(),
            ));
        }
        let (kw, rest) = match p.find(|c: char| c.is_whitespace() || c == '{') {
            Some(i) => (&p[..i], p[i..].trim()),
            None => (p, ""),
        };
        let Some(kind) = Kind::from_keyword(kw) else {
            return Err(err(
                at,
                format!(
                    "unknown discipline `{kw}` (expected thread-local, fork, join, guarded-by, vol, read-shared or race)"
                ),
            ));
        };
        let rest_at = at + (p.len() - rest.len());
        let params: Vec<String> = if rest.is_empty() {
            Vec::new()
        } else if let Some(inner) = rest.strip_prefix('{') {
            let Some(inner) = inner.strip_suffix('}') else {
                return Err(err(rest_at, format!("unclosed `{{` in `{rest}`")));
            };
            let names: Vec<String> = inner.split(',').map(|s| s.trim().to_string()).collect();
            if names
                .iter()
                .any(|n| n.is_empty() || n.contains(char::is_whitespace))
            {
                return Err(err(rest_at, format!("bad parameter list `{rest}`")));
            }
            names
        } else if rest.contains(char::is_whitespace) || rest.contains(['{', '}', ',']) {
            return Err(err(rest_at, format!("bad parameter `{rest}`")));
        } else {
            vec![rest.to_string()]
        };
        match kind {
            Kind::ReadShared if !params.is_empty() => {
                return Err(err(rest_at, "`read-shared` takes no parameter".into()));
            }
            Kind::GuardedBy | Kind::Vol if params.is_empty() => {
                return Err(err(
                    at,
                    format!("`{}` needs a parameter, e.g. `{} {{m}}`", kw, kw),
                ));
            }
            Kind::ThreadLocal if params.len() > 1 => {
                return Err(err(rest_at, "`thread-local` names one thread".into()));
            }
            _ => {}
        }
        out.push(SDisc { kind, params });
    }
    Ok(Some(out))
}

/// Parse a spec file.
pub fn parse(text: &str) -> Result<GritsSpec, SpecError> {
    let mut alts: BTreeMap<String, Vec<Compound>> = BTreeMap::new();
    let mut races: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let lead = raw.len() - raw.trim_start().len();
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some(colon) = l
            .find(": ")
            .or_else(|| l.strip_suffix(':').map(|s| s.len()))
        else {
            return Err(SpecError {
                line,
                col: lead + 1,
                message: "expected `LOCATION: DISCIPLINE`".into(),
            });
        };
        let loc = l[..colon].trim();
        if loc.is_empty() || loc.contains(char::is_whitespace) {
            return Err(SpecError {
                line,
                col: lead + 1,
                message: format!("bad location `{loc}`"),
            });
        }
        let body = &l[colon + 1..];
        let body_lead = body.len() - body.trim_start().len();
        let body_col = lead + colon + 2 + body_lead;
        if body.trim().is_empty() {
            return Err(SpecError {
                line,
                col: body_col,
                message: format!("no discipline for `{loc}`"),
            });
        }
        match parse_discipline(body.trim(), line, body_col)? {
            None => races.push(loc.to_string()),
            Some(c) => alts.entry(loc.to_string()).or_default().push(c),
        }
    }
    let mut locations: HashMap<String, Entry> = alts
        .into_iter()
        .map(|(k, v)| (k, Entry::Alts(Arc::new(v))))
        .collect();
    for r in races {
        locations.insert(r, Entry::Race);
    }
    Ok(GritsSpec { locations })
}

/// A compound discipline as a spec prints it.
pub fn render(c: &Option<Compound>) -> String {
    match c {
        None => "race".into(),
        Some(c) => c
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// A discipline with its thread names erased: instances of a field compare equal
/// when they differ only in which threads played the roles.
/// A discipline's shape: kinds, and parameters other than threads.
type Shape = Vec<(Kind, Vec<String>)>;

fn shape(c: &Compound) -> Shape {
    c.iter()
        .map(|d| match d.kind {
            Kind::ThreadLocal | Kind::Fork | Kind::Join => (d.kind, Vec::new()),
            _ => (d.kind, d.params.clone()),
        })
        .collect()
}

/// One line of a generalised spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub location: String,
    pub discipline: Option<Compound>,
    /// Instances this line stands for (including those whose discipline is a
    /// prefix of it).
    pub instances: usize,
}

/// Generalise per-instance disciplines across the instances of each field (thesis
/// §6.2 "future work", done as `docs/grits.md` describes): a racy instance makes the
/// field `race`; otherwise instances are grouped by shape (thread names erased), a
/// shape that is a prefix of another is absorbed by it, and the remaining shapes are
/// the field's alternatives, the most frequent first, each printed as its first
/// instance in `instances` order.
///
/// `instances` holds each distinct (location, discipline) with the number of
/// instances that followed it.
pub fn generalise(instances: Vec<(String, Option<Compound>, usize)>) -> Vec<Line> {
    let mut by_loc: BTreeMap<String, Vec<(Option<Compound>, usize)>> = BTreeMap::new();
    for (loc, c, n) in instances {
        by_loc.entry(loc).or_default().push((c, n));
    }
    let mut out = Vec::new();
    for (loc, cs) in by_loc {
        let n = cs.iter().map(|(_, k)| k).sum();
        if cs.iter().any(|(c, _)| c.is_none()) {
            out.push(Line {
                location: loc,
                discipline: None,
                instances: n,
            });
            continue;
        }
        // Distinct shapes, with their first instance and count.
        let mut shapes: Vec<(Shape, Compound, usize)> = Vec::new();
        for (c, k) in cs {
            let Some(c) = c else { continue };
            let s = shape(&c);
            match shapes.iter_mut().find(|(t, _, _)| *t == s) {
                Some(e) => e.2 += k,
                None => shapes.push((s, c, k)),
            }
        }
        // Absorb prefixes into the longer shapes that extend them.
        let mut kept: Vec<(Shape, Compound, usize)> = Vec::new();
        let mut absorbed: Vec<(Shape, usize)> = Vec::new();
        for (s, c, k) in &shapes {
            let longer = shapes
                .iter()
                .any(|(t, _, _)| t.len() > s.len() && t[..s.len()] == s[..]);
            if longer {
                absorbed.push((s.clone(), *k));
            } else {
                kept.push((s.clone(), c.clone(), *k));
            }
        }
        for (s, k) in absorbed {
            if let Some(e) = kept
                .iter_mut()
                .filter(|(t, _, _)| t.len() > s.len() && t[..s.len()] == s[..])
                .max_by_key(|(_, _, n)| *n)
            {
                e.2 += k;
            }
        }
        kept.sort_by_key(|k| std::cmp::Reverse(k.2));
        for (_, c, k) in kept {
            out.push(Line {
                location: loc.clone(),
                discipline: Some(c),
                instances: k,
            });
        }
    }
    out
}

/// The text of a generalised spec: `LOCATION: DISCIPLINE` lines, and before a
/// location with several alternatives a comment saying how many instances each has.
pub fn render_lines(lines: &[Line]) -> String {
    let rows: Vec<(String, String, usize)> = lines
        .iter()
        .map(|l| (l.location.clone(), render(&l.discipline), l.instances))
        .collect();
    render_rows(&rows)
}

/// [`render_lines`] over `(location, discipline, instances)` rows (as the `grits`
/// statistics carry them), consecutive rows of one location being its alternatives.
pub fn render_rows(rows: &[(String, String, usize)]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < rows.len() {
        let loc = &rows[i].0;
        let j = rows[i..]
            .iter()
            .position(|l| &l.0 != loc)
            .map_or(rows.len(), |p| i + p);
        if j - i > 1 {
            let counts: Vec<String> = rows[i..j].iter().map(|l| l.2.to_string()).collect();
            s.push_str(&format!(
                "# {loc}: {} alternatives, followed by {} instances\n",
                j - i,
                counts.join(" + ")
            ));
        }
        for l in &rows[i..j] {
            s.push_str(&format!("{}: {}\n", l.0, l.1));
        }
        i = j;
    }
    s
}

/// The rows of the `disciplines` array of the `grits` statistics.
pub fn rows_of_stats(disciplines: &serde_json::Value) -> Vec<(String, String, usize)> {
    disciplines
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| {
                    (
                        d["location"].as_str().unwrap_or("").to_string(),
                        d["discipline"].as_str().unwrap_or("").to_string(),
                        d["instances"].as_u64().unwrap_or(0) as usize,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(kind: Kind, params: &[&str]) -> SDisc {
        SDisc {
            kind,
            params: params.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn parses_and_renders_round_trip() {
        let text = "# comment\nA.f: thread-local T0; fork {T0}; guarded-by {A.lock}; join {T1,T2}\nB.g: race\nint[]: read-shared\n";
        let spec = parse(text).unwrap();
        let Entry::Alts(a) = &spec.locations["A.f"] else {
            panic!("alternatives expected")
        };
        assert_eq!(
            a[0],
            vec![
                d(Kind::ThreadLocal, &["T0"]),
                d(Kind::Fork, &["T0"]),
                d(Kind::GuardedBy, &["A.lock"]),
                d(Kind::Join, &["T1", "T2"]),
            ]
        );
        assert_eq!(
            render(&Some(a[0].clone())),
            "thread-local T0; fork {T0}; guarded-by {A.lock}; join {T1,T2}"
        );
        assert_eq!(spec.locations["B.g"], Entry::Race);
        assert!(matches!(spec.locations["int[]"], Entry::Alts(_)));
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = parse("A.f: thread-local\nB.g: guarded-by {m}; lockset {n}\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 22), "{e}");
        let e = parse("A.f thread-local\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 1));
        let e = parse("A.f: guarded-by\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 6));
        let e = parse("  A.f: vol {x\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 12));
        let e = parse("A.f: read-shared; \n").unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn generalising_absorbs_prefixes_and_erases_threads() {
        let tl = |t: &str| d(Kind::ThreadLocal, &[t]);
        let long = vec![
            tl("T0"),
            d(Kind::Fork, &["T0"]),
            d(Kind::GuardedBy, &["this"]),
        ];
        let lines = generalise(vec![
            ("C.f".into(), Some(vec![tl("T1")]), 1),
            ("C.f".into(), Some(long.clone()), 1),
            (
                "C.f".into(),
                Some(vec![
                    tl("T0"),
                    d(Kind::Fork, &["T0"]),
                    d(Kind::GuardedBy, &["this"]),
                ]),
                1,
            ),
            ("D.g".into(), Some(vec![tl("T0")]), 1),
            ("D.g".into(), None, 1),
            ("E.h".into(), Some(vec![d(Kind::ReadShared, &[])]), 1),
            ("E.h".into(), Some(vec![d(Kind::GuardedBy, &["E.m"])]), 2),
        ]);
        assert_eq!(lines.len(), 4);
        assert_eq!((lines[0].location.as_str(), lines[0].instances), ("C.f", 3));
        assert_eq!(lines[0].discipline, Some(long));
        assert_eq!(lines[1].discipline, None);
        assert_eq!(lines[2].instances, 2);
        let text = render_lines(&lines);
        assert!(text.contains("# E.h: 2 alternatives, followed by 2 + 1 instances\nE.h: guarded-by {E.m}\nE.h: read-shared\n"), "{text}");
        assert!(text.contains("D.g: race\n"));
    }
}
