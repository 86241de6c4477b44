//! The statuses and kinds the layers pass to one another — in bus events,
//! store rows and the app's views — as enums, each with the one spelling the
//! store, the events and the generated TypeScript share. A row's text is read
//! into them once, at the store's edge (`parse`); a value written by a newer
//! version reads as the kind's fallback instead of failing the read.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::loss::RunStatus;

/// An enum of the API whose values the store keeps as text: `parse` reads
/// the stored text, and text this version does not know (a newer version
/// wrote it) reads as the variant after `else`. The front end then sees one
/// of the listed values, never a free string.
macro_rules! stored_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? } else $fallback:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub fn parse(s: &str) -> $name {
                match s {
                    $($text => $name::$variant,)+
                    _ => $name::$fallback,
                }
            }

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        /// Any text reads ([`Self::parse`]): a value a newer version wrote
        /// is the fallback, not an event or a row that fails to load.
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d).map(|s| $name::parse(&s))
            }
        }
    };
}

stored_enum! {
    /// Where an agent trajectory stands.
    TrajectoryState {
        Running = "running",
        /// Paused on a question to a person.
        Paused = "paused",
        Converged = "converged",
        Partial = "partial",
        Exhausted = "exhausted",
        Abandoned = "abandoned",
        Trapped = "trapped",
        Failed = "failed",
        /// A group or split waiting on its children.
        Coordinating = "coordinating",
        /// A sample another one beat.
        Superseded = "superseded",
        Cancelled = "cancelled",
        /// A state this version does not know.
        Other = "other",
    } else Other
}

stored_enum! {
    /// What a trajectory is to its run.
    TrajectoryRole {
        Root = "root",
        /// The root of parallel samples; it makes no attempt itself.
        Parallel = "parallel",
        Sample = "sample",
        Subtask = "subtask",
        /// Measures the subtasks' combined work with the task's own overseers.
        Integration = "integration",
    } else Root
}

stored_enum! {
    /// What the diagnostics said of a numeric trajectory at a step.
    NumericTrajectoryState {
        InProgress = "IN_PROGRESS",
        Stagnation = "STAGNATION",
        FeasibleFound = "FEASIBLE_FOUND",
        Diverging = "DIVERGING",
    } else InProgress
}

stored_enum! {
    /// Who wrote a tree search's note.
    NoteSource {
        Analyst = "analyst",
        Ideation = "ideation",
    } else Analyst
}

stored_enum! {
    /// What a tree search's note says.
    NoteKind {
        DeadDirection = "dead_direction",
        SaturatedAxis = "saturated_axis",
        FrontierExtrapolation = "frontier_extrapolation",
        FailureAnalysis = "failure_analysis",
        /// A kind this version does not know.
        Other = "other",
    } else Other
}

stored_enum! {
    /// What a watched file defines.
    WatchedFileKind {
        Suite = "suite",
        Task = "task",
    } else Suite
}

stored_enum! {
    /// Where a watched file stands.
    WatchedFileStatus {
        Invalid = "invalid",
        Failed = "failed",
        AwaitingApproval = "awaiting_approval",
        Rejected = "rejected",
        Ready = "ready",
        Removed = "removed",
    } else Failed
}

stored_enum! {
    /// Whether the watcher runs a registered file by itself.
    WatchedRunMode {
        Manual = "manual",
        Auto = "auto",
    } else Manual
}

stored_enum! {
    /// Where the run the watcher queued for a file stands.
    WatchedRunStatus {
        Queued = "queued",
        Running = "running",
        Finished = "finished",
        Failed = "failed",
        Cancelled = "cancelled",
        Dropped = "dropped",
    } else Failed
}

stored_enum! {
    /// A watched file's approval to run commands.
    CommandApproval {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    } else Pending
}

stored_enum! {
    /// What kind of task a task (or its run) is.
    TaskType {
        Command = "command",
        Agent = "agent",
        Optimize = "optimize",
    } else Command
}

stored_enum! {
    /// Where a run is: still running, or how it ended.
    RunState {
        Running = "running",
        Complete = "complete",
        Partial = "partial",
        Failed = "failed",
        Aborted = "aborted",
        /// Stopped before it ended (a cancelled launch); it counts nowhere.
        Cancelled = "cancelled",
    } else Failed
}

impl RunState {
    /// How a run that ended was scored, or that it was cancelled.
    pub fn ended(status: Option<RunStatus>, cancelled: bool) -> RunState {
        match (cancelled, status) {
            (true, _) => RunState::Cancelled,
            (false, Some(RunStatus::Complete)) => RunState::Complete,
            (false, Some(RunStatus::Partial)) => RunState::Partial,
            (false, Some(RunStatus::Aborted)) => RunState::Aborted,
            (false, Some(RunStatus::Failed) | None) => RunState::Failed,
        }
    }
}

stored_enum! {
    /// What an intervention is about.
    InterventionKind {
        /// A trajectory asks for more budget.
        BudgetExtension = "budget_extension",
        /// A trapped trajectory, or an optimize task whose model tier keeps failing.
        HumanEscalation = "human_escalation",
        /// An attractor turned into trouble.
        AttractorTransition = "attractor_transition",
        /// The escalation strategy chosen next.
        StrategyEscalation = "strategy_escalation",
        /// An ambiguous specification.
        AmbiguityDetected = "ambiguity_detected",
        /// Accepting a partial result.
        PartialResult = "partial_result",
        /// A watched file asks to run commands.
        ExecutionApproval = "execution_approval",
        /// An optimizer's update waits for approval (the approval gate).
        ArtifactUpdate = "artifact_update",
        /// Runs wait for a worker that offers what their tasks need.
        RunsWaiting = "runs_waiting",
        /// A kind this version does not know (written by a newer one).
        Other = "other",
    } else Other
}

/// What an intervention point does: pause for a person, leave a notice, or
/// decide on its own. A person writes it in an agent configuration, so it
/// is read strictly: a value that is not one of these is an error that names
/// it, not a quiet default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InterventionMode {
    Pause,
    Notify,
    Auto,
}

impl InterventionMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            InterventionMode::Pause => "pause",
            InterventionMode::Notify => "notify",
            InterventionMode::Auto => "auto",
        }
    }
}

impl std::fmt::Display for InterventionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

stored_enum! {
    /// How an agent task's group of parallel samples ended.
    TrajectoryStatus {
        Converged = "converged",
        AcceptedPartial = "accepted_partial",
        Exhausted = "exhausted",
        Failed = "failed",
        Cancelled = "cancelled",
    } else Failed
}

stored_enum! {
    /// Whether a finished trajectory got there, as its memory keeps it.
    MemoryOutcome {
        /// Converged, or ended with a good-enough result accepted (status
        /// `converged` or `accepted_partial`).
        Success = "success",
        /// Exhausted, abandoned, trapped, or stopped on an error.
        Failure = "failure",
    } else Failure
}

impl MemoryOutcome {
    /// The outcome of a trajectory's terminal status.
    pub fn of_status(status: &str) -> MemoryOutcome {
        if matches!(status, "converged" | "accepted_partial") { MemoryOutcome::Success } else { MemoryOutcome::Failure }
    }

    /// How much a memory of this outcome is worth when recalled (seed 002:
    /// failures teach more than successes).
    pub fn relevance(self) -> f64 {
        match self {
            MemoryOutcome::Success => 0.8,
            MemoryOutcome::Failure => 0.9,
        }
    }
}

stored_enum! {
    /// A check's kind that left processes running: the executor's command or
    /// an overseer's.
    ProcessSource {
        Executor = "executor",
        Overseer = "overseer",
    } else Overseer
}

stored_enum! {
    /// What the auditor saw.
    AuditKind {
        Thrashing = "thrashing",
        TokenOverrun = "token_overrun",
        Stuck = "stuck",
        ZombieProcess = "zombie_process",
    } else Stuck
}
