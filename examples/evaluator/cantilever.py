"""A persistent evaluator (protocol 2) for the cantilever beam of five
hollow square sections: minimise 0.0624 * sum(x) subject to
61/x1^3 + 37/x2^3 + 19/x3^3 + 7/x4^3 + 1/x5^3 <= 1.

Attractor starts this script once per process and writes one request per
line on stdin:

    {"id": 1, "names": ["x1", ...], "points": [[...], [...]]}

It prints one line per request on stdout, a reply per point in order:

    {"id": 1, "results": [{"objective": ..., "constraints": {"g1": ...},
                           "gradient": {"objective": [...], "constraints": {"g1": [...]}}}]}

The gradient is optional: exact gradients spare the optimizer its finite
differences. A point that cannot be evaluated gets {"error": "why"} instead
of values. Debug output goes to stderr: stdout carries replies only. The
script ends when stdin closes. The same script answers the one-shot mode
(`mode: once`), where stdin holds a single {"x": [...], "names": [...]}.
"""

import json
import sys

C = (61.0, 37.0, 19.0, 7.0, 1.0)


def evaluate(x):
    if len(x) != len(C) or any(v <= 0 for v in x):
        return {"error": "every section must have a positive size"}
    g = sum(c / v**3 for c, v in zip(C, x)) - 1.0
    return {
        "objective": 0.0624 * sum(x),
        "constraints": {"g1": g},
        "gradient": {
            "objective": [0.0624] * len(x),
            "constraints": {"g1": [-3.0 * c / v**4 for c, v in zip(C, x)]},
        },
    }


def main():
    for line in sys.stdin:
        request = json.loads(line)
        if "points" not in request:  # one-shot mode: a single point
            print(json.dumps(evaluate(request["x"])))
            return
        results = [evaluate(x) for x in request["points"]]
        # flush: the reply must leave the pipe now, not when a buffer fills.
        print(json.dumps({"id": request["id"], "results": results}), flush=True)


if __name__ == "__main__":
    main()
