//! The guest's stdout: `print` appends whole lines to one buffer (so lines of
//! different threads never interleave), flushed when large, at exit, and before a
//! runtime-error message. With `capture`, everything is kept for the caller.

use std::io::Write;

use parking_lot::Mutex;

const FLUSH_AT: usize = 1 << 16;

pub struct Output {
    buf: Mutex<Vec<u8>>,
    capture: bool,
}

impl Output {
    pub fn new(capture: bool) -> Output {
        Output {
            buf: Mutex::new(Vec::new()),
            capture,
        }
    }

    /// Append one line (the caller includes the newline).
    pub fn line(&self, s: &str) {
        let mut b = self.buf.lock();
        b.extend_from_slice(s.as_bytes());
        if !self.capture && b.len() >= FLUSH_AT {
            write_stdout(&mut b);
        }
    }

    /// Write pending output to the process's stdout (no-op when capturing).
    pub fn flush(&self) {
        if !self.capture {
            write_stdout(&mut self.buf.lock());
        }
    }

    /// The captured output.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.buf.lock())
    }
}

fn write_stdout(b: &mut Vec<u8>) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) must not crash the VM.
    let _ = out.write_all(b);
    let _ = out.flush();
    b.clear();
}
