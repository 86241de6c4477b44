// The front end's one client of the service facade, over whichever transport
// the page has: one typed function per facade operation, and `subscribe` for
// the live bus events. Screens call `api.*` and never learn which it is.
//
// - In the desktop app (Tauri injects `window.__TAURI_INTERNALS__` before any
//   script runs) every call is a Tauri command (`invoke`) handled by
//   src-tauri, and bus events arrive as Tauri events (`listen`).
// - In a browser the calls go to `attractor serve` over HTTP (fetch) and the
//   events over server-sent events (EventSource).
//
// Both transports end in the same `Service` method with the same arguments,
// and a failure carries the same body (ApiError) either way.
//
// Types come from ui/src/generated (generated from the Rust types by ts-rs),
// so a renamed field breaks the build here instead of showing `undefined` in
// a screen. A server started with --token needs it on every request: open the
// UI as http://host:port/?token=T once and it is kept for the browser session.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { ApiError } from "./generated/ApiError";
import type { AnswerRequest } from "./generated/AnswerRequest";
import type { ArtifactHistory } from "./generated/ArtifactHistory";
import type { ArtifactItem } from "./generated/ArtifactItem";
import type { Envelope } from "./generated/Envelope";
import type { Inbox } from "./generated/Inbox";
import type { InterventionItem } from "./generated/InterventionItem";
import type { LaunchPreview } from "./generated/LaunchPreview";
import type { RunRequest } from "./generated/RunRequest";
import type { LaunchView } from "./generated/LaunchView";
import type { LineDiff } from "./generated/LineDiff";
import type { LlmCheck } from "./generated/LlmCheck";
import type { MemoryItem } from "./generated/MemoryItem";
import type { Overview } from "./generated/Overview";
import type { ReportWritten } from "./generated/ReportWritten";
import type { RunDetail } from "./generated/RunDetail";
import type { RunEpoch } from "./generated/RunEpoch";
import type { SettingsUpdate } from "./generated/SettingsUpdate";
import type { SettingsView } from "./generated/SettingsView";
import type { SimilarRequest } from "./generated/SimilarRequest";
import type { SimilarTrajectories } from "./generated/SimilarTrajectories";
import type { SuiteCharts } from "./generated/SuiteCharts";
import type { SuiteEpochs } from "./generated/SuiteEpochs";
import type { SuiteGraph } from "./generated/SuiteGraph";
import type { SuiteItem } from "./generated/SuiteItem";
import type { SuiteProposals } from "./generated/SuiteProposals";
import type { TrajectoryStats } from "./generated/TrajectoryStats";
import type { Validation } from "./generated/Validation";
import type { WatchedFolders } from "./generated/WatchedFolders";
import type { WatchedFolderView } from "./generated/WatchedFolderView";
import { attachmentName, reportSlug } from "./lib/export";

const TOKEN_KEY = "attractor.token";

/** The Tauri event the desktop shell forwards bus events on (src-tauri's BUS_EVENT). */
export const BUS_EVENT = "attractor:event";

/** Whether this page runs inside the desktop app rather than a browser. */
export function inDesktopApp(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

/** Picks up `?token=` from the address once and keeps it for the session. */
function token(): string | null {
  const fromUrl = new URLSearchParams(window.location.search).get("token");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

/**
 * A failed request, with the facade's message and, for an invalid suite file,
 * its located issues. `status` is the HTTP status; 0 when there is none (the
 * server was unreachable, or the desktop app answered).
 */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly validation: Validation | null = null,
  ) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp: Response;
  try {
    resp = await fetch(`/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new RequestError(0, `cannot reach the Attractor server (${String(e)}); is \`attractor serve\` running?`);
  }
  const text = await resp.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const err = data as ApiError | null;
    throw new RequestError(resp.status, err?.error ?? `${resp.status} ${resp.statusText}`, err?.validation ?? null);
  }
  return data as T;
}

/** A file the server offers for download (a report archive), with the name it suggests. */
export interface Download {
  blob: Blob;
  fileName: string;
}

/** GETs a binary answer; a failure reads like any other request's. */
async function download(path: string, fallbackName: string): Promise<Download> {
  const headers: Record<string, string> = {};
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  let resp: Response;
  try {
    resp = await fetch(`/api${path}`, { headers });
  } catch (e) {
    throw new RequestError(0, `cannot reach the Attractor server (${String(e)}); is \`attractor serve\` running?`);
  }
  if (!resp.ok) {
    let err: ApiError | null = null;
    try {
      err = (await resp.json()) as ApiError;
    } catch {
      err = null;
    }
    throw new RequestError(resp.status, err?.error ?? `${resp.status} ${resp.statusText}`, err?.validation ?? null);
  }
  return { blob: await resp.blob(), fileName: attachmentName(resp.headers.get("Content-Disposition"), fallbackName) };
}

/** One Tauri command: the facade operation's name and its arguments (snake_case, like the HTTP bodies). */
async function command<T>(name: string, args: Record<string, unknown> = {}): Promise<T> {
  try {
    return await invoke<T>(name, args);
  } catch (e) {
    // The shell rejects with the facade's ApiError; anything else (a denied
    // or unknown command, bad arguments) comes from Tauri itself as text.
    const err = e as Partial<ApiError> | null;
    if (err && typeof err === "object" && typeof err.error === "string") {
      throw new RequestError(0, err.error, err.validation ?? null);
    }
    throw new RequestError(0, `the desktop app could not run \`${name}\`: ${String(e)}`);
  }
}

type Http = [method: string, path: string, body?: unknown];
type Command = [name: string, args?: Record<string, unknown>];

/** One facade operation, addressed for both transports; the page's transport picks. */
function request<T>(cmd: Command, http: Http): Promise<T> {
  return inDesktopApp() ? command<T>(...cmd) : call<T>(...http);
}

const enc = encodeURIComponent;

/** `?a=1&b=x` from the given fields (those undefined or null are left out), or "" for none. */
export function queryString(fields: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

export const api = {
  overview: () => request<Overview>(["overview"], ["GET", "/overview"]),
  suites: () => request<SuiteItem[]>(["suites"], ["GET", "/suites"]),
  /** A suite's epochs; `runs: false` leaves the run lists out (most of the payload). */
  epochs: (suite: string | number, runs = true) =>
    request<SuiteEpochs>(
      ["suite_epochs", { key: String(suite), with_runs: runs }],
      ["GET", `/suites/${enc(String(suite))}/epochs${runs ? "" : "?runs=false"}`],
    ),
  /** What the Charts screen draws, shaped on the server: one column per finished epoch. */
  charts: (suite: string | number) =>
    request<SuiteCharts>(["suite_charts", { key: String(suite) }], ["GET", `/suites/${enc(String(suite))}/charts`]),
  graph: (suite: string | number) =>
    request<SuiteGraph>(["suite_graph", { key: String(suite) }], ["GET", `/suites/${enc(String(suite))}/graph`]),
  /** Every proposal the optimizer considered, with predicted and observed effect. */
  proposals: (suite: string | number) =>
    request<SuiteProposals>(
      ["suite_proposals", { key: String(suite) }],
      ["GET", `/suites/${enc(String(suite))}/proposals`],
    ),
  /**
   * Browser only: the suite's report (charts as SVG and PNG, index.html) as a
   * zip archive to save. The desktop app writes it with {@link api.exportReport}.
   */
  reportZip: (suite: string | number, name: string) =>
    download(`/suites/${enc(String(suite))}/report.zip`, `${reportSlug(name)}-report.zip`),
  /** Desktop only: writes the suite's report into a folder (created when missing). */
  exportReport: (suite: string | number, dir: string) =>
    command<ReportWritten>("export_report", { key: String(suite), dir }),
  /** A run with its output tails and ASO telemetry. */
  run: (id: number) => request<RunDetail>(["run_detail", { id }], ["GET", `/runs/${id}`]),
  runEpoch: (id: number) => request<RunEpoch>(["run_epoch", { id }], ["GET", `/runs/${id}/epoch`]),
  artifacts: () => request<ArtifactItem[]>(["artifacts"], ["GET", "/artifacts"]),
  versions: (name: string) =>
    request<ArtifactHistory>(["artifact_versions", { name }], ["GET", `/artifacts/${enc(name)}/versions`]),
  diff: (name: string, from: number, to: number) =>
    request<LineDiff>(
      ["artifact_diff", { name, from, to }],
      ["GET", `/artifacts/${enc(name)}/diff?from=${from}&to=${to}`],
    ),
  rollback: (name: string, version: number) =>
    request<ArtifactItem>(
      ["rollback_artifact", { name, version }],
      ["POST", `/artifacts/${enc(name)}/rollback`, { version }],
    ),
  interventions: () => request<Inbox>(["interventions"], ["GET", "/interventions"]),
  answer: (id: number, req: AnswerRequest) =>
    request<InterventionItem>(["answer", { id, request: req }], ["POST", `/interventions/${id}/answer`, req]),
  /** Dismisses a notice (what a run told a person without waiting for them). */
  dismiss: (id: number) => request<InterventionItem>(["dismiss", { id }], ["POST", `/interventions/${id}/dismiss`]),
  validate: (suite_path: string) =>
    request<Validation>(["validate", { suite_path }], ["POST", "/validate", { suite_path }]),
  /** What a launch would do and may cost; nothing runs. */
  preview: (req: RunRequest) =>
    request<LaunchPreview>(["preview", { request: req }], ["POST", "/launches/preview", req]),
  launch: (req: RunRequest) => request<LaunchView>(["launch", { request: req }], ["POST", "/launches", req]),
  launches: () => request<LaunchView[]>(["launches"], ["GET", "/launches"]),
  launchView: (id: number) => request<LaunchView>(["launch_view", { id }], ["GET", `/launches/${id}`]),
  cancel: (id: number) => request<LaunchView>(["cancel", { id }], ["POST", `/launches/${id}/cancel`, {}]),
  settings: () => request<SettingsView>(["settings"], ["GET", "/settings"]),
  saveSettings: (update: SettingsUpdate) =>
    request<SettingsView>(["update_settings", { update }], ["PUT", "/settings", update]),
  testLlm: () => request<LlmCheck>(["test_llm"], ["POST", "/settings/test-llm", {}]),
  /** Keeps the API key in the operating system's keychain; the answer only says where a key comes from. */
  setApiKey: (key: string) =>
    request<SettingsView>(["set_api_key", { request: { key } }], ["PUT", "/settings/api-key", { key }]),
  deleteApiKey: () => request<SettingsView>(["delete_api_key"], ["DELETE", "/settings/api-key"]),
  /** The desktop app's native picker (`null` when cancelled); a browser types the path instead. */
  pickPath: (kind: "suite" | "folder") => command<string | null>("pick_path", { kind }),
  /** The trajectory repository's aggregates (seed 002 §10.2), of one task category or of all. */
  trajectoryStats: (category?: string) =>
    request<TrajectoryStats>(
      ["trajectory_stats", { category: category ?? null }],
      ["GET", `/trajectories/stats${queryString({ category })}`],
    ),
  /** Finished trajectories whose task is most like a run's, a trajectory's or a described one. */
  similarTrajectories: (req: SimilarRequest) =>
    request<SimilarTrajectories>(
      ["similar_trajectories", { request: req }],
      ["GET", `/trajectories/similar${queryString({ ...req })}`],
    ),
  /** The newest convergence memories (seed 002 Part 8), of one category or of all. */
  memories: (category?: string, limit?: number) =>
    request<MemoryItem[]>(
      ["memories", { category: category ?? null, limit: limit ?? null }],
      ["GET", `/memories${queryString({ category, limit })}`],
    ),
  watched: () => request<WatchedFolders>(["watched"], ["GET", "/watch"]),
  watchFolder: (path: string) =>
    request<WatchedFolderView>(["add_watched_folder", { path }], ["POST", "/watch/folders", { path }]),
  unwatchFolder: (id: number) =>
    request<WatchedFolders>(["remove_watched_folder", { id }], ["DELETE", `/watch/folders/${id}`]),
};

/**
 * Subscribes to the facade's bus events: Tauri events in the desktop app,
 * server-sent events from a server. Over SSE the browser reconnects by
 * itself after a network blip; `onOpen` fires on every (re)connection so the
 * caller can refetch what it may have missed. Returns the unsubscribe.
 */
export function subscribe(onEvent: (e: Envelope) => void, onOpen: () => void, onError: () => void): () => void {
  if (inDesktopApp()) return subscribeDesktop(onEvent, onOpen, onError);
  const t = token();
  const source = new EventSource(t ? `/api/events?access_token=${enc(t)}` : "/api/events");
  source.onmessage = (m) => {
    try {
      onEvent(JSON.parse(m.data) as Envelope);
    } catch {
      // A malformed frame is dropped; the next refetch repairs any gap.
    }
  };
  source.onopen = onOpen;
  source.onerror = onError;
  return () => source.close();
}

/** The desktop app's event feed: in-process, so it opens once and never drops. */
function subscribeDesktop(onEvent: (e: Envelope) => void, onOpen: () => void, onError: () => void): () => void {
  let closed = false;
  let unlisten: (() => void) | null = null;
  listen<Envelope>(BUS_EVENT, (e) => onEvent(e.payload)).then(
    (stop) => {
      // Unsubscribed before the listener was registered: drop it at once.
      if (closed) return stop();
      unlisten = stop;
      onOpen();
    },
    () => onError(),
  );
  return () => {
    closed = true;
    unlisten?.();
  };
}
