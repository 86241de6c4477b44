//! `--optimizer tree` on real command tasks, offline (children by evolve):
//! every evaluation is an epoch, the tree is stored, the best node's versions
//! end up active, it stops on stall or at the evaluation budget, and an
//! exhausted node is pruned.

mod common;

use attractor::outer::tree::TreeConfig;
use attractor::outer::{OptimizerKind, RunConfig};
use attractor::store::ProposalOutcome;
use common::{Env, count};

/// x = 5 is perfect for `near` tasks; the held-out task agrees.
const SCORER: &str = r#"
import json, os, sys
x = json.load(open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "knob.json")))["x"]
target = float(sys.argv[1])
json.dump({"status": "complete", "eval_score": max(0.0, 1 - abs(x - target) / 10), "critique_score": 1.0,
           "gate_rejection_count": 0, "budget_remaining_pct": 100}, open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

fn suite(env: &Env, start: f64) -> std::path::PathBuf {
    std::fs::write(env.path("score.py"), SCORER).unwrap();
    env.suite(
        "knob.yaml",
        &format!(
            r#"
name: knob
artifacts:
  - name: knob
    type: json
    content: {{ x: {start} }}
    fields:
      x: {{ min: 0, max: 10 }}
tasks:
  - name: one
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py" 5
  - name: two
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py" 5.5
  - name: held
    task: "a held-out check of the knob"
    holdout: true
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py" 5
"#
        ),
    )
}

fn config(env: &Env, evaluations: u32, tree: TreeConfig) -> RunConfig {
    // Evolve's children are random steps: from x = 1 a step down is clamped
    // at 0 and regresses, and about one seed in eight draws three of those
    // first and prunes the root (7 does; 1 to 5 do not). The search's
    // mechanics, not its luck, are under test here.
    RunConfig { learning_rate: 0.3, tree, seed: 1, ..env.config(evaluations, OptimizerKind::Tree) }
}

#[tokio::test]
async fn the_tree_search_improves_on_the_root_and_activates_its_best_node() {
    let env = Env::new().await;
    let path = suite(&env, 1.0);
    let summary = env.run(&path, config(&env, 12, TreeConfig { stall: 10, ..TreeConfig::default() })).await;

    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    assert!(nodes[0].node.parent_id.is_none());
    // Every evaluation is an epoch, within the budget.
    let evaluations: i64 = nodes.iter().map(|n| n.node.evaluations).sum();
    assert_eq!(evaluations, summary.epochs.len() as i64);
    assert!(summary.epochs.len() <= 12);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epochs WHERE completed_at IS NOT NULL").await, evaluations);

    let root_mean = nodes[0].node.mean_loss.unwrap();
    let best = nodes
        .iter()
        .filter(|n| n.node.status == "committed" || n.node.status == "pruned")
        .min_by(|a, b| a.node.mean_loss.unwrap().total_cmp(&b.node.mean_loss.unwrap()))
        .unwrap();
    assert!(best.node.mean_loss.unwrap() < root_mean, "x = 1 is far from 5: some child must do better: {nodes:#?}");
    // Every committed child beat its parent; every discarded one did not.
    for n in nodes.iter().filter(|n| n.node.parent_id.is_some() && n.node.mean_loss.is_some()) {
        let parent = nodes.iter().find(|p| Some(p.id) == n.node.parent_id).unwrap();
        let (child, par) = (n.node.mean_loss.unwrap(), parent.node.mean_loss.unwrap());
        match n.node.status.as_str() {
            // A pruned node was committed first, then exhausted.
            "committed" | "pruned" => assert!(child < par, "node {} committed without beating its parent", n.id),
            "discarded" => assert!(child >= par || n.node.note.as_deref().unwrap_or("").contains("held-out")),
            other => panic!("unexpected status {other}"),
        }
    }
    let active = env.registry().await.get_active("knob").await.unwrap();
    assert_eq!(Some(active.version), best.node.to_version, "the best node's version is active");
    // A child the search discarded is no winner among the proposals (the
    // Proposals view would show it as applied): it is stored rejected, with
    // its verdict as the reason.
    let proposals = env.store.proposals(s.id).await.unwrap();
    let discarded: Vec<_> = nodes.iter().filter(|n| n.node.status == "discarded").collect();
    assert!(!discarded.is_empty(), "some child did not beat its parent: {nodes:#?}");
    for n in &discarded {
        let of_node: Vec<_> = proposals.iter().filter(|p| Some(p.row.epoch_id) == n.node.epoch_id).collect();
        assert!(!of_node.is_empty(), "node {} has its proposal", n.id);
        for p in of_node {
            assert_eq!(p.row.proposal.outcome, ProposalOutcome::Rejected, "node {}: {p:?}", n.id);
            assert!(p.row.proposal.rejection.as_deref().unwrap_or("").contains("discarded"), "{p:?}");
        }
    }
    assert!(
        proposals.iter().any(|p| p.row.proposal.outcome == ProposalOutcome::Winner),
        "committed children are winners"
    );
    // Each judged child keeps what its judgement saw, task by task.
    let judged: Vec<_> = proposals.iter().filter_map(|p| p.row.proposal.decision.clone()).collect();
    assert!(judged.len() >= discarded.len() + 1, "{proposals:#?}");
    for d in &judged {
        assert_eq!(d.pairs, d.better + d.worse + d.tied, "{d:?}");
        assert!(d.pairs >= 1 && d.low <= d.mean_gain && d.mean_gain <= d.high, "{d:?}");
    }
    // The suite's latest mean loss is the best kept node's (the versions now
    // active), not whatever candidate the last epoch happened to measure.
    let summary = env.store.suite_summaries().await.unwrap().into_iter().find(|x| x.id == s.id).unwrap();
    assert_eq!(summary.latest_mean_loss, best.node.mean_loss);
}

#[tokio::test]
async fn a_committed_child_deepens_its_branch_in_the_same_round_up_to_the_branch_budget() {
    let env = Env::new().await;
    let path = suite(&env, 1.0);
    let deep = TreeConfig { stall: 10, width: 1, branch_depth: 3, ..TreeConfig::default() };
    env.run(&path, config(&env, 12, deep)).await;
    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    let by_id = |id: i64| nodes.iter().find(|n| n.id == id).unwrap();
    // A child of a committed child made in the same round: the lane went on.
    let deepened = nodes.iter().filter(|n| {
        n.node
            .parent_id
            .map(by_id)
            .is_some_and(|p| p.node.parent_id.is_some() && p.node.round == n.node.round && p.node.status != "discarded")
    });
    assert!(deepened.count() >= 1, "{nodes:#?}");
    // Never more than three children of one lane in a round: no chain of four in one round.
    for n in &nodes {
        let mut depth = 0;
        let mut at = n;
        while let Some(p) =
            at.node.parent_id.map(by_id).filter(|p| p.node.round == n.node.round && p.node.parent_id.is_some())
        {
            depth += 1;
            at = p;
        }
        assert!(depth < 3, "node {} is {} deep in round {:?}", n.id, depth + 1, n.node.round);
    }
    // With a budget of one, every child of a round hangs from an earlier round's node.
    let env = Env::new().await;
    let path = suite(&env, 1.0);
    env.run(&path, config(&env, 12, TreeConfig { stall: 10, width: 1, branch_depth: 1, ..TreeConfig::default() }))
        .await;
    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    for n in nodes.iter().filter(|n| n.node.parent_id.is_some()) {
        let p = nodes.iter().find(|p| Some(p.id) == n.node.parent_id).unwrap();
        assert!(p.node.round < n.node.round, "node {} and its parent {} are of one round", n.id, p.id);
    }
}

#[tokio::test]
async fn a_node_whose_children_all_regress_is_pruned_and_the_search_stops() {
    let env = Env::new().await;
    // x = 5 is already perfect for the held-out task and near-perfect for
    // training: every move makes things worse.
    let path = suite(&env, 5.25);
    let summary = env
        .run(&path, config(&env, 40, TreeConfig { stall: 10, width: 1, prune_after: 3, ..TreeConfig::default() }))
        .await;

    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    assert_eq!(nodes[0].node.status, "pruned", "{nodes:#?}");
    let children: Vec<_> = nodes.iter().filter(|n| n.node.parent_id == Some(nodes[0].id)).collect();
    assert_eq!(children.len(), 3);
    assert!(children.iter().all(|c| c.node.status == "discarded"));
    // With the only frontier node pruned, nothing is left to brief: it stopped
    // long before the budget, and v0 stays active.
    assert_eq!(summary.epochs.len(), 4);
    assert_eq!(env.registry().await.get_active("knob").await.unwrap().version, 0);
}

#[tokio::test]
async fn the_search_stops_after_stall_rounds_without_a_new_best() {
    let env = Env::new().await;
    let path = suite(&env, 5.25);
    let summary = env.run(&path, config(&env, 40, TreeConfig { stall: 2, width: 1, ..TreeConfig::default() })).await;
    // Root, then two rounds of one child each, neither a new best.
    assert_eq!(summary.epochs.len(), 3);
}

#[tokio::test]
async fn a_second_invocation_carries_on_the_same_tree() {
    let env = Env::new().await;
    let path = suite(&env, 1.0);
    let tree = TreeConfig { stall: 10, ..TreeConfig::default() };
    env.run(&path, config(&env, 4, tree.clone())).await;
    env.run(&path, config(&env, 4, tree)).await;
    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    assert_eq!(nodes.iter().filter(|n| n.node.parent_id.is_none()).count(), 1, "one root: {nodes:#?}");
    assert_eq!(nodes.iter().map(|n| n.node.evaluations).sum::<i64>(), 8);
}

// ---------------------------------------------------------------------------
// With a model: children by textgrad, ideation on stall, the analyst's hints,
// pre-verify. The scripted server answers in order; every request it got is
// checked for held-out text.

mod with_model {
    use std::time::Duration;

    use attractor::llm::scripted::{Scripted, ScriptedServer};
    use attractor::llm::{LlmClient, LlmConfig};
    use attractor::outer::analyst::AnalystConfig;
    use attractor::outer::ideation::{FAILURE_SYSTEM_PROMPT, FRONTIER_SYSTEM_PROMPT};
    use attractor::outer::textgrad::SYSTEM_PROMPT as TEXTGRAD_PROMPT;
    use attractor::outer::tree::TreeConfig;
    use attractor::store::{TreeNodeRow, TreeNoteRow};
    use serde_json::json;

    use super::{Env, config};

    /// Training tasks like "GOOD" (and a little "GREAT"); the held-out task
    /// is hurt by "!" — an overfitting change.
    const SCORER: &str = r#"
import json, os, sys
text = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "style.txt")).read()
if sys.argv[1] == "train":
    score = 0.5 + (0.3 if "GOOD" in text else 0.0) + (0.1 if "GREAT" in text else 0.0)
else:
    score = 0.2 if "!" in text else 0.6
json.dump({"status": "complete", "eval_score": score, "critique_score": 1.0,
           "gate_rejection_count": 0, "budget_remaining_pct": 100},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

    const SENTINEL: &str = "HOLDOUT-SENTINEL: the expected answer is forty-two";

    fn suite(env: &Env, extra_artifacts: &str, env_block: &str) -> std::path::PathBuf {
        std::fs::write(env.path("style_score.py"), SCORER).unwrap();
        env.suite(
            "style.yaml",
            &format!(
                r#"
name: style
artifacts:
  - name: style
    type: text
    content: "plain"
{extra_artifacts}
tasks:
  - name: first
    command: python3 "$ATTRACTOR_SUITE_DIR/style_score.py" train{env_block}
  - name: second
    command: python3 "$ATTRACTOR_SUITE_DIR/style_score.py" train
  - name: secret_holdout_case
    task: "{SENTINEL}"
    holdout: true
    command: python3 "$ATTRACTOR_SUITE_DIR/style_score.py" holdout
"#
            ),
        )
    }

    fn client(server: &ScriptedServer) -> LlmClient {
        let config = LlmConfig::new(server.base_url(), "tree-test")
            .with_retries(0, Duration::from_millis(10))
            .with_timeout(Duration::from_secs(5))
            .with_cache(false);
        LlmClient::new(config).unwrap()
    }

    fn proposal(name: &str, content: &str, rationale: &str) -> Scripted {
        Scripted::json(&json!({
            "artifact": name, "proposed_content": content, "rationale": rationale,
            "expected_loss_reduction": 0.2, "confidence": 0.8,
        }))
    }

    fn no_change() -> Scripted {
        Scripted::json(&json!({ "artifact": "", "proposed_content": "", "rationale": "nothing",
            "expected_loss_reduction": 0.0, "confidence": 0.0 }))
    }

    fn ideas(list: serde_json::Value) -> Scripted {
        Scripted::json(&json!({ "proposals": list }))
    }

    async fn tree(env: &Env) -> (Vec<TreeNodeRow>, Vec<TreeNoteRow>) {
        let s = env.store.suite_by_name("style").await.unwrap().unwrap();
        (env.store.tree_nodes(s.id).await.unwrap(), env.store.tree_notes(s.id).await.unwrap())
    }

    /// No request carries the held-out task's name, its text, or a held-out
    /// score's explanation.
    fn assert_no_held_out_text(server: &ScriptedServer) {
        for r in server.requests() {
            let body = r.json().to_string();
            for secret in ["secret_holdout_case", "HOLDOUT-SENTINEL", "forty-two", "held-out mean"] {
                assert!(!body.contains(secret), "`{secret}` reached the model: {body}");
            }
        }
    }

    #[tokio::test]
    async fn a_stall_runs_ideation_whose_proposal_makes_the_next_child_and_then_the_search_stops() {
        let env = Env::new().await;
        let path = suite(&env, "", "");
        let script = vec![
            // Round 1: the only child quotes the held-out task: rejected before any run.
            proposal("style", &format!("plain. {SENTINEL}"), "mention the case"),
            // Stall: ideation, frontier extrapolation then failure analysis.
            ideas(json!([{"artifact": "style", "parent": 1, "direction": "Write the word GOOD into the style.",
                          "expected_loss_reduction": 0.3, "confidence": 0.8},
                         {"artifact": "no_such_artifact", "direction": "x", "expected_loss_reduction": 0.1, "confidence": 0.1}])),
            ideas(json!([])),
            // Round 2: the idea's child, a new best.
            proposal("style", "GOOD plain", "follow the direction"),
            // Round 3: no gain; stall again, ideation again.
            proposal("style", "GOOD plain.", "punctuate"),
            ideas(json!([{"artifact": "style", "direction": "Repeat GOOD.", "expected_loss_reduction": 0.1,
                          "confidence": 0.5}])),
            Scripted::reply("not JSON"),
            Scripted::reply("still not JSON"),
            // Round 4: the second idea's child brings nothing: the search stops.
            proposal("style", "GOOD GOOD plain", "repeat"),
        ];
        let calls = script.len();
        let server = ScriptedServer::start(script).await.unwrap();
        // One child per brief: the script follows the rounds.
        let cfg = config(
            &env,
            20,
            TreeConfig { stall: 1, width: 1, ideation_rounds: 1, branch_depth: 1, ..TreeConfig::default() },
        );
        let summary = env.run_with_model(&path, cfg, client(&server)).await.unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), calls, "every scripted reply used, no call after the stop");
        assert_eq!(server.remaining(), 0);
        let system = |i: usize| requests[i].messages()[0].1.clone();
        let user = |i: usize| requests[i].messages()[1].1.clone();
        assert_eq!(system(0), TEXTGRAD_PROMPT);
        assert_eq!((system(1), system(2)), (FRONTIER_SYSTEM_PROMPT.to_string(), FAILURE_SYSTEM_PROMPT.to_string()));
        // The failure analysis hears why the child was refused, never what it quoted.
        assert!(
            user(2).contains("rejected before evaluation: it quoted a task the optimizer must not see"),
            "{}",
            user(2)
        );
        // The frontier extrapolation sees the root and its per-task losses.
        assert!(user(1).contains("Node 1: mean loss 0.2000; per task: first 0.2000, second 0.2000"), "{}", user(1));
        // The idea reaches the child's text-gradient call.
        assert_eq!(system(3), TEXTGRAD_PROMPT);
        assert!(
            user(3).contains("Direction to try (from frontier extrapolation, expected reduction 0.300, confidence 0.80): Write the word GOOD"),
            "{}",
            user(3)
        );
        assert!(user(8).contains("Repeat GOOD."), "the second stall's idea: {}", user(8));
        assert_no_held_out_text(&server);

        // Root, the idea's child, and two that brought nothing.
        assert_eq!(summary.epochs.len(), 4);
        let (nodes, notes) = tree(&env).await;
        let statuses: Vec<(&str, Option<i64>)> = nodes.iter().map(|n| (n.node.status.as_str(), n.node.round)).collect();
        assert_eq!(
            statuses,
            vec![
                ("committed", Some(0)),
                ("rejected", Some(1)),
                ("committed", Some(2)),
                ("discarded", Some(3)),
                ("discarded", Some(4))
            ]
        );
        assert!(
            nodes[1].node.note.as_deref().unwrap().contains("quotes held-out task text"),
            "{:?}",
            nodes[1].node.note
        );
        let child = &nodes[2];
        assert!(child.node.brief.as_deref().unwrap().contains("idea (frontier extrapolation): Write the word GOOD"));
        assert!(child.node.guidance.as_deref().unwrap().contains("Write the word GOOD"));
        let proposal_note =
            notes.iter().find(|n| n.note.kind == "proposal" && n.note.round == 2).expect("the stored idea");
        assert_eq!(proposal_note.note.source, "frontier_extrapolation");
        assert_eq!(proposal_note.node_id, Some(child.id), "the idea links to the child it made");
        assert_eq!(proposal_note.note.parent_id, Some(nodes[0].id));
        assert_eq!(proposal_note.note.expected_loss_reduction, Some(0.3));
        let nothing: Vec<&TreeNoteRow> = notes.iter().filter(|n| n.note.kind == "nothing").collect();
        assert_eq!(nothing.len(), 2, "each failure analysis gave nothing: {notes:#?}");
        assert!(nothing[1].note.text.starts_with("unusable reply"), "{}", nothing[1].note.text);
        assert!(notes.iter().any(|n| n.note.kind == "proposal" && n.note.round == 4 && n.node_id == Some(nodes[4].id)));
        // The best node is active.
        assert_eq!(env.registry().await.get_active("style").await.unwrap().content, "GOOD plain");

        // `attractor inspect style --tree` shows each round with what steered it.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(env.store.path())
            .args(["inspect", "style", "--tree"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(&format!("round 2: #{} committed", child.id)), "{text}");
        assert!(
            text.contains(&format!(
                "[ideation, frontier extrapolation, 0.300 × 0.80 on `style` → #{}] Write the word GOOD",
                child.id
            )),
            "{text}"
        );
        assert!(text.contains("[ideation, failure analysis: nothing] no usable proposal"), "{text}");
    }

    #[tokio::test]
    async fn without_a_model_or_with_ideation_off_a_stall_stops_the_search() {
        let env = Env::new().await;
        let path = suite(&env, "", "");
        let server = ScriptedServer::start(vec![proposal("style", "plain.", "punctuate")]).await.unwrap();
        let cfg = config(&env, 20, TreeConfig { stall: 1, width: 1, ideation_rounds: 0, ..TreeConfig::default() });
        let summary = env.run_with_model(&path, cfg, client(&server)).await.unwrap();
        assert_eq!(server.requests().len(), 1, "no ideation call");
        assert_eq!(summary.epochs.len(), 2);
    }

    #[tokio::test]
    async fn the_analysts_saturated_axis_hint_reaches_the_proposer_and_is_stored_with_its_round() {
        let env = Env::new().await;
        let path = suite(&env, "", "");
        let script = vec![
            proposal("style", "GOOD plain", "say GOOD"),
            proposal("style", "GOOD plain.", "punctuate"),
            // Better on training, worse held out: the held-out gate refuses it.
            proposal("style", "GOOD GREAT plain!", "say GREAT loudly"),
            no_change(),
        ];
        let server = ScriptedServer::start(script).await.unwrap();
        let analyst = AnalystConfig { saturation_window: 2, ..AnalystConfig::default() };
        let cfg = config(
            &env,
            20,
            TreeConfig { stall: 3, width: 1, ideation_rounds: 0, analyst, branch_depth: 1, ..TreeConfig::default() },
        );
        env.run_with_model(&path, cfg, client(&server)).await.unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), 4);
        let last = &requests[3].messages()[1].1;
        assert!(last.contains("Direction from the tree search"), "{last}");
        assert!(last.contains("Saturated axis: the last 2 changes to `style`"), "{last}");
        assert!(last.contains("punctuate — discarded: mean loss"), "the failed attempts are named: {last}");
        assert!(last.contains("say GREAT loudly — discarded by the held-out gate"), "{last}");
        for r in &requests[..3] {
            assert!(!r.messages()[1].1.contains("Saturated axis"), "no hint before the plateau");
        }
        assert_no_held_out_text(&server);

        let (nodes, notes) = tree(&env).await;
        assert!(nodes[3].node.note.as_deref().unwrap().contains("held-out mean rose"), "people see the numbers");
        let hint = notes.iter().find(|n| n.note.source == "analyst").expect("the hint is stored");
        assert_eq!(
            (hint.note.kind.as_str(), hint.note.round, hint.note.artifact.as_deref()),
            ("saturated_axis", 4, Some("style"))
        );
        assert_eq!(notes.iter().filter(|n| n.note.source == "analyst").count(), 1, "stored once");
    }

    #[tokio::test]
    async fn a_child_that_writes_in_an_expected_answer_is_rejected_and_a_short_common_one_is_not() {
        let env = Env::new().await;
        let tone = "  - name: tone\n    type: text\n    content: \"neutral\"";
        let env_block = "\n    env: { EXPECTED_ANSWER: \"violet-harbour-1987\", SHORT: \"yes\" }";
        let path = suite(&env, tone, env_block);
        let script = vec![
            // (root, style), then (root, tone): one round of width two.
            proposal("style", "Always answer violet-harbour-1987.", "give the answer"),
            proposal("tone", "neutral; say yes when asked", "be agreeable"),
        ];
        let server = ScriptedServer::start(script).await.unwrap();
        let cfg = config(&env, 20, TreeConfig { stall: 1, width: 2, ideation_rounds: 0, ..TreeConfig::default() });
        env.run_with_model(&path, cfg, client(&server)).await.unwrap();

        let (nodes, _) = tree(&env).await;
        let style = nodes.iter().find(|n| n.node.changed_artifact.as_deref() == Some("style")).unwrap();
        assert_eq!(style.node.status, "rejected");
        let why = style.node.note.as_deref().unwrap();
        assert!(
            why.contains(
                "contains what task `first` is checked against (env `EXPECTED_ANSWER`): `violet-harbour-1987`"
            ),
            "{why}"
        );
        assert_eq!(style.node.evaluations, 0, "never run");
        assert!(style.node.feedback.as_deref().unwrap().contains("expected answer of task `first`"));
        let tone = nodes.iter().find(|n| n.node.changed_artifact.as_deref() == Some("tone")).unwrap();
        assert_eq!(tone.node.status, "discarded", "`yes` is too short to count: it was evaluated");
        assert_eq!(tone.node.evaluations, 1);
    }

    #[tokio::test]
    async fn a_dead_direction_is_not_briefed_again_while_the_search_goes_on() {
        let env = Env::new().await;
        // Only `style` matters to the scorer: no change to `mood` or `tone` can help.
        let extra = "  - name: mood\n    type: text\n    content: \"calm\"\n  - name: tone\n    type: text\n    content: \"neutral\"";
        let path = suite(&env, extra, "");
        let script = vec![
            proposal("mood", "calmer", "soothe"),
            proposal("style", "plain.", "punctuate"),
            proposal("mood", "calmest", "soothe more"),
            proposal("style", "plain!?", "punctuate harder"),
            // Two failures each: (root, mood) and (root, style) are dead; only tone is left.
            proposal("tone", "warm", "warm up"),
            proposal("tone", "warmer", "warm up more"),
        ];
        let calls = script.len();
        let server = ScriptedServer::start(script).await.unwrap();
        let analyst = AnalystConfig { dead_after: 2, ..AnalystConfig::default() };
        let tree_cfg =
            TreeConfig { stall: 20, width: 2, prune_after: 10, ideation_rounds: 0, analyst, ..TreeConfig::default() };
        let summary = env.run_with_model(&path, config(&env, 30, tree_cfg), client(&server)).await.unwrap();

        let focus: Vec<String> = server
            .requests()
            .iter()
            .map(|r| {
                let user = &r.messages()[1].1;
                ["mood", "style", "tone"]
                    .iter()
                    .find(|a| user.contains(&format!("Artifact `{a}`")))
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(focus, vec!["mood", "style", "mood", "style", "tone", "tone"], "dead pairs are not briefed again");
        assert_eq!(server.requests().len(), calls);
        // With every direction from the only parent dead, no brief is left: it stops.
        assert_eq!(summary.epochs.len(), 7, "the root and six children");
        let (nodes, notes) = tree(&env).await;
        let dead: Vec<(i64, Option<&str>)> = notes
            .iter()
            .filter(|n| n.note.kind == "dead_direction")
            .map(|n| (n.note.round, n.note.artifact.as_deref()))
            .collect();
        assert_eq!(dead, vec![(3, Some("mood")), (3, Some("style")), (5, Some("tone"))]);
        assert!(
            notes.iter().filter(|n| n.note.kind == "dead_direction").all(|n| n.note.parent_id == Some(nodes[0].id))
        );
        assert!(
            nodes
                .iter()
                .filter(|n| n.node.round >= Some(3))
                .all(|n| n.node.changed_artifact.as_deref() == Some("tone"))
        );
    }
}

#[tokio::test]
async fn under_the_approval_gate_the_best_node_waits_for_a_person_and_approving_activates_its_version() {
    let env = Env::new().await;
    let path = suite(&env, 1.0);
    let gated = RunConfig {
        approve_updates: Some(attractor::outer::ApprovalMode::Continue),
        ..config(&env, 8, TreeConfig { stall: 10, ..TreeConfig::default() })
    };
    env.run(&path, gated).await;

    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    let best = nodes
        .iter()
        .filter(|n| n.node.status == "committed" || n.node.status == "pruned")
        .min_by(|a, b| a.node.mean_loss.unwrap().total_cmp(&b.node.mean_loss.unwrap()))
        .unwrap();
    assert!(best.node.parent_id.is_some(), "a child beat the root at x = 1: {nodes:#?}");
    // The search ended; its best is not active yet but waits in the inbox.
    let registry = env.registry().await;
    assert_eq!(registry.get_active("knob").await.unwrap().version, 0, "nothing moved without a person");
    let waiting = env.store.update_approvals_in(s.id, attractor::store::ApprovalStatus::Pending).await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0].update.proposed_version, best.node.to_version);
    assert!(waiting[0].update.rationale.contains("best node"), "{}", waiting[0].update.rationale);
    let versions_before = registry.history("knob").await.unwrap().len();

    let question = waiting[0].intervention_id.unwrap();
    let approve = attractor::outer::approval::Decision::Approve { content: None };
    let decided = attractor::outer::approval::decide(&env.store, question, approve).await.unwrap();
    assert_eq!(decided.applied.map(|(to, _)| to), best.node.to_version);
    let registry = env.registry().await;
    assert_eq!(
        Some(registry.get_active("knob").await.unwrap().version),
        best.node.to_version,
        "the node's own version"
    );
    assert_eq!(registry.history("knob").await.unwrap().len(), versions_before, "no copy of it was written");
}

/// A labelling harness that needs no model and learns from examples: a
/// message is labelled right when the prompt shows it (a worked example),
/// else as "other". It lists every example it scored.
const FEW_SHOT: &str = r#"
import json, os, sys
split = sys.argv[1]
prompt = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "triage.txt")).read()
labels = {"train": ["billing", "bug", "billing", "bug"], "held": ["billing", "bug"]}[split]
examples = []
for i, label in enumerate(labels, 1):
    text = f"{split} message {i}"
    right = f'"{text}"' in prompt
    examples.append({"id": f"{split}-{i}", "input": text, "expected": label,
                     "output": label if right else "other", "score": 1.0 if right else 0.0})
score = sum(e["score"] for e in examples) / len(examples)
json.dump({"status": "complete", "eval_score": score, "critique_score": 1.0, "examples": examples},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

#[tokio::test]
async fn a_brief_whose_proposer_hands_the_text_back_unchanged_gets_a_worked_examples_child() {
    use attractor::llm::scripted::{Scripted, ScriptedServer};
    use attractor::llm::{LlmClient, LlmConfig};
    let env = Env::new().await;
    std::fs::write(env.path("label.py"), FEW_SHOT).unwrap();
    let path = env.suite(
        "triage.yaml",
        r#"
name: triage
artifacts:
  - name: triage
    type: text
    content: "Label the message."
tasks:
  - name: train
    command: python3 "$ATTRACTOR_SUITE_DIR/label.py" train
  - name: held
    holdout: true
    command: python3 "$ATTRACTOR_SUITE_DIR/label.py" held
"#,
    );
    // Every reply is the current text: asked again, the same.
    let unchanged = || {
        Scripted::json(&serde_json::json!({
            "artifact": "triage", "proposed_content": "Label the message.", "rationale": "it is fine",
            "expected_loss_reduction": 0.0, "confidence": 0.5,
        }))
    };
    let server = ScriptedServer::start((0..40).map(|_| unchanged()).collect()).await.unwrap();
    let client = LlmClient::new(
        LlmConfig::new(server.base_url(), "tree-test")
            .with_retries(0, std::time::Duration::from_millis(10))
            .with_timeout(std::time::Duration::from_secs(5))
            .with_cache(false),
    )
    .unwrap();
    let tree = TreeConfig { stall: 3, ..TreeConfig::default() };
    let config = RunConfig { learning_rate: 0.5, tree, seed: 2, ..env.config(3, OptimizerKind::Tree) };
    env.run_with_model(&path, config, client).await.unwrap();

    let s = env.store.suite_by_name("triage").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    let children: Vec<_> = nodes.iter().filter(|n| n.node.parent_id.is_some() && n.node.mean_loss.is_some()).collect();
    assert!(!children.is_empty(), "the unchanged replies left the root without a child: {nodes:#?}");
    let registry = env.registry().await;
    for child in &children {
        let version = child.node.to_version.expect("an evaluated child has its version");
        let text = registry.get("triage", version).await.unwrap().content;
        assert!(text.starts_with("Label the message.") && text.contains("Examples:"), "{text}");
        assert!(!text.contains("held message"), "a held-out input reached a prompt: {text}");
    }
    // The examples it shows are labelled right now: the best child beats the root.
    let root = nodes[0].node.mean_loss.unwrap();
    let best = children.iter().map(|n| n.node.mean_loss.unwrap()).fold(f64::INFINITY, f64::min);
    assert!(best < root, "{best} against the root's {root}");
    let proposals = env.store.proposals(s.id).await.unwrap();
    assert!(
        proposals.iter().any(|p| p
            .row
            .proposal
            .rationale
            .as_deref()
            .is_some_and(|r| r.contains("labelled training examples appended"))),
        "{proposals:#?}"
    );
}
