// End to end: the Memory screen over real agent trajectories, in Debian's
// Chromium against `attractor serve`.
//
// Real `attractor run`s of two small agent suites, against a scripted
// OpenAI-compatible model, leave trajectories and convergence memories in
// three task categories: `text-files` (two tasks that converge at once or
// at the second try), `config` (a task that exhausts its budget in the first
// epoch and converges in the second) and `general` (a task that sits on a
// plateau before it gets there), at two complexities. A person opens the
// screen with its shortcut, reads the numbers (checked against the API),
// filters by category and outcome, follows "Similar trajectories…" from a
// run's page and "similar…" from a memory, describes a task to compare, and
// sees the empty state of a database without agent runs.
//
// Run with `npm run e2e` after `cargo build` and `npm run build` (see
// harness.mjs for ATTRACTOR_BIN, CHROMIUM and E2E_SHOTS).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { baseEnv, bin, browser, checkPrerequisites, scriptedModel, serve, shot } from "./harness.mjs";

const work = realpathSync(mkdtempSync(join(tmpdir(), "attractor-e2e-memory-")));
const env = baseEnv(work);
const db = join(work, "memory.db");

let server, emptyServer, model, context, page;

/**
 * A test overseer's command: `check` (a shell condition) as one test in TAP,
 * so that the runner names it (output in no test format is no evidence).
 */
function tap(check) {
  return JSON.stringify(`echo 1..1; if ${check}; then echo 'ok 1 - check'; else echo 'not ok 1 - check'; exit 1; fi`);
}

/** An agent task of a suite file: `check` is the test overseer's shell condition. */
function task(name, workflow, text, workspace, loops, check) {
  return (
    `  - name: ${name}\n    kind: agent\n${workflow ? `    workflow: ${workflow}\n` : ""}    task: ${text}\n` +
    `    workspace: ${workspace}\n    budget:\n      max_loops: ${loops}\n` +
    `    overseers:\n      - name: check\n        kind: test\n        command: ${tap(check)}\n`
  );
}

/**
 * What the scripted model writes, per task (read from the prompt's `## Task:`
 * line) and per call of that task: write-done gets it right at the second
 * try, write-ready at once, config-port only from its fourth call (after the
 * first epoch's three-iteration budget ran out), greet at every fourth.
 */
function replies() {
  const calls = {};
  return (request) => {
    const name = request.messages.at(-1).content.match(/## Task: (\S+)/)?.[1] ?? "?";
    const n = (calls[name] = (calls[name] ?? 0) + 1);
    const [path, content] = {
      "write-done": ["answer.txt", n === 1 ? "nearly\n" : "done\n"],
      "write-ready": ["status.txt", "ready\n"],
      "config-port": ["config.ini", n > 3 ? "port=8080\n" : "port=80\n"],
      greet: ["greeting.txt", n % 4 === 3 ? "hello\n" : "hi\n"],
    }[name] ?? ["unknown.txt", "?\n"];
    return JSON.stringify({ summary: `wrote ${path}`, tools_used: [], edits: [{ path, action: "write", content }] });
  };
}

const api = async (path) => {
  const r = await fetch(`${server.url}api${path}`);
  assert.equal(r.status, 200, `${path}: ${r.status}`);
  return r.json();
};

/** The visible text of every element matching `selector` under `scope`. */
const texts = (scope, selector) => scope.locator(selector).allInnerTexts();

before(async () => {
  checkPrerequisites();
  for (const [dir, files] of [
    ["ws/text", { "answer.txt": "todo\n", "status.txt": "todo\n", "greeting.txt": "hi\n" }],
    ["ws/cfg", { "config.ini": "port=80\n" }],
  ]) {
    mkdirSync(join(work, dir), { recursive: true });
    for (const [name, content] of Object.entries(files)) writeFileSync(join(work, dir, name), content);
  }
  writeFileSync(
    join(work, "text.suite.yaml"),
    "name: memory-text\ntasks:\n" +
      task("write-done", "text-files", "Write the word done into answer.txt.", "ws/text", 4, "grep -qx done answer.txt") +
      task("write-ready", "text-files", "Write the word ready into status.txt.", "ws/text", 4, "grep -qx ready status.txt"),
  );
  writeFileSync(
    join(work, "config.suite.yaml"),
    "name: memory-config\ntasks:\n" +
      task("config-port", "config", "Set the port to 8080 in config.ini.", "ws/cfg", 3, "grep -qx port=8080 config.ini") +
      task("greet", null, "Write the word hello into greeting.txt.", "ws/text", 5, "grep -qx hello greeting.txt"),
  );
  writeFileSync(join(work, "simple.json"), JSON.stringify({ verifier: { enabled: false } }));
  writeFileSync(join(work, "moderate.json"), JSON.stringify({ verifier: { enabled: false }, complexity: "moderate" }));
  model = await scriptedModel(replies());
  const run = (suite, config) =>
    promisify(execFile)(bin, ["--db", db, "run", join(work, suite), "--agent-config", join(work, config), "--epochs", "2", "--quiet"], {
      env: { ...env, ATTRACTOR_LLM_BASE_URL: model.url, ATTRACTOR_LLM_MODEL: "scripted" },
    }).catch((e) => {
      // Exit 4: the suite ran and some runs failed (the fixtures' agents may).
      if (e.code === 4) return e;
      throw e;
    });
  await run("text.suite.yaml", "simple.json");
  await run("config.suite.yaml", "moderate.json");
  server = await serve(db, env);
  emptyServer = await serve(join(work, "empty.db"), env);
  ({ context, page } = await browser(work));
});

after(async () => {
  await context?.close();
  for (const s of [server, emptyServer]) s?.child.kill("SIGINT");
  model?.http.close();
  rmSync(work, { recursive: true, force: true });
});

describe("the Memory screen", () => {
  it("shows the trajectory repository's numbers and the memories as the API gives them", async () => {
    const stats = await api("/trajectories/stats");
    const memories = await api("/memories");
    assert.deepEqual(stats.categories.map((c) => c.category), ["config", "general", "text-files"]);
    assert.ok(memories.some((m) => m.outcome === "failure") && memories.some((m) => m.outcome === "success"), "both outcomes");

    // The shortcut opens it.
    await page.goto(`${server.url}#/suites`);
    // Connected to the live feed: the app's effects, the shortcuts among them, are in place.
    await page.locator(".conn.on").waitFor();
    await page.keyboard.press("m");
    await page.waitForURL(/#\/memory$/);
    const summary = page.getByTestId("memory-summary");
    await summary.waitFor();
    const finished = stats.categories.reduce((n, c) => n + c.finished, 0);
    const converged = stats.categories.reduce((n, c) => n + c.converged, 0);
    assert.equal(await summary.locator("[data-stat=finished] b").innerText(), String(finished));
    assert.equal(await summary.locator("[data-stat=converged] b").innerText(), String(converged));
    assert.match(await summary.locator("[data-stat=converged]").innerText(), new RegExp(`\\(${Math.round((100 * converged) / finished)}%\\)`));

    // Convergence by category, row by row.
    const categories = page.getByTestId("category-table");
    for (const c of stats.categories) {
      const cells = await texts(categories.locator(`tr[data-category="${c.category}"]`), "td");
      assert.equal(cells[0], c.category);
      assert.equal(cells[1], String(c.finished));
      assert.match(cells[2], new RegExp(`${Math.round(c.convergence_rate * 100)}%\\s*${c.converged}/${c.finished}`));
      assert.ok(cells.includes(c.mean_iterations.toFixed(1)), `${c.category}: ${cells}`);
    }

    // Strategy effectiveness, overall and per attractor.
    const strategies = page.getByTestId("strategy-table");
    assert.equal(await strategies.locator("tbody tr").count(), stats.strategies.length);
    for (const s of stats.strategies) {
      const row = strategies.locator(`tr[data-strategy="${s.strategy}"]`);
      const cells = await texts(row, "td");
      assert.equal(cells[1], String(s.uses), s.strategy);
      assert.equal(cells[4], String(s.tokens), s.strategy);
      if (s.success_rate === null) assert.match(cells[2], /unmeasured/);
      else assert.match(cells[2], new RegExp(`${Math.round(s.success_rate * 100)}%\\s*${s.successes}/${s.measured}`));
    }
    const matrix = page.getByTestId("strategy-matrix");
    assert.equal(await matrix.locator("td[data-cell]").count(), stats.strategies_by_attractor.length);

    // The two charts draw the API's numbers.
    const series = (id) => page.evaluate((i) => window.attractorCharts[i].getOption().series.map((s) => s.data), id);
    assert.deepEqual((await series("iterations-by-complexity"))[0], stats.by_complexity.map((c) => c.mean_iterations));
    assert.deepEqual(await series("attractor-distribution"), [
      [...stats.attractors].reverse().map((a) => a.trajectories),
      [...stats.attractors].reverse().map((a) => a.observations),
    ]);

    // Every memory, newest first, linked to its run.
    const list = page.getByTestId("memory");
    assert.equal(await list.count(), memories.length);
    assert.deepEqual(
      await list.evaluateAll((els) => els.map((e) => e.dataset.trajectory)),
      memories.map((m) => m.trajectory_id),
    );
    const failure = memories.find((m) => m.outcome === "failure");
    const card = page.locator(`[data-testid=memory][data-trajectory="${failure.trajectory_id}"]`);
    assert.equal(await card.getByRole("link", { name: failure.task_name }).getAttribute("href"), `#/runs/run/${failure.run_id}`);
    assert.match(await card.innerText(), /why/);
    await shot(page, "memory.png", true);

    await page.emulateMedia({ colorScheme: "dark" });
    await page.reload();
    await page.getByTestId("memory-summary").waitFor();
    await page.getByTestId("attractor-distribution").waitFor();
    await shot(page, "memory-dark.png", true);
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("filters by category and by outcome", async () => {
    await page.goto(`${server.url}#/memory`);
    await page.getByTestId("memory-summary").waitFor();
    await page.getByTestId("category-filter").selectOption("config");
    await page.waitForURL(/#\/memory\?category=config$/);
    const stats = await api("/trajectories/stats?category=config");
    const memories = await api("/memories?category=config");
    assert.equal(stats.categories.length, 1);
    await page.getByTestId("memories-card").getByText("of config").waitFor();
    const summary = page.getByTestId("memory-summary");
    await summary.locator("[data-stat=finished] b").filter({ hasText: String(stats.categories[0].finished) }).waitFor();
    const list = page.getByTestId("memory");
    await page.waitForFunction((n) => document.querySelectorAll("[data-testid=memory]").length === n, memories.length);
    assert.deepEqual(new Set(await list.evaluateAll((els) => els.map((e) => e.dataset.category))), new Set(["config"]));
    // The category's strategies only.
    assert.equal(await page.getByTestId("strategy-table").locator("tbody tr").count(), stats.strategies.length);

    const failures = memories.filter((m) => m.outcome === "failure").length;
    assert.ok(failures > 0, "config-port failed in its first epoch");
    await page.getByTestId("outcome-failure").click();
    assert.equal(await list.count(), failures);
    assert.deepEqual(new Set(await list.evaluateAll((els) => els.map((e) => e.dataset.outcome))), new Set(["failure"]));
    await page.getByTestId("outcome-all").click();

    // Clicking a category in the table switches the filter, clicking it again clears it.
    await page.getByTestId("category-table").getByRole("button", { name: "text-files" }).click();
    await page.waitForURL(/category=text-files$/);
    await page.getByTestId("category-table").getByRole("button", { name: "text-files" }).click();
    await page.waitForURL(/#\/memory$/);
  });

  it("lists the trajectories similar to a run's from its page, to a memory's, and to a described task", async () => {
    const memories = await api("/memories?category=config");
    const failure = memories.find((m) => m.outcome === "failure");
    await page.goto(`${server.url}#/runs/run/${failure.run_id}`);
    await page.getByTestId("trajectory").first().waitFor();
    await page.getByTestId("trajectory-similar").first().click();
    await page.waitForURL(new RegExp(`#/memory\\?trajectory=${failure.trajectory_id}$`));
    const similar = await api(`/trajectories/similar?trajectory_id=${failure.trajectory_id}&limit=10`);
    assert.ok(similar.items.length > 0, "config-port's second epoch did the same task");
    const card = page.getByTestId("similar");
    assert.equal(await card.getByTestId("similar-to").innerText(), failure.trajectory_id);
    assert.equal(await card.getByTestId("similar-description").innerText(), similar.description);
    const rows = card.getByTestId("similar-table").locator("tbody tr");
    await rows.first().waitFor();
    assert.deepEqual(await rows.evaluateAll((els) => els.map((e) => e.dataset.trajectory)), similar.items.map((s) => s.trajectory.id));
    const first = similar.items[0];
    const cells = await texts(rows.first(), "td");
    assert.match(cells[0], new RegExp(`${Math.round(first.similarity * 100)}%`));
    assert.equal(cells[3], first.trajectory.status);
    assert.equal(cells[6], first.shared_words.join(", "));
    assert.equal(await rows.first().getByRole("link").getAttribute("href"), `#/runs/run/${first.trajectory.run_id}`);
    await shot(page, "memory-similar.png");

    // From a memory of another category.
    const greet = (await api("/memories?category=general"))[0];
    await page.locator(`[data-testid=memory][data-trajectory="${greet.trajectory_id}"]`).getByTestId("memory-similar").click();
    await page.waitForURL(new RegExp(`trajectory=${greet.trajectory_id}$`));
    await card.getByTestId("similar-to").filter({ hasText: greet.trajectory_id }).waitFor();

    // A described task: the words it shares with the text-files tasks rank them.
    const input = card.getByRole("textbox", { name: "describe a task" });
    await input.fill("Write the word yes into answer.txt");
    await card.getByRole("button", { name: "Find" }).click();
    await page.waitForURL(/task=Write\+the\+word\+yes\+into\+answer\.txt$/);
    const byText = await api(`/trajectories/similar?task=${encodeURIComponent("Write the word yes into answer.txt")}&limit=10`);
    await card.getByTestId("similar-description").filter({ hasText: "Write the word yes into answer.txt" }).waitFor();
    await page.waitForFunction(
      (n) => document.querySelectorAll("[data-testid=similar-table] tbody tr").length === n,
      byText.items.length,
    );
    assert.equal(byText.items[0].trajectory.task_name, "write-done");
    assert.deepEqual(await rows.evaluateAll((els) => els.map((e) => e.dataset.trajectory)), byText.items.map((s) => s.trajectory.id));

    // A trajectory that does not exist: the error, in place.
    await page.goto(`${server.url}#/memory?trajectory=nope`);
    await card.getByRole("alert").filter({ hasText: "there is no trajectory `nope`" }).waitFor();
  });

  it("says what fills it on a database without agent runs", async () => {
    await page.goto(`${emptyServer.url}#/memory`);
    const empty = page.getByTestId("empty");
    // The hint names the example where the server found it (a checkout's
    // examples/ or an installed copy), once the overview has said so.
    const dir = (await (await fetch(`${emptyServer.url}api/overview`)).json()).examples_dir;
    assert.ok(dir, "the server finds the bundled examples");
    await empty.filter({ hasText: `attractor run ${dir}/agent.suite.yaml` }).waitFor();
    assert.match(await empty.innerText(), /Nothing remembered yet/);
    assert.equal(await page.getByTestId("memory-summary").count(), 0);
    await shot(page, "memory-empty.png");
  });
});
