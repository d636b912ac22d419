//! Name resolution and type checking: AST → typed tree ([`crate::tast`]) plus the IR
//! skeleton (classes, fields, statics, function headers with their typed locals).
//!
//! Declarations are entered first (all classes, then every member's signature), so
//! members can be used before they are declared, as in Java. Bodies are then checked
//! one function at a time ([`stmt`], [`expr`]).

mod call;
mod expr;
mod stmt;

use crate::ast::{self, BaseType, ClassDecl, Member, MethodDecl, Modifier, TypeExpr};
use crate::diag::Sink;
use crate::ir::{
    Class, ClassId, Const, Field, FieldRef, FuncId, FuncKind, Function, LocalDecl, Program,
    SourceFile, StaticField, StaticId, Type,
};
use crate::sites::SiteTable;
use crate::span::Span;
use crate::tast::TBody;
use std::collections::HashMap;

/// The checked program: the IR skeleton (function bodies still empty) and one typed
/// body per function (indexed by `FuncId`).
pub struct Checked {
    pub program: Program,
    pub bodies: Vec<TBody>,
}

/// Names that cannot be user classes: the built-in classes and `Math`.
const RESERVED_CLASSES: &[&str] = &["Thread", "Barrier", "Math", "Object", "String"];
/// Methods every object has; user classes cannot redefine them.
const OBJECT_METHODS: &[&str] = &["wait", "notify", "notifyAll"];

#[derive(Copy, Clone, Debug)]
enum FieldSym {
    Instance(FieldRef),
    Static(StaticId),
}

#[derive(Default)]
struct ClassInfo {
    fields: HashMap<String, FieldSym>,
    methods: HashMap<String, FuncId>,
    /// Declaration span of each field (for duplicate notes).
    field_spans: HashMap<String, Span>,
}

struct FuncInfo {
    /// Parameter types, without `this`.
    params: Vec<Type>,
    decl: MethodDecl,
}

/// Per-function state while checking a body.
struct FnState {
    class: ClassId,
    kind: FuncKind,
    ret: Type,
    locals: Vec<LocalDecl>,
    scopes: Scopes,
    /// One entry per enclosing loop: whether a `break` targets it.
    loops: Vec<bool>,
}

/// The locals in scope, found by name in constant time (a linear search through the
/// scopes made checking a method with thousands of locals quadratic).
#[derive(Default)]
struct Scopes {
    /// Per name, its declarations in scope, innermost last (a duplicate declaration,
    /// already an error, shadows the earlier one until its scope ends).
    visible: HashMap<String, Vec<crate::ir::Local>>,
    /// Per open scope, the names it declared.
    open: Vec<Vec<String>>,
}

impl Scopes {
    fn push(&mut self) {
        self.open.push(Vec::new());
    }

    fn pop(&mut self) {
        for n in self.open.pop().unwrap_or_default() {
            if let Some(ls) = self.visible.get_mut(&n) {
                ls.pop();
                if ls.is_empty() {
                    self.visible.remove(&n);
                }
            }
        }
    }

    fn declare(&mut self, name: &str, l: crate::ir::Local) {
        self.visible.entry(name.to_string()).or_default().push(l);
        if let Some(s) = self.open.last_mut() {
            s.push(name.to_string());
        }
    }

    fn lookup(&self, name: &str) -> Option<crate::ir::Local> {
        self.visible.get(name).and_then(|ls| ls.last().copied())
    }
}

struct Checker<'a, 's> {
    sink: &'a mut Sink<'s>,
    sites: &'a mut SiteTable<'s>,
    program: Program,
    class_ids: HashMap<String, ClassId>,
    infos: Vec<ClassInfo>,
    funcs: Vec<FuncInfo>,
    cur: Option<FnState>,
}

/// Check the whole program. Returns None if an error was reported.
pub fn check<'s>(
    files: &'s [SourceFile],
    decls: Vec<ClassDecl>,
    sink: &mut Sink<'s>,
    sites: &mut SiteTable<'s>,
) -> Option<Checked> {
    let mut c = Checker {
        sink,
        sites,
        program: Program {
            files: files.to_vec(),
            classes: Vec::new(),
            funcs: Vec::new(),
            statics: Vec::new(),
            sites: Vec::new(),
            main: FuncId(0),
            capsule_proven: Vec::new(),
        },
        class_ids: HashMap::new(),
        infos: Vec::new(),
        funcs: Vec::new(),
        cur: None,
    };
    let decls = c.declare_classes(decls);
    for (id, decl) in &decls {
        c.declare_members(*id, decl);
    }
    c.find_main();
    let mut bodies = Vec::with_capacity(c.funcs.len());
    for f in 0..c.funcs.len() {
        bodies.push(c.check_body(FuncId(f as u32)));
    }
    if c.sink.has_errors() {
        return None;
    }
    Some(Checked {
        program: c.program,
        bodies,
    })
}

impl Checker<'_, '_> {
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.sink.error(span, msg);
    }

    fn type_name(&self, ty: &Type) -> String {
        self.program.type_name(ty)
    }

    fn class_name(&self, c: ClassId) -> &str {
        &self.program.classes[c.index()].name
    }

    /// Resolve a written type; reports unknown class names.
    fn resolve_type(&mut self, t: &TypeExpr) -> Option<Type> {
        let base = match &t.base {
            BaseType::Int => Type::Int,
            BaseType::Double => Type::Double,
            BaseType::Boolean => Type::Boolean,
            BaseType::Void => Type::Void,
            BaseType::Named(n) if n == "Thread" => Type::Thread,
            BaseType::Named(n) if n == "Barrier" => Type::Barrier,
            BaseType::Named(n) => match self.class_ids.get(n) {
                Some(id) => Type::Class(*id),
                None => {
                    let hint = match n.as_str() {
                        "long" | "short" | "byte" => " (CapJava's `int` is 64-bit)",
                        "float" => " (use `double`)",
                        "String" | "char" => " (strings exist only as `print` arguments)",
                        _ => "",
                    };
                    self.error(t.span, format!("unknown type `{n}`{hint}"));
                    return None;
                }
            },
        };
        if base == Type::Void && t.dims > 0 {
            self.error(t.span, "arrays of `void` are not allowed");
            return None;
        }
        Some(array_of(base, t.dims))
    }

    /// Resolve a type that must hold a value (not `void`).
    fn resolve_value_type(&mut self, t: &TypeExpr, what: &str) -> Option<Type> {
        let ty = self.resolve_type(t)?;
        if ty == Type::Void {
            self.error(t.span, format!("{what} cannot have type `void`"));
            return None;
        }
        Some(ty)
    }

    // ---- declarations --------------------------------------------------------------

    fn declare_classes(&mut self, decls: Vec<ClassDecl>) -> Vec<(ClassId, ClassDecl)> {
        let mut out = Vec::new();
        for d in decls {
            let name = &d.name.name;
            if RESERVED_CLASSES.contains(&name.as_str()) {
                self.error(
                    d.name.span,
                    format!("`{name}` is a built-in name and cannot be declared as a class"),
                );
                continue;
            }
            if let Some(prev) = self.class_ids.get(name) {
                let prev_site = self.program.classes[prev.index()].site;
                let note = format!("first defined at {}", self.site_text(prev_site));
                self.sink.report_with_notes(
                    crate::Severity::Error,
                    d.name.span,
                    format!("class `{name}` is already defined"),
                    vec![note],
                );
                continue;
            }
            let id = ClassId(self.program.classes.len() as u32);
            let site = self.sites.intern(d.name.span, None);
            self.program.classes.push(Class {
                name: name.clone(),
                is_capsule: d.is_capsule,
                fields: Vec::new(),
                ctor: None,
                methods: Vec::new(),
                site,
            });
            self.infos.push(ClassInfo::default());
            self.class_ids.insert(name.clone(), id);
            out.push((id, d));
        }
        out
    }

    /// `file:line:col` of a site interned during declaration (for notes).
    fn site_text(&self, site: crate::ir::SiteId) -> String {
        self.sites.describe(site)
    }

    fn check_modifiers(&mut self, mods: &ast::Modifiers, allowed: &[Modifier], what: &str) {
        for (m, span) in &mods.list {
            if !allowed.contains(m) {
                self.error(
                    *span,
                    format!("modifier `{}` is not allowed on {what}", m.name()),
                );
            }
        }
    }

    fn declare_members(&mut self, class: ClassId, decl: &ClassDecl) {
        for m in &decl.members {
            match m {
                Member::Field(f) => self.declare_field(class, f),
                Member::Ctor(m) => self.declare_func(class, m, true),
                Member::Method(m) => self.declare_func(class, m, false),
            }
        }
    }

    fn declare_field(&mut self, class: ClassId, f: &ast::FieldDecl) {
        self.check_modifiers(
            &f.mods,
            &[Modifier::Static, Modifier::Final, Modifier::Volatile],
            "a field",
        );
        let is_static = f.mods.has(Modifier::Static);
        let is_final = f.mods.has(Modifier::Final);
        let is_volatile = f.mods.has(Modifier::Volatile);
        if is_final && is_volatile {
            self.error(
                f.name.span,
                format!("field `{}` cannot be both final and volatile", f.name.name),
            );
        }
        let ty = self.resolve_value_type(&f.ty, "a field");
        let init = f.init.as_ref().and_then(|e| {
            let ty = ty.as_ref()?;
            self.constant_init(e, ty, &f.name.name, is_static)
        });
        if is_static && is_final && f.init.is_none() {
            self.error(
                f.name.span,
                format!(
                    "final static field `{}` must have an initialiser",
                    f.name.name
                ),
            );
        }
        let name = f.name.name.clone();
        let info = &self.infos[class.index()];
        if let Some(prev) = info.field_spans.get(&name).copied() {
            let (line, col) = self.sink.line_col(prev.file, prev.start as usize);
            let note = format!("previous declaration at line {line}, column {col}");
            self.sink.report_with_notes(
                crate::Severity::Error,
                f.name.span,
                format!(
                    "field `{name}` is already defined in class `{}`",
                    self.class_name(class)
                ),
                vec![note],
            );
            return;
        }
        let Some(ty) = ty else { return };
        let site = self.sites.intern(f.name.span, None);
        let sym = if is_static {
            let id = StaticId(self.program.statics.len() as u32);
            self.program.statics.push(StaticField {
                class,
                name: name.clone(),
                ty,
                is_final,
                is_volatile,
                init,
                site,
            });
            FieldSym::Static(id)
        } else {
            let fields = &mut self.program.classes[class.index()].fields;
            let index = fields.len() as u32;
            fields.push(Field {
                name: name.clone(),
                ty,
                is_final,
                is_volatile,
                init,
                site,
            });
            FieldSym::Instance(FieldRef { class, index })
        };
        let info = &mut self.infos[class.index()];
        info.field_spans.insert(name.clone(), f.name.span);
        info.fields.insert(name, sym);
    }

    /// A field initialiser must be a literal, possibly negated.
    fn constant_init(
        &mut self,
        e: &ast::Expr,
        ty: &Type,
        name: &str,
        is_static: bool,
    ) -> Option<Const> {
        use ast::ExprKind as K;
        let value = match &e.kind {
            K::Int(v) => Const::Int(*v),
            K::Double(v) => Const::Double(*v),
            K::Bool(b) => Const::Bool(*b),
            K::Null => Const::Null,
            _ => {
                let where_ = if is_static {
                    "in `main`"
                } else {
                    "in the constructor"
                };
                self.error(
                    e.span,
                    format!(
                        "the initialiser of field `{name}` must be a constant (a literal, possibly negated); assign it {where_} instead"
                    ),
                );
                return None;
            }
        };
        let ok = match (&value, ty) {
            (Const::Int(v), Type::Double) => return Some(Const::Double(*v as f64)),
            (Const::Int(_), Type::Int)
            | (Const::Double(_), Type::Double)
            | (Const::Bool(_), Type::Boolean) => true,
            (Const::Null, t) => t.is_ref(),
            _ => false,
        };
        if !ok {
            let found = match value {
                Const::Int(_) => "int",
                Const::Double(_) => "double",
                Const::Bool(_) => "boolean",
                Const::Null => "null",
            };
            let expected = self.type_name(ty);
            self.error(
                e.span,
                format!(
                    "the initialiser of field `{name}` has type `{found}`, expected `{expected}`"
                ),
            );
            return None;
        }
        Some(value)
    }

    fn declare_func(&mut self, class: ClassId, m: &MethodDecl, is_ctor: bool) {
        let class_name = self.class_name(class).to_string();
        let name = m.name.name.clone();
        if is_ctor {
            self.check_modifiers(&m.mods, &[], "a constructor");
        } else {
            self.check_modifiers(
                &m.mods,
                &[
                    Modifier::Static,
                    Modifier::Synchronized,
                    Modifier::Deterministic,
                    Modifier::Atomic,
                ],
                "a method",
            );
            if OBJECT_METHODS.contains(&name.as_str()) {
                self.error(
                    m.name.span,
                    format!(
                        "`{name}` is a built-in method of every object and cannot be redefined"
                    ),
                );
            }
        }
        let kind = if is_ctor {
            FuncKind::Constructor
        } else if m.mods.has(Modifier::Static) {
            FuncKind::Static
        } else {
            FuncKind::Method
        };
        let ret = if is_ctor {
            Some(Type::Void)
        } else {
            self.resolve_type(&m.ret)
        };
        let mut locals = Vec::new();
        if kind != FuncKind::Static {
            locals.push(LocalDecl {
                name: Some("this".into()),
                ty: Type::Class(class),
            });
        }
        let mut params = Vec::new();
        let mut ok = ret.is_some();
        for (i, p) in m.params.iter().enumerate() {
            if m.params[..i].iter().any(|q| q.name.name == p.name.name) {
                self.error(
                    p.name.span,
                    format!("duplicate parameter `{}`", p.name.name),
                );
                ok = false;
            }
            match self.resolve_value_type(&p.ty, "a parameter") {
                Some(t) => {
                    params.push(t.clone());
                    locals.push(LocalDecl {
                        name: Some(p.name.name.clone()),
                        ty: t,
                    });
                }
                None => ok = false,
            }
        }
        // Duplicate checks.
        if is_ctor {
            if let Some(prev) = self.program.classes[class.index()].ctor {
                let prev_span = self.funcs[prev.index()].decl.name.span;
                let (line, col) = self.sink.line_col(prev_span.file, prev_span.start as usize);
                self.sink.report_with_notes(
                    crate::Severity::Error,
                    m.name.span,
                    format!(
                        "class `{class_name}` already has a constructor (at most one is allowed)"
                    ),
                    vec![format!(
                        "the first constructor is at line {line}, column {col}"
                    )],
                );
                return;
            }
        } else if let Some(prev) = self.infos[class.index()].methods.get(&name).copied() {
            let prev_span = self.funcs[prev.index()].decl.name.span;
            let (line, col) = self.sink.line_col(prev_span.file, prev_span.start as usize);
            self.sink.report_with_notes(
                crate::Severity::Error,
                m.name.span,
                format!("method `{name}` is already defined in class `{class_name}` (CapJava has no overloading)"),
                vec![format!("the first definition is at line {line}, column {col}")],
            );
            return;
        }
        if !ok {
            return;
        }
        let id = FuncId(self.program.funcs.len() as u32);
        let site = self.sites.intern(m.name.span, Some(id));
        self.program.funcs.push(Function {
            class,
            name: if is_ctor {
                "<init>".into()
            } else {
                name.clone()
            },
            kind,
            is_synchronized: m.mods.has(Modifier::Synchronized),
            is_deterministic: m.mods.has(Modifier::Deterministic),
            is_atomic: m.mods.has(Modifier::Atomic),
            num_params: locals.len() as u32,
            locals,
            ret: ret.unwrap_or(Type::Void),
            blocks: Vec::new(),
            site,
        });
        self.funcs.push(FuncInfo {
            params,
            decl: m.clone(),
        });
        let cls = &mut self.program.classes[class.index()];
        cls.methods.push(id);
        if is_ctor {
            cls.ctor = Some(id);
        } else {
            self.infos[class.index()].methods.insert(name, id);
        }
    }

    /// Exactly one `static void main()` in the program.
    fn find_main(&mut self) {
        let mains: Vec<FuncId> = (0..self.program.funcs.len())
            .map(|i| FuncId(i as u32))
            .filter(|f| {
                let func = &self.program.funcs[f.index()];
                func.name == "main"
                    && func.kind == FuncKind::Static
                    && func.ret == Type::Void
                    && func.num_params == 0
            })
            .collect();
        match mains.as_slice() {
            [] => {
                if !self.sink.has_errors() {
                    self.sink.diags.push_global(
                        crate::Severity::Error,
                        "no `static void main()` found: the program needs exactly one entry point",
                    );
                }
            }
            [m] => self.program.main = *m,
            [first, rest @ ..] => {
                self.program.main = *first;
                let first_name = self.program.func_name(*first);
                for m in rest {
                    let span = self.funcs[m.index()].decl.name.span;
                    self.sink.report_with_notes(
                        crate::Severity::Error,
                        span,
                        "more than one `static void main()` in the program",
                        vec![format!("another one is `{first_name}`")],
                    );
                }
            }
        }
    }
}

pub(crate) fn array_of(mut ty: Type, dims: u32) -> Type {
    for _ in 0..dims {
        ty = Type::Array(Box::new(ty));
    }
    ty
}
