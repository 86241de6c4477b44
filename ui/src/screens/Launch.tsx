// Launch: a suite file path (typed here; the desktop app adds a native file
// dialog), the run's settings, validation shown inline with file:line:column
// before anything starts.
import { useEffect, useState } from "react";
import { api, RequestError } from "../api";
import { go } from "../App";
import { ErrorNote } from "../components/common";
import { Issues } from "../components/Issues";
import { PathInput } from "../components/PathInput";
import type { LaunchPreview } from "../generated/LaunchPreview";
import type { OptimizerName } from "../generated/OptimizerName";
import type { Validation } from "../generated/Validation";

export function Launch({ initialPath }: { initialPath: string }) {
  const [path, setPath] = useState(initialPath);
  const [epochs, setEpochs] = useState(3);
  const [optimizer, setOptimizer] = useState<OptimizerName>("evolve");
  const [lr, setLr] = useState(0.5);
  const [rollback, setRollback] = useState(true);
  const [concurrency, setConcurrency] = useState(2);
  const [seed, setSeed] = useState("");
  const [noLlm, setNoLlm] = useState(false);
  const [validation, setValidation] = useState<Validation | null>(null);
  const [checking, setChecking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const [preview, setPreview] = useState<LaunchPreview | null>(null);

  useEffect(() => setPath(initialPath), [initialPath]);

  // Validate as the path settles, so mistakes show before Start.
  useEffect(() => {
    setValidation(null);
    if (!path.trim()) return;
    setChecking(true);
    const t = setTimeout(() => {
      api
        .validate(path)
        .then(setValidation)
        .catch((e: Error) => setError(e.message))
        .finally(() => setChecking(false));
    }, 350);
    return () => clearTimeout(t);
  }, [path]);

  // What the launch would ask of the model, once the file is valid and as
  // the settings change: the same preview `attractor run` prints.
  useEffect(() => {
    setPreview(null);
    if (!validation?.valid) return;
    const t = setTimeout(() => {
      api
        .preview({ suite_path: path, epochs, optimizer, learning_rate: 0.5, rollback: true, concurrency: 1, no_llm: noLlm })
        .then(setPreview)
        .catch(() => setPreview(null));
    }, 200);
    return () => clearTimeout(t);
  }, [validation, path, epochs, optimizer, noLlm]);

  const seedValue = seed.trim() === "" ? undefined : Number(seed);
  // Seeds past 2^53 would be rounded by JavaScript numbers before they reach the server.
  const seedBad = seedValue !== undefined && (!Number.isSafeInteger(seedValue) || seedValue < 0);

  const start = async () => {
    setError(null);
    setStarting(true);
    try {
      await api.launch({
        suite_path: path,
        epochs,
        optimizer,
        learning_rate: lr,
        rollback,
        concurrency,
        seed: seedValue,
        no_llm: noLlm,
      });
      go("/live");
    } catch (e) {
      if (e instanceof RequestError && e.validation) setValidation(e.validation);
      setError((e as Error).message);
    } finally {
      setStarting(false);
    }
  };

  return (
    <section>
      <header className="screen-head">
        <h2>Launch a suite</h2>
      </header>
      <div className="card form">
        <label>
          Suite file
          <PathInput kind="suite" testId="suite-path" value={path} onChange={setPath} placeholder="examples/descent.suite.yaml" autoFocus />
          <span className="hint">A path on the machine running Attractor, absolute or relative to where it was started.</span>
        </label>
        <div className="validation" data-testid="validation">
          {checking && <span className="muted">checking…</span>}
          {validation?.valid && (
            <span className="ok">
              ✓ suite <b>{validation.suite}</b>: {validation.tasks} tasks
              {validation.holdout_tasks > 0 && ` (${validation.holdout_tasks} held out)`}
              {validation.artifacts.length > 0 && `, artifacts ${validation.artifacts.join(", ")}`}
            </span>
          )}
          {validation && !validation.valid && (
            <Issues issues={validation.issues} />
          )}
        </div>
        <div className="row">
          <label>
            Epochs
            <input type="number" min={1} value={epochs} onChange={(e) => setEpochs(Math.max(1, Number(e.target.value)))} />
          </label>
          <label>
            Optimizer
            <select value={optimizer} onChange={(e) => setOptimizer(e.target.value as OptimizerName)}>
              <option value="baseline">baseline — measure, change nothing</option>
              <option value="evolve">evolve — tune JSON artifact fields</option>
              <option value="textgrad">textgrad — a model rewrites one artifact per epoch</option>
              <option value="tree">tree — a tree search over artifact versions (epochs = evaluations)</option>
            </select>
          </label>
          <label>
            Learning rate
            <input type="number" min={0} max={1} step={0.05} value={lr} onChange={(e) => setLr(Number(e.target.value))} />
          </label>
          <label>
            Concurrency
            <input type="number" min={1} max={256} value={concurrency} onChange={(e) => setConcurrency(Math.max(1, Number(e.target.value)))} />
          </label>
          <label>
            Seed
            <input value={seed} onChange={(e) => setSeed(e.target.value)} placeholder="random" className={seedBad ? "bad" : ""} />
          </label>
        </div>
        <div className="row">
          <label className="check">
            <input type="checkbox" checked={rollback} onChange={(e) => setRollback(e.target.checked)} /> Roll back an update when the mean loss gets worse
          </label>
          <label className="check">
            <input type="checkbox" checked={noLlm} onChange={(e) => setNoLlm(e.target.checked)} /> Heuristics only (no LLM tier)
          </label>
        </div>
        {preview && (
          <p className="muted small" data-testid="launch-preview">
            {preview.runs} run(s){preview.model ? ` · ${preview.model}` : " · no model calls"}
          </p>
        )}
        <ErrorNote error={error} />
        <div className="actions">
          <button className="primary" data-testid="start" disabled={!validation?.valid || starting || seedBad || lr < 0 || lr > 1} onClick={start}>
            {starting ? "Starting…" : "Start"}
          </button>
        </div>
      </div>
    </section>
  );
}
