//! A suite's history read back after the fact, through the app's service
//! on a real database after real runs: which epochs a launch ran and how its
//! runs ended (the Live screen after a reload, a launch of another process;
//! a launch that "finished" with every run failed must not pass for one that
//! did its work), how each artifact version did while it was active, and
//! what the experiment graph says happened between two epochs.

use std::path::Path;
use std::sync::Arc;

mod common;

use common::wait_for;
use common::world::World;

use attractor::outer::OptimizerKind;
use attractor::outer::request::RunRequest;
use attractor::service::types::{EpochPageArgs, EpochSpan, LaunchRuns, LaunchStatus, LaunchView, RunState};
use attractor::service::{Service, ServiceError};

/// A suite of two command tasks that both exit 3 before reporting anything.
fn failing_suite(w: &World) -> String {
    let path = w.dir.path().join("crash.suite.yaml");
    std::fs::write(
        &path,
        "name: crash\nartifacts:\n  - name: notes\n    type: text\n    content: hello\n\
         tasks:\n  - name: one\n    task: Crash.\n    command: exit 3\n\
         \x20 - name: two\n    task: Crash too.\n    command: exit 3\n",
    )
    .unwrap();
    path.display().to_string()
}

fn knobs(epochs: u32) -> RunRequest {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app/knobs.suite.yaml");
    let mut req = RunRequest::new(suite.display().to_string());
    req.epochs = epochs;
    req.optimizer = OptimizerKind::Evolve;
    req.seed = Some(1);
    req
}

async fn run_to_the_end(s: &Arc<Service>, req: &RunRequest) -> LaunchView {
    let id = s.launch(req).await.unwrap().id;
    wait_for("the launch to end", || async {
        let v = s.launch_view(id).await.unwrap();
        v.status.ended().then_some(v)
    })
    .await
}

/// The ids of the runs a launch's epochs list.
async fn runs_listed(s: &Service, launch: i64) -> Vec<i64> {
    let page = EpochPageArgs { offset: None, limit: Some(50), launch: Some(launch) };
    let epochs = s.suite_epochs("knobs", true, page).await.unwrap().epochs;
    epochs.iter().flat_map(|e| e.runs.iter().map(|r| r.id)).collect()
}

fn page(launch: i64) -> EpochPageArgs {
    EpochPageArgs { offset: None, limit: None, launch: Some(launch) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_finished_launch_names_the_epochs_it_ran_and_lists_only_their_runs() {
    let w = World::new();
    let s = w.service().await;
    let first = run_to_the_end(&s, &knobs(2)).await;
    let second = run_to_the_end(&s, &knobs(1)).await;
    assert_eq!(first.status, LaunchStatus::Finished);
    assert_eq!(first.epochs, Some(EpochSpan { first: 1, last: 2 }));
    assert_eq!(second.epochs, Some(EpochSpan { first: 3, last: 3 }));
    // Four tasks an epoch (one held out), none failed.
    assert_eq!(first.runs, Some(LaunchRuns { ended: 8, failed: 0 }));
    assert_eq!(second.runs, Some(LaunchRuns { ended: 4, failed: 0 }));

    let mine = s.suite_epochs("knobs", true, page(first.id)).await.unwrap();
    let nums: Vec<i64> = mine.epochs.iter().map(|e| e.epoch_num).collect();
    assert_eq!(nums, [1, 2]);
    assert_eq!(mine.page.total, 2, "the page counts the launch's epochs, not the suite's three");
    let runs: Vec<&RunState> = mine.epochs.iter().flat_map(|e| e.runs.iter().map(|r| &r.status)).collect();
    assert_eq!(runs.len(), 8);
    let theirs = s.suite_epochs("knobs", true, page(second.id)).await.unwrap();
    assert_eq!(theirs.epochs.iter().map(|e| e.epoch_num).collect::<Vec<_>>(), [3]);
    // The list agrees with what one launch's view says.
    let listed = s.launches().await.unwrap();
    let listed_first = listed.iter().find(|l| l.id == first.id).unwrap();
    assert_eq!((listed_first.epochs, listed_first.runs), (first.epochs, first.runs));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_version_says_how_the_epochs_that_ran_with_it_did() {
    let w = World::new();
    let s = w.service().await;
    // Eight epochs of evolve from seed 1: updates and rollbacks.
    run_to_the_end(&s, &knobs(8)).await;
    let history = s.artifact_versions("knobs").await.unwrap();
    let epochs =
        s.suite_epochs("knobs", false, EpochPageArgs { offset: None, limit: None, launch: None }).await.unwrap();
    // Every closed epoch ran with exactly one version of knobs: counted once.
    let counted: u32 = history.versions.iter().filter_map(|v| v.measured.map(|m| m.epochs)).sum();
    assert_eq!(counted, 8);
    for v in &history.versions {
        let ran: Vec<f64> = epochs
            .epochs
            .iter()
            .filter(|e| e.parent_artifacts.get("knobs") == Some(&v.version))
            .filter_map(|e| e.mean_loss)
            .collect();
        match v.measured {
            Some(m) => {
                assert_eq!(m.epochs as usize, ran.len(), "v{}", v.version);
                let mean = m.mean_loss.unwrap();
                assert!((mean - ran.iter().sum::<f64>() / ran.len() as f64).abs() < 1e-12, "v{}", v.version);
            }
            None => assert!(ran.is_empty(), "v{} ran in {} epochs but says it was not measured", v.version, ran.len()),
        }
    }
    // A rollback's version is marked; the others are not.
    let rolled: Vec<i64> = epochs
        .epochs
        .iter()
        .flat_map(|e| e.events.iter())
        .filter_map(|ev| match ev {
            attractor::service::types::ArtifactEvent::Rollback { artifact, from_version, .. }
                if artifact == "knobs" =>
            {
                Some(*from_version)
            }
            _ => None,
        })
        .collect();
    assert!(!rolled.is_empty(), "this history has a rollback");
    for v in &history.versions {
        assert_eq!(v.rolled_back, rolled.contains(&v.version), "v{}", v.version);
    }
    // A built-in prompt is named by these epochs but read by none of their
    // (command) tasks: it was not measured by them.
    assert!(epochs.epochs[0].parent_artifacts.contains_key("executor_preamble"), "the epochs name the built-ins");
    let builtin = s.artifact_versions("executor_preamble").await.unwrap();
    assert_eq!(builtin.versions[0].version, 0);
    assert_eq!(builtin.versions[0].measured, None, "a command suite's losses say nothing about the executor's prompt");
    // The run ended on its best: the active version is one an epoch ran
    // with (the last epoch's proposal, if it made one, waits unmeasured).
    let active = history.versions.iter().find(|v| v.is_active).unwrap();
    assert!(active.measured.is_some(), "v{} is active but no epoch ran with it", active.version);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_launch_whose_every_run_failed_counts_them_as_failed() {
    let w = World::new();
    let s = w.service().await;
    let mut req = RunRequest::new(failing_suite(&w));
    req.epochs = 2;
    req.seed = Some(1);
    let done = run_to_the_end(&s, &req).await;
    assert_eq!(done.epochs, Some(EpochSpan { first: 1, last: 2 }));
    assert_eq!(done.runs, Some(LaunchRuns { ended: 4, failed: 4 }), "{done:?}");
    let epochs = s.suite_epochs("crash", true, page(done.id)).await.unwrap();
    let statuses: Vec<RunState> = epochs.epochs.iter().flat_map(|e| e.runs.iter().map(|r| r.status)).collect();
    assert_eq!(statuses.len(), 4);
    assert!(statuses.iter().all(|s| *s == RunState::Failed), "{statuses:?}");
}

/// The Suites screen reads each suite's own latest launch: a launch whose
/// every run failed still says so after sixty launches of another suite
/// (it read the newest fifty launches of all suites, and then said "idle").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_suites_list_reads_each_suites_latest_launch_however_many_came_after() {
    use attractor::store::{Claimant, Completion, QueueStatus, Store};
    let w = World::new();
    let s = w.service().await;
    let path = failing_suite(&w);
    let mut req = RunRequest::new(path.clone());
    req.epochs = 1;
    req.seed = Some(1);
    run_to_the_end(&s, &req).await;
    // Other processes' launches of another suite, straight into the queue.
    let store = Store::open(&w.db).await.unwrap();
    let other = Claimant { owner: "test:1:other", holder: "another process" };
    for _ in 0..60 {
        let id = store.enqueue("other", "{}", Some(&other), |_| false).await.unwrap().unwrap();
        let done = Completion { status: QueueStatus::Finished, suite_id: None, epochs_done: 1, error: None };
        assert!(store.complete_request(id, other.owner, &done).await.unwrap());
    }
    store.close().await;
    let suites = s.suites().await.unwrap();
    let crash = suites.iter().find(|x| x.name == "crash").expect("the crash suite is listed");
    assert_eq!(crash.last_launch_runs, Some(LaunchRuns { ended: 2, failed: 2 }), "{crash:?}");
    assert_eq!(crash.suite_path.as_deref(), Some(path.as_str()), "Launch again starts from its file");
    assert_eq!(s.overview().await.unwrap().running_launches, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn asking_for_a_launch_of_another_suite_is_refused_with_what_to_do() {
    let w = World::new();
    let s = w.service().await;
    let knobs_launch = run_to_the_end(&s, &knobs(1)).await;
    let mut req = RunRequest::new(failing_suite(&w));
    req.epochs = 1;
    run_to_the_end(&s, &req).await;
    let err = s.suite_epochs("crash", true, page(knobs_launch.id)).await.unwrap_err();
    let ServiceError::BadInput(message) = err else { panic!("expected bad input, got {err:?}") };
    assert!(
        message.starts_with(&format!("launch: launch {} did not run suite \"crash\"", knobs_launch.id)),
        "{message}"
    );
    assert!(message.contains("hint:"), "{message}");
    let err = s.suite_epochs("crash", true, page(9999)).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_graph_says_when_a_version_was_activated_between_two_epochs() {
    let w = World::new();
    let s = w.service().await;
    run_to_the_end(&s, &knobs(1)).await;
    // Epoch 1 proposed a version; the run ended on v0, the proposal pending.
    let history = s.artifact_versions("knobs").await.unwrap();
    let made = history.versions.iter().map(|v| v.version).max().unwrap();
    assert!(made > 0, "epoch 1 of evolve with seed 1 updates knobs");
    assert_eq!(history.artifact.active_version, 0);
    // A person chooses the default before the next run: the pending
    // proposal is not taken up.
    s.rollback_artifact("knobs", 0).await.unwrap();
    run_to_the_end(&s, &knobs(1)).await;
    let graph = s.suite_graph("knobs").await.unwrap();
    let edge = graph.edges.iter().find(|e| e.source == "epoch-1" && e.target == "epoch-2").unwrap();
    assert!(edge.label.ends_with(&format!("knobs v{made}→v0 between epochs")), "{}", edge.label);
    // Between the two epochs of one run nothing moves by hand.
    let w2 = World::new();
    let s2 = w2.service().await;
    run_to_the_end(&s2, &knobs(2)).await;
    let graph = s2.suite_graph("knobs").await.unwrap();
    assert_eq!(graph.edges.len(), 1);
    assert!(!graph.edges[0].label.contains("between epochs"), "{:?}", graph.edges);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_launch_again_with_the_same_settings_continues_the_plan_a_cancel_stopped() {
    let w = World::new();
    let s = w.service().await;
    // What the app's Resume sends: the stopped launch's own request (no
    // seed given), epochs included.
    let mut req = knobs(20);
    req.seed = None;
    let first = s.launch(&req).await.unwrap().id;
    wait_for("an epoch to finish", || async { (s.launch_view(first).await.unwrap().epochs_done >= 1).then_some(()) })
        .await;
    s.cancel(first).await.unwrap();
    let stopped = wait_for("the cancel", || async {
        let v = s.launch_view(first).await.unwrap();
        v.status.ended().then_some(v)
    })
    .await;
    assert_eq!(stopped.status, LaunchStatus::Cancelled);
    let span = stopped.epochs.unwrap();
    assert!(span.last < 20, "{span:?}");

    let resumed = run_to_the_end(&s, &req).await;
    assert_eq!(resumed.status, LaunchStatus::Finished);
    assert_eq!(resumed.seed, stopped.seed, "the stopped plan's seed goes on");
    // It picks up the epoch the cancel left open and ends at the plan's 20th.
    let again = resumed.epochs.unwrap();
    assert!(again.first == span.last || again.first == span.last + 1, "{span:?} then {again:?}");
    assert_eq!(again.last, 20);
    let all =
        s.suite_epochs("knobs", true, EpochPageArgs { offset: None, limit: Some(50), launch: None }).await.unwrap();
    assert_eq!(all.epochs.len(), 20, "no epoch was run twice or added");
    // The epoch both touched: each launch counts and lists the runs it
    // started, none twice (the cancelled ones stay the cancelled launch's).
    let runs: usize = all.epochs.iter().map(|e| e.runs.len()).sum();
    assert_eq!(
        (stopped.runs.unwrap().ended + resumed.runs.unwrap().ended) as usize,
        runs,
        "{:?} + {:?}",
        stopped.runs,
        resumed.runs
    );
    let (a, b) = (runs_listed(&s, first).await, runs_listed(&s, resumed.id).await);
    assert!(!a.is_empty() && !b.is_empty(), "both launches ran some: {a:?} {b:?}");
    assert_eq!(a.len() + b.len(), runs);
    assert!(a.iter().all(|id| !b.contains(id)), "a run listed by both launches");
}
