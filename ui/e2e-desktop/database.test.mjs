// The desktop app started on a database it cannot open: a person who
// started it from a desktop menu has no terminal, so the reason must come
// in a window of its own. The app runs under a private virtual X server;
// `xwininfo` lists the windows there (the dialog is the toolkit's, with no
// webview to drive), and the screen is captured for a person to look at
// (E2E_SHOTS, default /tmp/attractor-e2e, desktop-database-error.png).
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { captureScreen, startXvfb, until } from "../e2e-package/window.mjs";

const targetDir = process.env.CARGO_TARGET_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "attractor/target");
const appBin = process.env.ATTRACTOR_DESKTOP_BIN ?? join(targetDir, "debug/attractor-desktop");
const shots = process.env.E2E_SHOTS ?? "/tmp/attractor-e2e";
const work = mkdtempSync(join(tmpdir(), "attractor-desktop-db-"));
let xvfb, app;

after(() => {
  app?.kill("SIGKILL");
  xvfb?.child.kill();
  rmSync(work, { recursive: true, force: true });
});

describe("the desktop app on a database it cannot open", () => {
  it("says why in a dialog, not only on a terminal nobody reads", async () => {
    // Not a SQLite file: what a wrong db_path or a damaged file gives.
    const broken = join(work, "broken.db");
    writeFileSync(broken, "this is a shopping list, not a database\n".repeat(200));
    xvfb = await startXvfb();
    let stderr = "";
    let exited = null;
    app = spawn(appBin, [], {
      env: { ...process.env, DISPLAY: xvfb.display, ATTRACTOR_DB: broken, ATTRACTOR_SETTINGS: join(work, "settings.json") },
      stdio: ["ignore", "ignore", "pipe"],
    });
    app.stderr.on("data", (d) => (stderr += d));
    app.on("exit", (code) => (exited = code));
    const windows = () => execFileSync("xwininfo", ["-display", xvfb.display, "-root", "-tree"], { encoding: "utf8" });
    await until("the dialog that says the app cannot start", () => {
      assert.equal(exited, null, `the app ended without a window (exit ${exited}): ${stderr}`);
      return windows().includes('"Attractor cannot start"');
    });
    mkdirSync(shots, { recursive: true });
    writeFileSync(join(shots, "desktop-database-error.png"), captureScreen(xvfb.display));
    // The terminal gets the same reason, with the file's path; no app window opened.
    await until("the reason on stderr", () => stderr.includes(broken));
    assert.doesNotMatch(windows(), /"Attractor"[^\n]*\n/, "no main window over a database that did not open");
    app.kill("SIGTERM");
  });
});
