//! Timestamps as the store keeps them: RFC 3339 in UTC with millisecond
//! precision, so they sort as text and read well in exports.
//!
//! On a database several machines share, "now" is the database's: when a
//! PostgreSQL store opens, it measures how far this machine's clock is from
//! the server's ([`set_database_offset`]), and when they disagree by more
//! than a quarter second every timestamp written and every heartbeat judged
//! afterwards is corrected by it. A worker whose clock runs a minute fast
//! then neither looks dead to the others nor judges their heartbeats stale.
//! (Run items' heartbeats are the server's `now()` itself.)

use std::sync::atomic::{AtomicI64, Ordering};

/// The database's clock minus this machine's, in milliseconds.
static DATABASE_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// Records the database's clock minus this machine's.
pub fn set_database_offset(offset: chrono::TimeDelta) {
    DATABASE_OFFSET_MS.store(offset.num_milliseconds(), Ordering::Relaxed);
}

/// The current time on the database's clock.
pub fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::TimeDelta::milliseconds(DATABASE_OFFSET_MS.load(Ordering::Relaxed))
}

/// The current time (the database's), formatted for storage.
pub fn now_rfc3339() -> String {
    now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

use std::time::Duration;

/// The longest duration a file, a flag or a setting may ask for: 30 days.
/// Longer is a typo (or an attack), and `Duration::from_secs_f64` would
/// panic past ~5.8e11 years anyway.
pub const MAX_SECONDS: f64 = 30.0 * 86_400.0;

/// `secs` as a duration, never panicking: NaN and negatives are zero, and
/// anything above [`MAX_SECONDS`] is [`MAX_SECONDS`]. Numbers from outside are
/// checked (with a located error) before they get here; this is the last
/// guard, and the only conversion from float seconds the lints allow.
#[allow(clippy::disallowed_methods)]
pub fn secs(secs: f64) -> Duration {
    let clamped = if secs.is_nan() { 0.0 } else { secs.clamp(0.0, MAX_SECONDS) };
    Duration::from_secs_f64(clamped)
}

/// Whether a stored timestamp is older than `age` — a heartbeat gone quiet.
/// Missing or unreadable counts as old.
pub fn older_than(stored: Option<&str>, age: Duration) -> bool {
    let at = stored.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    at.is_none_or(|at| now().signed_duration_since(at).to_std().is_ok_and(|elapsed| elapsed > age))
}

/// Whether `secs` is a usable duration from outside: above 0, at most
/// [`MAX_SECONDS`].
pub fn valid_secs(secs: f64) -> bool {
    secs.is_finite() && secs > 0.0 && secs <= MAX_SECONDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_seconds_never_panic_and_are_bounded() {
        assert_eq!(secs(1.5), Duration::from_millis(1500));
        assert_eq!(secs(f64::NAN), Duration::ZERO);
        assert_eq!(secs(-3.0), Duration::ZERO);
        assert_eq!(secs(1e20), secs(MAX_SECONDS));
        assert_eq!(secs(f64::INFINITY), secs(MAX_SECONDS));
        assert!(valid_secs(120.0) && !valid_secs(1e20) && !valid_secs(0.0) && !valid_secs(f64::NAN));
    }
}
