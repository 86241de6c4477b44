//! The built-in learnable artifacts and their version-0 content.
//!
//! Seed 004 names six prompt artifacts of its own system; ours map onto the
//! prompts Attractor's inner loops send:
//!
//! | seed 004                          | Attractor                  |
//! |-----------------------------------|----------------------------|
//! | worker_pitfalls                   | `executor_pitfalls`        |
//! | manager_planning_preamble         | `planning_preamble`        |
//! | experiment_context_hint_template  | `carry_forward_template`   |
//! | pattern_library                   | `strategy_templates`       |
//! | tool_description_templates        | `tool_description_templates` |
//! | critique_rubric                   | `verification_rubric`      |
//!
//! plus `executor_preamble` (the opening of every executor prompt),
//! `supervisor_prompt` (the ASO coordinator's LLM tier) and `aso_config`
//! (the coordinator's numeric thresholds, a JSON artifact with bounds).
//! Version 0 lives here, in the code: it is never written to the database and
//! is always there to fall back to.
//!
//! `strategy_templates` is a *sectioned* text, so that every strategy's
//! description is learnable on its own while the artifact stays one text an
//! optimizer can rewrite: the lines before the first section header are the
//! framing shown with every attempt (`{strategy}` and `{description}` are
//! filled in), and each `[strategy_name]` line opens that strategy's
//! description (see [`crate::executor::StrategyTemplates`]).

use super::{ArtifactKind, FieldBounds};

/// One built-in artifact.
pub struct Builtin {
    pub name: &'static str,
    pub kind: ArtifactKind,
    /// What the artifact steers, shown in `inspect` and the app.
    pub purpose: &'static str,
    pub content: &'static str,
    /// For JSON artifacts: the numeric fields an optimizer may move, with bounds.
    pub fields: &'static [(&'static str, FieldBounds)],
}

/// The task kinds whose runs read a built-in artifact. An optimizer only
/// proposes changes a suite's tasks can feel: the executor's prompts matter
/// to agent tasks, the coordinator's to optimize tasks, none of them to an
/// external harness run as a command task.
pub fn task_kinds_steered(name: &str) -> &'static [&'static str] {
    match name {
        // Agent tasks read them only under `supervision: aso`.
        "supervisor_prompt" | "aso_config" => &["optimize", crate::domain::ASO_AGENT_KIND],
        _ => &["agent"],
    }
}

const fn real(min: f64, max: f64) -> FieldBounds {
    FieldBounds { min, max, integer: false }
}

const fn int(min: f64, max: f64) -> FieldBounds {
    FieldBounds { min, max, integer: true }
}

/// Version 0 of `executor_preamble`: who the executor model is and how it works.
pub const EXECUTOR_PREAMBLE: &str = "You are the executor of a supervised coding loop. You change the files of a \
workspace so that it does what the task asks. You do not judge your own result: after you reply, independent \
checks (builds, tests, linters, scanners) measure the workspace, and their verdicts decide what happens next. \
Make the smallest change that moves those checks toward passing, keep what already works working, and say \
plainly what you changed and why.\n";

/// Version 0 of `strategy_templates`: the framing, then one section per strategy.
pub const STRATEGY_TEMPLATES: &str = "You are following the strategy \"{strategy}\": {description}
Stay within it; if it cannot work, say so and explain why.

[retry_with_feedback]
Attempt the task again, using the feedback of the last measurement. Every failing check below is evidence about \
what is still wrong; address each of them, and do not undo what passed.

[retry_augmented]
Attempt the task again with more context than before. Read the related code, the documentation and the examples \
shown below before changing anything, and let them decide how the change should look.

[focused_repair]
Repair only the failing tests named below. Change nothing that is not needed to make them pass: no refactoring, \
no new features, no renames. Read each failure, find its cause, fix that cause.

[incremental_refinement]
Close exactly one gap in this attempt: the one named below. Leave every other gap for later attempts, even when \
you see how to fix it; a small change that is verified beats a large one that is not.

[reframe]
Treat the task as a fresh implementation problem rather than a repair. Forget how the current code happens to be \
organised; design the solution from the requirements and the lessons listed below, then write it.

[decompose]
Split the task into small subtasks that can each be checked on its own, list them in order in `subtasks`, and \
carry out only the first one now.

[alternative_approach]
Solve the task with an approach that differs in kind from the ones already tried (listed below): another \
algorithm, another library, another structure. Repeating a tried approach with small changes does not count.

[architect_review]
Step back and review the specification itself. Where the attempts so far show that it is ambiguous, incomplete \
or contradictory, propose precise changes in `amendments`, then make the change the amended specification calls \
for.

[revert_and_branch]
The workspace has been put back to its best state so far. Continue from there in a different direction than the \
attempts that came after it, which made things worse or no better.

[fresh_start]
This is a fresh start: the earlier conversation is gone on purpose, and only the knowledge carried forward below \
remains. The files in the workspace are as the earlier attempts left them; read them with fresh eyes before \
changing them.
";

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "executor_preamble",
        kind: ArtifactKind::Text,
        purpose: "Opening of every executor prompt: who the model is and how its work is judged.",
        content: EXECUTOR_PREAMBLE,
        fields: &[],
    },
    Builtin {
        name: "executor_pitfalls",
        kind: ArtifactKind::Text,
        purpose: "Pitfalls injected into every executor prompt.",
        content: "Before you answer, check these common mistakes:\n\
- Editing files that the task did not ask you to touch.\n\
- Declaring success without running the checks that measure it.\n\
- Repeating an approach that already failed without changing anything.\n\
- Leaving placeholder code (TODO, unimplemented) in a deliverable.\n",
        fields: &[],
    },
    Builtin {
        name: "planning_preamble",
        kind: ArtifactKind::Text,
        purpose: "Preamble shown before planning and decomposition decisions.",
        content: "Plan before you act. List the deliverables the task names, the checks that \
will judge them, and the smallest sequence of steps that produces each one. Split the work \
only where the parts can be checked on their own.\n",
        fields: &[],
    },
    Builtin {
        name: "carry_forward_template",
        kind: ArtifactKind::Text,
        purpose: "Template of what a fresh start carries forward from earlier attempts.",
        content: "Earlier attempts at this task:\n{attempts}\n\nWhat they established:\n{facts}\n\n\
Approaches that failed and why:\n{failures}\n",
        fields: &[],
    },
    Builtin {
        name: "strategy_templates",
        kind: ArtifactKind::Text,
        purpose: "The strategy library rendered into executor prompts: a framing ({strategy}, {description}), \
then one [strategy_name] section per strategy with its description.",
        content: STRATEGY_TEMPLATES,
        fields: &[],
    },
    Builtin {
        name: "tool_description_templates",
        kind: ArtifactKind::Text,
        purpose: "Boilerplate around the tools and blocked tools shown to an executor.",
        content: "Tools you may use:\n{tools}\n\nTools you must not use in this attempt:\n{blocked}\n",
        fields: &[],
    },
    Builtin {
        name: "verification_rubric",
        kind: ArtifactKind::Text,
        purpose: "Rubric the intent verifier scores a deliverable against.",
        content: "Score the deliverable from 0 to 1:\n\
- 1.0: does everything the task asks, and the checks confirm it.\n\
- 0.5: does the main part; something named in the task is missing or unverified.\n\
- 0.0: does not address the task, or breaks what worked before.\n\
Name each defect you find in one line.\n",
        fields: &[],
    },
    Builtin {
        name: "supervisor_prompt",
        kind: ArtifactKind::Text,
        purpose: "System prompt of the ASO coordinator's LLM supervision tier.",
        content: "You supervise the trajectories of an optimizer: a numerical solver, or a coding agent \
working until its checks pass. Read the diagnostics and answer with one directive (CONTINUE, ADJUST, \
STOP or RESTART) in the JSON schema given. Prefer CONTINUE when progress is steady; ADJUST when a \
constraint (a failing check) stays violated; RESTART when a trajectory is stuck or diverging; STOP \
when it is done or hopeless.\n",
        fields: &[],
    },
    Builtin {
        name: "aso_config",
        kind: ArtifactKind::Json,
        purpose: "Thresholds of the ASO coordinator's heuristic tier, and when and how it runs a population trajectory.",
        content: r#"{
  "supervision_mode": "event_triggered",
  "supervision_interval": 5,
  "feasibility_threshold": 0.001,
  "stagnation_objective_threshold": 0.00001,
  "stagnation_violation_threshold": 0.05,
  "max_stagnation_steps": 5,
  "violation_increase_threshold": 0.05,
  "violation_decrease_threshold": 0.05,
  "min_violation_for_trend": 0.001,
  "n_trajectories": 3,
  "trajectory_budget_split": "equal",
  "max_constraint_weight": 1000.0,
  "max_penalty_parameter": 1000000.0,
  "llm_timeout_seconds": 60.0,
  "llm_max_retries": 2,
  "use_heuristic_fallback": true,
  "llm_failures_before_human": 3,
  "max_stalled_rounds": 40,
  "population_after_stalled_rounds": 40,
  "population_min_dimension": 15,
  "population_after_rounds": 1,
  "population_budget_share": 1.0,
  "max_population_trajectories": 1,
  "population_size_per_dimension": 6.0,
  "population_scale_factor": 0.5,
  "population_crossover_rate": 0.9,
  "population_chunk_generations": 25,
  "population_polish_gain": 0.001,
  "population_repair_probability": 0.1
}
"#,
        fields: &[
            ("feasibility_threshold", real(1e-6, 1e-1)),
            ("stagnation_objective_threshold", real(1e-9, 1e-2)),
            ("stagnation_violation_threshold", real(1e-3, 0.5)),
            ("max_stagnation_steps", int(1.0, 50.0)),
            ("violation_increase_threshold", real(1e-3, 0.5)),
            ("violation_decrease_threshold", real(1e-3, 0.5)),
            ("min_violation_for_trend", real(1e-6, 1e-1)),
            ("n_trajectories", int(1.0, 16.0)),
            ("supervision_interval", int(1.0, 100.0)),
            ("max_stalled_rounds", int(1.0, 100.0)),
            ("population_after_stalled_rounds", int(0.0, 100.0)),
            ("population_min_dimension", int(0.0, 100.0)),
            ("population_budget_share", real(0.1, 1.0)),
            ("population_size_per_dimension", real(1.0, 20.0)),
            ("population_scale_factor", real(0.1, 1.0)),
            ("population_crossover_rate", real(0.0, 1.0)),
            ("population_chunk_generations", int(1.0, 200.0)),
            ("population_polish_gain", real(0.0, 0.5)),
            ("population_repair_probability", real(0.0, 1.0)),
        ],
    },
];

/// The built-in artifact of that name, if any.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_builtins_parse_and_sit_inside_their_bounds() {
        for b in BUILTINS.iter().filter(|b| b.kind == ArtifactKind::Json) {
            let v: serde_json::Value = serde_json::from_str(b.content).expect(b.name);
            for (field, bounds) in b.fields {
                let x = v[field].as_f64().unwrap_or_else(|| panic!("{}.{field} missing", b.name));
                assert!(bounds.contains(x), "{}.{field} = {x} outside bounds", b.name);
            }
        }
    }

    #[test]
    fn builtin_names_are_unique() {
        let mut names: Vec<_> = BUILTINS.iter().map(|b| b.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), BUILTINS.len());
    }
}
