// Opens an app binary's window under a private virtual X server and drives
// its webview through WebKitWebDriver (the W3C WebDriver protocol over plain
// fetch), for the install test beside this file and bench/desktop.mjs: both
// start a binary that is not the one in the build tree (the installed
// /usr/bin one) and wait on the first screen.
import { execFileSync, spawn } from "node:child_process";
import { createServer } from "node:net";

export const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

/** A TCP port nobody listens on right now. */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * What the X server `display` shows, as PNG bytes: the window as a person
 * sees it, the empty screen around it trimmed. (WebKitWebDriver's own
 * screenshot waits for WebKit to draw a new frame, which its non-composited
 * mode — the app's on a machine without a GPU — does not do for a page that
 * does not change: it never returned.)
 */
export function captureScreen(display) {
  try {
    return execFileSync("import", ["-display", display, "-window", "root", "-trim", "+repage", "png:-"], { maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    throw new Error(`cannot capture the screen ${display} with ImageMagick's \`import\` (scripts/setup.sh's ensure_desktop_toolchain installs it): ${e.message}`);
  }
}

/** Starts Xvfb on the first free display and resolves with it and its name (":N"). */
export function startXvfb() {
  const child = spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "1400x960x24", "-nolisten", "tcp"], {
    stdio: ["ignore", "ignore", "pipe", "pipe"],
  });
  let errors = "";
  child.stderr.on("data", (d) => (errors += d));
  return new Promise((ok, fail) => {
    child.stdio[3].on("data", (d) => ok({ child, display: `:${String(d).trim()}` }));
    child.on("error", (e) => fail(new Error(`cannot start Xvfb (scripts/setup.sh's ensure_desktop_toolchain installs it): ${e.message}`)));
    child.on("exit", (code) => fail(new Error(`Xvfb exited with ${code}: ${errors}`)));
  });
}

/** Waits until `probe` returns a truthy value, retrying while it throws "no such element"; polls every `every` ms. */
export async function until(what, probe, { timeout = 90_000, every = 100 } = {}) {
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
    await sleep(every);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? ` (${last.message})` : ""}`);
}

/**
 * Starts Xvfb and WebKitWebDriver, and opens a session on `binary` (which
 * WebKitWebDriver starts with `env`, plus DISPLAY and
 * TAURI_WEBVIEW_AUTOMATION). Resolves with the session's calls and `close`,
 * which ends the app, the driver and the X server. `onSession` (optional) is
 * called with the time just before the session is requested.
 */
export async function openWindow({ binary, env, args = [], onSession }) {
  const xvfb = await startXvfb();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const driver = spawn("WebKitWebDriver", [`--port=${port}`, "--host=127.0.0.1"], {
    env: { ...env, DISPLAY: xvfb.display, TAURI_WEBVIEW_AUTOMATION: "true" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  let session = null;

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

  async function close() {
    if (session) await wd("DELETE", s("")).catch(() => undefined);
    session = null;
    driver.kill();
    xvfb.child.kill();
    await Promise.all(
      [driver, xvfb.child].map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((ok) => c.once("exit", ok)))),
    );
  }

  try {
    await until("WebKitWebDriver to listen", () => fetch(`${base}/status`).then((r) => r.ok, () => false), { timeout: 20_000 });
    onSession?.(Date.now());
    const created = await wd("POST", "/session", {
      capabilities: { alwaysMatch: { "webkitgtk:browserOptions": { binary, args } } },
    });
    session = created.sessionId;
    await wd("POST", s("/timeouts"), { script: 30_000 });
  } catch (e) {
    await close();
    throw e;
  }

  const w = {
    wd,
    close,
    /** Runs a script in the page and returns its value. */
    run: (script, ...a) => wd("POST", s("/execute/sync"), { script, args: a }),
    /** Runs a script that calls its last argument (a callback WebDriver adds after `a`) with its answer. */
    runAsync: (script, ...a) => wd("POST", s("/execute/async"), { script, args: a }),
    /** The element a CSS selector finds, once it exists. */
    find: async (css, opts) => (await until(css, () => wd("POST", s("/element"), { using: "css selector", value: css }), opts))[ELEMENT],
    text: (el) => wd("GET", s(`/element/${el}/text`)),
    /** The screen with the window, as PNG bytes. */
    screenshot: async () => captureScreen(xvfb.display),
  };
  return w;
}
