#!/usr/bin/env python3
"""Scores a support-triage prompt on one batch of messages with a real model.

The harness of the example suite `support-triage`: it reads the active
`triage_prompt` artifact from the run directory, asks the configured model
(any OpenAI-compatible server: ATTRACTOR_LLM_BASE_URL, ATTRACTOR_LLM_MODEL,
ATTRACTOR_LLM_API_KEY) to label each message of the batch named on the
command line (from messages.json, or the file named after the batch, in
this folder), and writes honest scores to run_completion.json:

- eval_score: the fraction of messages labelled correctly;
- critique_score: the fraction of replies that named a label at all (a
  server that cannot constrain replies to the label list may ramble);
- gate_rejection_count: calls that failed;
- status: complete, or failed when no call succeeded;
- examples: every message with what was expected and what the model said,
  scored 1 or 0 — the optimizer is shown the ones it got wrong, and a
  decision about a new prompt compares the two versions message by message.

When ATTRACTOR_EXAMPLE_IDS is set (ids, one per line: the screening search
measuring a candidate on a minibatch), only those messages are labelled.

The labels go to the server as a JSON Schema enum (`response_format`), so
even a very small model answers with one of them; a server that refuses
schemas is asked without one and the first label named in the reply counts.
Only the standard library is used.
"""
import json
import os
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def ask(base_url, model, key, system, message, labels, use_schema):
    body = {
        "model": model,
        "temperature": 0,
        "max_tokens": 24,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": message},
        ],
    }
    if use_schema:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": "triage",
                "schema": {
                    "type": "object",
                    "properties": {"label": {"type": "string", "enum": labels}},
                    "required": ["label"],
                },
            },
        }
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})},
    )
    with urllib.request.urlopen(request, timeout=float(os.environ.get("TRIAGE_CALL_TIMEOUT", "60"))) as response:
        reply = json.load(response)
    text = reply["choices"][0]["message"].get("content") or ""
    tokens = (reply.get("usage") or {}).get("total_tokens", 0)
    try:
        label = json.loads(text).get("label")
    except (ValueError, AttributeError):
        label = next((l for l in labels if l in text.lower()), None)
    return label if label in labels else None, tokens


def main():
    batch = sys.argv[1] if len(sys.argv) > 1 else ""
    source = os.path.join(HERE, sys.argv[2] if len(sys.argv) > 2 else "messages.json")
    with open(source) as fh:
        data = json.load(fh)
    if batch not in data["batches"]:
        sys.exit(f"label.py: unknown batch {batch!r} in {source}; use one of {sorted(data['batches'])}")
    base_url = os.environ.get("ATTRACTOR_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("ATTRACTOR_LLM_MODEL")
    if not base_url or not model:
        sys.exit("label.py: no model configured; set ATTRACTOR_LLM_BASE_URL and ATTRACTOR_LLM_MODEL "
                 "(scripts/local-llm.sh start prints them for a local model)")
    key = os.environ.get("ATTRACTOR_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
    with open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "triage_prompt.txt")) as fh:
        prompt = fh.read()
    labels = sorted(data["labels"])

    correct = named = failed = tokens = 0
    use_schema = True
    # Screening asks for a few examples only (their ids, one per line).
    wanted = set(os.environ.get("ATTRACTOR_EXAMPLE_IDS", "").splitlines())
    items = [(f"{batch}-{number}", message, truth)
             for number, (message, truth) in enumerate(data["batches"][batch], 1)
             if not wanted or f"{batch}-{number}" in wanted]
    examples = []
    for ident, message, truth in items:
        example = {"id": ident, "input": message, "expected": truth}
        try:
            label, used = ask(base_url, model, key, prompt, message, labels, use_schema)
        except urllib.error.HTTPError as e:
            if use_schema and e.code in (400, 422):
                use_schema = False
                try:
                    label, used = ask(base_url, model, key, prompt, message, labels, use_schema)
                except (urllib.error.URLError, OSError, ValueError, KeyError) as again:
                    print(f"call failed: {again}", file=sys.stderr)
                    failed += 1
                    examples.append({**example, "score": 0.0, "feedback": f"the model call failed: {again}"})
                    continue
            else:
                print(f"call failed: {e}", file=sys.stderr)
                failed += 1
                examples.append({**example, "score": 0.0, "feedback": f"the model call failed: {e}"})
                continue
        except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
            print(f"call failed: {e}", file=sys.stderr)
            failed += 1
            examples.append({**example, "score": 0.0, "feedback": f"the model call failed: {e}"})
            continue
        examples.append({**example, "output": label or "(no label)", "score": 1.0 if label == truth else 0.0})
        tokens += used
        named += label is not None
        correct += label == truth
        print(f"{truth:8} <- {label or '(none)':8} {message}")

    n = max(len(items), 1)
    result = {
        "status": "failed" if failed == n else "complete",
        "eval_score": round(correct / n, 6),
        "critique_score": round(named / n, 6),
        "gate_rejection_count": failed,
        "budget_remaining_pct": 100.0,
        "metrics": {"batch": batch, "correct": correct, "messages": n, "model_tokens": tokens},
        "examples": examples,
    }
    with open(os.environ["ATTRACTOR_RESULT_FILE"], "w") as fh:
        json.dump(result, fh)
    print(f"{batch}: {correct}/{n} labelled correctly")


if __name__ == "__main__":
    main()
