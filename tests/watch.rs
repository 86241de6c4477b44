//! The folder watcher end to end: real temp folders, a real SQLite file, the
//! real `notify` watcher and real command runs, driven through the service
//! facade the way `attractor serve` and `attractor watch` drive it.
//!
//! Every wait is on a condition with a deadline; the few short sleeps only
//! give a misbehaving watcher the chance to do what it must not (run before
//! approval, queue a second run).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use attractor::service::types::{AnswerKind, AnswerRequest, WatchedFileView, WatchedFolders};
use attractor::service::{Service, ServiceConfig, ServiceError};
use attractor::watch::WatchConfig;

const DEADLINE: Duration = Duration::from_secs(60);

fn watch_config() -> WatchConfig {
    WatchConfig {
        debounce: Duration::from_millis(50),
        poll: Duration::from_millis(100),
        rename_window: Duration::from_secs(30),
        ..WatchConfig::default()
    }
}

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(w.drop_dir()).unwrap();
        std::fs::create_dir_all(w.marks()).unwrap();
        w
    }

    /// The watched folder (canonical: events report canonical paths).
    fn drop_dir(&self) -> PathBuf {
        let d = self.dir.path().join("drop");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::canonicalize(d).unwrap()
    }

    /// Where test commands leave their marks, outside the watched folder.
    fn marks(&self) -> PathBuf {
        self.dir.path().join("marks")
    }

    fn file(&self, name: &str) -> PathBuf {
        self.drop_dir().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.file(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    async fn service(&self) -> Arc<Service> {
        let config = ServiceConfig {
            db_path: self.dir.path().join("attractor.db"),
            settings_path: self.dir.path().join("settings.json"),
            runs_root: Some(self.dir.path().join("runs")),
            env: Arc::new(|_| None),
        };
        let service = Service::open(config).await.unwrap();
        service.start_watching(watch_config()).await.unwrap();
        service
    }

    async fn watching(&self) -> Arc<Service> {
        let s = self.service().await;
        s.add_watched_folder(&self.drop_dir().display().to_string()).await.unwrap();
        s
    }

    /// A task file whose command appends a line to `marks/NAME.log` and
    /// reports success; `before` and `after` wrap the command.
    fn marking_task(&self, name: &str, before: &str, after: &str) -> String {
        format!(
            "run: auto\ntask: Leave a mark.\ncommand: >-\n  {}\ntimeout: 60\n",
            self.mark_command(name, before, after)
        )
    }

    fn mark_command(&self, name: &str, before: &str, after: &str) -> String {
        let log = self.marks().join(format!("{name}.log"));
        format!(
            "{before}echo ran >> '{}' && echo '{{\"status\": \"complete\", \"eval_score\": 1}}' > run_completion.json{after}",
            log.display()
        )
    }

    fn marks_of(&self, name: &str) -> usize {
        std::fs::read_to_string(self.marks().join(format!("{name}.log"))).map_or(0, |t| t.lines().count())
    }
}

/// Polls `check` until it returns `Some`, failing after the deadline with `what`.
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn watched(s: &Service) -> WatchedFolders {
    s.watched().await.unwrap()
}

async fn file_at(s: &Service, path: &Path) -> Option<WatchedFileView> {
    let p = path.display().to_string();
    watched(s).await.files.into_iter().find(|f| f.path == p)
}

/// Waits until the file at `path` has `status`.
async fn wait_status(s: &Service, path: &Path, status: &str) -> WatchedFileView {
    let start = Instant::now();
    loop {
        let f = file_at(s, path).await;
        if let Some(f) = f.as_ref().filter(|f| f.status.as_str() == status) {
            return f.clone();
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {} to be {status}; it is {f:?}", path.display());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn count(s: &Service, sql: &str) -> i64 {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", s.store().path().display())).await.unwrap();
    let n: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
    pool.close().await;
    n
}

async fn approve(s: &Service, intervention_id: i64) {
    s.answer(intervention_id, &AnswerRequest { answer: AnswerKind::Approve, text: None }).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_suite_file_is_registered_at_once() {
    let w = World::new();
    let s = w.watching().await;
    assert!(watched(&s).await.files.is_empty());
    let path = w.write(
        "numbers.suite.yaml",
        "name: numbers\ntasks:\n  - name: g06\n    problem: g06\n  - name: g08\n    problem: g08\n",
    );
    let f = wait_status(&s, &path, "ready").await;
    assert_eq!((f.kind.as_str(), f.suite.as_deref()), ("suite", Some("numbers")));
    assert!(f.approval.is_none(), "built-in problems run no command, so nothing asks");
    let suites = s.suites().await.unwrap();
    let item = suites.iter().find(|x| x.name == "numbers").expect("the Suites screen lists it");
    assert_eq!(item.tasks, 2);
    assert_eq!(item.suite_path.as_deref(), Some(path.to_str().unwrap()), "launched from its watched file");
    assert_eq!(count(&s, "SELECT COUNT(*) FROM task_suites WHERE name = 'numbers'").await, 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM interventions").await, 0);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_file_is_reported_with_its_place_and_left_untouched() {
    let w = World::new();
    let s = w.watching().await;
    let text = "name: broken\ntasks:\n  - name: a\n    command: 'true'\n    timeout: -1\n";
    let path = w.write("broken.suite.yaml", text);
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    let f = wait_status(&s, &path, "invalid").await;
    assert_eq!(f.issues.len(), 1, "{:?}", f.issues);
    let i = &f.issues[0];
    assert_eq!((i.file.as_str(), i.line, i.column), (path.to_str().unwrap(), 5, 14));
    assert_eq!(i.field, "tasks[0].timeout");
    assert!(f.suite.is_none() && f.approval.is_none());
    assert_eq!(count(&s, "SELECT COUNT(*) FROM task_suites").await, 0, "an invalid file registers nothing");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "the file is never modified");
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before);

    // Fixing it registers it; a task file with an unknown key is located too.
    std::fs::write(&path, text.replace("timeout: -1", "timeout: 1")).unwrap();
    wait_status(&s, &path, "awaiting_approval").await;
    let task = w.write("odd.task.yaml", "problem: g06\nbogus: 3\n");
    let f = wait_status(&s, &task, "invalid").await;
    assert_eq!((f.issues[0].line, f.issues[0].column), (2, 1), "{:?}", f.issues);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_commands_runs_nothing_before_approval_and_runs_once_after() {
    let w = World::new();
    let s = w.watching().await;
    let path = w.write("mark.task.yaml", &w.marking_task("mark", "", ""));
    let f = wait_status(&s, &path, "awaiting_approval").await;
    let approval = f.approval.clone().expect("an approval question");
    assert_eq!(approval.status.as_str(), "pending");

    // Exactly one ExecutionApproval, listing exactly the file's one command.
    let inbox = s.interventions().await.unwrap();
    assert_eq!(inbox.pending.len(), 1);
    let q = &inbox.pending[0];
    assert_eq!(
        (q.id, q.kind),
        (approval.intervention_id, attractor::service::types::InterventionKind::ExecutionApproval)
    );
    let commands: Vec<&str> = q.context.commands.iter().map(|c| c.command.as_str()).collect();
    let expected = w.mark_command("mark", "", "");
    assert_eq!(commands, [expected.as_str()]);
    assert_eq!((q.context.commands[0].task.as_str(), q.context.commands[0].role.as_str()), ("mark", "command"));

    // Nothing runs: not by itself, and not by a person's launch either.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(w.marks_of("mark"), 0);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM runs").await, 0);
    assert!(f.run.is_none(), "no run is queued before approval");
    let req: attractor::service::types::RunRequest =
        serde_json::from_value(serde_json::json!({"suite_path": path.display().to_string()})).unwrap();
    match s.launch(&req).await {
        Err(ServiceError::Conflict(m)) => assert!(m.contains("approval"), "{m}"),
        other => panic!("a launch before approval must be refused, got {other:?}"),
    }
    let hint = AnswerRequest { answer: AnswerKind::Hint, text: Some("go".into()) };
    assert!(matches!(s.answer(q.id, &hint).await, Err(ServiceError::BadInput(_))), "approve or reject only");

    approve(&s, q.id).await;
    let f = wait_for("the approved run to finish", || async {
        file_at(&s, &path).await.filter(|f| f.run.as_ref().is_some_and(|r| r.status.as_str() == "finished"))
    })
    .await;
    assert_eq!(f.status.as_str(), "ready");
    assert_eq!(w.marks_of("mark"), 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM runs WHERE status = 'complete'").await, 1);

    // The same content again (rewritten, rescanned): no second run.
    std::fs::write(&path, w.marking_task("mark", "", "")).unwrap();
    s.rescan_watched().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    s.watch_until_idle().await.unwrap();
    assert_eq!(w.marks_of("mark"), 1, "never a second run for the same content");
    assert_eq!(count(&s, "SELECT COUNT(*) FROM watched_runs").await, 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM interventions").await, 1);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_asks_again_and_the_same_content_elsewhere_does_not() {
    let w = World::new();
    let s = w.watching().await;
    let path = w.write("edit.task.yaml", &w.marking_task("edit", "", ""));
    let first = wait_status(&s, &path, "awaiting_approval").await.approval.unwrap();
    approve(&s, first.intervention_id).await;
    wait_for("the first run", || async { (w.marks_of("edit") == 1).then_some(()) }).await;

    // Edited in place: a new question, listing the new command; nothing runs meanwhile.
    std::fs::write(&path, w.marking_task("edit", "", " && echo edited")).unwrap();
    let edited = wait_status(&s, &path, "awaiting_approval").await.approval.unwrap();
    assert_ne!(edited.intervention_id, first.intervention_id);
    assert!(edited.commands[0].command.ends_with("&& echo edited"), "{:?}", edited.commands);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM interventions WHERE kind = 'execution_approval'").await, 2);

    // The same content under another name shares the pending question.
    let copy = w.write("copy.task.yaml", &w.marking_task("edit", "", " && echo edited"));
    let c = wait_status(&s, &copy, "awaiting_approval").await;
    assert_eq!(c.approval.unwrap().intervention_id, edited.intervention_id);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM interventions").await, 2, "no third question");

    // An answer given by another process (`attractor answer`) is noticed too.
    assert!(s.store().answer_intervention(edited.intervention_id, "approve", None).await.unwrap());
    wait_for("both suites' runs of the edited content", || async { (w.marks_of("edit") == 3).then_some(()) }).await;
    s.watch_until_idle().await.unwrap();
    assert_eq!(count(&s, "SELECT COUNT(*) FROM watched_runs WHERE status = 'finished'").await, 3);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_moves_the_record_without_a_duplicate() {
    let w = World::new();
    let s = w.watching().await;
    let old = w.write("alpha.task.yaml", &w.marking_task("alpha", "", ""));
    let before = wait_status(&s, &old, "awaiting_approval").await;
    approve(&s, before.approval.as_ref().unwrap().intervention_id).await;
    wait_for("the run", || async { (w.marks_of("alpha") == 1).then_some(()) }).await;
    s.watch_until_idle().await.unwrap();

    let new = w.file("beta.task.yaml");
    std::fs::rename(&old, &new).unwrap();
    let after = wait_status(&s, &new, "ready").await;
    assert_eq!(after.id, before.id, "the same record, moved");
    assert_eq!(after.suite.as_deref(), Some("alpha"), "a renamed task file stays the suite it was");
    assert!(file_at(&s, &old).await.is_none());
    assert_eq!(watched(&s).await.files.len(), 1);
    s.watch_until_idle().await.unwrap();
    assert_eq!(count(&s, "SELECT COUNT(*) FROM task_suites").await, 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM interventions").await, 1, "no new question");
    assert_eq!(count(&s, "SELECT COUNT(*) FROM watched_runs").await, 1);
    assert_eq!(w.marks_of("alpha"), 1, "no second run");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_file_is_marked_removed_and_its_run_in_progress_is_kept() {
    let w = World::new();
    let s = w.watching().await;
    let path = w.write("slow.task.yaml", &w.marking_task("slow", "sleep 1.5 && ", ""));
    let f = wait_status(&s, &path, "awaiting_approval").await;
    approve(&s, f.approval.unwrap().intervention_id).await;
    wait_for("the run to start", || async {
        file_at(&s, &path).await.filter(|f| f.run.as_ref().is_some_and(|r| r.launch_id.is_some()))
    })
    .await;

    std::fs::remove_file(&path).unwrap();
    let gone = wait_status(&s, &path, "removed").await;
    assert!(gone.removed_at.is_some());
    let run = wait_for("the run in progress to finish", || async {
        let f = file_at(&s, &path).await;
        f.and_then(|f| f.run).filter(|r| r.status.as_str() == "finished")
    })
    .await;
    assert!(run.error.is_none(), "{run:?}");
    assert_eq!(w.marks_of("slow"), 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM runs WHERE status = 'complete'").await, 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM task_suites WHERE name = 'slow'").await, 1, "the suite is kept");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_files_dropped_at_once_are_registered_exactly_once() {
    let w = World::new();
    let s = w.watching().await;
    let started = Instant::now();
    for i in 0..1000 {
        let problem = ["g06", "g08", "g11"][i % 3];
        w.write(&format!("t{i:04}.task.yaml"), &format!("problem: {problem}\n"));
    }
    let ready = wait_for("1000 files registered", || async {
        let files = watched(&s).await.files;
        let ready = files.iter().filter(|f| f.status.as_str() == "ready").count();
        (ready == 1000).then_some(files)
    })
    .await;
    eprintln!("1000 files registered in {:?}", started.elapsed());
    let mut suites: Vec<&str> = ready.iter().filter_map(|f| f.suite.as_deref()).collect();
    suites.sort_unstable();
    suites.dedup();
    assert_eq!(suites.len(), 1000);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM task_suites").await, 1000);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM watched_files").await, 1000);
    assert_eq!(count(&s, "SELECT COUNT(DISTINCT path) FROM watched_files").await, 1000);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM interventions").await, 0);
    // Late duplicate events change nothing.
    s.rescan_watched().await.unwrap();
    assert_eq!(count(&s, "SELECT COUNT(*) FROM watched_files").await, 1000);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watched_folders_are_remembered_across_a_restart() {
    let w = World::new();
    let first = w.watching().await;
    let a = w.write("a.task.yaml", "problem: g06\n");
    wait_status(&first, &a, "ready").await;
    first.shutdown().await;

    // While nothing watches: one file added, one deleted.
    std::fs::remove_file(&a).unwrap();
    let b = w.write("b.task.yaml", "problem: g08\n");

    let second = w.service().await;
    let folders = watched(&second).await.folders;
    assert_eq!(folders.len(), 1);
    assert_eq!(folders[0].path, w.drop_dir().display().to_string());
    wait_status(&second, &b, "ready").await;
    wait_status(&second, &a, "removed").await;

    // And it follows events again.
    let c = w.write("c.task.yaml", "problem: g11\n");
    wait_status(&second, &c, "ready").await;

    // Removing the folder is remembered as well.
    let id = folders[0].id;
    let left = second.remove_watched_folder(id).await.unwrap();
    assert!(left.folders.is_empty() && left.files.is_empty());
    second.shutdown().await;
    let third = w.service().await;
    assert!(watched(&third).await.folders.is_empty());
    third.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_run_cut_short_by_a_stop_resumes_after_the_restart() {
    let w = World::new();
    let first = w.watching().await;
    let path = w.write("long.task.yaml", &w.marking_task("long", "sleep 1 && ", ""));
    let f = wait_status(&first, &path, "awaiting_approval").await;
    approve(&first, f.approval.unwrap().intervention_id).await;
    wait_for("the run to start", || async {
        file_at(&first, &path).await.filter(|f| f.run.as_ref().is_some_and(|r| r.launch_id.is_some()))
    })
    .await;
    first.shutdown().await;
    assert_eq!(w.marks_of("long"), 0, "the stop killed the run before its mark");

    let second = w.service().await;
    let f = wait_for("the resumed run to finish", || async {
        file_at(&second, &path).await.filter(|f| f.run.as_ref().is_some_and(|r| r.status.as_str() == "finished"))
    })
    .await;
    assert_eq!(f.run.unwrap().id, 1);
    assert_eq!(w.marks_of("long"), 1);
    assert_eq!(count(&second, "SELECT COUNT(*) FROM watched_runs").await, 1);
    second.shutdown().await;
}

#[test]
fn the_cli_watches_once_prints_located_errors_and_remembers_the_folder() {
    let w = World::new();
    let db = w.dir.path().join("cli.db");
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .env("ATTRACTOR_SETTINGS", w.dir.path().join("settings.json"))
            .env("ATTRACTOR_RUNS_DIR", w.dir.path().join("runs"))
            .env_remove("ATTRACTOR_LLM_MODEL")
            .output()
            .unwrap()
    };
    w.write("ok.task.yaml", "problem: g06\n");
    let drop = w.drop_dir().display().to_string();
    let out = cli(&["watch", &drop, "--once"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("ok.task.yaml → suite `ok`"), "{stdout}");

    let bad = w.write("bad.suite.yaml", "name: bad\ntasks:\n  - name: a\n    problem: g06\n    weights: { eval: 7 }\n");
    let cmd = w.write("cmd.task.yaml", "command: echo hi\n");
    let out = cli(&["watch", "--once"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "an invalid file makes --once exit 2: {stdout}");
    assert!(stdout.contains(&format!("invalid     {}:5:", bad.display())), "{stdout}");
    assert!(stdout.contains("would run 1 command:") && stdout.contains("cmd (command): echo hi"), "{stdout}");
    assert!(!stdout.contains(&format!("{}", w.file("ok.task.yaml").display())), "unchanged files are quiet: {stdout}");

    let out = cli(&["watch", "--list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&drop) && stdout.contains("awaiting_approval") && stdout.contains("bad.suite.yaml"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("{}:5:", bad.display())), "{stdout}");
    let _ = cmd;

    let out = cli(&["watch", "--remove", &drop]);
    assert!(out.status.success());
    let out = cli(&["watch", "--once"]);
    assert_eq!(out.status.code(), Some(2), "nothing left to watch is bad input");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no folder to watch"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subfolders_count_hidden_ones_do_not_and_a_folder_that_comes_back_is_followed_again() {
    let w = World::new();
    let s = w.watching().await;
    std::fs::create_dir_all(w.file("team/a")).unwrap();
    std::fs::create_dir_all(w.file(".git")).unwrap();
    let nested = w.write("team/a/nested.task.yaml", "problem: g06\n");
    w.write(".git/ignored.task.yaml", "problem: g06\n");
    wait_status(&s, &nested, "ready").await;
    s.rescan_watched().await.unwrap();
    let files = watched(&s).await.files;
    assert_eq!(files.len(), 1, "hidden folders are not looked at: {files:?}");

    // The whole folder goes away, then comes back with a new file.
    std::fs::remove_dir_all(w.drop_dir()).unwrap();
    wait_status(&s, &nested, "removed").await;
    assert!(!watched(&s).await.folders[0].exists);
    let back = w.write("back.task.yaml", "problem: g08\n");
    wait_status(&s, &back, "ready").await;
    let later = w.write("later.task.yaml", "problem: g11\n");
    wait_status(&s, &later, "ready").await;
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluator_command_changed_in_a_problem_file_is_asked_about_again() {
    let w = World::new();
    // The problem file is not a watched file; the suite names it.
    let problem = |cmd: &str| format!("name: p\ncommand: {cmd}\nvariables:\n  - {{ name: x, min: 0, max: 1 }}\n");
    std::fs::write(w.file("p.yaml"), problem("python3 eval.py")).unwrap();
    let s = w.watching().await;
    let path = w.write("ext.suite.yaml", "name: ext\ntasks:\n  - name: e\n    problem: p.yaml\n");
    let f = wait_status(&s, &path, "awaiting_approval").await;
    let first = f.approval.unwrap();
    assert_eq!(first.commands.len(), 1);
    assert_eq!((first.commands[0].role.as_str(), first.commands[0].command.as_str()), ("evaluator", "python3 eval.py"));
    approve(&s, first.intervention_id).await;
    wait_status(&s, &path, "ready").await;

    // The suite file is unchanged, but the command it would run is not: a
    // launch is refused and the new command is asked about.
    std::fs::write(w.file("p.yaml"), problem("python3 other.py")).unwrap();
    let req: attractor::service::types::RunRequest =
        serde_json::from_value(serde_json::json!({"suite_path": path.display().to_string(), "no_llm": true})).unwrap();
    match s.launch(&req).await {
        Err(ServiceError::Conflict(m)) => assert!(m.contains("no approval covers"), "{m}"),
        other => panic!("the changed command must be approved first, got {other:?}"),
    }
    let f = wait_status(&s, &path, "awaiting_approval").await;
    let second = f.approval.unwrap();
    assert_ne!(second.intervention_id, first.intervention_id);
    assert_eq!(second.commands[0].command, "python3 other.py");
    s.shutdown().await;
}

/// `tests/hostile/expected.txt`: each hostile file with the words its
/// refusal must hold.
fn hostile_manifest() -> Vec<(String, Vec<String>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let manifest = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    let cases: Vec<(String, Vec<String>)> = manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (file, says) = l.split_once('\t').unwrap_or_else(|| panic!("no tab in `{l}`"));
            (file.to_string(), says.split(" | ").map(String::from).collect())
        })
        .collect();
    assert!(cases.len() >= 10, "the hostile corpus is there");
    cases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_file_dropped_in_a_watched_folder_is_refused_at_its_place_and_the_watcher_goes_on() {
    let w = World::new();
    let s = w.watching().await;
    let cases = hostile_manifest();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    for (file, _) in &cases {
        std::fs::copy(corpus.join(file), w.file(file)).unwrap();
    }
    for (file, says) in &cases {
        let f = wait_status(&s, &w.file(file), "invalid").await;
        assert!(!f.issues.is_empty(), "{file}: invalid without an issue");
        let shown: Vec<String> = f
            .issues
            .iter()
            .map(|i| {
                let field = if i.field.is_empty() { String::new() } else { format!("field `{}`: ", i.field) };
                format!("{}:{}: {field}{}", i.line, i.column, i.message)
            })
            .collect();
        let text = shown.join("\n");
        for words in says {
            assert!(text.contains(words.as_str()), "{file}: no `{words}` in {text}");
        }
        for i in &f.issues {
            assert!(i.line >= 1 && i.column >= 1, "{file}: {text}");
            assert!(i.hint.as_deref().is_some_and(|h| !h.is_empty()), "{file}: no hint in {text}");
        }
    }
    assert_eq!(count(&s, "SELECT COUNT(*) FROM task_suites").await, 0, "no hostile file registered anything");
    // The watcher lived through all of them: a good file is still registered.
    let good = w.write("fine.suite.yaml", "name: fine\ntasks:\n  - name: g06\n    problem: g06\n");
    wait_status(&s, &good, "ready").await;
    let folders = watched(&s).await;
    assert!(folders.watching, "the watcher still runs");
    assert_eq!(folders.folders.len(), 1);
    assert_eq!(folders.folders[0].files, cases.len() + 1, "every file was seen once");
    s.shutdown().await;
}
