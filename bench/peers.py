#!/usr/bin/env python3
"""Peer optimizers on Attractor's own problem definitions, for Issue 3 §5.

Runs well-known optimizers from SciPy and NLopt on the problems `attractor`
defines, through `attractor problems eval NAME` (one evaluator process per
worker and problem), with the seeds and the evaluation budget our ASO
coordinator gets, and writes one JSON line per (problem, method, seed).

Usage (the venv comes from bench/setup-peers.sh):

    PY=$(bench/setup-peers.sh)
    $PY bench/peers.py --attractor target/release/attractor --out peers.jsonl \\
        [--problems g01,g04,spring] [--methods slsqp,cobyla] [--runs 20] \\
        [--seed-base 1] [--budget 100000] [--tol 1e-4] [--gap 1e-4] [--jobs 2] [--quiet] \\
        [--stop-at-success]
    $PY bench/peers.py summarize peers.jsonl       # markdown tables (stdlib only)
    $PY bench/peers.py pipe-speed --attractor target/release/attractor [--problem g01]

Methods:
  slsqp             scipy SLSQP, finite-difference gradients
  trust-constr      scipy trust-constr, finite-difference gradients, BFGS Hessians
  cobyla            NLopt LN_COBYLA
  auglag-bobyqa     NLopt AUGLAG with LN_BOBYQA as the local solver
  auglag-lbfgs      NLopt AUGLAG with LD_LBFGS on forward-difference gradients
  isres             NLopt GN_ISRES (default population), maxeval = budget
  multistart-slsqp  SLSQP from fresh uniform random points until the budget is spent
  multistart-slsqp-stop
                    the same, stopping by its own rule: after 10 starts in a row
                    that did not improve its best feasible value (by more than
                    1e-6 relative) — the total cost a user of plain multistart pays
  multistart-slsqp-stop25
                    the same rule with 25 starts in a row: a multistart as
                    patient as it must be to find a basin one start in five
                    reaches (g17's optimum) in every run

Rules, kept identical to how the coordinator is scored (crates/engine/src/task/optimize.rs):
  * One evaluation is the objective and every constraint at one point. Points
    are cached by exact equality of the vector (the last 2n+8 of them), so the
    separate objective, constraint and finite-difference callbacks of SciPy
    and NLopt at the same x count once. Every other point counts, finite
    difference points included; the method is stopped when the budget is spent.
  * Run r uses seed seed_base + r. Every method starts from the same uniform
    random point in the bounds, numpy.random.default_rng(seed).uniform(lo, hi);
    multistart-slsqp draws its later starts from that same generator, and
    nlopt.srand(seed) seeds NLopt's own random numbers (ISRES).
  * max violation = max(0, max g, max |h|) on the raw constraint values (g ≤ 0,
    h = 0); a point is feasible when its max violation ≤ tol.
  * Success is judged at the best feasible point SEEN over all evaluations,
    not only at the point the method returns: the run succeeds when some
    feasible point has gap = (f − ref) / s ≤ gap (--gap, default --tol), with s = |ref| when
    |ref| > 1e-12 and s = 1 otherwise (ref = the `reference` of
    `attractor problems list --json`). The gap is one-sided, as the
    coordinator's: a feasible point below the reference (possible within the
    violation tolerance on equality-constrained problems) counts as reaching
    it. A problem without a reference succeeds at its first feasible point.
    evals_to_success is the number of evaluations up to and including the
    first successful one.
  * final_objective / final_violation are at the point the method returned;
    when the budget stopped it (or it crashed), at the best point seen
    (feasible by objective, else least violation). The returned point is
    looked up in the cache, or evaluated outside the budget.
  * NLopt's own maxeval is the budget too; ISRES, which re-evaluates points
    it has seen (cached, not counted), may so end a little below the budget.
  * A point the evaluator cannot evaluate (a pole, a non-finite value) counts
    as an evaluation and is given to the method as objective +inf and every
    constraint +inf (violated).

Output: --out is appended to, one JSON object per line with the fields
problem, method, seed, success, evals_to_success, best_feasible, evals,
final_violation, final_objective, seconds, error. Rows already in --out are
skipped, so a stopped benchmark resumes where it was. A method that crashes
records its message in "error" and the benchmark goes on.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import OrderedDict

# One BLAS thread per worker: --jobs workers already use the cores, and
# threaded BLAS on the tiny matrices here only adds contention.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# numpy, SciPy and NLopt are needed to run the benchmark, not to summarize it.
try:
    import nlopt
    import numpy as np
    from scipy.optimize import BFGS, Bounds, NonlinearConstraint, minimize
except ImportError as _missing:
    nlopt = np = None
    _MISSING = _missing
else:
    _MISSING = None

METHODS = (
    "slsqp", "trust-constr", "cobyla", "auglag-bobyqa", "auglag-lbfgs", "isres", "multistart-slsqp",
    "multistart-slsqp-stop",
    "multistart-slsqp-stop25",
)
# multistart-slsqp-stop's rule: this many starts in a row without a better
# feasible value end the run.
MULTISTART_PATIENCE = 10
# multistart-slsqp-stop25's: 0.8^25 < 0.4 %, a basin one start in five
# reaches is missed in fewer than 1 run of 250.
PATIENT_MULTISTART_PATIENCE = 25
FIELDS = (
    "problem",
    "method",
    "seed",
    "success",
    "evals_to_success",
    "best_feasible",
    "evals",
    "final_violation",
    "final_objective",
    "seconds",
    "error",
    # What the row was measured under: a file resumed with other settings
    # would mix rows that are not comparable (benchmark refuses to).
    "budget",
    "tol",
    "gap",
    "stop_at_success",
)
# The fields that must agree between the rows of one output file.
SETTINGS = ("budget", "tol", "gap", "stop_at_success")
# Tolerances of the methods themselves: tight, so that the budget, not an
# early stop on a loose tolerance, is what ends a slow method.
XTOL = 1e-10
FTOL = 1e-10
# NLopt's feasibility tolerance on every constraint.
CONSTRAINT_TOL = 1e-8


class InputError(Exception):
    """Bad input to this script: reported on stderr with exit code 2."""


class BudgetSpent(Exception):
    """Raised from inside an optimizer's callback once the budget is spent."""


class EvaluatorDied(RuntimeError):
    """The `attractor problems eval` process ended or answered garbage."""


# --------------------------------------------------------------------------
# The problems and their evaluator


def list_problems(attractor: str, names: list[str]) -> list[dict]:
    """The problems' definitions from `attractor problems list --json`."""
    try:
        out = subprocess.run(
            [attractor, "--json", "problems", "list", *names], capture_output=True, text=True, check=False
        )
    except OSError as e:
        raise InputError(
            f"cannot run the attractor binary `{attractor}`: {e}\n  hint: build it with "
            "`cargo build --release` and pass --attractor target/release/attractor"
        ) from e
    if out.returncode != 0:
        old_build = "unrecognized subcommand" in out.stderr
        hint = "\n  hint: --attractor is a build without the `problems` command; rebuild it" if old_build else ""
        raise InputError(f"`{attractor} problems list` failed (exit {out.returncode}):\n{out.stderr.strip()}{hint}")
    try:
        problems = json.loads(out.stdout)
        if not isinstance(problems, list) or len(problems) != len(names or problems):
            raise ValueError(f"expected a list of {len(names) or 'the'} problems")
    except ValueError as e:
        raise InputError(
            f"`{attractor} --json problems list` printed something else than the problem list ({e}): "
            f"{out.stdout[:200]!r}\n  hint: is --attractor the attractor binary?"
        ) from e
    sources = names or [p["name"] for p in problems]
    for p, source in zip(problems, sources):
        p["source"] = source  # what `problems eval` is given: a name or a file
    return problems


class Evaluator:
    """One `attractor problems eval SOURCE` process, spoken to line by line."""

    def __init__(self, attractor: str, source: str):
        self.source = source
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 — lives as long as the process, closed in close()
        self.proc = subprocess.Popen(
            [attractor, "problems", "eval", source],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        self._write = self.proc.stdin.write
        self._flush = self.proc.stdin.flush
        self._readline = self.proc.stdout.readline
        self._format: dict[int, str] = {}

    def line(self, x: list[float]) -> bytes:
        """x as a JSON array. 17 significant digits round-trip every double
        exactly (the evaluator parses numbers exactly), and `%` formatting is
        faster than repr's shortest form on this hot path."""
        fmt = self._format.get(len(x))
        if fmt is None:
            fmt = self._format[len(x)] = "[" + ",".join(["%.17g"] * len(x)) + "]\n"
        return (fmt % tuple(x)).encode()

    def __call__(self, x: list[float]) -> tuple[float, list[float], list[float]] | str:
        """Objective, inequalities and equalities at x, or the evaluator's error message."""
        try:
            self._write(self.line(x))
            self._flush()
            line = self._readline()
        except (BrokenPipeError, ValueError) as e:
            raise EvaluatorDied(self._why(str(e))) from e
        if not line:
            raise EvaluatorDied(self._why("no answer"))
        try:
            v = json.loads(line)
            if "error" in v:
                return str(v["error"])
            return v["objective"], v["inequalities"], v["equalities"]
        except (ValueError, KeyError, TypeError) as e:
            raise EvaluatorDied(f"`problems eval {self.source}` answered something unexpected: {line[:200]!r}") from e

    def _why(self, what: str) -> str:
        code = self.proc.poll()
        self.stderr.seek(0)
        err = self.stderr.read().decode(errors="replace").strip()[-2000:]
        return f"`problems eval {self.source}` stopped ({what}; exit {code}): {err or 'nothing on stderr'}"

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


# --------------------------------------------------------------------------
# One run: counting, caching and judging every evaluation


class Run:
    """The budget, the cache and the success bookkeeping of one run."""

    def __init__(
        self, evaluator: Evaluator, problem: dict, budget: int, tol: float, gap: float, stop_at_success: bool = False
    ):
        self.evaluator = evaluator
        # Stop the method at its first success (--stop-at-success): only
        # evals_to_success is then measured, not what the method does after it.
        self.stop_at_success = stop_at_success
        self.n = problem["dimension"]
        self.m = len(problem["inequalities"])
        self.p = len(problem["equalities"])
        self.budget = budget
        self.tol = tol
        self.gap = gap
        self.reference = problem["reference"]
        self.scale = abs(self.reference) if self.reference is not None and abs(self.reference) > 1e-12 else 1.0
        self.cache: OrderedDict[bytes, tuple] = OrderedDict()
        # Large enough for a point and all its forward-difference neighbours,
        # which SciPy evaluates once for the objective and again for each
        # constraint group.
        self.cache_size = 2 * self.n + 8
        self.evals = 0
        self.best_feasible: float | None = None
        self.evals_to_success: int | None = None
        self.best_key: tuple | None = None  # (infeasible?, f or violation): the best point seen
        self.best_point: tuple | None = None  # (f, violation)
        self.stop_hooks: list = []  # called once the budget is spent (NLopt's force_stop)

    def evaluate(self, x) -> tuple:
        """(f, g, h, violation) at x, from the cache or as one more evaluation."""
        x = np.asarray(x, dtype=float)
        key = x.tobytes()
        hit = self.cache.get(key)
        if hit is not None:
            self.cache.move_to_end(key)
            return hit
        if self.evals >= self.budget:
            for stop in self.stop_hooks:
                stop()
            raise BudgetSpent()
        self.evals += 1
        value = self._raw(x)
        f, _, _, violation = value
        if violation <= self.tol:
            if self.best_feasible is None or f < self.best_feasible:
                self.best_feasible = f
            if self.evals_to_success is None and self.succeeds(f):
                self.evals_to_success = self.evals
                if self.stop_at_success:
                    self._remember(key, value, f, violation)
                    for stop in self.stop_hooks:
                        stop()
                    raise BudgetSpent()
        self._remember(key, value, f, violation)
        return value

    def _remember(self, key: bytes, value: tuple, f: float, violation: float) -> None:
        """The point as the best seen if it is, and in the cache."""
        rank = (0, f) if violation <= self.tol else (1, violation)
        if self.best_key is None or rank < self.best_key:
            self.best_key, self.best_point = rank, (f, violation)
        self.cache[key] = value
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)

    def _raw(self, x) -> tuple:
        answer = self.evaluator(x.tolist())
        if isinstance(answer, str):
            inf = math.inf
            return inf, np.full(self.m, inf), np.full(self.p, inf), inf
        f, g, h = answer
        # On the lists, so the violation is a plain float like everything else in a row.
        violation = max(0.0, max(g, default=0.0), max(map(abs, h), default=0.0))
        return float(f), np.array(g, dtype=float), np.array(h, dtype=float), float(violation)

    def succeeds(self, f: float) -> bool:
        if self.reference is None:
            return True
        return (f - self.reference) / self.scale <= self.gap

    def final(self, x) -> tuple[float | None, float | None]:
        """(objective, violation) at the returned point x, else at the best point seen."""
        if x is not None:
            x = np.asarray(x, dtype=float)
            hit = self.cache.get(x.tobytes())
            try:
                f, _, _, v = hit if hit is not None else self._raw(x)
                return f, v
            except EvaluatorDied:
                pass
        return self.best_point if self.best_point is not None else (None, None)


# --------------------------------------------------------------------------
# The methods. Each gets the run, the start x0 and the seeded generator and
# returns the point it ends at (or raises BudgetSpent).


def scipy_slsqp(run: Run, x0, lo, hi):
    constraints = []
    if run.m:
        # SciPy's "ineq" means fun(x) ≥ 0; ours are g(x) ≤ 0.
        constraints.append({"type": "ineq", "fun": lambda x: -run.evaluate(x)[1]})
    if run.p:
        constraints.append({"type": "eq", "fun": lambda x: run.evaluate(x)[2]})
    res = minimize(
        lambda x: run.evaluate(x)[0],
        x0,
        method="SLSQP",
        bounds=Bounds(lo, hi),
        constraints=constraints,
        options={"maxiter": run.budget, "ftol": FTOL},
    )
    return res.x


def method_slsqp(run, x0, rng, lo, hi):
    return scipy_slsqp(run, x0, lo, hi)


def method_trust_constr(run, x0, rng, lo, hi):
    constraints = []
    if run.m:
        constraints.append(NonlinearConstraint(lambda x: run.evaluate(x)[1], -np.inf, 0.0, jac="2-point", hess=BFGS()))
    if run.p:
        constraints.append(NonlinearConstraint(lambda x: run.evaluate(x)[2], 0.0, 0.0, jac="2-point", hess=BFGS()))
    res = minimize(
        lambda x: run.evaluate(x)[0],
        x0,
        method="trust-constr",
        jac="2-point",
        hess=BFGS(),
        bounds=Bounds(lo, hi),
        constraints=constraints,
        options={"maxiter": run.budget, "xtol": XTOL, "gtol": XTOL, "barrier_tol": XTOL},
    )
    return res.x


def method_multistart_slsqp(run, x0, rng, lo, hi, patience=None):
    """SLSQP from x0, then from fresh uniform points: until the budget is
    spent, or — with `patience` — until that many starts in a row have not
    improved the best feasible value by more than 1e-6 relative."""
    best = None
    since_better = 0
    while True:
        before = run.evals
        try:
            x = scipy_slsqp(run, x0, lo, hi)
        except BudgetSpent:
            break
        except Exception:  # one failed start does not end a multistart
            x = None
            if run.evals == before:
                raise  # no progress at all: this would loop forever
        if x is not None:
            f, v = run.final(x)
            rank = (0, f) if v is not None and v <= run.tol else (1, v if v is not None else math.inf)
            gained = best is None or rank[0] < best[0][0] or (
                rank[0] == 0 and best[0][1] - f > 1e-6 * max(abs(best[0][1]), 1.0))
            if best is None or rank < best[0]:
                best = (rank, x)
            since_better = 0 if gained and rank[0] == 0 else since_better + 1
        else:
            since_better += 1
        if patience is not None and since_better >= patience:
            break
        x0 = rng.uniform(lo, hi)
    return best[1] if best is not None else None


def method_multistart_slsqp_stop(run, x0, rng, lo, hi):
    return method_multistart_slsqp(run, x0, rng, lo, hi, patience=MULTISTART_PATIENCE)


def method_multistart_slsqp_stop25(run, x0, rng, lo, hi):
    return method_multistart_slsqp(run, x0, rng, lo, hi, patience=PATIENT_MULTISTART_PATIENCE)


def nlopt_problem(run: Run, algorithm, lo, hi, gradients: bool):
    """An NLopt optimizer with the run's objective and constraints set on it;
    with `gradients`, forward differences (every point counted) fill `grad`."""
    opt = nlopt.opt(algorithm, run.n)
    opt.set_lower_bounds(lo)
    opt.set_upper_bounds(hi)
    run.stop_hooks.append(opt.force_stop)
    memo = {"key": None, "value": None}

    def with_gradients(x):
        key = x.tobytes()
        if memo["key"] == key:
            return memo["value"]
        f0, g0, h0, _ = run.evaluate(x)
        df = np.empty(run.n)
        dg = np.empty((run.m, run.n))
        dh = np.empty((run.p, run.n))
        for i in range(run.n):
            xi = x.copy()
            step = 1.4901161193847656e-08 * max(1.0, abs(x[i]))
            xi[i] = x[i] + step if x[i] + step <= hi[i] else x[i] - step
            d = xi[i] - x[i]  # the step actually taken, after rounding
            f1, g1, h1, _ = run.evaluate(xi)
            df[i] = (f1 - f0) / d
            dg[:, i] = (g1 - g0) / d
            dh[:, i] = (h1 - h0) / d
        memo["key"], memo["value"] = key, (f0, g0, h0, df, dg, dh)
        return memo["value"]

    def objective(x, grad):
        if gradients and grad.size > 0:
            v = with_gradients(x)
            grad[:] = v[3]
            return v[0]
        return run.evaluate(x)[0]

    def inequalities(result, x, grad):
        if gradients and grad.size > 0:
            v = with_gradients(x)
            result[:] = v[1]
            grad[:] = v[4]
        else:
            result[:] = run.evaluate(x)[1]

    def equalities(result, x, grad):
        if gradients and grad.size > 0:
            v = with_gradients(x)
            result[:] = v[2]
            grad[:] = v[5]
        else:
            result[:] = run.evaluate(x)[2]

    opt.set_min_objective(objective)
    if run.m:
        opt.add_inequality_mconstraint(inequalities, [CONSTRAINT_TOL] * run.m)
    if run.p:
        opt.add_equality_mconstraint(equalities, [CONSTRAINT_TOL] * run.p)
    opt.set_maxeval(run.budget)
    return opt


def method_cobyla(run, x0, rng, lo, hi):
    opt = nlopt_problem(run, nlopt.LN_COBYLA, lo, hi, gradients=False)
    opt.set_xtol_rel(XTOL)
    opt.set_ftol_rel(FTOL)
    return opt.optimize(x0)


def auglag(run, x0, lo, hi, local_algorithm, gradients):
    opt = nlopt_problem(run, nlopt.AUGLAG, lo, hi, gradients=gradients)
    local = nlopt.opt(local_algorithm, run.n)
    local.set_xtol_rel(XTOL)
    local.set_ftol_rel(FTOL)
    # A tenth of each bound's width. NLopt's default first step for the
    # subproblems can exceed half a narrow bound's width, which BOBYQA refuses
    # (NLOPT_INVALID_ARGS: 18 of 20 speed-reducer runs failed so); a
    # gradient-based local solver ignores it.
    local.set_initial_step(0.1 * (hi - lo))
    opt.set_local_optimizer(local)
    opt.set_xtol_rel(XTOL)
    opt.set_ftol_rel(FTOL)
    return opt.optimize(x0)


def method_auglag_bobyqa(run, x0, rng, lo, hi):
    return auglag(run, x0, lo, hi, nlopt.LN_BOBYQA, gradients=False)


def method_auglag_lbfgs(run, x0, rng, lo, hi):
    return auglag(run, x0, lo, hi, nlopt.LD_LBFGS, gradients=True)


def method_isres(run, x0, rng, lo, hi):
    # No tolerance: ISRES runs until maxeval, as a global method would.
    opt = nlopt_problem(run, nlopt.GN_ISRES, lo, hi, gradients=False)
    return opt.optimize(x0)


METHOD_FUNCTIONS = {
    "slsqp": method_slsqp,
    "trust-constr": method_trust_constr,
    "cobyla": method_cobyla,
    "auglag-bobyqa": method_auglag_bobyqa,
    "auglag-lbfgs": method_auglag_lbfgs,
    "isres": method_isres,
    "multistart-slsqp": method_multistart_slsqp,
    "multistart-slsqp-stop": method_multistart_slsqp_stop,
    "multistart-slsqp-stop25": method_multistart_slsqp_stop25,
}


# --------------------------------------------------------------------------
# Workers


_WORKER: dict = {}


def init_worker(attractor: str) -> None:
    # Ctrl-C is the parent's to handle: it stops the pool. The evaluators
    # inherit the ignored signal and end when their worker's pipe closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")  # SciPy's advice on each ill-conditioned step is noise here
    _WORKER["attractor"] = attractor
    _WORKER["evaluators"] = {}


def evaluator_for(source: str) -> Evaluator:
    """This worker's evaluator for `source`; one of another problem is closed
    (tasks come sorted by problem, so a worker rarely goes back)."""
    evaluators = _WORKER["evaluators"]
    ev = evaluators.get(source)
    if ev is None:
        for other in list(evaluators):
            evaluators.pop(other).close()
        ev = evaluators[source] = Evaluator(_WORKER["attractor"], source)
    return ev


# NLopt's errors come from C++ as exceptions without a message; their type says what happened.
NLOPT_ERRORS = {
    "runtime_error": "NLopt: generic failure (NLOPT_FAILURE)",
    "invalid_argument": "NLopt: invalid arguments (NLOPT_INVALID_ARGS)",
    "bad_alloc": "NLopt: out of memory (NLOPT_OUT_OF_MEMORY)",
}


def describe_exception(e: Exception) -> str:
    name = type(e).__name__
    if str(e).strip():
        return f"{name}: {e}"
    return f"{name} ({NLOPT_ERRORS.get(name, 'no message')})"


def run_task(task: tuple) -> dict:
    """One (problem, method, seed) run; never raises."""
    problem, method, seed, budget, tol, gap, stop_at_success = task
    started = time.perf_counter()
    row = dict.fromkeys(FIELDS)
    row.update(problem=problem["name"], method=method, seed=seed, success=False, evals=0)
    row.update(budget=budget, tol=tol, gap=gap, stop_at_success=stop_at_success)
    run = None
    x = None
    try:
        ev = evaluator_for(problem["source"])
        run = Run(ev, problem, budget, tol, gap, stop_at_success)
        lo = np.array([b[0] for b in problem["bounds"]], dtype=float)
        hi = np.array([b[1] for b in problem["bounds"]], dtype=float)
        rng = np.random.default_rng(seed)
        x0 = rng.uniform(lo, hi)
        nlopt.srand(seed)
        try:
            x = METHOD_FUNCTIONS[method](run, x0, rng, lo, hi)
        except BudgetSpent:
            x = None
        except nlopt.ForcedStop:
            # NLopt turns a callback's BudgetSpent into a forced stop in some versions.
            if run.evals < run.budget and run.evals_to_success is None:
                raise
            x = None
        except nlopt.RoundoffLimited:
            # NLopt's "roundoff errors limited progress" is an ordinary end
            # without a returned point: the best point seen stands for it.
            x = None
    except EvaluatorDied as e:
        row["error"] = str(e)
        dead = _WORKER["evaluators"].pop(problem["source"], None)  # a fresh one next time
        if dead is not None:
            dead.close()
    except Exception as e:  # noqa: BLE001 — a crashing method is a result, not the end of the benchmark
        row["error"] = describe_exception(e)
    if run is not None:
        row["evals"] = run.evals
        row["best_feasible"] = run.best_feasible
        row["evals_to_success"] = run.evals_to_success
        row["success"] = run.evals_to_success is not None
        f, v = run.final(x if row["error"] is None else None)
        row["final_objective"] = f if f is None or math.isfinite(f) else None
        row["final_violation"] = v if v is None or math.isfinite(v) else None
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row


# --------------------------------------------------------------------------
# The benchmark


def done_keys(path: str, settings: dict | None = None) -> set[tuple]:
    """(problem, method, seed) of the rows already in `path`.

    With `settings` (budget, tol, gap, stop_at_success of this invocation),
    a row measured under other settings is refused: resumed into, the file
    would mix runs that are not comparable (a run stopped at its first
    success next to one that spent its budget). Rows written before the
    settings were recorded name none and are taken as they are."""
    keys = set()
    if not os.path.exists(path):
        return keys
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                keys.add((r["problem"], r["method"], r["seed"]))
            except (ValueError, KeyError, TypeError, AttributeError):
                print(f"warning: {path}:{number}: not a result row, ignored (it runs again)", file=sys.stderr)
                continue
            differ = [k for k in SETTINGS if settings is not None and k in r and r[k] != settings[k]]
            if differ:
                theirs = ", ".join(f"{k} {r[k]}" for k in differ)
                ours = ", ".join(f"{k} {settings[k]}" for k in differ)
                raise InputError(
                    f"{path}:{number}: this file's runs were measured with {theirs}, not {ours}\n"
                    "  hint: write to another --out, or run with the settings the file was measured with"
                )
    return keys


def describe(row: dict) -> str:
    if row["error"]:
        status = f"error: {row['error'][:160]}"
    elif row["success"]:
        status = f"success at evaluation {row['evals_to_success']}"
    elif row["best_feasible"] is not None:
        status = f"best feasible {row['best_feasible']:.10g}"
    else:
        status = "nothing feasible"
    return f"{row['problem']} {row['method']} seed {row['seed']}: {status} ({row['evals']} evals, {row['seconds']} s)"


def require_peers() -> None:
    if _MISSING is not None:
        raise InputError(
            f"the peer optimizers are not installed here ({_MISSING})\n"
            "  hint: run with the venv bench/setup-peers.sh prints: $(bench/setup-peers.sh) bench/peers.py ..."
        )


def benchmark(args) -> int:
    require_peers()
    attractor = resolve_binary(args.attractor)
    names = list(dict.fromkeys(p for p in args.problems.split(",") if p)) if args.problems else []
    methods = list(dict.fromkeys(m for m in args.methods.split(",") if m))
    unknown = [m for m in methods if m not in METHOD_FUNCTIONS]
    if unknown:
        raise InputError(f"unknown method(s) {', '.join(unknown)}\n  hint: --methods takes some of {','.join(METHODS)}")
    problems = list_problems(attractor, names)
    gap = args.gap if args.gap is not None else args.tol
    settings = {"budget": args.budget, "tol": args.tol, "gap": gap, "stop_at_success": args.stop_at_success}
    done = done_keys(args.out, settings)
    tasks = [
        (
            p,
            m,
            args.seed_base + r,
            args.budget,
            args.tol,
            gap,
            args.stop_at_success,
        )
        for p in problems
        for m in methods
        for r in range(args.runs)
        if (p["name"], m, args.seed_base + r) not in done
    ]
    total = len(problems) * len(methods) * args.runs
    if not args.quiet:
        print(
            f"{len(tasks)} runs to do ({total - len(tasks)} of {total} already in {args.out}), {args.jobs} jobs",
            file=sys.stderr,
        )
    if not tasks:
        return 0
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    with open(args.out, "a+", encoding="utf-8") as out:
        # A row cut off by a crash must not swallow the next one.
        if out.tell() > 0:
            out.seek(out.tell() - 1)
            if out.read(1) != "\n":
                out.write("\n")
        pool = multiprocessing.get_context("fork").Pool(args.jobs, initializer=init_worker, initargs=(attractor,))
        try:
            for k, row in enumerate(pool.imap_unordered(run_task, tasks, chunksize=1), 1):
                out.write(json.dumps(row) + "\n")
                out.flush()
                if not args.quiet:
                    print(f"[{k}/{len(tasks)}] {describe(row)}", file=sys.stderr)
            pool.close()
        except KeyboardInterrupt:
            pool.terminate()
            print(
                "\ninterrupted: finished runs are in the output; run the same command again to resume", file=sys.stderr
            )
            return 130
        finally:
            pool.join()
    return 0


def resolve_binary(path: str) -> str:
    found = shutil.which(path) if os.sep not in path else (path if os.access(path, os.X_OK) else None)
    if not found:
        raise InputError(
            f"--attractor {path}: no such executable\n  hint: build it with `cargo build --release` "
            "and pass --attractor target/release/attractor"
        )
    return os.path.abspath(found)


# --------------------------------------------------------------------------
# Summary


def read_rows(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e}") from e
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            missing = [k for k in FIELDS if k not in row]
            if missing:
                raise KeyError(", ".join(missing))
        except (ValueError, KeyError) as e:
            print(f"warning: {path}:{number}: skipped, not a result row ({e})", file=sys.stderr)
            continue
        rows.append(row)
    return rows


def fmt(v) -> str:
    return "–" if v is None else f"{v:.10g}"


def summarize(args) -> int:
    rows = read_rows(args.file)
    if not rows:
        raise InputError(f"{args.file}: no result rows")
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    present = {r["method"] for r in rows}
    methods = [m for m in METHODS if m in present] + sorted(present - set(METHODS))
    cell: dict[tuple, list[dict]] = {}
    for r in rows:
        cell.setdefault((r["problem"], r["method"]), []).append(r)

    print("## Successes per problem and method\n")
    print("| problem | " + " | ".join(methods) + " |")
    print("|---|" + "---|" * len(methods))
    for p in problems:
        cells = []
        for m in methods:
            rs = cell.get((p, m), [])
            cells.append(f"{sum(r['success'] for r in rs)}/{len(rs)}" if rs else "–")
        print(f"| {p} | " + " | ".join(cells) + " |")
    totals = []
    for m in methods:
        rs = [r for r in rows if r["method"] == m]
        totals.append(f"**{100 * sum(r['success'] for r in rs) / len(rs):.0f}%** of {len(rs)}")
    print("| **all runs** | " + " | ".join(totals) + " |")

    print("\n## Details\n")
    print(
        "| problem | method | successes/runs | median evals to success | median best feasible | "
        "feasible runs | errors | evals/s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for p in problems:
        for m in methods:
            rs = cell.get((p, m))
            if not rs:
                continue
            wins = [r["evals_to_success"] for r in rs if r["success"]]
            feasible = [r["best_feasible"] for r in rs if r["best_feasible"] is not None]
            errors = sum(1 for r in rs if r["error"])
            seconds = sum(r["seconds"] for r in rs)
            speed = f"{sum(r['evals'] for r in rs) / seconds:.0f}" if seconds > 0 else "–"
            print(
                f"| {p} | {m} | {len(wins)}/{len(rs)} | {fmt(statistics.median(wins) if wins else None)} | "
                f"{fmt(statistics.median(feasible) if feasible else None)} | {len(feasible)} | {errors} | {speed} |"
            )
    return 0


# --------------------------------------------------------------------------
# Pipe speed


def pipe_speed(args) -> int:
    """Evaluations per second through one evaluator pipe, at uniform random
    points, with the same Python-side work a run does per evaluation."""
    require_peers()

    attractor = resolve_binary(args.attractor)
    problem = list_problems(attractor, [args.problem])[0]
    lo = np.array([b[0] for b in problem["bounds"]], dtype=float)
    hi = np.array([b[1] for b in problem["bounds"]], dtype=float)
    points = np.random.default_rng(1).uniform(lo, hi, size=(args.points, len(lo)))
    ev = Evaluator(attractor, problem["source"])
    try:
        run = Run(ev, problem, args.points, 1e-4)
        started = time.perf_counter()
        for x in points:
            run.evaluate(x)
        seconds = time.perf_counter() - started
    finally:
        ev.close()
    print(f"{problem['name']}: {args.points} evaluations in {seconds:.2f} s = {args.points / seconds:.0f} per second")
    return 0


# --------------------------------------------------------------------------
# Command line


def positive_int(s: str) -> int:
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{s} is not a positive integer")
    return v


def positive_float(s: str) -> float:
    v = float(s)
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"{s} is not a positive number")
    return v


def main(argv: list[str]) -> int:
    if argv[:1] == ["gepa"]:
        # GEPA on a labelling suite, for `attractor bench learn` (bench/gepa_peer.py).
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import gepa_peer

        return gepa_peer.main(argv[1:])
    if argv[:1] == ["summarize"]:
        parser = argparse.ArgumentParser(prog="peers.py summarize", description="Markdown tables of a results file.")
        parser.add_argument("file", help="the JSONL file written by a benchmark")
        return summarize(parser.parse_args(argv[1:]))
    if argv[:1] == ["pipe-speed"]:
        parser = argparse.ArgumentParser(
            prog="peers.py pipe-speed", description="Evaluations per second through `attractor problems eval`."
        )
        parser.add_argument("--attractor", required=True, help="the attractor binary")
        parser.add_argument("--problem", default="g01")
        parser.add_argument("--points", type=positive_int, default=100_000)
        return pipe_speed(parser.parse_args(argv[1:]))
    if argv[:1] == ["run"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(
        prog="peers.py",
        description="Peer optimizers (SciPy, NLopt) on attractor's problems; one JSON line per run. "
        "Other modes: `peers.py summarize FILE`, `peers.py pipe-speed --attractor BIN`, "
        "`peers.py gepa --suite S …` (GEPA on a labelling suite, for `attractor bench learn`).",
    )
    parser.add_argument("--attractor", required=True, help="the attractor binary (with `problems eval`)")
    parser.add_argument("--problems", help="comma-separated names or problem files [default: every built-in]")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {','.join(METHODS)}")
    parser.add_argument("--runs", type=positive_int, default=20)
    parser.add_argument("--seed-base", type=int, default=1, help="run r uses seed seed_base + r")
    parser.add_argument("--budget", type=positive_int, default=100_000, help="evaluations per run")
    parser.add_argument("--tol", type=positive_float, default=1e-4, help="violation tolerance")
    parser.add_argument("--gap", type=positive_float, default=None, help="relative-gap tolerance [default: --tol]")
    parser.add_argument("--out", required=True, help="JSONL file to append to (and resume from)")
    parser.add_argument("--jobs", type=positive_int, default=2, help="worker processes")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--stop-at-success",
        action="store_true",
        help="end each run at its first success (evals_to_success only; evals and the final point then stop there)",
    )
    return benchmark(parser.parse_args(argv))


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
