//! Which optimizer a run uses: named by a run request (the CLI's
//! `--optimizer`, the app's launch form, the HTTP API), stored with the
//! plan and announced on the bus. Building one is the outer loop's job
//! (`outer::optimizer::build`); the name lives here so every layer can say it.

use serde::Serialize;

/// The optimizers a run request can name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// No updates: measure the natural variance of the suite.
    #[default]
    Baseline,
    /// Perturb one numeric field of one JSON artifact within its bounds.
    Evolve,
    /// Ask a model to rewrite one artifact from the epoch's evidence (seed 004 §7).
    Textgrad,
    /// A tree search over artifact sets (seed 001): children by textgrad when
    /// a model is configured, by evolve otherwise; `--epochs` caps the evaluations.
    Tree,
    /// Several candidates per epoch by different moves (define, rewrite,
    /// restructure, reorder, shorten, worked examples), each screened on a
    /// minibatch of training examples; the best that beats the current
    /// version is measured in full by the next epoch.
    Screen,
}

impl OptimizerKind {
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Baseline => "baseline",
            OptimizerKind::Evolve => "evolve",
            OptimizerKind::Textgrad => "textgrad",
            OptimizerKind::Tree => "tree",
            OptimizerKind::Screen => "screen",
        }
    }

    /// Whether this optimizer calls a model.
    pub fn needs_model(self) -> bool {
        matches!(self, OptimizerKind::Textgrad | OptimizerKind::Screen)
    }
}
