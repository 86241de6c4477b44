//! Timestamps as the store keeps them: RFC 3339 in UTC with millisecond
//! precision, so they sort as text and read well in exports.

/// The current time, formatted for storage.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
