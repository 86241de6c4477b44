// The front end's one client of the service facade, over whichever transport
// the page has. Screens call `api.<operation>(args)` and never learn which.
//
// The operations themselves are not written here: each is declared once in
// crates/service/src/service/operations.rs, and ui/src/generated/operations.ts (generated
// from it) gives every operation's argument and answer types and how it
// travels over HTTP. `api` is built from that table, so a new operation
// needs no change in this file.
//
// - In the desktop app (Tauri injects `window.__TAURI_INTERNALS__` before any
//   script runs) every call is the shell's one Tauri command, `call`, with
//   the operation's name and its arguments; bus events arrive as Tauri
//   events (`listen`).
// - In a browser the calls go to `attractor serve` over HTTP (fetch): the
//   table says the verb and path, and which arguments go into the path, the
//   query string or the body; the events come over server-sent events.
//
// Both transports end in the same `operations::call` on the server, and a
// failure carries the same body (ApiError) either way. A server started
// with --token needs it on every request: open the UI as
// http://host:port/?token=T once and it is kept for the browser session.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { ApiError } from "./generated/ApiError";
import type { Envelope } from "./generated/Envelope";
import { OPERATIONS, type Operations } from "./generated/operations";
import type { ReportWritten } from "./generated/ReportWritten";
import type { Validation } from "./generated/Validation";
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

declare global {
  interface Window {
    /**
     * A request the page started before the app loaded (ui/index.html): its answer
     * (status and text), and — when it arrived before anyone took the
     * request — the text already parsed.
     */
    __attractorPreload?: { path: string; response: Promise<Response>; data?: unknown };
  }
}

/** The request the page started for this GET before the app loaded, taken once. */
function preloaded(method: string, path: string): Promise<Response> | null {
  const p = typeof window === "undefined" ? undefined : window.__attractorPreload;
  if (!p || method !== "GET" || p.path !== path) return null;
  window.__attractorPreload = undefined;
  return p.response;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp: Response;
  try {
    resp = await (preloaded(method, path) ??
      fetch(`/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
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

const enc = encodeURIComponent;

/** `?a=1&b=x` from the given fields (those undefined or null are left out), or "" for none. */
function queryString(fields: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

type Args<K extends keyof Operations> = Operations[K]["args"];
type Answer<K extends keyof Operations> = Operations[K]["answer"];

/** One operation over HTTP: its arguments placed where the table says. */
function overHttp<K extends keyof Operations>(op: K, args: Args<K>): Promise<Answer<K>> {
  const { verb, url, body } = httpRequest(op, args);
  return call<Answer<K>>(verb, url, body);
}

/** The verb, path (with its query string) and body of one operation over HTTP. */
function httpRequest<K extends keyof Operations>(op: K, args: Args<K>): { verb: string; url: string; body: unknown } {
  const { verb, path, params } = OPERATIONS[op];
  const given = args as Record<string, unknown>;
  const query: Record<string, unknown> = {};
  let body: unknown = undefined;
  for (const [name, source] of Object.entries(params)) {
    const value = given[name];
    if (source === "query") query[name] = value;
    else if (source === "params") Object.assign(query, value);
    else if (source === "body") body = value;
  }
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => enc(String(given[name])));
  return { verb, url: url + queryString(query), body };
}

/**
 * The answer the page already holds for this operation (ui/index.html), parsed
 * while the app's code was loading — taken once, so a screen can draw it in
 * its first render instead of asking for it after. `undefined` when there is
 * none: not preloaded (another screen, the desktop app), not arrived yet
 * (the request is then taken over by the screen's own call), or an error.
 */
export function preloadedAnswer<K extends keyof Operations>(op: K, args: Args<K>): Answer<K> | undefined {
  const p = typeof window === "undefined" ? undefined : window.__attractorPreload;
  if (!p || p.data === undefined || inDesktopApp()) return undefined;
  const { verb, url } = httpRequest(op, args);
  if (verb !== "GET" || p.path !== url) return undefined;
  window.__attractorPreload = undefined;
  return p.data as Answer<K>;
}

/** Runs one facade operation on the page's transport. */
export function operation<K extends keyof Operations>(op: K, args: Args<K>): Promise<Answer<K>> {
  return inDesktopApp() ? command<Answer<K>>("call", { op, args }) : overHttp(op, args);
}

/** An operation as a function; its argument may be left out when it has no required field. */
type Call<K extends keyof Operations> = (
  ...args: Record<string, never> extends Args<K> ? [args?: Args<K>] : [args: Args<K>]
) => Promise<Answer<K>>;

/**
 * Every operation of the facade, by its name in crates/service/src/service/operations.rs:
 * `api.suite_epochs({ key: "knobs", runs: false })`.
 */
export const api = Object.fromEntries(
  (Object.keys(OPERATIONS) as (keyof Operations)[]).map((op) => [
    op,
    (args?: Args<typeof op>) => operation(op, (args ?? {}) as Args<typeof op>),
  ]),
) as { [K in keyof Operations]: Call<K> };

/**
 * What only one transport has. Browser: the suite's report (charts as SVG
 * and PNG, index.html) as a zip archive to save. Desktop: the report written
 * into a folder (created when missing), and the native picker (`null` when
 * cancelled; a browser types the path instead).
 */
export const transport = {
  reportZip: (suite: string | number, name: string) =>
    download(`/suites/${enc(String(suite))}/report.zip`, `${reportSlug(name)}-report.zip`),
  exportReport: (suite: string | number, dir: string) =>
    command<ReportWritten>("export_report", { key: String(suite), dir }),
  pickPath: (kind: "suite" | "folder") => command<string | null>("pick_path", { kind }),
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
