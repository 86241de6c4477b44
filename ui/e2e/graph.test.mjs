// End to end: the Graph view of a real tree search and the trajectory view of
// a real agent run, in Debian's Chromium against `attractor serve`.
// A person opens the suite's graph from the Suites screen, sees the
// experiment tree coloured by verdict, clicks a child, reads its losses
// against its parent and opens the diff it wrote; then opens an agent run and
// reads its trajectory iteration by iteration, and a run under the ASO
// coordinator (`supervision: aso`) with its supervisor's telemetry; and
// dismisses the notice a stuck trajectory left in the inbox.
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
import { baseEnv, bin, browser, checkPrerequisites, fixtures, scriptedModel, serve, shot } from "./harness.mjs";

const work = realpathSync(mkdtempSync(join(tmpdir(), "attractor-e2e-graph-")));
const env = baseEnv(work);
const db = join(work, "graph.db");
// Exit 4 (the suite ran, some runs failed) is a finished run too.
const run = (args, extra = {}) =>
  promisify(execFile)(bin, ["--db", db, ...args], { env: { ...env, KNOBS_DELAY: "0", ...extra } }).catch((e) => {
    if (e.code === 4) return e;
    throw e;
  });

let server, model, context, page;

before(async () => {
  checkPrerequisites();
  await run(["run", join(fixtures, "knobs.suite.yaml"), "--epochs", "8", "--optimizer", "tree", "--seed", "3", "--quiet"]);
  // An agent task: write `done` into answer.txt; the model gets it right at the second try.
  const ws = join(work, "ws");
  mkdirSync(ws, { recursive: true });
  writeFileSync(join(ws, "answer.txt"), "todo\n");
  writeFileSync(
    join(work, "agent.suite.yaml"),
    "name: answer\ntasks:\n  - name: write-it\n    kind: agent\n    task: Write the word done into answer.txt.\n    workspace: ws\n" +
      "    budget:\n      max_loops: 4\n    overseers:\n      - name: check\n        kind: test\n        command: \"echo 1..1; if grep -qx done answer.txt; then echo 'ok 1 - check'; else echo 'not ok 1 - check'; exit 1; fi\"\n",
  );
  writeFileSync(join(work, "agent.json"), JSON.stringify({ verifier: { enabled: false } }));
  // The same task under the ASO coordinator: its samples, each iteration
  // judged; the model tier (asked on events) answers CONTINUE.
  writeFileSync(
    join(work, "aso.suite.yaml"),
    "name: answer-aso\ntasks:\n  - name: write-it\n    kind: agent\n    supervision: aso\n    task: Write the word done into answer.txt.\n" +
      "    workspace: ws\n    budget:\n      max_loops: 6\n    overseers:\n      - name: check\n        kind: test\n        command: \"echo 1..1; if grep -qx done answer.txt; then echo 'ok 1 - check'; else echo 'not ok 1 - check'; exit 1; fi\"\n",
  );
  // A task the model never gets right: the trajectory stalls, and the
  // transition into a trouble attractor is told as a notice (the seed's
  // no-hint mode for it); the points that would pause are set to auto.
  writeFileSync(
    join(work, "stuck.suite.yaml"),
    "name: stuck\ntasks:\n  - name: never\n    kind: agent\n    task: Write the word never into stuck.txt.\n" +
      "    workspace: ws\n    budget:\n      max_loops: 5\n    overseers:\n      - name: check\n        kind: test\n        command: \"echo 1..1; if grep -qx never stuck.txt; then echo 'ok 1 - check'; else echo 'not ok 1 - check'; exit 1; fi\"\n",
  );
  writeFileSync(
    join(work, "unattended.json"),
    JSON.stringify({
      verifier: { enabled: false },
      engine: { interventions: { strategy_escalation: "auto", partial_result: "auto", human_escalation: "auto" } },
    }),
  );
  let edits = 0;
  model = await scriptedModel((req) => {
    if (req.messages[0].content.includes("Control schema")) {
      return JSON.stringify({ action: "CONTINUE", reasoning: "steady progress" });
    }
    if (req.messages.some((m) => m.content.includes("stuck.txt"))) {
      return JSON.stringify({ summary: "try", tools_used: [], edits: [{ path: "stuck.txt", action: "write", content: "not yet\n" }] });
    }
    edits += 1;
    const content = edits === 1 || edits === 3 ? "nearly\n" : "done\n";
    return JSON.stringify({ summary: "write the answer", tools_used: [], edits: [{ path: "answer.txt", action: "write", content }] });
  });
  const llm = { ATTRACTOR_LLM_BASE_URL: model.url, ATTRACTOR_LLM_MODEL: "scripted" };
  await run(["run", join(work, "agent.suite.yaml"), "--agent-config", join(work, "agent.json"), "--quiet"], llm);
  await run(["run", join(work, "aso.suite.yaml"), "--agent-config", join(work, "agent.json"), "--quiet"], llm);
  await run(["run", join(work, "stuck.suite.yaml"), "--agent-config", join(work, "unattended.json"), "--quiet"], llm);
  server = await serve(db, env);
  ({ context, page } = await browser(work));
});

after(async () => {
  await context?.close();
  server?.child.kill("SIGINT");
  model?.http.close();
  rmSync(work, { recursive: true, force: true });
});

/** Viewport centre of tree node `name` (`node-7`) as ECharts laid it out. */
async function nodeCentre(name) {
  return page.evaluate((n) => {
    const chart = window.attractorCharts["suite-graph"];
    const data = chart.getModel().getSeriesByIndex(0).getData();
    const idx = data.indexOfName(n);
    // The symbol's own origin, through the series' roam transform, in canvas pixels.
    const [x, y] = data.getItemGraphicEl(idx).transformCoordToGlobal(0, 0);
    const box = chart.getDom().getBoundingClientRect();
    return { x: box.left + x, y: box.top + y };
  }, name);
}

describe("the Graph view", () => {
  it("shows the experiment tree of a tree search and a node's details and diff", async () => {
    const graph = await (await fetch(`${server.url}api/suites/knobs/graph`)).json();
    assert.equal(graph.kind, "tree");
    await page.goto(`${server.url}#/suites`);
    await page.locator("tr", { hasText: "knobs" }).getByRole("link", { name: "Graph" }).click();
    await page.getByTestId("graph-suite").filter({ hasText: "knobs" }).waitFor();
    const chart = page.getByTestId("suite-graph");
    await chart.waitFor();
    assert.equal(Number(await chart.getAttribute("data-points")), graph.nodes.length);
    // The legend counts nodes by verdict; the counts add up to the tree.
    const legend = await page.getByTestId("graph-legend").innerText();
    const counted = [...legend.matchAll(/\((\d+)\)/g)].reduce((s, m) => s + Number(m[1]), 0);
    assert.equal(counted, graph.nodes.length, legend);
    await shot(page, "graph-tree.png", true);

    // Click a child that wrote a version: its panel compares it with its parent.
    const child = graph.nodes.find((n) => n.tree.parent_id !== null && n.tree.to_version !== null);
    assert.ok(child, "a tree search on knobs makes at least one evaluated child");
    const at = await nodeCentre(child.id);
    await page.mouse.click(at.x, at.y);
    const panel = page.getByTestId("node-panel");
    await panel.getByText(`Node #${child.tree.node_id}`).waitFor();
    const rows = panel.getByTestId("node-tasks").locator("tbody tr");
    assert.equal(await rows.count(), Object.keys(child.tree.task_losses).length);
    await panel.getByTestId("node-diff").click();
    const drawer = page.getByTestId("diff-drawer");
    await drawer.getByText(`knobs v${child.tree.from_version}→v${child.tree.to_version}`).waitFor();
    await shot(page, "graph-node-diff.png");
    await page.keyboard.press("Escape");

    // The version that child wrote names its node and verdict on the Artifacts screen, not "by hand".
    await page.goto(`${server.url}#/artifacts/knobs`);
    const version = page.locator(`tr[data-version="${child.tree.to_version}"]`);
    await version.getByText(`tree node #${child.tree.node_id} of knobs, epoch ${child.epoch_num} — ${child.tree.status}`).waitFor();
    assert.equal(await page.getByTestId("versions").getByText("by hand").count(), 0);

    // The suites list shows the best kept node's mean loss (the versions the
    // search made active), not the last candidate's; a discarded child is
    // no winner among the proposals.
    const kept = graph.nodes.filter((n) => ["committed", "pruned"].includes(n.tree.status));
    const best = Math.min(...kept.map((n) => n.mean_loss));
    const suites = await (await fetch(`${server.url}api/suites`)).json();
    assert.equal(suites.find((x) => x.name === "knobs").latest_mean_loss, best);
    await page.goto(`${server.url}#/suites`);
    const shown = await page.locator("tr[data-suite=knobs] td.num").nth(1).innerText();
    assert.equal(shown, best.toFixed(4));
    const proposals = await (await fetch(`${server.url}api/suites/knobs/proposals`)).json();
    const discardedEpochs = new Set(graph.nodes.filter((n) => n.tree.status === "discarded").map((n) => n.epoch_num));
    assert.ok(discardedEpochs.size > 0, "the search discarded some child");
    const wrongWinners = proposals.proposals.filter((p) => p.outcome === "winner" && discardedEpochs.has(p.epoch_num));
    assert.deepEqual(wrongWinners, []);
  });

  it("tells on the Charts screen that a tree search's epochs each measured a candidate, and which", async () => {
    await page.goto(`${server.url}#/charts/knobs`);
    const note = page.getByTestId("tree-timeline-note");
    await note.waitFor();
    assert.match(await note.innerText(), /A tree search measured these epochs/);
    // The loss curve's tooltip says which versions each epoch measured.
    await page.locator("[data-testid=loss-curve][data-interactive-at]").waitFor();
    const at = await page.evaluate(() => {
      const chart = window.attractorCharts["loss-curve"];
      const rect = document.querySelector("[data-testid=loss-curve]").getBoundingClientRect();
      const [x, y] = chart.convertToPixel({ seriesIndex: 0 }, [1, chart.getOption().series[0].data[1].value]);
      return { x: rect.left + x, y: rect.top + y };
    });
    await page.mouse.move(at.x, at.y);
    await page.locator(".chart-tip", { hasText: "tree search: evaluated" }).first().waitFor();
    await note.getByRole("link", { name: "Graph" }).click();
    await page.getByTestId("suite-graph").waitFor();
  });

  it("shows an agent run's trajectory iteration by iteration", async () => {
    const epochs = await (await fetch(`${server.url}api/suites/answer/epochs`)).json();
    const id = epochs.epochs[0].runs[0].id;
    await page.goto(`${server.url}#/runs/run/${id}`);
    const card = page.getByTestId("trajectory");
    await card.waitFor();
    assert.match(await card.innerText(), /converged/);
    assert.equal(Number(await page.locator("[data-testid^='trajectory-run']").first().getAttribute("data-points")), 2);
    await card.getByText("every iteration").click();
    const rows = card.getByTestId("trajectory-iterations").locator("tbody tr");
    assert.equal(await rows.count(), 2);
    assert.match(await rows.nth(1).innerText(), /converged/);
    await shot(page, "run-trajectory.png", true);
  });

  it("shows a supervised agent run's samples and its supervisor's telemetry", async () => {
    const epochs = await (await fetch(`${server.url}api/suites/answer-aso/epochs`)).json();
    const id = epochs.epochs[0].runs[0].id;
    const detail = await (await fetch(`${server.url}api/runs/${id}`)).json();
    assert.equal(detail.run.status, "complete");
    // One row per finished iteration: the winner's, and any sibling's that
    // finished before it was stopped (how many is the scheduler's call).
    const samples = detail.trajectories.filter((t) => t.role === "sample");
    const iterations = samples.reduce((n, t) => n + t.iterations, 0);
    assert.ok(detail.telemetry.length >= 1 && detail.telemetry.length <= iterations + samples.length, JSON.stringify(detail.telemetry));
    assert.ok(detail.telemetry.some((t) => t.directive_source === "convergence" && t.status === "FEASIBLE_FOUND"));
    await page.goto(`${server.url}#/runs/run/${id}`);
    const chart = page.getByTestId("telemetry");
    await chart.waitFor();
    assert.equal(Number(await chart.getAttribute("data-points")), detail.telemetry.length);
    await page.getByText("every step").click();
    const table = page.getByTestId("telemetry-steps");
    assert.match(await table.locator("thead").innerText(), /distance D[\s\S]*iterations/i);
    assert.equal(await table.locator("tbody tr").count(), detail.telemetry.length);
    // Three samples (the coordinator's n_trajectories), one of which converged.
    assert.equal(await page.getByTestId("trajectory").count(), detail.trajectories.length);
    assert.ok(detail.trajectories.filter((t) => t.role === "sample").length === 3, JSON.stringify(detail.trajectories.map((t) => t.role)));
    await shot(page, "run-supervised.png", true);
  });

  it("lists a stuck trajectory's notice in the inbox until it is dismissed", async () => {
    const inbox = await (await fetch(`${server.url}api/interventions`)).json();
    const notice = inbox.notices.find((n) => n.kind === "attractor_transition" && n.task === "never");
    assert.ok(notice, JSON.stringify(inbox.notices.map((n) => [n.kind, n.task])));
    await page.goto(`${server.url}#/inbox`);
    const card = page.locator(`[data-testid='notice'][data-id='${notice.id}']`);
    await card.waitFor();
    assert.match(await card.innerText(), /went on without waiting/);
    await shot(page, "inbox-notice.png", true);
    await card.getByRole("button", { name: "Dismiss" }).click();
    await card.waitFor({ state: "detached" });
    const history = page.getByTestId("answered").locator(`tr[data-id='${notice.id}']`);
    assert.match(await history.innerText(), /dismissed/);
    const after = await (await fetch(`${server.url}api/interventions`)).json();
    assert.ok(!after.notices.some((n) => n.id === notice.id));
  });
});
