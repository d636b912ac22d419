//! Per-thread values keyed by tid: a vector for the small, dense tids of traces (`T<n>`
//! names below 1024, other names the smallest free id), a map for any larger ones
//! (events built in memory). The offline driver and the trace normalizer both keep one.

use hashbrown::HashMap;

use crate::event::Tid;

/// Tids below this live in the vector.
const SMALL_TIDS: usize = 4096;

#[derive(Debug)]
pub struct TidMap<T> {
    small: Vec<Option<T>>,
    large: HashMap<Tid, T>,
}

impl<T> Default for TidMap<T> {
    fn default() -> Self {
        TidMap {
            small: Vec::new(),
            large: HashMap::new(),
        }
    }
}

impl<T> TidMap<T> {
    pub fn get(&self, t: &Tid) -> Option<&T> {
        match self.small.get(*t as usize) {
            Some(v) => v.as_ref(),
            None => self.large.get(t),
        }
    }

    pub fn get_mut(&mut self, t: &Tid) -> Option<&mut T> {
        match self.small.get_mut(*t as usize) {
            Some(v) => v.as_mut(),
            None => self.large.get_mut(t),
        }
    }

    pub fn contains_key(&self, t: &Tid) -> bool {
        self.get(t).is_some()
    }

    pub fn insert(&mut self, t: Tid, value: T) {
        let i = t as usize;
        if i >= SMALL_TIDS {
            self.large.insert(t, value);
            return;
        }
        if self.small.len() <= i {
            self.small.resize_with(i + 1, || None);
        }
        self.small[i] = Some(value);
    }
}

#[cfg(test)]
mod tests {
    use super::TidMap;

    #[test]
    fn small_and_large_tids() {
        let mut m = TidMap::default();
        m.insert(3, "three");
        m.insert(1 << 20, "large");
        assert_eq!(m.get(&3), Some(&"three"));
        assert_eq!(m.get(&(1 << 20)), Some(&"large"));
        assert!(!m.contains_key(&2) && !m.contains_key(&5000));
        *m.get_mut(&3).unwrap() = "drei";
        assert_eq!(m.get(&3), Some(&"drei"));
    }
}
