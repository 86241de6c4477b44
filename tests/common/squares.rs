//! The small Python package the agent tests work on: `squares.py` with
//! `square(n)` not written yet, and ten unit tests (`test_1` … `test_10`,
//! n = 1…10) that say what it must return; plus the run configuration those
//! tests share (one baseline epoch, one task at a time).

use std::path::{Path, PathBuf};

use attractor::outer::{OptimizerKind, RunConfig};

const TESTS: &str = "import unittest\n\nfrom squares import square\n\n\nclass SquareTest(unittest.TestCase):\n";

/// Writes the package into `root/pkg` and returns that folder.
pub fn package(root: &Path) -> PathBuf {
    let pkg = root.join("pkg");
    std::fs::create_dir_all(&pkg).expect("create pkg");
    std::fs::write(pkg.join("squares.py"), "def square(n):\n    raise NotImplementedError\n")
        .expect("write squares.py");
    let mut tests = TESTS.to_string();
    for n in 1..=10 {
        tests.push_str(&format!("    def test_{n}(self):\n        self.assertEqual(square({n}), {})\n\n", n * n));
    }
    std::fs::write(pkg.join("test_squares.py"), tests).expect("write test_squares.py");
    pkg
}

/// `epochs` baseline epochs, one task at a time, seed 42, runs under `runs_root`.
pub fn run_config(runs_root: PathBuf, epochs: u32) -> RunConfig {
    RunConfig {
        epochs,
        optimizer: OptimizerKind::Baseline,
        learning_rate: 0.5,
        rollback_on_regression: false,
        concurrency: 1,
        seed: 42,
        runs_root,
        holdout_tolerance: attractor::outer::DEFAULT_HOLDOUT_TOLERANCE,
        verify_repeats: None,
        tree: attractor::outer::tree::TreeConfig::default(),
    }
}
