// How fast the desktop window shows its first screen and how much memory it
// holds then (issue 19's desktop targets: content in ≤ 1.5 s, the main
// process ≤ 120 MB resident). Measured, never asserted: numbers go to
// bench/README.md.
//
// Each sample starts the app for a person with a fresh home folder (so a
// fresh database in its default place) under its own Xvfb, through
// WebKitWebDriver as the install test does, and measures:
// - content: from the app's process start (its start time in /proc, 10 ms
//   ticks) until the first screen's answer from the core (the Suites
//   screen's empty state, or its table) is in the DOM and a frame with it
//   has been drawn — the page watches for the element with a
//   MutationObserver and stamps the time two animation frames later, so the
//   number does not depend on how often WebDriver polls;
// - on the way: when the webview started loading the page
//   (performance.timeOrigin) and when the page's script had run
//   (DOMContentLoaded), both from process start;
// - memory when the content shows and again after IDLE_S seconds of idling:
//   the resident set (VmRSS) of the app's own process and of it with all its
//   descendants (WebKitWebProcess, WebKitNetworkProcess, the sandbox's
//   helpers), and the proportional set (Pss, shared pages split) of all.
// WebDriver automation is on (TAURI_WEBVIEW_AUTOMATION), as in the tests.
//
// Usage: npm run bench:desktop [-- --samples 5 --idle 5 --vs 'VAR=VALUE [VAR2=VALUE2]' …]
// The binary is ATTRACTOR_DESKTOP_BIN, else the installed
// /usr/bin/attractor-desktop, else $CARGO_TARGET_DIR/release/attractor-desktop
// (scripts/package.sh builds it). The environment (MALLOC_ARENA_MAX=2 …) is
// passed to the app. Each --vs adds a variant: the app with that variable
// set too, sampled in turn with the app as is (sample 1 of each, then sample
// 2 of each…), so a machine that gets busier meanwhile slows all alike. The
// report goes to stdout and to bench/results/desktop/.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { cpus, homedir, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { openWindow, sleep, until } from "../ui/e2e-package/window.mjs";

const root = resolve(import.meta.dirname, "..");
const { values: opts } = parseArgs({
  options: {
    samples: { type: "string", default: "5" },
    idle: { type: "string", default: "5" },
    vs: { type: "string", multiple: true, default: [] },
    out: { type: "string", default: join(root, "bench/results/desktop") },
  },
});
const SAMPLES = Number(opts.samples);
const IDLE_S = Number(opts.idle);

const targetDir = process.env.CARGO_TARGET_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "attractor/target");
const candidates = [process.env.ATTRACTOR_DESKTOP_BIN, "/usr/bin/attractor-desktop", join(targetDir, "release/attractor-desktop")].filter(Boolean);
const binary = candidates.find((p) => existsSync(p));
if (!binary) throw new Error(`no desktop app (looked at ${candidates.join(", ")}): build it with scripts/package.sh`);
const exe = realpathSync(binary);

/** The first screen's answer from the core: the empty state, or the suites' table. */
const CONTENT = "[data-testid=empty], [data-testid=suites]";

const CLK_TCK = 100; // Linux's USER_HZ: /proc's start times are in these ticks
/** When a process started, in Date.now() terms (to 10 ms). */
function startedAt(pid) {
  const now = Date.now();
  const uptime = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);
  const ticks = Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[19]);
  return now - (uptime - ticks / CLK_TCK) * 1000;
}

/** Every process's parent, by pid. */
function parents() {
  const map = new Map();
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      map.set(Number(e), Number(readFileSync(`/proc/${e}/stat`, "utf8").split(") ")[1].split(" ")[1]));
    } catch {
      // ended meanwhile
    }
  }
  return map;
}
const descendants = (pid) => {
  const ppid = parents();
  const out = [];
  const walk = (p) => {
    for (const [c, pp] of ppid) if (pp === p) out.push(c), walk(c);
  };
  walk(pid);
  return out;
};

/** The app's process: the one running the binary for this sample's home. */
function appPid(home) {
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readlinkSync(`/proc/${e}/exe`) !== exe) continue;
      if (readFileSync(`/proc/${e}/environ`, "utf8").split("\0").includes(`HOME=${home}`)) return Number(e);
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  return null;
}

/** kB of a /proc field (VmRSS in status, Pss in smaps_rollup); 0 once the process is gone. */
function kb(pid, file, key) {
  try {
    return Number(readFileSync(`/proc/${pid}/${file}`, "utf8").match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))[1]);
  } catch {
    return 0;
  }
}
const name = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "?";
  }
};
function memory(pid) {
  const all = [pid, ...descendants(pid)];
  return {
    main: kb(pid, "status", "VmRSS"),
    // The main process's resident set by kind: its own allocations
    // (anonymous: the heap, the Rust core, GTK's and WebKit's objects),
    // mapped files (mostly shared libraries' pages), shared memory.
    mainAnon: kb(pid, "status", "RssAnon"),
    mainFile: kb(pid, "status", "RssFile"),
    mainShmem: kb(pid, "status", "RssShmem"),
    mainPss: kb(pid, "smaps_rollup", "Pss"),
    tree: all.reduce((t, p) => t + kb(p, "status", "VmRSS"), 0),
    treePss: all.reduce((t, p) => t + kb(p, "smaps_rollup", "Pss"), 0),
    processes: all.map((p) => `${name(p)} ${Math.round(kb(p, "status", "VmRSS") / 1024)}`),
  };
}

// Installed in the page at the first chance: resolves when the first
// screen's content is in the DOM, two frames later (it has been painted).
const WATCH = `const sel = arguments[0], done = arguments[arguments.length - 1];
  const at = () => performance.timeOrigin + performance.now();
  const nav = () => {
    const n = performance.getEntriesByType("navigation")[0];
    return { origin: performance.timeOrigin, dcl: n ? performance.timeOrigin + n.domContentLoadedEventEnd : null };
  };
  const painted = (dom, already) =>
    requestAnimationFrame(() => requestAnimationFrame(() => done({ dom, painted: at(), already, ...nav() })));
  if (document.querySelector(sel)) return painted(at(), true);
  const mo = new MutationObserver(() => {
    if (!document.querySelector(sel)) return;
    mo.disconnect();
    painted(at(), false);
  });
  mo.observe(document, { childList: true, subtree: true });
  setTimeout(() => { mo.disconnect(); done(null); }, 5000);`;

async function sample(variant, i) {
  const work = mkdtempSync(join(tmpdir(), "attractor-bench-desktop-"));
  const home = join(work, "home");
  mkdirSync(home);
  const env = { ...process.env, ...variant.env, HOME: home, XDG_DATA_HOME: join(home, ".local/share"), XDG_CONFIG_HOME: join(home, ".config"), XDG_CACHE_HOME: join(home, ".cache") };
  for (const k of Object.keys(env)) if (k.startsWith("ATTRACTOR_") || k === "DBUS_SESSION_BUS_ADDRESS" || k === "XDG_RUNTIME_DIR") delete env[k];
  let requested;
  const win = await openWindow({ binary, env, onSession: (t) => (requested = t) });
  try {
    const sessionAt = Date.now();
    const pid = await until("the app's process", () => appPid(home), { timeout: 10_000, every: 20 });
    const start = startedAt(pid);
    // An answer of null: the page was replaced (or not there yet); watch again.
    const seen = await until("the first screen's content", () => win.runAsync(WATCH, CONTENT).catch(() => null), { every: 20 });
    const atContent = memory(pid);
    await sleep(IDLE_S * 1000);
    const idle = memory(pid);
    const r = {
      content: seen.painted - start,
      dom: seen.dom - start,
      navigation: seen.origin - start,
      script: seen.dcl === null ? null : seen.dcl - start,
      sessionReady: sessionAt - start,
      requestedBeforeStart: start - requested,
      alreadyThere: seen.already,
      atContent,
      idle,
    };
    console.error(
      `bench desktop: ${variant.label}, sample ${i}: content ${r.content.toFixed(0)} ms (page load started ${r.navigation.toFixed(0)}, script ran ${r.script?.toFixed(0)}), ` +
        `main ${mib(atContent.main)} → ${mib(idle.main)}, all ${mib(atContent.tree)} → ${mib(idle.tree)} (${idle.processes.join(", ")})`,
    );
    return r;
  } finally {
    await win.close();
    rmSync(work, { recursive: true, force: true });
  }
}

const mib = (k) => `${(k / 1024).toFixed(0)} MiB`;
const median = (xs) => {
  const s = xs.filter((x) => x !== null).sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Environment variables that change how the app or WebKit behave, named in the report. */
const tuning = Object.entries(process.env)
  .filter(([k]) => k === "MALLOC_ARENA_MAX" || k.startsWith("WEBKIT_") || k.startsWith("LIBGL_") || k.startsWith("GDK_"))
  .map(([k, v]) => `${k}=${v}`)
  .join(" ");
const variants = [
  { label: tuning || "as is", env: {} },
  ...opts.vs.map((assignments) => {
    const env = {};
    for (const kv of assignments.split(/\s+/).filter(Boolean)) {
      const at = kv.indexOf("=");
      if (at < 1) throw new Error(`--vs takes VAR=VALUE (several separated by spaces), not ${kv}`);
      env[kv.slice(0, at)] = kv.slice(at + 1);
    }
    return { label: assignments, env };
  }),
];
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const loadBefore = load();
console.error(`bench desktop: ${binary}; ${variants.map((v) => v.label).join(" vs ")}; load average ${loadBefore}`);
// The first start after a build or an install reads the binary and WebKit's
// libraries from disk: reported, not counted.
for (const v of variants) {
  v.cold = await sample(v, 0);
  v.samples = [];
}
for (let i = 1; i <= SAMPLES; i++) for (const v of variants) v.samples.push(await sample(v, i));

const ms = (x) => `${Math.round(x).toLocaleString("en")} ms`;
const row = (what, cells) => `| ${what} | ${cells.join(" | ")} |`;
/** Median (min–max) of a measure over a variant's samples, in ms or MiB. */
const spread = (v, f, unit) => {
  const xs = v.samples.map(f).filter((x) => x !== null && x !== undefined);
  const n = unit === ms ? (x) => Math.round(x).toLocaleString("en") : (k) => (k / 1024).toFixed(0);
  return `${n(median(xs))} (${n(Math.min(...xs))}–${n(Math.max(...xs))}) ${unit === ms ? "ms" : "MiB"}`;
};
const webkit = execFileSync("sh", ["-c", "dpkg-query -W -f='${Version}' libwebkit2gtk-4.1-0 2>/dev/null || true"], { encoding: "utf8" });
const head = (title) => [row(title, variants.map((v) => v.label)), `|---|${variants.map(() => "---|").join("")}`];
const timings = [
  ["the webview starts loading the page", (r) => r.navigation],
  ["the page's script has run (DOMContentLoaded)", (r) => r.script],
  ["first screen's content in the DOM", (r) => r.dom],
  ["… and painted: **content**", (r) => r.content],
];
const memories = [
  ["main process (VmRSS)", (r) => r.main],
  ["… its own allocations (RssAnon)", (r) => r.mainAnon],
  ["… mapped files, mostly shared libraries (RssFile)", (r) => r.mainFile],
  ["… shared memory (RssShmem)", (r) => r.mainShmem],
  ["main process (Pss, shared pages split)", (r) => r.mainPss],
  ["all its processes (VmRSS summed)", (r) => r.tree],
  ["all its processes (Pss summed)", (r) => r.treePss],
];
const lines = [
  `# Desktop window benchmark`,
  ``,
  `${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, load average ${loadBefore} before and ${load()} after; \`${binary}\`; WebKitGTK ${webkit || "?"}; Xvfb${existsSync("/dev/dri") ? "" : " (no /dev/dri: software GL)"}; ${SAMPLES} samples per column, median (min–max), a fresh home and database each, after one cold start each${variants.length > 1 ? ", the columns sampled in turn" : ""}.`,
  ``,
  ...head("from the app's process start"),
  ...timings.map(([what, f]) => row(what, variants.map((v) => spread(v, f, ms)))),
  row("content, the cold start", variants.map((v) => ms(v.cold.content))),
  ``,
  ...head("resident memory at content"),
  ...memories.map(([what, f]) => row(what, variants.map((v) => spread(v, (r) => f(r.atContent), mib)))),
  row(`main process after ${IDLE_S} s idle`, variants.map((v) => spread(v, (r) => r.idle.main, mib))),
  row(`all its processes after ${IDLE_S} s idle`, variants.map((v) => spread(v, (r) => r.idle.tree, mib))),
  ``,
  ...variants.map((v) => `Processes after idling, ${v.label} (MiB, last sample): ${v.samples.at(-1).idle.processes.join(", ")}.`),
  ...variants
    .filter((v) => v.samples.some((r) => r.alreadyThere))
    .map((v) => `\n${v.label}: in ${v.samples.filter((r) => r.alreadyThere).length} sample(s) the content was there before the page could be watched: those times are upper bounds.`),
  ``,
];
const report = lines.join("\n");
mkdirSync(opts.out, { recursive: true });
writeFileSync(join(opts.out, "report.md"), report);
writeFileSync(join(opts.out, "results.json"), JSON.stringify({ binary, loadBefore, variants }, null, 2));
console.log(report);
