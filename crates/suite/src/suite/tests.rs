//! Every way a suite file can be wrong, and the message each one gets.

use std::path::Path;

use super::*;

fn parse_err(yaml: &str) -> SuiteError {
    match parse(yaml, Path::new("suites/s.yaml")) {
        Ok(s) => panic!("expected an error, got a suite with {} tasks", s.tasks.len()),
        Err(e) => e,
    }
}

fn one(yaml: &str) -> SuiteIssue {
    let e = parse_err(yaml);
    assert_eq!(e.issues.len(), 1, "expected exactly one issue, got: {e}");
    e.issues.into_iter().next().unwrap()
}

fn ok(yaml: &str) -> Suite {
    parse(yaml, Path::new("suites/s.yaml")).unwrap_or_else(|e| panic!("expected a suite, got: {e}"))
}

const CMD: &str = "name: s\ntasks:\n  - name: a\n    command: 'true'\n";

#[test]
fn the_seed_example_suite_shape_loads() {
    // Seed 004 §9, verbatim in shape (with `task` text and a budget).
    let s = ok(r#"
name: research_writeup_v1
description: "Short summary"
baseline_artifacts:
  executor_pitfalls: 0
  planning_preamble: 0
tasks:
  - name: summarise_paper
    task: "Write a 200-word summary..."
    workflow: path/to/workflow.awp.yaml
    model: "openai/gpt-5-mini"
    budget:
      max_loops: 6
      max_total_workers: 5
      max_total_tokens: 400000
      max_wall_time: 240
    weights:
      eval: 0.5
      critique: 0.3
      gate_rejections: 0.15
      budget: 0.02
      status: 0.03
"#);
    assert_eq!(s.name, "research_writeup_v1");
    let t = &s.tasks[0];
    assert_eq!(t.kind_name(), "agent");
    assert_eq!(t.budget.max_total_tokens, Some(400_000));
    assert_eq!(t.budget.max_wall_time, Some(240.0));
    assert_eq!(t.weights.eval, 0.5);
    assert_eq!(t.weights.status, 0.03);
    assert_eq!(t.model.as_deref(), Some("openai/gpt-5-mini"));
    assert_eq!(s.baseline_artifacts.get("planning_preamble"), Some(&0));
}

#[test]
fn the_bundled_example_suite_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/descent.suite.yaml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.artifacts.len(), 1);
    assert_eq!(s.artifacts[0].fields.len(), 3);
    assert!(s.tasks.iter().any(|t| t.holdout));
    assert!(s.tasks.iter().all(|t| t.kind_name() == "command"));
}

#[test]
fn command_tasks_get_defaults_and_extensions() {
    let s = ok(r#"
name: s
tasks:
  - name: a
    command: ./run.sh
    priority: thorough
    hints: [use the cache]
    constraints: [no network]
    anti_patterns: [sleeping]
    parallel_samples: 3
    env: { MODE: fast }
"#);
    let t = &s.tasks[0];
    let TaskKind::Command(c) = &t.kind else { panic!("not a command task") };
    assert_eq!(c.timeout, DEFAULT_COMMAND_TIMEOUT);
    assert_eq!(c.env.get("MODE").map(String::as_str), Some("fast"));
    assert_eq!(t.priority, Some(Priority::Thorough));
    assert_eq!(t.parallel_samples, 3);
    assert_eq!(t.weights, LossWeights::default());
    assert_eq!(t.budget.max_rejections, DEFAULT_MAX_REJECTIONS);
    assert_eq!(s.dir, Path::new("suites"));
}

#[test]
fn timeout_falls_back_to_max_wall_time() {
    let s = ok("name: s\ntasks:\n  - name: a\n    command: x\n    budget: { max_wall_time: 12 }\n");
    let TaskKind::Command(c) = &s.tasks[0].kind else { panic!() };
    assert_eq!(c.timeout, Duration::from_secs(12));
}

#[test]
fn unknown_top_level_key_is_rejected_with_its_place() {
    let i = one(&format!("{CMD}colour: blue\n"));
    assert_eq!((i.location.line, i.location.column), (5, 1));
    assert!(i.message.contains("unknown field `colour`"), "{}", i.message);
    assert!(i.to_string().starts_with("suites/s.yaml:5:1: "), "{i}");
    assert!(i.hint.is_some());
}

#[test]
fn unknown_task_key_names_the_field_path() {
    let i = one("name: s\ntasks:\n  - name: a\n    command: x\n    comand: y\n");
    assert_eq!((i.location.line, i.location.column), (5, 5));
    assert!(i.message.contains("unknown field `comand`"), "{}", i.message);
    assert_eq!(i.field, "tasks[0].comand");
}

#[test]
fn unknown_weight_key_is_rejected() {
    let i = one("name: s\ntasks:\n  - name: a\n    command: x\n    weights:\n      evaluation: 0.5\n");
    assert_eq!(i.location.line, 6);
    assert!(i.message.contains("unknown field `evaluation`"), "{}", i.message);
    assert!(i.message.contains("gate_rejections"), "lists the expected keys: {}", i.message);
}

#[test]
fn wrong_type_is_rejected_with_field_and_place() {
    let i = one("name: s\ntasks:\n  - name: a\n    command: x\n    weights:\n      eval: lots\n");
    assert_eq!((i.location.line, i.location.column), (6, 13));
    assert_eq!(i.field, "tasks[0].weights.eval");
    assert!(i.to_string().contains("field `tasks[0].weights.eval`"), "{i}");
}

#[test]
fn wrong_boolean_is_rejected() {
    let i = one("name: s\ntasks:\n  - name: a\n    command: x\n    holdout: sometimes\n");
    assert_eq!(i.location.line, 5);
    assert_eq!(i.field, "tasks[0].holdout");
}

#[test]
fn tasks_must_be_a_list() {
    let i = one("name: s\ntasks: nope\n");
    assert_eq!(i.location.line, 2);
    assert_eq!(i.field, "tasks");
}

#[test]
fn missing_name_is_rejected() {
    let i = one("tasks:\n  - name: a\n    command: x\n");
    assert!(i.message.contains("missing field `name`"), "{}", i.message);
}

#[test]
fn missing_tasks_is_rejected() {
    let i = one("name: s\n");
    assert!(i.message.contains("missing field `tasks`"), "{}", i.message);
}

#[test]
fn empty_suite_is_rejected() {
    let i = one("name: s\ntasks: []\n");
    assert_eq!((i.location.line, i.location.column), (2, 8));
    assert_eq!(i.field, "tasks");
    assert!(i.message.contains("no tasks"));
}

#[test]
fn duplicate_task_names_are_rejected_at_the_second() {
    let i = one("name: s\ntasks:\n  - name: a\n    command: x\n  - name: a\n    command: y\n");
    assert_eq!((i.location.line, i.location.column), (5, 11));
    assert_eq!(i.field, "tasks[1].name");
    assert!(i.message.contains("duplicate task name `a` (first used at line 3)"), "{}", i.message);
}

#[test]
fn weights_outside_unit_interval_are_rejected() {
    let e =
        parse_err("name: s\ntasks:\n  - name: a\n    command: x\n    weights:\n      eval: 1.5\n      status: -0.1\n");
    assert_eq!(e.issues.len(), 2, "{e}");
    assert_eq!(e.issues[0].field, "tasks[0].weights.eval");
    assert_eq!((e.issues[0].location.line, e.issues[0].location.column), (6, 13));
    assert!(e.issues[0].message.contains("weight 1.5 is outside [0, 1]"));
    assert_eq!(e.issues[1].field, "tasks[0].weights.status");
    assert_eq!(e.issues[1].location.line, 7);
}

#[test]
fn a_command_task_needs_its_command() {
    let i = one("name: s\ntasks:\n  - name: a\n    kind: command\n");
    assert_eq!(i.field, "tasks[0].command");
    assert_eq!(i.location.line, 4);
}

#[test]
fn fields_of_another_kind_are_rejected() {
    let i = one("name: s\ntasks:\n  - name: a\n    kind: agent\n    task: do it\n    command: make\n");
    assert_eq!(i.field, "tasks[0].command");
    assert_eq!(i.location.line, 6);
    assert!(i.message.contains("belongs to `kind: command`"), "{}", i.message);
}

#[test]
fn an_agent_task_needs_task_text() {
    let i = one("name: s\ntasks:\n  - name: a\n    kind: agent\n");
    assert_eq!(i.field, "tasks[0].task");
}

#[test]
fn an_optimize_task_needs_a_problem() {
    let i = one("name: s\ntasks:\n  - name: a\n    kind: optimize\n");
    assert_eq!(i.field, "tasks[0].problem");
    let s = ok("name: s\ntasks:\n  - name: a\n    problem: g01\n");
    assert_eq!(s.tasks[0].kind_name(), "optimize");
}

#[test]
fn unknown_kind_is_rejected() {
    let i = one("name: s\ntasks:\n  - name: a\n    kind: robot\n");
    assert_eq!(i.location.line, 4);
    assert!(i.message.contains("robot"), "{}", i.message);
}

#[test]
fn unsafe_task_names_are_rejected() {
    let i = one("name: s\ntasks:\n  - name: ../escape\n    command: x\n");
    assert_eq!(i.field, "tasks[0].name");
    assert!(i.hint.unwrap().contains("`/`"));
}

#[test]
fn non_positive_timeout_is_rejected() {
    let i = one("name: s\ntasks:\n  - name: a\n    command: x\n    timeout: 0\n");
    assert_eq!(i.field, "tasks[0].timeout");
}

#[test]
fn baseline_pins_must_name_known_artifacts() {
    let i = one(&format!("{CMD}baseline_artifacts:\n  no_such_thing: 2\n"));
    assert_eq!(i.field, "baseline_artifacts.no_such_thing");
    assert_eq!(i.location.line, 6);
    assert!(i.hint.unwrap().contains("executor_pitfalls"));
}

#[test]
fn declared_json_artifact_loads_with_its_bounds() {
    let s = ok(&format!(
        "{CMD}artifacts:\n  - name: knobs\n    type: json\n    content: {{ a: 1.5, n: 3 }}\n    fields:\n      a: {{ min: 0, max: 2 }}\n      n: {{ min: 1, max: 9, integer: true }}\n"
    ));
    let a = &s.artifacts[0];
    assert_eq!(a.kind, ArtifactKind::Json);
    assert!(a.fields["n"].integer);
    let v: serde_json::Value = serde_json::from_str(&a.default_content).unwrap();
    assert_eq!(v["a"], 1.5);
}

#[test]
fn declared_field_must_exist_and_start_inside_its_bounds() {
    let e = parse_err(&format!(
        "{CMD}artifacts:\n  - name: knobs\n    type: json\n    content: {{ a: 5 }}\n    fields:\n      a: {{ min: 0, max: 2 }}\n      b: {{ min: 0, max: 2 }}\n"
    ));
    assert_eq!(e.issues.len(), 2, "{e}");
    assert!(e.issues[0].message.contains("initial value 5 is outside [0, 2]"), "{e}");
    assert!(e.issues[1].message.contains("no numeric field `b`"), "{e}");
}

#[test]
fn inverted_bounds_are_rejected() {
    let i = one(&format!(
        "{CMD}artifacts:\n  - name: knobs\n    type: json\n    content: {{ a: 1 }}\n    fields:\n      a: {{ min: 3, max: 2 }}\n"
    ));
    assert_eq!(i.field, "artifacts[0].fields.a");
}

#[test]
fn artifact_needs_content_or_file_and_not_both() {
    let i = one(&format!("{CMD}artifacts:\n  - name: t\n    type: text\n"));
    assert!(i.message.contains("no `content` or `file`"));
    let i = one(&format!("{CMD}artifacts:\n  - name: t\n    type: text\n    content: hi\n    file: t.txt\n"));
    assert!(i.message.contains("not both"));
}

#[test]
fn artifact_file_is_read_relative_to_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prompt.txt"), "Be brief.\n").unwrap();
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, format!("{CMD}artifacts:\n  - name: style\n    type: text\n    file: prompt.txt\n")).unwrap();
    let s = load(&path).unwrap();
    assert_eq!(s.artifacts[0].default_content, "Be brief.\n");

    std::fs::write(&path, format!("{CMD}artifacts:\n  - name: style\n    type: text\n    file: missing.txt\n"))
        .unwrap();
    let e = load(&path).unwrap_err();
    assert!(e.to_string().contains("cannot read"), "{e}");
}

#[test]
fn builtin_names_cannot_be_redeclared() {
    let i = one(&format!("{CMD}artifacts:\n  - name: aso_config\n    type: text\n    content: x\n"));
    assert!(i.message.contains("built-in"));
}

#[test]
fn json_artifact_content_must_be_a_mapping() {
    let i = one(&format!("{CMD}artifacts:\n  - name: k\n    type: json\n    content: just text\n"));
    assert_eq!(i.field, "artifacts[0].content");
}

#[test]
fn broken_yaml_syntax_is_reported_with_its_place() {
    let i = one("name: s\ntasks:\n  - name: a\n   command: [\n");
    assert!(i.location.line >= 3, "{i}");
    assert!(!i.message.is_empty());
}

#[test]
fn a_syntax_error_names_its_place_and_no_field_it_is_not_in() {
    // `tasks` lost its colon: the reader stops at line 6 while the
    // deserializer was still inside `artifacts[0].fields`.
    let i = one(
        "name: s\nartifacts:\n  - name: k\n    type: json\n    fields:\n      gain: { min: 0, max: 5 }\ntasks\n  - name: a\n    command: x\n",
    );
    assert_eq!(i.location.line, 7, "{i}");
    assert_eq!(i.field, "", "a syntax error is not in a field: {i}");
    assert!(i.message.contains("expected ':'"), "{i}");
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let e = load(Path::new("/no/such/suite.yaml")).unwrap_err().to_string();
    assert!(e.contains("/no/such/suite.yaml:1:1") && e.contains("there is no suite file here"), "{e}");
}

#[test]
fn several_problems_are_reported_together_in_file_order() {
    let e = parse_err(
        "name: s\ntasks:\n  - name: a\n    command: x\n    weights: { eval: 2 }\n  - name: a\n    command: y\n",
    );
    assert_eq!(e.issues.len(), 2, "{e}");
    assert!(e.issues[0].location.line < e.issues[1].location.line);
}

const AGENT: &str = "name: s\ntasks:\n  - name: a\n    task: fix the parser\n";

#[test]
fn agent_task_overseers_load_with_kinds_and_defaults() {
    let s = ok(&format!(
        r#"{AGENT}    workspace: ws
    executor: {{ type: command, command: "agent --prompt {{prompt_file}}", timeout: 60 }}
    overseers:
      - name: build
        command: cargo build
        kind: build
        cost: cheap
      - name: tests
        command: cargo test
        kind: test
        report: target/junit.xml
        timeout: 120
      - name: smoke
        command: ./smoke.sh
        success_pattern: "^ALL OK$"
"#
    ));
    let TaskKind::Agent(a) = &s.tasks[0].kind else { panic!("not an agent task") };
    assert_eq!(a.executor.as_ref().map(|e| e.kind), Some(ExecutorKind::Command));
    let kinds: Vec<_> = a.overseers.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, vec![OverseerKind::Build, OverseerKind::Test, OverseerKind::Custom]);
    assert_eq!(a.overseers[0].cost, CostClass::Cheap);
    assert_eq!(a.overseers[1].cost, CostClass::Moderate);
    assert_eq!(a.overseers[1].timeout, Some(Duration::from_secs(120)));
    assert_eq!(a.overseers[1].report.as_deref(), Some("target/junit.xml"));
    assert_eq!(a.overseers[2].success_pattern.as_deref(), Some("^ALL OK$"));
    assert_eq!(a.overseers[2].timeout, None);
}

#[test]
fn an_unknown_overseer_kind_is_rejected_with_its_place() {
    let i = one(&format!("{AGENT}    overseers:\n      - name: t\n        command: make test\n        kind: unit\n"));
    assert_eq!((i.location.line, i.location.column), (8, 15), "{i}");
    assert_eq!(i.field, "tasks[0].overseers[0].kind");
    assert!(i.message.contains("unit") && i.message.contains("type_check"), "{}", i.message);
}

#[test]
fn patterns_belong_to_custom_overseers_and_must_be_valid_regexes() {
    let i = one(&format!(
        "{AGENT}    overseers:\n      - name: t\n        command: make test\n        kind: test\n        success_pattern: ok\n"
    ));
    assert_eq!(i.field, "tasks[0].overseers[0].success_pattern");
    assert_eq!(i.location.line, 9);
    assert!(i.message.contains("custom overseers"), "{}", i.message);

    let i = one(&format!(
        "{AGENT}    overseers:\n      - name: t\n        command: ./check\n        failure_pattern: '(unclosed'\n"
    ));
    assert_eq!(i.field, "tasks[0].overseers[0].failure_pattern");
    assert_eq!((i.location.line, i.location.column), (8, 26));
    assert!(i.message.contains("not a valid regular expression"), "{}", i.message);
}

#[test]
fn report_paths_stay_in_the_workspace_and_belong_to_tests_or_scans() {
    let e = parse_err(&format!(
        "{AGENT}    overseers:\n      - name: t\n        command: x\n        kind: test\n        report: ../junit.xml\n      - name: l\n        command: y\n        kind: lint\n        report: lint.json\n      - name: s\n        command: z\n        kind: security\n        report: /tmp/sarif.json\n"
    ));
    assert_eq!(e.issues.len(), 3, "{e}");
    assert!(e.issues[0].message.contains("climbs out"), "{e}");
    assert_eq!(e.issues[0].location.line, 9);
    assert!(e.issues[1].message.contains("kind: lint"), "{e}");
    assert!(e.issues[2].message.contains("is absolute"), "{e}");
}

#[test]
fn overseer_names_are_unique_and_commands_not_empty() {
    let e = parse_err(&format!(
        "{AGENT}    overseers:\n      - name: t\n        command: x\n      - name: t\n        command: ' '\n        timeout: -1\n"
    ));
    let fields: Vec<&str> = e.issues.iter().map(|i| i.field.as_str()).collect();
    assert_eq!(
        fields,
        vec!["tasks[0].overseers[1].name", "tasks[0].overseers[1].command", "tasks[0].overseers[1].timeout"],
        "{e}"
    );
    assert!(e.issues[0].message.contains("duplicate overseer name `t` (first used at line 6)"), "{e}");
}

#[test]
fn a_command_executor_needs_its_command() {
    let i = one(&format!("{AGENT}    executor: {{ type: command }}\n"));
    assert_eq!(i.field, "tasks[0].executor.command");
    assert_eq!(i.location.line, 5);
    let i = one(&format!("{AGENT}    executor: {{ type: llm, command: aider }}\n"));
    assert!(i.message.contains("`type: command`"), "{}", i.message);
}

#[test]
fn a_noisy_suite_takes_three_repeats_unless_it_says_how_many() {
    let quiet = ok(CMD);
    assert!(!quiet.noisy);
    assert_eq!(quiet.verify_repeats(), 1);
    let noisy = ok(&format!("noisy: true\n{CMD}"));
    assert!(noisy.noisy);
    assert_eq!(noisy.verify_repeats(), DEFAULT_NOISY_VERIFY_REPEATS);
    let five = ok(&format!("noisy: true\nverify_repeats: 5\n{CMD}"));
    assert_eq!((five.noisy, five.verify_repeats()), (true, 5));
}

#[test]
fn a_bad_noisy_or_verify_repeats_value_is_rejected_with_its_place() {
    let i = one(&format!("{CMD}noisy: often\n"));
    assert_eq!(i.location.line, 5);
    assert_eq!(i.field, "noisy");

    let i = one(&format!("{CMD}noisy: true\nverify_repeats: 1\n"));
    assert_eq!((i.location.line, i.location.column), (6, 17));
    assert_eq!(i.field, "verify_repeats");
    assert!(i.message.contains("outside the range 2 to 20"), "{}", i.message);
    assert!(i.to_string().starts_with("suites/s.yaml:6:17: field `verify_repeats`: "), "{i}");

    let i = one(&format!("{CMD}noisy: true\nverify_repeats: three\n"));
    assert_eq!((i.location.line, i.field.as_str()), (6, "verify_repeats"));

    let i = one(&format!("{CMD}verify_repeats: 3\n"));
    assert_eq!(i.location.line, 5);
    assert!(i.message.contains("no `noisy: true`"), "{}", i.message);
    assert!(i.hint.as_deref().unwrap_or_default().contains("noisy: true"), "{i}");
}

#[test]
fn anti_patterns_are_sentences_or_checks_and_every_one_is_said() {
    let s = ok(&format!(
        "{AGENT}    anti_patterns:\n      - editing the tests\n      - avoid: special-casing the inputs\n        forbid: 'if n == \\d+'\n        paths: ['**/*.py']\n"
    ));
    let t = &s.tasks[0];
    assert_eq!(t.anti_patterns, vec!["editing the tests", "special-casing the inputs"]);
    let TaskKind::Agent(a) = &t.kind else { panic!("an agent task") };
    assert_eq!(
        a.forbidden,
        vec![Forbidden {
            avoid: "special-casing the inputs".into(),
            pattern: r"if n == \d+".into(),
            paths: vec!["**/*.py".into()]
        }]
    );
}

#[test]
fn a_checked_anti_pattern_that_cannot_be_checked_is_refused_at_its_entry() {
    let i = one(&format!("{AGENT}    anti_patterns:\n      - said\n      - avoid: x\n        forbid: '(unclosed'\n"));
    assert_eq!((i.location.line, i.location.column), (7, 9), "{i}");
    assert_eq!(i.field, "tasks[0].anti_patterns[1].forbid");
    assert!(i.message.contains("not a usable regular expression") && i.message.contains("unclosed"), "{i}");
    assert!(!i.message.contains('\n'), "{i}");

    let i =
        one(&format!("{AGENT}    anti_patterns:\n      - avoid: x\n        forbid: y\n        paths: ['../up/*']\n"));
    assert_eq!(i.field, "tasks[0].anti_patterns[0].paths[0]");
    assert!(i.message.contains("leads outside the workspace"), "{i}");

    let i = one(&format!(
        "{AGENT}    anti_patterns:\n      - avoid: x\n        forbid: y\n      - avoid: x\n        forbid: z\n"
    ));
    assert_eq!(i.field, "tasks[0].anti_patterns[1].avoid");
    assert!(i.message.contains("already called `x`"), "{i}");

    let i = one(&format!("{AGENT}    anti_patterns:\n      - avoid: x\n        forbids: y\n"));
    assert!(i.message.contains("unknown field `forbids`"), "{i}");

    let i = one(&format!("{CMD}    anti_patterns:\n      - avoid: x\n        forbid: y\n"));
    assert_eq!(i.field, "tasks[0].anti_patterns[0].forbid");
    assert!(i.message.contains("reads an agent's changes") && i.message.contains("kind: command"), "{i}");
}
