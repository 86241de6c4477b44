"""Tests of bench/peers.py: evaluation counting, caching, the success rule,
resuming and the summary; with ATTRACTOR_BIN set (a build with `problems
eval`), also whole runs through the real evaluator.

    PY=$(bench/setup-peers.sh)
    ATTRACTOR_BIN=target/release/attractor $PY -m unittest discover -s bench -p 'test_peers.py'
"""

import contextlib
import io
import json
import math
import os
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers

PROBLEM = {
    "name": "toy",
    "source": "toy",
    "dimension": 2,
    "bounds": [[0.0, 1.0], [0.0, 1.0]],
    "inequalities": ["g1"],
    "equalities": ["h1"],
    "best_known": -2.0,
    "reference": -2.0,
}


class FakeEvaluator:
    """f = −x1 − x2, g = x1 − 0.9, h = x2 − 1; errors at x1 = 0.5 exactly."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        if x[0] == 0.5:
            return "line 1: not a finite value"
        return -x[0] - x[1], [x[0] - 0.9], [x[1] - 1.0]


@unittest.skipIf(peers.np is None, "numpy is not installed: run with the python bench/setup-peers.sh prints")
class RunAccounting(unittest.TestCase):
    def run_with(self, budget=10, tol=1e-4, reference=-2.0):
        ev = FakeEvaluator()
        return ev, peers.Run(ev, dict(PROBLEM, reference=reference), budget, tol, tol)

    def test_the_same_point_counts_once_and_the_budget_stops_new_ones(self):
        ev, run = self.run_with(budget=2)
        run.evaluate([0.1, 0.2])
        run.evaluate([0.1, 0.2])
        run.evaluate([0.3, 0.2])
        self.assertEqual((run.evals, ev.calls), (2, 2))
        run.evaluate([0.1, 0.2])  # still cached: free even with the budget spent
        with self.assertRaises(peers.BudgetSpent):
            run.evaluate([0.4, 0.2])
        self.assertEqual(run.evals, 2)

    def test_success_is_at_the_first_feasible_point_within_the_gap(self):
        _, run = self.run_with(reference=-1.9)
        run.evaluate([0.95, 1.0])  # infeasible (g = 0.05): not counted as a success however good
        run.evaluate([0.8, 1.0])  # feasible, f = −1.8: gap 0.05
        self.assertEqual(run.best_feasible, -1.8)
        self.assertIsNone(run.evals_to_success)
        run.evaluate([0.9, 1.0])  # feasible, f = −1.9: the reference
        run.evaluate([0.85, 1.0])
        self.assertEqual((run.evals_to_success, run.best_feasible, run.evals), (3, -1.9, 4))

    def test_stop_at_success_ends_the_run_at_its_first_success(self):
        ev = FakeEvaluator()
        run = peers.Run(ev, dict(PROBLEM, reference=-1.9), 10, 1e-4, 1e-4, stop_at_success=True)
        run.evaluate([0.8, 1.0])  # feasible, not within the gap: goes on
        with self.assertRaises(peers.BudgetSpent):
            run.evaluate([0.9, 1.0])  # the reference: counted, then the run ends
        self.assertEqual((run.evals_to_success, run.evals, run.best_point), (2, 2, (-1.9, 0.0)))
        self.assertEqual(run.evaluate([0.9, 1.0])[0], -1.9)  # cached, like any evaluated point

    def test_the_gap_is_one_sided_and_relative(self):
        _, run = self.run_with(reference=-1.0)
        self.assertTrue(run.succeeds(-1.5))  # below the reference: reached
        self.assertTrue(run.succeeds(-1.0 + 0.99e-4))
        self.assertFalse(run.succeeds(-1.0 + 1.01e-4))
        _, zero = self.run_with(reference=0.0)
        self.assertTrue(zero.succeeds(0.9e-4))  # absolute gap at a zero reference
        self.assertFalse(zero.succeeds(1.1e-4))
        _, none = self.run_with(reference=None)
        self.assertTrue(none.succeeds(123.0))

    def test_an_unevaluable_point_counts_and_is_infeasible_with_infinite_values(self):
        _, run = self.run_with()
        f, g, h, v = run.evaluate([0.5, 0.5])
        self.assertEqual(run.evals, 1)
        self.assertTrue(math.isinf(f) and math.isinf(g[0]) and math.isinf(h[0]) and math.isinf(v))
        self.assertIsNone(run.best_feasible)

    def test_final_falls_back_to_the_best_point_seen(self):
        _, run = self.run_with()
        run.evaluate([0.95, 0.5])  # violation 0.5
        run.evaluate([0.95, 0.9])  # violation 0.1: least violated
        self.assertEqual(run.final(None), (-1.85, 0.09999999999999998))
        run.evaluate([0.2, 1.0])  # feasible beats any infeasible point
        self.assertEqual(run.final(None), (-1.2, 0.0))
        self.assertEqual(run.final([0.95, 0.5]), (-1.45, 0.5))


class Files(unittest.TestCase):
    def test_resume_reads_done_rows_and_skips_a_cut_off_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.jsonl")
            row = dict.fromkeys(peers.FIELDS)
            row.update(problem="g01", method="slsqp", seed=3)
            with open(path, "w") as f:
                f.write(json.dumps(row) + "\n" + '{"problem": "g01", "meth')
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(peers.done_keys(path), {("g01", "slsqp", 3)})
            self.assertIn("r.jsonl:2", err.getvalue())

    def test_resuming_with_other_settings_is_refused_with_the_line_and_what_to_do(self):
        settings = {"budget": 10000, "tol": 1e-6, "gap": 1e-4, "stop_at_success": True}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.jsonl")
            old = dict(problem="g01", method="slsqp", seed=1)  # written before rows named their settings
            full = dict(settings, problem="g01", method="slsqp", seed=2, stop_at_success=False)
            with open(path, "w") as f:
                f.write(json.dumps(old) + "\n" + json.dumps(full) + "\n")
            with self.assertRaises(peers.InputError) as refused:
                peers.done_keys(path, settings)
            message = str(refused.exception)
            self.assertTrue(message.startswith(f"{path}:2: "), message)
            self.assertIn("stop_at_success False, not stop_at_success True", message)
            self.assertIn("hint: write to another --out", message)
            # The same settings resume.
            self.assertEqual(peers.done_keys(path, dict(settings, stop_at_success=False)), {("g01", "slsqp", 1), ("g01", "slsqp", 2)})

    def test_summarize_prints_a_success_table(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.jsonl")
            rows = []
            for seed, success in [(1, True), (2, False)]:
                r = dict.fromkeys(peers.FIELDS)
                r.update(problem="g01", method="cobyla", seed=seed, success=success, evals=100, seconds=0.5)
                r.update(evals_to_success=40 if success else None, best_feasible=-15.0 if success else None)
                rows.append(json.dumps(r))
            with open(path, "w") as f:
                f.write("\n".join(rows) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                peers.main(["summarize", path])
            self.assertIn("| g01 | 1/2 |", out.getvalue())
            self.assertIn("| g01 | cobyla | 1/2 | 40 | -15 | 1 | 0 | 200 |", out.getvalue())


@unittest.skipUnless(os.environ.get("ATTRACTOR_BIN") and peers.np is not None, "needs ATTRACTOR_BIN and the venv")
class ThroughTheEvaluator(unittest.TestCase):
    def test_every_method_runs_and_reports_every_field(self):
        binary = peers.resolve_binary(os.environ["ATTRACTOR_BIN"])
        problem = peers.list_problems(binary, ["g24"])[0]
        # init_worker ignores Ctrl-C, as a pool worker should; not for the test runner after this test.
        self.addCleanup(signal.signal, signal.SIGINT, signal.getsignal(signal.SIGINT))
        peers.init_worker(binary)
        rows = {}
        for method in peers.METHODS:
            row = peers.run_task((problem, method, 1, 300, 1e-4, 1e-4, False))
            self.assertEqual(list(row), list(peers.FIELDS))
            self.assertIsNone(row["error"], (method, row))
            self.assertLessEqual(row["evals"], 300)
            self.assertIsNotNone(row["best_feasible"], method)
            rows[method] = row
        # multistart spends the whole budget and finds g24's global optimum.
        self.assertEqual(rows["multistart-slsqp"]["evals"], 300)
        self.assertTrue(rows["multistart-slsqp"]["success"], rows["multistart-slsqp"])
        # With its own rule it stops after ten starts that found nothing
        # better, long before a large budget.
        row = peers.run_task((problem, "multistart-slsqp-stop", 1, 100000, 1e-4, 1e-4, False))
        self.assertIsNone(row["error"], row)
        self.assertTrue(row["success"], row)
        self.assertLess(row["evals"], 100000)


if __name__ == "__main__":
    unittest.main()
