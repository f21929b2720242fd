//! Durations to ticks, without a division on the hot path.
//!
//! Every `sleep` and `reset` turns a duration into a tick count. A 64-bit
//! division costs tens of cycles (a 128-bit one more), so the divisor's
//! reciprocal is computed once and each conversion is a multiply, a shift
//! and at most two corrections. Durations past `u64` nanoseconds (584
//! years) take the exact 128-bit path.

use std::time::Duration;

/// Converts durations to whole ticks of a fixed length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticks {
    /// The tick in nanoseconds; never zero.
    tick_ns: u64,
    /// `floor((2^64 - 1) / tick_ns)`.
    reciprocal: u64,
}

impl Ticks {
    pub(crate) fn new(tick_ns: u64) -> Ticks {
        assert!(tick_ns > 0, "a tick of zero nanoseconds");
        Ticks {
            tick_ns,
            reciprocal: u64::MAX / tick_ns,
        }
    }

    pub(crate) fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// Whole ticks in `d`, rounded down; `None` past `u64::MAX` ticks.
    pub(crate) fn floor(&self, d: Duration) -> Option<u64> {
        match nanos(d) {
            Some(ns) => Some(self.div_rem(ns).0),
            None => u64::try_from(d.as_nanos() / u128::from(self.tick_ns)).ok(),
        }
    }

    /// Ticks to cover `d`, rounded up; `None` past `u64::MAX` ticks.
    pub(crate) fn ceil(&self, d: Duration) -> Option<u64> {
        match nanos(d) {
            Some(ns) => {
                let (q, r) = self.div_rem(ns);
                Some(q + u64::from(r != 0))
            }
            None => u64::try_from(d.as_nanos().div_ceil(u128::from(self.tick_ns))).ok(),
        }
    }

    /// `(n / tick_ns, n % tick_ns)`. The estimate from the reciprocal is at
    /// most 2 below the quotient and never above it.
    fn div_rem(&self, n: u64) -> (u64, u64) {
        let mut q = ((u128::from(n) * u128::from(self.reciprocal)) >> 64) as u64;
        let mut r = n - q * self.tick_ns;
        while r >= self.tick_ns {
            q += 1;
            r -= self.tick_ns;
        }
        (q, r)
    }
}

/// `d` in nanoseconds, if it fits a `u64`.
fn nanos(d: Duration) -> Option<u64> {
    d.as_secs()
        .checked_mul(1_000_000_000)?
        .checked_add(u64::from(d.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::Ticks;
    use std::time::Duration;

    fn check(tick_ns: u64, ns: u128) {
        if ns > Duration::MAX.as_nanos() {
            return;
        }
        let ticks = Ticks::new(tick_ns);
        let d = Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32);
        let floor = u64::try_from(ns / u128::from(tick_ns)).ok();
        let ceil = u64::try_from(ns.div_ceil(u128::from(tick_ns))).ok();
        assert_eq!(ticks.floor(d), floor, "floor {ns} / {tick_ns}");
        assert_eq!(ticks.ceil(d), ceil, "ceil {ns} / {tick_ns}");
    }

    #[test]
    fn matches_division_at_the_edges() {
        let divisors = [
            1,
            3,
            999_999,
            1_000_000,
            1_000_001,
            10_000_000,
            86_400_000_000_000,
            u64::MAX / 3,
            u64::MAX,
        ];
        for &d in &divisors {
            for n in [
                0u128,
                1,
                2,
                u128::from(d) - 1,
                u128::from(d),
                u128::from(d) + 1,
            ] {
                check(d, n);
            }
            for k in [2u128, 7, 1000, 1 << 40] {
                let n = u128::from(d) * k;
                for n in [n - 1, n, n + 1] {
                    check(d, n);
                }
            }
            for n in [
                u128::from(u64::MAX) - 1,
                u128::from(u64::MAX),
                u128::from(u64::MAX) + 1,
                u128::from(u64::MAX) * 5_000,
            ] {
                check(d, n);
            }
        }
    }

    #[test]
    fn matches_division_on_a_seeded_sweep() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = (x >> (x % 64)).max(1);
            let n = x.rotate_left(17) >> ((x >> 3) % 64);
            check(d, u128::from(n));
        }
    }
}
