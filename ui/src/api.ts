// The HTTP client of the service facade: one typed function per endpoint.
//
// Types come from ui/src/generated (generated from the Rust types by ts-rs),
// so a renamed field breaks the build here instead of showing `undefined` in
// a screen. A server started with --token needs it on every request: open the
// UI as http://host:port/?token=T once and it is kept for the browser session.
import type { ApiError } from "./generated/ApiError";
import type { AnswerRequest } from "./generated/AnswerRequest";
import type { ArtifactHistory } from "./generated/ArtifactHistory";
import type { ArtifactItem } from "./generated/ArtifactItem";
import type { Envelope } from "./generated/Envelope";
import type { Inbox } from "./generated/Inbox";
import type { InterventionItem } from "./generated/InterventionItem";
import type { LaunchRequest } from "./generated/LaunchRequest";
import type { LaunchView } from "./generated/LaunchView";
import type { LineDiff } from "./generated/LineDiff";
import type { LlmCheck } from "./generated/LlmCheck";
import type { Overview } from "./generated/Overview";
import type { RunDetail } from "./generated/RunDetail";
import type { SettingsUpdate } from "./generated/SettingsUpdate";
import type { SettingsView } from "./generated/SettingsView";
import type { SuiteEpochs } from "./generated/SuiteEpochs";
import type { SuiteItem } from "./generated/SuiteItem";
import type { SuiteProposals } from "./generated/SuiteProposals";
import type { Validation } from "./generated/Validation";
import type { WatchedFolders } from "./generated/WatchedFolders";
import type { WatchedFolderView } from "./generated/WatchedFolderView";

const TOKEN_KEY = "attractor.token";

/** Picks up `?token=` from the address once and keeps it for the session. */
function token(): string | null {
  const fromUrl = new URLSearchParams(window.location.search).get("token");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    return fromUrl;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

/** A failed request, with the server's message and, for an invalid suite file, its located issues. */
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

const enc = encodeURIComponent;

export const api = {
  overview: () => call<Overview>("GET", "/overview"),
  suites: () => call<SuiteItem[]>("GET", "/suites"),
  /** A suite's epochs; `runs: false` leaves the run lists out (what the charts need). */
  epochs: (suite: string | number, runs = true) =>
    call<SuiteEpochs>("GET", `/suites/${enc(String(suite))}/epochs${runs ? "" : "?runs=false"}`),
  /** Every proposal the optimizer considered, with predicted and observed effect. */
  proposals: (suite: string | number) => call<SuiteProposals>("GET", `/suites/${enc(String(suite))}/proposals`),
  run: (id: number) => call<RunDetail>("GET", `/runs/${id}`),
  artifacts: () => call<ArtifactItem[]>("GET", "/artifacts"),
  versions: (name: string) => call<ArtifactHistory>("GET", `/artifacts/${enc(name)}/versions`),
  diff: (name: string, from: number, to: number) =>
    call<LineDiff>("GET", `/artifacts/${enc(name)}/diff?from=${from}&to=${to}`),
  rollback: (name: string, version: number) =>
    call<ArtifactItem>("POST", `/artifacts/${enc(name)}/rollback`, { version }),
  interventions: () => call<Inbox>("GET", "/interventions"),
  answer: (id: number, req: AnswerRequest) => call<InterventionItem>("POST", `/interventions/${id}/answer`, req),
  validate: (suite_path: string) => call<Validation>("POST", "/validate", { suite_path }),
  launch: (req: LaunchRequest) => call<LaunchView>("POST", "/launches", req),
  launches: () => call<LaunchView[]>("GET", "/launches"),
  cancel: (id: number) => call<LaunchView>("POST", `/launches/${id}/cancel`, {}),
  settings: () => call<SettingsView>("GET", "/settings"),
  saveSettings: (update: SettingsUpdate) => call<SettingsView>("PUT", "/settings", update),
  testLlm: () => call<LlmCheck>("POST", "/settings/test-llm", {}),
  watched: () => call<WatchedFolders>("GET", "/watch"),
  watchFolder: (path: string) => call<WatchedFolderView>("POST", "/watch/folders", { path }),
  unwatchFolder: (id: number) => call<WatchedFolders>("DELETE", `/watch/folders/${id}`),
};

/**
 * Subscribes to the server's bus events (SSE). The browser reconnects by
 * itself after a network blip; `onOpen` fires on every (re)connection so the
 * caller can refetch what it may have missed.
 */
export function subscribe(onEvent: (e: Envelope) => void, onOpen: () => void, onError: () => void): () => void {
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
