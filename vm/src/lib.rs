//! capvm's runtime: heap, threads, monitors, schedulers, the interpreter (the reference
//! semantics), the Cranelift JIT, and the bridge from execution to the analysis chain.
