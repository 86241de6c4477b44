//! Workspaces on real temp dirs with the real git: copies with their own
//! history, commits with churn, resets, diffs, and the path rules that keep
//! model output inside the workspace.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use attractor::workspace::{FileAction, Refusal, Workspace, WorkspaceConfig, WorkspaceError};

fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// A task folder with two files, a nested folder and a `.git` of its own.
fn source(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("task");
    write(&src.join("README.md"), "# task\n");
    write(&src.join("src/lib.rs"), "pub fn one() -> i32 { 1 }\n");
    write(&src.join(".git/HEAD"), "ref: refs/heads/main\n");
    src
}

async fn workspace(dir: &Path) -> Workspace {
    Workspace::create(&source(dir), &dir.join("traj-1"), WorkspaceConfig::default()).await.expect("create")
}

#[tokio::test]
async fn a_copy_has_the_task_files_and_a_history_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path()).await;
    let root = ws.root();
    assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), "pub fn one() -> i32 { 1 }\n");
    // The source's .git was not copied: this one is a real repository.
    assert!(root.join(".git/objects").is_dir());
    let head = std::fs::read_to_string(root.join(".git/HEAD")).unwrap();
    assert_eq!(head.trim(), "ref: refs/heads/attractor", "not the source's `main`");
    let listing = ws.list_files().await.unwrap();
    assert_eq!(listing.files, vec!["README.md", "src/lib.rs"]);
    assert!(!listing.truncated);
    assert_eq!(ws.head().map(str::len), Some(40));
}

#[tokio::test]
async fn a_written_file_is_committed_with_its_churn() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = workspace(dir.path()).await;
    ws.write_file("src/lib.rs", b"pub fn one() -> i32 {\n    1\n}\n").unwrap();
    ws.write_file("src/new/two.rs", b"pub fn two() {}\n").unwrap();
    let r = ws.commit("observation 1").await.unwrap();
    assert_eq!(r.files_changed, 2);
    // lib.rs: 1 line removed, 3 added; two.rs: 1 added.
    assert_eq!(r.lines_changed, 5);
    assert_eq!(ws.head(), Some(r.commit.as_str()));

    // Nothing changed: still a commit of its own, with zero churn.
    let same = ws.commit("observation 2").await.unwrap();
    assert_ne!(same.commit, r.commit);
    assert_eq!((same.files_changed, same.lines_changed), (0, 0));
}

#[tokio::test]
async fn reset_to_restores_an_earlier_state_and_diff_shows_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = workspace(dir.path()).await;
    let first = ws.head().unwrap().to_string();
    ws.write_file("src/lib.rs", b"pub fn one() -> i32 { 2 }\n").unwrap();
    ws.write_file("notes.txt", b"later\n").unwrap();
    let second = ws.commit("observation 1").await.unwrap().commit;

    let diff = ws.diff(&first, &second).await.unwrap();
    assert!(diff.contains("-pub fn one() -> i32 { 1 }") && diff.contains("+pub fn one() -> i32 { 2 }"), "{diff}");
    assert!(diff.contains("+++ b/notes.txt"), "{diff}");

    // An uncommitted scribble disappears too.
    ws.write_file("scratch.txt", b"x").unwrap();
    ws.reset_to(&first[..12]).await.unwrap();
    assert_eq!(ws.head(), Some(first.as_str()));
    assert_eq!(ws.read_file("src/lib.rs").unwrap(), "pub fn one() -> i32 { 1 }\n");
    assert!(!ws.root().join("notes.txt").exists());
    assert!(!ws.root().join("scratch.txt").exists());

    // The later state is still in the history: branch from the first, then
    // go back to the second.
    let branch = ws.commit("observation 2 (branch)").await.unwrap();
    assert_eq!(branch.files_changed, 0);
    ws.reset_to(&second).await.unwrap();
    assert_eq!(ws.read_file("notes.txt").unwrap(), "later\n");
}

#[tokio::test]
async fn reset_to_refuses_what_is_not_a_commit_of_this_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = workspace(dir.path()).await;
    assert!(matches!(ws.reset_to("--hard").await, Err(WorkspaceError::BadCommit(_))));
    assert!(matches!(ws.reset_to("HEAD~1").await, Err(WorkspaceError::BadCommit(_))));
    assert!(matches!(ws.reset_to("deadbeefdeadbeef").await, Err(WorkspaceError::UnknownCommit(_))));
}

#[tokio::test]
async fn two_workspaces_from_one_source_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let mut a = Workspace::create(&src, &dir.path().join("a"), WorkspaceConfig::default()).await.unwrap();
    let b = Workspace::create(&src, &dir.path().join("b"), WorkspaceConfig::default()).await.unwrap();
    a.write_file("README.md", b"# changed in a\n").unwrap();
    a.write_file("only-a.txt", b"a\n").unwrap();
    a.commit("a's work").await.unwrap();
    assert_eq!(b.read_file("README.md").unwrap(), "# task\n");
    assert!(!b.root().join("only-a.txt").exists());
    assert_eq!(b.list_files().await.unwrap().files.len(), 2);
    // The source is untouched.
    assert_eq!(std::fs::read_to_string(src.join("README.md")).unwrap(), "# task\n");
}

#[tokio::test]
async fn a_destination_inside_the_source_is_not_copied_into_itself() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let ws = Workspace::create(&src, &src.join("runs/t1"), WorkspaceConfig::default()).await.unwrap();
    // `runs/` holds only the destination, which is not copied into itself.
    assert!(!ws.root().join("runs/t1").exists());
    assert_eq!(ws.list_files().await.unwrap().files, vec!["README.md", "src/lib.rs"]);
}

#[tokio::test]
async fn creating_into_a_non_empty_folder_or_from_a_missing_one_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    let err = Workspace::create(&src, &src, WorkspaceConfig::default()).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::DestinationNotEmpty(_)), "{err}");
    let err = Workspace::create(&dir.path().join("nope"), &dir.path().join("x"), WorkspaceConfig::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[tokio::test]
async fn paths_that_leave_the_workspace_are_refused_and_nothing_is_written_outside() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path()).await;
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    write(&outside.join("secret.txt"), "keep me\n");
    std::os::unix::fs::symlink(&outside, ws.root().join("out")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.root().join("secret-link")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), ws.root().join("dangling")).unwrap();
    std::os::unix::fs::symlink(ws.root().join(".git"), ws.root().join("history")).unwrap();
    let abs = outside.join("abs.txt");

    type Expect = fn(&Refusal) -> bool;
    let cases: Vec<(String, Expect)> = vec![
        ("../x".into(), |r| matches!(r, Refusal::ParentDir)),
        ("src/../../x".into(), |r| matches!(r, Refusal::ParentDir)),
        (abs.display().to_string(), |r| matches!(r, Refusal::Absolute)),
        ("/etc/x".into(), |r| matches!(r, Refusal::Absolute)),
        ("out/x.txt".into(), |r| matches!(r, Refusal::SymlinkEscape { .. })),
        ("out/deeper/x.txt".into(), |r| matches!(r, Refusal::SymlinkEscape { .. })),
        ("secret-link".into(), |r| matches!(r, Refusal::SymlinkEscape { .. })),
        ("dangling".into(), |r| matches!(r, Refusal::DanglingSymlink { .. })),
        (".git/config".into(), |r| matches!(r, Refusal::InsideGit)),
        (".git/hooks/pre-commit".into(), |r| matches!(r, Refusal::InsideGit)),
        ("history/hooks/pre-commit".into(), |r| matches!(r, Refusal::InsideGit)),
        ("".into(), |r| matches!(r, Refusal::EmptyPath)),
        ("README.md/inner".into(), |r| matches!(r, Refusal::NotADirectory(_))),
        ("src".into(), |r| matches!(r, Refusal::IsDirectory)),
    ];
    for (path, expected) in &cases {
        let err = ws.write_file(path, b"pwned\n").expect_err(path);
        assert_eq!(err.action, FileAction::Write);
        assert_eq!(&err.path, path);
        assert!(expected(&err.reason), "{path}: {err}");
        // The message names the path and says why.
        assert!(err.to_string().contains(&format!("`{path}`")), "{err}");
    }
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "keep me\n");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing new outside");
    assert!(!dir.path().join("x").exists());
    assert!(!dir.path().join("nowhere").exists());
    assert!(!ws.root().join(".git/hooks/pre-commit").exists());
    // Reading through the link is refused as well.
    assert!(matches!(ws.read_file("secret-link").unwrap_err().reason, Refusal::SymlinkEscape { .. }));
}

#[tokio::test]
async fn oversized_content_is_refused_at_the_configured_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = WorkspaceConfig { max_file_bytes: 10, ..WorkspaceConfig::default() };
    let ws = Workspace::create(&source(dir.path()), &dir.path().join("w"), config).await.unwrap();
    ws.write_file("small.txt", b"0123456789").unwrap();
    let err = ws.write_file("big.txt", b"0123456789!").unwrap_err();
    assert!(matches!(err.reason, Refusal::TooLarge { size: 11, limit: 10 }), "{err}");
    assert!(!ws.root().join("big.txt").exists());
    // The default is one mebibyte.
    assert_eq!(WorkspaceConfig::default().max_file_bytes, 1024 * 1024);
}

#[tokio::test]
async fn links_inside_the_workspace_may_be_written_through_and_hard_links_are_not_written_into() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path()).await;
    std::os::unix::fs::symlink("src", ws.root().join("code")).unwrap();
    ws.write_file("code/lib.rs", b"// via the link\n").unwrap();
    assert_eq!(ws.read_file("src/lib.rs").unwrap(), "// via the link\n");

    // A hard link to an outside file: the write replaces the workspace's
    // entry, the outside file keeps its content.
    let outside = dir.path().join("shared.txt");
    write(&outside, "original\n");
    std::fs::hard_link(&outside, ws.root().join("hard.txt")).unwrap();
    ws.write_file("hard.txt", b"new\n").unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original\n");
    assert_eq!(ws.read_file("hard.txt").unwrap(), "new\n");
}

#[tokio::test]
async fn rewriting_a_script_keeps_it_executable() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path()).await;
    ws.write_file("run.sh", b"#!/bin/sh\necho 1\n").unwrap();
    let script = ws.root().join("run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    ws.write_file("run.sh", b"#!/bin/sh\necho 2\n").unwrap();
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
}

#[tokio::test]
async fn delete_removes_files_and_links_but_never_a_link_target() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = workspace(dir.path()).await;
    let outside = dir.path().join("keep.txt");
    write(&outside, "keep\n");
    std::os::unix::fs::symlink(&outside, ws.root().join("link")).unwrap();
    ws.delete_file("link").unwrap();
    assert!(outside.exists());
    ws.delete_file("README.md").unwrap();
    let r = ws.commit("deleted").await.unwrap();
    assert_eq!(r.files_changed, 1);
    assert_eq!(r.lines_changed, 1);
    assert!(matches!(ws.delete_file("README.md").unwrap_err().reason, Refusal::NotFound));
    assert!(matches!(ws.delete_file("src").unwrap_err().reason, Refusal::IsDirectory));
    assert!(matches!(ws.delete_file("../keep.txt").unwrap_err().reason, Refusal::ParentDir));
    assert!(matches!(ws.delete_file(".git/HEAD").unwrap_err().reason, Refusal::InsideGit));
}

#[tokio::test]
async fn listing_skips_ignored_files_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(dir.path());
    write(&src.join(".gitignore"), "target/\n");
    write(&src.join("target/debug/junk"), "junk");
    for i in 0..5 {
        write(&src.join(format!("many/f{i}.txt")), "x");
    }
    let config = WorkspaceConfig { max_listed_files: 4, ..WorkspaceConfig::default() };
    let ws = Workspace::create(&src, &dir.path().join("w"), config).await.unwrap();
    let listing = ws.list_files().await.unwrap();
    assert_eq!(listing.total, 8, "{listing:?}");
    assert_eq!(listing.files, vec![".gitignore", "README.md", "many/f0.txt", "many/f1.txt"]);
    assert!(listing.truncated);
    // Ignored files were copied (the build may want them) but not committed.
    assert!(ws.root().join("target/debug/junk").exists());
}

#[tokio::test]
async fn a_workspace_can_be_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = workspace(dir.path()).await;
    ws.write_file("a.txt", b"a\n").unwrap();
    let c = ws.commit("one").await.unwrap();
    let again = Workspace::open(ws.root(), WorkspaceConfig::default()).await.unwrap();
    assert_eq!(again.head(), Some(c.commit.as_str()));
    let err = Workspace::open(dir.path(), WorkspaceConfig::default()).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::NotAWorkspace(_)));
}

#[tokio::test]
async fn an_empty_workspace_starts_with_an_empty_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = Workspace::init(&dir.path().join("empty"), WorkspaceConfig::default()).await.unwrap();
    assert!(ws.list_files().await.unwrap().files.is_empty());
    ws.write_file("hello.txt", b"hi\n").unwrap();
    let r = ws.commit("first").await.unwrap();
    assert_eq!((r.files_changed, r.lines_changed), (1, 1));
}
