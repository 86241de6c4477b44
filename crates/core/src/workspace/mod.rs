//! A trajectory's own copy of an agent task's workspace, with a git history of
//! its own so every executor output is a commit and a trajectory can go back
//! to any earlier state (RevertAndBranch) without touching its siblings.
//!
//! [`Workspace::create`] copies the task's folder (everything but `.git`)
//! into the trajectory's directory and commits it. After that:
//!
//! - [`Workspace::write_file`] / [`Workspace::delete_file`] are the only way
//!   model output reaches the disk, and they refuse anything that would land
//!   outside the workspace, inside `.git`, or over the size limit
//!   ([`FileError`] names the path and the reason);
//! - [`Workspace::commit`] records the state after an execution and measures
//!   how much it changed ([`ArtifactReference`]), the structural churn the
//!   convergence delta uses;
//! - [`Workspace::reset_to`] puts an earlier state back, [`Workspace::diff`]
//!   shows what changed between two states.
//!
//! Git is driven through its command line with a fixed identity and the
//! user's global configuration ignored, so it works on a machine where git
//! was never configured and is not affected by hooks, signing or aliases.

mod path;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::process::Command;

pub use path::{FileAction, FileError, Refusal};
use path::{Parents, check_parents, components, inside};

/// What one execution produced: the commit holding the workspace state after
/// it, and how much it changed (structural churn for the convergence delta).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactReference {
    /// The git commit id of the workspace state.
    pub commit: String,
    pub files_changed: u32,
    /// Lines added plus lines removed against the previous state.
    pub lines_changed: u32,
}

/// Limits and identity of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkspaceConfig {
    /// Largest file (bytes) that may be written or read through the workspace.
    pub max_file_bytes: u64,
    /// At most this many paths come back from [`Workspace::list_files`].
    pub max_listed_files: usize,
    /// A longer [`Workspace::diff`] is cut here (bytes), with a marker.
    pub max_diff_bytes: usize,
    /// Author and committer of the workspace's commits.
    pub author_name: String,
    pub author_email: String,
    /// Patterns (gitignore syntax) never committed, written to the
    /// repository's `.git/info/exclude`: what builds and test runs leave
    /// behind (bytecode caches, build folders) is not part of a state.
    pub exclude: Vec<String>,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        WorkspaceConfig {
            max_file_bytes: 1024 * 1024,
            max_listed_files: 5000,
            max_diff_bytes: 512 * 1024,
            author_name: "Attractor".to_string(),
            author_email: "attractor@localhost".to_string(),
            exclude: ["__pycache__/", "*.pyc", ".pytest_cache/", "/target/", "node_modules/"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// Why a workspace operation failed.
#[derive(Debug, Error)]
pub enum WorkspaceError {
    #[error("the task's workspace {0} is not a directory; check the task's `workspace:` path")]
    SourceNotADirectory(PathBuf),
    #[error("{0} already exists and is not empty; a trajectory's workspace must start in a new directory")]
    DestinationNotEmpty(PathBuf),
    #[error("{0} is not a workspace (it has no .git directory)")]
    NotAWorkspace(PathBuf),
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("git is not installed or not on PATH; install it (scripts/setup.sh does)")]
    GitMissing,
    #[error("`git {args}` failed ({status}): {stderr}")]
    Git { args: String, status: String, stderr: String },
    #[error("`{0}` is not a commit id (expected 4 to 64 hexadecimal digits)")]
    BadCommit(String),
    #[error("commit {0} is not in this workspace's history")]
    UnknownCommit(String),
    #[error(transparent)]
    File(#[from] FileError),
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + 'a {
    move |source| WorkspaceError::Io { action, path: path.to_path_buf(), source }
}

/// One file's change between two states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    /// Lines added and removed; `None` for a binary file.
    pub added: Option<u32>,
    pub removed: Option<u32>,
}

/// The files of a workspace, as far as listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileListing {
    /// Paths relative to the root with `/` separators, sorted.
    pub files: Vec<String>,
    /// More files exist than were listed.
    pub truncated: bool,
    /// How many files exist (listed or not).
    pub total: usize,
}

/// A trajectory's working copy of an agent task's files, under git.
#[derive(Debug)]
pub struct Workspace {
    /// Canonical, so containment checks compare like with like.
    root: PathBuf,
    config: WorkspaceConfig,
    /// The commit the last [`commit`](Self::commit) or
    /// [`reset_to`](Self::reset_to) left us at; churn is measured from here
    /// (not from `HEAD~1`, which an agent that commits by itself would move).
    head: Option<String>,
    /// The files the last commit changed, `(from, to, changes)`: the
    /// protection check asks for the same diff right after, and a diff
    /// between two commits never changes, so it is not asked of git twice.
    last_changes: Option<(String, String, Vec<FileChange>)>,
}

/// Distinguishes temporary files of concurrent writes in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// Copies `source` (everything except `.git` folders) into `dest`, which
    /// must not exist or be empty, and commits the copy as the first state.
    pub async fn create(source: &Path, dest: &Path, config: WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        if !source.is_dir() {
            return Err(WorkspaceError::SourceNotADirectory(source.to_path_buf()));
        }
        let root = prepare_dest(dest).await?;
        let source = tokio::fs::canonicalize(source).await.map_err(io_err("resolve", source))?;
        let (src, dst) = (source.clone(), root.clone());
        tokio::task::spawn_blocking(move || copy_tree(&src, &dst, &dst)).await.map_err(|e| WorkspaceError::Io {
            action: "copy into",
            path: root.clone(),
            source: std::io::Error::other(e.to_string()),
        })??;
        let mut ws = Workspace { root, config, head: None, last_changes: None };
        ws.init_repo().await?;
        ws.commit(&format!("workspace copied from {}", source.display())).await?;
        Ok(ws)
    }

    /// An empty workspace in `dest` (for a task without a `workspace:`), with
    /// an empty first commit.
    pub async fn init(dest: &Path, config: WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        let root = prepare_dest(dest).await?;
        let mut ws = Workspace { root, config, head: None, last_changes: None };
        ws.init_repo().await?;
        ws.commit("empty workspace").await?;
        Ok(ws)
    }

    /// A workspace made earlier (e.g. when a trajectory resumes after a restart).
    pub async fn open(root: &Path, config: WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        if !root.join(".git").is_dir() {
            return Err(WorkspaceError::NotAWorkspace(root.to_path_buf()));
        }
        let root = tokio::fs::canonicalize(root).await.map_err(io_err("resolve", root))?;
        let mut ws = Workspace { root, config, head: None, last_changes: None };
        ws.head = Some(ws.git(&["rev-parse", "--verify", "HEAD"]).await?.trim().to_string());
        Ok(ws)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> &WorkspaceConfig {
        &self.config
    }

    /// The commit the workspace was last committed or reset to.
    pub fn head(&self) -> Option<&str> {
        self.head.as_deref()
    }

    /// The id of `commit`'s tree: the same for the same files, whenever and
    /// wherever they were committed (what a measurement can be reused by).
    pub async fn tree_id(&self, commit: &str) -> Result<String, WorkspaceError> {
        check_commit_id(commit)?;
        Ok(self.git(&["rev-parse", &format!("{commit}^{{tree}}")]).await?.trim().to_string())
    }

    async fn init_repo(&self) -> Result<(), WorkspaceError> {
        self.git(&["-c", "init.defaultBranch=attractor", "init", "-q"]).await?;
        if !self.config.exclude.is_empty() {
            let info = self.root.join(".git").join("info");
            tokio::fs::create_dir_all(&info).await.map_err(io_err("create", &info))?;
            let exclude = info.join("exclude");
            let text = self.config.exclude.iter().map(|p| format!("{p}\n")).collect::<String>();
            tokio::fs::write(&exclude, text).await.map_err(io_err("write", &exclude))?;
        }
        Ok(())
    }

    /// Runs git in the workspace and returns its stdout.
    async fn git(&self, args: &[&str]) -> Result<String, WorkspaceError> {
        let c = &self.config;
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "gc.auto=0",
            // Else every commit starts a `git maintenance run --auto`
            // process of its own: one more process per iteration for
            // repositories that live a few minutes.
            "-c",
            "maintenance.auto=false",
            "-c",
            "core.quotepath=false",
            "-c",
            "core.autocrlf=false",
            // Hooks would run code from the workspace on every commit.
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(&self.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("GIT_AUTHOR_NAME", &c.author_name)
        .env("GIT_AUTHOR_EMAIL", &c.author_email)
        .env("GIT_COMMITTER_NAME", &c.author_name)
        .env("GIT_COMMITTER_EMAIL", &c.author_email)
        // The user's own git configuration (aliases, signing, templates,
        // excludes) must not change what a workspace records.
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
        // Inherited from a surrounding git process (a hook, a test run inside
        // `git rebase -x`), these would point git at another repository.
        for var in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES"] {
            cmd.env_remove(var);
        }
        let failed = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => WorkspaceError::GitMissing,
            _ => WorkspaceError::Io { action: "run git in", path: self.root.clone(), source: e },
        };
        let child = crate::process::launcher::spawn(cmd).await.map_err(failed)?;
        let out = child.wait_with_output().await.map_err(failed)?;
        if !out.status.success() {
            return Err(WorkspaceError::Git {
                args: args.join(" "),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Commits the whole workspace (files `.gitignore` ignores stay out) and
    /// says how much changed since the previous state. Every call makes a
    /// commit, also when nothing changed, so each execution has its own.
    pub async fn commit(&mut self, message: &str) -> Result<ArtifactReference, WorkspaceError> {
        self.git(&["add", "-A"]).await?;
        let message = if message.trim().is_empty() { "(no message)" } else { message };
        self.git(&["commit", "-q", "--allow-empty", "--no-verify", "-m", message]).await?;
        let commit = self.git(&["rev-parse", "--verify", "HEAD"]).await?.trim().to_string();
        let changes = match &self.head {
            Some(prev) => {
                let changes = self.changes(prev, &commit).await?;
                self.last_changes = Some((prev.clone(), commit.clone(), changes.clone()));
                changes
            }
            None => self.parse_numstat(
                &self
                    .git(&["diff-tree", "-z", "--root", "-r", "--no-renames", "--numstat", "--no-commit-id", &commit])
                    .await?,
            ),
        };
        self.head = Some(commit.clone());
        Ok(ArtifactReference {
            commit,
            files_changed: u32::try_from(changes.len()).unwrap_or(u32::MAX),
            lines_changed: changes
                .iter()
                .map(|c| c.added.unwrap_or(0).saturating_add(c.removed.unwrap_or(0)))
                .fold(0u32, u32::saturating_add),
        })
    }

    /// The files that differ between two commits, with their line counts.
    pub async fn changes(&self, from: &str, to: &str) -> Result<Vec<FileChange>, WorkspaceError> {
        check_commit_id(from)?;
        check_commit_id(to)?;
        if let Some((f, t, changes)) = &self.last_changes
            && f == from
            && t == to
        {
            return Ok(changes.clone());
        }
        let out = self.git(&["diff", "-z", "--numstat", "--no-renames", "--no-ext-diff", from, to, "--"]).await?;
        Ok(self.parse_numstat(&out))
    }

    /// `--numstat -z` output: one `added<TAB>removed<TAB>path` record per
    /// NUL, the path as it is (without `-z`, git quotes a path holding `"`,
    /// `\` or a tab, and it would match nothing).
    fn parse_numstat(&self, out: &str) -> Vec<FileChange> {
        out.split('\0')
            .filter_map(|line| {
                let mut parts = line.splitn(3, '\t');
                let (added, removed, path) = (parts.next()?, parts.next()?, parts.next()?);
                Some(FileChange { path: path.to_string(), added: added.parse().ok(), removed: removed.parse().ok() })
            })
            .collect()
    }

    /// Puts the workspace back exactly as it was at `commit`: tracked files
    /// restored, files added since removed (ignored files such as build
    /// output stay). Later commits stay in the history, so the trajectory can
    /// still diff against them.
    pub async fn reset_to(&mut self, commit: &str) -> Result<(), WorkspaceError> {
        check_commit_id(commit)?;
        let full = self
            .git(&["rev-parse", "--verify", "--quiet", &format!("{commit}^{{commit}}")])
            .await
            .map_err(|_| WorkspaceError::UnknownCommit(commit.to_string()))?
            .trim()
            .to_string();
        self.git(&["reset", "-q", "--hard", &full]).await?;
        self.git(&["clean", "-f", "-d", "-q"]).await?;
        self.head = Some(full);
        Ok(())
    }

    /// Files changed since the last commit, tracked or new (not ignored).
    pub async fn uncommitted_changes(&self) -> Result<Vec<String>, WorkspaceError> {
        // One process for both kinds: `XY path` records, `??` for new files.
        // No optional locks: a status must not rewrite the index (a check
        // that only looks must not race the next commit for its lock).
        let status = self
            .git(&["--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"])
            .await?;
        let mut out: Vec<String> = status
            .split('\0')
            .filter_map(|record| record.get(3..))
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Files in the workspace that git ignores (build output, caches, what
    /// the workspace's `exclude` lists): never committed, so never in a diff.
    pub async fn ignored_files(&self) -> Result<Vec<String>, WorkspaceError> {
        let out = self.git(&["ls-files", "-z", "--others", "--ignored", "--exclude-standard"]).await?;
        Ok(out.split('\0').filter(|p| !p.is_empty()).map(String::from).collect())
    }

    /// Puts `paths` back as they were at `commit` (a file that did not exist
    /// then is removed) and commits that as the next state: how a change to
    /// a protected file is undone while the rest of an execution stays.
    pub async fn restore_paths(
        &mut self,
        commit: &str,
        paths: &[String],
        message: &str,
    ) -> Result<ArtifactReference, WorkspaceError> {
        check_commit_id(commit)?;
        for path in paths {
            let existed = self.git(&["cat-file", "-e", &format!("{commit}:{path}")]).await.is_ok();
            if existed {
                // A path, not a pattern: `*`, `?` and `:` mean themselves.
                self.git(&["--literal-pathspecs", "checkout", commit, "--", path]).await?;
            } else {
                // Never follows a link out: the path is removed, not its
                // target; a folder (an embedded repository) with all it holds.
                let full = self.root.join(path);
                match std::fs::symlink_metadata(&full) {
                    Ok(m) if m.is_dir() => tokio::fs::remove_dir_all(&full).await.map_err(io_err("remove", &full))?,
                    Ok(_) => tokio::fs::remove_file(&full).await.map_err(io_err("remove", &full))?,
                    Err(_) => {}
                }
            }
        }
        self.commit(message).await
    }

    /// Makes this workspace's files those of `source` — another workspace's
    /// result — and commits that as the next state: everything but `.git` is
    /// removed, then `source` (everything but its `.git`) is copied in. A
    /// split task's own workspace receives its integration trajectory's
    /// result this way, a parallel group's the winning sample's.
    pub async fn replace_with(&mut self, source: &Path, message: &str) -> Result<ArtifactReference, WorkspaceError> {
        if !source.is_dir() {
            return Err(WorkspaceError::SourceNotADirectory(source.to_path_buf()));
        }
        let source = tokio::fs::canonicalize(source).await.map_err(io_err("resolve", source))?;
        if source != self.root {
            let root = self.root.clone();
            tokio::task::spawn_blocking(move || {
                for entry in std::fs::read_dir(&root).map_err(io_err("read", &root))? {
                    let entry = entry.map_err(io_err("read", &root))?;
                    if entry.file_name().to_string_lossy().eq_ignore_ascii_case(".git") {
                        continue;
                    }
                    let path = entry.path();
                    let is_dir = entry.file_type().map_err(io_err("inspect", &path))?.is_dir();
                    let removed = if is_dir { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
                    removed.map_err(io_err("remove", &path))?;
                }
                copy_tree(&source, &root, &root)
            })
            .await
            .map_err(|e| WorkspaceError::Io {
                action: "copy into",
                path: self.root.clone(),
                source: std::io::Error::other(e.to_string()),
            })??;
        }
        self.commit(message).await
    }

    /// The text of `path` as it was at `commit`; `None` when it did not
    /// exist there, was not a file, or is larger than `max_file_bytes`.
    pub async fn file_at(&self, commit: &str, path: &str) -> Result<Option<String>, WorkspaceError> {
        check_commit_id(commit)?;
        let object = format!("{commit}:{path}");
        // Two git calls: the size (which fails when the path is missing), then
        // the text (which fails when it is not a file).
        let Ok(size) = self.git(&["cat-file", "-s", &object]).await else { return Ok(None) };
        if size.trim().parse::<u64>().map_or(true, |n| n > self.config.max_file_bytes) {
            return Ok(None);
        }
        Ok(self.git(&["cat-file", "blob", &object]).await.ok())
    }

    /// The unified diff between two commits, cut at `max_diff_bytes`.
    pub async fn diff(&self, from: &str, to: &str) -> Result<String, WorkspaceError> {
        check_commit_id(from)?;
        check_commit_id(to)?;
        let mut text = self.git(&["diff", "--no-color", "--no-ext-diff", "--no-textconv", from, to, "--"]).await?;
        let limit = self.config.max_diff_bytes;
        if text.len() > limit {
            let cut = floor_char_boundary(&text, limit);
            let dropped = text.len() - cut;
            text.truncate(cut);
            text.push_str(&format!("\n[… diff cut here: {dropped} more bytes]\n"));
        }
        Ok(text)
    }

    /// The workspace's files (tracked and new, not those `.gitignore`
    /// ignores), sorted, at most `max_listed_files` of them.
    pub async fn list_files(&self) -> Result<FileListing, WorkspaceError> {
        let out = self.git(&["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).await?;
        let mut files: Vec<String> = out
            .split('\0')
            .filter(|p| !p.is_empty())
            // A file deleted since the last commit is still in the index.
            .filter(|p| std::fs::symlink_metadata(self.root.join(p)).is_ok())
            .map(str::to_string)
            .collect();
        files.sort();
        files.dedup();
        let total = files.len();
        let truncated = total > self.config.max_listed_files;
        files.truncate(self.config.max_listed_files);
        Ok(FileListing { files, truncated, total })
    }

    /// Reads a text file of the workspace. The same path rules as for writing
    /// apply, so a link to a file outside the workspace is never read.
    pub fn read_file(&self, rel: &str) -> Result<String, FileError> {
        let fail = |reason| FileError { action: FileAction::Read, path: rel.to_string(), reason };
        let parts = components(rel).map_err(fail)?;
        match check_parents(&self.root, &parts).map_err(fail)? {
            Parents::Exist => {}
            Parents::Missing => return Err(fail(Refusal::NotFound)),
        }
        let full = join(&self.root, &parts);
        let meta = match std::fs::symlink_metadata(&full) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(fail(Refusal::NotFound)),
            Err(e) => return Err(fail(Refusal::Io(e))),
            Ok(m) => m,
        };
        let target = if meta.file_type().is_symlink() { inside(&self.root, &full, rel).map_err(fail)? } else { full };
        let meta = std::fs::metadata(&target).map_err(|e| fail(Refusal::Io(e)))?;
        if meta.is_dir() {
            return Err(fail(Refusal::IsDirectory));
        }
        if meta.len() > self.config.max_file_bytes {
            return Err(fail(Refusal::TooLarge { size: meta.len(), limit: self.config.max_file_bytes }));
        }
        let bytes = std::fs::read(&target).map_err(|e| fail(Refusal::Io(e)))?;
        String::from_utf8(bytes).map_err(|_| fail(Refusal::NotText))
    }

    /// Writes `content` to the workspace file `rel`, creating folders as
    /// needed. Refused, with nothing written, when the path is unsafe (see
    /// [`Refusal`]) or the content is over `max_file_bytes`.
    ///
    /// The content goes to a temporary file that is then renamed over the
    /// target, so an existing file's inode is never written to (a hard link
    /// to a file outside the workspace stays untouched); its permissions are
    /// kept, so a script stays executable.
    pub fn write_file(&self, rel: &str, content: &[u8]) -> Result<(), FileError> {
        let fail = |reason| FileError { action: FileAction::Write, path: rel.to_string(), reason };
        let parts = components(rel).map_err(fail)?;
        let size = content.len() as u64;
        if size > self.config.max_file_bytes {
            return Err(fail(Refusal::TooLarge { size, limit: self.config.max_file_bytes }));
        }
        check_parents(&self.root, &parts).map_err(fail)?;
        let full = join(&self.root, &parts);
        let mut mode = None;
        match std::fs::symlink_metadata(&full) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(Refusal::Io(e))),
            Ok(m) if m.file_type().is_symlink() => {
                // A link to a file inside the workspace may be written through.
                let target = inside(&self.root, &full, rel).map_err(fail)?;
                if target.is_dir() {
                    return Err(fail(Refusal::IsDirectory));
                }
                return self.write_file(&relative(&self.root, &target), content).map_err(|mut e| {
                    e.path = rel.to_string();
                    e
                });
            }
            Ok(m) if m.is_dir() => return Err(fail(Refusal::IsDirectory)),
            Ok(m) => mode = Some(m.permissions()),
        }
        let parent = full.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(parent).map_err(|e| fail(Refusal::Io(e)))?;
        // Checked again now that the folders exist: they must resolve inside.
        let resolved = std::fs::canonicalize(parent).map_err(|e| fail(Refusal::Io(e)))?;
        if resolved.starts_with(self.root.join(".git")) {
            return Err(fail(Refusal::InsideGit));
        }
        if !resolved.starts_with(&self.root) {
            return Err(fail(Refusal::SymlinkEscape {
                link: parts[..parts.len() - 1].join("/"),
                target: resolved.display().to_string(),
            }));
        }
        let name = parts.last().map(String::as_str).unwrap_or("file");
        let temp = parent.join(format!(
            ".{name}.attractor-{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
            f.write_all(content)?;
            if let Some(perms) = mode {
                f.set_permissions(perms)?;
            }
            drop(f);
            std::fs::rename(&temp, &full)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(fail(Refusal::Io(e)));
        }
        Ok(())
    }

    /// Deletes the workspace file `rel` (a symbolic link is removed itself,
    /// never its target). Refused when the path is unsafe, missing, or a
    /// directory.
    pub fn delete_file(&self, rel: &str) -> Result<(), FileError> {
        let fail = |reason| FileError { action: FileAction::Delete, path: rel.to_string(), reason };
        let parts = components(rel).map_err(fail)?;
        match check_parents(&self.root, &parts).map_err(fail)? {
            Parents::Exist => {}
            Parents::Missing => return Err(fail(Refusal::NotFound)),
        }
        let full = join(&self.root, &parts);
        match std::fs::symlink_metadata(&full) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(fail(Refusal::NotFound)),
            Err(e) => Err(fail(Refusal::Io(e))),
            Ok(m) if m.is_dir() => Err(fail(Refusal::IsDirectory)),
            Ok(_) => std::fs::remove_file(&full).map_err(|e| fail(Refusal::Io(e))),
        }
    }

    /// A private folder for the executor's own files (the prompt given to an
    /// external agent), inside `.git` so it is never committed nor listed.
    pub async fn scratch_dir(&self) -> Result<PathBuf, WorkspaceError> {
        let dir = self.root.join(".git").join("attractor");
        tokio::fs::create_dir_all(&dir).await.map_err(io_err("create", &dir))?;
        Ok(dir)
    }
}

fn join(root: &Path, parts: &[String]) -> PathBuf {
    let mut p = root.to_path_buf();
    p.extend(parts);
    p
}

/// `target` (inside `root`) as a workspace path.
fn relative(root: &Path, target: &Path) -> String {
    let rel = target.strip_prefix(root).unwrap_or(target);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Commit ids are passed to git as arguments: only hex digits, so nothing
/// can be read as an option or a revision expression.
fn check_commit_id(commit: &str) -> Result<(), WorkspaceError> {
    if (4..=64).contains(&commit.len()) && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(WorkspaceError::BadCommit(commit.to_string()))
    }
}

/// The largest index ≤ `i` on a char boundary of `s`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    (0..=i).rev().find(|&j| s.is_char_boundary(j)).unwrap_or(0)
}

/// Makes `dest` (absent or empty) and returns it canonical.
async fn prepare_dest(dest: &Path) -> Result<PathBuf, WorkspaceError> {
    match tokio::fs::read_dir(dest).await {
        Ok(mut entries) => {
            if entries.next_entry().await.map_err(io_err("read", dest))?.is_some() {
                return Err(WorkspaceError::DestinationNotEmpty(dest.to_path_buf()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tokio::fs::create_dir_all(dest).await.map_err(io_err("create", dest))?;
        }
        Err(e) => return Err(io_err("read", dest)(e)),
    }
    tokio::fs::canonicalize(dest).await.map_err(io_err("resolve", dest))
}

/// Copies `src` into `dst` recursively: folders, files (with permissions)
/// and symbolic links as links. `.git` folders are skipped (the copy gets a
/// history of its own), and so is `skip` (the destination itself, when it
/// lies inside the source). Sockets, pipes and devices are not copied.
fn copy_tree(src: &Path, dst: &Path, skip: &Path) -> Result<(), WorkspaceError> {
    let entries = std::fs::read_dir(src).map_err(io_err("read", src))?;
    for entry in entries {
        let entry = entry.map_err(io_err("read", src))?;
        let name = entry.file_name();
        if name.to_string_lossy().eq_ignore_ascii_case(".git") {
            continue;
        }
        let from = entry.path();
        if from == skip {
            continue;
        }
        let to = dst.join(&name);
        let kind = entry.file_type().map_err(io_err("inspect", &from))?;
        if kind.is_symlink() {
            let target = std::fs::read_link(&from).map_err(io_err("read the link", &from))?;
            std::os::unix::fs::symlink(&target, &to).map_err(io_err("create the link", &to))?;
        } else if kind.is_dir() {
            std::fs::create_dir(&to).map_err(io_err("create", &to))?;
            copy_tree(&from, &to, skip)?;
        } else if kind.is_file() {
            std::fs::copy(&from, &to).map_err(io_err("copy", &from))?;
        }
    }
    Ok(())
}
