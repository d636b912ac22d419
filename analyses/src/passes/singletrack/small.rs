//! A list that keeps its first element inline: per-location state usually has one
//! reader and one transaction, and a heap allocation per location would cost a cache
//! miss per access (and memory) for nothing.

/// A sequence in insertion order whose first element is stored inline.
#[derive(Debug)]
pub struct Small<T> {
    first: Option<T>,
    /// Boxed on purpose: 8 bytes in the cell instead of a `Vec`'s 24, and the spill is
    /// rare.
    #[allow(clippy::box_collection)]
    rest: Option<Box<Vec<T>>>,
}

impl<T> Default for Small<T> {
    fn default() -> Self {
        Small {
            first: None,
            rest: None,
        }
    }
}

impl<T> Small<T> {
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.first
            .iter()
            .chain(self.rest.iter().flat_map(|r| r.iter()))
    }

    #[inline]
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.first
            .iter_mut()
            .chain(self.rest.iter_mut().flat_map(|r| r.iter_mut()))
    }

    /// Append `v`; returns it.
    #[inline]
    pub fn push(&mut self, v: T) -> &mut T {
        if self.first.is_none() {
            // `first` empty means `rest` empty: elements are only ever removed all at
            // once (`clear`) or through `retain`, which refills `first`.
            return self.first.insert(v);
        }
        // One element at first: a second reader is common, a third rare, and the
        // spill stays allocated (see `clear`).
        let rest = self
            .rest
            .get_or_insert_with(|| Box::new(Vec::with_capacity(1)));
        rest.push(v);
        rest.last_mut().expect("just pushed")
    }

    /// Replace the first element for which `is` holds by `v`, or append `v`.
    #[inline]
    pub fn replace_or_push(&mut self, is: impl Fn(&T) -> bool, v: T) {
        if let Some(x) = self.iter_mut().find(|x| is(x)) {
            *x = v;
            return;
        }
        self.push(v);
    }

    /// Remove every element (keeping the spill allocation).
    #[inline]
    pub fn clear(&mut self) {
        self.first = None;
        if let Some(r) = &mut self.rest {
            r.clear();
        }
    }

    /// The only element (`None` if empty), or the list back if it has more than one.
    pub fn into_single(self) -> Result<Option<T>, Self> {
        if self.rest.as_ref().is_some_and(|r| !r.is_empty()) {
            return Err(self);
        }
        Ok(self.first)
    }

    /// The list of `v`'s element, if any.
    pub fn of(v: Option<T>) -> Self {
        Small {
            first: v,
            rest: None,
        }
    }

    /// Keep the elements for which `f` holds, in order.
    pub fn retain(&mut self, mut f: impl FnMut(&T) -> bool) {
        if self.first.as_ref().is_some_and(|v| !f(v)) {
            self.first = None;
        }
        if let Some(r) = &mut self.rest {
            r.retain(|v| f(v));
            if self.first.is_none() && !r.is_empty() {
                self.first = Some(r.remove(0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Small;

    #[test]
    fn keeps_insertion_order_through_push_retain_and_clear() {
        let mut s = Small::default();
        assert_eq!(s.iter().count(), 0);
        for v in 0..6 {
            s.push(v);
        }
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        s.retain(|v| v % 2 == 1);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [1, 3, 5]);
        *s.iter_mut().nth(1).unwrap() = 7;
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [1, 7, 5]);
        assert_eq!(s.iter().count(), 3);
        s.clear();
        assert_eq!(s.iter().count(), 0);
        *s.push(9) += 1;
        s.push(11);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [10, 11]);
        s.replace_or_push(|v| *v == 11, 12);
        s.replace_or_push(|v| *v == 99, 13);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [10, 12, 13]);
    }
}
