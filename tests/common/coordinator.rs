//! A coordinator as the optimize task builds one, supervised by the
//! heuristics alone (no model), for the tests that run the ASO loop itself.

use std::sync::Arc;

use attractor::aso::config::AsoConfig;
use attractor::aso::{Coordinator, SupervisionContext, TieredSupervisor};
use attractor::numeric::problem::Problem;
use attractor::store::Store;

/// A coordinator for `problem` under `config` with `seed`, writing its
/// telemetry to `telemetry` when given; never cancelled.
pub fn heuristic(
    problem: Arc<dyn Problem>,
    config: AsoConfig,
    seed: u64,
    telemetry: Option<(Store, i64)>,
) -> Coordinator {
    // Only the value is read: the sender may go.
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    Coordinator {
        alm: config.alm_settings(),
        supervisor: Arc::new(TieredSupervisor::new(config.clone(), None)),
        context: SupervisionContext { cycle: 1, problem: problem.name().into(), human_hints: vec![], timeout: None },
        problem,
        config,
        telemetry,
        seed,
        chunk_evaluations: 0,
        cancel,
    }
}
