"""Problems the coordinator was never tuned on, as a persistent evaluator
(protocol 2; see examples/evaluator/cantilever.py for the protocol). The
first argument names the problem. They come from the standard list of test
functions for constrained optimisation and were chosen for what defeats a
search that stops when its trajectories agree: optima on a boundary or in a
corner of a narrow feasible band, deceptive basins, and a feasible region in
many pieces. No gradients are sent: the optimizer differences them.

    rosen_cubic   Rosenbrock cut by a cubic and a line: a local minimum
                  f = 1 at the origin, the global f = 0 at (1, 1), the
                  corner where the band between the two narrows to a point
    rosen_disk    Rosenbrock inside the disk x² + y² ≤ 2: f = 0 at (1, 1),
                  on the circle
    mishra_bird   Mishra's bird inside a disk: many deceptive basins;
                  f = -106.7645367 at (-3.1302468, -1.5821422)
    townsend      Townsend's function inside a scalloped curve: the global
                  f = -2.0239884 at (2.0052938, 1.1944509), on the curve
    gomez_levy    Gomez and Levy's function where -sin(4πx) + 2sin²(2πy) ≤
                  1.5: a feasible region of many islands; f = -1.031628453
                  at (0.08984201, -0.7126564)
    simionescu    0.1·x·y inside an eight-petalled star: f = -0.072 at
                  (±0.84852813, ∓0.84852813), on the star's edge
"""

import json
import math
import sys


def rosen(x, y):
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def rosen_cubic(x, y):
    return rosen(x, y), {"cubic": (x - 1) ** 3 - y + 1, "line": x + y - 2}


def rosen_disk(x, y):
    return rosen(x, y), {"disk": x * x + y * y - 2}


def mishra_bird(x, y):
    f = (math.sin(y) * math.exp((1 - math.cos(x)) ** 2)
         + math.cos(x) * math.exp((1 - math.sin(y)) ** 2) + (x - y) ** 2)
    return f, {"disk": (x + 5) ** 2 + (y + 5) ** 2 - 25}


def townsend(x, y):
    f = -math.cos((x - 0.1) * y) ** 2 - x * math.sin(3 * x + y)
    t = math.atan2(x, y)
    r = (2 * math.cos(t) - 0.5 * math.cos(2 * t) - 0.25 * math.cos(3 * t) - 0.125 * math.cos(4 * t)) ** 2 \
        + (2 * math.sin(t)) ** 2
    return f, {"curve": x * x + y * y - r}


def gomez_levy(x, y):
    f = 4 * x * x - 2.1 * x ** 4 + x ** 6 / 3 + x * y - 4 * y * y + 4 * y ** 4
    return f, {"islands": -math.sin(4 * math.pi * x) + 2 * math.sin(2 * math.pi * y) ** 2 - 1.5}


def simionescu(x, y):
    angle = math.atan2(x, y)
    return 0.1 * x * y, {"star": x * x + y * y - (1 + 0.2 * math.cos(8 * angle)) ** 2}


PROBLEMS = {f.__name__: f for f in (rosen_cubic, rosen_disk, mishra_bird, townsend, gomez_levy, simionescu)}


def evaluate(problem, point):
    if len(point) != 2:
        return {"error": f"two variables expected, got {len(point)}"}
    objective, constraints = problem(*point)
    return {"objective": objective, "constraints": constraints}


def main():
    problem = PROBLEMS[sys.argv[1]]
    for line in sys.stdin:
        request = json.loads(line)
        if "points" not in request:
            print(json.dumps(evaluate(problem, request["x"])))
            return
        results = [evaluate(problem, x) for x in request["points"]]
        print(json.dumps({"id": request["id"], "results": results}), flush=True)


if __name__ == "__main__":
    main()
