//! `--optimizer tree` on real command tasks, offline (children by evolve):
//! every evaluation is an epoch, the tree is stored, the best node's versions
//! end up active, it stops on stall or at the evaluation budget, and an
//! exhausted node is pruned.

mod common;

use attractor::outer::tree::TreeConfig;
use attractor::outer::{OptimizerKind, RunConfig};
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
    RunConfig { learning_rate: 0.3, tree, ..env.config(evaluations, OptimizerKind::Tree) }
}

#[tokio::test]
async fn the_tree_search_improves_on_the_root_and_activates_its_best_node() {
    let env = Env::new().await;
    let path = suite(&env, 1.0);
    let summary = env.run(&path, config(&env, 12, TreeConfig { stall: 10, ..TreeConfig::default() })).await;

    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let nodes = env.store.tree_nodes(s.id).await.unwrap();
    assert!(nodes[0].parent_id.is_none());
    // Every evaluation is an epoch, within the budget.
    let evaluations: i64 = nodes.iter().map(|n| n.evaluations).sum();
    assert_eq!(evaluations, summary.epochs.len() as i64);
    assert!(summary.epochs.len() <= 12);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epochs WHERE completed_at IS NOT NULL").await, evaluations);

    let root_mean = nodes[0].mean_loss.unwrap();
    let best = nodes
        .iter()
        .filter(|n| n.status == "committed" || n.status == "pruned")
        .min_by(|a, b| a.mean_loss.unwrap().total_cmp(&b.mean_loss.unwrap()))
        .unwrap();
    assert!(best.mean_loss.unwrap() < root_mean, "x = 1 is far from 5: some child must do better");
    // Every committed child beat its parent; every discarded one did not.
    for n in nodes.iter().filter(|n| n.parent_id.is_some() && n.mean_loss.is_some()) {
        let parent = nodes.iter().find(|p| Some(p.id) == n.parent_id).unwrap();
        let (child, par) = (n.mean_loss.unwrap(), parent.mean_loss.unwrap());
        match n.status.as_str() {
            // A pruned node was committed first, then exhausted.
            "committed" | "pruned" => assert!(child < par, "node {} committed without beating its parent", n.id),
            "discarded" => assert!(child >= par || n.note.as_deref().unwrap_or("").contains("held-out")),
            other => panic!("unexpected status {other}"),
        }
    }
    let active = env.registry().await.get_active("knob").await.unwrap();
    assert_eq!(Some(active.version), best.to_version, "the best node's version is active");
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
    assert_eq!(nodes[0].status, "pruned", "{nodes:#?}");
    let children: Vec<_> = nodes.iter().filter(|n| n.parent_id == Some(nodes[0].id)).collect();
    assert_eq!(children.len(), 3);
    assert!(children.iter().all(|c| c.status == "discarded"));
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
    assert_eq!(nodes.iter().filter(|n| n.parent_id.is_none()).count(), 1, "one root: {nodes:#?}");
    assert_eq!(nodes.iter().map(|n| n.evaluations).sum::<i64>(), 8);
}
