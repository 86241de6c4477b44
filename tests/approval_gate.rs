//! The approval gate for artifact updates, end to end through the app's
//! service on a real database: real runs of the knobs suite (`evolve`, real
//! Python tasks) whose winning updates wait in the Inbox until a person
//! approves, edits or rejects them — the run waiting (`wait`) or going on
//! with the versions it has (`continue`).

use std::path::Path;
use std::time::Duration;

mod common;

use common::wait_for;
use common::world::World;

use attractor::outer::ApprovalMode;
use attractor::outer::request::RunRequest;
use attractor::service::types::{InterventionItem, LaunchStatus, UpdateDecision, UpdateVerdictKind};
use attractor::service::{Service, ServiceError};
use attractor::store::{ApprovalStatus, ProposalOutcome, Store};
use serde_json::Value;

fn knobs() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app/knobs.suite.yaml").display().to_string()
}

fn request(epochs: u32, mode: ApprovalMode) -> RunRequest {
    let mut req = RunRequest::new(knobs());
    req.epochs = epochs;
    req.optimizer = attractor::outer::OptimizerKind::Evolve;
    req.seed = Some(1);
    req.approve_updates = Some(mode);
    req
}

/// The artifact-update questions waiting in the inbox.
async fn waiting_updates(s: &Service) -> Vec<InterventionItem> {
    let kind = attractor::service::types::InterventionKind::ArtifactUpdate;
    s.interventions().await.unwrap().pending.into_iter().filter(|i| i.kind == kind).collect()
}

async fn next_question(s: &Service) -> InterventionItem {
    wait_for("an artifact update in the inbox", || async { waiting_updates(s).await.into_iter().next() }).await
}

async fn launch_status(s: &Service, id: i64) -> LaunchStatus {
    s.launch_view(id).await.unwrap().status
}

async fn wait_until_done(s: &Service, id: i64) -> LaunchStatus {
    wait_for("the launch to end", || async {
        let st = launch_status(s, id).await;
        st.ended().then_some(st)
    })
    .await
}

/// The epochs' child records (`events`, `note`) of the knobs suite.
async fn epoch_records(store: &Store) -> Vec<(i64, Option<String>, Value)> {
    let suite = store.suite_by_name("knobs").await.unwrap().unwrap();
    store
        .epochs(suite.id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let child: Value =
                e.child_artifacts_json.as_deref().map_or(Value::Null, |j| serde_json::from_str(j).unwrap());
            (e.epoch_num, e.completed_at, child)
        })
        .collect()
}

fn approve(content: Option<String>) -> UpdateDecision {
    UpdateDecision { verdict: UpdateVerdictKind::Approve, content, reason: None }
}

fn reject(reason: &str) -> UpdateDecision {
    UpdateDecision { verdict: UpdateVerdictKind::Reject, content: None, reason: Some(reason.to_string()) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_wait_the_run_waits_for_each_decision_and_applies_what_a_person_approved_or_edited() {
    let w = World::new();
    let s = w.service().await;
    let launch = s.launch(&request(3, ApprovalMode::Wait)).await.unwrap();

    // The first epoch's winner waits, and so does its epoch: it is not closed.
    let q = next_question(&s).await;
    let review = q.update.clone().expect("the question carries the update to review");
    assert_eq!(review.artifact, "knobs");
    assert_eq!(review.status, ApprovalStatus::Pending);
    assert_eq!(review.mode, ApprovalMode::Wait);
    assert_eq!(review.epoch_num, 1);
    assert!(!review.rationale.is_empty());
    assert_eq!(review.tasks.len(), 3, "the training tasks' losses are the evidence: {:?}", review.tasks);
    assert!(review.diff.added + review.diff.removed > 0, "the diff shows the change: {:?}", review.diff);
    assert_eq!(launch_status(&s, launch.id).await, LaunchStatus::Running);
    let suite = s.suites().await.unwrap().into_iter().find(|x| x.name == "knobs").unwrap();
    assert_eq!(suite.status, attractor::service::types::SuiteStatus::Paused, "the suite waits on a person");
    let records = epoch_records(s.store()).await;
    assert_eq!(records.len(), 1, "no second epoch before the decision: {records:?}");
    assert!(records[0].1.is_none(), "the epoch waits open for the decision");

    // A hint is not a decision, and an edit that breaks the artifact is refused.
    let hint = attractor::service::types::AnswerRequest {
        answer: attractor::service::types::AnswerKind::Hint,
        text: Some("try harder".into()),
    };
    let e = s.answer(q.id, &hint).await.unwrap_err();
    assert!(matches!(e, ServiceError::BadInput(_)), "{e}");
    let e = s.decide_update(q.id, &approve(Some(r#"{"gain": 9.0, "offset": 0.0}"#.into()))).await.unwrap_err();
    assert!(e.to_string().contains("field `gain` = 9 is outside its bounds"), "{e}");

    // Approved with an edit: the edit is what becomes active.
    let edit = r#"{"gain": 2.4, "offset": 0.1}"#.to_string();
    let decided = s.decide_update(q.id, &approve(Some(edit.clone()))).await.unwrap();
    assert_eq!(decided.status, attractor::service::types::InterventionStatus::Answered);
    assert!(decided.update.as_ref().unwrap().edited);
    let e = s.decide_update(q.id, &approve(None)).await.unwrap_err();
    assert!(matches!(e, ServiceError::Conflict(_)), "a decision is final: {e}");

    // Every later question is rejected: the run ends on the edited version.
    let mut rejected = 0;
    let status = loop {
        let st = launch_status(&s, launch.id).await;
        if st.ended() {
            break st;
        }
        if let Some(q) = waiting_updates(&s).await.into_iter().next() {
            s.decide_update(q.id, &reject("not now")).await.unwrap();
            rejected += 1;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(status, LaunchStatus::Finished);

    let records = epoch_records(s.store()).await;
    assert_eq!(records.len(), 3, "{records:?}");
    let first = &records[0].2;
    let update =
        first["events"].as_array().unwrap().iter().find(|e| e["type"] == "update").expect("epoch 1 applied the update");
    assert_eq!(update["approval"], review.approval_id);
    assert_eq!(update["edited"], true);
    let version = update["to_version"].as_i64().unwrap();
    let registry = attractor::artifact::Registry::load(s.store().clone()).await.unwrap();
    assert_eq!(registry.get("knobs", version).await.unwrap().content, edit);
    let rejections =
        records.iter().filter(|r| r.2["note"].as_str().is_some_and(|n| n.contains("a person rejected"))).count();
    assert_eq!(rejections, rejected, "each rejection is the note of its epoch: {records:?}");
    let approval = s.store().update_approval(review.approval_id).await.unwrap().unwrap();
    assert_eq!((approval.status, approval.applied_version), (ApprovalStatus::Applied, Some(version)));

    // The proposals list tells the same story: the approved winner became
    // that version, each rejected one says a person turned it down.
    let proposals = s.suite_proposals("knobs").await.unwrap().proposals;
    let first = proposals.iter().find(|p| p.epoch_num == 1 && p.outcome == ProposalOutcome::Winner).unwrap();
    assert_eq!(first.applied_version, Some(version));
    assert!(first.edited_by_person, "the version is the person's edit, not the proposal: {first:?}");
    assert!(proposals.iter().filter(|p| p.epoch_num != 1).all(|p| !p.edited_by_person), "{proposals:#?}");
    let turned_down: Vec<_> = proposals
        .iter()
        .filter(|p| p.rejection.as_deref() == Some("rejected by a person in the Inbox: not now"))
        .collect();
    assert_eq!(turned_down.len(), rejected, "{proposals:#?}");
    assert!(turned_down.iter().all(|p| p.outcome == ProposalOutcome::Rejected && p.applied_version.is_none()));
    assert_eq!(proposals.iter().filter(|p| p.outcome == ProposalOutcome::Winner).count(), 1, "{proposals:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_continue_the_run_goes_on_and_an_update_approved_afterwards_becomes_active_at_once() {
    let w = World::new();
    let s = w.service().await;
    let launch = s.launch(&request(3, ApprovalMode::Continue)).await.unwrap();
    assert_eq!(wait_until_done(&s, launch.id).await, LaunchStatus::Finished);

    // One question, asked after epoch 1; the later epochs went on without
    // asking the optimizer again, on the versions they had.
    let waiting = waiting_updates(&s).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let records = epoch_records(s.store()).await;
    assert_eq!(records.len(), 3);
    for (num, done, child) in &records {
        assert!(done.is_some(), "epoch {num} closed");
        let updates = child["events"].as_array().unwrap().iter().filter(|e| e["type"] == "update").count();
        assert_eq!(updates, 0, "epoch {num} applied nothing: {child}");
        assert!(child["note"].as_str().unwrap().contains("waits for approval"), "epoch {num}: {child}");
    }
    let registry = attractor::artifact::Registry::load(s.store().clone()).await.unwrap();
    let before = registry.get_active("knobs").await.unwrap();

    // No run holds the suite now: approving makes the proposal active at once.
    let q = &waiting[0];
    let decided = s.decide_update(q.id, &approve(None)).await.unwrap();
    let review = decided.update.unwrap();
    assert_eq!(review.status, ApprovalStatus::Applied);
    let active = registry.get_active("knobs").await.unwrap();
    assert_eq!(Some(active.version), review.applied_version);
    assert_ne!(active.version, before.version);
    assert_eq!(active.content, review.proposed);
    assert!(waiting_updates(&s).await.is_empty());
    // The winner of epoch 1 says which version it became, applied after its run.
    let proposals = s.suite_proposals("knobs").await.unwrap().proposals;
    let winner = proposals.iter().find(|p| p.outcome == ProposalOutcome::Winner).expect("epoch 1's winner");
    assert_eq!((winner.epoch_num, winner.applied_version), (1, Some(active.version)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_the_gate_off_is_not_held_back_by_a_question_an_earlier_gated_run_left() {
    let w = World::new();
    let s = w.service().await;
    let gated = s.launch(&request(1, ApprovalMode::Continue)).await.unwrap();
    assert_eq!(wait_until_done(&s, gated.id).await, LaunchStatus::Finished);
    assert_eq!(waiting_updates(&s).await.len(), 1);

    let free = s.launch(&request(2, ApprovalMode::Off)).await.unwrap();
    assert_eq!(wait_until_done(&s, free.id).await, LaunchStatus::Finished);
    let records = epoch_records(s.store()).await;
    assert_eq!(records.len(), 3);
    for (num, _, child) in &records[1..] {
        let note = child["note"].as_str().unwrap_or("");
        assert!(!note.contains("waits for approval"), "epoch {num} was held back: {child}");
    }
    assert_eq!(waiting_updates(&s).await.len(), 1, "the earlier question still waits for its answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_while_it_waits_asks_nothing_new_when_resumed_and_applies_the_decision() {
    let w = World::new();
    let s = w.service().await;
    let first = s.launch(&request(2, ApprovalMode::Wait)).await.unwrap();
    let q = next_question(&s).await;
    s.cancel(first.id).await.unwrap();
    assert_eq!(wait_until_done(&s, first.id).await, LaunchStatus::Cancelled);
    assert_eq!(waiting_updates(&s).await.len(), 1, "the question outlives the run");
    let suite = s.store().suite_by_name("knobs").await.unwrap().unwrap();
    // Its lease went with it: the lease seen next is the resumed run's.
    assert!(s.store().suite_lease(suite.id).await.unwrap().is_none(), "the cancelled run gave the suite back");

    // Launched again, the run resumes the open epoch and waits on the same question.
    let second = s.launch(&request(2, ApprovalMode::Wait)).await.unwrap();
    // Once the run holds the suite, it (not the app) applies the decision.
    wait_for("the resumed run to hold the suite", || async {
        s.store().suite_lease(suite.id).await.unwrap().map(|_| ())
    })
    .await;
    let again = next_question(&s).await;
    assert_eq!(again.id, q.id, "no second question for the same epoch");
    s.decide_update(q.id, &approve(None)).await.unwrap();
    // Epoch 2 may propose again; reject whatever it asks.
    loop {
        if launch_status(&s, second.id).await.ended() {
            break;
        }
        if let Some(q) = waiting_updates(&s).await.into_iter().next() {
            s.decide_update(q.id, &reject("enough")).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let view = s.launch_view(second.id).await.unwrap();
    assert_eq!(view.status, LaunchStatus::Finished, "{:?}", view.error);
    let records = epoch_records(s.store()).await;
    assert_eq!(records.len(), 2, "{records:?}");
    let applied =
        records[0].2["events"].as_array().unwrap().iter().any(|e| e["type"] == "update" && e["approval"].is_i64());
    if !applied {
        let mut approvals = Vec::new();
        for status in
            [ApprovalStatus::Pending, ApprovalStatus::Approved, ApprovalStatus::Rejected, ApprovalStatus::Applied]
        {
            for a in s.store().update_approvals_in(suite.id, status).await.unwrap() {
                approvals.push((a.id, a.update.epoch_id, a.intervention_id, a.status, a.decided_at));
            }
        }
        panic!(
            "epoch 1 closed with the approved update (question {}): {:?}\napprovals: {approvals:?}",
            q.id, records[0]
        );
    }
    // Epoch 1's proposals, made before the cancel, are kept; the winner says
    // which version it became.
    let proposals = s.suite_proposals("knobs").await.unwrap().proposals;
    let winner = proposals
        .iter()
        .find(|p| p.epoch_num == 1 && p.outcome == ProposalOutcome::Winner)
        .unwrap_or_else(|| panic!("epoch 1's winner is kept: {proposals:#?}"));
    assert!(winner.applied_version.is_some(), "{winner:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_approved_after_its_epoch_closed_is_judged_by_the_epoch_after_the_one_that_applied_it() {
    let w = World::new();
    let s = w.service().await;
    let first = s.launch(&request(1, ApprovalMode::Continue)).await.unwrap();
    assert_eq!(wait_until_done(&s, first.id).await, LaunchStatus::Finished);
    // Approved while a run holds the suite (the store's side of it: the app
    // would apply it at once to a suite no run holds).
    let question = waiting_updates(&s).await.into_iter().next().expect("epoch 1's update waits");
    let approval = s.store().update_approval_of_question(question.id).await.unwrap().unwrap();
    let verdict = attractor::store::UpdateVerdict::Approve { edited: None };
    assert!(s.store().decide_update_approval(approval.id, &verdict).await.unwrap());

    // Epoch 2 applies it, epoch 3 measures what it did.
    let second = s.launch(&request(2, ApprovalMode::Continue)).await.unwrap();
    assert_eq!(wait_until_done(&s, second.id).await, LaunchStatus::Finished);
    let suite = s.store().suite_by_name("knobs").await.unwrap().unwrap();
    let epochs = s.store().epochs(suite.id).await.unwrap();
    assert_eq!(epochs.len(), 3);
    let records = epoch_records(s.store()).await;
    let applied = records[1].2["events"].as_array().unwrap().iter().any(|e| e["approval"] == approval.id);
    assert!(applied, "epoch 2 applied the approved update: {:?}", records[1]);

    let proposals = s.suite_proposals("knobs").await.unwrap().proposals;
    let winner = proposals
        .iter()
        .find(|p| p.epoch_num == 1 && p.outcome == ProposalOutcome::Winner)
        .unwrap_or_else(|| panic!("epoch 1's winner: {proposals:#?}"));
    let (before, after) = (epochs[1].mean_loss.unwrap(), epochs[2].mean_loss.unwrap());
    let observed = winner.observed_loss_reduction.unwrap_or_else(|| panic!("observed by epoch 3: {winner:?}"));
    assert!((observed - (before - after)).abs() < 1e-12, "{observed} against {before} − {after}");
    let rolled_back = records[2].2["events"].as_array().unwrap().iter().any(|e| e["type"] == "rollback");
    assert_eq!(winner.rolled_back, rolled_back, "{winner:?} against epoch 3: {:?}", records[2]);
}

/// `attractor` on the test's database, with the knobs tasks at full speed.
fn cli(w: &World, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(&w.db)
        .args(args)
        .env("ATTRACTOR_RUNS_DIR", w.dir.path().join("runs"))
        .env("KNOBS_DELAY", "0")
        .env_remove("ATTRACTOR_LLM_MODEL")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_runs_behind_the_gate_and_answers_it_with_an_edit_from_a_file() {
    let w = World::new();
    let run = cli(
        &w,
        &["run", &knobs(), "--epochs", "2", "--optimizer", "evolve", "--seed", "1", "--approve-updates", "continue"],
    );
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(said.contains("attractor answer") && said.contains("--content FILE"), "the run says how to answer: {said}");

    let store = Store::open(&w.db).await.unwrap();
    let suite = store.suite_by_name("knobs").await.unwrap().unwrap();
    let waiting = store.update_approvals_in(suite.id, ApprovalStatus::Pending).await.unwrap();
    assert_eq!(waiting.len(), 1);
    let question = waiting[0].intervention_id.unwrap().to_string();
    let listed = cli(&w, &["interventions"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    let how = format!("answer: attractor answer {question} approve [--content FILE] | reject \"why\"");
    assert!(listed.contains(&how), "the list says how to decide an update, not to hint: {listed}");

    let hint = cli(&w, &["answer", &question, "hint", "go faster"]);
    assert_eq!(hint.status.code(), Some(2), "a hint is refused as bad input");
    assert!(String::from_utf8_lossy(&hint.stderr).contains("approve (with --content FILE"));

    let edit = w.dir.path().join("knobs-edit.json");
    std::fs::write(&edit, r#"{"gain": 2.2, "offset": 0.3}"#).unwrap();
    let ok = cli(&w, &["answer", &question, "approve", "--content", &edit.display().to_string()]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("is active"), "{}", String::from_utf8_lossy(&ok.stdout));
    let registry = attractor::artifact::Registry::load(store.clone()).await.unwrap();
    assert_eq!(registry.get_active("knobs").await.unwrap().content, r#"{"gain": 2.2, "offset": 0.3}"#);

    let again = cli(&w, &["answer", &question, "reject"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("was already decided: it is applied"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_launch_counts_the_epochs_it_has_finished_as_they_finish() {
    let w = World::new();
    let s = w.service().await;
    let launch = s.launch(&request(2, ApprovalMode::Wait)).await.unwrap();
    let first = next_question(&s).await;
    assert_eq!(s.launch_view(launch.id).await.unwrap().epochs_done, 0, "epoch 1 waits to close");
    s.decide_update(first.id, &approve(None)).await.unwrap();
    // Epoch 1 closes with the update; epoch 2's close asks again and the run
    // waits there: one epoch done, the launch still running.
    let second =
        wait_for("epoch 2's question", || async { waiting_updates(&s).await.into_iter().find(|q| q.id != first.id) })
            .await;
    let view = wait_for("the launch to count epoch 1", || async {
        let v = s.launch_view(launch.id).await.unwrap();
        (v.epochs_done == 1).then_some(v)
    })
    .await;
    assert_eq!(view.status, LaunchStatus::Running);
    assert!(view.suite_id.is_some(), "the running launch names its suite");
    s.decide_update(second.id, &reject("enough")).await.unwrap();
    assert_eq!(wait_until_done(&s, launch.id).await, LaunchStatus::Finished);
    assert_eq!(s.launch_view(launch.id).await.unwrap().epochs_done, 2);
}
