//! A program loaded into a VM: the IR plus the tables the runtime needs at run time
//! (array-type ids, which slots hold references, the statics block and the class
//! monitors), and the heap they live in.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use lang::ir::{ClassId, Const, Inst, Program, Type};

use crate::heap::{self, Arena, Heap};
use crate::layout::{self, Kind};

pub struct Image {
    pub program: Arc<Program>,
    pub heap: Heap,
    /// Array types by id (the type of the array itself, e.g. `int[][]`).
    pub array_types: Vec<Type>,
    array_ids: HashMap<Type, u32>,
    /// Per array-type id: do its elements hold references?
    pub elem_is_ref: Vec<bool>,
    /// Per class, per field: does the slot hold a reference?
    pub field_is_ref: Vec<Vec<bool>>,
    pub static_is_ref: Vec<bool>,
    /// Address of the statics block (the `ObjId` of static locations).
    pub statics: u64,
    /// Per class: the lock object of its `static synchronized` methods.
    pub class_monitors: Vec<u64>,
}

/// The 64-bit slot encoding of a constant.
pub fn const_bits(c: Const) -> u64 {
    match c {
        Const::Int(i) => i as u64,
        Const::Double(d) => d.to_bits(),
        Const::Bool(b) => b as u64,
        Const::Null => 0,
    }
}

impl Image {
    /// Lay out `program` in a fresh heap of at most `max_heap` guest bytes: the statics
    /// block (initialised in declaration order) and one monitor object per class.
    pub fn load(program: Arc<Program>, max_heap: u64) -> Result<Image, heap::HeapFull> {
        let heap = Heap::new(max_heap);
        let mut arena = Arena::default();
        let mut array_types = Vec::new();
        let mut array_ids = HashMap::new();
        // Each distinct `new` shape once: the walk below costs depth² per shape.
        let mut shapes = HashSet::new();
        for f in &program.funcs {
            for b in &f.blocks {
                for i in &b.insts {
                    if let Inst::NewArray { elem, dims, .. } = i {
                        if !shapes.insert((elem, dims.len())) {
                            continue;
                        }
                        let mut t = Type::Array(Box::new(elem.clone()));
                        for _ in 0..dims.len() {
                            if !array_ids.contains_key(&t) {
                                array_ids.insert(t.clone(), array_types.len() as u32);
                                array_types.push(t.clone());
                            }
                            t = match t {
                                Type::Array(e) => *e,
                                other => other,
                            };
                        }
                    }
                }
            }
        }
        drop(shapes);
        let elem_is_ref = array_types
            .iter()
            .map(|t| matches!(t, Type::Array(e) if e.is_ref()))
            .collect();
        let field_is_ref = program
            .classes
            .iter()
            .map(|c| c.fields.iter().map(|f| f.ty.is_ref()).collect())
            .collect();
        let static_is_ref = program.statics.iter().map(|s| s.ty.is_ref()).collect();
        let statics = heap.alloc(
            &mut arena,
            layout::FIELD0 + program.statics.len(),
            Kind::Statics,
            0,
            false,
        )?;
        for (i, s) in program.statics.iter().enumerate() {
            if let Some(c) = s.init {
                heap::store(statics, layout::FIELD0 + i, const_bits(c));
            }
        }
        let mut class_monitors = Vec::with_capacity(program.classes.len());
        for i in 0..program.classes.len() {
            class_monitors.push(heap.alloc(
                &mut arena,
                layout::HEADER_WORDS,
                Kind::ClassMonitor,
                i as u32,
                false,
            )?);
        }
        Ok(Image {
            program,
            heap,
            array_types,
            array_ids,
            elem_is_ref,
            field_is_ref,
            static_is_ref,
            statics,
            class_monitors,
        })
    }

    /// The id of an array type (`int[]` for `new int[n]`); every array type the
    /// program can allocate was interned at load time.
    pub fn array_type_id(&self, t: &Type) -> u32 {
        self.array_ids.get(t).copied().unwrap_or(u32::MAX)
    }

    pub fn class_monitor(&self, c: ClassId) -> u64 {
        self.class_monitors[c.index()]
    }

    /// `int[]`, `Node[][]`, … for an array-type id.
    pub fn array_type_name(&self, id: u32) -> String {
        match self.array_types.get(id as usize) {
            Some(t) => self.program.type_name(t),
            None => "?[]".into(),
        }
    }
}
