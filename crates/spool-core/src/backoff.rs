//! Exponential backoff with jitter (docs/spec.md §3).
//!
//! `min(base * 2^(attempt-1), max)`, then ±10% jitter so that tasks that
//! failed together do not all come back together.

use std::time::Duration;

use rand::Rng;

/// The jitter band: the delay is scaled by a factor in `[1 - J, 1 + J]`.
pub const JITTER: f64 = 0.10;

/// The delay before the retry that follows failed attempt `attempt` (1-based),
/// with `unit` in `[-1, 1]` choosing where in the jitter band it lands.
pub fn delay_with_unit(attempt: u32, base: Duration, max: Duration, unit: f64) -> Duration {
    let exp = attempt.saturating_sub(1).min(62);
    let raw = base.saturating_mul(1u32 << exp.min(31));
    let raw = if exp > 31 { max } else { raw.min(max) };
    raw.mul_f64(1.0 + JITTER * unit.clamp(-1.0, 1.0))
}

/// The delay before the next retry, with random jitter.
pub fn delay(attempt: u32, base: Duration, max: Duration) -> Duration {
    let unit = rand::thread_rng().gen_range(-1.0..=1.0);
    delay_with_unit(attempt, base, max, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const H: Duration = Duration::from_secs(3600);

    #[test]
    fn doubles_per_attempt_then_caps() {
        assert_eq!(delay_with_unit(1, S, H, 0.0), S);
        assert_eq!(delay_with_unit(2, S, H, 0.0), 2 * S);
        assert_eq!(delay_with_unit(5, S, H, 0.0), 16 * S);
        assert_eq!(delay_with_unit(13, S, H, 0.0), H);
        assert_eq!(delay_with_unit(u32::MAX, S, H, 0.0), H);
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        assert_eq!(delay_with_unit(1, S, H, 1.0), Duration::from_millis(1100));
        assert_eq!(delay_with_unit(1, S, H, -1.0), Duration::from_millis(900));
        for _ in 0..1000 {
            let d = delay(3, S, H);
            assert!(d >= Duration::from_millis(3600) && d <= Duration::from_millis(4400));
        }
    }
}
