// End to end: the Charts screen of a long history (200 epochs, written by
// `attractor bench fill` through the store as real runs are), in Debian's
// Chromium against `attractor serve`. A long history opens on its latest 100
// epochs: those are drawn first — a first frame drawn without ECharts, while
// its code loads and runs for the first time (lib/sketch.ts) — and ECharts
// draws the whole history over it, opened on the same epochs, so a person
// sees the same view sooner and can zoom out to every epoch.
//
// Run with `npm run e2e` after `cargo build` and `npm run build` (see
// harness.mjs for ATTRACTOR_BIN, CHROMIUM and E2E_SHOTS).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { baseEnv, bin, browser, checkPrerequisites, serve, shot } from "./harness.mjs";

const work = realpathSync(mkdtempSync(join(tmpdir(), "attractor-e2e-history-")));
const env = baseEnv(work);
const db = join(work, "history.db");
const EPOCHS = 200;

let server, context, page, suite;

before(async () => {
  checkPrerequisites();
  const { stdout } = await promisify(execFile)(bin, ["--db", db, "--json", "bench", "fill", "--epochs", String(EPOCHS), "--tasks", "8"], { env });
  suite = JSON.parse(stdout).suite;
  server = await serve(db, env);
  ({ context, page } = await browser(work));
  // Every draw of the loss curve, as the page saw it: the points it held
  // when it first reported being drawn, and each later count.
  await page.addInitScript(() => {
    window.__draws = [];
    new MutationObserver((changes) => {
      for (const c of changes) {
        const el = c.target;
        if (el.dataset?.testid !== "loss-curve") continue;
        if (c.attributeName === "data-rendered-at") window.__draws.push({ first: true, columns: el.dataset.firstFrame ?? null, points: Number(el.dataset.points) });
        if (c.attributeName === "data-points") window.__draws.push({ first: false, points: Number(el.dataset.points) });
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-rendered-at", "data-points"] });
  });
});

after(async () => {
  await context?.close();
  server?.child.kill("SIGINT");
  rmSync(work, { recursive: true, force: true });
});

describe("a long history on the Charts screen", () => {
  it("is on screen before ECharts has loaded, and ECharts takes over when it comes", async () => {
    const fresh = await context.newPage();
    // What ECharts held when each chart said it had drawn (not an empty chart).
    await fresh.addInitScript(() => {
      window.__interactive = {};
      new MutationObserver((changes) => {
        for (const c of changes) {
          const id = c.target.dataset?.testid;
          const chart = window.attractorCharts?.[id];
          window.__interactive[id] = chart?.getOption()?.series?.[0]?.data?.length ?? 0;
        }
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-interactive-at"] });
    });
    // ECharts' file held back until the first frames are checked.
    let release;
    const held = new Promise((ok) => (release = ok));
    await fresh.route(/\/assets\/echarts-[^/]*\.js$/, async (route) => {
      await held;
      await route.continue();
    });
    await fresh.goto(`${server.url}#/charts/${encodeURIComponent(suite)}`);
    const ids = ["loss-curve", "artifact-timeline", "task-spread"];
    for (const id of ids) await fresh.locator(`[data-testid=${id}][data-rendered-at] canvas.chart-sketch`).waitFor();
    const before = await fresh.evaluate(
      (ids) => ids.map((id) => ({ interactive: document.querySelector(`[data-testid=${id}]`).dataset.interactiveAt ?? null, echarts: !!window.attractorCharts?.[id] })),
      ids,
    );
    assert.deepEqual(before, ids.map(() => ({ interactive: null, echarts: false })), "drawn without ECharts");
    // The first frames have pixels (a blank canvas would pass the checks above).
    const inked = await fresh.evaluate(() =>
      [...document.querySelectorAll("canvas.chart-sketch")].map((c) => {
        const { data } = c.getContext("2d").getImageData(0, 0, c.width, c.height);
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
        return n;
      }),
    );
    assert.equal(inked.length, 3);
    for (const n of inked) assert.ok(n > 1000, `a first frame with ink: ${inked}`);
    await shot(fresh, "history-first-frame.png");
    release();
    for (const id of ids) await fresh.locator(`[data-testid=${id}][data-interactive-at]`).waitFor();
    // ECharts' drawing replaces the first frames (removed at React's next render).
    await fresh.locator("canvas.chart-sketch").first().waitFor({ state: "detached" });
    const drawn = await fresh.evaluate(() => window.__interactive);
    assert.equal(drawn["loss-curve"], EPOCHS, `the loss curve said it was drawn with its ${EPOCHS} epochs in: ${JSON.stringify(drawn)}`);
    assert.equal(drawn["task-spread"], EPOCHS, `the box plot too: ${JSON.stringify(drawn)}`);
    assert.ok(await fresh.evaluate(() => typeof window.attractorCharts["loss-curve"].getOption === "function"));
    await fresh.close();
  });

  it("says so when ECharts' code cannot be loaded, and keeps the first frame", async () => {
    const fresh = await context.newPage();
    await fresh.route(/\/assets\/echarts-[^/]*\.js$/, (route) => route.abort());
    await fresh.goto(`${server.url}#/charts/${encodeURIComponent(suite)}`);
    const note = fresh.getByTestId("loss-curve").locator(".chart-failed");
    await note.waitFor();
    assert.match(await note.innerText(), /could not be drawn: its code did not load.*Reload the page/);
    assert.equal(await fresh.getByTestId("loss-curve").locator("canvas.chart-sketch").count(), 1);
    await fresh.close();
  });

  it("is drawn first as its latest 100 epochs, then whole, opened on those same epochs", async () => {
    await page.goto(`${server.url}#/charts/${encodeURIComponent(suite)}`);
    const curve = page.getByTestId("loss-curve");
    await page.locator(`[data-testid=loss-curve][data-interactive-at]`).waitFor();
    const draws = await page.evaluate(() => window.__draws);
    const first = draws.find((d) => d.first);
    assert.ok(first, `the loss curve reported no first draw: ${JSON.stringify(draws)}`);
    // Its first frame shows the latest 100 epochs (columns 100–199 of 200).
    assert.equal(first.columns, `${EPOCHS - 100}-${EPOCHS - 1}`, "the first frame holds the opening window only");
    // The whole history, opened on the latest 100 epochs (the same view).
    const view = await page.evaluate(() => {
      const chart = window.attractorCharts["loss-curve"];
      const o = chart.getOption();
      return { start: o.dataZoom[0].start, end: o.dataZoom[0].end, columns: o.xAxis[0].data.length, first: o.xAxis[0].data[0] };
    });
    assert.deepEqual(view, { start: 50, end: 100, columns: EPOCHS, first: 1 });
    assert.equal(await curve.getAttribute("data-points"), String(EPOCHS));
    await shot(page, "history-opening.png");
  });

  it("lists the proposals a page of 25 at a time, newest first", async () => {
    const all = (await (await fetch(`${server.url}api/suites/${encodeURIComponent(suite)}/proposals`)).json()).proposals.filter((p) => p.outcome !== "rejected");
    assert.ok(all.length > 25, `the filled history has more proposals than a page: ${all.length}`);
    const rows = page.locator("table.proposals tbody tr");
    const pager = page.getByTestId("proposals-pager").first();
    await pager.waitFor();
    assert.equal(await rows.count(), 25);
    const newest = Math.max(...all.map((p) => p.epoch_num));
    assert.equal(await rows.first().locator("td").first().innerText(), String(newest));
    assert.match(await pager.innerText(), new RegExp(`1–25 of ${all.length} proposals .* page 1 of ${Math.ceil(all.length / 25)}`));
    await pager.getByRole("button", { name: "Older →" }).click();
    await pager.getByText(new RegExp(`26–50 of ${all.length} proposals`)).waitFor();
    // The 26th newest (a stable sort by epoch, newest first, as the screen's).
    const byEpoch = [...all].sort((a, b) => b.epoch_num - a.epoch_num);
    assert.equal(await rows.first().locator("td").first().innerText(), String(byEpoch[25].epoch_num));
    await pager.getByRole("button", { name: "← Newer" }).click();
    await pager.getByText(/1–25 of/).waitFor();
  });

  it("zooms out to every epoch, the other charts with it", async () => {
    await page.evaluate(() => window.attractorCharts["loss-curve"].dispatchAction({ type: "dataZoom", start: 0, end: 100 }));
    await page.waitForFunction(() => window.attractorCharts["task-spread"].getOption().dataZoom[0].start === 0);
    const spread = await page.evaluate(() => window.attractorCharts["task-spread"].getOption().series[0].data.length);
    assert.equal(spread, EPOCHS);
    // An update before the opening window is on the timeline of the whole history.
    const marks = await page.evaluate(() => window.attractorCharts["artifact-timeline"].getOption().series.flatMap((s) => s.data.map((d) => d[0])));
    assert.ok(marks.length > 0, "the filled history has artifact changes");
    assert.ok(
      marks.some((column) => column < EPOCHS - 100),
      `a change before the latest 100 epochs is drawn once the whole history is in: ${marks.slice(0, 10)}`,
    );
    await shot(page, "history-whole.png");
  });
});
