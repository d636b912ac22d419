//! Pure value operations of the IR (Java semantics on 64-bit slots), shared by the
//! interpreter and the JIT's runtime calls.

use lang::ir::{BinOp, Cmp, Conv, MathFn, UnOp};

#[inline(always)]
fn f(v: u64) -> f64 {
    f64::from_bits(v)
}
#[inline(always)]
fn d(x: f64) -> u64 {
    x.to_bits()
}
#[inline(always)]
fn i(v: u64) -> i64 {
    v as i64
}

#[inline(always)]
fn cmp_i(c: Cmp, a: i64, b: i64) -> bool {
    match c {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
    }
}

#[inline(always)]
fn cmp_f(c: Cmp, a: f64, b: f64) -> bool {
    match c {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
    }
}

/// The division-by-zero trap of `IDiv`/`IRem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DivByZero;

/// `lhs op rhs`.
#[inline]
pub fn binary(op: BinOp, a: u64, b: u64) -> Result<u64, DivByZero> {
    Ok(match op {
        BinOp::IAdd => i(a).wrapping_add(i(b)) as u64,
        BinOp::ISub => i(a).wrapping_sub(i(b)) as u64,
        BinOp::IMul => i(a).wrapping_mul(i(b)) as u64,
        BinOp::IDiv => {
            if b == 0 {
                return Err(DivByZero);
            }
            i(a).wrapping_div(i(b)) as u64
        }
        BinOp::IRem => {
            if b == 0 {
                return Err(DivByZero);
            }
            i(a).wrapping_rem(i(b)) as u64
        }
        BinOp::IAnd | BinOp::BAnd => a & b,
        BinOp::IOr | BinOp::BOr => a | b,
        BinOp::IXor | BinOp::BXor => a ^ b,
        BinOp::Shl => a.wrapping_shl((b & 63) as u32),
        BinOp::Shr => (i(a) >> (b & 63)) as u64,
        BinOp::UShr => a >> (b & 63),
        BinOp::FAdd => d(f(a) + f(b)),
        BinOp::FSub => d(f(a) - f(b)),
        BinOp::FMul => d(f(a) * f(b)),
        BinOp::FDiv => d(f(a) / f(b)),
        BinOp::FRem => d(f(a) % f(b)),
        BinOp::ICmp(c) => cmp_i(c, i(a), i(b)) as u64,
        BinOp::FCmp(c) => cmp_f(c, f(a), f(b)) as u64,
        BinOp::BEq | BinOp::RefEq => (a == b) as u64,
        BinOp::BNe | BinOp::RefNe => (a != b) as u64,
    })
}

#[inline]
pub fn unary(op: UnOp, a: u64) -> u64 {
    match op {
        UnOp::INeg => i(a).wrapping_neg() as u64,
        UnOp::FNeg => d(-f(a)),
        UnOp::Not => (a == 0) as u64,
        UnOp::BitNot => !a,
    }
}

#[inline]
pub fn convert(c: Conv, a: u64) -> u64 {
    match c {
        Conv::IntToDouble => d(i(a) as f64),
        // Rust's float → int `as` saturates and maps NaN to 0, like Java.
        Conv::DoubleToInt => (f(a) as i64) as u64,
    }
}

/// Java's `Math.pow` where it differs from C's `pow`: NaN exponent ⇒ NaN, and
/// `(±1) ^ ±∞` ⇒ NaN.
fn java_pow(x: f64, y: f64) -> f64 {
    if y.is_nan() || (x.abs() == 1.0 && y.is_infinite()) {
        return f64::NAN;
    }
    if y == 0.0 {
        return 1.0;
    }
    x.powf(y)
}

fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { a } else { b }
    } else {
        a.min(b)
    }
}

fn java_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_positive() { a } else { b }
    } else {
        a.max(b)
    }
}

/// `Math.*`; `args` holds the argument slots (1 or 2).
pub fn math(func: MathFn, args: &[u64]) -> u64 {
    let a = args.first().copied().unwrap_or(0);
    let b = args.get(1).copied().unwrap_or(0);
    match func {
        MathFn::Sqrt => d(f(a).sqrt()),
        MathFn::AbsInt => i(a).wrapping_abs() as u64,
        MathFn::AbsDouble => d(f(a).abs()),
        MathFn::Sin => d(f(a).sin()),
        MathFn::Cos => d(f(a).cos()),
        MathFn::Exp => d(f(a).exp()),
        MathFn::Log => d(f(a).ln()),
        MathFn::Pow => d(java_pow(f(a), f(b))),
        MathFn::Floor => d(f(a).floor()),
        MathFn::MinInt => i(a).min(i(b)) as u64,
        MathFn::MaxInt => i(a).max(i(b)) as u64,
        MathFn::MinDouble => d(java_min(f(a), f(b))),
        MathFn::MaxDouble => d(java_max(f(a), f(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ib(op: BinOp, a: i64, b: i64) -> Result<i64, DivByZero> {
        binary(op, a as u64, b as u64).map(|v| v as i64)
    }

    #[test]
    fn int_semantics_are_javas_long() {
        assert_eq!(ib(BinOp::IDiv, i64::MIN, -1), Ok(i64::MIN));
        assert_eq!(ib(BinOp::IRem, i64::MIN, -1), Ok(0));
        assert_eq!(ib(BinOp::IDiv, -7, 2), Ok(-3));
        assert_eq!(ib(BinOp::IRem, -7, 2), Ok(-1));
        assert_eq!(ib(BinOp::IDiv, 1, 0), Err(DivByZero));
        assert_eq!(ib(BinOp::IRem, 1, 0), Err(DivByZero));
        assert_eq!(ib(BinOp::IAdd, i64::MAX, 1), Ok(i64::MIN));
        assert_eq!(ib(BinOp::Shl, 1, 65), Ok(2));
        assert_eq!(ib(BinOp::Shr, -8, 1), Ok(-4));
        assert_eq!(ib(BinOp::UShr, -1, 60), Ok(15));
        assert_eq!(ib(BinOp::Shl, 1, -1), Ok(i64::MIN));
    }

    #[test]
    fn doubles() {
        let c = |x: f64| convert(Conv::DoubleToInt, x.to_bits()) as i64;
        assert_eq!(c(f64::NAN), 0);
        assert_eq!(c(1e300), i64::MAX);
        assert_eq!(c(-1e300), i64::MIN);
        assert_eq!(c(-2.7), -2);
        let r = binary(BinOp::FRem, 5.5f64.to_bits(), 2.0f64.to_bits()).unwrap();
        assert_eq!(f64::from_bits(r), 1.5);
        let ne = binary(BinOp::FCmp(Cmp::Ne), f64::NAN.to_bits(), f64::NAN.to_bits());
        assert_eq!(ne, Ok(1));
        let p = math(MathFn::Pow, &[1.0f64.to_bits(), f64::NAN.to_bits()]);
        assert!(f64::from_bits(p).is_nan());
        let m = math(MathFn::MinDouble, &[0.0f64.to_bits(), (-0.0f64).to_bits()]);
        assert!(f64::from_bits(m).is_sign_negative());
        assert_eq!(math(MathFn::AbsInt, &[i64::MIN as u64]) as i64, i64::MIN);
    }
}
