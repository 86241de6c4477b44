// End to end: the real `attractor` binary serves the built UI (ui/dist) over
// a real SQLite database that real `attractor run`s filled, and Debian's
// Chromium, driven by playwright-core, uses it the way a person would.
//
// Run with `npm run e2e` after `cargo build` and `npm run build`.
// ATTRACTOR_BIN names the binary (default: $CARGO_TARGET_DIR/debug/attractor);
// CHROMIUM the browser (default /usr/bin/chromium); screenshots go to
// E2E_SHOTS (default /tmp/attractor-e2e) — look at them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, execFile } from "node:child_process";
import { promisify } from "node:util";
import { copyFileSync, mkdtempSync, mkdirSync, rmSync, readFileSync, writeFileSync } from "node:fs";
import { inflateRawSync } from "node:zlib";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";
import { WAIT, baseEnv, bin, browser, checkPrerequisites, fixtures, hostileFiles, scriptedModel, serve as serveDb, shot as save, shots } from "./harness.mjs";

const work = mkdtempSync(join(tmpdir(), "attractor-e2e-"));
const db = join(work, "attractor.db");
const env = baseEnv(work);

function cli(...args) {
  try {
    return execFileSync(bin, ["--db", db, ...args], { env: { ...env, KNOBS_DELAY: "0" }, encoding: "utf8" });
  } catch (e) {
    // Exit 4: the suite ran and some runs failed, as some fixtures' tasks do by design.
    if (e.status === 4) return e.stdout;
    throw e;
  }
}

/** `attractor serve` on `database` with this file's environment (plus `extraEnv`). */
const serve = (database, extraEnv = {}, extraArgs = []) => serveDb(database, { ...env, ...extraEnv }, extraArgs);

let server, emptyServer, tokenServer, textgradServer, model, context, page;

/**
 * A scripted OpenAI-compatible model for the textgrad run: about the `knobs`
 * artifact it proposes raising the gain by 0.5 (predicting a 0.05 fall of the
 * loss with confidence 0.8), except every third call, when it proposes nothing.
 */
function textgradModel() {
  let calls = 0;
  return scriptedModel((request) => {
    const user = request.messages.at(-1).content;
    let reply = { artifact: "", proposed_content: "", rationale: "nothing to change", expected_loss_reduction: 0, confidence: 0 };
    const current = user.match(/Artifact `knobs`[\s\S]*<<<\n([\s\S]*)\n>>>/);
    // Every third call declines, so the list has a rejected proposal too.
    if (current && ++calls % 3 !== 0) {
      const knobs = JSON.parse(current[1]);
      knobs.gain = Math.min(5, knobs.gain + 0.5);
      reply = { artifact: "knobs", proposed_content: JSON.stringify(knobs), rationale: "raise the gain towards the tasks' targets", expected_loss_reduction: 0.05, confidence: 0.8 };
    }
    return JSON.stringify(reply);
  });
}

/** What a person sees in the window (the whole page with `full`). */
const shot = (name, full = false) => save(page, name, full);

/** Viewport coordinates of a data value of a chart's series. */
async function pixel(chartId, seriesIndex, value) {
  return page.evaluate(
    ([id, s, v]) => {
      const chart = window.attractorCharts[id];
      const [x, y] = chart.convertToPixel({ seriesIndex: s }, v);
      const box = chart.getDom().getBoundingClientRect();
      return { x: box.left + x, y: box.top + y };
    },
    [chartId, seriesIndex, value],
  );
}

/**
 * The entries of a zip archive, read from its central directory (stored or
 * deflated, as the server writes them): name → contents.
 */
function unzip(buf) {
  let end = buf.length - 22;
  while (end >= 0 && buf.readUInt32LE(end) !== 0x06054b50) end--;
  assert.ok(end >= 0, "a zip archive ends with its central directory");
  const count = buf.readUInt16LE(end + 10);
  let at = buf.readUInt32LE(end + 16);
  const files = new Map();
  for (let i = 0; i < count; i++) {
    assert.equal(buf.readUInt32LE(at), 0x02014b50, "a central directory entry");
    const method = buf.readUInt16LE(at + 10);
    const size = buf.readUInt32LE(at + 20);
    const nameLen = buf.readUInt16LE(at + 28);
    const extraLen = buf.readUInt16LE(at + 30);
    const commentLen = buf.readUInt16LE(at + 32);
    const local = buf.readUInt32LE(at + 42);
    const name = buf.subarray(at + 46, at + 46 + nameLen).toString("utf8");
    const dataAt = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(dataAt, dataAt + size);
    files.set(name, method === 8 ? inflateRawSync(raw) : Buffer.from(raw));
    at += 46 + nameLen + extraLen + commentLen;
  }
  return files;
}

before(async () => {
  checkPrerequisites();
  rmSync(shots, { recursive: true, force: true });
  mkdirSync(shots, { recursive: true });
  cli("run", join(fixtures, "knobs.suite.yaml"), "--epochs", "8", "--optimizer", "evolve", "--seed", "1", "--quiet");
  cli("run", join(fixtures, "inbox.suite.yaml"), "--seed", "1", "--quiet");
  // An update the held-out gate rolls back (epoch 2).
  cli("run", join(fixtures, "gate.suite.yaml"), "--epochs", "2", "--optimizer", "evolve", "--seed", "1", "--quiet");
  // Versions of the built-in `aso_config`, whose version 0 keeps its author's key order.
  cli("run", join(fixtures, "tune.suite.yaml"), "--epochs", "2", "--optimizer", "evolve", "--seed", "1", "--quiet");
  // textgrad on its own database, against the scripted model.
  model = await textgradModel();
  const tgDb = join(work, "textgrad.db");
  await promisify(execFile)(bin, ["--db", tgDb, "run", join(fixtures, "knobs.suite.yaml"), "--epochs", "4", "--optimizer", "textgrad", "--no-rollback", "--seed", "1", "--quiet"], {
    env: { ...env, KNOBS_DELAY: "0", ATTRACTOR_LLM_BASE_URL: model.url, ATTRACTOR_LLM_MODEL: "scripted" },
  });
  // A dataset harness whose examples flip between its two epochs.
  await promisify(execFile)(bin, ["--db", tgDb, "run", join(fixtures, "labels.suite.yaml"), "--epochs", "2", "--quiet"], { env });
  textgradServer = await serve(tgDb);
  // Launched runs sleep a little so live progress is visible, as real ones are.
  server = await serve(db, { KNOBS_DELAY: "0.4" });
  emptyServer = await serve(join(work, "empty.db"));
  tokenServer = await serve(db, {}, ["--token", "e2e-s3cret"]);
  ({ context, page } = await browser(work));
});

after(async () => {
  await context?.close();
  for (const s of [server, emptyServer, tokenServer, textgradServer]) s?.child.kill("SIGINT");
  model?.http.close();
  rmSync(work, { recursive: true, force: true });
});

/**
 * A copy of the knobs suite named `name`, with artifacts of its own (artifact
 * names are shared by a database's suites) and a second JSON artifact for a
 * tree search to brief; returns its path.
 */
function ownSuite(name) {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(fixtures, "knobs.py"), join(dir, "knobs.py"));
  const knobs = readFileSync(join(fixtures, "knobs.suite.yaml"), "utf8");
  const suite = knobs
    .replace("name: knobs\n", `name: ${name}\n`)
    .replace("  - name: knobs\n", `  - name: ${name}_knobs\n`)
    .replaceAll(/knobs\.py" (\w+)/g, `knobs.py" $1 ${name}_knobs`)
    .replace("artifacts:\n", `artifacts:\n  - name: ${name}_spare\n    type: json\n    content: { level: 1.0 }\n    fields:\n      level: { min: 0.0, max: 2.0 }\n`);
  writeFileSync(join(dir, `${name}.suite.yaml`), suite);
  return join(dir, `${name}.suite.yaml`);
}

describe("the Attractor web UI against a real server", () => {
  it("welcomes a newcomer with an empty state that says what to do", async () => {
    await page.goto(`${emptyServer.url}#/suites`);
    const empty = page.getByTestId("empty");
    await empty.waitFor();
    // In the app's own font, loaded from its own files.
    const font = await page.evaluate(async () => {
      await document.fonts.ready;
      return { family: getComputedStyle(document.body).fontFamily, loaded: [...document.fonts].some((f) => f.family.replace(/"/g, "") === "Inter Variable" && f.status === "loaded") };
    });
    assert.match(font.family, /^"?Inter Variable"?,/);
    assert.ok(font.loaded, JSON.stringify(font));
    assert.match(await empty.innerText(), /No suites yet[\s\S]*examples\/descent\.suite\.yaml/);
    await shot("01-suites-empty.png");
  });

  it("lists the suites the CLI ran", async () => {
    await page.goto(`${server.url}#/suites`);
    const row = page.locator("tr[data-suite=knobs]");
    await row.waitFor();
    const cells = await row.locator("td").allInnerTexts();
    assert.equal(cells[0].trim(), "knobs");
    assert.equal(cells[1], "8");
    assert.match(cells[3], /4 \(1 held out\)/);
    assert.equal(cells[4], "idle");
    await page.locator("tr[data-suite=inbox]").waitFor();
    await shot("02-suites.png");
  });

  it("exports a suite's report as a zip of its charts and page, which reads well in a browser", async () => {
    await page.goto(`${server.url}#/suites`);
    const row = page.locator("tr[data-suite=knobs]");
    await row.waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), row.getByTestId("export").click()]);
    assert.equal(download.suggestedFilename(), "knobs-report.zip");
    const saved = join(work, "knobs-report.zip");
    await download.saveAs(saved);
    const files = unzip(readFileSync(saved));
    const names = [...files.keys()].sort();
    const expected = ["artifact-timeline.png", "artifact-timeline.svg", "index.html", "loss-curve.png", "loss-curve.svg", "task-loss.png", "task-loss.svg"];
    assert.deepEqual(names, expected.map((n) => `knobs-report/${n}`));
    const html = files.get("knobs-report/index.html").toString("utf8");
    assert.equal(html.match(/<tr data-epoch=/g).length, 8, "a row per epoch");
    assert.equal(files.get("knobs-report/loss-curve.svg").toString("utf8").match(/<circle/g).length, 8, "a dot per epoch");
    assert.equal(files.get("knobs-report/task-loss.png").subarray(1, 4).toString(), "PNG");

    // The page as a person opens it from disk: every chart image loads.
    const dir = join(work, "report");
    for (const [name, data] of files) {
      mkdirSync(join(dir, "knobs-report"), { recursive: true });
      writeFileSync(join(dir, name), data);
    }
    const viewer = await context.newPage();
    await viewer.setViewportSize({ width: 1360, height: 900 });
    await viewer.goto(`file://${join(dir, "knobs-report/index.html")}`);
    const loaded = await viewer.evaluate(() => [...document.images].map((i) => i.complete && i.naturalWidth > 0));
    assert.deepEqual(loaded, [true, true, true], "the three SVGs load");
    await viewer.waitForTimeout(300);
    await viewer.screenshot({ path: join(shots, "22-report.png"), fullPage: true });
    await viewer.close();
  });

  it("draws the three charts with one point per epoch and tooltips that name the transition", async () => {
    await page.goto(`${server.url}#/charts/knobs`);
    const curve = page.getByTestId("loss-curve");
    await page.locator("[data-testid=loss-curve][data-interactive-at]").waitFor();
    assert.equal(await curve.getAttribute("data-points"), "8");
    assert.equal(await page.getByTestId("task-spread").getAttribute("data-points"), "8");
    const epochs = await (await fetch(`${server.url}api/suites/knobs/epochs`)).json();
    const first = epochs.epochs[0];
    assert.equal(first.events[0].type, "update");
    // The suite was first run from the command line: "Launch again" knows its file.
    const again = page.getByRole("link", { name: "Launch again" });
    assert.equal(await again.getAttribute("href"), `#/launch?path=${encodeURIComponent(join(fixtures, "knobs.suite.yaml"))}&again=knobs`);
    // Each chart has a text alternative a screen reader announces.
    assert.equal(await curve.getAttribute("role"), "img");
    assert.match(await curve.getAttribute("aria-label"), /^Mean loss by epoch, 8 epochs: \d\.\d+ at epoch 1, .* lowest \d\.\d+ at epoch \d$/);
    assert.match(await page.getByTestId("task-spread").getAttribute("aria-label"), /^Per-task loss by epoch: a box plot of the \d+ tasks' losses/);

    // Hover the first epoch's dot: the tooltip says v0→v1.
    const p = await pixel("loss-curve", 0, [0, first.mean_loss]);
    await page.mouse.move(p.x, p.y);
    await curve.getByText("update knobs v0→v1").waitFor();
    await shot("03-charts-tooltip.png");

    // The spread chart's tooltip lists every task's loss, the held-out one marked.
    const spread = page.getByTestId("task-spread");
    await spread.scrollIntoViewIfNeeded();
    const q = await pixel("task-spread", 0, [0, 0]);
    await page.mouse.move(q.x, q.y - 40);
    const tip = spread.getByText(/delta \(held out\)/);
    await tip.waitFor();
    const text = await spread.innerText();
    for (const t of first.tasks) assert.ok(text.includes(`${t.task}`) && text.includes(t.loss.toFixed(4)), `${t.task} in ${text}`);
    await shot("04-charts-spread.png");
  });

  it("opens the right diff when a timeline marker is clicked", async () => {
    const timeline = page.getByTestId("artifact-timeline");
    await timeline.scrollIntoViewIfNeeded();
    const epochs = await (await fetch(`${server.url}api/suites/knobs/epochs`)).json();
    const done = epochs.epochs.filter((e) => e.completed_at !== null);
    const column = done.findIndex((e) => e.events.some((ev) => ev.type === "rollback"));
    const ev = done[column].events.find((x) => x.type === "rollback");
    const p = await pixel("artifact-timeline", 1, [column, 0]);
    await page.mouse.click(p.x, p.y);
    const drawer = page.getByTestId("diff-drawer");
    await drawer.waitFor();
    await drawer.getByRole("heading", { name: `knobs v${ev.from_version}→v${ev.to_version}` }).waitFor();
    const expected = await (await fetch(`${server.url}api/artifacts/knobs/diff?from=${ev.from_version}&to=${ev.to_version}`)).json();
    await drawer.getByTestId("diff").waitFor();
    const inserted = expected.lines.filter((l) => l.tag === "insert").map((l) => l.text);
    const shown = await drawer.locator("tr.diff-insert").allInnerTexts();
    assert.equal(shown.length, inserted.length);
    inserted.forEach((t, i) => assert.ok(shown[i].includes(t.trim()), `${shown[i]} shows ${t}`));
    await shot("05-diff-drawer.png");
    await drawer.getByText("Side by side").click();
    await shot("06-diff-drawer-split.png");
    await page.keyboard.press("Escape");
    await drawer.waitFor({ state: "detached" });
  });

  it("links the three charts' tooltips by epoch, not by the position of a point in its series", async () => {
    // The timeline has one point per artifact change, not per epoch: linked by
    // position, pointing at epoch 6 showed the sixth update (epoch 8).
    await page.goto(`${server.url}#/charts/knobs`);
    const charts = await (await fetch(`${server.url}api/suites/knobs/charts`)).json();
    assert.equal(charts.epochs.length, 8);
    const updates = charts.marks.filter((m) => !m.rollback);
    assert.ok(updates.some((m, i) => m.column !== i), "an update whose place in its series is not its column");
    for (const id of ["loss-curve", "task-spread", "artifact-timeline"]) await page.locator(`[data-testid=${id}][data-interactive-at]`).waitFor();
    const tip = (id, epoch) => page.getByTestId(id).locator(".chart-tip", { hasText: new RegExp(`^epoch ${epoch}(?!\\d)`) });
    for (const [column, epoch] of charts.epochs.entries()) {
      const p = await pixel("loss-curve", 0, [column, charts.loss[column].loss]);
      await page.mouse.move(p.x, p.y);
      await tip("loss-curve", epoch).waitFor({ timeout: 15_000 });
      await tip("task-spread", epoch).waitFor({ timeout: 15_000 });
      if (charts.marks.some((m) => m.column === column)) await tip("artifact-timeline", epoch).waitFor({ timeout: 15_000 });
    }
    await shot("04b-linked-tooltips.png");
    await page.mouse.move(5, 5);
  });

  it("says when a rollback was the held-out gate's, though the training loss fell", async () => {
    await page.goto(`${server.url}#/charts/gate`);
    const charts = await (await fetch(`${server.url}api/suites/gate/charts`)).json();
    assert.equal(charts.loss.length, 2);
    assert.ok(charts.loss[1].loss < charts.loss[0].loss, "the training loss fell");
    // The screen may still show the last suite's charts: wait for this one's.
    const curve = page.locator('[data-testid=loss-curve][data-points="2"]');
    await curve.locator(".chart-echarts canvas").waitFor();
    await page.waitForFunction(() => window.attractorCharts?.["loss-curve"]?.getOption().xAxis[0].data.length === 2);
    const p = await pixel("loss-curve", 0, [1, charts.loss[1].loss]);
    await page.mouse.move(p.x, p.y);
    await curve.getByText(/rollback gate_knobs v1→v0 \(held-out loss rose 0\.\d{4} → 0\.\d{4}\)/).waitFor();
    await shot("04c-holdout-rollback.png");
    await page.mouse.move(5, 5);
  });

  it("shows an artifact's versions and rolls back after a confirmation", async () => {
    await page.goto(`${server.url}#/artifacts/knobs`);
    const versions = page.getByTestId("versions");
    await versions.waitFor();
    const before = await (await fetch(`${server.url}api/artifacts/knobs/versions`)).json();
    assert.equal(await versions.locator("tbody tr").count(), before.versions.length);
    const activeBefore = before.artifact.active_version;
    const target = activeBefore === 1 ? 2 : 1;
    // Each version says how the epochs that ran with it did, and which ones
    // a rollback undid (this suite's history has some).
    const rolled = before.versions.filter((v) => v.rolled_back).map((v) => String(v.version));
    assert.ok(rolled.length > 0, "the knobs history has a rollback");
    const marked = await versions.locator("tr:has([data-testid=rolled-back-marker])").evaluateAll((rows) => rows.map((r) => r.dataset.version));
    assert.deepEqual(marked, rolled);
    const measured = before.versions.find((v) => v.measured !== null && v.measured.mean_loss !== null);
    const cell = versions.locator(`tr[data-version="${measured.version}"] [data-testid=version-loss]`);
    assert.match(await cell.innerText(), new RegExp(`^\\d\\.\\d+\\s+${measured.measured.epochs} epochs?$`));
    await page.getByTestId("diff").waitFor();
    await shot("07-artifact-history.png");
    // Esc closes the confirmation without changing anything.
    await page.getByTestId(`activate-${target}`).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText(`Make v${target} of knobs active?`).waitFor();
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    const unchanged = await (await fetch(`${server.url}api/artifacts/knobs/versions`)).json();
    assert.equal(unchanged.artifact.active_version, activeBefore);
    await page.getByTestId(`activate-${target}`).click();
    await dialog.getByText(`Make v${target} of knobs active?`).waitFor();
    await shot("08-rollback-confirm.png");
    await dialog.getByRole("button", { name: `Make v${target} active` }).click();
    await page.locator(`tr[data-version="${target}"] [data-testid=active-marker]`).waitFor();
    const afterwards = await (await fetch(`${server.url}api/artifacts/knobs/versions`)).json();
    assert.equal(afterwards.artifact.active_version, target);
  });

  it("compares a JSON artifact field by field, whatever the key order of its versions", async () => {
    // v0 of aso_config is written by hand in its own key order, v1 by a
    // serializer in another; evolve changed one field between them.
    await page.goto(`${server.url}#/artifacts/aso_config`);
    const v1 = page.locator('tr[data-version="1"]');
    await v1.waitFor();
    assert.match(await v1.innerText(), /\+1\s+−1/);
    await page.getByLabel("from version").selectOption("0");
    await page.getByLabel("to version").selectOption("1");
    const diff = page.locator('[data-testid=diff][data-basis=fields]');
    await diff.waitFor();
    await diff.getByText(/^Compared field by field/).waitFor();
    await page.getByRole("button", { name: "Unified" }).click();
    const unified = page.locator("[data-testid=diff][data-mode=unified][data-basis=fields]");
    await unified.waitFor();
    const changed = await unified.locator("tr.diff-insert, tr.diff-delete").allInnerTexts();
    assert.equal(changed.length, 2, changed.join("\n"));
    // One field, removed with its old value and added with its new one.
    const fields = changed.map((line) => line.match(/"(\w+)":/)?.[1]);
    assert.ok(fields[0] && fields[0] === fields[1], changed.join("\n"));
    await shot("07b-json-diff-by-field.png");
    await page.getByRole("button", { name: "Side by side" }).click();
  });

  it("shows the text of a version, also of an artifact that has only its default", async () => {
    // A built-in prompt nobody changed: v0 alone. Its text is what opens
    // (it showed "v0 and v0 have the same content" and nothing else).
    const builtin = await (await fetch(`${server.url}api/artifacts/executor_preamble/versions`)).json();
    assert.equal(builtin.versions.length, 1);
    await page.goto(`${server.url}#/artifacts/executor_preamble`);
    const content = page.getByTestId("version-content");
    await content.waitFor();
    assert.equal((await content.innerText()).trim(), builtin.versions[0].content.trim());
    assert.equal(await page.getByRole("heading", { name: "Content of v0" }).count(), 1);
    await shot("07c-artifact-content.png");
    // Any version's text, from its row.
    await page.goto(`${server.url}#/artifacts/knobs`);
    await page.getByTestId("view-1").click();
    const knobs = await (await fetch(`${server.url}api/artifacts/knobs/versions`)).json();
    await page.getByRole("heading", { name: "Content of v1" }).waitFor();
    assert.equal((await page.getByTestId("version-content").innerText()).trim(), knobs.versions[1].content.trim());
  });

  it("does not carry one artifact's compared versions over to the next", async () => {
    // knobs has versions that aso_config lacks: compare two of them, then
    // open aso_config — its own default comparison, and no error.
    const knobs = await (await fetch(`${server.url}api/artifacts/knobs/versions`)).json();
    const last = knobs.versions.at(-1).version;
    assert.ok(last > 2, `knobs has ${last + 1} versions`);
    await page.goto(`${server.url}#/artifacts/knobs`);
    await page.getByTestId("versions").waitFor();
    await page.getByLabel("from version").selectOption(String(last - 1));
    await page.getByLabel("to version").selectOption(String(last));
    await page.getByTestId("diff").or(page.getByText(/have the same/)).first().waitFor();
    await page.locator("a[data-artifact=aso_config]").click();
    await page.getByRole("heading", { name: "aso_config" }).waitFor();
    await page.locator("[data-testid=diff][data-basis=fields]").waitFor();
    // Its own default: its latest version against that version's parent
    // (tune's second epoch may update it again or roll the first update back).
    const aso = await (await fetch(`${server.url}api/artifacts/aso_config/versions`)).json();
    const latest = aso.versions.at(-1);
    assert.equal(await page.getByLabel("to version").inputValue(), String(latest.version));
    assert.equal(await page.getByLabel("from version").inputValue(), String(latest.parent_version));
    assert.equal(await page.locator(".error").count(), 0, await page.locator(".error").allInnerTexts().then((t) => t.join("; ")));
  });

  it("validates a suite file inline, then launches it and shows live progress to the end", async () => {
    await page.goto(`${server.url}#/launch`);
    const path = page.getByTestId("suite-path");
    await path.fill(join(fixtures, "broken.suite.yaml"));
    const issue = page.locator(".issue");
    await issue.waitFor();
    assert.match(await issue.innerText(), /broken\.suite\.yaml:4:5[\s\S]*tasks\[0\]\.comand[\s\S]*unknown field `comand`/);
    assert.equal(await page.getByTestId("start").isDisabled(), true);
    await shot("09-launch-invalid.png");

    await path.fill(join(fixtures, "knobs.suite.yaml"));
    await page.getByText("✓ suite").waitFor();
    await page.getByLabel("Epochs", { exact: true }).fill("2");
    // The preview follows the settings: 2 epochs of the suite's tasks.
    const preview = page.getByTestId("launch-preview");
    await page.getByText(/^\d+ runs?\b/).waitFor();
    const tasks = Number((await page.getByText("✓ suite").innerText()).match(/(\d+) tasks/)[1]);
    await page.getByText(`${2 * tasks} runs`, { exact: false }).waitFor();
    assert.match(await preview.innerText(), /no model calls|model: about/);
    // A count that is not one is said at its field (it was clamped to 1, or
    // sent as typed), and Start waits.
    await page.getByLabel("Epochs", { exact: true }).fill("2.5");
    await page.getByTestId("epochs-error").filter({ hasText: "Epochs must be a whole number from 1 to 100000, not 2.5" }).waitFor();
    assert.equal(await page.getByTestId("start").isDisabled(), true);
    await page.getByLabel("Concurrency", { exact: true }).fill("0");
    await page.getByTestId("concurrency-error").filter({ hasText: "Concurrency must be a whole number from 1 to 256, not 0" }).waitFor();
    await page.getByLabel("Concurrency", { exact: true }).fill("2");
    await page.getByLabel("Epochs", { exact: true }).fill("2");
    assert.equal(await page.getByTestId("epochs-error").count(), 0);
    assert.equal(await page.getByTestId("concurrency-error").count(), 0);
    // A seed that is not one is said at its field, and Start waits.
    await page.getByLabel("Seed").fill("abc");
    await page.getByTestId("seed-error").filter({ hasText: "A seed is a whole number from 0 to 9007199254740991, not abc" }).waitFor();
    assert.equal(await page.getByTestId("start").isDisabled(), true);
    await page.getByLabel("Seed").fill("11");
    assert.equal(await page.getByTestId("seed-error").count(), 0);
    await page.getByTestId("start").click();
    await page.waitForURL(/#\/live/);
    // The CLI's runs of the suite are listed too; this launch is the running one.
    const id = await page.locator("[data-testid=launch][data-suite=knobs][data-status=running]").getAttribute("data-launch-id");
    const card = page.locator(`[data-testid=launch][data-launch-id="${id}"]`);
    // Mid-flight: the task bar moves before the launch ends.
    await card.getByTestId("task-progress").waitFor();
    await shot("10-live-running.png");
    await page.locator(`[data-testid=launch][data-launch-id="${id}"][data-status=finished]`).waitFor();
    assert.equal(await card.getByTestId("epoch-progress").getAttribute("data-done"), "2");
    const rows = card.getByTestId("finished-runs").locator("tbody tr");
    await rows.nth(7).waitFor();
    assert.equal(await rows.count(), 8);
    assert.equal(await card.locator(".epoch-lines li").count(), 2);
    await shot("11-live-finished.png");
    // A reload keeps what the launch did: its epochs' losses and its runs
    // come from the server, not from the events this page saw.
    await page.reload();
    await rows.nth(7).waitFor();
    assert.equal(await rows.count(), 8);
    assert.match(await card.locator(".epoch-lines li").first().innerText(), /^epoch \d+: mean loss \d/);
    assert.equal(await card.getByTestId("runs-outcome").count(), 0, "no run failed");

    await page.goto(`${server.url}#/suites`);
    await page.locator("tr[data-suite=knobs] td:nth-child(2)", { hasText: "10" }).waitFor();
    // "Launch again" starts from this launch's settings, with a fresh seed.
    await page.locator("tr[data-suite=knobs]").getByTestId("launch-again").filter({ hasText: "Launch again" }).click();
    await page.getByTestId("launch-from").filter({ hasText: `launch ${id} (evolve, 2 epochs` }).waitFor();
    assert.equal(await page.getByLabel("Epochs", { exact: true }).inputValue(), "2");
    assert.equal(await page.getByLabel("Seed").inputValue(), "");
    // Another suite in the address, one never launched: the form's own
    // defaults, not knobs' settings (the form stayed as it was).
    await page.goto(`${server.url}#/launch?again=never-launched`);
    await page.waitForFunction(() => document.querySelector("[data-testid=launch-from]") === null);
    assert.equal(await page.getByLabel("Epochs", { exact: true }).inputValue(), "3");
  });

  it("lists on Live the workers that served on the database, with what they offer and that they stopped", async () => {
    const wdb = join(work, "workers.db");
    // A worker with nothing to do registers, then stops (`--until-idle`).
    execFileSync(bin, ["--db", wdb, "worker", "--until-idle", "--offers", "python"], { env, encoding: "utf8" });
    const s = await serve(wdb);
    try {
      await page.goto(`${s.url}#/live`);
      const row = page.getByTestId("workers").locator("tr[data-state=stopped]");
      await row.waitFor();
      assert.match(await row.innerText(), /attractor worker \(pid \d+ on [^)]+\)\s+stopped\s+python/);
      await shot("40-live-workers.png");
    } finally {
      s.child.kill("SIGINT");
    }
  });

  it("says on Live and on Suites that a launch finished with every run failed, and cuts a long run list with a way to see it all", async () => {
    const dir = join(work, "crash");
    mkdirSync(dir, { recursive: true });
    const tasks = Array.from({ length: 16 }, (_, i) => `  - name: t${i}\n    task: Crash.\n    command: exit 3\n`).join("");
    writeFileSync(join(dir, "crash.suite.yaml"), `name: crash\nartifacts:\n  - name: crash_notes\n    type: text\n    content: hi\ntasks:\n${tasks}`);
    await page.goto(`${server.url}#/launch?path=${encodeURIComponent(join(dir, "crash.suite.yaml"))}`);
    await page.getByText("✓ suite").waitFor();
    await page.getByLabel("Epochs", { exact: true }).fill("2");
    await page.getByTestId("start").click();
    await page.waitForURL(/#\/live/);
    const card = page.locator("[data-testid=launch][data-suite=crash]").first();
    await card.and(page.locator("[data-status=finished]")).waitFor();
    const outcome = card.getByTestId("runs-outcome");
    await outcome.filter({ hasText: "all 32 runs failed" }).waitFor();
    assert.equal(await outcome.getAttribute("data-every-failed"), "true");
    // 32 runs: the latest 30 are listed, and the card says so.
    const rows = card.getByTestId("finished-runs").locator("tbody tr");
    await rows.nth(29).waitFor();
    assert.equal(await rows.count(), 30);
    assert.match(await card.getByTestId("runs-cut").innerText(), /The latest 30 of 32 runs/);
    await shot("11b-live-all-failed.png");
    await card.getByTestId("runs-more").click();
    await rows.nth(31).waitFor();
    assert.equal(await rows.count(), 32);
    // The Suites screen says it beside the suite's status, which is idle.
    await page.goto(`${server.url}#/`);
    const row = page.locator("tr[data-suite=crash]");
    await row.getByTestId("runs-outcome").filter({ hasText: "all 32 runs failed" }).waitFor();
    assert.equal(await page.locator("tr[data-suite=knobs]").getByTestId("runs-outcome").count(), 0, "knobs' runs did not fail");
    await shot("11c-suites-all-failed.png");
  });

  it("offers every option of `attractor run` on the Launch screen, and the run gets what the form set", async () => {
    const path = ownSuite("wide");
    await page.goto(`${server.url}#/launch?path=${encodeURIComponent(path)}`);
    await page.getByText("✓ suite").waitFor();
    await page.getByLabel("Epochs", { exact: true }).fill("4");
    await page.getByLabel("Optimizer").selectOption("tree");
    const tree = page.getByTestId("tree-settings");
    await tree.getByLabel("Children per round").fill("1");
    await tree.getByLabel("Branch depth").fill("1");
    await tree.getByLabel("Stall rounds").fill("1");
    await tree.getByLabel("Ideation rounds").fill("0");
    await tree.getByLabel("Selection").selectOption("argmax");
    // The plan the CLI prints follows the form.
    await page.getByTestId("launch-plan").filter({ hasText: "1 child a round" }).waitFor();
    await page.getByText("More settings").click();
    const more = page.getByTestId("more-settings");
    await more.getByLabel("Verify repeats").fill("2");
    await more.getByLabel("Reply tokens: proposer").fill("512");
    // An option out of bounds is named with its field before Start.
    await more.getByLabel("Cost limit").fill("-1");
    await page.locator(".error", { hasText: "model.max_cost" }).waitFor();
    assert.equal(await page.getByTestId("start").isDisabled(), true);
    await shot("09c-launch-every-option.png");
    await more.getByLabel("Cost limit").fill("");
    await page.getByTestId("launch-plan").filter({ hasText: "each evaluated 2 times" }).waitFor();
    await page.getByTestId("start").click();
    await page.waitForURL(/#\/live/);
    await page.locator("[data-testid=launch][data-suite=wide][data-status=finished]").waitFor();
    const launches = await (await fetch(`${server.url}api/launches`)).json();
    const asked = launches.find((l) => l.suite === "wide").request;
    assert.deepEqual(asked.tree, { width: 1, stall: 1, ideation_rounds: 0, selection: "argmax", branch_depth: 1 });
    assert.equal(asked.verify_repeats, 2);
    assert.deepEqual(asked.model.max_tokens, { proposer: 512 });
    // One child a round, as asked (two artifacts would give two).
    const graph = await (await fetch(`${server.url}api/suites/wide/graph`)).json();
    const rounds = graph.nodes.map((n) => n.tree?.round).filter((r) => r > 0);
    assert.ok(rounds.length > 0, JSON.stringify(graph.nodes));
    assert.equal(new Set(rounds).size, rounds.length, `two children in one round: ${rounds}`);
  });

  it("shows a run started with `attractor run` in a terminal live, with who works it", async () => {
    await page.goto(`${server.url}#/live`);
    const path = ownSuite("terminal");
    const running = promisify(execFile)(bin, ["--db", db, "run", path, "--epochs", "3", "--optimizer", "evolve", "--seed", "2", "--quiet"], {
      env: { ...env, KNOBS_DELAY: "0.3" },
    });
    const card = page.locator("[data-testid=launch][data-suite=terminal]");
    // Mid-flight, pushed from the other process through the store.
    await card.getByTestId("task-progress").waitFor();
    assert.match(await card.getByTestId("holder").innerText(), /^attractor run \(pid \d+ on /);
    assert.ok((await page.locator("[data-testid=launch]").count()) > 1, "the CLI's earlier runs are listed too");
    await shot("10b-live-terminal-run.png");
    await running;
    await page.locator("[data-testid=launch][data-suite=terminal][data-status=finished]").waitFor();
    // Its events come through the store a moment after the request ends there.
    await card.locator('[data-testid=epoch-progress][data-done="3"]').waitFor();
  });

  it("refuses every hostile file on the Launch screen at its place, with a hint, and never starts it", async () => {
    await page.goto(`${server.url}#/launch`);
    const path = page.getByTestId("suite-path");
    for (const { file, path: hostile, says } of hostileFiles()) {
      await path.fill(hostile);
      // The validation of this file, not the previous one's, is on screen.
      const issues = page.getByTestId("issues").filter({ hasText: file });
      await issues.waitFor();
      const text = await issues.innerText();
      for (const words of says) assert.ok(text.includes(words), `${file}: no \`${words}\` in ${text}`);
      assert.match(text, /hint: \S/, `${file}: no hint in ${text}`);
      assert.doesNotMatch(text, /:0:|panicked|invalid u\d|DuplicateKeyPolicy/, `${file}: ${text}`);
      assert.equal(await page.getByTestId("start").isDisabled(), true, `${file}: Start is enabled`);
    }
    await shot("09b-launch-hostile.png");
    const suites = await (await fetch(`${server.url}api/suites`)).json();
    const hostileNames = ["huge", "m", "n"];
    assert.deepEqual(suites.filter((x) => hostileNames.includes(x.name)), [], "no hostile file was registered");
  });

  it("cancels a launch from the live screen, leaving the epoch to resume", async () => {
    await page.goto(`${server.url}#/launch?path=${encodeURIComponent(join(fixtures, "knobs.suite.yaml"))}`);
    await page.getByText("✓ suite").waitFor();
    await page.getByLabel("Epochs", { exact: true }).fill("20");
    await page.getByTestId("start").click();
    await page.waitForURL(/#\/live/);
    const card = page.locator("[data-testid=launch][data-status=running]");
    await card.getByTestId("task-progress").waitFor();
    await card.getByTestId("cancel").click();
    const cancelled = page.locator("[data-testid=launch][data-status=cancelled]");
    await cancelled.waitFor();
    const done = Number(await cancelled.getByTestId("epoch-progress").getAttribute("data-done"));
    assert.ok(done < 20, `cancelled after ${done} of 20 epochs`);
    // Its open epoch is not "running" once the launch has stopped: the
    // suite's next launch finishes it.
    await cancelled.getByTestId("epoch-unfinished").filter({ hasText: "unfinished — the suite's next launch finishes it" }).waitFor();
    assert.equal(await cancelled.locator(".epoch-lines").getByText("running", { exact: true }).count(), 0);
    await shot("12-live-cancelled.png");
    const suites = await (await fetch(`${server.url}api/suites`)).json();
    assert.equal(suites.find((x) => x.name === "knobs").status, "unfinished");
    // The Suites screen offers to resume it: the Launch screen opens on the
    // cancelled launch's own settings — unchanged, the run continues its
    // plan (its seed, its open epoch) and runs only what is left.
    await page.goto(`${server.url}#/suites`);
    const resume = page.locator("tr[data-suite=knobs]").getByTestId("launch-again");
    await resume.filter({ hasText: "Resume" }).waitFor();
    await resume.click();
    await page.getByTestId("launch-from").filter({ hasText: /\(evolve, 20 epochs, \d+ done\)\. Unchanged, the run continues its plan/ }).waitFor();
    assert.equal(await page.getByLabel("Epochs", { exact: true }).inputValue(), "20");
    assert.equal(await page.getByLabel("Seed").inputValue(), "");
    await shot("12b-launch-resume.png");
  });

  it("redraws the charts when their own suite finishes an epoch", async () => {
    await page.goto(`${server.url}#/charts/knobs`);
    const curve = page.getByTestId("loss-curve");
    // Drawn by ECharts (its first frame, before it, is a picture).
    await page.locator("[data-testid=loss-curve][data-interactive-at]").waitFor();
    const before = Number(await curve.getAttribute("data-points"));
    assert.equal(await curve.getAttribute("data-resets"), "1");
    // The reader zooms to the latest epochs; a new epoch must not undo it.
    await page.evaluate(() => window.attractorCharts["loss-curve"].dispatchAction({ type: "dataZoom", start: 50, end: 100 }));
    const resp = await fetch(`${server.url}api/launches`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ suite_path: join(fixtures, "knobs.suite.yaml"), epochs: 1, seed: 5 }),
    });
    assert.equal(resp.status, 202);
    // No reload: the epoch's event over SSE makes the screen refetch.
    await page.locator(`[data-testid=loss-curve][data-points="${before + 1}"]`).waitFor();
    // Updated in place: not drawn afresh (which replayed the entry animation
    // on every epoch), and the zoom is where the reader left it.
    await page.waitForFunction((n) => window.attractorCharts["loss-curve"].getOption().xAxis[0].data.length === n, before + 1);
    assert.equal(await curve.getAttribute("data-resets"), "1");
    const zoom = await page.evaluate(() => window.attractorCharts["loss-curve"].getOption().dataZoom[0].start);
    assert.equal(zoom, 50);
    const suites = await (await fetch(`${server.url}api/suites`)).json();
    assert.equal(suites.find((x) => x.name === "knobs").epochs, before + 1);
  });

  it("answers an intervention and moves it to the history", async () => {
    await page.goto(`${server.url}#/inbox`);
    assert.equal(await page.getByTestId("inbox-badge").innerText(), "1");
    const q = page.getByTestId("pending");
    await q.waitFor();
    assert.match(await q.innerText(), /Task ring found no feasible point/);
    assert.equal(await q.locator("h3 code").innerText(), "ring", "the task's name shown as code, not in backticks");
    await shot("13-inbox.png");
    await q.getByText("Answer with a hint…").click();
    await q.locator("textarea").fill("the box lies inside the circle: widen the bounds");
    await q.getByRole("button", { name: "Send hint" }).click();
    await page.getByTestId("answered").getByText("the box lies inside the circle").waitFor();
    assert.equal(await page.getByTestId("pending").count(), 0);
    await page.getByTestId("inbox-badge").waitFor({ state: "detached" });
    await shot("14-inbox-answered.png");
    const inbox = await (await fetch(`${server.url}api/interventions`)).json();
    assert.equal(inbox.answered[0].answer, "hint");
  });

  it("holds an optimizer's update in the Inbox with its diff and evidence until a person approves an edit of it, the run waiting", async () => {
    const path = ownSuite("gated");
    await page.goto(`${server.url}#/launch?path=${encodeURIComponent(path)}`);
    await page.getByText("✓ suite").waitFor();
    await page.getByLabel("Epochs", { exact: true }).fill("2");
    await page.getByLabel("Optimizer").selectOption("evolve");
    await page.getByText("More settings").click();
    await page.getByTestId("more-settings").getByLabel("Approve updates").selectOption("wait");
    await page.getByTestId("launch-plan").filter({ hasText: "waits in the Inbox for a person's approval, and the run with it" }).waitFor();
    await page.getByTestId("start").click();
    await page.waitForURL(/#\/live/);

    await page.goto(`${server.url}#/inbox`);
    const card = page.locator("[data-testid=pending][data-kind=artifact_update]");
    await card.waitFor();
    const id = await card.getAttribute("data-id");
    assert.match(await card.getByTestId("meanwhile").innerText(), /the run waits for your decision/);
    assert.match(await card.innerText(), /Why:/);
    // The title says which version it starts from and which it would become.
    assert.match(await card.getByTestId("update-title").innerText(), /^Update \w+: v(\d+) → v(\d+)\?$/);
    await card.getByTestId("diff").waitFor();
    // The suite says it waits on a person, and its epoch stays open.
    const suites = await (await fetch(`${server.url}api/suites`)).json();
    assert.equal(suites.find((x) => x.name === "gated").status, "paused");
    await shot("14b-inbox-update-approval.png");
    // Live, opened afresh, says the run waits for this answer and where to give it.
    await page.goto(`${server.url}#/live`);
    const waiting = page.locator("[data-testid=launch][data-suite=gated] [data-testid=waits-for-a-person]");
    await waiting.waitFor();
    assert.match(await waiting.innerText(), /Waiting for your answer: update `?\w+`? from v\d+/);
    assert.equal(await waiting.getByRole("link", { name: "answer in the Inbox" }).getAttribute("href"), "#/inbox");
    await shot("14a-live-waiting-for-approval.png");
    await page.goto(`${server.url}#/inbox`);
    await card.waitFor();

    // Edit the proposal: every field to 1.25 (inside every field's bounds).
    await card.getByRole("button", { name: "Edit…" }).click();
    const editor = card.locator("textarea");
    const proposed = JSON.parse(await editor.inputValue());
    const mine = JSON.stringify(Object.fromEntries(Object.keys(proposed).map((k) => [k, 1.25])));
    await editor.fill(mine);
    await shot("14c-inbox-update-edit.png");
    await card.getByRole("button", { name: "Approve my edit" }).click();
    await page.locator(`[data-testid=answered] tr[data-id="${id}"]`).waitFor();

    // Whatever epoch 2 proposes is rejected; the run then ends. Its
    // question reaches the open Inbox by the live feed alone (no reload).
    const deadline = Date.now() + WAIT;
    for (;;) {
      assert.ok(Date.now() < deadline, "the gated run did not end: a question it asked never showed in the open Inbox?");
      const launches = await (await fetch(`${server.url}api/launches`)).json();
      if (launches.find((l) => l.suite === "gated")?.status === "finished") break;
      const next = page.locator(`[data-testid=pending][data-kind=artifact_update]:not([data-id="${id}"])`);
      if ((await next.count()) > 0) {
        await next.getByRole("button", { name: "Reject…" }).click();
        await next.locator("textarea").fill("one change at a time");
        await next.getByRole("button", { name: "Reject the update" }).click();
        await next.waitFor({ state: "detached" });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const inbox = await (await fetch(`${server.url}api/interventions`)).json();
    const decided = inbox.answered.find((i) => String(i.id) === id);
    assert.equal(decided.update.status, "applied");
    assert.equal(decided.update.edited, true);
    const history = await (await fetch(`${server.url}api/artifacts/${decided.update.artifact}/versions`)).json();
    const applied = history.versions.find((v) => v.version === decided.update.applied_version);
    assert.equal(applied.content, mine, "the edit, not the proposal, became the version");
    // The history says what became of it in words, with the version.
    await page.locator(`[data-testid=answered] tr[data-id="${id}"]`)
      .filter({ hasText: `approved with your edit → became v${decided.update.applied_version}` })
      .waitFor();
    // No update question is left (another test's questions may be).
    await page.locator("[data-testid=pending][data-kind=artifact_update]").waitFor({ state: "detached" });
    // The proposals list credits the person's edit, not the optimizer's proposal.
    await page.goto(`${server.url}#/charts/gated`);
    await page.getByTestId("edited-by-person").first().waitFor();
  });

  it("shows runs a page of epochs at a time, with one status column and parts that add up to the loss, and a run's output and telemetry", async () => {
    await page.goto(`${server.url}#/runs/knobs`);
    const knobs = await (await fetch(`${server.url}api/suites/knobs/epochs`)).json();
    const newest = knobs.epochs.at(-1).epoch_num;
    assert.ok(knobs.epochs.length > 5, `knobs has ${knobs.epochs.length} epochs`);
    await page.locator(`[data-epoch='${newest}']`).waitFor();
    assert.equal(await page.locator(".card[data-epoch]").count(), 5, "the first page holds five epochs");
    const card = page.locator(`[data-epoch='${newest}']`);
    const headers = (await card.locator("thead tr").last().locator("th").allInnerTexts()).map((h) => h.trim().toLowerCase());
    assert.equal(headers.filter((h) => h === "status").length, 1, headers.join(", "));
    // Each part shows what it added: weight × component, and they add up to the loss.
    // (A run cancelled by an earlier test has no loss and no parts: "–".)
    let scored = 0;
    for (const row of await card.locator("tbody tr").all()) {
      const cells = (await row.locator("td").allInnerTexts()).map((c) => c.trim());
      if (cells[2] === "–") continue;
      const [loss, ...parts] = cells.slice(2, 8).map(Number);
      const sum = parts.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - loss) < 5e-4 * parts.length, `${cells.join(" | ")}: parts add up to ${sum}`);
      scored += 1;
    }
    assert.ok(scored >= 3, `only ${scored} scored runs in epoch ${newest}`);
    await shot("15-runs.png", true);
    // Epoch 1 is on the last page.
    const pager = page.getByTestId("pager").first();
    // A page is read from the server: wait for each to arrive before the next click.
    while (!(await page.locator("[data-epoch='1']").count())) {
      const at = await pager.locator("span").textContent();
      await pager.getByRole("button", { name: "Older →" }).click();
      await page.waitForFunction((was) => document.querySelector("[data-testid=pager] span")?.textContent !== was, at);
    }
    await page.locator("[data-epoch='1'] tbody a").first().click();
    const out = page.getByTestId("stdout");
    await out.waitFor();
    assert.match(await out.innerText(), /gain=1\.0000 offset=1\.5000/);
    await shot("16-run-detail.png");
    const inboxEpochs = await (await fetch(`${server.url}api/suites/inbox/epochs`)).json();
    await page.goto(`${server.url}#/runs/run/${inboxEpochs.epochs[0].runs[0].id}`);
    await page.locator("[data-testid=telemetry][data-settled-at]").waitFor();
    await shot("17-run-telemetry.png");
  });

  it("draws a numeric run's telemetry along the run, with two legend entries and the known optimum", async () => {
    const tune = await (await fetch(`${server.url}api/suites/tune/epochs`)).json();
    const run = tune.epochs[0].runs.find((r) => r.task === "g24");
    const detail = await (await fetch(`${server.url}api/runs/${run.id}`)).json();
    assert.ok(detail.telemetry.length >= 2, `${detail.telemetry.length} steps`);
    await page.goto(`${server.url}#/runs/run/${run.id}`);
    // The screen may still show the last run's chart: wait for this one's.
    await page.getByRole("heading", { name: new RegExp(`^Run ${run.id}:`) }).waitFor();
    await page.locator("[data-testid=telemetry][data-interactive-at]").waitFor();
    await page.waitForFunction((n) => window.attractorCharts.telemetry?.getOption().series.length === 2 * n, new Set(detail.telemetry.map((t) => t.trajectory_id)).size);
    const chart = await page.evaluate(() => {
      const o = window.attractorCharts.telemetry.getOption();
      return {
        legend: o.legend[0].data,
        reference: o.series[0].markLine?.data?.[0]?.yAxis,
        xs: o.series.filter((s) => s.name === "objective").flatMap((s) => s.data.map((d) => d.value[0])),
      };
    });
    assert.deepEqual(chart.legend, ["objective", "max violation"]);
    assert.equal(chart.reference, detail.result.reference);
    // Every step has its own place along the run, whichever trajectory took it.
    assert.equal(new Set(chart.xs).size, detail.telemetry.length);
    await shot("17b-numeric-telemetry.png");
  });

  it("shows the settings without ever showing a key, and tests the model connection", async () => {
    await page.goto(`${server.url}#/settings`);
    await page.getByTestId("api-key").waitFor();
    await page.getByRole("button", { name: "Test connection" }).click();
    // No model is configured for the e2e server: the check says how to set one.
    assert.match(await page.getByTestId("llm-check").innerText(), /no model is configured/);
    await shot("18-settings.png");
  });

  it("saves the model-call limits, and refuses one out of range with its name", async () => {
    await page.goto(`${server.url}#/settings`);
    await page.getByTestId("llm-limits").waitFor();
    await page.getByTestId("limit-timeout_secs").fill("300");
    await page.getByTestId("limit-tokens.proposer").fill("900");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText(/Saved to /).waitFor();
    const saved = await (await fetch(`${server.url}api/settings`)).json();
    assert.equal(saved.llm_limits.timeout_secs, 300);
    assert.equal(saved.llm_limits.max_tokens.proposer, 900);
    // Shown again after a reload, as saved.
    await page.reload();
    assert.equal(await page.getByTestId("limit-tokens.proposer").inputValue(), "900");
    await page.getByTestId("limit-attempts").fill("0");
    await page.getByTestId("limit-max_reply_bytes").fill("5");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    // The refusal is told at the field, in the form's words (not the
    // settings file's `attempts`) — at every field out of bounds, not only
    // the first the server checked.
    await page.getByTestId("wrong-attempts").filter({ hasText: "Attempts per call must be from 1 to 10" }).waitFor();
    assert.equal(await page.getByTestId("limit-attempts").getAttribute("aria-invalid"), "true");
    await page.getByTestId("wrong-max_reply_bytes").filter({ hasText: /must be from 1024/ }).waitFor();
    await page.getByTestId("limit-max_reply_bytes").fill("");
    assert.doesNotMatch(await page.locator(".error").last().innerText(), /\battempts must/);
    // The error hangs under its own field: the inputs beside it stay level.
    const tops = await page.evaluate(() =>
      ["timeout_secs", "attempts"].map((k) => document.querySelector(`[data-testid="limit-${k}"]`).getBoundingClientRect().top),
    );
    assert.equal(tops[0], tops[1], `the row's inputs are level (${tops})`);
    await shot("18b-settings-limits.png");
    // Text that is no number is named at its field, not sent as "the default".
    await page.getByTestId("limit-attempts").fill("");
    await page.getByTestId("limit-timeout_secs").fill("abc");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByTestId("wrong-timeout_secs").filter({ hasText: "“abc” is not a number" }).waitFor();
    assert.equal(await page.getByTestId("wrong-attempts").count(), 0);
    const kept = await (await fetch(`${server.url}api/settings`)).json();
    assert.equal(kept.llm_limits.timeout_secs, 300, "nothing was saved");
    // Put the limits back for the tests after this one.
    await page.getByTestId("limit-attempts").fill("");
    await page.getByTestId("limit-timeout_secs").fill("");
    await page.getByTestId("limit-tokens.proposer").fill("");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText(/Saved to /).waitFor();
  });

  it("saves model prices and a cost budget, and refuses a negative price with its model", async () => {
    await page.goto(`${server.url}#/settings`);
    await page.getByTestId("model-prices").waitFor();
    await page.getByTestId("price-add").click();
    await page.getByLabel("Model name").fill("big-model");
    await page.getByLabel("Input price of big-model").fill("3");
    await page.getByLabel("Output price of big-model").fill("15");
    await page.getByTestId("limit-max_cost").fill("2.5");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText(/Saved to /).waitFor();
    const saved = await (await fetch(`${server.url}api/settings`)).json();
    assert.deepEqual(saved.model_prices, { "big-model": { input_per_million: 3, output_per_million: 15 } });
    assert.equal(saved.llm_limits.max_cost, 2.5);
    await page.reload();
    assert.equal(await page.getByLabel("Output price of big-model").inputValue(), "15");
    await page.getByLabel("Input price of big-model").fill("-1");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByTestId("wrong-price-input").filter({ hasText: /^Input price of big-model must be/ }).waitFor();
    await shot("18c-settings-prices.png");
    // Back to no prices and no budget for the tests after this one.
    await page.getByRole("button", { name: "Remove", exact: true }).first().click();
    await page.getByTestId("limit-max_cost").fill("");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText(/Saved to /).waitFor();
    const reset = await (await fetch(`${server.url}api/settings`)).json();
    assert.deepEqual(reset.model_prices, {});
  });

  it("fits a 1280 px and a 900 px window on every screen: at 900 the sidebar becomes a top bar and wide tables scroll in their card", async () => {
    // A suite with a long name (names may have 128 characters): the suite
    // pickers list it and must not widen the page.
    const long = "a-suite-whose-name-goes-on-and-on-".repeat(4).slice(0, 120);
    const dir = join(work, "long");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "long.suite.yaml"), `name: ${long}\ntasks:\n  - name: t\n    command: |\n      echo '{"status": "complete"}' > "$ATTRACTOR_RESULT_FILE"\n`);
    const launched = await fetch(`${server.url}api/launches`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ suite_path: join(dir, "long.suite.yaml"), epochs: 1, seed: 1 }),
    });
    assert.equal(launched.status, 202);
    const { id } = await launched.json();
    for (;;) {
      const { status } = await (await fetch(`${server.url}api/launches/${id}`)).json();
      if (status === "finished") break;
      assert.ok(status === "queued" || status === "running", `the long-named suite's launch ${status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    try {
      for (const width of [1280, 900]) {
        await page.setViewportSize({ width, height: 800 });
        for (const route of ["suites", "launch", "live", "charts/knobs", "graph/knobs", "artifacts/knobs", "runs/knobs", "memory", "inbox", "watch", "settings"]) {
          await page.goto(`${server.url}#/${route}`);
          await page.locator("main h2").first().waitFor();
          await page.waitForLoadState("networkidle");
          // Every chart drawn to the end (its entry animation too), so the
          // picture is the screen as a person sees it, not a frame of it.
          await page.waitForFunction(() => [...document.querySelectorAll(".chart")].every((c) => c.dataset.settledAt));
          const layout = await page.evaluate(() => {
            const nav = document.querySelector(".nav").getBoundingClientRect();
            const main = document.querySelector(".main").getBoundingClientRect();
            const vw = document.documentElement.clientWidth;
            const over = [...document.querySelectorAll("body *")]
              .filter((e) => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > vw + 1)
              .map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
            return { page: document.documentElement.scrollWidth, vw, over, nav: { right: nav.right, bottom: nav.bottom }, main: { left: main.left, top: main.top } };
          });
          assert.ok(layout.page <= layout.vw, `#/${route} is ${layout.page} px wide in a ${layout.vw} px window: ${layout.over.slice(0, 3).join(", ")}`);
          if (width === 900) assert.ok(layout.nav.bottom <= layout.main.top + 1, `#/${route}: the navigation is a bar above the content`);
          else assert.ok(layout.nav.right <= layout.main.left + 1, `#/${route}: the sidebar sits beside the content`);
          await shot(`${width}-${route.replace("/", "-")}.png`);
        }
      }
    } finally {
      await page.setViewportSize({ width: 1360, height: 900 });
    }
  });

  it("moves between screens with keyboard shortcuts", async () => {
    await page.goto(`${server.url}#/charts/knobs`);
    await page.getByTestId("loss-curve").waitFor();
    await page.keyboard.press("i");
    await page.waitForURL(/#\/inbox$/);
    await page.keyboard.press("c");
    await page.waitForURL(/#\/charts\/knobs$/);
    await page.keyboard.press("?");
    await page.getByTestId("shortcuts").waitFor();
    await shot("19-shortcuts.png");
    await page.keyboard.press("Escape");
    await page.getByTestId("shortcuts").waitFor({ state: "detached" });
    // Typing in a field types; it does not navigate.
    await page.goto(`${server.url}#/launch`);
    await page.getByTestId("suite-path").fill("");
    await page.getByTestId("suite-path").type("i");
    assert.match(page.url(), /#\/launch$/);
  });

  it("names each screen in the window title, holds the keyboard in its dialogs, and keeps the shortcuts button at 900 px", async () => {
    await page.goto(`${server.url}#/charts/knobs`);
    await page.getByTestId("loss-curve").waitFor();
    await page.waitForFunction(() => document.title === "Charts · knobs — Attractor");
    await page.goto(`${server.url}#/inbox`);
    await page.waitForFunction(() => document.title === "Inbox — Attractor");

    // The help is a modal dialog: focus goes in, the page behind is inert,
    // Esc gives focus back to the button that opened it.
    await page.goto(`${server.url}#/suites`);
    const opener = page.getByTestId("keys-hint");
    await opener.click();
    const help = page.getByTestId("shortcuts");
    await help.waitFor();
    assert.equal(await help.getAttribute("aria-modal"), "true");
    assert.ok(await help.evaluate((d) => d.contains(document.activeElement)), "focus moved into the dialog");
    assert.equal(await page.locator("#root").getAttribute("inert"), "");
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press("Tab");
      assert.ok(await help.evaluate((d) => d.contains(document.activeElement) || document.activeElement === document.body), `Tab ${i + 1} left the dialog`);
    }
    await page.keyboard.press("Escape");
    await help.waitFor({ state: "detached" });
    assert.equal(await page.locator("#root").getAttribute("inert"), null);
    assert.ok(await opener.evaluate((b) => b === document.activeElement), "focus is back on the opener");

    // At 900 px the shortcuts button is still there, as "?".
    try {
      await page.setViewportSize({ width: 900, height: 800 });
      await page.goto(`${server.url}#/suites`);
      assert.ok(await opener.isVisible(), "the shortcuts button shows at 900 px");
      assert.equal((await opener.innerText()).trim(), "?");
    } finally {
      await page.setViewportSize({ width: 1360, height: 900 });
    }
  });

  it("draws status pills for a dark page in dark colours", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    try {
      await page.goto(`${server.url}#/suites`);
      const pill = page.locator("tr[data-suite=knobs] .badge").first();
      await pill.waitFor();
      // The pill's background, drawn over the dark page, must stay dark.
      const lightness = await pill.evaluate((el) => {
        const probe = document.createElement("canvas").getContext("2d");
        // The page's own background (the first opaque one up from the body).
        const page = [document.body, document.documentElement]
          .map((e) => getComputedStyle(e).backgroundColor)
          .find((c) => c !== "rgba(0, 0, 0, 0)" && c !== "transparent");
        probe.fillStyle = page ?? "#000";
        probe.fillRect(0, 0, 1, 1);
        probe.fillStyle = getComputedStyle(el).backgroundColor;
        probe.fillRect(0, 0, 1, 1);
        const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
        return (Math.max(r, g, b) + Math.min(r, g, b)) / 2 / 255;
      });
      assert.ok(lightness < 0.35, `the pill's background is light on a dark page (lightness ${lightness.toFixed(2)})`);
      await shot("19b-dark-suites.png");
    } finally {
      await page.emulateMedia({ colorScheme: null });
    }
  });

  it("asks a token-protected server with the token given once in the address", async () => {
    const bare = await fetch(`${tokenServer.url}api/suites`);
    assert.equal(bare.status, 401);
    const fresh = await context.newPage();
    await fresh.goto(`${tokenServer.url}?token=e2e-s3cret#/suites`);
    await fresh.locator("tr[data-suite=knobs]").waitFor({ timeout: WAIT });
    // Live updates authenticate too (EventSource passes the token in the query).
    await fresh.getByText("● live").waitFor({ timeout: WAIT });
    await fresh.close();
  });

  it("shows textgrad's proposals with predicted against observed loss reduction", async () => {
    await page.goto(`${textgradServer.url}#/charts/knobs`);
    const chart = page.getByTestId("proposal-calibration");
    await chart.waitFor();
    // Four epochs, winners at 1, 2 and 4 (the third call declined); the
    // winners of epochs 1 and 2 have a next epoch that measured them.
    assert.equal(await chart.getAttribute("data-points"), "2");
    const winners = page.locator("table.proposals tr.outcome-winner");
    assert.equal(await winners.count(), 3);
    await page.getByText("raise the gain towards the tasks' targets").first().waitFor();
    // The two measured winners say what their keep-or-roll-back saw, task by task.
    const evidence = page.getByTestId("decision-evidence");
    assert.equal(await evidence.count(), 2);
    for (const text of await evidence.allInnerTexts()) {
      assert.match(text, /^(kept|rolled back) on \d+ of \d+ pairs? better, \d+ worse; gain [+-]\d\.\d{4}/);
    }
    // Rejected proposals (here: the declined third call) are one click away.
    assert.equal(await page.locator("table.proposals tr.outcome-rejected").count(), 0);
    await page.getByText(/show the 1\s+rejected proposal/).click();
    await page.locator("table.proposals tr.outcome-rejected").first().waitFor();
    await page.getByText("the model proposed no change (`artifact` is empty)").first().waitFor();
    await chart.scrollIntoViewIfNeeded();
    await shot("21-proposals.png");
  });
  it("shows which examples of a dataset harness flipped between two epochs", async () => {
    const api = await (await fetch(`${textgradServer.url}api/suites/labels/flips?from=1&to=2`)).json();
    // Example i is right unless (i + epoch) % 3 == 0: train-2 and train-5 are
    // wrong in epoch 1, train-1 and train-4 in epoch 2; held-2 wrong in 1, held-1 in 2.
    assert.equal(api.compared, 8);
    assert.deepEqual(api.flips.map((f) => `${f.id}:${f.fixed ? "fixed" : "broken"}`), ["train-1:broken", "train-2:fixed", "train-4:broken", "train-5:fixed", "held-1:broken", "held-2:fixed"]);
    await page.goto(`${textgradServer.url}#/charts/labels`);
    const card = page.getByTestId("example-flips");
    await card.waitFor();
    assert.equal(await card.getByTestId("flip-counts").innerText(), "3 fixed, 3 broken");
    // The baseline optimizer changed nothing: the flips are the harness's own.
    assert.equal(await card.getByTestId("flip-versions").innerText(), "the same artifact versions");
    assert.equal(await card.locator("tr.flip-fixed").count(), 3);
    assert.equal(await card.locator("tr.flip-broken").count(), 3);
    await card.getByText("(held out)").first().waitFor();
    await card.getByText("labelled bug, expected billing").first().waitFor();
    // The same epoch on both sides: nothing flipped.
    await card.getByLabel("from epoch").selectOption("2");
    await card.getByTestId("flip-counts").getByText("0 fixed, 0 broken").waitFor();
    await card.getByLabel("from epoch").selectOption("1");
    await card.getByTestId("flip-counts").getByText("3 fixed, 3 broken").waitFor();
    await card.scrollIntoViewIfNeeded();
    await shot("21b-example-flips.png");
    // A suite whose harness lists no examples shows no such card.
    await page.goto(`${textgradServer.url}#/charts/knobs`);
    await page.getByTestId("proposal-calibration").waitFor();
    assert.equal(await page.getByTestId("example-flips").count(), 0);
  });

  it("refuses a page of another site that posts to the API, with or without a body", async () => {
    // A running launch to aim at: a form post needs no preflight, and the
    // cancel endpoint takes no body.
    const started = await fetch(`${server.url}api/launches`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ suite_path: join(fixtures, "knobs.suite.yaml"), epochs: 2 }),
    });
    const launch = await started.json();
    assert.equal(started.status, 202, JSON.stringify(launch));
    const evil = createServer((_, res) => {
      res.setHeader("content-type", "text/html");
      res.end(`<form id="f" method="post" action="${server.url}api/launches/${launch.id}/cancel"><input name="x" value="1"></form>
        <script>document.getElementById("f").submit()</script>`);
    });
    await new Promise((done) => evil.listen(0, "127.0.0.1", done));
    const other = await context.newPage();
    try {
      const posted = other.waitForResponse((r) => r.url().endsWith(`/api/launches/${launch.id}/cancel`));
      await other.goto(`http://127.0.0.1:${evil.address().port}/`);
      assert.equal((await posted).status(), 403);
      const view = await (await fetch(`${server.url}api/launches/${launch.id}`)).json();
      assert.equal(view.status, "running", "the launch was not cancelled by the other site");
    } finally {
      await other.close();
      evil.close();
      await fetch(`${server.url}api/launches/${launch.id}/cancel`, { method: "POST" });
      for (let i = 0; i < 600; i++) {
        const v = await (await fetch(`${server.url}api/launches/${launch.id}`)).json();
        if (v.status !== "running") break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });
});
