//! The reader's fast path for the common STD line, `THREAD|OP(NAME)|SITE` with `OP`
//! one of `r`, `w`, `acq`, `rel`, names of printable ASCII and a decimal site: where
//! its delimiters are ([`Shape`]), and its names as integers ([`name_key`]) looked up
//! in a small direct-mapped cache ([`NameCache`]) before any hash map.
//!
//! A line of at most [`WINDOW`] bytes is classified with 16-byte vector compares (on
//! x86-64, where SSE2 is always there); longer lines and other targets take the
//! byte-at-a-time scan. Both accept exactly the same lines (tested below).

use super::read::WINDOW;

/// Where the delimiters of a fast line are, and its site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// The first `|` (end of the thread name).
    pub p1: usize,
    /// The `(` (end of the operation).
    pub open: usize,
    /// The `)` (end of the name); the second `|` follows it.
    pub close: usize,
    /// The decimal site after the second `|`, below [`super::TOKEN_SITE_BIT`].
    pub site: SiteDigits,
}

/// A site's checked decimal digits, not yet converted (the reader's parsing side
/// converts them, [`SiteDigits::value`]): the last eight as the bytes of `word`,
/// padded with `'0'`s in front, and the value of the one or two before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SiteDigits {
    word: u64,
    lead: u32,
}

impl SiteDigits {
    /// The last eight of `d` (1 to 10) digits ending at `b[n]` (`n >= 8`): only the
    /// digits are read as digits, the bytes before them become `'0'`s. `None` for a
    /// site at or above [`super::TOKEN_SITE_BIT`] (only ten digits can be).
    #[inline(always)]
    fn at(b: &[u8], n: usize, d: usize) -> Option<SiteDigits> {
        let last8 = u64::from_le_bytes(b[n - 8..n].try_into().expect("8 bytes"));
        let k = d.min(8);
        // The last `k` digits are the high bytes (little endian: the first digit is
        // the lowest byte).
        let pad = 8 * (8 - k) as u32;
        let low = (1u64 << pad).wrapping_sub(1);
        let lead = b[n - d..n - k]
            .iter()
            .fold(0u32, |a, &c| a * 10 + (c - b'0') as u32);
        let s = SiteDigits {
            word: (last8 & !low) | (0x3030_3030_3030_3030 & low),
            lead,
        };
        (d < 10 || s.wide() < super::TOKEN_SITE_BIT as u64).then_some(s)
    }

    fn wide(self) -> u64 {
        // Lemire, "Faster parsing of eight digits": pairs, quads, then all eight.
        let v = (self.word & 0x0f0f_0f0f_0f0f_0f0f).wrapping_mul(2561) >> 8;
        let v = (v & 0x00ff_00ff_00ff_00ff).wrapping_mul(6_553_601) >> 16;
        let v = (v & 0x0000_ffff_0000_ffff).wrapping_mul(42_949_672_960_001) >> 32;
        self.lead as u64 * 100_000_000 + v
    }

    /// The site number.
    #[inline]
    pub fn value(self) -> u32 {
        self.wide() as u32
    }
}

/// Bytes that may appear in a name: printable ASCII but the delimiters.
fn plain(c: u8) -> bool {
    (0x21..0x7f).contains(&c) && !matches!(c, b'|' | b'(' | b')' | b',')
}

/// The first `\n` among the first `valid` bytes of `w` (the window of a line that
/// starts at `w[0]`): two 16-byte compares.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn newline_in_window(w: &[u8; WINDOW], valid: usize) -> Option<usize> {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    debug_assert!(valid <= WINDOW);
    // SAFETY: SSE2 is part of the x86-64 baseline; both loads are inside `w`.
    let m = unsafe {
        let nl = _mm_set1_epi8(b'\n' as i8);
        let lo = _mm_loadu_si128(w.as_ptr().cast());
        let hi = _mm_loadu_si128(w.as_ptr().add(16).cast());
        (_mm_movemask_epi8(_mm_cmpeq_epi8(lo, nl)) as u32 & 0xffff)
            | ((_mm_movemask_epi8(_mm_cmpeq_epi8(hi, nl)) as u32) << 16)
    };
    let m = m & ((1u64 << valid) - 1) as u32;
    (m != 0).then(|| m.trailing_zeros() as usize)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub(super) fn newline_in_window(w: &[u8; WINDOW], valid: usize) -> Option<usize> {
    w[..valid].iter().position(|&b| b == b'\n')
}

/// Exactly one bit set (without `count_ones`, which the x86-64 baseline, lacking
/// `popcnt`, computes bit-parallel at a dozen instructions).
#[inline]
fn one_bit(x: u32) -> bool {
    x != 0 && x & x.wrapping_sub(1) == 0
}

/// The site digits after the second `|`: 1 to 10 digits, below the token bit.
fn site(digits: &[u8]) -> Option<SiteDigits> {
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut b = [b'0'; 10];
    b[10 - digits.len()..].copy_from_slice(digits);
    SiteDigits::at(&b, 10, digits.len())
}

/// The shape of a fast line, a byte at a time; `None` for any other line.
pub(super) fn shape_scalar(b: &[u8]) -> Option<Shape> {
    let find = |from: usize, c: u8| {
        b.get(from..)
            .and_then(|r| r.iter().position(|&x| x == c))
            .map(|i| from + i)
    };
    let p1 = find(0, b'|')?;
    let open = find(p1 + 1, b'(')?;
    let close = find(open + 1, b')')?;
    let p2 = close + 1;
    if b.get(p2) != Some(&b'|') || p1 == 0 || close == open + 1 || b[0] == b'#' {
        return None;
    }
    let op_ok = matches!(&b[p1 + 1..open], b"r" | b"w" | b"acq" | b"rel");
    if !op_ok || !b[..p1].iter().all(|&c| plain(c)) || !b[open + 1..close].iter().all(|&c| plain(c))
    {
        return None;
    }
    Some(Shape {
        p1,
        open,
        close,
        site: site(&b[p2 + 1..])?,
    })
}

/// The shape of a fast line of `n <= WINDOW` bytes, from the window that starts with
/// it; `None` for any other line.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn shape_window(n: usize, w: &[u8; WINDOW]) -> Option<Shape> {
    shape_window_sse2(n, w)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn shape_window_sse2(n: usize, w: &[u8; WINDOW]) -> Option<Shape> {
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
    unsafe {
        use std::arch::x86_64::{
            _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_movemask_epi8,
            _mm_set_epi64x, _mm_set1_epi8,
        };
        debug_assert!(n <= WINDOW);
        let word = |i: usize| i64::from_le_bytes(w[i..i + 8].try_into().expect("8 bytes"));
        let (x0, x1) = (
            _mm_set_epi64x(word(8), word(0)),
            _mm_set_epi64x(word(24), word(16)),
        );
        // One bit per byte of the window, for a byte-wise comparison of both halves.
        macro_rules! mask {
            ($f:expr) => {
                (_mm_movemask_epi8($f(x0)) as u32 & 0xffff)
                    | ((_mm_movemask_epi8($f(x1)) as u32) << 16)
            };
        }
        macro_rules! eq {
            ($c:expr) => {
                mask!(|x| _mm_cmpeq_epi8(x, _mm_set1_epi8($c as i8)))
            };
        }
        // Signed compares: bytes >= 0x80 are negative, so they fall outside both ranges.
        macro_rules! within {
            ($lo:expr, $hi:expr) => {
                mask!(|x| _mm_and_si128(
                    _mm_cmpgt_epi8(x, _mm_set1_epi8($lo as i8 - 1)),
                    _mm_cmplt_epi8(x, _mm_set1_epi8($hi as i8 + 1)),
                ))
            };
        }
        let valid = ((1u64 << n) - 1) as u32;
        let pipes = eq!(b'|') & valid;
        let opens = eq!(b'(') & valid;
        let closes = eq!(b')') & valid;
        // Every byte of a fast line is printable, and none is a comma: the names are
        // plain, the operation is letters, the site digits.
        if within!(0x21u8, 0x7eu8) & valid != valid
            || eq!(b',') & valid != 0
            || !one_bit(pipes & pipes.wrapping_sub(1))
            || !one_bit(opens)
            || !one_bit(closes)
            || w[0] == b'#'
        {
            return None;
        }
        let p1 = pipes.trailing_zeros() as usize;
        let p2 = 31 - pipes.leading_zeros() as usize;
        let open = opens.trailing_zeros() as usize;
        let close = closes.trailing_zeros() as usize;
        if p1 == 0 || !(p1 < open && open + 1 < close && close + 1 == p2) {
            return None;
        }
        if !matches!(&w[p1 + 1..open], b"r" | b"w" | b"acq" | b"rel") {
            return None;
        }
        // At least 8 bytes here: a thread, an operation, a name, a digit and 4 delimiters.
        let after = valid & !((2u64 << p2) - 1) as u32;
        let digits = n - p2 - 1;
        if after == 0 || digits > 10 || within!(b'0', b'9') & after != after {
            return None;
        }
        Some(Shape {
            p1,
            open,
            close,
            site: site_digits(w, n, digits)?,
        })
    }
}

/// The `d` (1 to 10) checked digits that end at `w[n]` (`n >= 8`).
#[inline(always)]
fn site_digits(w: &[u8; WINDOW], n: usize, d: usize) -> Option<SiteDigits> {
    SiteDigits::at(w, n, d)
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn shape_window(n: usize, w: &[u8; WINDOW]) -> Option<Shape> {
    shape_scalar(&w[..n])
}

/// A name of at most 15 bytes as one integer: its bytes, and its length in bits
/// 120..124 (never 0: names are not empty). Bits 124..128 are free for a tag.
pub(super) fn short_key(b: &[u8]) -> Option<u128> {
    if b.is_empty() || b.len() > 15 {
        return None;
    }
    // Built in registers: copying into a byte array and loading it as one integer
    // stalls on store forwarding.
    let mut k = (b.len() as u128) << 120;
    for (i, &c) in b.iter().enumerate() {
        k |= (c as u128) << (8 * i);
    }
    Some(k)
}

/// [`short_key`] of `w[from..from + len]`, by shifts of the window's two halves.
#[inline(always)]
pub(super) fn name_key(w: &[u8; WINDOW], from: usize, len: usize) -> Option<u128> {
    if len == 0 || len > 15 || from + len > WINDOW {
        return None;
    }
    let half = |i: usize| u128::from_le_bytes(w[i..i + 16].try_into().expect("16 bytes"));
    let (lo, hi) = (half(0), half(16));
    let bytes = match from {
        0 => lo,
        1..16 => (lo >> (8 * from)) | (hi << (128 - 8 * from)),
        _ => hi >> (8 * (from - 16)),
    };
    Some(bytes & ((1u128 << (8 * len)) - 1) | (len as u128) << 120)
}

/// What a cached name is: the tag in a key's top bits.
#[derive(Clone, Copy)]
pub(super) enum NameKind {
    Thread = 1,
    Var = 2,
    Obj = 3,
}

/// The ids of recently used short names, direct-mapped by key: a hit costs one
/// multiply and one compare; a miss goes to the interner's maps.
pub(super) struct NameCache {
    slots: Box<[(u128, u64)]>,
}

const CACHE_BITS: u32 = 14;

impl Default for NameCache {
    fn default() -> Self {
        NameCache {
            slots: vec![(0, 0); 1 << CACHE_BITS].into_boxed_slice(),
        }
    }
}

impl NameCache {
    fn slot(k: u128) -> usize {
        let x = (k as u64) ^ ((k >> 64) as u64).rotate_left(31);
        (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CACHE_BITS)) as usize
    }
    fn tagged(kind: NameKind, k: u128) -> u128 {
        k | (kind as u128) << 124
    }
    #[inline]
    pub fn get(&self, kind: NameKind, k: u128) -> Option<u64> {
        let k = Self::tagged(kind, k);
        let (key, id) = self.slots[Self::slot(k)];
        (key == k).then_some(id)
    }
    pub fn put(&mut self, kind: NameKind, k: u128, id: u64) {
        let k = Self::tagged(kind, k);
        self.slots[Self::slot(k)] = (k, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(line: &[u8], junk: u8) -> [u8; WINDOW] {
        let mut w = [junk; WINDOW];
        w[..line.len()].copy_from_slice(line);
        w
    }

    /// Lines near the fast shape, built from a small alphabet of delimiters, digits,
    /// letters and odd bytes: the vector and scalar paths accept the same lines, with
    /// the same shape, whatever bytes follow the line in the buffer.
    #[test]
    fn vector_and_scalar_shapes_agree() {
        let alphabet: &[u8] = b"|(),#rwacql0123456789Tv_ \t\n\x7f\xc3\x01";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || crate::xorshift(&mut seed);
        let templates: [&[u8]; 6] = [
            b"T1|r(V1)|12",
            b"T12|acq(L3)|4294967295",
            b"T0|rel(L)|2147483647",
            b"x|w(abcdefghijklmnopq)|1",
            b"#1|w(V)|1",
            b"T1|w(V1)|",
        ];
        let mut accepted = 0;
        for round in 0..200_000 {
            let mut line = templates[round % templates.len()].to_vec();
            for _ in 0..(next() % 3) {
                let i = (next() as usize) % (line.len() + 1);
                let c = alphabet[(next() as usize) % alphabet.len()];
                match next() % 3 {
                    0 if i < line.len() => line[i] = c,
                    1 if i < line.len() => {
                        line.remove(i);
                    }
                    _ => line.insert(i, c),
                }
            }
            if line.len() > WINDOW {
                continue;
            }
            let scalar = shape_scalar(&line);
            for junk in [0u8, b'|', b'('] {
                assert_eq!(
                    shape_window(line.len(), &window(&line, junk)),
                    scalar,
                    "line {:?}",
                    String::from_utf8_lossy(&line)
                );
            }
            accepted += scalar.is_some() as usize;
        }
        assert!(accepted > 1000, "the mutations should keep many lines fast");
    }

    #[test]
    fn eight_digits_at_once() {
        for site in [
            0u64,
            1,
            9,
            10,
            12,
            99_999_999,
            100_000_000,
            1_234_567_890,
            2_147_483_647,
            2_147_483_648,
            4_294_967_295,
            9_999_999_999,
        ]
        .into_iter()
        .chain((0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9) % 10_000_000_000))
        {
            for zeros in 0..3 {
                let digits = format!("{}{site}", "0".repeat(zeros));
                if digits.len() > 10 {
                    continue;
                }
                let line = format!("T1|r(V)|{digits}");
                let w = window(line.as_bytes(), b'7');
                let got = site_digits(&w, line.len(), digits.len());
                assert_eq!(got, super::site(digits.as_bytes()), "{line}");
                let expect = (site < super::super::TOKEN_SITE_BIT as u64).then_some(site as u32);
                assert_eq!(got.map(SiteDigits::value), expect, "{line}");
            }
        }
    }

    #[test]
    fn window_keys_are_short_keys() {
        let line = b"Thread7|acq(lock_number_12)|99";
        let w = window(line, b'x');
        for from in 0..line.len() {
            for len in 0..=16 {
                let expect = line.get(from..from + len).and_then(short_key);
                let got = if from + len <= line.len() {
                    name_key(&w, from, len)
                } else {
                    None
                };
                assert_eq!(got, expect, "from {from} len {len}");
            }
        }
    }

    #[test]
    fn cache_keeps_kinds_apart() {
        let mut c = NameCache::default();
        let k = short_key(b"L1").unwrap();
        c.put(NameKind::Var, k, 7);
        assert_eq!(c.get(NameKind::Var, k), Some(7));
        assert_eq!(c.get(NameKind::Obj, k), None);
        c.put(NameKind::Obj, k, 9);
        assert_eq!(c.get(NameKind::Obj, k), Some(9));
    }
}
