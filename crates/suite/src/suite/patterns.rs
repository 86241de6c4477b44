//! The patterns a suite writes — `protected:` globs and `forbid:` regular
//! expressions — compiled the one way both the suite's validation and the
//! checks that use them at run time compile them, so a pattern that loads is
//! a pattern that runs.

use globset::{Glob, GlobBuilder};
use regex::{Regex, RegexBuilder};

/// A pattern as `.gitignore` reads one: `*` stays within a folder, `**`
/// crosses folders.
pub fn glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(true).build()
}

/// How much compiled automaton one pattern may take: a suite's pattern is
/// outside input, and the default (10 MiB) is generous for one line's check.
const SIZE_LIMIT: usize = 1 << 20;

/// A `forbid:` pattern, compiled as the check uses it.
pub fn forbid(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern).size_limit(SIZE_LIMIT).build().map_err(|e| match e {
        regex::Error::Syntax(text) => text.lines().last().unwrap_or_default().trim().to_string(),
        regex::Error::CompiledTooBig(_) => "the pattern is too large once compiled".to_string(),
        other => other.to_string(),
    })
}
