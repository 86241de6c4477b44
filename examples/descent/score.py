#!/usr/bin/env python3
"""Scores one setting of a gradient-descent optimizer on one test function.

This is the harness the example suite puts under Attractor's outer loop. It
reads the active `descent_settings` artifact that Attractor wrote into the run
directory, runs momentum gradient descent with those settings on the function
named on the command line, and writes honest scores to run_completion.json:

- eval_score: the fraction of the orders of magnitude between the start value
  and the tolerance that the run actually gained (1.0 = reached tolerance);
- critique_score: the fraction of steps that lowered the function (a smooth
  descent scores high, an oscillating one low);
- gate_rejection_count: steps whose value blew up more than tenfold;
- budget_remaining_pct: iterations left when the run stopped;
- status: complete (tolerance reached), partial (still descending) or
  failed (diverged to a non-finite value).
"""
import json
import math
import os
import sys

MAX_ITERATIONS = 400
TOLERANCE = 1e-6

FUNCTIONS = {
    # name: (f, gradient, start)
    "sphere": (
        lambda x, y: x * x + y * y,
        lambda x, y: (2 * x, 2 * y),
        (3.0, -2.0),
    ),
    "valley": (
        lambda x, y: x * x + 25 * y * y,
        lambda x, y: (2 * x, 50 * y),
        (3.0, 1.0),
    ),
    "rosenbrock": (
        lambda x, y: (1 - x) ** 2 + 100 * (y - x * x) ** 2,
        lambda x, y: (-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)),
        (-1.2, 1.0),
    ),
    "booth": (
        lambda x, y: (x + 2 * y - 7) ** 2 + (2 * x + y - 5) ** 2,
        lambda x, y: (2 * (x + 2 * y - 7) + 4 * (2 * x + y - 5), 4 * (x + 2 * y - 7) + 2 * (2 * x + y - 5)),
        (0.0, 0.0),
    ),
}


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in FUNCTIONS:
        sys.exit(f"score.py: unknown function {name!r}; use one of {sorted(FUNCTIONS)}")
    artifacts = os.environ["ATTRACTOR_ARTIFACTS_DIR"]
    with open(os.path.join(artifacts, "descent_settings.json")) as fh:
        settings = json.load(fh)
    step = float(settings["step_size"])
    momentum = float(settings["momentum"])
    clip = float(settings["gradient_clip"])

    f, grad, (x, y) = FUNCTIONS[name]
    f0 = f(x, y)
    value = f0
    vx = vy = 0.0
    decreased = blowups = used = 0
    status = "partial"
    for used in range(1, MAX_ITERATIONS + 1):
        gx, gy = grad(x, y)
        norm = math.hypot(gx, gy)
        if norm > clip:
            gx, gy = gx * clip / norm, gy * clip / norm
        vx = momentum * vx - step * gx
        vy = momentum * vy - step * gy
        x, y = x + vx, y + vy
        try:
            new = f(x, y)
        except OverflowError:
            new = math.inf
        if not math.isfinite(new):
            status = "failed"
            value = math.inf
            break
        if new < value:
            decreased += 1
        elif new > 10 * value:
            blowups += 1
        value = new
        if value <= TOLERANCE:
            status = "complete"
            break

    if math.isfinite(value):
        gained = math.log10(f0 / max(value, TOLERANCE)) / math.log10(f0 / TOLERANCE)
        eval_score = max(0.0, min(1.0, gained))
    else:
        eval_score = 0.0
    result = {
        "status": status,
        "eval_score": round(eval_score, 6),
        "critique_score": round(decreased / used, 6),
        "gate_rejection_count": blowups,
        "budget_remaining_pct": round(100.0 * (MAX_ITERATIONS - used) / MAX_ITERATIONS, 3),
        "metrics": {"function": name, "final_value": value if math.isfinite(value) else None, "iterations": used},
    }
    with open(os.environ["ATTRACTOR_RESULT_FILE"], "w") as fh:
        json.dump(result, fh)
    print(f"{name}: {status} after {used} iterations, f = {value:.3g}")


if __name__ == "__main__":
    main()
