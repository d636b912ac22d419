//! Typed tree: the output of [`crate::check`], input of [`crate::lower`]. Names are
//! resolved to ids, overloads and implicit conversions are explicit, every expression
//! has its [`Type`], and `span` is the position of the operation's key token (the
//! site reported for it).

use crate::ir::{
    BinOp, ClassId, Const, Conv, FieldRef, FuncId, Local, MathFn, Spec, StaticId, Type, UnOp,
};
use crate::span::Span;

#[derive(Clone, Debug)]
pub struct TExpr {
    pub kind: TExprKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TExprKind {
    Const(Const),
    Local(Local),
    GetField {
        obj: Box<TExpr>,
        field: FieldRef,
    },
    GetStatic(StaticId),
    ArrayLoad {
        arr: Box<TExpr>,
        index: Box<TExpr>,
    },
    ArrayLength(Box<TExpr>),
    /// `new C(args)`; `ctor` is called after allocation if the class has one.
    New {
        class: ClassId,
        ctor: Option<FuncId>,
        args: Vec<TExpr>,
    },
    /// `elem` is the element type of the outermost array (see [`crate::ir::Inst::NewArray`]).
    NewArray {
        elem: Type,
        dims: Vec<TExpr>,
    },
    NewBarrier(Box<TExpr>),
    /// Direct call; for methods `args[0]` is the receiver.
    Call {
        func: FuncId,
        args: Vec<TExpr>,
    },
    Fork {
        func: FuncId,
        args: Vec<TExpr>,
    },
    Join(Box<TExpr>),
    Wait(Box<TExpr>),
    Notify {
        obj: Box<TExpr>,
        all: bool,
    },
    Await(Box<TExpr>),
    ThreadId,
    Math {
        func: MathFn,
        args: Vec<TExpr>,
    },
    Unary {
        op: UnOp,
        expr: Box<TExpr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<TExpr>,
        rhs: Box<TExpr>,
    },
    /// Short-circuit `&&` (`and = true`) or `||`.
    Logic {
        and: bool,
        lhs: Box<TExpr>,
        rhs: Box<TExpr>,
    },
    Cond {
        cond: Box<TExpr>,
        then: Box<TExpr>,
        els: Box<TExpr>,
    },
    Convert {
        conv: Conv,
        expr: Box<TExpr>,
    },
}

/// An assignable location.
#[derive(Clone, Debug)]
pub enum Place {
    Local(Local),
    Field {
        obj: TExpr,
        field: FieldRef,
        span: Span,
    },
    Static {
        id: StaticId,
        span: Span,
    },
    Array {
        arr: TExpr,
        index: TExpr,
        span: Span,
    },
}

#[derive(Clone, Debug)]
pub enum TPrintArg {
    Str(String),
    Value(TExpr),
}

#[derive(Clone, Debug)]
pub enum TStmt {
    /// Declare a local: `init`, or the type's default value.
    Let {
        local: Local,
        init: Option<TExpr>,
    },
    /// An expression evaluated for its effect.
    Expr(TExpr),
    /// `place = value`, or `place = place op value` (the place's operands are evaluated
    /// once); `op_span` is the operator's position.
    Assign {
        place: Place,
        op: Option<BinOp>,
        value: TExpr,
        op_span: Span,
    },
    If {
        cond: TExpr,
        then: Vec<TStmt>,
        els: Vec<TStmt>,
    },
    /// `while` (`update` empty) or `for` (its init is a preceding statement);
    /// `cond` None means forever.
    Loop {
        cond: Option<TExpr>,
        body: Vec<TStmt>,
        update: Vec<TStmt>,
    },
    Break,
    Continue,
    Return(Option<TExpr>),
    Block(Vec<TStmt>),
    Print {
        args: Vec<TPrintArg>,
        span: Span,
    },
    Assert {
        cond: TExpr,
        span: Span,
    },
    Synchronized {
        lock: TExpr,
        body: Vec<TStmt>,
        span: Span,
    },
    Spec {
        spec: Spec,
        body: Vec<TStmt>,
        span: Span,
    },
}

/// The checked body of one function (its locals are in the IR function header).
#[derive(Clone, Debug, Default)]
pub struct TBody {
    pub stmts: Vec<TStmt>,
}
