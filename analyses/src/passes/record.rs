//! `record`: writes every event it sees to `--record FILE.std` in RAPID's STD format
//! plus capvm's extension (see [`crate::trace`]). The command line puts it first in
//! the chain so it sees the unfiltered trace; it forwards everything.
//!
//! A path ending in `.slp` records compressed: the same STD text goes to an
//! in-process compressor ([`crate::slp::stream::SlpSink`]) instead of a file, and
//! the grammar is written when the run ends; no expanded trace is stored.
//!
//! Concurrency: one [`StdWriter`] behind a mutex. The producer delivers a
//! synchronization event before any event it happens-before (see `crate::chain`), so
//! the order in which threads take the mutex is a valid trace; writing under the
//! mutex keeps that order in the file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::chain::ChainError;
use crate::env::Env;
use crate::event::Event;
use crate::pass::{Flow, Local, Pass};
use crate::shared::Shared;
use crate::thread::ThreadState;
use crate::trace::StdWriter;

struct Inner {
    writer: StdWriter<Box<dyn Write + Send>>,
    /// `.slp` recording: finishes the compressed file.
    slp: Option<crate::slp::stream::SlpFinisher>,
    /// The first I/O error; later events are not written.
    error: Option<String>,
}

pub struct Record {
    env: Arc<dyn Env>,
    path: String,
    inner: Mutex<Inner>,
}

impl Record {
    pub fn new(shared: &Arc<Shared>) -> Result<Record, ChainError> {
        let Some(path) = shared.options.record_path.clone() else {
            return Err(ChainError(
                "analysis `record` needs a file (--record FILE.std)".into(),
            ));
        };
        let shown = path.display().to_string();
        let (out, slp): (Box<dyn Write + Send>, _) = if path.extension().is_some_and(|e| e == "slp")
        {
            // Fail early if the file cannot be created.
            File::create(&path).map_err(|e| ChainError(format!("cannot create {shown}: {e}")))?;
            let (sink, fin) = crate::slp::stream::SlpSink::new(path.clone());
            (Box::new(sink), Some(fin))
        } else {
            let file = File::create(&path)
                .map_err(|e| ChainError(format!("cannot create {shown}: {e}")))?;
            (Box::new(BufWriter::new(file)), None)
        };
        let writer =
            StdWriter::new(out).map_err(|e| ChainError(format!("cannot write {shown}: {e}")))?;
        Ok(Record {
            env: shared.env.clone(),
            path: shown,
            inner: Mutex::new(Inner {
                writer,
                slp,
                error: None,
            }),
        })
    }

    fn write(&self, ev: &Event<'_>) {
        let mut inner = self.inner.lock();
        if inner.error.is_some() {
            return;
        }
        if let Err(e) = inner.writer.write_event(self.env.as_ref(), ev) {
            inner.error = Some(format!("{}: {e}", self.path));
        }
    }
}

impl Record {
    /// Write the `.slp` file (once; after the last event).
    fn finish_slp(inner: &mut Inner, path: &str) {
        if let Some(fin) = &mut inner.slp
            && let Err(e) = fin.finish()
            && inner.error.is_none()
        {
            inner.error = Some(format!("{path}: {e}"));
        }
    }
}

impl Pass for Record {
    fn name(&self) -> &'static str {
        "record"
    }
    fn access(&self, _t: &ThreadState, _local: &mut Local, ev: &Event<'_>) -> Flow {
        self.write(ev);
        Flow::Forward
    }
    fn event(&self, _t: &ThreadState, _local: &mut Local, ev: &Event<'_>) {
        self.write(ev);
    }
    fn finish(&self) {
        let mut inner = self.inner.lock();
        if let Err(e) = inner.writer.flush()
            && inner.error.is_none()
        {
            inner.error = Some(format!("{}: {e}", self.path));
        }
        Self::finish_slp(&mut inner, &self.path);
    }
    /// The first write error, if any: later events were not written. Flushes first
    /// (a run stopped by a runtime error has no `finish`).
    fn output_error(&self) -> Option<String> {
        let mut inner = self.inner.lock();
        if inner.error.is_none()
            && let Err(e) = inner.writer.flush()
        {
            inner.error = Some(format!("{}: {e}", self.path));
        }
        Self::finish_slp(&mut inner, &self.path);
        inner
            .error
            .as_ref()
            .map(|e| format!("cannot write the trace {e}"))
    }
}
