//! The one backoff of every retry loop: exponential growth up to a cap, each wait
//! jittered, so clients that lost the same server (or replicas that lost the same
//! database) do not all come back in the same instant.

use std::time::Duration;

/// Waits between tries: the n-th wait is drawn from `[d/2, d]` where `d` is
/// `min * factor^n`, capped at `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    factor: u32,
    next: Duration,
}

impl Backoff {
    /// Doubling from `min` to `max`.
    pub const fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max,
            factor: 2,
            next: min,
        }
    }

    /// Growing by `factor` (at least 1) instead of doubling.
    pub const fn with_factor(mut self, factor: u32) -> Self {
        self.factor = if factor == 0 { 1 } else { factor };
        self
    }

    /// After a success: the next wait is short again.
    pub fn reset(&mut self) {
        self.next = self.min;
    }

    /// Whether the last wait handed out was longer than the first (a failure
    /// streak is under way).
    pub fn is_backing_off(&self) -> bool {
        self.next > self.min
    }

    /// The wait before the next try, and the backoff grown for the one after.
    pub fn next_wait(&mut self) -> Duration {
        let base = self.next;
        self.next = base.saturating_mul(self.factor).min(self.max);
        let half = base / 2;
        half + half.mul_f64(unit_random())
    }
}

/// A number in `[0, 1)` from the standard library's per-process random hash keys
/// (each `RandomState` is keyed anew), which is all the randomness jitter needs.
fn unit_random() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn waits_grow_within_their_jitter_band_up_to_the_cap() {
        let mut b = Backoff::new(100 * MS, 1000 * MS);
        for base in [100, 200, 400, 800, 1000, 1000] {
            let wait = b.next_wait();
            assert!(
                wait >= base / 2 * MS && wait <= base * MS,
                "{wait:?} outside [{}ms, {base}ms]",
                base / 2
            );
        }
        assert!(b.is_backing_off());
        b.reset();
        assert!(!b.is_backing_off());
        assert!(b.next_wait() <= 100 * MS);
    }

    #[test]
    fn a_factor_other_than_two() {
        let mut b = Backoff::new(100 * MS, Duration::from_secs(10)).with_factor(4);
        let _ = b.next_wait();
        let second = b.next_wait();
        assert!(second >= 200 * MS && second <= 400 * MS, "{second:?}");
    }

    #[test]
    fn waits_are_spread_rather_than_equal() {
        let waits: std::collections::BTreeSet<Duration> = (0..32)
            .map(|_| Backoff::new(Duration::from_secs(1), Duration::from_secs(1)).next_wait())
            .collect();
        assert!(waits.len() > 16, "{} distinct waits of 32", waits.len());
    }
}
