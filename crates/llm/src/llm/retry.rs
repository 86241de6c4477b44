//! Which failures of one HTTP attempt are worth another try, and the backoff
//! schedule between tries (exponential with jitter, from `backon`).
//!
//! Retried: timeouts, connection failures, dropped connections, 429 and 5xx —
//! the server was busy, starting or briefly gone. Not retried: other 4xx (the
//! same request would be rejected again) and answers that are not chat
//! completions. A 429's `Retry-After` (or OpenAI's `retry-after-ms`) replaces
//! the backoff when it is longer; one longer than the configured maximum ends
//! the retries at once, so a run fails clearly instead of hanging for an hour.

use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::HeaderMap;

use super::config::LlmConfig;

/// Why one HTTP attempt failed.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// The attempt ran out of its time limit.
    Timeout,
    /// No connection could be made (refused, DNS, TLS handshake).
    Connect(String),
    /// The connection broke before a whole answer arrived.
    Broken(String),
    /// The server answered with a non-success status.
    Status { status: u16, body: String, retry_after: Option<Duration> },
    /// A 2xx answer that is not a chat completion.
    BadResponse(String),
    /// The answer is larger than the configured limit (not read further).
    TooLarge,
}

impl AttemptError {
    pub fn from_reqwest(err: reqwest::Error) -> AttemptError {
        if err.is_timeout() {
            AttemptError::Timeout
        } else if err.is_connect() {
            AttemptError::Connect(root_cause(&err))
        } else {
            AttemptError::Broken(root_cause(&err))
        }
    }

    /// What went wrong, for a log line: never the server's body, which may
    /// quote the request (and the key) back.
    pub fn summary(&self) -> String {
        match self {
            AttemptError::Timeout => "no answer in time".to_string(),
            AttemptError::Connect(why) => format!("cannot connect: {why}"),
            AttemptError::Broken(why) => format!("connection broken: {why}"),
            AttemptError::Status { status, .. } => format!("the server answered {status}"),
            AttemptError::BadResponse(_) => "not a chat completion".to_string(),
            AttemptError::TooLarge => "reply over the size limit".to_string(),
        }
    }

    pub fn is_retryable(&self) -> bool {
        match self {
            AttemptError::Timeout | AttemptError::Connect(_) | AttemptError::Broken(_) => true,
            AttemptError::Status { status, .. } => *status == 429 || *status >= 500,
            AttemptError::BadResponse(_) | AttemptError::TooLarge => false,
        }
    }
}

/// The most specific description in an error's source chain: reqwest's own
/// message only repeats the URL, while the innermost cause says "connection
/// refused" or "connection closed before message completed".
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = err;
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::ConnectionReset => "connection reset".to_string(),
                _ => io.to_string(),
            };
        }
        innermost = cause;
        source = cause.source();
    }
    innermost.to_string()
}

/// The wait a server asks for: `retry-after-ms` (OpenAI) or `Retry-After` in
/// seconds. The HTTP-date form is ignored (the backoff applies instead): model
/// servers send seconds.
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    // A wait too long for a Duration (`Retry-After: 1e20`) is simply longer
    // than any limit: Duration::MAX, which ends the retries.
    let duration = |secs: f64| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX);
    number("retry-after-ms").map(|ms| duration(ms / 1000.0)).or_else(|| number("retry-after").map(duration))
}

/// How many times to retry and how long to wait in between.
#[derive(Clone, Debug)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    pub fn from_config(config: &LlmConfig) -> RetryPolicy {
        RetryPolicy {
            max_retries: config.max_retries,
            base_delay: config.retry_base_delay,
            max_delay: config.retry_max_delay.max(config.retry_base_delay),
            max_retry_after: config.max_retry_after,
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries are
    /// used up; returns the last result and how many retries were made.
    pub async fn run<T, F, Fut>(&self, attempt: F) -> (Result<T, AttemptError>, u32)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        // Jitter spreads the retries of many concurrent trajectories hitting
        // one overloaded server, so they do not come back in lockstep.
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_retries as usize)
            .with_jitter();
        let mut retries = 0u32;
        // A model that ran out of time once will most likely run out again
        // on the same request: one more try, not the whole retry budget.
        let timeouts = std::sync::atomic::AtomicU32::new(0);
        let result = attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|e| {
                if matches!(e, AttemptError::Timeout) {
                    return timeouts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 1;
                }
                e.is_retryable()
            })
            .adjust(|err, delay| self.adjust(err, delay))
            .notify(|err, delay| {
                retries += 1;
                tracing::debug!(error = %err.summary(), delay_ms = delay.as_millis() as u64, "LLM call failed; retrying");
            })
            .await;
        (result, retries)
    }

    /// Honours a 429's requested wait: never shorter than the server asked,
    /// and no retry at all when it asks for more than `max_retry_after`.
    fn adjust(&self, err: &AttemptError, delay: Option<Duration>) -> Option<Duration> {
        let delay = delay?;
        match err {
            AttemptError::Status { retry_after: Some(wait), .. } => {
                (*wait <= self.max_retry_after).then(|| delay.max(*wait))
            }
            _ => Some(delay),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(5),
        }
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let status = |status| AttemptError::Status { status, body: String::new(), retry_after: None };
        assert!(AttemptError::Timeout.is_retryable());
        assert!(AttemptError::Connect("refused".into()).is_retryable());
        assert!(status(429).is_retryable());
        assert!(status(503).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(!status(401).is_retryable());
        assert!(!status(404).is_retryable());
        assert!(!AttemptError::BadResponse("x".into()).is_retryable());
    }

    #[test]
    fn retry_after_wins_when_longer_and_ends_retries_when_too_long() {
        let p = policy();
        let asked = |secs| AttemptError::Status {
            status: 429,
            body: String::new(),
            retry_after: Some(Duration::from_secs(secs)),
        };
        assert_eq!(p.adjust(&asked(2), Some(Duration::from_millis(10))), Some(Duration::from_secs(2)));
        assert_eq!(p.adjust(&asked(60), Some(Duration::from_millis(10))), None);
        assert_eq!(p.adjust(&asked(2), None), None, "retries used up");
        assert_eq!(p.adjust(&AttemptError::Timeout, Some(Duration::from_millis(10))), Some(Duration::from_millis(10)));
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(parse_retry_after(&h), None);
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(1500)));
        let mut huge = HeaderMap::new();
        huge.insert("retry-after", "1e20".parse().unwrap());
        assert_eq!(parse_retry_after(&huge), Some(Duration::MAX));
        huge.insert("retry-after-ms", "1e300".parse().unwrap());
        assert_eq!(parse_retry_after(&huge), Some(Duration::MAX));
        let mut date = HeaderMap::new();
        date.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(parse_retry_after(&date), None);
    }

    #[tokio::test]
    async fn bounded_attempts() {
        let mut calls = 0;
        let (result, retries) = policy()
            .run(|| {
                calls += 1;
                async { Err::<(), _>(AttemptError::Status { status: 503, body: String::new(), retry_after: None }) }
            })
            .await;
        assert!(matches!(result, Err(AttemptError::Status { status: 503, .. })));
        assert_eq!((calls, retries), (4, 3));
    }

    #[tokio::test]
    async fn a_timeout_is_tried_once_more_not_the_whole_budget() {
        let mut calls = 0;
        let (result, retries) = policy()
            .run(|| {
                calls += 1;
                async { Err::<(), _>(AttemptError::Timeout) }
            })
            .await;
        assert!(matches!(result, Err(AttemptError::Timeout)));
        assert_eq!((calls, retries), (2, 1));
    }
}
