//! The intermediate representation shared by the interpreter and the Cranelift JIT.
//!
//! Design (read this before touching `vm::interp` or `vm::jit`):
//! - A [`Program`] is a flat table of classes, functions (methods and constructors),
//!   static fields and source sites. Everything is referred to by a dense index
//!   ([`ClassId`], [`FuncId`], [`StaticId`], [`SiteId`]), so the VM can keep parallel
//!   tables and the JIT can embed ids as immediates.
//! - A [`Function`] is a control-flow graph of basic [`Block`]s over typed *locals*
//!   (non-SSA virtual registers). Each local has one [`Type`] for its whole life. The
//!   interpreter keeps a frame of 64-bit slots indexed by [`Local`]; the JIT declares one
//!   Cranelift `Variable` per local and lets `cranelift-frontend` build SSA.
//! - Every heap, synchronization and specification operation is an explicit instruction
//!   carrying the [`SiteId`] of the source construct, because each of them is an event
//!   for the analyses and a place where a runtime error can be reported.
//! - Control constructs (`if`, loops, `&&`, `||`, `?:`, `break`, `continue`) are gone;
//!   `synchronized` blocks and `deterministic`/`atomic` blocks are lowered to explicit
//!   `MonitorEnter`/`MonitorExit` and `SpecBegin`/`SpecEnd` on *every* exit path
//!   (the language has no exceptions; a runtime error stops the whole program).
//! - `synchronized`, `deterministic` and `atomic` *methods* are NOT lowered into the body:
//!   the flags on [`Function`] tell the VM to run the prologue/epilogue itself, in this
//!   event order: acquire, method enter, begin, … body …, end, method exit, release.
//!   (The monitor of a `static synchronized` method is one lock object per class that
//!   the VM creates before `main`.)
//!
//! Architecture invariant: `lang` knows nothing of the runtime; the IR is plain data.

use std::fmt;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A class of the program (user classes only; `Thread` and `Barrier` are built in).
    ClassId
);
id_type!(
    /// A method or constructor. Index into [`Program::funcs`].
    FuncId
);
id_type!(
    /// A static field. Index into [`Program::statics`].
    StaticId
);
id_type!(
    /// A source position. Index into [`Program::sites`]. Site 0 is "unknown".
    SiteId
);
id_type!(
    /// A basic block of one function. Block 0 is the entry.
    BlockId
);
id_type!(
    /// A local (parameter, source variable or temporary) of one function.
    Local
);
id_type!(
    /// A source file. Index into [`Program::files`].
    FileId
);

/// CapJava types.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    /// 64-bit signed, wrapping arithmetic.
    Int,
    /// IEEE binary64.
    Double,
    Boolean,
    Void,
    /// The type of the literal `null` (assignable to every reference type).
    Null,
    Class(ClassId),
    Array(Box<Type>),
    Thread,
    Barrier,
}

impl Type {
    /// True for every type whose values are heap references (or null).
    pub fn is_ref(&self) -> bool {
        matches!(
            self,
            Type::Null | Type::Class(_) | Type::Array(_) | Type::Thread | Type::Barrier
        )
    }
    /// How a value of this type is stored in a 64-bit slot.
    pub fn repr(&self) -> Repr {
        match self {
            Type::Int => Repr::Int,
            Type::Double => Repr::Double,
            Type::Boolean => Repr::Bool,
            Type::Void => Repr::Void,
            _ => Repr::Ref,
        }
    }
}

/// Machine representation of a value. Every non-void value fits in 64 bits:
/// ints as i64, doubles as f64 bits, booleans as 0/1, references as the VM's
/// reference word (0 = null).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Repr {
    Int,
    Double,
    Bool,
    Ref,
    Void,
}

#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

/// A source position of an operation, for reports and runtime errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub file: FileId,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub col: u32,
    /// The function whose body contains the site (None for static initialisers).
    pub func: Option<FuncId>,
}

#[derive(Clone, Debug)]
pub struct Program {
    pub files: Vec<SourceFile>,
    pub classes: Vec<Class>,
    pub funcs: Vec<Function>,
    pub statics: Vec<StaticField>,
    /// `sites[0]` is a placeholder for "unknown".
    pub sites: Vec<Site>,
    /// The unique `static void main()`.
    pub main: FuncId,
    /// Compile-time encapsulation proofs, indexed by [`SiteId`]: `true` for a site whose
    /// every field access ([`Inst::GetField`]/[`Inst::PutField`]) is on `this` (or a
    /// local that provably holds `this`) inside an instance method or constructor of the
    /// field's own class. Such an access satisfies capsule property 1 (encapsulation)
    /// whether or not the class is a capsule, so the `capsule` analysis need not check
    /// it at run time. Shorter than `sites` (even empty, for hand-built programs): the
    /// missing sites are not proven. Query with [`Program::proven_capsule_access`].
    pub capsule_proven: Vec<bool>,
}

#[derive(Clone, Debug)]
pub struct Class {
    pub name: String,
    pub is_capsule: bool,
    /// Instance fields; the field's index is its slot number in the object.
    pub fields: Vec<Field>,
    pub ctor: Option<FuncId>,
    /// Every method and the constructor of this class.
    pub methods: Vec<FuncId>,
    pub site: SiteId,
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub is_final: bool,
    pub is_volatile: bool,
    /// Constant initialiser, applied when the object is allocated (no events).
    pub init: Option<Const>,
    pub site: SiteId,
}

#[derive(Clone, Debug)]
pub struct StaticField {
    pub class: ClassId,
    pub name: String,
    pub ty: Type,
    pub is_final: bool,
    pub is_volatile: bool,
    /// Applied before `main` in declaration order; absent = default value.
    pub init: Option<Const>,
    pub site: SiteId,
}

/// Field reference: class and slot index.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct FieldRef {
    pub class: ClassId,
    pub index: u32,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum FuncKind {
    /// Instance method: local 0 is `this`.
    Method,
    /// Static method.
    Static,
    /// Constructor: local 0 is `this` (already allocated); returns void.
    Constructor,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Spec {
    Deterministic,
    Atomic,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub class: ClassId,
    /// Source name (`run`, `<init>` for constructors).
    pub name: String,
    pub kind: FuncKind,
    pub is_synchronized: bool,
    pub is_deterministic: bool,
    pub is_atomic: bool,
    /// Number of parameters including `this` for methods/constructors; they are
    /// locals `0..num_params`.
    pub num_params: u32,
    pub locals: Vec<LocalDecl>,
    pub ret: Type,
    /// `blocks[0]` is the entry. Every block ends in a terminator.
    pub blocks: Vec<Block>,
    /// Declaration site (used for method enter/exit events).
    pub site: SiteId,
}

#[derive(Clone, Debug)]
pub struct LocalDecl {
    /// Source name, None for temporaries.
    pub name: Option<String>,
    pub ty: Type,
}

#[derive(Clone, Debug, Default)]
pub struct Block {
    pub insts: Vec<Inst>,
    pub term: Terminator,
}

#[derive(Clone, Debug, Default)]
pub enum Terminator {
    Jump(BlockId),
    Branch {
        cond: Local,
        then_to: BlockId,
        else_to: BlockId,
    },
    Return(Option<Local>),
    /// Placeholder during construction; never present in a finished program.
    #[default]
    Unreachable,
}

impl Terminator {
    /// The local the terminator reads, if any (a branch's condition, a returned value).
    pub fn operand(&self) -> Option<Local> {
        match self {
            Terminator::Branch { cond, .. } => Some(*cond),
            Terminator::Return(v) => *v,
            Terminator::Jump(_) | Terminator::Unreachable => None,
        }
    }

    /// [`Terminator::operand`], to rewrite in place.
    pub fn operand_mut(&mut self) -> Option<&mut Local> {
        match self {
            Terminator::Branch { cond, .. } => Some(cond),
            Terminator::Return(v) => v.as_mut(),
            Terminator::Jump(_) | Terminator::Unreachable => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Int(i64),
    Double(f64),
    Bool(bool),
    Null,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Wrapping int negation.
    INeg,
    FNeg,
    /// Boolean not.
    Not,
    /// Bitwise complement of an int.
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    // int arithmetic (wrapping; Java `long` semantics)
    IAdd,
    ISub,
    IMul,
    /// Traps on zero divisor (runtime error); i64::MIN / -1 = i64::MIN.
    IDiv,
    /// Traps on zero divisor; i64::MIN % -1 = 0.
    IRem,
    IAnd,
    IOr,
    IXor,
    /// Shift count masked with 63, as Java does for `long`.
    Shl,
    Shr,
    UShr,
    // double arithmetic (IEEE; `%` is fmod like Java)
    FAdd,
    FSub,
    FMul,
    FDiv,
    FRem,
    // comparisons producing boolean
    ICmp(Cmp),
    FCmp(Cmp),
    /// `==`/`!=` on booleans.
    BEq,
    BNe,
    /// `&`, `|`, `^` on booleans (non-short-circuit).
    BAnd,
    BOr,
    BXor,
    /// Reference identity.
    RefEq,
    RefNe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conv {
    IntToDouble,
    /// Java's `(int)` on a double, but to 64 bits: NaN → 0, saturating at the bounds.
    DoubleToInt,
}

/// Built-in math functions. Overloads are resolved by the front end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Sqrt,
    AbsInt,
    AbsDouble,
    Sin,
    Cos,
    Exp,
    Log,
    Pow,
    Floor,
    MinInt,
    MaxInt,
    MinDouble,
    MaxDouble,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PrintArg {
    Str(String),
    /// A value with its representation (int, double or boolean).
    Value(Local, Repr),
}

/// Instructions. Operands are locals; results go to `dst`.
/// Every instruction that can fail or that is an analysis event has a `site`.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    Const {
        dst: Local,
        value: Const,
    },
    Copy {
        dst: Local,
        src: Local,
    },
    Unary {
        dst: Local,
        op: UnOp,
        src: Local,
    },
    /// `site` is used for the division-by-zero error of IDiv/IRem.
    Binary {
        dst: Local,
        op: BinOp,
        lhs: Local,
        rhs: Local,
        site: SiteId,
    },
    Convert {
        dst: Local,
        conv: Conv,
        src: Local,
    },
    /// `dst = obj.field` (null check; volatile read if the field is volatile).
    GetField {
        dst: Local,
        obj: Local,
        field: FieldRef,
        site: SiteId,
    },
    /// `obj.field = src` (null check; volatile write if the field is volatile).
    PutField {
        obj: Local,
        field: FieldRef,
        src: Local,
        site: SiteId,
    },
    GetStatic {
        dst: Local,
        field: StaticId,
        site: SiteId,
    },
    PutStatic {
        field: StaticId,
        src: Local,
        site: SiteId,
    },
    /// `dst = arr[index]` (null and bounds checks).
    ArrayLoad {
        dst: Local,
        arr: Local,
        index: Local,
        site: SiteId,
    },
    ArrayStore {
        arr: Local,
        index: Local,
        src: Local,
        site: SiteId,
    },
    /// `dst = arr.length` (null check; not a heap access event: the length is final).
    ArrayLength {
        dst: Local,
        arr: Local,
        site: SiteId,
    },
    /// Allocate an object of `class`, fields set to their defaults/initialisers.
    /// The constructor, if any, is a separate `Call`.
    New {
        dst: Local,
        class: ClassId,
        site: SiteId,
    },
    /// `new T[d0][d1]…`: `elem` is the element type of the *outermost* array
    /// (so `new int[n][m]` has elem = `int[]`, dims = [n, m]); negative size is an error.
    NewArray {
        dst: Local,
        elem: Type,
        dims: Vec<Local>,
        site: SiteId,
    },
    /// Direct call (no virtual dispatch in CapJava). For methods and constructors
    /// `args[0]` is the receiver, null-checked by the call.
    Call {
        dst: Option<Local>,
        func: FuncId,
        args: Vec<Local>,
        site: SiteId,
    },
    /// `fork recv.m(args)` / `fork C.m(args)`: arguments are already evaluated;
    /// starts a new thread running the call; `dst` is the `Thread`.
    Fork {
        dst: Local,
        func: FuncId,
        args: Vec<Local>,
        site: SiteId,
    },
    /// `t.join()`.
    Join {
        thread: Local,
        site: SiteId,
    },
    /// `Thread.id()`.
    ThreadId {
        dst: Local,
    },
    /// Reentrant monitor acquire of `obj` (null check).
    MonitorEnter {
        obj: Local,
        site: SiteId,
    },
    MonitorExit {
        obj: Local,
        site: SiteId,
    },
    Wait {
        obj: Local,
        site: SiteId,
    },
    Notify {
        obj: Local,
        all: bool,
        site: SiteId,
    },
    /// `new Barrier(parties)`; parties < 1 is a runtime error.
    NewBarrier {
        dst: Local,
        parties: Local,
        site: SiteId,
    },
    BarrierAwait {
        barrier: Local,
        site: SiteId,
    },
    /// Begin/end of a `deterministic` or `atomic` block.
    SpecBegin {
        spec: Spec,
        site: SiteId,
    },
    SpecEnd {
        spec: Spec,
        site: SiteId,
    },
    Math {
        dst: Local,
        func: MathFn,
        args: Vec<Local>,
    },
    Print {
        args: Vec<PrintArg>,
        site: SiteId,
    },
    /// Runtime error "assertion failed" if `cond` is false.
    Assert {
        cond: Local,
        site: SiteId,
    },
    /// A BigFoot check (Rhodes, *Access Classification for Race Detection
    /// Optimization*, ch. 3): never produced by lowering, only by the check placement
    /// of `crate::bigfoot`, which leaves one where deferred accesses must be checked.
    /// No runtime error, no scheduling point; an event for the analyses only.
    Check {
        target: CheckTarget,
        /// `true`: a write check (covers reads and writes); `false`: a read check.
        write: bool,
        site: SiteId,
    },
}

/// The locals an instruction reads, in operand order, each bound as the caller's
/// match binds (`&Local` for `&Inst`, `&mut Local` for `&mut Inst`): one walk for
/// [`Inst::for_each_read`] and [`Inst::for_each_read_mut`].
macro_rules! each_read {
    ($inst:expr, $f:expr) => {
        match $inst {
            Inst::Const { .. }
            | Inst::GetStatic { .. }
            | Inst::New { .. }
            | Inst::ThreadId { .. }
            | Inst::SpecBegin { .. }
            | Inst::SpecEnd { .. } => {}
            Inst::Copy { src, .. }
            | Inst::Unary { src, .. }
            | Inst::Convert { src, .. }
            | Inst::PutStatic { src, .. } => $f(src),
            Inst::Binary { lhs, rhs, .. } => {
                $f(lhs);
                $f(rhs);
            }
            Inst::GetField { obj, .. } => $f(obj),
            Inst::PutField { obj, src, .. } => {
                $f(obj);
                $f(src);
            }
            Inst::ArrayLoad { arr, index, .. } => {
                $f(arr);
                $f(index);
            }
            Inst::ArrayStore {
                arr, index, src, ..
            } => {
                $f(arr);
                $f(index);
                $f(src);
            }
            Inst::ArrayLength { arr, .. } => $f(arr),
            Inst::NewArray { dims: ls, .. }
            | Inst::Call { args: ls, .. }
            | Inst::Fork { args: ls, .. }
            | Inst::Math { args: ls, .. } => {
                for l in ls {
                    $f(l);
                }
            }
            Inst::Join { thread: l, .. }
            | Inst::MonitorEnter { obj: l, .. }
            | Inst::MonitorExit { obj: l, .. }
            | Inst::Wait { obj: l, .. }
            | Inst::Notify { obj: l, .. }
            | Inst::NewBarrier { parties: l, .. }
            | Inst::BarrierAwait { barrier: l, .. }
            | Inst::Assert { cond: l, .. } => $f(l),
            Inst::Print { args, .. } => {
                for a in args {
                    if let PrintArg::Value(l, _) = a {
                        $f(l);
                    }
                }
            }
            Inst::Check { target, .. } => match target {
                CheckTarget::Fields { obj, .. } => $f(obj),
                CheckTarget::Static { .. } => {}
                CheckTarget::Range { arr, lo, hi, .. } => {
                    $f(arr);
                    $f(lo);
                    $f(hi);
                }
                CheckTarget::Elem { arr, index } => {
                    $f(arr);
                    $f(index);
                }
            },
        }
    };
}

impl Inst {
    /// Every local the instruction reads, in operand order (before it writes
    /// [`Inst::dst`]).
    pub fn for_each_read(&self, mut f: impl FnMut(Local)) {
        each_read!(self, |l: &Local| f(*l))
    }

    /// Every local the instruction reads, to rewrite in place.
    pub fn for_each_read_mut(&mut self, mut f: impl FnMut(&mut Local)) {
        each_read!(self, |l: &mut Local| f(l))
    }

    /// The local the instruction assigns, if any.
    pub fn dst(&self) -> Option<Local> {
        match self {
            Inst::Const { dst, .. }
            | Inst::Copy { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Binary { dst, .. }
            | Inst::Convert { dst, .. }
            | Inst::GetField { dst, .. }
            | Inst::GetStatic { dst, .. }
            | Inst::ArrayLoad { dst, .. }
            | Inst::ArrayLength { dst, .. }
            | Inst::New { dst, .. }
            | Inst::NewArray { dst, .. }
            | Inst::Fork { dst, .. }
            | Inst::ThreadId { dst }
            | Inst::NewBarrier { dst, .. }
            | Inst::Math { dst, .. } => Some(*dst),
            Inst::Call { dst, .. } => *dst,
            Inst::PutField { .. }
            | Inst::PutStatic { .. }
            | Inst::ArrayStore { .. }
            | Inst::Join { .. }
            | Inst::MonitorEnter { .. }
            | Inst::MonitorExit { .. }
            | Inst::Wait { .. }
            | Inst::Notify { .. }
            | Inst::BarrierAwait { .. }
            | Inst::SpecBegin { .. }
            | Inst::SpecEnd { .. }
            | Inst::Print { .. }
            | Inst::Assert { .. }
            | Inst::Check { .. } => None,
        }
    }

    /// The source position of an instruction that has one (heap, synchronization,
    /// calls, output, checks; not the pure moves and jumps).
    pub fn site(&self) -> Option<SiteId> {
        match self {
            Inst::Binary { site, .. }
            | Inst::GetField { site, .. }
            | Inst::PutField { site, .. }
            | Inst::GetStatic { site, .. }
            | Inst::PutStatic { site, .. }
            | Inst::ArrayLoad { site, .. }
            | Inst::ArrayStore { site, .. }
            | Inst::ArrayLength { site, .. }
            | Inst::New { site, .. }
            | Inst::NewArray { site, .. }
            | Inst::Call { site, .. }
            | Inst::Fork { site, .. }
            | Inst::Join { site, .. }
            | Inst::MonitorEnter { site, .. }
            | Inst::MonitorExit { site, .. }
            | Inst::Wait { site, .. }
            | Inst::Notify { site, .. }
            | Inst::NewBarrier { site, .. }
            | Inst::BarrierAwait { site, .. }
            | Inst::SpecBegin { site, .. }
            | Inst::SpecEnd { site, .. }
            | Inst::Print { site, .. }
            | Inst::Assert { site, .. }
            | Inst::Check { site, .. } => Some(*site),
            _ => None,
        }
    }
}

/// What a [`Inst::Check`] checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckTarget {
    /// Fields of the object in `obj` (of class `class`), as shadow groups: each entry
    /// is a group's representative slot and the mask of the group's slots (every slot
    /// below 64; a group with a slot past 63 is a single field, mask 0).
    Fields {
        obj: Local,
        class: ClassId,
        groups: Vec<(u32, u64)>,
    },
    /// A static field.
    Static { field: StaticId },
    /// The strided index range `arr[lo..hi:step]` (half-open; empty if `lo >= hi`).
    Range {
        arr: Local,
        lo: Local,
        hi: Local,
        step: u32,
    },
    /// One element `arr[index]`.
    Elem { arr: Local, index: Local },
}

impl Program {
    /// Per function, whether it can start a thread: `main` and every fork target.
    pub fn thread_entries(&self) -> Vec<bool> {
        let mut v = vec![false; self.funcs.len()];
        v[self.main.index()] = true;
        for i in self
            .funcs
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.insts)
        {
            if let Inst::Fork { func, .. } = i {
                v[func.index()] = true;
            }
        }
        v
    }

    pub fn class(&self, id: ClassId) -> &Class {
        &self.classes[id.index()]
    }
    pub fn func(&self, id: FuncId) -> &Function {
        &self.funcs[id.index()]
    }
    pub fn field(&self, f: FieldRef) -> &Field {
        &self.classes[f.class.index()].fields[f.index as usize]
    }
    pub fn static_field(&self, id: StaticId) -> &StaticField {
        &self.statics[id.index()]
    }
    pub fn site(&self, id: SiteId) -> &Site {
        &self.sites[id.index()]
    }
    /// Whether the field accesses at `site` are proven at compile time to be by the
    /// field's own class on `this` (see [`Program::capsule_proven`]). False for unknown
    /// sites, so the dynamic encapsulation check stays on by default.
    pub fn proven_capsule_access(&self, site: SiteId) -> bool {
        self.capsule_proven
            .get(site.index())
            .copied()
            .unwrap_or(false)
    }
    /// `Class.method` (or `Class.<init>`).
    pub fn func_name(&self, id: FuncId) -> String {
        let f = self.func(id);
        format!("{}.{}", self.class(f.class).name, f.name)
    }
    /// `file:line:col` of a site (`"<unknown>"` for site 0).
    pub fn site_string(&self, id: SiteId) -> String {
        if id.0 == 0 || id.index() >= self.sites.len() {
            return "<unknown>".to_string();
        }
        let s = self.site(id);
        format!("{}:{}:{}", self.files[s.file.index()].name, s.line, s.col)
    }
    /// Render a type the way CapJava source spells it (`int[][]`, `Counter`).
    pub fn type_name(&self, ty: &Type) -> String {
        match ty {
            Type::Int => "int".into(),
            Type::Double => "double".into(),
            Type::Boolean => "boolean".into(),
            Type::Void => "void".into(),
            Type::Null => "null".into(),
            Type::Class(c) => self.class(*c).name.clone(),
            Type::Array(e) => format!("{}[]", self.type_name(e)),
            Type::Thread => "Thread".into(),
            Type::Barrier => "Barrier".into(),
        }
    }
}

impl fmt::Display for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}
