//! Untyped syntax tree produced by the parser.

use crate::lexer::AssignOp;
use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ClassDecl {
    pub is_capsule: bool,
    pub name: Ident,
    pub members: Vec<Member>,
}

/// Modifiers in source order, each with its span (for "not allowed here" errors).
#[derive(Clone, Debug, Default)]
pub struct Modifiers {
    pub list: Vec<(Modifier, Span)>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Modifier {
    Static,
    Final,
    Volatile,
    Synchronized,
    Deterministic,
    Atomic,
}

impl Modifier {
    pub fn name(self) -> &'static str {
        match self {
            Modifier::Static => "static",
            Modifier::Final => "final",
            Modifier::Volatile => "volatile",
            Modifier::Synchronized => "synchronized",
            Modifier::Deterministic => "deterministic",
            Modifier::Atomic => "atomic",
        }
    }
}

impl Modifiers {
    pub fn has(&self, m: Modifier) -> bool {
        self.list.iter().any(|(x, _)| *x == m)
    }
}

#[derive(Clone, Debug)]
pub enum Member {
    Field(FieldDecl),
    Ctor(MethodDecl),
    Method(MethodDecl),
}

#[derive(Clone, Debug)]
pub struct FieldDecl {
    pub mods: Modifiers,
    pub ty: TypeExpr,
    pub name: Ident,
    pub init: Option<Expr>,
}

/// A method, or a constructor (then `ret` is `void` and `name` is the class name).
#[derive(Clone, Debug)]
pub struct MethodDecl {
    pub mods: Modifiers,
    pub ret: TypeExpr,
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Block,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub ty: TypeExpr,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BaseType {
    Int,
    Double,
    Boolean,
    Void,
    /// A class name, `Thread` or `Barrier`.
    Named(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    pub base: BaseType,
    /// Number of `[]`.
    pub dims: u32,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    /// `T a = e, b;` — `ty` None means `var`.
    Local {
        ty: Option<TypeExpr>,
        vars: Vec<(Ident, Option<Expr>)>,
    },
    Expr(Expr),
    /// `target = value` or `target op= value`; `op_span` is the operator.
    Assign {
        target: Expr,
        op: Option<AssignOp>,
        value: Expr,
        op_span: Span,
    },
    /// `target++` / `target--`.
    IncDec {
        target: Expr,
        inc: bool,
        op_span: Span,
    },
    If {
        cond: Expr,
        then: Box<Stmt>,
        els: Option<Box<Stmt>>,
    },
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    For {
        init: Vec<Stmt>,
        cond: Option<Expr>,
        update: Vec<Stmt>,
        body: Box<Stmt>,
    },
    Break,
    Continue,
    Return(Option<Expr>),
    Block(Block),
    /// `print(args)`; `kw` is the span of `print`.
    Print {
        args: Vec<Expr>,
    },
    Assert(Expr),
    Synchronized {
        lock: Expr,
        body: Block,
    },
    Spec {
        spec: crate::ir::Spec,
        body: Block,
    },
    Empty,
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    /// The whole expression.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// Already range-checked and negated where the literal was negated.
    Int(i64),
    Double(f64),
    Bool(bool),
    Null,
    Str(String),
    Name(Ident),
    This,
    /// `obj.name` (also `C.f`, `a.length`).
    Field {
        obj: Box<Expr>,
        name: Ident,
    },
    /// `arr[index]`; `bracket` is the span of `[`.
    Index {
        arr: Box<Expr>,
        index: Box<Expr>,
        bracket: Span,
    },
    /// `recv.name(args)` or `name(args)`.
    Call {
        recv: Option<Box<Expr>>,
        name: Ident,
        args: Vec<Expr>,
    },
    /// `new C(args)`.
    New {
        class: Ident,
        args: Vec<Expr>,
    },
    /// `new T[d0]…[dk][]…`: `dims` are the sized dimensions, `extra` the unsized ones.
    NewArray {
        elem: TypeExpr,
        dims: Vec<Expr>,
        extra: u32,
    },
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
        op_span: Span,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        op_span: Span,
    },
    Cond {
        cond: Box<Expr>,
        then: Box<Expr>,
        els: Box<Expr>,
    },
    Cast {
        ty: TypeExpr,
        expr: Box<Expr>,
    },
    /// `fork call`; `call` is a `Call` expression.
    Fork {
        call: Box<Expr>,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    UShr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::And => "&",
            BinaryOp::Or => "|",
            BinaryOp::Xor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::UShr => ">>>",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::AndAnd => "&&",
            BinaryOp::OrOr => "||",
        }
    }

    pub fn from_assign(op: AssignOp) -> BinaryOp {
        match op {
            AssignOp::Add => BinaryOp::Add,
            AssignOp::Sub => BinaryOp::Sub,
            AssignOp::Mul => BinaryOp::Mul,
            AssignOp::Div => BinaryOp::Div,
            AssignOp::Rem => BinaryOp::Rem,
            AssignOp::And => BinaryOp::And,
            AssignOp::Or => BinaryOp::Or,
            AssignOp::Xor => BinaryOp::Xor,
            AssignOp::Shl => BinaryOp::Shl,
            AssignOp::Shr => BinaryOp::Shr,
            AssignOp::UShr => BinaryOp::UShr,
        }
    }
}
