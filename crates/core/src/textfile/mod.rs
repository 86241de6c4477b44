//! Text files people write — suites, task files, problem files — read
//! strictly: a file that is not text, a key that is not known, a value of the
//! wrong type is an error that names the file, line, column and field, in
//! plain words, and says how to fix it.
//!
//! The suite reader and every other reader of a person's YAML share these
//! errors and readers, so they sit below all of them.

mod yaml;

use std::fmt;
use std::path::PathBuf;

pub use yaml::{decode_text, issues_at, locate, parse_strict, read_text};

/// A place in a suite file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// One problem found in a suite file.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteIssue {
    pub location: SourceLocation,
    /// Dotted path of the offending field, e.g. `tasks[1].weights.eval`.
    pub field: String,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for SuiteIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location)?;
        if !self.field.is_empty() {
            write!(f, "field `{}`: ", self.field)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Why a suite did not load: every problem found, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteError {
    pub issues: Vec<SuiteIssue>,
}

impl SuiteError {
    pub fn one(issue: SuiteIssue) -> Self {
        SuiteError { issues: vec![issue] }
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}
