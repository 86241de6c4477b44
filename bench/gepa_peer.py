"""GEPA (PyPI `gepa`) on a labelling suite, for `attractor bench learn`.

`peers.py gepa --suite S --base-url U --model M --seed N --budget B --out F`
reads the suite the way its tasks run it — each task's command is
`label.py BATCH [MESSAGES]` — learns its first text artifact with GEPA on the
training batches only, with the same model for the task and for reflection,
and appends one record to F in the shape of attractor's own (`LearnRecord`):
calls counted (task calls and reflection calls), the best prompt's training
and held-out accuracy, and each held-out example right or wrong under the
same ids as the harness gives them.

The task calls are label.py's own `ask` (imported from the suite's folder),
so GEPA's candidates are scored by exactly the call attractor's runs make.
GEPA stops when task and reflection calls together reach the budget.
"""
import argparse
import importlib.util
import json
import os
import shlex
import sys
import time
import urllib.request


class Counter:
    def __init__(self):
        self.task = 0
        self.reflection = 0

    @property
    def total(self):
        return self.task + self.reflection


def load_suite(path):
    import yaml

    with open(path) as fh:
        suite = yaml.safe_load(fh)
    folder = os.path.dirname(os.path.abspath(path))
    text = [a for a in suite.get("artifacts", []) if a.get("type") == "text"]
    if not text:
        raise SystemExit(f"{path}: no text artifact to learn")
    tasks = []
    for t in suite["tasks"]:
        words = shlex.split(t["command"].replace("$ATTRACTOR_SUITE_DIR", folder))
        script = next((i for i, w in enumerate(words) if w.endswith("label.py")), None)
        if script is None:
            raise SystemExit(f"{path}: task {t['name']} does not run label.py; GEPA's peer only knows that harness")
        args = words[script + 1:]
        tasks.append({"name": t["name"], "holdout": bool(t.get("holdout")), "script": words[script],
                      "batch": args[0], "messages": args[1] if len(args) > 1 else "messages.json"})
    return text[0], tasks


def load_harness(script):
    spec = importlib.util.spec_from_file_location("label_harness", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def examples_of(tasks, holdout):
    out = []
    for t in tasks:
        if t["holdout"] != holdout:
            continue
        with open(os.path.join(os.path.dirname(t["script"]), t["messages"])) as fh:
            data = json.load(fh)
        for number, (message, truth) in enumerate(data["batches"][t["batch"]], 1):
            out.append({"task": t["name"], "id": f"{t['batch']}-{number}", "input": message, "expected": truth,
                        "labels": sorted(data["labels"])})
    return out


def make_adapter(harness, base_url, model, counter):
    from gepa.core.adapter import EvaluationBatch

    class LabelAdapter:
        propose_new_texts = None

        def label(self, prompt, item):
            counter.task += 1
            try:
                said, _ = harness.ask(base_url, model, None, prompt, item["input"], item["labels"], True)
            except Exception as e:  # a failed call scores 0, as label.py scores it
                return None, f"the model call failed: {e}"
            return said, None

        def evaluate(self, batch, candidate, capture_traces=False):
            prompt = next(iter(candidate.values()))
            outputs, scores, traces = [], [], []
            for item in batch:
                said, error = self.label(prompt, item)
                right = said == item["expected"]
                outputs.append(said)
                scores.append(1.0 if right else 0.0)
                traces.append({"input": item["input"], "expected": item["expected"], "output": said or "(no label)",
                               "feedback": error or ("correct" if right else f"labelled {said}, expected {item['expected']}")})
            return EvaluationBatch(outputs=outputs, scores=scores, trajectories=traces if capture_traces else None)

        def make_reflective_dataset(self, candidate, eval_batch, components_to_update):
            rows = [{"Inputs": t["input"], "Generated Outputs": t["output"], "Feedback": t["feedback"]}
                    for t in (eval_batch.trajectories or [])]
            return {name: rows for name in components_to_update}

    return LabelAdapter()


def reflection_lm(base_url, model, counter):
    def call(prompt):
        counter.reflection += 1
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        body = {"model": model, "temperature": 0, "max_tokens": 512, "messages": messages}
        request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return json.load(response)["choices"][0]["message"].get("content") or ""
        except Exception as e:
            print(f"gepa: reflection call failed: {e}", file=sys.stderr)
            return ""
    return call


def accuracy(adapter, prompt, items):
    right = {}
    for item in items:
        said, _ = adapter.label(prompt, item)
        right[f"{item['task']}/{item['id']}"] = said == item["expected"]
    return {"correct": sum(right.values()), "total": len(right)}, right


def main(argv):
    parser = argparse.ArgumentParser(prog="peers.py gepa", description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=int, required=True, help="task and reflection calls together")
    parser.add_argument("--minibatch", type=int, default=3, help="GEPA's reflection minibatch")
    parser.add_argument("--out", required=True, help="JSONL file to append the record to")
    args = parser.parse_args(argv)

    import gepa

    started = time.time()
    artifact, tasks = load_suite(args.suite)
    harness = load_harness(tasks[0]["script"])
    counter = Counter()
    adapter = make_adapter(harness, args.base_url, args.model, counter)
    train = examples_of(tasks, holdout=False)
    held = examples_of(tasks, holdout=True)
    result = gepa.optimize(
        seed_candidate={artifact["name"]: artifact["content"]},
        trainset=train,
        valset=train,  # held-out examples never reach the optimizer
        adapter=adapter,
        reflection_lm=reflection_lm(args.base_url, args.model, counter),
        reflection_minibatch_size=args.minibatch,
        max_metric_calls=args.budget,
        stop_callbacks=[lambda _state: counter.total >= args.budget],
        seed=args.seed,
        raise_on_exception=False,
    )
    best = result.best_candidate
    prompt = best if isinstance(best, str) else next(iter(best.values()))
    spent = {"task_calls": counter.task, "optimizer_calls": counter.reflection}
    training, _ = accuracy(adapter, prompt, train)
    holdout, examples = accuracy(adapter, prompt, held)
    record = {"method": "gepa", "seed": args.seed, "planned": 0, "epochs": 0, **spent,
              "training": training, "holdout": holdout, "holdout_examples": examples,
              "prompt": prompt, "seconds": round(time.time() - started, 1)}
    with open(args.out, "a") as fh:
        fh.write(json.dumps(record) + "\n")
    print(f"gepa seed {args.seed}: held-out {holdout['correct']}/{holdout['total']}, "
          f"{spent['task_calls']} task + {spent['optimizer_calls']} reflection calls", file=sys.stderr)
    return 0
