// The app at the size it must stay responsive at: a database with a suite of
// 500 epochs × 50 tasks (`attractor bench fill`, written through the store
// like real runs), served by the real `attractor serve`, measured three ways:
//
// 1. time to first render of the Charts screen in headless Chromium (Debian's,
//    driven by playwright-core as the end-to-end tests are): from the start of
//    navigation until all three charts have drawn their data (each chart
//    stamps `data-rendered-at` when its first frame is drawn — without
//    ECharts, lib/sketch.ts — and `data-interactive-at` when ECharts has
//    drawn it, with tooltips and zoom), a fresh page per sample; plus the
//    time to zoom the loss curve out to all epochs;
// 2. the HTTP latency of `GET /api/suites/{id}/charts` (the Charts screen's
//    request: the data shaped on the server) and of `GET …/epochs` without
//    and with every run — sequential requests asking for gzip as a browser
//    does (a server on loopback answers uncompressed), median and p95;
// 3. idle memory: the resident set of `attractor serve` before any request
//    and after the measurements, and of the desktop app (with its WebKit
//    processes) under Xvfb when the binary and Xvfb are there.
//
// Usage: npm run bench:ui [-- --epochs 500 --tasks 50 --samples 7 --requests 30]
// The binary is ATTRACTOR_BIN, else $CARGO_TARGET_DIR/release/attractor, else
// …/debug/attractor (the report says which). The desktop binary is
// ATTRACTOR_DESKTOP_BIN, else attractor-desktop beside it. Build first:
// `cargo build --release && npm run build` (and `cargo build --release -p
// attractor-desktop` for the desktop row). The report goes to stdout and to
// bench/results/ui/report.md.
import { spawn, execFileSync } from "node:child_process";
import { get } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir, cpus, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const root = resolve(import.meta.dirname, "../..");
const { values: opts } = parseArgs({
  options: {
    epochs: { type: "string", default: "500" },
    tasks: { type: "string", default: "50" },
    samples: { type: "string", default: "7" },
    requests: { type: "string", default: "30" },
    out: { type: "string", default: join(root, "bench/results/ui") },
  },
});
const EPOCHS = Number(opts.epochs);
const TASKS = Number(opts.tasks);
const SAMPLES = Number(opts.samples);
const REQUESTS = Number(opts.requests);
/** Epochs of the small suite launched while the charts are open (4 runs each). */
const LIVE_EPOCHS = 3;

const targetDir = process.env.CARGO_TARGET_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "attractor/target");
const candidates = [process.env.ATTRACTOR_BIN, join(targetDir, "release/attractor"), join(targetDir, "debug/attractor")].filter(Boolean);
const bin = candidates.find((p) => existsSync(p));
if (!bin) throw new Error(`no attractor binary (looked at ${candidates.join(", ")}): run \`cargo build --release\``);
const profile = bin.includes("/release/") ? "release" : bin.includes("/debug/") ? "debug" : "custom";
const desktopBin = process.env.ATTRACTOR_DESKTOP_BIN ?? join(bin, "..", "attractor-desktop");
const browserPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
if (!existsSync(join(root, "ui/dist/index.html"))) throw new Error("no ui/dist: run `npm run build` first");
if (!existsSync(browserPath)) throw new Error(`no Chromium at ${browserPath}: scripts/setup.sh installs it`);

const work = mkdtempSync(join(tmpdir(), "attractor-bench-ui-"));
const db = join(work, "bench.db");
// KNOBS_DELAY: the launched fixture's runs take a moment, as real ones do.
const env = { ...process.env, ATTRACTOR_SETTINGS: join(work, "settings.json"), ATTRACTOR_RUNS_DIR: join(work, "runs"), KNOBS_DELAY: "0.3" };
delete env.ATTRACTOR_DB;
delete env.ATTRACTOR_TOKEN;

const ms = (x) => `${x.toFixed(x < 10 ? 1 : 0)} ms`;
const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  return s[lo] + (s[Math.ceil(pos)] - s[lo]) * (pos - lo);
};

/** Resident memory (KiB) of a process and, with `tree`, all its descendants. */
function rss(pid, tree = false) {
  const own = (p) => {
    try {
      const m = readFileSync(`/proc/${p}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
      return m ? Number(m[1]) : 0;
    } catch {
      return 0;
    }
  };
  if (!tree) return own(pid);
  const children = new Map();
  for (const p of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const ppid = Number(readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(p)]);
    } catch {
      // The process ended while we looked.
    }
  }
  let total = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop();
    total += own(p);
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

function serve() {
  const child = spawn(bin, ["--db", db, "serve", "--port", "0", "--ui-dir", join(root, "ui/dist")], { env, stdio: ["ignore", "pipe", "pipe"] });
  let errors = "";
  child.stderr.on("data", (d) => (errors += d));
  return new Promise((ok, fail) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) ok({ child, url: m[1] });
    });
    child.on("exit", (code) => fail(new Error(`attractor serve exited with ${code}: ${errors}`)));
  });
}

const sleep = (t) => new Promise((r) => setTimeout(r, t));

/** Bytes on the wire of one gzip-encoded answer (fetch would decode it). */
function wireSize(url) {
  return new Promise((ok, fail) => {
    get(url, { headers: { "Accept-Encoding": "gzip" } }, (res) => {
      let n = 0;
      res.on("data", (d) => (n += d.length));
      res.on("end", () => ok(n));
    }).on("error", fail);
  });
}

async function timeRequests(url, n) {
  const times = [];
  let bytes = 0;
  let wire = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const resp = await fetch(url, { headers: { "Accept-Encoding": "gzip" } });
    const body = await resp.arrayBuffer();
    times.push(performance.now() - t0);
    if (!resp.ok) throw new Error(`${url}: ${resp.status}`);
    bytes = body.byteLength;
  }
  wire = await wireSize(url);
  return { median: quantile(times, 0.5), p95: quantile(times, 0.95), min: Math.min(...times), bytes, wire };
}

/**
 * `clients` clients at once, each sending `perClient` requests one after
 * another (gzip, as a browser asks): the latency of every request, and the
 * requests answered per second over the whole burst.
 */
async function concurrentRequests(url, clients, perClient) {
  // A first burst, not counted: the load generator opens its connections
  // and warms up (in a cold Node the first burst was ~2× slower).
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < 2; i++) await (await fetch(url, { headers: { "Accept-Encoding": "gzip" } })).arrayBuffer();
    }),
  );
  const times = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < perClient; i++) {
        const t = performance.now();
        const resp = await fetch(url, { headers: { "Accept-Encoding": "gzip" } });
        await resp.arrayBuffer();
        if (!resp.ok) throw new Error(`${url}: ${resp.status}`);
        times.push(performance.now() - t);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { median: quantile(times, 0.5), p95: quantile(times, 0.95), perSecond: times.length / secs, n: times.length };
}

async function desktopMemory() {
  if (!existsSync(desktopBin)) return { skipped: `no desktop binary at ${desktopBin}` };
  try {
    execFileSync("sh", ["-c", "command -v Xvfb"], { stdio: "ignore" });
  } catch {
    return { skipped: "no Xvfb" };
  }
  const display = ":97";
  const xvfb = spawn("Xvfb", [display, "-screen", "0", "1400x900x24", "-nolisten", "tcp"], { stdio: "ignore" });
  await sleep(1500);
  const app = spawn(desktopBin, [], { env: { ...env, ATTRACTOR_DB: db, DISPLAY: display }, stdio: ["ignore", "ignore", "pipe"] });
  let errors = "";
  app.stderr.on("data", (d) => (errors += d));
  // The window opens on the Suites screen and then idles.
  await sleep(12_000);
  const own = rss(app.pid);
  const tree = rss(app.pid, true);
  const alive = app.exitCode === null;
  app.kill("SIGTERM");
  await new Promise((r) => (app.exitCode !== null ? r() : app.on("exit", r)));
  xvfb.kill("SIGTERM");
  if (!alive) return { skipped: `the desktop app exited early: ${errors.slice(0, 300)}` };
  return { own, tree };
}

console.error(`bench ui: ${profile} build ${bin}`);
console.error(`bench ui: filling ${EPOCHS} epochs × ${TASKS} tasks…`);
const t0 = performance.now();
const filled = JSON.parse(execFileSync(bin, ["--db", db, "--json", "bench", "fill", "--epochs", String(EPOCHS), "--tasks", String(TASKS)], { env, encoding: "utf8" }));
const fillSecs = (performance.now() - t0) / 1000;

const server = await serve();
await sleep(2000);
const idleBefore = rss(server.child.pid);

const epochsUrl = `${server.url}api/suites/${filled.suite_id}/epochs`;
const chartsUrl = `${server.url}api/suites/${filled.suite_id}/charts`;
console.error("bench ui: HTTP latency…");
await timeRequests(`${epochsUrl}?runs=false`, 2); // warm-up: the first read pages the database in
const charts = await timeRequests(chartsUrl, REQUESTS);
const lean = await timeRequests(`${epochsUrl}?runs=false&limit=500`, REQUESTS);
const full = await timeRequests(`${epochsUrl}?limit=500`, Math.max(5, Math.round(REQUESTS / 3)));
// Under load: 20 clients at once, as the issue measured it.
const CLIENTS = 20;
console.error(`bench ui: ${CLIENTS} clients at once…`);
const runsPage = await concurrentRequests(`${epochsUrl}?offset=0&limit=5`, CLIENTS, 25);
const defaultPage = await concurrentRequests(epochsUrl, CLIENTS, 5);
const chartsLoad = await concurrentRequests(chartsUrl, CLIENTS, 5);

console.error("bench ui: Charts screen in Chromium…");
const browser = await chromium.launch({
  executablePath: browserPath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const renders = [];
/** Navigation → the whole history in the loss curve, drawn by ECharts (tooltips, zoom). */
const wholes = [];
const zooms = [];
let longTasks = [];
for (let i = 0; i < SAMPLES + 1; i++) {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(() => {
    window.__longTasks = [];
    new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: "longtask", buffered: true });
  });
  await page.goto(`${server.url}#/charts/${encodeURIComponent(filled.suite)}`);
  // Waiting in the page, on its own events: Playwright's locator polling
  // runs on the page's main thread and would be timed along with the app.
  // First every chart's first frame (the opening window of the latest 100
  // epochs), then the whole history in the loss curve, drawn by ECharts.
  const { at, whole } = await page.evaluate(
    ({ ids }) =>
      new Promise((done) => {
        let at = null;
        const check = () => {
          const els = ids.map((id) => document.querySelector(`[data-testid=${id}]`));
          if (at === null && els.every((e) => e?.dataset.renderedAt)) at = els.map((e) => Number(e.dataset.renderedAt));
          // The whole history is in when ECharts has drawn the loss curve.
          if (at !== null && els[0].dataset.interactiveAt) {
            done({ at, whole: performance.now() });
            return true;
          }
          return false;
        };
        if (check()) return;
        const mo = new MutationObserver(() => check() && mo.disconnect());
        mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-rendered-at", "data-interactive-at"] });
      }),
    { ids: ["loss-curve", "artifact-timeline", "task-spread"] },
  );
  // Zoom the loss curve (and with it the other two) out to every epoch.
  const zoom = await page.evaluate(
    () =>
      new Promise((done) => {
        const chart = window.attractorCharts["loss-curve"];
        const t = performance.now();
        chart.on("finished", function once() {
          chart.off("finished", once);
          done(performance.now() - t);
        });
        chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 });
      }),
  );
  const lt = await page.evaluate(() => window.__longTasks);
  if (i > 0) {
    // The first page warms the browser's and the server's caches.
    renders.push(Math.max(...at));
    wholes.push(whole);
    zooms.push(zoom);
    longTasks = longTasks.concat([lt.reduce((a, b) => a + b, 0)]);
  }
  if (i === SAMPLES) await page.screenshot({ path: join(work, "charts.png"), fullPage: false });
  await context.close();
}

// Live: the Charts screen stays open while another suite runs (its events
// reach every screen); what does the open 500-epoch chart cost meanwhile?
console.error("bench ui: Charts screen during a launch…");
const live = await (async () => {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(() => {
    window.__longTasks = [];
    new PerformanceObserver((l) => window.__longTasks.push(...l.getEntries().map((e) => e.duration))).observe({ type: "longtask", buffered: true });
  });
  await page.goto(`${server.url}#/charts/${encodeURIComponent(filled.suite)}`);
  await page.locator("[data-testid=task-spread][data-rendered-at]").waitFor({ timeout: 120_000 });
  await page.getByText("● live").waitFor({ timeout: 30_000 });
  await sleep(1500);
  const probe = () =>
    page.evaluate(() => ({
      busy: window.__longTasks.reduce((a, b) => a + b, 0),
      fetches: performance.getEntriesByType("resource").filter((r) => r.name.includes("/charts")).length,
    }));
  const before = await probe();
  const t = performance.now();
  const resp = await fetch(`${server.url}api/launches`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ suite_path: join(root, "tests/fixtures/app/knobs.suite.yaml"), epochs: LIVE_EPOCHS, seed: 1 }),
  });
  if (!resp.ok) throw new Error(`launch: ${resp.status} ${await resp.text()}`);
  const { id } = await resp.json();
  for (;;) {
    const view = await (await fetch(`${server.url}api/launches/${id}`)).json();
    if (view.status !== "running") break;
    await sleep(200);
  }
  await sleep(1500);
  const after = await probe();
  await context.close();
  return { seconds: (performance.now() - t) / 1000, busy: after.busy - before.busy, fetches: after.fetches - before.fetches };
})();
await browser.close();
await sleep(3000);
const idleAfter = rss(server.child.pid);
server.child.kill("SIGINT");
await new Promise((r) => server.child.on("exit", r));

console.error("bench ui: desktop app under Xvfb…");
const desktop = await desktopMemory();

const lines = [
  `# UI benchmark`,
  ``,
  `${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; \`attractor\` ${profile} build; Chromium ${execFileSync(browserPath, ["--version"], { encoding: "utf8" }).trim().replace(/^Chromium /, "")} headless.`,
  ``,
  `Data: suite \`${filled.suite}\`, ${filled.epochs} epochs × ${TASKS} tasks = ${filled.runs} runs, ${filled.updates} updates, ${filled.rollbacks} rollbacks (filled in ${fillSecs.toFixed(1)} s through the store).`,
  ``,
  `| measure | median | p95 | notes |`,
  `|---|---|---|---|`,
  `| Charts screen, time to first render | ${ms(quantile(renders, 0.5))} | ${ms(quantile(renders, 0.95))} | navigation start → all three charts' first frames drawn (what ECharts opens on, the latest ~100 epochs, before ECharts has loaded); ${renders.length} fresh pages; main-thread long tasks ${ms(quantile(longTasks, 0.5))} (median total) |`,
  `| Charts screen, the whole history in | ${ms(quantile(wholes, 0.5))} | ${ms(quantile(wholes, 0.95))} | navigation start → ECharts has drawn the loss curve's ${EPOCHS} epochs (tooltips, zoom: interactive) |`,
  `| Charts screen, zoom out to all ${EPOCHS} epochs | ${ms(quantile(zooms, 0.5))} | ${ms(quantile(zooms, 0.95))} | one dataZoom on the loss curve, the other two follow |`,
  `| Charts screen open while another suite runs ${LIVE_EPOCHS} epochs × 4 tasks (${live.seconds.toFixed(1)} s) | ${ms(live.busy)} | | main-thread long tasks in that time; the screen refetched its charts ${live.fetches} time(s) |`,
  `| \`GET /api/suites/{id}/charts\` (the Charts screen's request) | ${ms(charts.median)} | ${ms(charts.p95)} | ${REQUESTS} sequential requests (a server on loopback answers uncompressed); ${(charts.bytes / 1e6).toFixed(2)} MB of JSON, ${(charts.wire / 1e6).toFixed(2)} MB on the wire |`,
  `| \`GET /api/suites/{id}/epochs?runs=false&limit=500\` (every epoch) | ${ms(lean.median)} | ${ms(lean.p95)} | ${REQUESTS} sequential requests (a server on loopback answers uncompressed); ${(lean.bytes / 1e6).toFixed(2)} MB of JSON, ${(lean.wire / 1e6).toFixed(2)} MB on the wire |`,
  `| \`GET /api/suites/{id}/epochs?limit=500\` (every epoch with every run) | ${ms(full.median)} | ${ms(full.p95)} | ${(full.bytes / 1e6).toFixed(2)} MB of JSON, ${(full.wire / 1e6).toFixed(2)} MB on the wire |`,
  `| \`GET …/epochs?offset=0&limit=5\` (the Runs screen's page), ${CLIENTS} clients at once | ${ms(runsPage.median)} | ${ms(runsPage.p95)} | ${runsPage.n} requests, ${runsPage.perSecond.toFixed(0)} answered a second |`,
  `| \`GET …/epochs\` (the default page: 20 epochs with their runs), ${CLIENTS} clients at once | ${ms(defaultPage.median)} | ${ms(defaultPage.p95)} | ${defaultPage.n} requests, ${defaultPage.perSecond.toFixed(0)} answered a second |`,
  `| \`GET …/charts\`, ${CLIENTS} clients at once | ${ms(chartsLoad.median)} | ${ms(chartsLoad.p95)} | ${chartsLoad.n} requests, ${chartsLoad.perSecond.toFixed(0)} answered a second |`,
  ``,
  `| memory | resident set |`,
  `|---|---|`,
  `| \`attractor serve\`, idle after start | ${mib(idleBefore)} |`,
  `| \`attractor serve\`, idle after the measurements | ${mib(idleAfter)} |`,
  desktop.skipped
    ? `| desktop app (Xvfb) | skipped: ${desktop.skipped} |`
    : `| desktop app under Xvfb, idle on the Suites screen | ${mib(desktop.own)} (its own process), ${mib(desktop.tree)} with its WebKit processes |`,
  ``,
];
const report = lines.join("\n");
mkdirSync(opts.out, { recursive: true });
writeFileSync(join(opts.out, "report.md"), report);
writeFileSync(
  join(opts.out, "results.json"),
  JSON.stringify({ profile, filled, fillSecs, renders, wholes, zooms, longTasks, live, lean, full, runsPage, defaultPage, chartsLoad, idleBefore, idleAfter, desktop }, null, 2),
);
try {
  execFileSync("cp", [join(work, "charts.png"), join(opts.out, "charts.png")]);
} catch {
  // No screenshot is no reason to fail the benchmark.
}
console.log(report);
rmSync(work, { recursive: true, force: true });
