//! Registry invariants on a real SQLite file: version 0 is never stored, at
//! most one version is active, rollback is a pointer flip, nothing is deleted.

mod common;

use attractor::artifact::{ArtifactDef, ArtifactKind, Origin, RegistryError, builtin};
use common::{Env, count};

#[tokio::test]
async fn version_zero_is_the_builtin_default_and_never_stored() {
    let env = Env::new().await;
    let reg = env.registry().await;
    let v = reg.get_active("executor_pitfalls").await.unwrap();
    assert_eq!(v.version, 0);
    assert!(v.is_active);
    assert_eq!(v.content, builtin::find("executor_pitfalls").unwrap().content);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM artifact_versions").await, 0);

    // Even after versions exist and v0 is re-activated, v0 has no row.
    let v1 = reg.put_version("executor_pitfalls", "new text", 0, None).await.unwrap();
    assert_eq!(v1, 1);
    reg.set_active("executor_pitfalls", 1).await.unwrap();
    reg.rollback_to("executor_pitfalls", 0).await.unwrap();
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM artifact_versions WHERE version = 0").await, 0);
    let history = reg.history("executor_pitfalls").await.unwrap();
    assert_eq!(history.iter().map(|h| h.version).collect::<Vec<_>>(), vec![0, 1]);
    assert!(history[0].is_active && !history[1].is_active);
}

#[tokio::test]
async fn a_new_version_is_inactive_until_set_active() {
    let env = Env::new().await;
    let reg = env.registry().await;
    reg.put_version("verification_rubric", "v1", 0, None).await.unwrap();
    assert_eq!(reg.get_active("verification_rubric").await.unwrap().version, 0);
    reg.set_active("verification_rubric", 1).await.unwrap();
    let active = reg.get_active("verification_rubric").await.unwrap();
    assert_eq!((active.version, active.content.as_str()), (1, "v1"));
}

#[tokio::test]
async fn at_most_one_version_is_active() {
    let env = Env::new().await;
    let reg = env.registry().await;
    for i in 1..=4 {
        let v = reg.put_version("planning_preamble", &format!("text {i}"), i - 1, None).await.unwrap();
        reg.set_active("planning_preamble", v).await.unwrap();
        assert_eq!(
            count(
                &env.store,
                "SELECT COUNT(*) FROM artifact_versions WHERE artifact_name = 'planning_preamble' AND is_active = 1"
            )
            .await,
            1
        );
    }
    // The database itself refuses a second active row, whatever code tries.
    let pool = common::raw_pool(&env.store).await;
    let second = sqlx::query(
        "UPDATE artifact_versions SET is_active = 1 WHERE artifact_name = 'planning_preamble' AND version = 1",
    )
    .execute(&pool)
    .await;
    assert!(second.is_err(), "a second active version must be rejected by the schema");
    // And (name, version) is unique.
    let dup = sqlx::query(
        "INSERT INTO artifact_versions (artifact_name, version, content, parent_version, created_at, is_active) VALUES ('planning_preamble', 2, 'x', 1, 'now', 0)",
    )
    .execute(&pool)
    .await;
    assert!(dup.is_err());
    pool.close().await;
}

/// Every (version, content) pair of an artifact, v0 first.
async fn contents(reg: &attractor::artifact::Registry, name: &str) -> Vec<(i64, String)> {
    reg.history(name).await.unwrap().into_iter().map(|v| (v.version, v.content)).collect()
}

#[tokio::test]
async fn rollback_is_a_pointer_flip_that_keeps_every_version() {
    let env = Env::new().await;
    let reg = env.registry().await;
    reg.put_version("supervisor_prompt", "one", 0, None).await.unwrap();
    reg.put_version("supervisor_prompt", "two", 1, None).await.unwrap();
    reg.set_active("supervisor_prompt", 2).await.unwrap();
    let before = contents(&reg, "supervisor_prompt").await;
    reg.rollback_to("supervisor_prompt", 1).await.unwrap();
    let after = contents(&reg, "supervisor_prompt").await;
    assert_eq!(before, after, "contents untouched");
    assert_eq!(reg.get_active("supervisor_prompt").await.unwrap().content, "one");

    // Forward again: also just a flip.
    reg.rollback_to("supervisor_prompt", 2).await.unwrap();
    assert_eq!(reg.get_active("supervisor_prompt").await.unwrap().content, "two");
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM artifact_versions").await, 2);
}

#[tokio::test]
async fn unknown_names_and_versions_are_clear_errors() {
    let env = Env::new().await;
    let reg = env.registry().await;
    let e = reg.get_active("nope").await.unwrap_err();
    assert!(matches!(e, RegistryError::Unknown { .. }));
    assert!(e.to_string().contains("executor_pitfalls"), "lists known names: {e}");
    let e = reg.rollback_to("executor_pitfalls", 9).await.unwrap_err();
    assert!(matches!(e, RegistryError::NoSuchVersion { version: 9, .. }));
    assert!(e.to_string().contains("attractor inspect --artifact executor_pitfalls"));
    // A failed rollback leaves the active pointer alone.
    assert_eq!(reg.get_active("executor_pitfalls").await.unwrap().version, 0);
}

fn declared(name: &str, suite: &str, content: &str) -> ArtifactDef {
    ArtifactDef {
        name: name.into(),
        kind: ArtifactKind::Text,
        origin: Origin::Suite(suite.into()),
        description: String::new(),
        default_content: content.into(),
        fields: Default::default(),
    }
}

#[tokio::test]
async fn suite_artifacts_have_their_declared_content_as_version_zero() {
    let env = Env::new().await;
    let mut reg = env.registry().await;
    reg.declare(declared("style", "a", "Be brief.")).await.unwrap();
    assert_eq!(reg.get_active("style").await.unwrap().content, "Be brief.");
    // A fresh registry reads the declaration back from the store.
    let reg2 = env.registry().await;
    assert_eq!(reg2.get("style", 0).await.unwrap().content, "Be brief.");
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM artifact_versions").await, 0);
}

#[tokio::test]
async fn two_suites_cannot_declare_the_same_artifact() {
    let env = Env::new().await;
    let mut reg = env.registry().await;
    reg.declare(declared("style", "a", "x")).await.unwrap();
    // The same suite may re-declare (its file changed).
    reg.declare(declared("style", "a", "y")).await.unwrap();
    let e = reg.declare(declared("style", "b", "z")).await.unwrap_err();
    assert!(e.to_string().contains("already declared by suite `a`"), "{e}");
}
