//! Structural and type validation of a finished IR program: every id in range, every
//! block terminated, operand representations consistent with each instruction. Used by
//! the front end's tests (and available to the VM's) to catch lowering bugs early.

use crate::ir::*;

impl Program {
    /// Check the invariants the interpreter and JIT rely on. Returns the first violation.
    pub fn validate(&self) -> Result<(), String> {
        if self.sites.is_empty() {
            return Err("sites[0] (unknown) is missing".into());
        }
        if self.main.index() >= self.funcs.len() {
            return Err("main is out of range".into());
        }
        for (ci, c) in self.classes.iter().enumerate() {
            for m in c.methods.iter().chain(c.ctor.iter()) {
                let f = self
                    .funcs
                    .get(m.index())
                    .ok_or("class method out of range")?;
                if f.class.index() != ci {
                    return Err(format!("{} listed in the wrong class", self.func_name(*m)));
                }
            }
            self.check_site(c.site)?;
        }
        for i in 0..self.funcs.len() {
            let id = FuncId(i as u32);
            self.validate_func(id)
                .map_err(|e| format!("{}: {e}", self.func_name(id)))?;
        }
        self.validate_capsule_proven()
    }

    /// `capsule_proven` marks only sites of field accesses (never site 0).
    fn validate_capsule_proven(&self) -> Result<(), String> {
        if self.capsule_proven.len() > self.sites.len() {
            return Err("capsule_proven is longer than sites".into());
        }
        if self.capsule_proven.first() == Some(&true) {
            return Err("capsule_proven marks site 0 (unknown)".into());
        }
        let mut field_site = vec![false; self.capsule_proven.len()];
        for inst in self
            .funcs
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.insts)
        {
            if let Inst::GetField { site, .. } | Inst::PutField { site, .. } = inst
                && let Some(s) = field_site.get_mut(site.index())
            {
                *s = true;
            }
        }
        match (0..field_site.len()).find(|&i| self.capsule_proven[i] && !field_site[i]) {
            Some(i) => Err(format!(
                "capsule_proven marks site {i}, which has no field access"
            )),
            None => Ok(()),
        }
    }

    fn check_site(&self, s: SiteId) -> Result<(), String> {
        if s.index() < self.sites.len() {
            Ok(())
        } else {
            Err(format!("site {} out of range", s.0))
        }
    }

    fn validate_func(&self, id: FuncId) -> Result<(), String> {
        let f = self.func(id);
        if f.num_params as usize > f.locals.len() {
            return Err("num_params exceeds locals".into());
        }
        if f.blocks.is_empty() {
            return Err("no blocks".into());
        }
        self.check_site(f.site)?;
        let repr = |l: &Local| -> Result<Repr, String> {
            f.locals
                .get(l.index())
                .map(|d| d.ty.repr())
                .ok_or_else(|| format!("local {l} out of range"))
        };
        let want = |l: &Local, r: Repr| -> Result<(), String> {
            let got = repr(l)?;
            if got == r {
                Ok(())
            } else {
                Err(format!("local {l} is {got:?}, expected {r:?}"))
            }
        };
        let block = |b: &BlockId| -> Result<(), String> {
            if b.index() < f.blocks.len() {
                Ok(())
            } else {
                Err(format!("block b{} out of range", b.0))
            }
        };
        for (bi, b) in f.blocks.iter().enumerate() {
            for inst in &b.insts {
                self.validate_inst(inst, &repr, &want)
                    .map_err(|e| format!("b{bi}: `{}`: {e}", self.inst_text(inst)))?;
            }
            match &b.term {
                Terminator::Jump(t) => block(t)?,
                Terminator::Branch {
                    cond,
                    then_to,
                    else_to,
                } => {
                    want(cond, Repr::Bool)?;
                    block(then_to)?;
                    block(else_to)?;
                }
                Terminator::Return(v) => match (v, f.ret.repr()) {
                    (None, Repr::Void) => {}
                    (Some(v), r) if r != Repr::Void => want(v, r)?,
                    _ => return Err(format!("b{bi}: return does not match the return type")),
                },
                Terminator::Unreachable => return Err(format!("b{bi} is not terminated")),
            }
        }
        Ok(())
    }

    fn validate_call(
        &self,
        func: FuncId,
        args: &[Local],
        dst: Option<&Local>,
        repr: &dyn Fn(&Local) -> Result<Repr, String>,
    ) -> Result<(), String> {
        let callee = self.funcs.get(func.index()).ok_or("callee out of range")?;
        if args.len() != callee.num_params as usize {
            return Err(format!(
                "{} arguments for {} parameters",
                args.len(),
                callee.num_params
            ));
        }
        for (a, p) in args.iter().zip(&callee.locals) {
            if repr(a)? != p.ty.repr() {
                return Err(format!("argument {a} has the wrong representation"));
            }
        }
        if let Some(d) = dst
            && repr(d)? != callee.ret.repr()
        {
            return Err("result local does not match the return type".into());
        }
        Ok(())
    }

    fn validate_inst(
        &self,
        inst: &Inst,
        repr: &dyn Fn(&Local) -> Result<Repr, String>,
        want: &dyn Fn(&Local, Repr) -> Result<(), String>,
    ) -> Result<(), String> {
        use Repr::*;
        match inst {
            Inst::Const { dst, value } => {
                let r = match value {
                    Const::Int(_) => Int,
                    Const::Double(_) => Double,
                    Const::Bool(_) => Bool,
                    Const::Null => Ref,
                };
                want(dst, r)
            }
            Inst::Copy { dst, src } => want(dst, repr(src)?),
            Inst::Unary { dst, op, src } => {
                let r = match op {
                    UnOp::INeg | UnOp::BitNot => Int,
                    UnOp::FNeg => Double,
                    UnOp::Not => Bool,
                };
                want(dst, r)?;
                want(src, r)
            }
            Inst::Binary {
                dst,
                op,
                lhs,
                rhs,
                site,
            } => {
                self.check_site(*site)?;
                let (operand, result) = match op {
                    BinOp::IAdd
                    | BinOp::ISub
                    | BinOp::IMul
                    | BinOp::IDiv
                    | BinOp::IRem
                    | BinOp::IAnd
                    | BinOp::IOr
                    | BinOp::IXor
                    | BinOp::Shl
                    | BinOp::Shr
                    | BinOp::UShr => (Int, Int),
                    BinOp::FAdd | BinOp::FSub | BinOp::FMul | BinOp::FDiv | BinOp::FRem => {
                        (Double, Double)
                    }
                    BinOp::ICmp(_) => (Int, Bool),
                    BinOp::FCmp(_) => (Double, Bool),
                    BinOp::BEq | BinOp::BNe | BinOp::BAnd | BinOp::BOr | BinOp::BXor => {
                        (Bool, Bool)
                    }
                    BinOp::RefEq | BinOp::RefNe => (Ref, Bool),
                };
                want(lhs, operand)?;
                want(rhs, operand)?;
                want(dst, result)
            }
            Inst::Convert { dst, conv, src } => match conv {
                Conv::IntToDouble => {
                    want(src, Int)?;
                    want(dst, Double)
                }
                Conv::DoubleToInt => {
                    want(src, Double)?;
                    want(dst, Int)
                }
            },
            Inst::GetField {
                dst,
                obj,
                field,
                site,
            } => {
                self.check_site(*site)?;
                let fd = self
                    .classes
                    .get(field.class.index())
                    .and_then(|c| c.fields.get(field.index as usize));
                let fd = fd.ok_or("field out of range")?;
                want(obj, Ref)?;
                want(dst, fd.ty.repr())
            }
            Inst::PutField {
                obj,
                field,
                src,
                site,
            } => {
                self.check_site(*site)?;
                let fd = self
                    .classes
                    .get(field.class.index())
                    .and_then(|c| c.fields.get(field.index as usize));
                let fd = fd.ok_or("field out of range")?;
                want(obj, Ref)?;
                want(src, fd.ty.repr())
            }
            Inst::GetStatic { dst, field, site } => {
                self.check_site(*site)?;
                let s = self
                    .statics
                    .get(field.index())
                    .ok_or("static out of range")?;
                want(dst, s.ty.repr())
            }
            Inst::PutStatic { field, src, site } => {
                self.check_site(*site)?;
                let s = self
                    .statics
                    .get(field.index())
                    .ok_or("static out of range")?;
                want(src, s.ty.repr())
            }
            Inst::ArrayLoad {
                dst: _,
                arr,
                index,
                site,
            } => {
                self.check_site(*site)?;
                want(arr, Ref)?;
                want(index, Int)
            }
            Inst::ArrayStore {
                arr,
                index,
                src: _,
                site,
            } => {
                self.check_site(*site)?;
                want(arr, Ref)?;
                want(index, Int)
            }
            Inst::ArrayLength { dst, arr, site } => {
                self.check_site(*site)?;
                want(arr, Ref)?;
                want(dst, Int)
            }
            Inst::New { dst, class, site } => {
                self.check_site(*site)?;
                if class.index() >= self.classes.len() {
                    return Err("class out of range".into());
                }
                want(dst, Ref)
            }
            Inst::NewArray {
                dst,
                elem,
                dims,
                site,
            } => {
                self.check_site(*site)?;
                if dims.is_empty() {
                    return Err("no dimensions".into());
                }
                let mut t = elem;
                for _ in 1..dims.len() {
                    match t {
                        Type::Array(e) => t = e,
                        _ => return Err("more dimensions than the element type has".into()),
                    }
                }
                for d in dims {
                    want(d, Int)?;
                }
                want(dst, Ref)
            }
            Inst::Call {
                dst,
                func,
                args,
                site,
            } => {
                self.check_site(*site)?;
                self.validate_call(*func, args, dst.as_ref(), repr)
            }
            Inst::Fork {
                dst,
                func,
                args,
                site,
            } => {
                self.check_site(*site)?;
                self.validate_call(*func, args, None, repr)?;
                want(dst, Ref)
            }
            Inst::Join { thread, site } => {
                self.check_site(*site)?;
                want(thread, Ref)
            }
            Inst::ThreadId { dst } => want(dst, Int),
            Inst::MonitorEnter { obj, site }
            | Inst::MonitorExit { obj, site }
            | Inst::Wait { obj, site }
            | Inst::Notify { obj, site, .. } => {
                self.check_site(*site)?;
                want(obj, Ref)
            }
            Inst::NewBarrier { dst, parties, site } => {
                self.check_site(*site)?;
                want(parties, Int)?;
                want(dst, Ref)
            }
            Inst::BarrierAwait { barrier, site } => {
                self.check_site(*site)?;
                want(barrier, Ref)
            }
            Inst::SpecBegin { site, .. } | Inst::SpecEnd { site, .. } => self.check_site(*site),
            Inst::Math { dst, func, args } => {
                let (operand, n, result) = match func {
                    MathFn::AbsInt => (Int, 1, Int),
                    MathFn::MinInt | MathFn::MaxInt => (Int, 2, Int),
                    MathFn::Pow | MathFn::MinDouble | MathFn::MaxDouble => (Double, 2, Double),
                    _ => (Double, 1, Double),
                };
                if args.len() != n {
                    return Err("wrong number of math arguments".into());
                }
                for a in args {
                    want(a, operand)?;
                }
                want(dst, result)
            }
            Inst::Print { args, site } => {
                self.check_site(*site)?;
                for a in args {
                    if let PrintArg::Value(l, r) = a {
                        if !matches!(r, Int | Double | Bool) {
                            return Err("printing a non-primitive".into());
                        }
                        want(l, *r)?;
                    }
                }
                Ok(())
            }
            Inst::Assert { cond, site } => {
                self.check_site(*site)?;
                want(cond, Bool)
            }
            Inst::Check { target, site, .. } => {
                self.check_site(*site)?;
                match target {
                    CheckTarget::Fields { obj, class, groups } => {
                        want(obj, Ref)?;
                        let n = self
                            .classes
                            .get(class.index())
                            .ok_or("check of an unknown class")?
                            .fields
                            .len();
                        if groups.iter().any(|(r, _)| *r as usize >= n) {
                            return Err("check of an unknown field".into());
                        }
                        Ok(())
                    }
                    CheckTarget::Static { field } => {
                        if field.index() < self.statics.len() {
                            Ok(())
                        } else {
                            Err("check of an unknown static".into())
                        }
                    }
                    CheckTarget::Range { arr, lo, hi, step } => {
                        want(arr, Ref)?;
                        want(lo, Int)?;
                        want(hi, Int)?;
                        if *step == 0 {
                            return Err("check with stride 0".into());
                        }
                        Ok(())
                    }
                    CheckTarget::Elem { arr, index } => {
                        want(arr, Ref)?;
                        want(index, Int)
                    }
                }
            }
        }
    }
}
