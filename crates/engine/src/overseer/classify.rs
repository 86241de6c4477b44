//! Telling an environmental failure from a logical one (seed 003).
//!
//! A check that could not run says nothing about the work: the binary is
//! missing, the command is not executable, it ran out of time, it was killed,
//! the network or the machine failed it. Such a failure is *environmental*:
//! it is retried, and if it persists it is reported as such so the goal
//! gradient reads it as "change the path", not "the approach is wrong". A
//! check that ran and said no is *logical*.
//!
//! Some environmental failures show only in the output (a tool that prints
//! `Could not resolve host` and exits 1). Those patterns are consulted only
//! when the run's own measurement did not already show logical failures —
//! the runner decides that order per kind of overseer.

use std::sync::LazyLock;

use regex::RegexSet;

use crate::process::ProcessEnd;

/// Why a run failed for environmental reasons, judged from how it ended
/// alone: it could not start, was not executable or not found (126, 127),
/// timed out, was cancelled or killed by a signal.
pub fn hard_environmental(end: &ProcessEnd) -> Option<String> {
    match end {
        ProcessEnd::Exited(_) => match (end.exit_code(), end.signal()) {
            (Some(126), _) => Some("the command is not executable (exit code 126)".to_string()),
            (Some(127), _) => Some("the command was not found (exit code 127)".to_string()),
            (None, Some(sig)) => Some(format!("the command was killed by signal {sig}")),
            _ => None,
        },
        other => Some(format!("the command {}", other.describe())),
    }
}

/// Lines that say the tool or the machine failed, not the work.
static ENVIRONMENTAL_OUTPUT: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([
        // The shell could not find or run the program.
        r"(?m)^(?:\S*sh|bash|zsh|dash)(?:: line \d+|: \d+)?: .*(?:command not found|not found|Permission denied)\s*$",
        r"(?i)\bcommand not found\b",
        // A tool asked for a subcommand or module that is not installed.
        r"no such command: `",
        r"(?m)^\S*python[\d.]*: No module named ",
        r"(?m)^\S*python[\d.]*: can't open file ",
        // The network.
        r"(?i)could not resolve host|temporary failure in name resolution|name or service not known",
        r"(?i)network is unreachable|no route to host|connection refused|connection reset by peer",
        r"(?i)connection timed out|operation timed out|TLS handshake|SSL_connect|certificate verify failed",
        r"\b(?:ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN)\b",
        r"(?i)failed to download|spurious network error|getaddrinfo",
        // The machine.
        r"(?i)no space left on device|too many open files|cannot allocate memory|out of memory",
    ])
    .expect("valid regexes")
});

/// The first line of `output` that shows an environmental failure.
pub fn environmental_output(output: &str) -> Option<String> {
    output
        .lines()
        .find(|line| ENVIRONMENTAL_OUTPUT.is_match(line))
        .map(|line| format!("the output says the environment failed: {}", line.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_and_network_messages_are_environmental() {
        for line in [
            "sh: 1: cargo-nextest: not found",
            "bash: line 1: pytest: command not found",
            "error: no such command: `nextest`",
            "/usr/bin/python3: No module named pytest",
            "curl: (6) Could not resolve host: example.com",
            "npm ERR! code ENOTFOUND",
            "error: failed to download `serde v1.0.0`",
            "OSError: [Errno 28] No space left on device",
        ] {
            assert!(environmental_output(line).is_some(), "{line}");
        }
    }

    #[test]
    fn a_failing_assertion_is_not_environmental() {
        for line in [
            "assertion `left == right` failed",
            "ModuleNotFoundError: No module named 'mypkg'",
            "test result: FAILED. 1 passed; 2 failed",
            "error[E0425]: cannot find value `c` in this scope",
        ] {
            assert!(environmental_output(line).is_none(), "{line}");
        }
    }
}
