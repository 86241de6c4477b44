//! Processes an iteration's commands left running behind them.
//!
//! The process runner ([`crate::process`]) kills whatever is still alive in
//! a command's process group once the command is over and names it; this
//! turns those names into [`Event::ProcessLeftRunning`] facts on the bus, one
//! per command, for the auditor to raise its `zombie_process` alert from. The
//! trajectory itself goes on: the stray process is already gone.

use crate::bus::{Bus, Event};
use crate::domain::ProcessSource;
use crate::executor::Execution;
use crate::overseer::runner::Measurement;
use crate::suite::AgentTask;

/// Where the facts go and what they are about.
pub(super) struct Scope<'a> {
    pub bus: &'a Bus,
    pub suite_id: i64,
    pub run_id: i64,
    pub trajectory_id: &'a str,
    pub sequence: u32,
}

/// Publishes one event per command of this iteration that left processes running.
pub(super) fn report(scope: &Scope<'_>, spec: &AgentTask, execution: &Execution, measurement: &Measurement) {
    if !execution.left_running.is_empty() {
        let command = spec.executor.as_ref().and_then(|e| e.command.clone()).unwrap_or_default();
        publish(scope, ProcessSource::Executor, "command", &command, &execution.left_running);
    }
    report_measurement(scope, spec, measurement);
}

/// Publishes one event per overseer of a measurement (the baseline's too)
/// that left processes running.
pub(super) fn report_measurement(scope: &Scope<'_>, spec: &AgentTask, measurement: &Measurement) {
    for run in measurement.runs.iter().filter(|r| !r.left_running.is_empty()) {
        let command =
            spec.overseers.iter().find(|o| o.name == run.overseer).map(|o| o.command.as_str()).unwrap_or_default();
        publish(scope, ProcessSource::Overseer, &run.overseer, command, &run.left_running);
    }
}

fn publish(
    scope: &Scope<'_>,
    source: ProcessSource,
    name: &str,
    command: &str,
    processes: &[crate::process::LeftProcess],
) {
    scope.bus.publish(Event::ProcessLeftRunning {
        suite_id: scope.suite_id,
        run_id: scope.run_id,
        trajectory_id: scope.trajectory_id.to_string(),
        sequence: scope.sequence,
        source,
        name: name.to_string(),
        command: command.to_string(),
        processes: processes.to_vec(),
    });
}
