//! `capvm compress` and `capvm analyze` on compressed traces (`docs/architecture.md`
//! "Compressed traces").

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use analyses::ChainOptions;
use analyses::report::{render_text, warning_json};
use analyses::slp::analyze::{SlpAnalyzeError, analyze_slp};
use analyses::slp::stream::compress_std;
use analyses::slp::{Grammar, is_slp, read_slp, write_slp};
use analyses::trace::{ReadError, TraceInput};
use clap::Args;

use super::{EXIT_COMPILE, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE, EXIT_WARNINGS, note_write};

fn say(s: &str) {
    note_write(std::io::Write::write_all(
        &mut std::io::stderr(),
        s.as_bytes(),
    ));
}

#[derive(Args, Debug)]
pub struct CompressArgs {
    /// The trace (RAPID STD format with capvm's extension).
    trace: PathBuf,
    /// The compressed trace [default: TRACE with the extension `.slp`].
    #[arg(short = 'o', long = "output", value_name = "OUT.slp")]
    output: Option<PathBuf>,
    /// Also write ZipTrack's input for the same grammar into DIR (`map.shared.txt`,
    /// the label map, and `slp.txt`, the grammar in Sequitur's text form).
    #[arg(long, value_name = "DIR")]
    ziptrack: Option<PathBuf>,
    /// Also report the grammar size of a classic Sequitur run over the same labels.
    #[arg(long)]
    sequitur: bool,
}

fn read_error(path: &Path, e: ReadError) -> i32 {
    match e {
        ReadError::Io { line: 0, error } => {
            say(&format!("error: cannot read {}: {error}\n", path.display()));
        }
        e => say(&format!("error: {}:{e}\n", path.display())),
    }
    EXIT_COMPILE
}

/// `capvm compress TRACE.std [-o OUT.slp] [--ziptrack DIR] [--sequitur]`.
pub fn cmd_compress(a: CompressArgs) -> i32 {
    let start = Instant::now();
    let input = a.trace.as_path();
    if let Ok(mut f) = std::fs::File::open(input) {
        let mut head = [0u8; 8];
        if f.read_exact(&mut head).is_ok() && is_slp(&head) {
            say(&format!(
                "error: {} is already compressed (.slp)\n",
                input.display()
            ));
            return EXIT_USAGE;
        }
    }
    let g = match compress_std(TraceInput::File(input)) {
        Ok(g) => g,
        Err(e) => return read_error(input, e),
    };
    let seconds = start.elapsed().as_secs_f64();
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| a.trace.with_extension("slp"));
    let bytes = write_slp(&g);
    if let Err(e) = std::fs::write(&out, &bytes) {
        say(&format!("error: cannot write {}: {e}\n", out.display()));
        return EXIT_OUTPUT;
    }
    say(&format!(
        "{}: {} events, {} labels, {} rules, grammar size {} ({} bytes) in {seconds:.3} s\n",
        out.display(),
        g.events(),
        g.terminals.len(),
        g.rules.len(),
        g.size(),
        bytes.len()
    ));
    if a.sequitur {
        let t = Instant::now();
        let size = g.sequitur_size();
        say(&format!(
            "sequitur: grammar size {size} in {:.3} s\n",
            t.elapsed().as_secs_f64()
        ));
    }
    if let Some(dir) = &a.ziptrack
        && let Err(e) = analyses::slp::ziptrack::write_dir(&g, dir)
    {
        say(&format!("error: cannot write {}: {e}\n", dir.display()));
        return EXIT_OUTPUT;
    }
    EXIT_OK
}

/// Whether `path` holds a compressed trace (by content).
pub fn is_slp_file(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && is_slp(&head)
}

/// Read a compressed trace: the `.slp` format, or a ZipTrack directory.
pub fn load(path: &Path) -> Result<Grammar, i32> {
    if path.is_dir() {
        return analyses::slp::ziptrack::read_dir(path).map_err(|e| {
            say(&format!("error: {}: {e}\n", path.display()));
            EXIT_COMPILE
        });
    }
    let bytes = std::fs::read(path).map_err(|e| {
        say(&format!("error: cannot read {}: {e}\n", path.display()));
        EXIT_COMPILE
    })?;
    read_slp(&bytes).map_err(|e| {
        say(&format!("error: {}: {e}\n", path.display()));
        EXIT_COMPILE
    })
}

/// `capvm analyze FILE.slp …` (the caller checked [`is_slp_file`]).
pub fn cmd_analyze_slp(path: &Path, spec: &str, report: Option<&Path>, stats: bool) -> i32 {
    let start = Instant::now();
    let g = match load(path) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let options = |env: &analyses::trace::TraceEnv| ChainOptions {
        fold_by_location: !env.is_recorded(),
        ..ChainOptions::default()
    };
    let run = match analyze_slp(&g, spec, &options) {
        Ok(r) => r,
        Err(SlpAnalyzeError::Chain(e)) => {
            say(&format!("error: {e}\n"));
            return EXIT_USAGE;
        }
        Err(SlpAnalyzeError::Expand(e)) => {
            say(&format!("error: {}: {e}\n", path.display()));
            return EXIT_COMPILE;
        }
    };
    let chain = &run.chain;
    let warnings = chain.warnings();
    let env = g.env.clone();
    let mut json = Vec::new();
    for w in &warnings {
        say(&render_text(w, &*env, &chain.shared.ctxs));
        json.push(warning_json(w, &*env, &chain.shared.ctxs));
    }
    let mut grammar_json = serde_json::Map::new();
    for (name, s) in &run.grammar_stats {
        grammar_json.insert(
            (*name).to_string(),
            serde_json::json!({
                "rules": s.rules, "compositions": s.compositions, "steps": s.steps,
            }),
        );
    }
    // Taken once: a pass's statistics may walk its whole shadow state.
    let pass_stats = (stats || report.is_some()).then(|| chain.stats_json());
    if let Some(st) = pass_stats.as_ref().filter(|_| stats) {
        say(&analyses::Chain::stats_text_of(st));
        let total = start.elapsed().as_secs_f64();
        if run.on_grammar {
            for (name, s) in &run.grammar_stats {
                say(&format!(
                    "{name} on the grammar: {} rules, {} compositions, {} steps of the start rule\n",
                    s.rules, s.compositions, s.steps
                ));
            }
        }
        say(&format!(
            "throughput: {} events ({}), grammar size {}, in {total:.3} s ({:.3} s analysis)\n",
            run.events,
            if run.on_grammar {
                "analysed on the grammar"
            } else {
                "expanded"
            },
            g.size(),
            run.seconds
        ));
    }
    if let Some(p) = report {
        let mut st = pass_stats.unwrap_or_default();
        if let Some(m) = st.as_object_mut()
            && !grammar_json.is_empty()
        {
            m.insert("grammar".into(), serde_json::Value::Object(grammar_json));
        }
        let doc = serde_json::json!({ "warnings": json, "stats": st });
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        if let Err(e) = std::fs::write(p, text + "\n") {
            say(&format!("error: cannot write {}: {e}\n", p.display()));
            return EXIT_OUTPUT;
        }
    }
    if warnings.is_empty() {
        EXIT_OK
    } else {
        EXIT_WARNINGS
    }
}
