// Launch: a suite file path (typed here; the desktop app adds a native file
// dialog), every option `attractor run` has (the same RunRequest the CLI
// builds), validation shown inline with file:line:column before anything
// starts, and the plan and model preview the CLI prints.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, RequestError } from "../api";
import { go } from "../App";
import { ErrorNote } from "../components/common";
import { Issues } from "../components/Issues";
import { PathInput } from "../components/PathInput";
import type { ApprovalMode } from "../generated/ApprovalMode";
import type { CallRole } from "../generated/CallRole";
import type { LaunchPreview } from "../generated/LaunchPreview";
import type { LaunchView } from "../generated/LaunchView";
import type { LlmLimits } from "../generated/LlmLimits";
import type { OptimizerKind } from "../generated/OptimizerKind";
import type { RunRequest } from "../generated/RunRequest";
import type { SelectionName } from "../generated/SelectionName";
import type { TreeRequest } from "../generated/TreeRequest";
import type { Validation } from "../generated/Validation";
import { useExample } from "../lib/examples";
import { counted } from "../lib/format";
import { useSettled } from "../lib/query";

// A select shows a short name (a long one was cut off in its box); the
// line under it says what the chosen one does.
const OPTIMIZERS: Record<OptimizerKind, string> = {
  baseline: "measures the suite and changes nothing",
  evolve: "tunes the fields of JSON artifacts",
  textgrad: "a model rewrites one artifact per epoch",
  tree: "a tree search over artifact versions (epochs = evaluations)",
  screen: "several candidates per epoch, screened on a few examples first",
};
const SELECTIONS: Record<SelectionName, [string, string]> = {
  pareto: ["pareto", "keeps the specialists: every node best at some task"],
  argmax: ["argmax", "expands the node with the lowest mean loss"],
  top_k: ["top k", "expands one of the three lowest means"],
  eps_greedy: ["ε-greedy", "the best node, sometimes another"],
};
const APPROVALS: Record<ApprovalMode, string> = {
  off: "updates apply at once",
  wait: "each update waits in the Inbox, and the run with it",
  continue: "each update waits in the Inbox; the run goes on with the parent version",
};

const ROLES: CallRole[] = ["proposer", "executor", "verifier", "decomposer", "supervisor", "ideation"];

/** The bounds `RunRequest::validate` checks (crates/outer/src/outer/request.rs). */
const MAX_EPOCHS = 100_000;
const MAX_CONCURRENCY = 256;

/** The request's defaults, as `attractor run` has them (the form starts on evolve, 3 epochs). */
function initialRequest(path: string): RunRequest {
  return {
    suite_path: path,
    allow_outside: [],
    epochs: 3,
    optimizer: "evolve",
    learning_rate: 0.5,
    rollback: true,
    concurrency: 2,
    no_llm: false,
    tree: { width: 3, stall: 3, ideation_rounds: 1, selection: "pareto", branch_depth: 5 },
    no_sandbox: false,
    model: { timeout_secs: null, attempts: null, max_model_secs: null, max_tokens: {}, max_reply_bytes: null, max_stored_chars: null, max_cost: null },
  };
}

/** A number typed into an optional field: empty is "not set". */
function optional(text: string): number | null {
  return text.trim() === "" ? null : Number(text);
}

/**
 * "Launch again" and "Resume" start from the suite's last launch's settings.
 * A resume asks for exactly what that launch asked (its epochs too): the
 * run then continues the plan it stopped — its seed, its unfinished epoch —
 * and runs only what is left; any change starts a new plan.
 */
function useLastLaunch(suite: string | null, apply: (l: LaunchView) => void) {
  // The suite's own latest launch, asked for by name: the launches list
  // holds only the newest few of all suites.
  const latest = useQuery({
    queryKey: ["launches", "again", suite],
    queryFn: () => api.suite_last_launch({ key: suite ?? "" }),
    enabled: !!suite,
    staleTime: 0,
    gcTime: 0,
  });
  // One suite per form: App keys the screen by the suite (another suite in
  // the address is a fresh form, not the last one's settings).
  const [from, setFrom] = useState<LaunchView | null>(null);
  useEffect(() => {
    // Its own, never another suite's (an answer for the suite asked before).
    const last = suite && latest.data?.suite === suite ? latest.data : undefined;
    if (!last || from?.id === last.id) return;
    setFrom(last);
    apply(last);
  }, [latest.data, suite]);
  return from;
}

/**
 * A count of the form (epochs, concurrency): a whole number from 1 to
 * `max`. What was typed and is not one stays as typed (`bad`) and is named
 * under the field.
 */
function CountField({ label, field, max, value, bad, onChange }: {
  label: string;
  field: "epochs" | "concurrency";
  max: number;
  value: number;
  bad: string | undefined;
  onChange: (field: "epochs" | "concurrency", text: string, max: number) => void;
}) {
  return (
    <label>
      {label}
      <input
        type="number"
        min={1}
        max={max}
        aria-label={label}
        className={bad !== undefined ? "bad" : ""}
        value={bad ?? value}
        onChange={(e) => onChange(field, e.target.value, max)}
      />
      {bad !== undefined && (
        <span className="field-error" data-testid={`${field}-error`}>
          {label} must be a whole number from 1 to {max}
          {bad.trim() !== "" && `, not ${bad}`}
        </span>
      )}
    </label>
  );
}

export function Launch({ initialPath, again = null, resume = false }: { initialPath: string; again?: string | null; resume?: boolean }) {
  const [req, setReq] = useState<RunRequest>(() => initialRequest(initialPath));
  const [seed, setSeed] = useState("");
  const [outside, setOutside] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  // A count typed that is not one (2.5, 0, empty): kept as typed and named
  // at its field, and Start waits (it was clamped to 1, or sent as typed).
  const [badCount, setBadCount] = useState<{ epochs?: string; concurrency?: string }>({});
  const count = (field: "epochs" | "concurrency", text: string, max: number) => {
    const n = Number(text);
    const ok = text.trim() !== "" && Number.isInteger(n) && n >= 1 && n <= max;
    setBadCount((t) => ({ ...t, [field]: ok ? undefined : text }));
    if (ok) set({ [field]: n });
  };
  // The issues a refused Start came back with (the file changed since it was checked).
  const [refused, setRefused] = useState<Validation | null>(null);
  const example = useExample("descent.suite.yaml");

  const set = (change: Partial<RunRequest>) => setReq((r) => ({ ...r, ...change }));
  const setTree = (change: Partial<TreeRequest>) => setReq((r) => ({ ...r, tree: { ...r.tree, ...change } }));
  const setModel = (change: Partial<LlmLimits>) => setReq((r) => ({ ...r, model: { ...r.model, ...change } }));
  const path = req.suite_path;

  useEffect(() => set({ suite_path: initialPath }), [initialPath]);
  const from = useLastLaunch(again, (last) => {
    // Over the form's defaults: a stored request leaves unset limits out.
    const base = initialRequest(initialPath || last.request.suite_path);
    setReq({
      ...base,
      ...last.request,
      suite_path: base.suite_path,
      tree: { ...base.tree, ...last.request.tree },
      model: { ...base.model, ...last.request.model, max_tokens: { ...last.request.model.max_tokens } },
      // The stopped plan's seed is the server's to pick; a new one otherwise.
      seed: undefined,
    });
    setOutside(last.request.allow_outside.join("\n"));
  });

  // Validate as the path settles, so mistakes show before Start.
  const typed = path.trim();
  const settledPath = useSettled(typed, 350);
  const validated = useQuery({
    queryKey: ["validate", settledPath],
    queryFn: () => api.validate({ request: { suite_path: settledPath } }),
    enabled: settledPath !== "",
    staleTime: 0,
    gcTime: 0,
  });
  useEffect(() => setRefused(null), [typed]);
  const current = typed !== "" && settledPath === typed;
  const validation: Validation | null = refused ?? (current ? (validated.data ?? null) : null);
  const checking = typed !== "" && (!current || validated.isFetching);
  const validateError = current && validated.error ? validated.error.message : null;

  const seedValue = seed.trim() === "" ? undefined : Number(seed);
  // Seeds past 2^53 would be rounded by JavaScript numbers before they reach the server.
  const seedBad = seedValue !== undefined && (!Number.isSafeInteger(seedValue) || seedValue < 0);
  const full: RunRequest = {
    ...req,
    seed: seedBad ? undefined : seedValue,
    allow_outside: outside.split("\n").map((l) => l.trim()).filter((l) => l !== ""),
  };
  const fullKey = JSON.stringify(full);

  // What the launch would do and ask of the model, once the file is valid
  // and as the settings change: the plan and preview `attractor run` prints.
  // A setting out of bounds shows the server's words here, before Start.
  const settledKey = useSettled(fullKey, 200);
  const asked = !!validation?.valid && settledKey === fullKey;
  const previewed = useQuery({
    queryKey: ["preview", settledKey],
    queryFn: () => api.preview({ request: JSON.parse(settledKey) as RunRequest }),
    enabled: asked,
    staleTime: 0,
    gcTime: 0,
  });
  const preview: LaunchPreview | null = asked ? (previewed.data ?? null) : null;
  const previewError = asked && previewed.error ? previewed.error.message : null;

  const start = async () => {
    setError(null);
    setStarting(true);
    try {
      await api.launch({ request: full });
      go("/live");
    } catch (e) {
      if (e instanceof RequestError && e.validation) setRefused(e.validation);
      setError((e as Error).message);
    } finally {
      setStarting(false);
    }
  };

  const tree = req.optimizer === "tree";
  return (
    <section>
      <header className="screen-head">
        <h2>{resume ? "Resume a suite" : "Launch a suite"}</h2>
      </header>
      {from && (
        <p className="notice" data-testid="launch-from">
          The settings of launch {from.id} ({from.optimizer}, {from.request.epochs} epoch{from.request.epochs === 1 ? "" : "s"},{" "}
          {from.epochs_done} done)
          {resume
            ? ". Unchanged, the run continues its plan: its seed, its unfinished epoch, only what is left; a change starts a new plan."
            : "; the seed is fresh unless you give one."}
        </p>
      )}
      <div className="card form">
        <label>
          Suite file
          <PathInput kind="suite" testId="suite-path" value={path} onChange={(p) => set({ suite_path: p })} placeholder={example} autoFocus />
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
          {validation && !validation.valid && <Issues issues={validation.issues} />}
        </div>
        {validation?.valid && validation.notes.length > 0 && (
          <ul className="hint validation-notes" data-testid="validation-notes">
            {validation.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        )}
        <div className="row">
          <CountField label="Epochs" field="epochs" max={MAX_EPOCHS} value={req.epochs} bad={badCount.epochs} onChange={count} />
          <label>
            Optimizer
            <select value={req.optimizer} onChange={(e) => set({ optimizer: e.target.value as OptimizerKind })}>
              {(Object.keys(OPTIMIZERS) as OptimizerKind[]).map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
            <span className="hint" data-testid="optimizer-hint">{OPTIMIZERS[req.optimizer]}</span>
          </label>
          <label>
            Learning rate
            <input type="number" min={0} max={1} step={0.05} value={req.learning_rate} onChange={(e) => set({ learning_rate: Number(e.target.value) })} />
          </label>
          <CountField label="Concurrency" field="concurrency" max={MAX_CONCURRENCY} value={req.concurrency} bad={badCount.concurrency} onChange={count} />
          <label>
            Seed
            <input value={seed} onChange={(e) => setSeed(e.target.value)} placeholder="random" className={seedBad ? "bad" : ""} aria-label="Seed" />
            {seedBad && (
              <span className="field-error" id="seed-error" data-testid="seed-error">
                A seed is a whole number from 0 to {Number.MAX_SAFE_INTEGER}, not {seed.trim()}
              </span>
            )}
          </label>
        </div>
        <div className="row">
          <label className="check">
            <input type="checkbox" checked={req.rollback} onChange={(e) => set({ rollback: e.target.checked })} /> Roll back an update when the mean loss gets worse
          </label>
          <label className="check">
            <input type="checkbox" checked={req.no_llm} onChange={(e) => set({ no_llm: e.target.checked })} /> Heuristics only (no LLM tier)
          </label>
        </div>
        {tree && (
          <fieldset className="row" data-testid="tree-settings">
            <legend>Tree search</legend>
            <label>
              Children per round
              <input type="number" min={1} max={64} value={req.tree.width} onChange={(e) => setTree({ width: Number(e.target.value) })} />
            </label>
            <label>
              Stall rounds
              <input type="number" min={1} value={req.tree.stall} onChange={(e) => setTree({ stall: Number(e.target.value) })} />
            </label>
            <label>
              Ideation rounds
              <input type="number" min={0} max={10} value={req.tree.ideation_rounds} onChange={(e) => setTree({ ideation_rounds: Number(e.target.value) })} />
            </label>
            <label>
              Branch depth
              <input type="number" min={1} max={50} value={req.tree.branch_depth} onChange={(e) => setTree({ branch_depth: Number(e.target.value) })} />
            </label>
            <label>
              Selection
              <select value={req.tree.selection} onChange={(e) => setTree({ selection: e.target.value as SelectionName })}>
                {(Object.keys(SELECTIONS) as SelectionName[]).map((o) => (
                  <option key={o} value={o}>
                    {SELECTIONS[o][0]}
                  </option>
                ))}
              </select>
              <span className="hint">{SELECTIONS[req.tree.selection][1]}</span>
            </label>
          </fieldset>
        )}
        <details className="more" data-testid="more-settings">
          <summary>More settings — decisions, agent tasks, model limits, folders</summary>
          <div className="row">
            <label>
              Verify repeats
              <input type="number" min={1} max={20} placeholder="the suite's" value={req.verify_repeats ?? ""} onChange={(e) => set({ verify_repeats: optional(e.target.value) ?? undefined })} />
            </label>
            <label>
              Held-out tolerance
              <input type="number" min={0} max={1} step={0.005} placeholder="0.01" value={req.holdout_tolerance ?? ""} onChange={(e) => set({ holdout_tolerance: optional(e.target.value) ?? undefined })} />
            </label>
            <label>
              Approve updates
              <select
                value={req.approve_updates ?? ""}
                onChange={(e) => set({ approve_updates: e.target.value === "" ? undefined : (e.target.value as ApprovalMode) })}
              >
                <option value="">the suite's (else off)</option>
                {(Object.keys(APPROVALS) as ApprovalMode[]).map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
              <span className="hint">{req.approve_updates ? APPROVALS[req.approve_updates] : "as the suite file says; updates apply at once if it says nothing"}</span>
            </label>
          </div>
          <label>
            Agent configuration
            <PathInput kind="suite" testId="agent-config" value={req.agent_config ?? ""} onChange={(p) => set({ agent_config: p.trim() === "" ? undefined : p })} placeholder="defaults (a JSON file of agent-task settings)" />
          </label>
          <label className="check">
            <input type="checkbox" checked={req.no_sandbox} onChange={(e) => set({ no_sandbox: e.target.checked })} /> Run agent tasks' commands without the sandbox (with full rights)
          </label>
          <div className="row">
            <label>
              Model call timeout (s)
              <input type="number" min={0} placeholder="120" value={req.model.timeout_secs ?? ""} onChange={(e) => setModel({ timeout_secs: optional(e.target.value) })} />
            </label>
            <label>
              Attempts per call
              <input type="number" min={1} placeholder="3" value={req.model.attempts ?? ""} onChange={(e) => setModel({ attempts: optional(e.target.value) })} />
            </label>
            <label>
              Model time for the run (s)
              <input type="number" min={0} placeholder="no limit" value={req.model.max_model_secs ?? ""} onChange={(e) => setModel({ max_model_secs: optional(e.target.value) })} />
            </label>
            <label>
              Largest reply (bytes)
              <input type="number" min={1} placeholder="262144" value={req.model.max_reply_bytes ?? ""} onChange={(e) => setModel({ max_reply_bytes: optional(e.target.value) })} />
            </label>
            <label>
              Cost limit
              <input type="number" min={0} step={0.1} placeholder="no limit" value={req.model.max_cost ?? ""} onChange={(e) => setModel({ max_cost: optional(e.target.value) })} />
            </label>
          </div>
          <div className="row tokens">
            {ROLES.map((role) => (
              <label key={role}>
                Reply tokens: {role}
                <input
                  type="number"
                  min={1}
                  placeholder="default"
                  value={req.model.max_tokens[role] ?? ""}
                  onChange={(e) => {
                    const n = optional(e.target.value);
                    const next = { ...req.model.max_tokens };
                    if (n === null) delete next[role];
                    else next[role] = n;
                    setModel({ max_tokens: next });
                  }}
                />
              </label>
            ))}
          </div>
          <label>
            Folders outside the suite's own it may reach (one a line)
            <textarea rows={2} value={outside} onChange={(e) => setOutside(e.target.value)} placeholder="none" spellCheck={false} />
          </label>
        </details>
        {preview && (
          <p className="muted small" data-testid="launch-preview">
            {counted(preview.runs, "run")}{preview.model ? ` · ${preview.model}` : " · no model calls"}
            <br />
            <span data-testid="launch-plan">{preview.plan}</span>
            {preview.continues && (
              <>
                <br />
                <span data-testid="launch-continues">{preview.continues}</span>
              </>
            )}
          </p>
        )}
        <ErrorNote error={error ?? validateError ?? previewError} />
        <div className="actions">
          <button className="primary" data-testid="start" disabled={!validation?.valid || starting || seedBad || badCount.epochs !== undefined || badCount.concurrency !== undefined || previewError !== null} onClick={start}>
            {starting ? "Starting…" : "Start"}
          </button>
        </div>
      </div>
    </section>
  );
}
