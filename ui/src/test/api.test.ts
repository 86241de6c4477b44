// The transport the front end picks: Tauri commands and events inside the
// desktop app, fetch and EventSource in a browser — behind the same `api`.
// The Tauri side runs against @tauri-apps/api's own IPC mock, which installs
// `window.__TAURI_INTERNALS__` the way the real webview does.
import { afterEach, describe, expect, it, vi } from "vitest";
import { emit } from "@tauri-apps/api/event";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { api, BUS_EVENT, inDesktopApp, RequestError, subscribe } from "../api";
import type { Envelope } from "../generated/Envelope";
import type { Validation } from "../generated/Validation";

const suites = [{ id: 1, name: "knobs" }];

function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** Records what the desktop shell was asked, answering like the facade. */
function desktopShell(answer: (cmd: string, args: Record<string, unknown>) => unknown = () => suites) {
  const calls: [string, Record<string, unknown>][] = [];
  mockIPC(
    (cmd, args) => {
      calls.push([cmd, (args ?? {}) as Record<string, unknown>]);
      return answer(cmd, (args ?? {}) as Record<string, unknown>);
    },
    { shouldMockEvents: true },
  );
  return calls;
}

afterEach(() => {
  clearMocks();
  // clearMocks leaves an empty bridge object behind; a browser has none.
  delete (window as unknown as Record<string, unknown>).__TAURI_INTERNALS__;
  vi.unstubAllGlobals();
});

describe("in a browser", () => {
  it("calls the HTTP API with fetch and never the Tauri bridge", async () => {
    const fetchMock = vi.fn(async () => jsonResponse(suites));
    vi.stubGlobal("fetch", fetchMock);
    expect(inDesktopApp()).toBe(false);

    expect(await api.suites()).toEqual(suites);
    await api.suite_epochs({ key: "knobs", runs: false });
    await api.suite_charts({ key: "knobs" });
    expect(fetchMock.mock.calls.map((c) => (c as unknown as [string])[0])).toEqual([
      "/api/suites",
      "/api/suites/knobs/epochs?runs=false",
      "/api/suites/knobs/charts",
    ]);
  });

  it("asks the trajectory repository and the memories with query strings that leave out what is not given", async () => {
    const fetchMock = vi.fn(async () => jsonResponse({}));
    vi.stubGlobal("fetch", fetchMock);
    await api.trajectory_stats();
    await api.trajectory_stats({ category: "text files" });
    await api.similar_trajectories({ request: { trajectory_id: "run-3", limit: 5 } });
    await api.similar_trajectories({ request: { task: "parse dates & times", category: "parsers" } });
    await api.memories();
    await api.memories({ category: "config", limit: 100 });
    expect(fetchMock.mock.calls.map((c) => (c as unknown as [string])[0])).toEqual([
      "/api/trajectories/stats",
      "/api/trajectories/stats?category=text+files",
      "/api/trajectories/similar?trajectory_id=run-3&limit=5",
      "/api/trajectories/similar?task=parse+dates+%26+times&category=parsers",
      "/api/memories",
      "/api/memories?category=config&limit=100",
    ]);
  });

  it("sends request bodies as JSON and turns an error answer into a RequestError", async () => {
    const fetchMock = vi.fn(async () => jsonResponse({ error: "no launch 9 in this session", validation: null }, 404));
    vi.stubGlobal("fetch", fetchMock);
    const failure = await api.cancel({ id: 9 }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RequestError);
    expect((failure as RequestError).status).toBe(404);
    expect((failure as RequestError).message).toBe("no launch 9 in this session");
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/launches/9/cancel");
    expect(init.method).toBe("POST");
    expect(init.body).toBeUndefined();
    await api.answer({ id: 4, request: { answer: "approve" } }).catch(() => undefined);
    const [answerUrl, answerInit] = fetchMock.mock.calls[1] as unknown as [string, RequestInit];
    expect(answerUrl).toBe("/api/interventions/4/answer");
    expect(answerInit.body).toBe('{"answer":"approve"}');
    expect(new Headers(answerInit.headers).get("Content-Type")).toBe("application/json");
  });

  it("subscribes to server-sent events", () => {
    const opened: string[] = [];
    class FakeEventSource {
      onmessage: ((m: { data: string }) => void) | null = null;
      constructor(url: string) {
        opened.push(url);
      }
      close() {}
    }
    vi.stubGlobal("EventSource", FakeEventSource);
    const stop = subscribe(
      () => undefined,
      () => undefined,
      () => undefined,
    );
    expect(opened).toEqual(["/api/events"]);
    stop();
  });
});

describe("inside the desktop app", () => {
  it("invokes the shell's one command with the operation's name and its named arguments, and never fetches", async () => {
    const fetchMock = vi.fn();
    vi.stubGlobal("fetch", fetchMock);
    const calls = desktopShell();
    expect(inDesktopApp()).toBe(true);

    expect(await api.suites()).toEqual(suites);
    await api.suite_epochs({ key: "knobs", runs: false });
    await api.suite_charts({ key: "knobs" });
    await api.artifact_diff({ name: "knobs", from: 1, to: 3 });
    await api.answer({ id: 4, request: { answer: "approve" } });
    await api.dismiss({ id: 5 });
    await api.update_settings({ update: { llm_model: "m" } });
    await api.trajectory_stats();
    await api.similar_trajectories({ request: { run_id: 7 } });
    await api.memories({ category: "config", limit: 20 });
    const call = (op: string, args: Record<string, unknown>) => ["call", { op, args }];
    expect(calls).toEqual([
      call("suites", {}),
      call("suite_epochs", { key: "knobs", runs: false }),
      call("suite_charts", { key: "knobs" }),
      call("artifact_diff", { name: "knobs", from: 1, to: 3 }),
      call("answer", { id: 4, request: { answer: "approve" } }),
      call("dismiss", { id: 5 }),
      call("update_settings", { update: { llm_model: "m" } }),
      call("trajectory_stats", {}),
      call("similar_trajectories", { request: { run_id: 7 } }),
      call("memories", { category: "config", limit: 20 }),
    ]);
    expect(fetchMock).not.toHaveBeenCalled();
  });

  it("rejects with the facade's error, keeping a suite file's located issues", async () => {
    const validation = { valid: false, path: "s.yaml", issues: [{ file: "s.yaml", line: 3 }] } as unknown as Validation;
    desktopShell(() => {
      throw { error: "the suite file s.yaml is not valid (1 issue)", validation };
    });
    const failure = await api.launch({ request: { suite_path: "s.yaml" } as never }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RequestError);
    expect((failure as RequestError).message).toBe("the suite file s.yaml is not valid (1 issue)");
    expect((failure as RequestError).validation).toEqual(validation);
    expect((failure as RequestError).status).toBe(0);
  });

  it("reports a refusal from Tauri itself (e.g. a command the capability does not grant) by name", async () => {
    desktopShell(() => {
      throw "Command call not allowed by ACL";
    });
    await expect(api.suites()).rejects.toThrow(/could not run `call`: Command call not allowed by ACL/);
  });

  it("receives the bus events the shell forwards, until unsubscribed", async () => {
    desktopShell();
    const received: Envelope[] = [];
    let opened = 0;
    const stop = subscribe(
      (e) => received.push(e),
      () => (opened += 1),
      () => undefined,
    );
    await vi.waitFor(() => expect(opened).toBe(1));
    const event = { occurred_at: "2026-01-01T00:00:00Z", type: "intervention_answered", intervention_id: 3, answer: "approve" };
    await emit(BUS_EVENT, event);
    expect(received).toEqual([event]);

    stop();
    // The mock still knows the listener's id and says its callback is gone.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    await emit(BUS_EVENT, { ...event, intervention_id: 4 });
    warn.mockRestore();
    expect(received).toHaveLength(1);
  });
});
