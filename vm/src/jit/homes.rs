//! Where the JIT keeps each IR local of a function, chosen so that translation time and
//! memory grow about linearly with the function's size.
//!
//! `cranelift-frontend`'s SSA construction (Braun et al., "Simple and Efficient
//! Construction of Static Single Assignment Form", CC 2013) records, per variable, its
//! value in every block where it is defined or looked up, in a table indexed by block
//! number: a variable defined or used in block `k` costs `O(k)` memory. Giving every
//! temporary of a long method its own `Variable` therefore costs memory quadratic in
//! the method's length (a method of 10,000 `if (x == i) { return i; }` needed over a
//! gigabyte). So:
//!
//! - [`Home::Block`]: a local whose every use and definition lies in one IR block, and
//!   which is defined there before any use (the lowering's temporaries, and most
//!   block-scoped variables), is never a `Variable`: the translator maps it straight to
//!   the last Cranelift value it was given. An IR block is straight-line code (the
//!   translator's own branches inside it always rejoin before the next instruction),
//!   so that value dominates every later use in the block.
//! - [`Home::Var`]: the other locals are `Variable`s, as long as
//!   `locals × blocks` stays under [`SSA_BUDGET`].
//! - [`Home::Stack`]: beyond that budget the method's remaining locals live in stack
//!   slots (a load per use, a store per definition): slower code for such a method,
//!   but no SSA bookkeeping at all, so compiling it stays linear.

use lang::ir::{Function, Inst, Local};

/// The largest `locals × IR blocks` product for which a method's locals that live
/// across blocks are SSA variables (about 4 bytes of `cranelift-frontend` tables each).
pub const SSA_BUDGET: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    Var,
    Block,
    Stack,
}

/// Every local `inst` reads, then the one it writes (`def == true`), in that order: an
/// instruction reads its operands before it writes its result.
pub fn locals_of(inst: &Inst, f: &mut impl FnMut(Local, bool)) {
    inst.for_each_read(|l| f(l, false));
    if let Some(d) = inst.dst() {
        f(d, true);
    }
}

/// The home of every local of `func`.
pub fn plan(func: &Function) -> Vec<Home> {
    const UNSEEN: usize = usize::MAX;
    const MANY: usize = usize::MAX - 1;
    // Per local: the one block it occurs in (UNSEEN, or MANY once it is not
    // block-local), with parameters occurring "before" every block.
    let n = func.locals.len();
    let mut block = vec![UNSEEN; n];
    for b in block.iter_mut().take(func.num_params as usize) {
        *b = MANY;
    }
    for (bi, b) in func.blocks.iter().enumerate() {
        let mut see = |l: Local, def: bool| {
            let s = &mut block[l.index()];
            if *s == UNSEEN {
                // First occurrence: a use reads the zero-filled frame slot.
                *s = if def { bi } else { MANY };
            } else if *s != bi {
                *s = MANY;
            }
        };
        for i in &b.insts {
            locals_of(i, &mut see);
        }
        if let Some(l) = b.term.operand() {
            see(l, false);
        }
    }
    let shared = block.iter().filter(|b| **b == MANY).count();
    let across = if shared.saturating_mul(func.blocks.len()) > SSA_BUDGET {
        Home::Stack
    } else {
        Home::Var
    };
    block
        .iter()
        .map(|b| match *b {
            MANY => across,
            // Never occurs: any home will do; a Var costs nothing unused.
            UNSEEN => Home::Var,
            _ => Home::Block,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::ir::SourceFile;

    fn func(src: &str, name: &str) -> Function {
        let files = vec![SourceFile {
            name: "h.cj".into(),
            text: src.into(),
        }];
        let c = lang::compile(files).expect("compiles");
        c.program
            .funcs
            .into_iter()
            .find(|f| f.name == name)
            .expect("function")
    }

    fn named(f: &Function, homes: &[Home], name: &str) -> Home {
        let i = f
            .locals
            .iter()
            .position(|l| l.name.as_deref() == Some(name))
            .expect("local");
        homes[i]
    }

    #[test]
    fn temporaries_are_block_local_and_the_rest_variables() {
        let f = func(
            "class M { static int f(int x) { int y = 0; int z; while (x > 0) { int t = x * 2; z = z + t; x = x - 1; } if (x == 3) { return y; } return z + 1; } static void main() { } }",
            "f",
        );
        let homes = plan(&f);
        assert_eq!(named(&f, &homes, "x"), Home::Var, "parameter");
        assert_eq!(named(&f, &homes, "y"), Home::Var, "used in a later block");
        assert_eq!(named(&f, &homes, "z"), Home::Var, "read before written");
        assert_eq!(
            named(&f, &homes, "t"),
            Home::Block,
            "defined then used in one block"
        );
        let temps = f
            .locals
            .iter()
            .zip(&homes)
            .filter(|(l, _)| l.name.is_none());
        assert!(temps.clone().count() > 3);
        assert!(temps.clone().all(|(_, h)| *h == Home::Block), "{homes:?}");
    }

    #[test]
    fn past_the_budget_shared_locals_go_to_the_stack() {
        let n = 1100;
        let decls: String = (0..n).map(|i| format!("int a{i} = {i}; ")).collect();
        let body: String = (0..n)
            .map(|i| format!("if (x == {i}) {{ return a{i}; }} "))
            .collect();
        let f = func(
            &format!(
                "class M {{ static int f(int x) {{ {decls}{body}return -1; }} static void main() {{ }} }}"
            ),
            "f",
        );
        assert!(n * f.blocks.len() > SSA_BUDGET);
        let homes = plan(&f);
        assert_eq!(named(&f, &homes, "x"), Home::Stack);
        assert_eq!(named(&f, &homes, "a7"), Home::Stack);
        let temps = f
            .locals
            .iter()
            .zip(&homes)
            .filter(|(l, _)| l.name.is_none());
        assert!(temps.clone().all(|(_, h)| *h == Home::Block), "{homes:?}");
    }
}
