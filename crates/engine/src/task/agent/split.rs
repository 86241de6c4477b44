//! Splitting a trajectory into subtasks and an integration trajectory
//! (seed 002 §9.1–9.3), as the run carries it out.
//!
//! - **Proactive** ([`propose_at_setup`]): in DECIDE, before the first
//!   attempt, when the engine's rule says to ask (`proactive: auto` — a
//!   narrow basin with a priority hint — or `always`). Under `auto` the
//!   split is applied only when its estimated cost is clearly below the
//!   monolith's; the recommendation is announced either way.
//! - **Reactive** ([`Driver::split`]): when the engine chooses `decompose`
//!   (a limit cycle or a long plateau with the other escapes spent), the
//!   model is asked instead of the executor.
//!
//! Either way a usable split becomes a [`Coordination`] in the trajectory's
//! state: the subtasks run one after another as child trajectories (each on
//! its share of the budget, in a copy of the workspace its predecessor left,
//! measured by the overseers the split named for it), then the integration
//! trajectory runs on its quarter of the budget from the last subtask's
//! result, measured by every overseer of the task. Its end is the split
//! trajectory's end. Unlike the seed, the integration runs even when a
//! subtask did not converge: the chain leaves that subtask's best state in
//! place and the integration — the only trajectory judged by the task's own
//! overseers — may still finish the job.
//!
//! A split that cannot be used (no usable reply, too little budget left)
//! is never an error: the reason is recorded (state notes, event) and the
//! trajectory goes on without it — a proactive one as a single trajectory,
//! a reactive one with `decompose` set aside and another strategy chosen.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use serde_json::{Value, json};

use super::decompose::{
    self, Cancelled, Coordination, Decomposition, Limits, ProposalRequest, SubtaskOutcome, integration_specification,
    subtask_specification,
};
use super::{
    AgentError, AgentRun, Driver, End, Kit, Placement, Report, Role, SPLIT_STEP, Setup, Start, derived_seed,
    is_terminal_status, nested_workspace_dir, rng_at, state,
};
use crate::bus::Event;
use crate::engine::basin::{BasinInputs, estimate_basin_width, estimate_convergence};
use crate::engine::decompose::{allocate, evaluate, should_propose, subtask_complexity};
use crate::engine::{ConvergencePhase, DecomposedBudget, ProactiveDecomposition, StrategyChoice, StrategyKind};
use crate::executor::{PromptInputs, Specification};
use crate::memory::Recall;
use crate::suite::{Overseer, OverseerKind, Task};
use crate::workspace::Workspace;

/// A usable split with its budgets.
pub(super) struct Split {
    pub decomposition: Decomposition,
    pub budgets: DecomposedBudget,
}

/// How a split trajectory's subtasks and integration ended.
#[derive(Debug, Clone)]
pub(super) struct Decided {
    pub proactive: bool,
    pub decomposition: Decomposition,
    pub children: Vec<Report>,
    pub integration: Report,
}

/// What the trajectories under a split trajectory spent together.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Totals {
    pub iterations: u32,
    pub tokens: u64,
    pub wall_time_ms: u64,
    pub gate_rejections: u32,
}

impl Decided {
    pub fn totals(&self) -> Totals {
        self.children.iter().chain(std::iter::once(&self.integration)).fold(Totals::default(), |t, r| Totals {
            iterations: t.iterations.saturating_add(r.iterations),
            tokens: t.tokens.saturating_add(r.tokens),
            wall_time_ms: t.wall_time_ms.saturating_add(r.wall_time_ms),
            gate_rejections: t.gate_rejections.saturating_add(r.gate_rejections),
        })
    }

    /// The split in the split trajectory's result record.
    pub fn summary(&self) -> Value {
        let brief = |r: &Report| {
            json!({
                "trajectory_id": r.id, "status": r.status, "level": r.level,
                "iterations": r.iterations, "tokens": r.tokens,
            })
        };
        let subtasks: Vec<Value> = self
            .decomposition
            .subtasks
            .iter()
            .zip(&self.children)
            .map(|(s, r)| {
                let mut v = brief(r);
                v["name"] = json!(s.name);
                v["specification"] = json!(s.specification);
                v["overseers"] = json!(s.overseers);
                v["criteria"] = json!(s.criteria);
                v
            })
            .collect();
        json!({
            "proactive": self.proactive,
            "rationale": self.decomposition.rationale,
            "subtasks": subtasks,
            "integration": brief(&self.integration),
            "notes": self.decomposition.notes,
        })
    }
}

/// The executor's view of a task that has not started (no history yet).
fn task_inputs(task: &Task) -> PromptInputs {
    PromptInputs {
        task_name: task.name.clone(),
        specification: Specification::new(task.task.clone()),
        hints: task.hints.clone(),
        constraints: task.constraints.clone(),
        anti_patterns: task.anti_patterns.clone(),
        ..PromptInputs::default()
    }
}

fn limits(kit: &Kit) -> Limits {
    let c = &kit.engine.config.decomposition;
    Limits { min_subtasks: c.min_subtasks, max_subtasks: c.max_subtasks }
}

/// DECIDE (seed 002 §9.1): whether the task is split before its first
/// attempt. A proposal that fails or does not pay off is recorded in the
/// setup record (and the bus) and the task runs whole; the proposal's tokens
/// are charged to the task's budget either way.
pub(super) async fn propose_at_setup(
    r: &AgentRun<'_>,
    kit: &Kit,
    id: &str,
    setup: &mut Setup,
    ws: &Workspace,
) -> Option<Split> {
    let c = &kit.engine.config.decomposition;
    if !should_propose(c.proactive, &setup.plan.basin, r.task.priority) {
        return None;
    }
    let fail = |setup: &mut Setup, reason: String, tokens: u64| {
        tracing::info!(task = %r.task.name, %reason, "the task is not split");
        setup.json["decomposition"] = json!({"proposed": true, "applied": false, "reason": reason, "tokens": tokens});
        r.bus.publish(Event::DecompositionFailed {
            suite_id: r.suite_id,
            run_id: r.run_id,
            trajectory_id: id.to_string(),
            proactive: true,
            reason,
        });
    };
    let Some(client) = kit.planner.as_ref() else {
        fail(setup, "no model is configured to propose a split".to_string(), 0);
        return None;
    };
    let inputs = PromptInputs { lessons: Recall::lessons_of_setup(&setup.json), ..task_inputs(r.task) };
    let request = ProposalRequest {
        client,
        executor: &r.config.executor,
        model: r.task.model.as_deref(),
        texts: &kit.texts,
        inputs: &inputs,
        overseers: &r.spec.overseers,
        limits: limits(kit),
        cancel: Some(r.cancel.clone()),
    };
    // Stopped while asking: the run notices the stop as soon as it starts.
    let proposal = decompose::propose(request, ws).await.ok()?;
    setup.budget.tokens_used = setup.budget.tokens_used.saturating_add(proposal.tokens);
    let decomposition = match proposal.result {
        Ok(d) => d,
        Err(reason) => {
            fail(setup, reason, proposal.tokens);
            return None;
        }
    };

    // Is the split worth it? The seed's comparison of expected iterations.
    let estimates: Vec<_> = decomposition
        .subtasks
        .iter()
        .map(|s| {
            let inputs = BasinInputs {
                description: s.specification.clone(),
                acceptance_tests: r
                    .spec
                    .overseers
                    .iter()
                    .filter(|o| o.kind == OverseerKind::Test && s.overseers.contains(&o.name))
                    .count(),
                invariants: s.criteria.len(),
                ..BasinInputs::default()
            };
            let basin = estimate_basin_width(&inputs, &kit.engine.config.basin);
            estimate_convergence(subtask_complexity(r.config.complexity), &basin, &[], &kit.engine.config.estimate)
        })
        .collect();
    let decision = evaluate(&setup.plan.estimate, &estimates, c);
    let applied = decision.recommended() || c.proactive == ProactiveDecomposition::Always;
    r.bus.publish(Event::DecompositionRecommended {
        suite_id: r.suite_id,
        run_id: r.run_id,
        trajectory_id: id.to_string(),
        subtask_count: decomposition.subtasks.len() as u32,
        savings_estimate: decision.savings(),
        applied,
    });
    if !applied {
        setup.json["decomposition"] = json!({
            "proposed": true, "applied": false, "decision": decision, "tokens": proposal.tokens,
            "reason": "the split's estimated cost is not clearly below the whole task's",
        });
        return None;
    }
    match allocate(&setup.budget.remaining(), decomposition.subtasks.len(), c.integration_share) {
        Ok(budgets) => {
            setup.json["decomposition"] =
                json!({"proposed": true, "applied": true, "decision": decision, "tokens": proposal.tokens});
            Some(Split { decomposition, budgets })
        }
        Err(e) => {
            fail(setup, e.to_string(), proposal.tokens);
            None
        }
    }
}

impl<'r> Driver<'r> {
    /// Turns this trajectory into the coordinator of `split`: the subtasks'
    /// and the integration's ids and budgets go into its state (so a restart
    /// continues the split), and the bus hears of it.
    pub(super) async fn begin_split(&mut self, split: Split, proactive: bool) -> Result<(), AgentError> {
        let n = split.decomposition.subtasks.len();
        let children: Vec<String> = (1..=n).map(|i| format!("{}.d{i}", self.place.id)).collect();
        let integration = format!("{}.integration", self.place.id);
        let mut all = children.clone();
        all.push(integration.clone());
        for note in &split.decomposition.notes {
            self.state.notes.push(format!("split: {note}"));
        }
        self.r.bus.publish(Event::DecompositionStarted {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            proactive,
            subtasks: split.decomposition.subtasks.iter().map(|s| s.name.clone()).collect(),
            children: children.clone(),
            integration: integration.clone(),
        });
        self.state.coordination = Some(Coordination {
            proactive,
            decomposition: split.decomposition,
            children,
            integration,
            budgets: split.budgets,
            start_commit: self.state.head_commit.clone(),
        });
        self.state.next = None;
        self.state.trajectory.pending = None;
        self.state.trajectory.phase = ConvergencePhase::Coordinating { children: all };
        self.save("coordinating").await
    }

    /// The engine chose `decompose`: ask the model for a split of the task
    /// as it stands, and coordinate it — or, when it cannot be used, set
    /// `decompose` aside and go on with another strategy.
    pub(super) async fn split(&mut self, choice: StrategyChoice) -> Result<Option<End>, AgentError> {
        let sequence = self.state.trajectory.observations.len() as u32;
        self.announce(&choice, sequence);
        let Some(client) = self.kit.planner.clone() else {
            self.fall_through("no model is configured to propose a split".to_string()).await?;
            return Ok(None);
        };
        let inputs = PromptInputs {
            lessons: Recall::lessons_of_setup(&self.setup),
            ..state::prompt_inputs(&self.task, &self.state, &choice, None)
        };
        let request = ProposalRequest {
            client: &client,
            executor: &self.r.config.executor,
            model: self.r.task.model.as_deref(),
            texts: &self.kit.texts,
            inputs: &inputs,
            overseers: &self.overseer_specs,
            limits: limits(self.kit),
            cancel: Some(self.place.cancel.clone()),
        };
        let proposal = match decompose::propose(request, &self.ws).await {
            Ok(p) => p,
            Err(Cancelled) => return Ok(Some(self.stopped())),
        };
        let b = &mut self.state.trajectory.budget;
        b.tokens_used = b.tokens_used.saturating_add(proposal.tokens);
        let share = self.kit.engine.config.decomposition.integration_share;
        let remaining = self.state.trajectory.budget.remaining();
        let split = proposal.result.and_then(|decomposition| {
            allocate(&remaining, decomposition.subtasks.len(), share)
                .map(|budgets| Split { decomposition, budgets })
                .map_err(|e| e.to_string())
        });
        match split {
            Ok(split) => self.begin_split(split, false).await?,
            Err(reason) => self.fall_through(reason).await?,
        }
        Ok(None)
    }

    /// A reactive split that cannot be used: recorded, and another strategy
    /// chosen under the same directive.
    async fn fall_through(&mut self, reason: String) -> Result<(), AgentError> {
        tracing::info!(task = %self.r.task.name, trajectory = %self.place.id, %reason, "the split is not used");
        let sequence = self.state.trajectory.observations.len();
        self.state.notes.push(format!("a split was asked for after observation {}: {reason}", sequence.max(1) - 1));
        self.r.bus.publish(Event::DecompositionFailed {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            proactive: false,
            reason,
        });
        let mut rng = rng_at(self.state.seed, SPLIT_STEP + sequence as u64);
        let next = self.kit.engine.set_aside(
            &mut self.state.trajectory,
            &self.state.bandit,
            StrategyKind::Decompose,
            &mut rng,
        )?;
        self.state.next = Some(next);
        self.save("running").await
    }

    /// Runs the split: each subtask in order, then the integration.
    pub(super) async fn coordinate(&mut self) -> Result<End, AgentError> {
        let Some(c) = self.state.coordination.clone() else {
            return Err(AgentError::Resume {
                id: self.place.id.clone(),
                reason: "it has no split to coordinate".to_string(),
            });
        };
        let parent = self.state.trajectory.specification.effective.render();
        let n = c.decomposition.subtasks.len();
        // The chain starts from this trajectory's state at the split.
        let mut source = self.ws.root().to_path_buf();
        let mut children = Vec::with_capacity(n);
        for (i, subtask) in c.decomposition.subtasks.iter().enumerate() {
            let (Some(id), Some(budget)) = (c.children.get(i), c.budgets.subtasks.get(i)) else {
                return Err(AgentError::Resume {
                    id: self.place.id.clone(),
                    reason: format!("its split lists {n} subtasks but not the id or budget of subtask {}", i + 1),
                });
            };
            let overseers: Vec<Overseer> =
                self.overseer_specs.iter().filter(|o| subtask.overseers.contains(&o.name)).cloned().collect();
            let child = Child {
                id,
                role: Role::Subtask,
                ordinal: i as u32 + 1,
                name: format!("subtask {} of {n}: {}", i + 1, subtask.name),
                specification: subtask_specification(&parent, subtask, i, n),
                overseers: if overseers.is_empty() { self.overseer_specs.clone() } else { overseers },
                budget,
            };
            let report = self.run_child(child, &source).await?;
            if report.cancelled {
                return Ok(self.stopped());
            }
            source = report.workspace.clone();
            children.push(report);
        }
        let outcomes: Vec<SubtaskOutcome<'_>> = c
            .decomposition
            .subtasks
            .iter()
            .zip(&children)
            .map(|(subtask, r)| SubtaskOutcome { subtask, status: &r.status, level: r.best_level.unwrap_or(r.level) })
            .collect();
        let child = Child {
            id: &c.integration,
            role: Role::Integration,
            ordinal: n as u32 + 1,
            name: "integration".to_string(),
            specification: integration_specification(&parent, &outcomes),
            overseers: self.overseer_specs.clone(),
            budget: &c.budgets.integration,
        };
        let integration = self.run_child(child, &source).await?;
        if integration.cancelled {
            return Ok(self.stopped());
        }
        Ok(End::Decided(Box::new(Decided {
            proactive: c.proactive,
            decomposition: c.decomposition,
            children,
            integration,
        })))
    }

    /// Runs one trajectory under this one to its end: continued if an
    /// earlier run started it, taken as it ended if it did, else started in
    /// a copy of `source`.
    async fn run_child(&self, child: Child<'_>, source: &Path) -> Result<Report, AgentError> {
        let place = Placement {
            id: child.id.to_string(),
            parent_id: Some(self.place.id.clone()),
            role: child.role,
            ordinal: child.ordinal,
            depth: self.place.depth + 1,
            cancel: self.place.cancel.clone(),
            group: None,
        };
        if let Some(row) = self.r.store.trajectory(child.id).await? {
            if is_terminal_status(&row.status) {
                return Ok(Report::from_row(&row, &self.kit.engine.config.level));
            }
            match Driver::reopen(self.r, self.kit, place, &row).await? {
                Some(driver) => return Ok(boxed_drive(driver).await),
                None => {
                    // Closed as failed (its state or workspace is gone): it
                    // counts as a subtask that did not converge.
                    let row = self.r.store.trajectory(child.id).await?.unwrap_or(row);
                    return Ok(Report::from_row(&row, &self.kit.engine.config.level));
                }
            }
        }
        let dest: PathBuf = nested_workspace_dir(self.r.run_dir, child.id);
        let ws = Workspace::create(source, &dest, self.r.config.workspace.clone()).await?;
        let mut task = self.task.clone();
        task.name = format!("{} — {}", self.r.task.name, child.name);
        task.task = child.specification.clone();
        let names: Vec<&str> = child.overseers.iter().map(|o| o.name.as_str()).collect();
        let policy = self.state.trajectory.policy.clone();
        let setup = json!({
            "role": child.role,
            "parent_id": self.place.id,
            "task_name": task.name,
            "specification": child.specification,
            "overseers": names,
            "budget": child.budget,
            "policy": policy,
            "basin": self.setup["basin"],
            "category": self.kit.category,
            // The category's memories, for the prompts' lessons.
            "memory": self.setup["memory"],
        });
        let driver = Driver::create(
            self.r,
            self.kit,
            Start {
                place,
                task,
                overseers: child.overseers,
                ws,
                budget: child.budget.clone(),
                policy,
                hints: self.state.trajectory.hints.clone(),
                setup,
                seed: derived_seed(self.state.seed, u64::from(child.ordinal)),
            },
        )
        .await?;
        Ok(boxed_drive(driver).await)
    }
}

/// A trajectory to run under a split one.
struct Child<'a> {
    id: &'a str,
    role: Role,
    ordinal: u32,
    name: String,
    specification: String,
    overseers: Vec<Overseer>,
    budget: &'a crate::engine::ConvergenceBudget,
}

/// Drives a trajectory under another one. Boxed and type-erased: a split
/// trajectory drives its children from inside its own drive, and a future
/// cannot contain itself.
fn boxed_drive<'a>(driver: Driver<'a>) -> Pin<Box<dyn Future<Output = Report> + Send + 'a>> {
    Box::pin(driver.drive())
}
