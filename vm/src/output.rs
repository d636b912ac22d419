//! The guest's stdout: `print` appends whole lines to one buffer (so lines of
//! different threads never interleave), flushed when large, at exit, and before a
//! runtime-error message. With `capture`, everything is kept for the caller. A failed
//! write (full disk, closed pipe) does not stop the program: later output is
//! dropped and the first error is kept for [`Output::error`] (exit 74).

use std::io::Write;

use parking_lot::Mutex;

const FLUSH_AT: usize = 1 << 16;

pub struct Output {
    buf: Mutex<Vec<u8>>,
    capture: bool,
    /// The first failed write to stdout.
    error: Mutex<Option<std::io::Error>>,
}

impl Output {
    pub fn new(capture: bool) -> Output {
        Output {
            buf: Mutex::new(Vec::new()),
            capture,
            error: Mutex::new(None),
        }
    }

    /// Append one line (the caller includes the newline).
    pub fn line(&self, s: &str) {
        let mut b = self.buf.lock();
        b.extend_from_slice(s.as_bytes());
        if !self.capture && b.len() >= FLUSH_AT {
            self.write_stdout(&mut b);
        }
    }

    /// Write pending output to the process's stdout (no-op when capturing).
    pub fn flush(&self) {
        if !self.capture {
            self.write_stdout(&mut self.buf.lock());
        }
    }

    /// The first failed write to stdout, as a message.
    pub fn error(&self) -> Option<String> {
        self.error
            .lock()
            .as_ref()
            .map(|e| format!("cannot write the program's output to stdout: {e}"))
    }

    /// Write `b` to the process's stdout and clear it; after a failure, only clear.
    fn write_stdout(&self, b: &mut Vec<u8>) {
        let mut error = self.error.lock();
        if error.is_none() {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(b).and_then(|()| out.flush()) {
                *error = Some(e);
            }
        }
        b.clear();
    }

    /// The captured output.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.buf.lock())
    }
}
