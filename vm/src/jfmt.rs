//! Java's `Double.toString` (JDK ≥ 19, Giulietti's specification): the shortest decimal
//! that rounds to the value — except that when one digit suffices, the closest decimal of
//! one *or two* digits is chosen (`4.9E-324`, not `5.0E-324`) — shown as a decimal for
//! 10⁻³ ≤ |d| < 10⁷ and as `d.dddE±n` otherwise.

/// Format like `Double.toString(d)`.
pub fn double_to_string(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sign = if d < 0.0 { "-" } else { "" };
    let a = d.abs();
    // `{:e}` gives the shortest round-trip digits: `1.2345e-5`, `1e10`.
    let sci = format!("{a:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let mut exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mant.chars().filter(|c| *c != '.').collect();
    if digits.len() == 1 {
        // The correctly rounded two-digit decimal is the closest one; take it if it
        // still rounds to `a`.
        let two = format!("{a:.1e}");
        if two.parse::<f64>() == Ok(a)
            && let Some((m2, e2)) = two.split_once('e')
        {
            let d2: String = m2.chars().filter(|c| *c != '.').collect();
            let d2 = d2.trim_end_matches('0');
            if !d2.is_empty() {
                digits = d2.to_string();
                exp = e2.parse().unwrap_or(exp);
            }
        }
    }
    let body = if (1e-3..1e7).contains(&a) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            let (int_part, frac) = if digits.len() > int_len {
                (digits[..int_len].to_string(), digits[int_len..].to_string())
            } else {
                (
                    format!("{digits}{}", "0".repeat(int_len - digits.len())),
                    String::new(),
                )
            };
            let frac = if frac.is_empty() { "0".into() } else { frac };
            format!("{int_part}.{frac}")
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{first}.{rest}E{exp}")
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::double_to_string as s;

    #[test]
    fn matches_java() {
        // Expected strings are what `Double.toString` prints (JDK 21).
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e10, "1.0E10"),
            (1e-5, "1.0E-5"),
            (1e7, "1.0E7"),
            (9999999.0, "9999999.0"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (123.456, "123.456"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0, "0.6666666666666666"),
            (100.0, "100.0"),
            (1234567.0, "1234567.0"),
            (12345678.0, "1.2345678E7"),
            (-1.5, "-1.5"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (4.9e-324, "4.9E-324"),
            (std::f64::consts::PI, "3.141592653589793"),
            (0.30000000000000004, "0.30000000000000004"),
            (1e21, "1.0E21"),
            (1.0e23, "1.0E23"),
            (0.5, "0.5"),
            (2.5e-3, "0.0025"),
            (2e-3, "0.002"),
            (1e-3, "0.001"),
            (9e-4, "9.0E-4"),
            (5e22, "5.0E22"),
            (2.0e-323, "2.0E-323"),
        ];
        for (d, want) in cases {
            assert_eq!(s(*d), *want, "{d:?}");
        }
    }
}
