//! The guest heap layout, in one place: the interpreter, the runtime and the JIT all
//! rely on these constants.
//!
//! Every heap block is a sequence of 64-bit words, each accessed as an `AtomicU64`
//! (Relaxed for plain guest accesses, so a racy guest is never a Rust data race).
//! A reference is the block's address (0 = null); blocks are 8-byte aligned and live
//! until the VM ends (no GC).
//!
//! ```text
//! word 0  header   low 32 bits: class id (objects, class monitors) or array-type id
//!                  (arrays); bits 32..39: Kind; bit 40: SHARED (escape filter);
//!                  bit 41: CAPSULE (capsule filter)
//! word 1  monitor  address of the lazily created Monitor record (0 = none yet),
//!                  installed by CAS and never freed
//! word 2  serial   allocation number of this run (labels `o17`); 0 for VM-internal blocks
//! objects:        word 3.. = fields, in the class's field order
//! arrays:         word 3 = length, word 4.. = elements (8 bytes each, any type)
//! threads:        word 3 = tid
//! barriers:       word 3 = parties, word 4 = arrived (in the current episode),
//!                 word 5 = generation (episodes completed); 4 and 5 only under the
//!                 scheduler's lock
//! statics:        word 3.. = static fields, in `Program::statics` order
//! ```
//! Slot values: ints as i64, doubles as f64 bits, booleans 0/1, references as addresses.

/// Bytes per word.
pub const WORD: usize = 8;
/// Word index of the header.
pub const HEADER: usize = 0;
/// Word index of the monitor pointer.
pub const MONITOR: usize = 1;
/// Word index of the allocation serial number.
pub const SERIAL: usize = 2;
/// Number of header words common to every block.
pub const HEADER_WORDS: usize = 3;
/// Word index of an object's (or the statics block's) first field.
pub const FIELD0: usize = 3;
/// Word index of an array's length.
pub const ARRAY_LEN: usize = 3;
/// Word index of an array's first element.
pub const ARRAY_DATA: usize = 4;
/// Word index of a thread object's tid.
pub const THREAD_TID: usize = 3;
/// Word indices of a barrier's state.
pub const BARRIER_PARTIES: usize = 3;
pub const BARRIER_ARRIVED: usize = 4;
pub const BARRIER_GENERATION: usize = 5;
/// Words of a barrier block.
pub const BARRIER_WORDS: usize = 6;
/// Words of a thread block.
pub const THREAD_WORDS: usize = 4;

/// Bit position of the kind byte in the header.
pub const KIND_SHIFT: u32 = 32;
/// The SHARED flag (set by the escape filter when an object becomes reachable from
/// more than one thread).
pub const SHARED_BIT: u64 = 1 << 40;
/// The capsule filter's "capsule-shared" flag.
pub const CAPSULE_BIT: u64 = 1 << 41;
/// Mask of the id part of the header.
pub const ID_MASK: u64 = 0xffff_ffff;

/// The kind byte of a header.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Kind {
    Object = 0,
    Array = 1,
    Thread = 2,
    Barrier = 3,
    /// The lock object of a class's `static synchronized` methods.
    ClassMonitor = 4,
    /// The statics block (one per run).
    Statics = 5,
}

impl Kind {
    pub fn from_byte(b: u8) -> Kind {
        match b {
            1 => Kind::Array,
            2 => Kind::Thread,
            3 => Kind::Barrier,
            4 => Kind::ClassMonitor,
            5 => Kind::Statics,
            _ => Kind::Object,
        }
    }
}

/// A header word for a new block.
pub const fn header(kind: Kind, id: u32) -> u64 {
    ((kind as u64) << KIND_SHIFT) | id as u64
}

/// Monitor record (3 words, allocated from the heap on first use):
/// word 0 = owner (tid + 1, 0 = free), word 1 = recursion count (touched only by the
/// owner), word 2 = contenders (threads in the slow path of acquire).
pub const MON_OWNER: usize = 0;
pub const MON_COUNT: usize = 1;
pub const MON_CONTENDERS: usize = 2;
pub const MONITOR_WORDS: usize = 3;
