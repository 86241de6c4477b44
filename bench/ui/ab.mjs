// Side by side: two or more builds of the app measured in turn in one run,
// so a machine that gets busier meanwhile slows all alike (absolute numbers
// move ±15 % between runs on a 2-core VM; compare the ratios).
//
//   node bench/ui/ab.mjs pages BIN_A BIN_B …   # the Runs page under 20 clients, one server per binary
//   node bench/ui/ab.mjs charts DIST_A DIST_B … # the Charts screen's first render (a fresh page, and from the Suites screen) and when ECharts has drawn it (interactive), one UI build (ui/dist) per server
//   node bench/ui/ab.mjs charts-cpu DIST_A …    # the same fresh page's work: the thread time of the page's main thread until the first render, and of its other threads (compiling), from a trace
//
// charts-cpu measures work, not waiting: it barely moves when other processes
// share the cores, where wall times spread over ±40 %; a change that only
// reorders (starts a request sooner, compiles in parallel) shows in `charts`.
//
// Both fill a suite of 500 epochs × 50 tasks once (`attractor bench fill`,
// with the first binary, or ATTRACTOR_BIN for `charts`) into a database
// under $TMPDIR/attractor-ab/ that later runs reuse.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const [what, ...subjects] = process.argv.slice(2);
if (!["pages", "charts", "charts-cpu"].includes(what) || subjects.length === 0) {
  console.error("usage: node bench/ui/ab.mjs pages BIN… | charts DIST… | charts-cpu DIST…");
  process.exit(2);
}
const root = resolve(import.meta.dirname, "../..");
const targetDir = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache/attractor/target");
const work = join(tmpdir(), "attractor-ab");
mkdirSync(work, { recursive: true });
const db = join(work, "ab.db");
const env = { ...process.env, ATTRACTOR_SETTINGS: join(work, "settings.json"), ATTRACTOR_RUNS_DIR: join(work, "runs") };
delete env.ATTRACTOR_DB;
delete env.ATTRACTOR_TOKEN;
const fillBin = what === "pages" ? subjects[0] : (process.env.ATTRACTOR_BIN ?? join(targetDir, "release/attractor"));
if (!existsSync(db)) execFileSync(fillBin, ["--db", db, "--json", "bench", "fill", "--epochs", "500", "--tasks", "50"], { env, stdio: "ignore" });

function serve(bin, uiDir) {
  const child = spawn(bin, ["--db", db, "serve", "--port", "0", "--ui-dir", uiDir], { env, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((ok) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) ok({ child, url: m[1] });
    });
  });
}
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const median = (xs) => quantile(xs, 0.5);

if (what === "pages") {
  const path = "api/suites/1/epochs?offset=0&limit=5";
  const servers = [];
  for (const bin of subjects) servers.push({ bin, ...(await serve(bin, join(root, "ui/dist"))), times: [], rates: [] });
  const burst = async (s, perClient, record) => {
    const t0 = performance.now();
    const times = [];
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = 0; i < perClient; i++) {
          const t = performance.now();
          const r = await fetch(s.url + path, { headers: { "Accept-Encoding": "gzip" } });
          await r.arrayBuffer();
          if (!r.ok) throw new Error(`${s.bin}: ${r.status}`);
          times.push(performance.now() - t);
        }
      }),
    );
    if (record) {
      s.times.push(...times);
      s.rates.push(times.length / ((performance.now() - t0) / 1000));
    }
  };
  for (const s of servers) await burst(s, 2, false);
  for (let round = 0; round < 5; round++) for (const s of servers) await burst(s, 10, true);
  for (const s of servers) {
    const rate = s.rates.reduce((a, b) => a + b) / s.rates.length;
    console.log(`${s.bin}: p50 ${median(s.times).toFixed(1)} ms, p95 ${quantile(s.times, 0.95).toFixed(1)} ms, ${rate.toFixed(0)} answered/s`);
  }
  for (const s of servers) s.child.kill();
} else if (what === "charts-cpu") {
  const servers = [];
  for (const dist of subjects) servers.push({ dist, ...(await serve(fillBin, dist)), main: [], other: [], wall: [] });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const samples = Number(process.env.SAMPLES ?? 8);
  const tracePath = join(work, "trace.json");
  const ids = ["loss-curve", "artifact-timeline", "task-spread"];
  for (let i = 0; i <= samples; i++) {
    for (const s of servers) {
      const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
      const page = await context.newPage();
      await browser.startTracing(page, { path: tracePath, categories: ["toplevel", "blink.user_timing", "loading", "devtools.timeline"] });
      await page.goto(`${s.url}#/charts/ui-bench`);
      await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`[data-testid=${id}]`)?.dataset.renderedAt), ids, { polling: 100 });
      const first = await page.evaluate((ids) => Math.max(...ids.map((id) => Number(document.querySelector(`[data-testid=${id}]`).dataset.renderedAt))), ids);
      await browser.stopTracing();
      await context.close();
      if (i === 0) continue;
      // The page's main thread: the renderer main thread that ran the most;
      // its top-level tasks' thread time from navigation to the first render.
      const events = JSON.parse(readFileSync(tracePath, "utf8")).traceEvents;
      const threads = new Map(events.filter((e) => e.name === "thread_name").map((e) => [`${e.pid}:${e.tid}`, e.args.name]));
      const tasks = events.filter((e) => e.ph === "X" && e.cat === "toplevel" && e.tdur);
      const ran = new Map();
      for (const e of tasks) if (threads.get(`${e.pid}:${e.tid}`) === "CrRendererMain") ran.set(`${e.pid}:${e.tid}`, (ran.get(`${e.pid}:${e.tid}`) ?? 0) + e.tdur);
      const main = [...ran].sort((a, b) => b[1] - a[1])[0][0];
      // Navigation to the app (not the blank page a new tab starts on).
      const t0 = events.find((e) => e.name === "navigationStart" && e.args?.data?.documentLoaderURL?.startsWith(s.url))?.ts;
      if (t0 === undefined) throw new Error("no navigation to the app in the trace");
      let own = 0, other = 0;
      for (const e of tasks) {
        if (e.ts < t0 || e.ts > t0 + first * 1000) continue;
        if (`${e.pid}:${e.tid}` === main) own += e.tdur / 1000;
        else if (String(e.pid) === main.split(":")[0]) other += e.tdur / 1000;
      }
      s.main.push(own);
      s.other.push(other);
      s.wall.push(first);
    }
  }
  rmSync(tracePath, { force: true });
  for (const s of servers)
    console.log(
      `${s.dist}: main thread until the first render ${median(s.main).toFixed(0)} ms of thread time [${s.main.map((x) => x.toFixed(0))}], the page's other threads ${median(s.other).toFixed(0)} ms, first render (traced) ${median(s.wall).toFixed(0)} ms`,
    );
  await browser.close();
  for (const s of servers) s.child.kill();
} else {
  const servers = [];
  for (const dist of subjects) servers.push({ dist, ...(await serve(fillBin, dist)), first: [], interactive: [], whole: [], inApp: [] });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const samples = Number(process.env.SAMPLES ?? 9);
  for (let i = 0; i <= samples; i++) {
    for (const s of servers) {
      const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${s.url}#/charts/ui-bench`);
      // Waiting in the page, on its own events (no polling from outside).
      const r = await page.evaluate(
        () =>
          new Promise((done) => {
            const ids = ["loss-curve", "artifact-timeline", "task-spread"];
            let first = null;
            let interactive = null;
            const at = (els, key) => (els.every((e) => e?.dataset[key]) ? Math.max(...els.map((e) => Number(e.dataset[key]))) : null);
            const check = () => {
              const els = ids.map((id) => document.querySelector(`[data-testid=${id}]`));
              first ??= at(els, "renderedAt");
              interactive ??= at(els, "interactiveAt");
              // A build before the first frames (lib/sketch.ts; no .chart-echarts) stamps only rendered-at, when ECharts has drawn.
              const sketches = !!document.querySelector(".chart-echarts");
              // The whole history: ECharts has drawn the loss curve (before the first frames: its 500 points are in).
              const whole = sketches ? els[0]?.dataset.interactiveAt : els[0]?.dataset.points === "500";
              if (first !== null && (interactive !== null || !sketches) && whole)
                return done({ first, interactive: interactive ?? first, whole: sketches ? Number(els[0].dataset.interactiveAt) : performance.now() }), true;
              return false;
            };
            if (check()) return;
            const mo = new MutationObserver(() => check() && mo.disconnect());
            mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-rendered-at", "data-interactive-at", "data-points"] });
          }),
      );
      await context.close();
      // The same screen opened from inside the app (a fresh page on the
      // Suites screen, its code loaded and started): the way most people
      // get there.
      const inside = await browser.newContext({ viewport: { width: 1360, height: 900 } });
      const page2 = await inside.newPage();
      await page2.goto(`${s.url}#/`);
      await page2.getByRole("link", { name: "ui-bench" }).first().waitFor();
      const inApp = await page2.evaluate(
        () =>
          new Promise((done) => {
            const t0 = performance.now();
            const ids = ["loss-curve", "artifact-timeline", "task-spread"];
            const check = () => {
              const els = ids.map((id) => document.querySelector(`[data-testid=${id}]`));
              if (!els.every((e) => e?.dataset.renderedAt)) return false;
              done(Math.max(...els.map((e) => Number(e.dataset.renderedAt))) - t0);
              return true;
            };
            const mo = new MutationObserver(() => check() && mo.disconnect());
            mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-rendered-at"] });
            window.location.hash = "#/charts/ui-bench";
          }),
      );
      // The first round warms the browser and the servers.
      if (i > 0) {
        s.first.push(r.first);
        s.interactive.push(r.interactive);
        s.whole.push(r.whole);
        s.inApp.push(inApp);
      }
      await inside.close();
    }
  }
  for (const s of servers)
    console.log(
      `${s.dist}: first render median ${median(s.first).toFixed(0)} ms [${s.first.map((x) => x.toFixed(0))}], interactive ${median(s.interactive).toFixed(0)} ms, whole history ${median(s.whole).toFixed(0)} ms, opened from the Suites screen ${median(s.inApp).toFixed(0)} ms [${s.inApp.map((x) => x.toFixed(0))}]`,
    );
  await browser.close();
  for (const s of servers) s.child.kill();
}
