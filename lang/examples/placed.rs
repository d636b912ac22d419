//! Print a program's IR after BigFoot's check placement (`lang::bigfoot::place`), the
//! program a run under `--tools bigfoot` executes: a debugging aid.
//!
//! `cargo run --release -p lang --example placed -- FILE.cj`

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: placed FILE.cj");
        return ExitCode::from(64);
    };
    match lang::compile_paths(&[path.into()]) {
        Ok(c) => {
            let (placed, _) = lang::bigfoot::place(&c.program);
            print!("{}", lang::print::print(&placed));
            ExitCode::SUCCESS
        }
        Err(e) => {
            for d in e.iter() {
                eprintln!("{}:{}: {}", d.line, d.col, d.message);
            }
            ExitCode::from(65)
        }
    }
}
