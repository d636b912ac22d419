//! Source spans and the byte-offset → line/column mapping shared by diagnostics and sites.

use crate::ir::FileId;

/// A byte range `start..end` in one source file.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering `self` and `other` (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// Line starts of one file, for 1-based line/column (columns counted in characters).
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
    /// Character boundaries at most [`MARK_EVERY`] bytes apart (line starts included),
    /// with the number of characters before each: a column costs a binary search and
    /// at most `MARK_EVERY` bytes of counting, not the length of its line (counting
    /// from the line start made positions on one long line quadratic).
    marks: Vec<(usize, usize)>,
}

const MARK_EVERY: usize = 1024;

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut marks = vec![(0, 0)];
        let (mut at, mut chars) = (0, 0);
        while at < text.len() {
            let mut next = (at + MARK_EVERY).min(text.len());
            while !text.is_char_boundary(next) {
                next += 1;
            }
            chars += text[at..next].chars().count();
            marks.push((next, chars));
            at = next;
        }
        LineIndex { starts, marks }
    }

    /// Characters in `text[..offset]` (`offset` a character boundary).
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let i = match self.marks.binary_search_by_key(&offset, |m| m.0) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let (at, chars) = self.marks[i];
        chars + text[at..offset].chars().count()
    }

    /// 1-based (line, column) of a byte offset; offsets past the end or inside a
    /// multi-byte character are clamped to the nearest preceding character boundary.
    pub fn line_col(&self, text: &str, offset: usize) -> (u32, u32) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let col = self.chars_before(text, offset) - self.chars_before(text, self.starts[line]);
        (line as u32 + 1, col as u32 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let text = "ab\nçd\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(text, 0), (1, 1));
        assert_eq!(idx.line_col(text, 3), (2, 1));
        assert_eq!(idx.line_col(text, 5), (2, 2));
        assert_eq!(idx.line_col(text, 4), (2, 1));
        assert_eq!(idx.line_col(text, 100), (3, 1));
    }

    #[test]
    fn long_lines_count_characters_across_marks() {
        let text = format!("x\n{}é{}\nz", "a".repeat(1500), "ç".repeat(2000));
        let idx = LineIndex::new(&text);
        for offset in (0..text.len()).step_by(7) {
            let mut o = offset;
            while !text.is_char_boundary(o) {
                o -= 1;
            }
            let line_start = text[..o].rfind('\n').map_or(0, |i| i + 1);
            let line = text[..o].matches('\n').count() as u32 + 1;
            let col = text[line_start..o].chars().count() as u32 + 1;
            assert_eq!(idx.line_col(&text, offset), (line, col), "offset {offset}");
        }
    }
}
