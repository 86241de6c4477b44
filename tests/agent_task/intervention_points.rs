//! The intervention points (seed 002 §7.3): cycles, transitions, strategy
//! escalations, ambiguities and partial results, under each mode.

use super::*;

/// The intent verifier's reply: not satisfied, with one gap of the
/// `ambiguity` category.
fn ambiguous(contradiction: &str) -> Scripted {
    let mut v = verdicts(false);
    v["gaps"] = json!([{"description": contradiction, "category": "ambiguity"}]);
    Scripted::json(&v)
}

fn context(q: &InterventionRow) -> Value {
    serde_json::from_str(&q.raised.context_json).unwrap()
}

/// Every question carries what the inbox shows: what, why, evidence, the proposed action and the proposal.
fn assert_explained(q: &InterventionRow) {
    let c = context(q);
    for key in ["what", "why", "proposed_action", "proposal"] {
        assert!(c[key].as_str().is_some_and(|t| !t.is_empty()), "#{} has no {key}: {c}", q.id);
    }
    assert!(c["evidence"].is_object(), "{c}");
}

/// Every point decides alone except `pause_on`, which keeps the table's mode.
fn attended_only(point: &str) -> AgentConfig {
    let mut c = unattended();
    let i = &mut c.engine.interventions;
    match point {
        "attractor_transition" => i.attractor_transition = None,
        "strategy_escalation" => i.strategy_escalation = None,
        "ambiguity_detected" => i.ambiguity_detected = None,
        "partial_result" => i.partial_result = None,
        other => panic!("no point {other}"),
    }
    c
}

#[tokio::test]
async fn under_thorough_a_cycle_asks_a_person_and_a_rejection_stops_the_trajectory_trapped() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: thorough\n    budget:\n      max_loops: 8\n", OVERSEER);
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    let script: Vec<Scripted> = (0..8).map(|i| writes(if i % 2 == 0 { &a } else { &b }, &format!("try {i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    // Thorough pauses at every point: anything else is approved, the cycle is refused.
    let asked = f
        .run_answering(&suite, &server, quick(), |q| {
            if q.raised.kind == "attractor_transition" && context(q)["evidence"]["to"] == "limit_cycle" {
                ("reject", None)
            } else {
                ("approve", None)
            }
        })
        .await;

    let cycle = asked.iter().find(|q| q.raised.kind == "attractor_transition").expect("the transition was asked about");
    assert_explained(cycle);
    let c = context(cycle);
    assert_eq!(
        (c["evidence"]["from"].as_str(), c["evidence"]["to"].as_str()),
        (Some("indeterminate"), Some("limit_cycle"))
    );
    assert_eq!(c["evidence"]["sequence"], 3);
    assert!(cycle.raised.subject.contains("cycle of 2 states"), "{}", cycle.raised.subject);
    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!(obs.len(), 4, "stopped where the person said: no fifth attempt");
    assert_eq!(server.requests().len(), 4);
    assert_eq!((run.status.as_str(), t.status.as_str()), ("failed", "trapped"));
    let result: Value = serde_json::from_str(t.result_json.as_deref().unwrap()).unwrap();
    assert!(result["partial_result"]["summary"].as_str().unwrap().contains("a person stopped"), "{result}");
    // The workspace holds the best of the two states (seven right).
    assert_eq!(f.workspace_file(&t, "squares.py"), b);
    let points = f.points("attractor_transition").await;
    assert_eq!((points[0]["mode"].as_str(), points[0]["intervention_id"].as_i64()), (Some("pause"), Some(cycle.id)));
    server.shutdown().await;
}

#[tokio::test]
async fn without_a_hint_a_transition_leaves_one_notice_the_run_does_not_wait_on() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    let script: Vec<Scripted> = (0..6).map(|i| writes(if i % 2 == 0 { &a } else { &b }, &format!("try {i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    // Only the transition keeps the table's mode (no hint: notify).
    let mut config = attended_only("attractor_transition");
    config.engine.decomposition.reactive = false;
    f.run(&suite, &server, config, 1).await;

    let (run, t, obs) = f.last_trajectory().await;
    assert_ne!(t.status, "paused");
    assert!(matches!(run.status.as_str(), "partial" | "failed"), "{}", run.status);
    let cycling = obs.iter().filter(|o| o.record.attractor == "limit_cycle").count();
    assert!(cycling >= 2, "the cycle lasted: {:?}", obs.iter().map(|o| &o.record.attractor).collect::<Vec<_>>());
    let notices = f.interventions_of_kind("attractor_transition").await;
    let told: Vec<String> =
        notices.iter().map(|n| context(n)["evidence"]["to"].as_str().unwrap().to_string()).collect();
    assert_eq!(told.iter().filter(|t| *t == "limit_cycle").count(), 1, "told once: {told:?}");
    assert!(notices.iter().all(|n| n.status == "notice" && n.answer.is_none()), "{notices:?}");
    assert_explained(&notices[0]);
    assert!(context(&notices[0])["proposal"].as_str().unwrap().contains("nothing waits"));
    assert!(f.store.interventions(true).await.unwrap().is_empty(), "nothing was asked");
    let points = f.points("attractor_transition").await;
    assert_eq!(points.len(), notices.len());
    assert!(points.iter().all(|p| p["mode"] == "notify"));

    // The inbox lists the notice apart from the questions, and it can be dismissed once.
    let service = attractor::service::Service::open(attractor::service::ServiceConfig {
        db_path: f.path("attractor.db"),
        settings_path: f.path("settings.json"),
        runs_root: Some(f.path("runs")),
        env: std::sync::Arc::new(|_| None),
    })
    .await
    .unwrap();
    let inbox = service.interventions().await.unwrap();
    assert!(inbox.pending.is_empty());
    assert_eq!(inbox.notices.len(), notices.len());
    assert_eq!(service.suites().await.unwrap()[0].status, attractor::service::types::SuiteStatus::Idle);
    let id = notices[0].id;
    let answer =
        attractor::service::types::AnswerRequest { answer: attractor::service::types::AnswerKind::Approve, text: None };
    let refused = service.answer(id, &answer).await.unwrap_err().to_string();
    assert!(refused.contains("is a notice"), "{refused}");

    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(f.path("attractor.db"))
            .args(args)
            .output()
            .unwrap()
    };
    let listed = String::from_utf8_lossy(&cli(&["interventions"]).stdout).into_owned();
    assert!(listed.contains(&format!("#{id}  [attractor_transition]")), "{listed}");
    assert!(listed.contains("notice: nothing waits on it") && listed.contains(&format!("attractor dismiss {id}")));
    let out = cli(&["answer", &id.to_string(), "approve"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("attractor dismiss {id}")));
    let out = cli(&["dismiss", &id.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = cli(&["dismiss", &id.to_string()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already dismissed"));
    let inbox = service.interventions().await.unwrap();
    // The dismissal another process made is seen here, where a service
    // and the run's store have the database open side by side.
    assert_eq!(inbox.notices.len(), notices.len() - 1, "{:#?}", inbox.notices);
    let settled = inbox.answered.iter().find(|i| i.id == id).expect("kept as history");
    assert!(
        settled.status == attractor::service::types::InterventionStatus::Dismissed && settled.answered_at.is_some()
    );
    service.shutdown().await;
    server.shutdown().await;
}

/// Three stalled attempts, the review's reply amending the specification,
/// then the right answer: with decomposition off, a low stall escalates to
/// an architect review.
fn review_script() -> Vec<Scripted> {
    let mut script: Vec<Scripted> = [2, 3, 5].iter().map(|k| wrong(*k)).collect();
    script.push(Scripted::json(&json!({
        "summary": "the task never says what to do outside 1..10",
        "edits": [{"path": "squares.py", "action": "write", "content": squares(&[]).replace(": 0,", ": 6,")}],
        "amendments": ["square(n) is only called with 1 <= n <= 10."],
    })));
    script.push(passing(10, "all"));
    script
}

#[tokio::test]
async fn a_strategy_escalation_waits_across_a_restart_and_a_rejection_picks_a_strategy_that_is_none() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(vec![wrong(2), wrong(3), wrong(5), passing(10, "all")]).await.unwrap();
    let mut config = quick();
    config.engine.decomposition.reactive = false;

    // First process: runs until it pauses on the escalation, then is stopped.
    let (stop, cancel) = watch::channel(false);
    let watcher = async {
        until("the question", || async { !f.store.interventions(true).await.unwrap().is_empty() }).await;
        stop.send(true).unwrap();
    };
    let (summary, ()) = tokio::join!(f.run_with_cancel(&suite, &server, config.clone(), 1, cancel), watcher);
    assert!(summary.interrupted);
    let pending = f.store.interventions(true).await.unwrap();
    assert_eq!(pending.len(), 1);
    let question = pending[0].clone();
    assert_eq!(question.raised.kind, "strategy_escalation");
    assert_explained(&question);
    let c = context(&question);
    assert_eq!(c["proposed_action"], "architect_review");
    assert!(c["what"].as_str().unwrap().contains("stalled at level 0.45"), "{c}");
    assert!(question.raised.subject.contains("architect review"), "{}", question.raised.subject);
    let (run1, t1, obs) = f.last_trajectory().await;
    assert_eq!((t1.status.as_str(), t1.pending_intervention_id, obs.len()), ("paused", Some(question.id), 3));
    assert_eq!(obs[2].record.next_strategy.as_deref(), Some("architect_review"));
    // Before it, the stall itself was told, without waiting (no hint: notify).
    let told = f.interventions_of_kind("attractor_transition").await;
    assert_eq!((told.len(), told[0].status.as_str()), (1, "notice"));

    // Second process: re-attaches to the same question; `attractor answer` refuses the review.
    let db = f.path("attractor.db");
    let answerer = async {
        until("the resumed run to adopt the trajectory", || async {
            f.store.trajectory(&t1.record.id).await.unwrap().is_some_and(|t| t.record.run_id != run1.id)
        })
        .await;
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(&db)
            .args(["answer", &question.id.to_string(), "reject"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let (summary, ()) = tokio::join!(f.run(&suite, &server, config, 1), answerer);
    assert!(!summary.interrupted && summary.epochs[0].resumed);

    assert_eq!(f.interventions_of_kind("strategy_escalation").await.len(), 1, "not asked again");
    let (run2, t2, obs) = f.last_trajectory().await;
    assert_eq!(t2.record.id, t1.record.id);
    assert_eq!((run2.status.as_str(), t2.status.as_str()), ("complete", "converged"), "{:?}", run2.error);
    assert_eq!(obs.len(), 4);
    assert!(
        ["retry_with_feedback", "retry_augmented", "focused_repair"].contains(&obs[3].record.strategy.as_str()),
        "no escalation instead of the review: {}",
        obs[3].record.strategy
    );
    assert!(user_message(&server, 3).contains(&format!("Strategy for this attempt: {}", obs[3].record.strategy)));
    let state: Value = serde_json::from_str(&t2.record.state_json).unwrap();
    assert_eq!(state["trajectory"]["declined"], json!(["architect_review"]));
    // The first run stays inspectable: its trajectory, every iteration of it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(&db)
        .args(["trajectory", &run1.id.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("run {} continued its trajectory", run2.id)), "{text}");
    assert!(text.contains("converged, 4 iterations"), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_strategy_escalation_in_notify_mode_goes_ahead_and_leaves_a_notice() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(review_script()).await.unwrap();
    let mut config = quick();
    config.engine.decomposition.reactive = false;
    config.engine.interventions.strategy_escalation = Some(InterventionMode::Notify);
    f.run(&suite, &server, config, 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert_eq!(obs[3].record.strategy, "architect_review");
    assert!(f.store.interventions(true).await.unwrap().is_empty());
    let notices = f.interventions_of_kind("strategy_escalation").await;
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].status.as_str(), context(&notices[0])["proposed_action"].as_str()),
        ("notice", Some("architect_review"))
    );
    assert_explained(&notices[0]);
    server.shutdown().await;
}

#[tokio::test]
async fn under_fast_an_escalation_is_decided_alone_with_only_an_event() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(review_script()).await.unwrap();
    let mut config = quick();
    config.engine.decomposition.reactive = false;
    f.run(&suite, &server, config, 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert_eq!(obs[3].record.strategy, "architect_review");
    assert!(f.store.interventions(false).await.unwrap().is_empty(), "fast asks and tells nothing here");
    let points = f.points("strategy_escalation").await;
    assert_eq!(points.len(), 1);
    assert_eq!((points[0]["mode"].as_str(), points[0]["intervention_id"].as_i64()), (Some("auto"), None));
    assert!(f.points("attractor_transition").await.iter().all(|p| p["mode"] == "auto"));
    server.shutdown().await;
}

const AMBIGUITY: &str = "Should square(0) be 0 or an error?";
const CLARIFICATION: &str = "square(0) is never called: only n from 1 to 10 matter.";

#[tokio::test]
async fn an_ambiguity_is_asked_once_and_a_hint_becomes_an_amendment_every_later_prompt_carries() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(vec![
        passing(6, "six"),
        ambiguous(AMBIGUITY),
        passing(7, "seven"),
        passing(8, "eight"),
        // The verifier names the same contradiction again, written differently.
        ambiguous("should square(0)  be 0 or an ERROR?"),
        passing(10, "all ten"),
    ])
    .await
    .unwrap();
    let mut config = attended_only("ambiguity_detected");
    config.verifier.enabled = true;
    let asked = f.run_answering(&suite, &server, config, |_| ("hint", Some(CLARIFICATION))).await;

    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    let q = &asked[0];
    assert_eq!(q.raised.kind, "ambiguity_detected");
    assert_explained(q);
    assert_eq!(context(q)["evidence"]["contradictions"], json!([AMBIGUITY]));
    assert_eq!(context(q)["proposed_action"], "clarify");
    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), obs.len()), ("complete", 4), "{:?}", run.error);
    // Request 0 executed, 1 verified; every later prompt carries the clarification.
    assert!(!user_message(&server, 0).contains(CLARIFICATION));
    for i in [2, 3, 5] {
        assert!(user_message(&server, i).contains(CLARIFICATION), "request {i}: {}", user_message(&server, i));
    }
    // ... and the verifier judged against the amended specification.
    assert!(user_message(&server, 4).contains(CLARIFICATION), "{}", user_message(&server, 4));
    let state: Value = serde_json::from_str(&t.record.state_json).unwrap();
    let spec = &state["trajectory"]["specification"];
    let last = spec["amendments"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["description"].as_str(), last["source"].as_str()), (Some(CLARIFICATION), Some("user_hint")));
    assert!(last["rationale"].as_str().unwrap().contains(AMBIGUITY), "{last}");
    assert!(spec["effective"]["clarifications"].as_array().unwrap().contains(&json!(CLARIFICATION)));
    let detected = f.events("specification_ambiguity_detected").await;
    assert_eq!(detected.len(), 1);
    assert_eq!(detected[0]["contradictions"], json!([AMBIGUITY]));
    assert!(detected[0]["suggested_clarifications"][0].as_str().unwrap().contains("square(0)"));
    server.shutdown().await;
}

#[tokio::test]
async fn an_ambiguity_in_notify_mode_leaves_a_notice_and_the_specification_as_it_stands() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 4\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(6, "six"), ambiguous(AMBIGUITY), passing(10, "all ten")]).await.unwrap();
    let mut config = unattended();
    config.verifier.enabled = true;
    config.engine.interventions.ambiguity_detected = Some(InterventionMode::Notify);
    f.run(&suite, &server, config, 1).await;

    let (run, t, _) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let notices = f.interventions_of_kind("ambiguity_detected").await;
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].status, "notice");
    assert_eq!(context(&notices[0])["evidence"]["contradictions"], json!([AMBIGUITY]));
    let state: Value = serde_json::from_str(&t.record.state_json).unwrap();
    let amendments = state["trajectory"]["specification"]["amendments"].as_array().unwrap();
    assert_eq!(amendments.len(), 1, "only the task's own hint: {amendments:?}");
    assert_eq!(f.events("specification_ambiguity_detected").await.len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn under_fast_an_ambiguity_is_only_an_event() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 4\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(6, "six"), ambiguous(AMBIGUITY), passing(10, "all ten")]).await.unwrap();
    let mut config = quick();
    config.verifier.enabled = true;
    f.run(&suite, &server, config, 1).await;

    let (run, _, _) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert!(f.store.interventions(false).await.unwrap().is_empty());
    assert_eq!(f.events("specification_ambiguity_detected").await.len(), 1);
    let points = f.points("ambiguity_detected").await;
    assert_eq!((points.len(), points[0]["mode"].as_str()), (1, Some("auto")));
    server.shutdown().await;
}

#[tokio::test]
async fn under_fast_a_partial_result_is_the_one_question_and_a_rejection_ends_exhausted() {
    let f = Fixture::new("agent-suite").await;
    // Below fast's acceptance (0.85), above the partial threshold (0.7).
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(7, "7"), passing(6, "6"), passing(6, "6 again")]).await.unwrap();
    let asked = f.run_answering(&suite, &server, quick(), |_| ("reject", None)).await;

    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    assert_eq!(q.raised.kind, "partial_result");
    assert_explained(q);
    let c = context(q);
    assert_eq!(c["proposed_action"], "accept_partial");
    assert_eq!(c["evidence"]["best_observation"]["sequence"], 0);
    let gaps = c["evidence"]["remaining_gaps"].as_array().unwrap();
    assert!(gaps.iter().any(|g| g["description"].as_str().unwrap().contains("test_8")), "{c}");
    assert!(q.raised.subject.contains("accept its best result as partial"), "{}", q.raised.subject);
    let (run, t, _) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str()), ("failed", "exhausted"));
    assert_eq!(server.requests().len(), 3);
    assert_eq!(f.events("trajectory_exhausted").await.len(), 1);
    assert!(f.events("trajectory_converged").await.is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn a_hint_to_a_partial_result_buys_one_more_extension_that_carries_it() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(8, "8"), passing(7, "7"), passing(7, "7 again"), passing(10, "10")])
            .await
            .unwrap();
    let hint = "Return n * n instead of the table.";
    let asked = f.run_answering(&suite, &server, attended_only("partial_result"), |_| ("hint", Some(hint))).await;

    assert_eq!(asked.iter().map(|q| q.raised.kind.as_str()).collect::<Vec<_>>(), vec!["partial_result"]);
    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str(), obs.len()), ("complete", "converged", 4), "{:?}", run.error);
    assert!(user_message(&server, 3).contains(hint), "{}", user_message(&server, 3));
    let granted = f.events("budget_extension_granted").await;
    assert_eq!((granted.len(), granted[0]["by"].as_str()), (1, Some("person")));
    server.shutdown().await;
}

#[tokio::test]
async fn a_partial_result_in_notify_mode_is_accepted_with_a_notice() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(8, "8"), passing(7, "7"), passing(7, "7 again")]).await.unwrap();
    let mut config = unattended();
    config.engine.interventions.partial_result = Some(InterventionMode::Notify);
    f.run(&suite, &server, config, 1).await;

    let (run, t, _) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str()), ("partial", "accepted_partial"));
    let notices = f.interventions_of_kind("partial_result").await;
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].status, "notice");
    assert!(
        notices[0].raised.subject.contains("ended with a partial result at level 0.89"),
        "{}",
        notices[0].raised.subject
    );
    assert_explained(&notices[0]);
    server.shutdown().await;
}
