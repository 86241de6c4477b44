// End to end: the Watched Folders screen against the real `attractor serve`
// (its real folder watcher on a real temp folder), in Debian's Chromium.
// A person adds a folder, sees a valid file registered and an invalid one
// located to file:line:column, drops a task file that wants to run a command,
// reads that exact command in the inbox, approves it, and sees the run finish.
//
// Run with `npm run e2e` after `cargo build` and `npm run build` (see
// harness.mjs for ATTRACTOR_BIN, CHROMIUM and E2E_SHOTS).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { baseEnv, browser, checkPrerequisites, hostileFiles, serve, shot as save } from "./harness.mjs";

const work = realpathSync(mkdtempSync(join(tmpdir(), "attractor-e2e-watch-")));
const drop = join(work, "drop");
const marks = join(work, "marks");
const env = baseEnv(work);

let server, context, page;

const shot = (name) => save(page, name, true);

before(async () => {
  checkPrerequisites();
  mkdirSync(drop, { recursive: true });
  mkdirSync(marks, { recursive: true });
  writeFileSync(join(drop, "numbers.task.yaml"), "task: Minimise g06.\nproblem: g06\n");
  writeFileSync(join(drop, "broken.suite.yaml"), "name: broken\ntasks:\n  - name: a\n    problem: g06\n    weights: { eval: 7 }\n");
  server = await serve(join(work, "watch.db"), env);
  ({ context, page } = await browser(work));
});

after(async () => {
  await context?.close();
  server?.child.kill("SIGINT");
  rmSync(work, { recursive: true, force: true });
});

describe("the Watched Folders screen against a real watcher", () => {
  it("starts empty and says how to begin", async () => {
    await page.goto(`${server.url}#/watch`);
    const empty = page.getByTestId("empty");
    await empty.waitFor();
    assert.match(await empty.innerText(), /No watched folders yet[\s\S]*attractor watch DIR[\s\S]*task\.yaml/);
    await shot("w1-watch-empty.png");
  });

  it("adds a folder: a valid file is registered, an invalid one is located and left alone", async () => {
    await page.getByTestId("watch-path").fill(drop);
    await page.getByTestId("watch-add").click();
    const ok = page.locator('tr[data-file="numbers.task.yaml"]');
    await ok.waitFor();
    assert.equal(await ok.getAttribute("data-status"), "ready");
    const bad = page.locator('tr[data-file="broken.suite.yaml"]');
    assert.equal(await bad.getAttribute("data-status"), "invalid");
    const issues = await page.getByTestId("issues").innerText();
    assert.match(issues, new RegExp(`${join(drop, "broken.suite.yaml").replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:5:\\d+: .*outside \\[0, 1\\]`));
    assert.equal(readFileSync(join(drop, "broken.suite.yaml"), "utf8").includes("eval: 7"), true, "the file is not modified");
    await shot("w2-watch-folder.png");

    // The registered suite is on the Suites screen at once.
    await page.goto(`${server.url}#/suites`);
    await page.locator("tr[data-suite=numbers]").waitFor();
  });

  it("asks before a dropped file runs its command, shows exactly that command, and runs it once approved", async () => {
    await page.goto(`${server.url}#/watch`);
    await page.locator('tr[data-file="numbers.task.yaml"]').waitFor();
    const mark = join(marks, "mark.log");
    const command = `echo ran >> '${mark}' && echo '{"status": "complete", "eval_score": 1}' > run_completion.json`;
    writeFileSync(join(drop, "mark.task.yaml"), `run: auto\ntask: Leave a mark.\ncommand: >-\n  ${command}\n`);

    // It appears live, waiting for approval; nothing has run.
    const row = page.locator('tr[data-file="mark.task.yaml"][data-status="awaiting_approval"]');
    await row.waitFor();
    assert.equal(existsSync(mark), false);
    await page.getByTestId("inbox-badge").waitFor();
    await shot("w3-watch-awaiting.png");
    // Its suite says what it waits for, not "idle".
    const suites = await (await fetch(`${server.url}api/suites`)).json();
    const waiting = suites.filter((x) => x.status === "awaiting_approval").map((x) => x.name);
    assert.equal(waiting.length, 1, JSON.stringify(suites.map((x) => [x.name, x.status])));
    await page.goto(`${server.url}#/suites`);
    await page.locator(`tr[data-suite="${waiting[0]}"]`).getByText("awaiting approval", { exact: true }).waitFor();
    await page.goto(`${server.url}#/watch`);

    await row.getByTestId("to-inbox").click();
    await page.waitForURL(/#\/inbox$/);
    const question = page.getByTestId("pending").filter({ hasText: "mark.task.yaml" });
    await question.waitFor();
    const commands = question.getByTestId("commands");
    assert.equal(await commands.locator("pre").count(), 1);
    assert.equal(await commands.locator("pre").innerText(), command);
    assert.equal(await question.getByText("Answer with a hint…").count(), 0, "an approval is approve or reject");
    await shot("w4-inbox-approval.png");
    await question.getByRole("button", { name: "Approve" }).click();
    await page.getByTestId("inbox-badge").waitFor({ state: "detached" });

    await page.goto(`${server.url}#/watch`);
    await page.locator('tr[data-file="mark.task.yaml"][data-status="ready"]').getByText("finished", { exact: true }).waitFor();
    assert.equal(readFileSync(mark, "utf8"), "ran\n");
    await shot("w5-watch-ran.png");
  });

  it("shows every hostile file dropped in the folder as invalid at its place, and the watcher goes on", async () => {
    await page.goto(`${server.url}#/watch`);
    const cases = hostileFiles();
    mkdirSync(join(drop, "hostile"));
    for (const { file, path } of cases) copyFileSync(path, join(drop, "hostile", file));
    for (const { file, says } of cases) {
      const row = page.locator(`tr[data-file="hostile/${file}"][data-status="invalid"]`);
      await row.waitFor();
      if ((await page.getByTestId("issues").filter({ hasText: file }).count()) === 0) {
        await row.getByRole("button", { name: "Details" }).click();
      }
      const text = await page.getByTestId("issues").filter({ hasText: file }).innerText();
      for (const words of says) assert.ok(text.includes(words), `${file}: no \`${words}\` in ${text}`);
      assert.match(text, /hint: \S/, `${file}: no hint in ${text}`);
    }
    await shot("w6-watch-hostile.png");
    // Still watching: a good file dropped after them is registered.
    writeFileSync(join(drop, "after.task.yaml"), "task: Minimise g08.\nproblem: g08\n");
    await page.locator('tr[data-file="after.task.yaml"][data-status="ready"]').waitFor();
  });

  it("marks a deleted file removed and stops watching a folder on request", async () => {
    rmSync(join(drop, "numbers.task.yaml"));
    await page.locator('tr[data-file="numbers.task.yaml"][data-status="removed"]').waitFor();
    await page.getByRole("button", { name: "Stop watching" }).first().click();
    await page.getByRole("dialog").getByRole("button", { name: "Stop watching" }).click();
    await page.getByTestId("empty").waitFor();
    const watched = await (await fetch(`${server.url}api/watch`)).json();
    assert.deepEqual(watched.folders, []);
  });
});
