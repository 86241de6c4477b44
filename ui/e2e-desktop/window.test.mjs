// End to end in the real desktop window: the `attractor-desktop` binary (the
// Tauri shell over the core) opens a SQLite database that real `attractor
// run`s filled, under a virtual X server, and WebKitWebDriver drives its
// webview through the W3C WebDriver protocol (plain fetch, no client library).
// Every screen here talks to the core through Tauri commands and events, not
// HTTP: the test checks that too.
//
// Run with `npm run e2e:desktop` after `npm run build`, `cargo build` and
// `cargo build -p attractor-desktop`. ATTRACTOR_BIN and ATTRACTOR_DESKTOP_BIN
// name the binaries (default: $CARGO_TARGET_DIR/debug/…); screenshots go to
// E2E_SHOTS (default /tmp/attractor-e2e) as desktop-*.png — look at them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { join, resolve } from "node:path";
// The virtual screen, a free port and a pause, as the package's install test starts them.
import { captureScreen, freePort, sleep, startXvfb } from "../e2e-package/window.mjs";

const root = resolve(import.meta.dirname, "../..");
const targetDir = process.env.CARGO_TARGET_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "attractor/target");
const cliBin = process.env.ATTRACTOR_BIN ?? join(targetDir, "debug/attractor");
const appBin = process.env.ATTRACTOR_DESKTOP_BIN ?? join(targetDir, "debug/attractor-desktop");
const shots = process.env.E2E_SHOTS ?? "/tmp/attractor-e2e";
const fixtures = join(root, "tests/fixtures/app");
// How long a step may take before the test gives up on it: generous, since
// a loaded two-core machine slows every run down (the inbox suite's 150
// evaluator processes took over 90 s under three builds at once).
const WAIT = 240_000;

const work = mkdtempSync(join(tmpdir(), "attractor-desktop-e2e-"));
const db = join(work, "attractor.db");
// The app finds its database, settings and run folder the way it would on a
// person's machine: from the environment, not from arguments.
const appEnv = {
  ...process.env,
  ATTRACTOR_DB: db,
  ATTRACTOR_SETTINGS: join(work, "settings.json"),
  ATTRACTOR_RUNS_DIR: join(work, "runs"),
  // Launched runs sleep a little so live progress is visible, as real ones are.
  KNOBS_DELAY: "0.2",
  TAURI_WEBVIEW_AUTOMATION: "true",
};
delete appEnv.ATTRACTOR_LLM_MODEL;

let xvfb, driver, base, session, bus, monitor;
let notifications = "";

/**
 * A private D-Bus session bus for the app, with dbus-monitor recording every
 * call to the desktop's notification service on it: what the app asks the
 * desktop to show is read from there (no notification daemon is needed for
 * the call to be seen).
 */
function startBus() {
  const out = execFileSync("dbus-daemon", ["--session", "--fork", "--print-address=1", "--print-pid=1"], { encoding: "utf8" });
  const [address, pid] = out.trim().split("\n");
  const mon = spawn("dbus-monitor", ["--address", address, "interface='org.freedesktop.Notifications'"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  mon.stdout.on("data", (d) => (notifications += d));
  return { address, pid: Number(pid), monitor: mon };
}

/** One WebDriver call; a WebDriver error becomes an exception with its message. */
async function wd(method, path, body) {
  const resp = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await resp.json();
  if (!resp.ok || data.value?.error) {
    const err = new Error(`${method} ${path}: ${data.value?.error ?? resp.status} ${data.value?.message ?? ""}`);
    err.code = data.value?.error;
    throw err;
  }
  return data.value;
}

const s = (path) => `/session/${session}${path}`;
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

/** Runs a script in the page and returns its value. */
const run = (script, ...args) => wd("POST", s("/execute/sync"), { script, args });

/** Waits until `probe` returns a truthy value (retrying while it throws "no such element"). */
async function until(what, probe, timeout = WAIT) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (e) {
      if (e.code !== "no such element" && e.code !== "stale element reference") throw e;
      last = e;
    }
    await sleep(150);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? ` (${last.message})` : ""}`);
}

/** The element a CSS selector finds, once it exists. */
async function find(css, timeout) {
  const found = await until(css, () => wd("POST", s("/element"), { using: "css selector", value: css }), timeout);
  return found[ELEMENT];
}
const text = (el) => wd("GET", s(`/element/${el}/text`));
const attr = (el, name) => wd("GET", s(`/element/${el}/attribute/${name}`));
const click = (el) => wd("POST", s(`/element/${el}/click`), {});

/** Saves what the window shows. */
async function shot(name) {
  // A frame drawn right after a DOM change can lag: let it settle.
  await sleep(1000);
  writeFileSync(join(shots, name), captureScreen(xvfb.display));
}

/**
 * The app's process: the one running the app binary with this test's
 * database in its environment (WebKitWebDriver starts it, so its pid is
 * nowhere else to be had).
 */
function appPid() {
  const exe = realpathSync(appBin);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/exe`) !== exe) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`ATTRACTOR_DB=${db}`)) return Number(entry);
    } catch {
      // A process that ended meanwhile, or one that is not ours to read.
    }
  }
  return null;
}

/** Whether a process has ended (gone, or a zombie its parent has not reaped yet). */
function ended(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}

/** The bus events of `kinds` the store recorded, newest first (read with Python's sqlite3, which the suites' harness needs anyway). */
function recordedEvents(...kinds) {
  const script = `import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
marks = ",".join("?" * len(sys.argv[2:]))
rows = db.execute(f"select payload_json from events where kind in ({marks}) order by id desc", sys.argv[2:])
print(json.dumps([json.loads(r[0]) for r in rows]))`;
  return JSON.parse(execFileSync("python3", ["-c", script, db, ...kinds], { encoding: "utf8" }));
}

before(async () => {
  for (const [what, path] of [
    ["attractor binary", cliBin],
    ["desktop app", appBin],
    ["built UI (run `npm run build`)", join(root, "ui/dist/index.html")],
  ]) {
    assert.ok(existsSync(path), `no ${what} at ${path}`);
  }
  mkdirSync(shots, { recursive: true });
  for (const old of ["desktop-01-suites.png", "desktop-02-charts.png", "desktop-03-live.png", "desktop-04-export.png"]) rmSync(join(shots, old), { force: true });
  execFileSync(cliBin, ["--db", db, "run", join(fixtures, "knobs.suite.yaml"), "--epochs", "8", "--optimizer", "evolve", "--seed", "1", "--quiet"], {
    env: { ...appEnv, KNOBS_DELAY: "0" },
  });

  ({ address: appEnv.DBUS_SESSION_BUS_ADDRESS, ...bus } = startBus());
  monitor = bus.monitor;
  xvfb = await startXvfb();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  driver = spawn("WebKitWebDriver", [`--port=${port}`, "--host=127.0.0.1"], {
    env: { ...appEnv, DISPLAY: xvfb.display },
    stdio: ["ignore", "inherit", "inherit"],
  });
  await until("WebKitWebDriver to listen", () => fetch(`${base}/status`).then((r) => r.ok, () => false), 20_000);
  const created = await wd("POST", "/session", {
    capabilities: { alwaysMatch: { "webkitgtk:browserOptions": { binary: appBin, args: [] } } },
  });
  session = created.sessionId;
  await wd("POST", s("/timeouts"), { script: 30_000 });
});

after(async () => {
  if (session) await wd("DELETE", s("")).catch(() => undefined);
  driver?.kill();
  xvfb?.child.kill();
  monitor?.kill();
  if (bus?.pid) process.kill(bus.pid);
  rmSync(work, { recursive: true, force: true });
});

describe("the Attractor desktop app", () => {
  it("runs the UI from its own files, with a content security policy, talking through Tauri", async () => {
    const page = await run(
      `let evalBlocked = false;
       try { eval("1"); } catch (e) { evalBlocked = e instanceof EvalError; }
       return { protocol: location.protocol, tauri: "__TAURI_INTERNALS__" in window, evalBlocked };`,
    );
    assert.equal(page.protocol, "tauri:", "the UI is served by the app, not a server");
    assert.ok(page.tauri, "the Tauri bridge is present, so the UI picks the Tauri transport");
    assert.ok(page.evalBlocked, "the CSP forbids eval");
    // The window's capability grants the shell's commands and nothing else
    // of Tauri's API (here: reading the app's version, a core command).
    const refused = await wd("POST", s("/execute/async"), {
      script: `const done = arguments[0];
        window.__TAURI_INTERNALS__.invoke("plugin:app|version").then(() => done("allowed"), (e) => done(String(e)));`,
      args: [],
    });
    assert.match(refused, /not allowed/);
  });

  it("draws its text in the app's own font, never the system's fallback serif", async () => {
    const font = await wd("POST", s("/execute/async"), {
      script: `const done = arguments[0];
        document.fonts.ready.then(() => done({
          family: getComputedStyle(document.body).fontFamily,
          loaded: [...document.fonts].some((f) => f.family.replace(/"/g, "") === "Inter Variable" && f.status === "loaded"),
        }));`,
      args: [],
    });
    assert.match(font.family, /^"?Inter Variable"?,/);
    assert.ok(font.loaded, `the bundled font is not loaded: ${JSON.stringify(font)}`);
  });

  it("keeps OpenGL out of its own process on a machine without a GPU", async (t) => {
    if (existsSync("/dev/dri") && readdirSync("/dev/dri").some((n) => n.startsWith("renderD"))) {
      t.skip("this machine has a GPU: the app renders with it");
      return;
    }
    const pid = appPid();
    assert.ok(pid, "the app's process is found");
    const libraries = new Set(
      readFileSync(`/proc/${pid}/maps`, "utf8")
        .split("\n")
        .map((line) => line.split(/\s+/)[5])
        .filter((path) => path?.startsWith("/")),
    );
    assert.ok([...libraries].some((p) => p.includes("libwebkit2gtk")), "the maps are the window's (WebKit is loaded)");
    const gl = [...libraries].filter((p) => /libLLVM|libgallium|swrast_dri|libEGL_mesa|libGLX_mesa/.test(p));
    assert.deepEqual(gl, [], "no software OpenGL in the window's process (src-tauri/src/main.rs, render_without_gpu)");
  });

  it("lists the suite the CLI ran on the Suites screen", async () => {
    const row = await find("tr[data-suite=knobs]");
    const cells = await until("the suite's cells", async () => {
      const tds = await wd("POST", s(`/element/${row}/elements`), { using: "css selector", value: "td" });
      const texts = await Promise.all(tds.map((td) => text(td[ELEMENT])));
      return texts.length >= 5 && texts[0] ? texts : null;
    });
    assert.equal(cells[0].trim(), "knobs");
    assert.equal(cells[1], "8");
    assert.match(cells[3], /4 \(1 held out\)/);
    assert.equal(cells[4], "idle");
    assert.match(await text(await find(".conn")), /live/, "the event feed (a Tauri listener) is connected");
    await shot("desktop-01-suites.png");
  });

  it("opens the suite's charts with one point per epoch", async () => {
    await click(await find("tr[data-suite=knobs] td a"));
    const curve = await find("[data-testid=loss-curve]");
    // Drawn by ECharts, which the window loads on demand (its first frame is drawn without it).
    await find("[data-testid=loss-curve][data-settled-at] .chart-echarts canvas");
    await until("8 points on the loss curve", async () => (await attr(curve, "data-points")) === "8");
    assert.equal(await attr(await find("[data-testid=task-spread]"), "data-points"), "8");
    assert.match(await run("return location.hash"), /^#\/charts\/knobs/);
    await shot("desktop-02-charts.png");
  });

  it("draws the suite's graph and offers the native picker and the keychain through the shell", async () => {
    await run(`location.hash = "/graph/knobs"`);
    const graph = await find("[data-testid=suite-graph]");
    await until("one node per epoch", async () => (await attr(graph, "data-points")) === "8");
    // The Launch screen's Browse… button is the desktop app's own (a browser types the path).
    await run(`location.hash = "/launch"`);
    await find("[data-testid=browse]");
    // The picker command is granted and answers (a bad kind, so no dialog opens).
    const picked = await wd("POST", s("/execute/async"), {
      script: `const done = arguments[0];
        window.__TAURI_INTERNALS__.invoke("pick_path", { kind: "nothing" }).then((p) => done("picked " + p), (e) => done(e.error ?? String(e)));`,
      args: [],
    });
    assert.match(picked, /no picker for `nothing`/);
    // The settings screen says where a key would come from, or why the keychain cannot hold one.
    await run(`location.hash = "/settings"`);
    const note = await find("[data-testid=keychain-note]");
    assert.ok((await text(note)).length > 20);
    await shot("desktop-02b-settings.png");
  });

  it("exports the suite's report into the folder a person names, through the shell's command", async () => {
    await run(`location.hash = "/suites"`);
    await click(await find("tr[data-suite=knobs] [data-testid=export]"));
    const input = await find("[data-testid=export-folder] input");
    assert.match(await run("return document.querySelector('[data-testid=export-folder] input').value"), /^~\/attractor-reports\/knobs-report$/);
    const dir = join(work, "exported report");
    await wd("POST", s(`/element/${input}/clear`), {});
    await wd("POST", s(`/element/${input}/value`), { text: dir });
    await shot("desktop-04-export.png");
    await click(await find("[data-testid=export-folder] button[type=submit]"));
    const done = await find("[data-testid=export-done]");
    assert.ok((await text(done)).includes(join(dir, "index.html")), await text(done));
    const files = ["index.html", "loss-curve.svg", "loss-curve.png", "task-loss.svg", "task-loss.png", "artifact-timeline.svg", "artifact-timeline.png"];
    assert.deepEqual(readdirSync(dir).sort(), [...files].sort());
    assert.equal(readFileSync(join(dir, "index.html"), "utf8").match(/<tr data-epoch=/g).length, 8, "a row per epoch");
  });

  it("launches a suite and follows it live through forwarded bus events", async () => {
    // The runs the CLI made of the suite are listed on Live too: this
    // launch is the one with a newer id than any listed before it.
    await run(`location.hash = "/live"`);
    await find("[data-testid=launch]");
    const newest = () => run(`return Math.max(0, ...[...document.querySelectorAll("[data-testid=launch]")].map((c) => Number(c.dataset.launchId)))`);
    const before = await newest();
    const suite = join(fixtures, "knobs.suite.yaml");
    await run(`location.hash = "/launch?path=" + encodeURIComponent(arguments[0])`, suite);
    const start = await find("[data-testid=start]");
    await until("the suite to validate", async () => (await attr(start, "disabled")) === null);
    await click(start);
    await until("the live screen", async () => (await run("return location.hash")).startsWith("#/live"));
    await until("the launch to be listed", async () => (await newest()) > before);
    const id = await newest();
    // The finished status and the epoch bar come from the events the shell
    // forwards from the bus (the launch ran 3 epochs, the form's default).
    const card = await find(`[data-testid=launch][data-launch-id="${id}"][data-suite=knobs][data-status=finished]`);
    const bar = await wd("POST", s(`/element/${card}/element`), { using: "css selector", value: "[data-testid=epoch-progress]" });
    assert.equal(await attr(bar[ELEMENT], "data-done"), "3");
    const rows = await wd("POST", s(`/element/${card}/elements`), { using: "css selector", value: "[data-testid=finished-runs] tbody tr" });
    assert.equal(rows.length, 12, "4 tasks × 3 epochs");
    await shot("desktop-03-live.png");
  });

  it("asks the desktop to show a notification when a question waits in the inbox", async () => {
    const suite = join(fixtures, "inbox.suite.yaml");
    await run(`location.hash = "/launch?path=" + encodeURIComponent(arguments[0])`, suite);
    const start = await find("[data-testid=start]");
    await until("the suite to validate", async () => (await attr(start, "disabled")) === null);
    await click(start);
    await find("[data-testid=launch][data-suite=inbox][data-status=finished]");
    // Every run of this suite raises an intervention; each reaches the desktop.
    const raised = recordedEvents("intervention_raised");
    assert.ok(raised.length >= 1);
    await until("the Notify call", async () => notifications.includes("Attractor is waiting for an answer"), 20_000);
    assert.match(notifications, new RegExp(`\\(question ${raised[0].intervention_id}, in the Inbox\\)`));
    assert.match(notifications, /member=Notify/);
  });

  it("stops on SIGTERM like a closed window: a running launch is cancelled and its books closed", async () => {
    const suite = join(fixtures, "knobs.suite.yaml");
    await run(`location.hash = "/launch?path=" + encodeURIComponent(arguments[0])`, suite);
    const start = await find("[data-testid=start]");
    await until("the suite to validate", async () => (await attr(start, "disabled")) === null);
    await click(start);
    await find("[data-testid=launch][data-status=running] [data-testid=task-progress]");
    const before = recordedEvents("suite_finished").length;

    const pid = appPid();
    assert.ok(pid, "the app's process is found");
    process.kill(pid, "SIGTERM");
    await until("the app to exit", async () => ended(pid), 30_000);
    session = null; // the window is gone with the app

    // The launch ended as cancelled and the suite as interrupted: both events
    // are written only by the service's shutdown, not by a killed process.
    const finished = recordedEvents("suite_finished");
    assert.equal(finished.length, before + 1);
    assert.equal(finished[0].interrupted, true);
    const launches = recordedEvents("launch_ended");
    assert.equal(launches[0].status, "cancelled");
  });
});
