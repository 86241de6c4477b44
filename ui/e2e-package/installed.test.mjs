// The desktop app as a person gets it (issue 19, "Packaged"): the .deb that
// scripts/package.sh builds is installed on this machine with dpkg, the
// INSTALLED binary is started under a virtual X server for a person with a
// fresh home folder (so a fresh database, in its default place), its first
// screen is checked and photographed, and the package is removed again.
//
// Run as root (or with sudo at hand) with the package's path:
//   ATTRACTOR_DEB=$(scripts/package.sh | grep '\.deb$') npm run e2e:package
// The screenshot goes to E2E_SHOTS (default /tmp/attractor-e2e) as
// package-installed.png — look at it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openWindow, until } from "./window.mjs";

const deb = process.env.ATTRACTOR_DEB;
const shots = process.env.E2E_SHOTS ?? "/tmp/attractor-e2e";
const sudo = process.getuid() === 0 ? [] : ["sudo"];

/** Runs a command as root (directly when the test already is). */
const asRoot = (cmd, ...args) =>
  execFileSync(sudo.length ? "sudo" : cmd, sudo.length ? [cmd, ...args] : args, {
    encoding: "utf8",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    stdio: ["ignore", "pipe", "pipe"],
  });
const field = (name) => execFileSync("dpkg-deb", ["-f", deb, name], { encoding: "utf8" }).trim();
const installed = (pkg) => {
  try {
    return execFileSync("dpkg-query", ["-W", "-f=${Status}", pkg], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).includes("install ok installed");
  } catch {
    return false;
  }
};

// A person who never ran Attractor: a home folder of their own, the XDG
// folders in it, and no ATTRACTOR_* variable pointing anywhere else, so the
// app picks its default database (~/.local/share/attractor/attractor.db) and
// writes nothing outside this folder; no D-Bus session to reach the real one.
const work = mkdtempSync(join(tmpdir(), "attractor-package-e2e-"));
const home = join(work, "home");
const env = { ...process.env, HOME: home, XDG_DATA_HOME: join(home, ".local/share"), XDG_CONFIG_HOME: join(home, ".config"), XDG_CACHE_HOME: join(home, ".cache") };
for (const k of Object.keys(env)) if (k.startsWith("ATTRACTOR_") || k === "DBUS_SESSION_BUS_ADDRESS" || k === "XDG_RUNTIME_DIR") delete env[k];
const db = join(home, ".local/share/attractor/attractor.db");

/** The example suite the package installs and the first screen names. */
const example = "/usr/share/attractor/examples/descent.suite.yaml";

let pkg, binary, win;
/** Whether this test installed the package (only then does it remove it). */
let ours = false;

before(() => {
  assert.ok(deb, "ATTRACTOR_DEB is not set: build the package with scripts/package.sh and pass its .deb");
  assert.ok(existsSync(deb), `no package at ${deb}: build it with scripts/package.sh`);
  pkg = field("Package");
  const bins = execFileSync("dpkg-deb", ["-c", deb], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.match(/ (?:\.\/|\/)?(usr\/bin\/[^/\s]+)$/)?.[1])
    .filter(Boolean)
    .map((p) => `/${p}`);
  // The desktop app and its CLI twin.
  assert.deepEqual(bins.sort(), ["/usr/bin/attractor", "/usr/bin/attractor-desktop"], `the programs the package installs`);
  binary = "/usr/bin/attractor-desktop";
  // The test removes what it installs: a copy a person installed is not its to remove.
  assert.ok(!installed(pkg), `${pkg} is already installed here; the test would replace and then remove it: remove it first (dpkg -r ${pkg})`);
  mkdirSync(home, { recursive: true });
  mkdirSync(shots, { recursive: true });
  rmSync(join(shots, "package-installed.png"), { force: true });
});

after(async () => {
  await win?.close();
  // A failed run leaves nothing installed behind.
  if (ours && installed(pkg)) asRoot("dpkg", "-r", pkg);
  rmSync(work, { recursive: true, force: true });
});

describe("the installed .deb", () => {
  it("installs with dpkg: the program, its menu entry and its icons", () => {
    ours = true;
    try {
      asRoot("dpkg", "-i", deb);
    } catch {
      // dpkg leaves a package whose dependencies are missing unconfigured;
      // apt fetches them (WebKitGTK, GTK) and finishes the install.
      asRoot("apt-get", "install", "-f", "-y", "-qq", "--no-install-recommends");
    }
    assert.ok(installed(pkg), `${pkg} is installed`);
    assert.ok(existsSync(binary), `${binary} exists`);
    const files = execFileSync("dpkg", ["-L", pkg], { encoding: "utf8" }).split("\n");
    const desktop = files.find((f) => /^\/usr\/share\/applications\/.+\.desktop$/.test(f));
    assert.ok(desktop, "a .desktop file for the menus");
    assert.ok(files.some((f) => /^\/usr\/share\/icons\/hicolor\/.+\.png$/.test(f)), "icons in the hicolor theme");
    const entry = execFileSync("cat", [desktop], { encoding: "utf8" });
    assert.match(entry, new RegExp(`^Exec=${binary.split("/").pop()}\\b`, "m"), "the menu entry starts the installed program");
    assert.match(entry, /^Name=Attractor$/m);
  });

  it("starts from /usr/bin on a fresh database and shows the empty Suites screen", async () => {
    win = await openWindow({ binary, env });
    // The first screen asks the core for its suites; a fresh database has none.
    const empty = await win.find("[data-testid=empty]");
    assert.match(await win.text(empty), /^No suites yet/);
    assert.match(await win.text(await win.find("nav .brand")), /Attractor/);
    // It names the example the package installed, which the next test runs.
    assert.equal(await win.text(await win.find("[data-testid=first-example]")), example);
    const nav = await win.run(`return [...document.querySelectorAll("nav a")].map((a) => a.textContent)`);
    assert.deepEqual(nav.slice(0, 3), ["Suites", "Launch", "Live"]);
    // The bus's events reach the window (a Tauri listener), and the page is
    // the app's own files, not a server's.
    await until("the live feed", async () => /live/.test(await win.text(await win.find(".conn"))));
    assert.equal(await win.run("return location.protocol"), "tauri:");
    // The database the app made is the default one of this fresh home.
    assert.ok(existsSync(db), `a new database at ${db}`);

    // Two frames after the last change, so the picture is the current one.
    await win.runAsync("const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));");
    const png = await win.screenshot();
    const shot = join(shots, "package-installed.png");
    writeFileSync(shot, png);
    // A drawn window, not a blank one: a blank page is one colour.
    const colours = Number(execFileSync("identify", ["-format", "%k", shot], { encoding: "utf8" }));
    assert.ok(colours > 50, `the screenshot has ${colours} colours`);
    await win.close();
    win = null;
  });

  it("runs the example the first screen names with the installed CLI", () => {
    // What the empty Suites screen tells a newcomer to type, one epoch of it.
    const out = execFileSync("/usr/bin/attractor", ["run", example, "--epochs", "1", "--quiet", "--json"], { env, encoding: "utf8", cwd: home });
    const summary = JSON.parse(out);
    assert.equal(summary.suite, "descent-tuning");
    assert.ok(existsSync(db), "the run wrote to the same default database the app opened");
    const listed = execFileSync("/usr/bin/attractor", ["inspect"], { env, encoding: "utf8", cwd: home });
    assert.match(listed, /descent-tuning/);
  });

  it("is removed by dpkg -r, program and all", () => {
    asRoot("dpkg", "-r", pkg);
    assert.ok(!installed(pkg), `${pkg} is no longer installed`);
    assert.ok(!existsSync(binary), `${binary} is gone`);
    assert.ok(!existsSync("/usr/bin/attractor"), "the CLI is gone");
    assert.ok(!existsSync(example), "the examples are gone");
  });
});
