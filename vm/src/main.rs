//! The `capvm` binary: a thin wrapper over [`vm::cli::main`].
fn main() {
    std::process::exit(vm::cli::main(std::env::args_os()));
}
