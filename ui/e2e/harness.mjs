// What every end-to-end file needs: where the binary, the browser and the
// screenshots are, `attractor serve` on a free port, a headless Chromium, and
// a scripted OpenAI-compatible model server. Not a test file itself (the test
// runner only picks up `*.test.mjs`).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

export const root = resolve(import.meta.dirname, "../..");
const targetDir = process.env.CARGO_TARGET_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "attractor/target");
export const bin = process.env.ATTRACTOR_BIN ?? join(targetDir, "debug/attractor");
export const browserPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const shots = process.env.E2E_SHOTS ?? "/tmp/attractor-e2e";
export const fixtures = join(root, "tests/fixtures/app");
export const WAIT = 90_000;

/** The environment of every process a test starts, rooted in `work`. */
export function baseEnv(work) {
  const env = { ...process.env, ATTRACTOR_SETTINGS: join(work, "settings.json"), ATTRACTOR_RUNS_DIR: join(work, "runs") };
  delete env.ATTRACTOR_DB;
  delete env.ATTRACTOR_TOKEN;
  delete env.ATTRACTOR_LLM_MODEL;
  return env;
}

/** Fails early, with what to do, when a prerequisite is missing. */
export function checkPrerequisites() {
  assert.ok(existsSync(bin), `no attractor binary at ${bin}: run \`cargo build\` first (or set ATTRACTOR_BIN)`);
  assert.ok(existsSync(join(root, "ui/dist/index.html")), "no ui/dist: run `npm run build` first");
  assert.ok(existsSync(browserPath), `no Chromium at ${browserPath}: scripts/setup.sh installs it`);
  mkdirSync(shots, { recursive: true });
}

/** Starts `attractor serve` on a free port and resolves with its base URL. */
export function serve(database, env, extraArgs = []) {
  const child = spawn(bin, ["--db", database, "serve", "--port", "0", "--ui-dir", join(root, "ui/dist"), ...extraArgs], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
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

/** A headless Chromium with its profile under `work`, and its first page. */
export async function browser(work) {
  const context = await chromium.launchPersistentContext(join(work, "profile"), {
    executablePath: browserPath,
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(WAIT);
  page.on("pageerror", (e) => console.error("page error:", e.message));
  return { context, page };
}

/** Saves what a person sees (the whole page with `full`) once the charts settle. */
export async function shot(page, name, full = false) {
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(shots, name), fullPage: full });
}

/**
 * A scripted OpenAI-compatible chat server on loopback: `reply(request, n)`
 * gets the parsed request body and the call number (from 1) and returns the
 * assistant's message content. Resolves with the server and its `/v1` URL.
 */
export function scriptedModel(reply) {
  let calls = 0;
  const http = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const content = reply(JSON.parse(body), ++calls);
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({
        id: `x${calls}`, object: "chat.completion", model: "scripted",
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
        usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
      }));
    });
  });
  return new Promise((ok) => http.listen(0, "127.0.0.1", () => ok({ http, url: `http://127.0.0.1:${http.address().port}/v1` })));
}

/**
 * The hostile corpus (tests/hostile): each file with the words its refusal
 * must hold, as `expected.txt` lists them for the command line.
 */
export function hostileFiles() {
  const dir = join(root, "tests/hostile");
  const cases = readFileSync(join(dir, "expected.txt"), "utf8")
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("#"))
    .map((l) => {
      const [file, says] = l.split("\t");
      return { file, path: join(dir, file), says: says.split(" | ") };
    });
  if (cases.length < 10) throw new Error(`the hostile corpus has only ${cases.length} files`);
  return cases;
}
