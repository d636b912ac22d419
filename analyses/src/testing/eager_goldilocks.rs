//! Goldilocks' eager rules (Elmas, Qadeer & Tasiran, MSR-TR-2006-163 Fig. 1, with
//! the read/write extension of §4): every synchronization event updates the lockset of
//! every variable. Quadratic and simple: the differential oracle for the lazy
//! `goldilocks` pass, which must produce the identical report stream.

use crate::event::{Loc, ObjId, Op, OwnedEvent, OwnedKind, Tid};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Token {
    Thread(Tid),
    Lock(ObjId),
    Vol(Loc),
    Barrier(ObjId, u64),
}

/// An explicit lockset of one earlier access, with that access's trace line.
struct Ls {
    tid: Tid,
    index: u64,
    set: Vec<Token>,
}

#[derive(Default)]
struct Var {
    /// RW mode: the last write. TR mode: the last access.
    w: Option<Ls>,
    /// RW mode: each thread's last read since the last write (insertion order).
    r: Vec<Ls>,
}

/// The report stream `(racy access line, earlier access line)` of the eager rules, in
/// the order the lazy pass reports (RW mode: the write first, then the reads; a read
/// by a thread that already read since the last write is not checked again).
pub fn eager_goldilocks(events: &[OwnedEvent], tr_mode: bool) -> Vec<(u64, u64)> {
    let mut vars: Vec<(Loc, Var)> = Vec::new();
    let mut out = Vec::new();
    for ev in events {
        let t = ev.tid;
        let (source, sink) = match &ev.kind {
            OwnedKind::Release { lock } => (Some(Token::Lock(*lock)), None),
            OwnedKind::Acquire { lock } => (None, Some(Token::Lock(*lock))),
            OwnedKind::VolatileWrite { loc, .. } => (Some(Token::Vol(*loc)), None),
            OwnedKind::VolatileRead { loc } => (None, Some(Token::Vol(*loc))),
            OwnedKind::Fork { child, .. } => (Some(Token::Thread(*child)), None),
            OwnedKind::Join { child } => (None, Some(Token::Thread(*child))),
            OwnedKind::BarrierEnter {
                barrier,
                generation,
                ..
            } => (Some(Token::Barrier(*barrier, *generation)), None),
            OwnedKind::BarrierExit {
                barrier,
                generation,
                ..
            } => (None, Some(Token::Barrier(*barrier, *generation))),
            OwnedKind::Read { loc } => {
                access(&mut vars, *loc, t, ev.index, Op::Read, tr_mode, &mut out);
                (None, None)
            }
            OwnedKind::Write { loc, .. } => {
                access(&mut vars, *loc, t, ev.index, Op::Write, tr_mode, &mut out);
                (None, None)
            }
            _ => (None, None),
        };
        // R2–R7 on every lockset.
        for (_, v) in vars.iter_mut() {
            for ls in v.w.iter_mut().chain(v.r.iter_mut()) {
                if let Some(s) = source
                    && ls.set.contains(&Token::Thread(t))
                    && !ls.set.contains(&s)
                {
                    ls.set.push(s);
                }
                if let Some(s) = sink
                    && ls.set.contains(&s)
                    && !ls.set.contains(&Token::Thread(t))
                {
                    ls.set.push(Token::Thread(t));
                }
            }
        }
    }
    out
}

fn access(
    vars: &mut Vec<(Loc, Var)>,
    loc: Loc,
    t: Tid,
    index: u64,
    op: Op,
    tr_mode: bool,
    out: &mut Vec<(u64, u64)>,
) {
    let i = match vars.iter().position(|(l, _)| *l == loc) {
        Some(i) => i,
        None => {
            vars.push((loc, Var::default()));
            vars.len() - 1
        }
    };
    let v = &mut vars[i].1;
    let fresh = Ls {
        tid: t,
        index,
        set: vec![Token::Thread(t)],
    };
    let ordered = |ls: &Ls| ls.set.contains(&Token::Thread(t));
    if tr_mode {
        // R1.
        if let Some(w) = &v.w
            && !ordered(w)
        {
            out.push((index, w.index));
        }
        v.w = Some(fresh);
        return;
    }
    match op {
        Op::Read => {
            let seen = v.r.iter().any(|r| r.tid == t);
            if !seen
                && let Some(w) = &v.w
                && !ordered(w)
            {
                out.push((index, w.index));
            }
            match v.r.iter_mut().find(|r| r.tid == t) {
                Some(r) => *r = fresh,
                None => v.r.push(fresh),
            }
        }
        Op::Write => {
            if let Some(w) = &v.w
                && !ordered(w)
            {
                out.push((index, w.index));
            }
            for r in &v.r {
                if !ordered(r) {
                    out.push((index, r.index));
                }
            }
            v.w = Some(fresh);
            v.r.clear();
        }
    }
}
