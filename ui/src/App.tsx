// The shell: navigation with badges, a hash router (the same build works
// from `attractor serve` and, later, from the desktop app's local files), and
// the live event feed every screen can react to.
import { createContext, useCallback, useContext, useEffect, useReducer, useRef, useState } from "react";
import { api, subscribe } from "./api";
import type { Envelope } from "./generated/Envelope";
import { useQueryClient } from "@tanstack/react-query";
import { countChanges } from "./lib/live";
import { useLiveQuery } from "./lib/query";
import { progressReducer, type ProgressState } from "./lib/progress";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { Modal } from "./components/Modal";
import { Artifacts } from "./screens/Artifacts";
import { Charts } from "./screens/Charts";
import { Graph } from "./screens/Graph";
import { Inbox } from "./screens/Inbox";
import { Launch } from "./screens/Launch";
import { Live } from "./screens/Live";
import { Memory } from "./screens/Memory";
import { RunDetailScreen } from "./screens/RunDetail";
import { Runs } from "./screens/Runs";
import { Settings } from "./screens/Settings";
import { Suites } from "./screens/Suites";
import { Watch } from "./screens/Watch";

export interface Route {
  parts: string[];
  query: URLSearchParams;
}

function readRoute(): Route {
  const hash = window.location.hash.replace(/^#\/?/, "");
  const [path, q] = hash.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q ?? "") };
}

/** Key → [route, what it does], shown by `?`. */
const SHORTCUTS: Record<string, [string, string]> = {
  s: ["/suites", "Suites"],
  c: ["/charts", "Charts of the suite you last looked at"],
  g: ["/graph", "Graph of the suite you last looked at"],
  l: ["/launch", "Launch a suite"],
  v: ["/live", "Live progress"],
  a: ["/artifacts", "Artifacts"],
  r: ["/runs", "Runs"],
  m: ["/memory", "Memory: what past agent runs teach"],
  i: ["/inbox", "Interventions inbox"],
  w: ["/watch", "Watched folders"],
  ",": ["/settings", "Settings"],
};

function ShortcutHelp({ onClose }: { onClose: () => void }) {
  return (
    <Modal label="keyboard shortcuts" onClose={onClose} testId="shortcuts">
        <h3>Keyboard shortcuts</h3>
        <table className="table compact">
          <tbody>
            {Object.entries(SHORTCUTS).map(([key, [, what]]) => (
              <tr key={key}>
                <td>
                  <kbd>{key}</kbd>
                </td>
                <td>{what}</td>
              </tr>
            ))}
            <tr>
              <td>
                <kbd>Esc</kbd>
              </td>
              <td>Close a drawer or this help</td>
            </tr>
            <tr>
              <td>
                <kbd>?</kbd>
              </td>
              <td>Show or hide this help</td>
            </tr>
          </tbody>
        </table>
    </Modal>
  );
}

/** The name of the screen at a route, with its subject. */
export function pageTitle(screen: string, rest: string[]): string {
  const names: Record<string, string> = {
    suites: "Suites",
    charts: "Charts",
    graph: "Graph",
    launch: "Launch",
    live: "Live",
    artifacts: "Artifacts",
    runs: "Runs",
    memory: "Memory",
    inbox: "Inbox",
    watch: "Watched folders",
    settings: "Settings",
  };
  const name = names[screen] ?? "Suites";
  if (screen === "runs" && rest[0] === "run") return `Run ${rest[1] ?? ""}`.trim();
  return rest[0] ? `${name} · ${rest[0]}` : name;
}

export function go(path: string) {
  window.location.hash = path;
}

interface Live {
  /** Bumps on every event that changes stored data: screens refetch on it. */
  tick: number;
  /** Per suite (`id:N`, `name:S`), the events that changed its epochs (see lib/live). */
  suiteChanges: Record<string, number>;
  /** Re-connections of the event feed after the first (events may have been missed). */
  reconnects: number;
  last: Envelope | null;
  progress: ProgressState;
  connected: boolean;
}

const LiveContext = createContext<Live>({ tick: 0, suiteChanges: {}, reconnects: 0, last: null, progress: {}, connected: false });
export const useLive = () => useContext(LiveContext);

/** Events after which stored data differs (a screen showing it should refetch). */
const CHANGES = new Set([
  "run_finished",
  "epoch_finished",
  "suite_finished",
  "launch_started",
  "launch_ended",
  "intervention_raised",
  "intervention_answered",
  "artifact_activated",
  "run_settled",
  "watched_folder_added",
  "watched_folder_removed",
  "watched_file_updated",
  "execution_approval_requested",
  "watched_run_updated",
]);

/** Screens refetch at most this often while events pour in (a thousand files dropped at once). */
const REFETCH_MS = 300;

export function App() {
  const [route, setRoute] = useState(readRoute);
  const [tick, setTick] = useState(0);
  const [last, setLast] = useState<Envelope | null>(null);
  const [connected, setConnected] = useState(false);
  const [suiteChanges, countChange] = useReducer(countChanges, {});
  const [reconnects, setReconnects] = useState(0);
  const opened = useRef(false);
  const [progress, dispatch] = useReducer(progressReducer, {});

  useEffect(() => {
    const onHash = () => setRoute(readRoute());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  // The first change refetches at once; more within REFETCH_MS are folded
  // into one trailing refetch.
  const throttle = useRef<{ timer: ReturnType<typeof setTimeout> | null; pending: boolean }>({ timer: null, pending: false });
  const changed = useCallback(() => {
    const t = throttle.current;
    if (t.timer) {
      t.pending = true;
      return;
    }
    setTick((n) => n + 1);
    const flush = () => {
      if (t.pending) {
        t.pending = false;
        setTick((n) => n + 1);
        t.timer = setTimeout(flush, REFETCH_MS);
      } else {
        t.timer = null;
      }
    };
    t.timer = setTimeout(flush, REFETCH_MS);
  }, []);

  useEffect(
    () =>
      subscribe(
        (e) => {
          dispatch(e);
          countChange(e);
          setLast(e);
          if (CHANGES.has(e.type)) changed();
        },
        () => {
          setConnected(true);
          setTick((t) => t + 1);
          if (opened.current) setReconnects((n) => n + 1);
          opened.current = true;
        },
        () => setConnected(false),
      ),
    [changed],
  );

  // The Inbox badge: the overview's count of questions waiting, refetched
  // on every change (and when the Inbox answers one).
  const queries = useQueryClient();
  const pending = useLiveQuery(["overview"], tick, () => api.overview()).data?.pending_interventions ?? 0;
  const refreshBadge = useCallback(() => queries.invalidateQueries({ queryKey: ["overview"] }), [queries]);

  // Keyboard shortcuts for the frequent moves (ignored while typing).
  const [help, setHelp] = useState(false);
  const [lastSuite, setLastSuite] = useState<string | null>(null);
  useEffect(() => {
    const [where, suite] = route.parts;
    if ((where === "charts" || where === "graph" || (where === "runs" && suite !== "run")) && suite) setLastSuite(suite);
  }, [route]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName) || t.isContentEditable)) return;
      // Behind an open dialog the screen does not move (the help's own "?" closes it).
      const dialog = document.querySelector('[aria-modal="true"]');
      if (dialog && !(e.key === "?" && dialog.getAttribute("data-testid") === "shortcuts")) return;
      if (e.key === "?") return setHelp((h) => !h);
      if (e.key === "Escape") return setHelp(false);
      const to =
        e.key === "c" || e.key === "g"
          ? `${SHORTCUTS[e.key][0]}/${lastSuite ? encodeURIComponent(lastSuite) : ""}`
          : SHORTCUTS[e.key]?.[0];
      if (to) {
        e.preventDefault();
        setHelp(false);
        go(to);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [lastSuite]);

  const [screen, ...rest] = route.parts;
  const nav = [
    ["suites", "Suites"],
    ["launch", "Launch"],
    ["live", "Live"],
    ["artifacts", "Artifacts"],
    ["runs", "Runs"],
    ["memory", "Memory"],
    ["inbox", "Inbox"],
    ["watch", "Watched"],
    ["settings", "Settings"],
  ];
  const current = screen ?? "suites";
  // The window's and the tab's title say where one is (and a screen
  // reader announces it): "Charts · knobs — Attractor".
  useEffect(() => {
    document.title = `${pageTitle(current, rest)} — Attractor`;
  });
  const running = Object.values(progress).filter((p) => !p.ended).length;

  let body;
  switch (current) {
    case "charts":
      body = <Charts suite={rest[0]} />;
      break;
    case "graph":
      body = <Graph suite={rest[0]} />;
      break;
    case "launch":
      // Keyed by the suite it starts from: another suite's "Launch again" is a fresh form.
      body = <Launch key={route.query.get("again") ?? ""} initialPath={route.query.get("path") ?? ""} again={route.query.get("again")} resume={route.query.get("resume") === "1"} />;
      break;
    case "live":
      body = <Live />;
      break;
    case "artifacts":
      body = <Artifacts name={rest[0]} />;
      break;
    case "runs":
      body = rest[0] === "run" ? <RunDetailScreen id={Number(rest[1])} /> : <Runs suite={rest[0]} />;
      break;
    case "memory":
      body = <Memory query={route.query} />;
      break;
    case "inbox":
      body = <Inbox onChange={refreshBadge} />;
      break;
    case "watch":
      body = <Watch />;
      break;
    case "settings":
      body = <Settings />;
      break;
    default:
      body = <Suites />;
  }

  return (
    <LiveContext.Provider value={{ tick, suiteChanges, reconnects, last, progress, connected }}>
      <div className="app">
        <nav className="nav">
          <div className="brand">
            <span className="logo">◎</span> Attractor
          </div>
          {nav.map(([id, label]) => (
            <a
              key={id}
              href={`#/${id}`}
              className={current === id || (id === "suites" && (current === "charts" || current === "graph")) ? "active" : ""}
              title={`${label} (${Object.entries(SHORTCUTS).find(([, [to]]) => to === `/${id}`)?.[0] ?? ""})`}
            >
              {label}
              {id === "inbox" && pending > 0 && (
                <span className="count" data-testid="inbox-badge" title={`${pending} waiting for an answer`}>
                  {pending}
                </span>
              )}
              {id === "live" && running > 0 && <span className="count live">{running}</span>}
            </a>
          ))}
          <button className="keys-hint" onClick={() => setHelp(true)} title="keyboard shortcuts" aria-label="keyboard shortcuts" data-testid="keys-hint">
            ?<span className="keys-label"> shortcuts</span>
          </button>
          <div className={`conn ${connected ? "on" : "off"}`} title={connected ? "live updates on" : "live updates reconnecting"}>
            {connected ? "● live" : "○ offline"}
          </div>
        </nav>
        <main className="main">
          <ErrorBoundary resetKey={window.location.hash}>{body}</ErrorBoundary>
        </main>
        {help && <ShortcutHelp onClose={() => setHelp(false)} />}
      </div>
    </LiveContext.Provider>
  );
}
