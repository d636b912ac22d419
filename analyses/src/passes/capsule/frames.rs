//! Per-thread call frames as the `capsule` pass needs them: which frames are capsule
//! method calls (the executor is the innermost one, thesis §5.3.2). The pass asks
//! for the `Enter`/`Exit` of capsule classes' methods only
//! (`Pass::wants_frames_of`), so these are those calls, plus every other call when
//! another pass of the chain takes them all (frames without a capsule, never an
//! executor). Whose code runs (encapsulation) is `ThreadState::method`.

use crate::ctx::CtxId;
use crate::event::{ObjId, SiteId};

#[derive(Copy, Clone, Debug)]
pub struct Frame {
    /// The class declaring the method.
    pub class: u32,
    /// The method.
    pub method: u32,
    /// The capsule whose method this is (receiver of a capsule class).
    pub capsule: Option<ObjId>,
    /// The lazy synchronization check was done in this call.
    pub checked: bool,
    /// This call holds the capsule (the check made it the occupant).
    pub holds: bool,
    /// The call's entry in the thread's lazy frames (`crate::pass::LazyFrames`),
    /// if the producer recorded it there instead of delivering its `Enter`.
    pub entry: Option<u8>,
    /// For a call that holds its capsule: the site and context of its `Exit`,
    /// when known at its check (the check's access ran in the call's own method, at
    /// the top of the stack); a producer may then end the call without that `Exit`.
    pub exit_at: Option<(SiteId, CtxId)>,
    /// The check of this call armed the thread's repeatable call
    /// (`crate::pass::RepeatCall`): its exit leaves it armed.
    pub armed: bool,
}

#[derive(Default)]
pub struct Frames {
    frames: Vec<Frame>,
    /// Indices into `frames` of the capsule calls, innermost last.
    caps: Vec<usize>,
}

impl Frames {
    pub fn push(&mut self, f: Frame) {
        if f.capsule.is_some() {
            self.caps.push(self.frames.len());
        }
        self.frames.push(f);
    }

    pub fn pop(&mut self) -> Option<Frame> {
        let f = self.frames.pop()?;
        if f.capsule.is_some() {
            self.caps.pop();
        }
        Some(f)
    }

    /// The executor of the outermost `n` frames: the index of the innermost capsule
    /// call among them whose capsule `live` accepts (demoted classes are skipped).
    pub fn executor_below(&self, n: usize, live: impl Fn(&Frame) -> bool) -> Option<usize> {
        self.caps
            .iter()
            .rev()
            .copied()
            .filter(|&i| i < n)
            .find(|&i| live(&self.frames[i]))
    }

    /// Index of the innermost capsule call among the outermost `n` frames, live or
    /// not.
    pub fn innermost_capsule_call_below(&self, n: usize) -> Option<usize> {
        self.caps.iter().rev().copied().find(|&i| i < n)
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Whether a capsule call outside frame `i` holds capsule `k` (its check made the
    /// thread the occupant; no release since): then the thread is inside `k`, and a
    /// check of the call at `i` needs no look at the capsule's epoch.
    pub fn held_outside(&self, i: usize, k: ObjId) -> bool {
        self.caps
            .iter()
            .take_while(|&&j| j < i)
            .any(|&j| self.frames[j].holds && self.frames[j].capsule == Some(k))
    }

    /// Whether a capsule call on the stack holds capsule `k` (see
    /// [`Frames::held_outside`]).
    pub fn held(&self, k: ObjId) -> bool {
        self.held_outside(usize::MAX, k)
    }

    /// The capsule calls, outermost first.
    pub fn capsule_calls_mut(&mut self) -> impl Iterator<Item = &mut Frame> {
        let frames = &mut self.frames;
        frames.iter_mut().filter(|f| f.capsule.is_some())
    }

    /// Whether frame `i` is the innermost (the running call's).
    pub fn is_innermost(&self, i: usize) -> bool {
        i + 1 == self.frames.len()
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Frame {
        &mut self.frames[i]
    }

    pub fn get(&self, i: usize) -> &Frame {
        &self.frames[i]
    }
}
