//! Textual rendering of the IR, for debugging and expect-tests (`{program}` or
//! [`print`](fn@print)). The format is stable but not parsed back.

use crate::ir::*;
use std::fmt::{self, Write as _};

/// Render a whole program.
pub fn print(p: &Program) -> String {
    p.to_string()
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.classes.iter().enumerate() {
            let capsule = if c.is_capsule { "capsule " } else { "" };
            writeln!(
                f,
                "{capsule}class {} (#{i}) @{}",
                c.name,
                self.site_string(c.site)
            )?;
            for (j, fld) in c.fields.iter().enumerate() {
                writeln!(
                    f,
                    "  field {j} {}{}{}: {}{}",
                    if fld.is_final { "final " } else { "" },
                    if fld.is_volatile { "volatile " } else { "" },
                    fld.name,
                    self.type_name(&fld.ty),
                    init_text(fld.init)
                )?;
            }
        }
        for (i, s) in self.statics.iter().enumerate() {
            writeln!(
                f,
                "static {i} {}{}{}.{}: {}{}",
                if s.is_final { "final " } else { "" },
                if s.is_volatile { "volatile " } else { "" },
                self.class(s.class).name,
                s.name,
                self.type_name(&s.ty),
                init_text(s.init)
            )?;
        }
        writeln!(f, "main = {}", self.func_name(self.main))?;
        for i in 0..self.funcs.len() {
            f.write_str(&self.func_text(FuncId(i as u32)))?;
        }
        Ok(())
    }
}

fn init_text(c: Option<Const>) -> String {
    c.map(|c| format!(" = {}", const_text(c)))
        .unwrap_or_default()
}

fn const_text(c: Const) -> String {
    match c {
        Const::Int(v) => v.to_string(),
        Const::Double(v) => format!("{v:?}"),
        Const::Bool(b) => b.to_string(),
        Const::Null => "null".into(),
    }
}

fn list(ls: &[Local]) -> String {
    ls.iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Program {
    /// Render one function: header, locals, blocks.
    pub fn func_text(&self, id: FuncId) -> String {
        let func = self.func(id);
        let mut s = String::new();
        let kind = match func.kind {
            FuncKind::Method => "method",
            FuncKind::Static => "static",
            FuncKind::Constructor => "ctor",
        };
        let mut flags = String::new();
        for (on, name) in [
            (func.is_synchronized, " synchronized"),
            (func.is_deterministic, " deterministic"),
            (func.is_atomic, " atomic"),
        ] {
            if on {
                flags.push_str(name);
            }
        }
        let params: Vec<String> = func.locals[..func.num_params as usize]
            .iter()
            .enumerate()
            .map(|(i, l)| format!("%{i}: {}", self.type_name(&l.ty)))
            .collect();
        let _ = writeln!(
            s,
            "\n{kind}{flags} {}({}) -> {} @{}",
            self.func_name(id),
            params.join(", "),
            self.type_name(&func.ret),
            self.site_string(func.site)
        );
        let locals: Vec<String> = func
            .locals
            .iter()
            .enumerate()
            .skip(func.num_params as usize)
            .map(|(i, l)| match &l.name {
                Some(n) => format!("%{i} {n}: {}", self.type_name(&l.ty)),
                None => format!("%{i}: {}", self.type_name(&l.ty)),
            })
            .collect();
        if !locals.is_empty() {
            let _ = writeln!(s, "  locals {}", locals.join(", "));
        }
        for (b, block) in func.blocks.iter().enumerate() {
            let _ = writeln!(s, "  b{b}:");
            for inst in &block.insts {
                let _ = writeln!(s, "    {}", self.inst_text(inst));
            }
            let term = match &block.term {
                Terminator::Jump(t) => format!("jump b{}", t.0),
                Terminator::Branch {
                    cond,
                    then_to,
                    else_to,
                } => format!("branch {cond} ? b{} : b{}", then_to.0, else_to.0),
                Terminator::Return(Some(v)) => format!("return {v}"),
                Terminator::Return(None) => "return".into(),
                Terminator::Unreachable => "unreachable".into(),
            };
            let _ = writeln!(s, "    {term}");
        }
        s
    }

    fn field_text(&self, f: FieldRef) -> String {
        format!("{}.{}", self.class(f.class).name, self.field(f).name)
    }

    fn static_text(&self, id: StaticId) -> String {
        let s = self.static_field(id);
        format!("{}.{}", self.class(s.class).name, s.name)
    }

    /// Render one instruction; sites are shown as `@line:col`.
    pub fn inst_text(&self, inst: &Inst) -> String {
        let at = |site: &SiteId| {
            let s = self.site(*site);
            if site.0 == 0 {
                "@?".to_string()
            } else {
                format!("@{}:{}", s.line, s.col)
            }
        };
        match inst {
            Inst::Const { dst, value } => format!("{dst} = const {}", const_text(*value)),
            Inst::Copy { dst, src } => format!("{dst} = {src}"),
            Inst::Unary { dst, op, src } => format!("{dst} = {op:?} {src}"),
            Inst::Binary {
                dst,
                op,
                lhs,
                rhs,
                site,
            } => format!("{dst} = {op:?} {lhs}, {rhs} {}", at(site)),
            Inst::Convert { dst, conv, src } => format!("{dst} = {conv:?} {src}"),
            Inst::GetField {
                dst,
                obj,
                field,
                site,
            } => format!(
                "{dst} = getfield {obj}.{} {}",
                self.field_text(*field),
                at(site)
            ),
            Inst::PutField {
                obj,
                field,
                src,
                site,
            } => format!(
                "putfield {obj}.{} = {src} {}",
                self.field_text(*field),
                at(site)
            ),
            Inst::GetStatic { dst, field, site } => {
                format!(
                    "{dst} = getstatic {} {}",
                    self.static_text(*field),
                    at(site)
                )
            }
            Inst::PutStatic { field, src, site } => {
                format!(
                    "putstatic {} = {src} {}",
                    self.static_text(*field),
                    at(site)
                )
            }
            Inst::ArrayLoad {
                dst,
                arr,
                index,
                site,
            } => format!("{dst} = {arr}[{index}] {}", at(site)),
            Inst::ArrayStore {
                arr,
                index,
                src,
                site,
            } => format!("{arr}[{index}] = {src} {}", at(site)),
            Inst::ArrayLength { dst, arr, site } => format!("{dst} = length {arr} {}", at(site)),
            Inst::New { dst, class, site } => {
                format!("{dst} = new {} {}", self.class(*class).name, at(site))
            }
            Inst::NewArray {
                dst,
                elem,
                dims,
                site,
            } => format!(
                "{dst} = newarray {} [{}] {}",
                self.type_name(elem),
                list(dims),
                at(site)
            ),
            Inst::Call {
                dst,
                func,
                args,
                site,
            } => {
                let d = dst.map(|d| format!("{d} = ")).unwrap_or_default();
                format!(
                    "{d}call {}({}) {}",
                    self.func_name(*func),
                    list(args),
                    at(site)
                )
            }
            Inst::Fork {
                dst,
                func,
                args,
                site,
            } => format!(
                "{dst} = fork {}({}) {}",
                self.func_name(*func),
                list(args),
                at(site)
            ),
            Inst::Join { thread, site } => format!("join {thread} {}", at(site)),
            Inst::ThreadId { dst } => format!("{dst} = threadid"),
            Inst::MonitorEnter { obj, site } => format!("monitorenter {obj} {}", at(site)),
            Inst::MonitorExit { obj, site } => format!("monitorexit {obj} {}", at(site)),
            Inst::Wait { obj, site } => format!("wait {obj} {}", at(site)),
            Inst::Notify { obj, all, site } => {
                let n = if *all { "notifyall" } else { "notify" };
                format!("{n} {obj} {}", at(site))
            }
            Inst::NewBarrier { dst, parties, site } => {
                format!("{dst} = newbarrier {parties} {}", at(site))
            }
            Inst::BarrierAwait { barrier, site } => format!("await {barrier} {}", at(site)),
            Inst::SpecBegin { spec, site } => format!("specbegin {spec:?} {}", at(site)),
            Inst::SpecEnd { spec, site } => format!("specend {spec:?} {}", at(site)),
            Inst::Math { dst, func, args } => format!("{dst} = math {func:?}({})", list(args)),
            Inst::Print { args, site } => {
                let a: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        PrintArg::Str(s) => format!("{s:?}"),
                        PrintArg::Value(l, r) => format!("{l}:{r:?}"),
                    })
                    .collect();
                format!("print {} {}", a.join(", "), at(site))
            }
            Inst::Assert { cond, site } => format!("assert {cond} {}", at(site)),
            Inst::Check {
                target,
                write,
                site,
            } => {
                let k = if *write { "W" } else { "R" };
                let t = match target {
                    CheckTarget::Fields { obj, groups, .. } => {
                        let g: Vec<String> =
                            groups.iter().map(|(r, m)| format!("{r}/{m:#x}")).collect();
                        format!("{obj}.[{}]", g.join(" "))
                    }
                    CheckTarget::Static { field } => format!("static#{}", field.0),
                    CheckTarget::Range { arr, lo, hi, step } => format!("{arr}[{lo}..{hi}:{step}]"),
                    CheckTarget::Elem { arr, index } => format!("{arr}[{index}]"),
                };
                format!("check{k} {t} {}", at(site))
            }
        }
    }
}
