//! Keeping file operations inside a workspace.
//!
//! Paths come from a model's reply, so they are hostile until checked: a
//! path is refused when it is empty, absolute, climbs with `..`, names
//! something inside `.git`, or reaches through a symbolic link that leads
//! out of the workspace (or nowhere). Every refusal names the path and the
//! reason, so the executor can report it back and the model can do better.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// What was being done to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAction {
    Write,
    Delete,
    Read,
}

impl fmt::Display for FileAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileAction::Write => "write",
            FileAction::Delete => "delete",
            FileAction::Read => "read",
        })
    }
}

/// A file operation on a workspace that was refused or failed, with the path
/// as given and why.
#[derive(Debug, Error)]
#[error("cannot {action} `{path}`: {reason}")]
pub struct FileError {
    pub action: FileAction,
    /// The path exactly as it was given.
    pub path: String,
    pub reason: Refusal,
}

/// Why a file operation was refused (or failed).
#[derive(Debug, Error)]
pub enum Refusal {
    #[error("the path is empty; give a path relative to the workspace root, e.g. `src/main.rs`")]
    EmptyPath,
    #[error("the path contains a NUL character")]
    NulCharacter,
    #[error("absolute paths are not allowed; give a path relative to the workspace root")]
    Absolute,
    #[error("`..` is not allowed; the path must stay inside the workspace")]
    ParentDir,
    #[error("`.git` holds the workspace's history and cannot be touched")]
    InsideGit,
    #[error("`{link}` is a symbolic link that leads outside the workspace (to {target})")]
    SymlinkEscape { link: String, target: String },
    #[error("`{link}` is a symbolic link whose target does not exist, so where it leads cannot be checked")]
    DanglingSymlink { link: String },
    #[error("the content is {size} bytes, over the limit of {limit} bytes; split the file or write less")]
    TooLarge { size: u64, limit: u64 },
    #[error("it is a directory, not a file")]
    IsDirectory,
    #[error("`{0}` is a file, so it cannot contain other files")]
    NotADirectory(String),
    #[error("there is no such file")]
    NotFound,
    #[error("it is not UTF-8 text")]
    NotText,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Checks a relative path's spelling and returns its normal components
/// (`.` dropped). Nothing on disk is looked at yet.
pub(crate) fn components(rel: &str) -> Result<Vec<String>, Refusal> {
    if rel.trim().is_empty() {
        return Err(Refusal::EmptyPath);
    }
    if rel.contains('\0') {
        return Err(Refusal::NulCharacter);
    }
    let path = Path::new(rel);
    if path.is_absolute() || rel.starts_with('/') {
        return Err(Refusal::Absolute);
    }
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => return Err(Refusal::ParentDir),
            Component::RootDir | Component::Prefix(_) => return Err(Refusal::Absolute),
            Component::Normal(name) => {
                let name = name.to_string_lossy();
                // Case-insensitive: on macOS `.GIT` is the same folder.
                if name.eq_ignore_ascii_case(".git") {
                    return Err(Refusal::InsideGit);
                }
                out.push(name.into_owned());
            }
        }
    }
    if out.is_empty() {
        return Err(Refusal::EmptyPath);
    }
    Ok(out)
}

/// Where the parents of a path stand on disk.
pub(crate) enum Parents {
    /// Every parent exists and is a directory inside the workspace.
    Exist,
    /// Some are missing (and will be created fresh, so they cannot be links).
    Missing,
}

/// Walks the parents of `parts` below `root` (canonical), refusing any that
/// is a file or a symbolic link leading outside the workspace.
pub(crate) fn check_parents(root: &Path, parts: &[String]) -> Result<Parents, Refusal> {
    let mut cur = root.to_path_buf();
    let parents = &parts[..parts.len().saturating_sub(1)];
    for (i, part) in parents.iter().enumerate() {
        cur.push(part);
        let shown = parts[..=i].join("/");
        match std::fs::symlink_metadata(&cur) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Parents::Missing),
            Err(e) => return Err(Refusal::Io(e)),
            Ok(m) if m.file_type().is_symlink() => {
                let target = inside(root, &cur, &shown)?;
                if !target.is_dir() {
                    return Err(Refusal::NotADirectory(shown));
                }
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Refusal::NotADirectory(shown)),
        }
    }
    Ok(Parents::Exist)
}

/// The canonical target of the link at `link`, if it lies inside `root`
/// (and not inside its `.git`: a link must not be a way into the history).
pub(crate) fn inside(root: &Path, link: &Path, shown: &str) -> Result<PathBuf, Refusal> {
    match std::fs::canonicalize(link) {
        Ok(target) if target.starts_with(root.join(".git")) => Err(Refusal::InsideGit),
        Ok(target) if target.starts_with(root) => Ok(target),
        Ok(target) => Err(Refusal::SymlinkEscape { link: shown.to_string(), target: target.display().to_string() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Refusal::DanglingSymlink { link: shown.to_string() }),
        Err(e) => Err(Refusal::Io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_rules() {
        assert_eq!(components("./src//main.rs").unwrap(), vec!["src", "main.rs"]);
        assert!(matches!(components(""), Err(Refusal::EmptyPath)));
        assert!(matches!(components("./"), Err(Refusal::EmptyPath)));
        assert!(matches!(components("/etc/passwd"), Err(Refusal::Absolute)));
        assert!(matches!(components("a/../../x"), Err(Refusal::ParentDir)));
        assert!(matches!(components("a/.."), Err(Refusal::ParentDir)));
        assert!(matches!(components(".git/config"), Err(Refusal::InsideGit)));
        assert!(matches!(components("sub/.GIT/hooks/pre-commit"), Err(Refusal::InsideGit)));
        assert!(matches!(components("a\0b"), Err(Refusal::NulCharacter)));
        assert_eq!(components(".gitignore").unwrap(), vec![".gitignore"]);
    }
}
