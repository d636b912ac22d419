//! Static encapsulation check (beyond the Rhodes thesis, whose check is dynamic, §5.2.2):
//! capsule property 1 says a capsule's fields are accessed only by its own class's
//! methods on `this`. For every field access of the IR this module decides one of:
//!
//! - *proven*: the access is in an instance method or constructor of the field's class,
//!   on `this` or on a local that provably holds `this`. Recorded in
//!   [`Program::capsule_proven`] for every class (a class may be made a capsule at run
//!   time, `capvm run --capsules`), so the `capsule` analysis skips its dynamic check.
//! - *outside*: the access can never be a capsule access: it is in code of another class
//!   (the dynamic check compares the running method's class with the field's), or its
//!   object is allocated by the running call itself (so it is neither `this` nor the
//!   capsule whose call is running, which existed before the call). For a class
//!   declared `capsule` this is a compile-time warning.
//! - *unknown*: anything else (`other.f` on a parameter, `a.b.f`, a value returned by a
//!   call): it stays dynamically checked, without a warning.
//!
//! What a local may hold is decided flow-insensitively over its definitions, as least
//! fixed points: a local holds `this` if every definition copies `this` or such a local,
//! and holds a fresh object if every definition is a `New`, `null`, or a copy of such a
//! local (and one is not `null`). This is sound because the lowering defines every local
//! before any use on every path (a declaration without initialiser stores the default),
//! so a local only ever holds the value of one of its definitions; a `null` never gets
//! to an access (the null check stops the program first).

use crate::Severity;
use crate::diag::Sink;
use crate::ir::{FieldRef, FuncId, FuncKind, Function, Inst, Local, Program};
use crate::span::Span;

/// What the analysis knows about one field access.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Verdict {
    Proven,
    Unknown,
    /// Code of another class.
    OtherClass,
    /// An object allocated by the running call.
    Fresh,
}

/// Per site: every access proven so far, and the first reason it is certainly outside.
#[derive(Copy, Clone)]
struct SiteState {
    all_proven: bool,
    outside: Option<(Verdict, FuncId, FieldRef)>,
}

/// Fill `program.capsule_proven` and report a warning for every site of a `capsule`
/// class's field that is certainly accessed from outside its own methods on `this`.
/// `spans` gives the span of each site (parallel to `program.sites`).
pub fn check(program: &mut Program, spans: &[Span], sink: &mut Sink<'_>) {
    let mut state: Vec<Option<SiteState>> = vec![None; program.sites.len()];
    for (i, func) in program.funcs.iter().enumerate() {
        let id = FuncId(i as u32);
        let origins = Origins::of(func);
        for inst in func.blocks.iter().flat_map(|b| &b.insts) {
            let (Inst::GetField {
                obj, field, site, ..
            }
            | Inst::PutField {
                obj, field, site, ..
            }) = inst
            else {
                continue;
            };
            let verdict = if func.class != field.class {
                Verdict::OtherClass
            } else if origins.is_this(*obj) {
                Verdict::Proven
            } else if origins.is_fresh(*obj) {
                Verdict::Fresh
            } else {
                Verdict::Unknown
            };
            let Some(slot) = state.get_mut(site.index()) else {
                continue;
            };
            let s = slot.get_or_insert(SiteState {
                all_proven: true,
                outside: None,
            });
            s.all_proven &= verdict == Verdict::Proven;
            if matches!(verdict, Verdict::OtherClass | Verdict::Fresh) && s.outside.is_none() {
                s.outside = Some((verdict, id, *field));
            }
        }
    }
    program.capsule_proven = state
        .iter()
        .enumerate()
        .map(|(i, s)| i != 0 && s.is_some_and(|s| s.all_proven))
        .collect();
    for (i, s) in state.iter().enumerate() {
        if let Some(SiteState {
            outside: Some((why, func, field)),
            ..
        }) = s
            && program.class(field.class).is_capsule
        {
            let span = spans.get(i).copied().unwrap_or_default();
            warn(program, span, *why, *func, *field, sink);
        }
    }
}

fn warn(
    program: &Program,
    span: Span,
    why: Verdict,
    func: FuncId,
    field: FieldRef,
    sink: &mut Sink<'_>,
) {
    let class = &program.class(field.class).name;
    let name = &program.field(field).name;
    let in_func = program.func_name(func);
    let note = match why {
        Verdict::OtherClass => format!(
            "`{in_func}` is not a method of `{class}`: only `{class}`'s own methods may access its fields, on `this`"
        ),
        _ => format!(
            "the object is allocated by `{in_func}` itself, so it is never `this` (nor the `{class}` whose method is running)"
        ),
    };
    sink.report_with_notes(
        Severity::Warning,
        span,
        format!(
            "access to field `{name}` of capsule class `{class}` from outside its own methods on `this`"
        ),
        vec![
            note,
            format!(
                "when it runs, this access breaks `{class}`'s encapsulation (a `capsule-violation` of the `capsule` analysis)"
            ),
        ],
    );
}

/// How one definition of a local relates to the two sets being solved.
#[derive(Copy, Clone)]
enum Def {
    /// `this` on entry (local 0 of a method or constructor).
    This,
    /// `New` of any class.
    New,
    /// The constant `null`.
    Null,
    Copy(Local),
    /// Anything else (a parameter, a call result, a field or array load, …).
    Other,
}

/// The locals of one function that provably hold `this`, and those that provably hold
/// an object allocated by the running call.
struct Origins {
    this: Vec<bool>,
    fresh: Vec<bool>,
}

impl Origins {
    fn of(func: &Function) -> Origins {
        let n = func.locals.len();
        let mut defs: Vec<Vec<Def>> = vec![Vec::new(); n];
        for (p, d) in defs.iter_mut().take(func.num_params as usize).enumerate() {
            let is_this = p == 0 && func.kind != FuncKind::Static;
            d.push(if is_this { Def::This } else { Def::Other });
        }
        for inst in func.blocks.iter().flat_map(|b| &b.insts) {
            if let Some((dst, d)) = definition(inst)
                && let Some(v) = defs.get_mut(dst.index())
            {
                v.push(d);
            }
        }
        let this = least_set(&defs, |d| match d {
            Def::This => Role::Base,
            Def::Null => Role::Neutral,
            Def::Copy(s) => Role::From(*s),
            Def::New | Def::Other => Role::Breaks,
        });
        let fresh = least_set(&defs, |d| match d {
            Def::New => Role::Base,
            Def::Null => Role::Neutral,
            Def::Copy(s) => Role::From(*s),
            Def::This | Def::Other => Role::Breaks,
        });
        Origins { this, fresh }
    }

    fn is_this(&self, l: Local) -> bool {
        self.this.get(l.index()).copied().unwrap_or(false)
    }

    fn is_fresh(&self, l: Local) -> bool {
        self.fresh.get(l.index()).copied().unwrap_or(false)
    }
}

/// The local an instruction writes, and what it writes there.
fn definition(inst: &Inst) -> Option<(Local, Def)> {
    use crate::ir::Const;
    let d = match inst {
        Inst::Const {
            value: Const::Null, ..
        } => Def::Null,
        Inst::Copy { src, .. } => Def::Copy(*src),
        Inst::New { .. } => Def::New,
        _ => Def::Other,
    };
    inst.dst().map(|dst| (dst, d))
}

/// How a definition counts towards membership of its local in a set.
#[derive(Copy, Clone)]
enum Role {
    /// A member value by itself.
    Base,
    /// No value at all as far as accesses go (`null`).
    Neutral,
    /// A member value if the source local is a member.
    From(Local),
    /// Not a member value: the local is not a member.
    Breaks,
}

/// The least set of locals such that a local is a member iff no definition breaks,
/// every `From` source is a member, and at least one definition is not neutral.
/// Worklist over the copy edges: linear in the number of definitions.
fn least_set(defs: &[Vec<Def>], role: impl Fn(&Def) -> Role) -> Vec<bool> {
    let n = defs.len();
    let mut member = vec![false; n];
    // Copy sources still outside the set, per local (None: the local can never join).
    let mut pending: Vec<Option<usize>> = vec![None; n];
    // For each source local, the locals that copy it (once per copy).
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut work = Vec::new();
    for (l, ds) in defs.iter().enumerate() {
        let mut deps = 0;
        let mut valued = false;
        let mut ok = true;
        for d in ds {
            match role(d) {
                Role::Base => valued = true,
                Role::Neutral => {}
                Role::From(s) if s.index() < n => {
                    deps += 1;
                    valued = true;
                    users[s.index()].push(l);
                }
                Role::From(_) | Role::Breaks => ok = false,
            }
        }
        if ok && valued {
            pending[l] = Some(deps);
            if deps == 0 {
                work.push(l);
            }
        }
    }
    while let Some(l) = work.pop() {
        if member[l] {
            continue;
        }
        member[l] = true;
        for &u in &users[l] {
            if let Some(p) = pending[u].as_mut() {
                *p -= 1;
                if *p == 0 {
                    work.push(u);
                }
            }
        }
    }
    member
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Block, ClassId, Const, LocalDecl, SiteId, Terminator, Type};

    /// A method of class 0 with `n` locals (local 0 is `this`) and these instructions.
    fn method(kind: FuncKind, n: usize, insts: Vec<Inst>) -> Function {
        Function {
            class: ClassId(0),
            name: "m".into(),
            kind,
            is_synchronized: false,
            is_deterministic: false,
            is_atomic: false,
            num_params: if kind == FuncKind::Static { 0 } else { 1 },
            locals: (0..n)
                .map(|_| LocalDecl {
                    name: None,
                    ty: Type::Class(ClassId(0)),
                })
                .collect(),
            ret: Type::Void,
            blocks: vec![Block {
                insts,
                term: Terminator::Return(None),
            }],
            site: SiteId(0),
        }
    }

    fn copy(dst: u32, src: u32) -> Inst {
        Inst::Copy {
            dst: Local(dst),
            src: Local(src),
        }
    }

    fn new(dst: u32) -> Inst {
        Inst::New {
            dst: Local(dst),
            class: ClassId(0),
            site: SiteId(0),
        }
    }

    fn null(dst: u32) -> Inst {
        Inst::Const {
            dst: Local(dst),
            value: Const::Null,
        }
    }

    fn sets(f: &Function) -> (Vec<bool>, Vec<bool>) {
        let o = Origins::of(f);
        (o.this, o.fresh)
    }

    #[test]
    fn copies_of_this_hold_this() {
        // %1 = this; %2 = %1; %3 = %2 or null; %4 = %1 or a fresh object.
        let f = method(
            FuncKind::Method,
            5,
            vec![
                copy(1, 0),
                copy(2, 1),
                null(3),
                copy(3, 2),
                copy(4, 1),
                new(4),
            ],
        );
        let (this, fresh) = sets(&f);
        assert_eq!(this, [true, true, true, true, false]);
        assert_eq!(fresh, [false; 5]);
    }

    #[test]
    fn copy_cycles_hold_nothing() {
        // %1 = %2; %2 = %1 (never defined from anything): least fixed point, not members.
        // %3 = this; %3 = %3: a self-copy keeps it out too (conservative).
        let f = method(
            FuncKind::Method,
            4,
            vec![copy(1, 2), copy(2, 1), copy(3, 0), copy(3, 3)],
        );
        let (this, fresh) = sets(&f);
        assert_eq!(this, [true, false, false, false]);
        assert_eq!(fresh, [false; 4]);
    }

    #[test]
    fn fresh_objects_and_null() {
        // %0 is not `this` in a static method; %1 = new or null; %2 = null only;
        // %3 = %1; %4 = new or %0 (local 0 is an ordinary local here, itself fresh).
        let f = method(
            FuncKind::Static,
            5,
            vec![
                new(1),
                null(1),
                null(2),
                copy(3, 1),
                new(4),
                copy(4, 0),
                new(0),
            ],
        );
        let (this, fresh) = sets(&f);
        assert_eq!(this, [false; 5]);
        assert_eq!(fresh, [true, true, false, true, true]);
    }

    #[test]
    fn a_redefined_receiver_is_not_this() {
        let f = method(FuncKind::Method, 2, vec![new(0), copy(1, 0)]);
        let (this, fresh) = sets(&f);
        assert_eq!(this, [false, false]);
        assert_eq!(fresh, [false, false]);
    }
}
