//! A bounded view of the workspace's files for a prompt.
//!
//! A model cannot be shown a whole repository, and should not be: the
//! strategy decides what matters. The view lists the files (up to a limit)
//! and includes the contents of as many as the byte budget allows, in an
//! order the strategy picks: everything in path order, documentation and
//! examples first (RetryAugmented), or the files related to the failing
//! tests first (FocusedRepair). Files are read through the workspace, so a
//! link leading out of it is never read into a prompt.

use serde::{Deserialize, Serialize};

use crate::workspace::{Workspace, WorkspaceError};

/// Files whose content is searched for related terms, at most.
const MAX_FILES_SEARCHED: usize = 500;

/// How much of the workspace a prompt shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ViewBudget {
    /// Paths listed at most.
    pub max_files_listed: usize,
    /// Bytes of one file's content at most (longer files are cut).
    pub max_file_bytes: usize,
    /// Bytes of file content in the whole prompt at most (0: list only).
    pub max_total_bytes: usize,
}

impl Default for ViewBudget {
    fn default() -> Self {
        ViewBudget { max_files_listed: 200, max_file_bytes: 16 * 1024, max_total_bytes: 64 * 1024 }
    }
}

impl ViewBudget {
    /// This budget with its content limits scaled (RetryAugmented doubles
    /// them, FocusedRepair halves them).
    pub fn scaled(self, factor: f64) -> ViewBudget {
        let scale = |n: usize| ((n as f64) * factor).round() as usize;
        ViewBudget { max_file_bytes: scale(self.max_file_bytes), max_total_bytes: scale(self.max_total_bytes), ..self }
    }
}

/// Which files come first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Focus {
    /// Path order.
    All,
    /// READMEs, docs/, examples/ and Markdown first.
    DocsFirst,
    /// Files whose path or content mentions one of these terms first; the
    /// others are listed without content.
    Related(Vec<String>),
}

/// One file of the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViewFile {
    pub path: String,
    /// `None` when only listed (over budget, unrelated, binary, unreadable).
    pub content: Option<String>,
    /// Why the content is missing or cut, when it is.
    pub note: Option<String>,
}

/// The files a prompt shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WorkspaceView {
    pub files: Vec<ViewFile>,
    /// Files that exist but are not listed.
    pub unlisted: usize,
    /// Every file git lists, in its order (what the prompt may name, such
    /// as the reply contract's example path, without asking git again).
    #[serde(skip)]
    pub listing: Vec<String>,
}

impl WorkspaceView {
    /// Reads the workspace's files within `budget`, in the order `focus` gives.
    pub async fn gather(ws: &Workspace, budget: ViewBudget, focus: &Focus) -> Result<WorkspaceView, WorkspaceError> {
        let listing = ws.list_files().await?;
        let mut paths = listing.files.clone();
        let mut related = vec![true; paths.len()];
        match focus {
            Focus::All => {}
            Focus::DocsFirst => paths.sort_by_key(|p| !is_doc(p)),
            Focus::Related(terms) => {
                let terms: Vec<String> = terms.iter().filter(|t| t.len() >= 3).map(|t| t.to_lowercase()).collect();
                let mut scored: Vec<(bool, String)> = paths
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let lower = p.to_lowercase();
                        let hit = terms.iter().any(|t| lower.contains(t.as_str()))
                            // Contents are searched in the first files only, to bound the reading.
                            || i < MAX_FILES_SEARCHED && ws.read_file(&p).is_ok_and(|c| {
                                let c = c.to_lowercase();
                                terms.iter().any(|t| c.contains(t.as_str()))
                            });
                        (hit, p)
                    })
                    .collect();
                // Related files first; stable, so path order holds within each group.
                scored.sort_by_key(|(hit, _)| !*hit);
                related = scored.iter().map(|(hit, _)| *hit).collect();
                paths = scored.into_iter().map(|(_, p)| p).collect();
            }
        }
        let unlisted = listing.total.saturating_sub(budget.max_files_listed.min(paths.len()));
        let mut left = budget.max_total_bytes;
        let mut files = Vec::new();
        for (path, related) in paths.into_iter().zip(related).take(budget.max_files_listed) {
            if !related {
                files.push(ViewFile { path, content: None, note: Some("not related to the failing checks".into()) });
                continue;
            }
            if left == 0 {
                files.push(ViewFile { path, content: None, note: None });
                continue;
            }
            match ws.read_file(&path) {
                Ok(text) if text.contains('\0') => {
                    files.push(ViewFile { path, content: None, note: Some("binary".into()) });
                }
                Ok(text) => {
                    let limit = budget.max_file_bytes.min(left);
                    let (content, note) = if text.len() > limit {
                        let cut = crate::workspace::floor_char_boundary(&text, limit);
                        (text[..cut].to_string(), Some(format!("first {cut} of {} bytes", text.len())))
                    } else {
                        (text, None)
                    };
                    left = left.saturating_sub(content.len());
                    files.push(ViewFile { path, content: Some(content), note });
                }
                Err(e) => files.push(ViewFile { path, content: None, note: Some(e.reason.to_string()) }),
            }
        }
        Ok(WorkspaceView { files, unlisted, listing: listing.files })
    }

    /// The view as Markdown: the file list, then each included file.
    pub fn render(&self) -> String {
        if self.files.is_empty() {
            return "The workspace has no files yet.\n".to_string();
        }
        let mut out = String::from("Files:\n");
        for f in &self.files {
            out.push_str(&format!("- {}", f.path));
            if f.content.is_none()
                && let Some(note) = &f.note
            {
                out.push_str(&format!(" ({note})"));
            }
            out.push('\n');
        }
        if self.unlisted > 0 {
            out.push_str(&format!("- … and {} more files not listed\n", self.unlisted));
        }
        for f in &self.files {
            let Some(content) = &f.content else { continue };
            let note = f.note.as_ref().map_or(String::new(), |n| format!(" ({n})"));
            // A fence longer than any run of backticks in the file.
            let fence = "`".repeat(longest_backtick_run(content).max(2) + 1);
            out.push_str(&format!("\n### {}{note}\n{fence}\n{}\n{fence}\n", f.path, content.trim_end_matches('\n')));
        }
        out
    }
}

fn is_doc(path: &str) -> bool {
    let lower = path.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    name.starts_with("readme")
        || lower.ends_with(".md")
        || lower.ends_with(".rst")
        || lower.starts_with("docs/")
        || lower.starts_with("doc/")
        || lower.starts_with("examples/")
        || lower.contains("/examples/")
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        if c == '`' {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}
