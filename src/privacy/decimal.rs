//! Exact budget arithmetic on decimals, rounded up where a result has more digits than a
//! decimal holds: a spending is never under-counted.
//!
//! `rust_decimal` rounds a sum or a quotient to 28-29 significant digits, to nearest. For
//! budgets that would let a release past the total by the last digit: `10 +
//! 0.1111111111111111111111111111` rounds to `10.111111111111111111111111111`. Here the exact
//! result is computed on 128-bit integers and rounded up at the finest scale that fits.

use rust_decimal::Decimal;

/// [`add_up`] as a method: `spent.add_up(eps)`.
pub trait AddUp {
    /// `self + other`, exact or rounded up (for non-negative spending).
    fn add_up(self, other: Decimal) -> Decimal;
}

impl AddUp for Decimal {
    fn add_up(self, other: Decimal) -> Decimal {
        add_up(self, other)
    }
}

/// The largest mantissa a decimal holds, plus one: 2^96.
const LIMIT: u128 = 1 << 96;

/// `a + b` for non-negative `a` and `b`: exact when a decimal holds it, else rounded up to the
/// next decimal at the finest scale that fits. `Decimal::MAX` when nothing fits.
pub fn add_up(a: Decimal, b: Decimal) -> Decimal {
    if a.is_sign_negative() || b.is_sign_negative() {
        return a.saturating_add(b);
    }
    let (ma, sa) = (a.mantissa().unsigned_abs(), a.scale());
    let (mb, sb) = (b.mantissa().unsigned_abs(), b.scale());
    for t in (0..=sa.max(sb)).rev() {
        let sum = rescale_up(ma, sa, t)
            .zip(rescale_up(mb, sb, t))
            .and_then(|(x, y)| x.checked_add(y));
        if let Some(sum) = sum.filter(|s| *s < LIMIT) {
            return Decimal::from_i128_with_scale(sum as i128, t).normalize();
        }
    }
    Decimal::MAX
}

/// `a * b / den` for non-negative `a` and `b` and positive `den`, computed exactly and
/// rounded up to the finest scale (at most 28 places) that a decimal holds: the share
/// `eps |h_j| / S` of a cell. `None` when `den` is not positive; `Decimal::MAX` when the
/// product passes 128 bits.
pub fn share_up(a: Decimal, b: Decimal, den: Decimal) -> Option<Decimal> {
    if den <= Decimal::ZERO || a.is_sign_negative() || b.is_sign_negative() {
        return None;
    }
    let Some(mn) = a
        .mantissa()
        .unsigned_abs()
        .checked_mul(b.mantissa().unsigned_abs())
    else {
        return Some(Decimal::MAX);
    };
    let sn = i64::from(a.scale()) + i64::from(b.scale());
    let (md, sd) = (den.mantissa().unsigned_abs(), i64::from(den.scale()));
    // a b / den = mn 10^(sd - sn) / md; at scale t the mantissa is
    // ceil(mn 10^(sd - sn + t) / md).
    for t in (0..=28i64).rev() {
        let k = sd - sn + t;
        let (n, d) = if k >= 0 {
            (pow10(k).and_then(|p| mn.checked_mul(p)), Some(md))
        } else {
            (Some(mn), pow10(-k).and_then(|p| md.checked_mul(p)))
        };
        if let (Some(n), Some(d)) = (n, d) {
            let q = n.div_ceil(d);
            if q < LIMIT {
                return Some(Decimal::from_i128_with_scale(q as i128, t as u32).normalize());
            }
        }
    }
    Some(Decimal::MAX)
}

/// The mantissa `m` at scale `from`, rescaled to scale `to`, rounded up.
fn rescale_up(m: u128, from: u32, to: u32) -> Option<u128> {
    if to >= from {
        pow10(i64::from(to - from)).and_then(|p| m.checked_mul(p))
    } else {
        pow10(i64::from(from - to)).map(|p| m.div_ceil(p))
    }
}

fn pow10(k: i64) -> Option<u128> {
    u32::try_from(k).ok().and_then(|k| 10u128.checked_pow(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("a decimal")
    }

    #[test]
    fn sums_are_exact_or_rounded_up() {
        assert_eq!(add_up(d("0.1"), d("0.2")), d("0.3"));
        assert_eq!(add_up(d("10"), d("0.25")), d("10.25"));
        let s = add_up(d("10"), d("0.1111111111111111111111111111"));
        assert!(s > d("10.111111111111111111111111111"), "{s}");
        assert_eq!(s, d("10.111111111111111111111111112"));
    }

    #[test]
    fn quotients_are_rounded_up() {
        let q = share_up(d("8.5"), d("1"), d("3")).expect("a quotient");
        // q >= 17/6 exactly: 6 m >= 17 10^scale.
        assert!(6 * q.mantissa() >= 17 * 10i128.pow(q.scale()), "{q}");
        assert_eq!(share_up(d("1"), d("1"), d("4")), Some(d("0.25")));
        assert_eq!(share_up(d("0.3"), d("1"), d("1")), Some(d("0.3")));
        assert_eq!(share_up(d("1"), d("1"), d("0")), None);
        assert_eq!(share_up(d("8.5"), d("2"), d("1")), Some(d("17")));
        assert_eq!(share_up(d("0.1"), d("3"), d("3")), Some(d("0.1")));
    }
}
