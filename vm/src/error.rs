//! Guest runtime errors (`docs/language.md` "Runtime errors"): the kind, the thread, the
//! source position and the CapJava call stack. They stop the whole program (exit 70).

use std::fmt::Write;

use lang::ir::{FuncId, Program, SiteId};

use crate::Tid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NullDereference,
    IndexOutOfBounds,
    NegativeArraySize,
    DivisionByZero,
    /// `wait`/`notify`/`notifyAll` (or a monitor exit) without holding the monitor.
    IllegalMonitorState,
    AssertionFailed,
    /// `new Barrier(n)` with n < 1.
    IllegalBarrierSize,
    Deadlock,
    StackOverflow,
    StepLimit,
    ThreadLimit,
    HeapLimit,
    /// A bug in the VM (a Rust panic in a guest thread), reported instead of a crash.
    Internal,
}

impl ErrorKind {
    /// The name printed in the message.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NullDereference => "null dereference",
            ErrorKind::IndexOutOfBounds => "array index out of bounds",
            ErrorKind::NegativeArraySize => "negative array size",
            ErrorKind::DivisionByZero => "division by zero",
            ErrorKind::IllegalMonitorState => "monitor not held",
            ErrorKind::AssertionFailed => "assertion failed",
            ErrorKind::IllegalBarrierSize => "illegal barrier size",
            ErrorKind::Deadlock => "deadlock",
            ErrorKind::StackOverflow => "stack overflow",
            ErrorKind::StepLimit => "step limit exceeded",
            ErrorKind::ThreadLimit => "thread limit exceeded",
            ErrorKind::HeapLimit => "heap limit exceeded",
            ErrorKind::Internal => "internal VM error",
        }
    }
}

/// One CapJava frame: the function and the site executing in it (innermost: the
/// failing operation; outer frames: the call site).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackFrame {
    pub func: FuncId,
    pub site: SiteId,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    pub kind: ErrorKind,
    /// Details after the kind (`index 10, length 10`), may be empty.
    pub detail: String,
    pub tid: Tid,
    pub site: SiteId,
    /// Innermost first.
    pub stack: Vec<StackFrame>,
    /// Extra lines (deadlock: what every thread waits for).
    pub notes: Vec<String>,
}

/// Longest stack printed in full; deeper stacks show their innermost and outermost
/// frames.
const MAX_STACK_LINES: usize = 40;

/// Render a stack as `    at Class.method (file:line:col)` lines, innermost first.
/// Runs of identical frames (deep recursion) are folded into one line.
pub fn render_stack(program: &Program, stack: &[StackFrame], indent: &str) -> String {
    let mut runs: Vec<(StackFrame, usize)> = Vec::new();
    for f in stack {
        match runs.last_mut() {
            Some((g, n)) if g == f => *n += 1,
            _ => runs.push((*f, 1)),
        }
    }
    let mut lines = Vec::new();
    for (f, n) in &runs {
        lines.push(format!(
            "{indent}at {} ({})",
            program.func_name(f.func),
            program.site_string(f.site)
        ));
        if *n > 1 {
            lines.push(format!("{indent}... {} more identical frames", n - 1));
        }
    }
    if lines.len() > MAX_STACK_LINES {
        let hidden = lines.len() - MAX_STACK_LINES;
        let tail = lines.split_off(lines.len() - MAX_STACK_LINES / 2);
        lines.truncate(MAX_STACK_LINES / 2);
        lines.push(format!("{indent}... {hidden} more frames"));
        lines.extend(tail);
    }
    let mut s = String::new();
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
    s
}

impl RuntimeError {
    /// `error: KIND: DETAIL` / `  in thread T3 at file:line:col` / stack / notes.
    pub fn render(&self, program: &Program) -> String {
        let mut s = String::new();
        let _ = write!(s, "runtime error: {}", self.kind.as_str());
        if !self.detail.is_empty() {
            let _ = write!(s, ": {}", self.detail);
        }
        let _ = writeln!(
            s,
            "\n  in thread T{} at {}",
            self.tid,
            program.site_string(self.site)
        );
        s.push_str(&render_stack(program, &self.stack, "    "));
        for n in &self.notes {
            let _ = writeln!(s, "  {n}");
        }
        s
    }
}
