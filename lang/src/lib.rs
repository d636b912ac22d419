//! CapJava front end: lexer, parser (with error recovery), name resolution, type
//! checking and lowering to the IR in [`ir`].
//!
//! Architecture invariant: no runtime, no analyses. The output is plain data.

pub mod ir;
