//! The `capvm` binary: a thin wrapper over [`vm::tool::cli::main`].
fn main() {
    std::process::exit(vm::tool::cli::main(std::env::args_os()));
}
