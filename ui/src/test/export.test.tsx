// The Export action: names made safe the server's way, the browser's zip
// download, and the desktop app's folder question answered inline.
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { transport } from "../api";
import { ExportReport } from "../components/ExportReport";
import type { SuiteItem } from "../generated/SuiteItem";
import { attachmentName, reportSlug, suggestedReportDir } from "../lib/export";
import { suiteItem } from "./fixtures";

const suite: SuiteItem = suiteItem();

afterEach(() => {
  cleanup();
  clearMocks();
  delete (window as unknown as Record<string, unknown>).__TAURI_INTERNALS__;
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe("report names", () => {
  it("keep letters, digits, dash, underscore and dot, like the server's folder name", () => {
    expect(reportSlug("knobs")).toBe("knobs");
    expect(reportSlug("descent-tuning_v2.1")).toBe("descent-tuning_v2.1");
    expect(reportSlug("../../etc/passwd")).toBe("etc-passwd");
    expect(reportSlug("<script>")).toBe("script");
    expect(reportSlug("///")).toBe("suite");
    expect(suggestedReportDir("my suite")).toBe("~/attractor-reports/my-suite-report");
  });

  it("take the attachment's file name from the header, safely", () => {
    expect(attachmentName('attachment; filename="knobs-report.zip"', "x.zip")).toBe("knobs-report.zip");
    expect(attachmentName("attachment; filename=plain.zip", "x.zip")).toBe("plain.zip");
    expect(attachmentName('attachment; filename="../../evil.zip"', "x.zip")).toBe("evil.zip");
    expect(attachmentName(null, "fallback.zip")).toBe("fallback.zip");
    expect(attachmentName("inline", "fallback.zip")).toBe("fallback.zip");
  });
});

describe("Export in a browser", () => {
  it("downloads the zip the server offers and saves it under its name", async () => {
    const zip = new Uint8Array([0x50, 0x4b, 0x03, 0x04]);
    const fetchMock = vi.fn(
      async () =>
        new Response(zip, {
          status: 200,
          headers: { "Content-Type": "application/zip", "Content-Disposition": 'attachment; filename="knobs-report.zip"' },
        }),
    );
    vi.stubGlobal("fetch", fetchMock);
    const saved: { name: string; href: string }[] = [];
    vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function (this: HTMLAnchorElement) {
      saved.push({ name: this.download, href: this.href });
    });
    URL.createObjectURL = vi.fn(() => "blob:report");
    URL.revokeObjectURL = vi.fn();

    render(<ExportReport suite={suite} onError={(m) => { throw new Error(m); }} />);
    fireEvent.click(screen.getByTestId("export"));
    await waitFor(() => expect(saved).toEqual([{ name: "knobs-report.zip", href: "blob:report" }]));
    expect((fetchMock.mock.calls[0] as unknown as [string])[0]).toBe("/api/suites/3/report.zip");
    expect(screen.queryByTestId("export-folder")).toBeNull();
  });

  it("shows the server's message when the suite has nothing to report", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => new Response(JSON.stringify({ error: "suite `knobs` has no finished epoch yet", validation: null }), { status: 409 })),
    );
    const failure = await transport.reportZip(3, "knobs").catch((e: Error) => e);
    expect((failure as Error).message).toContain("no finished epoch");
    const errors: string[] = [];
    render(<ExportReport suite={suite} onError={(m) => errors.push(m)} />);
    fireEvent.click(screen.getByTestId("export"));
    await waitFor(() => expect(errors).toEqual(["Export of knobs: suite `knobs` has no finished epoch yet"]));
  });
});

describe("Export in the desktop app", () => {
  it("asks for a folder inline, then has the shell write the report there", async () => {
    const calls: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      return { suite: "knobs", dir: "/home/p/r", index: "/home/p/r/index.html", files: ["index.html"] };
    });
    render(<ExportReport suite={suite} onError={(m) => { throw new Error(m); }} />);
    fireEvent.click(screen.getByTestId("export"));
    const field = await screen.findByLabelText("Folder for the report");
    expect((field as HTMLInputElement).value).toBe("~/attractor-reports/knobs-report");
    expect(calls).toEqual([]);
    fireEvent.change(field, { target: { value: "/home/p/r" } });
    fireEvent.click(screen.getByText("Write report"));
    await screen.findByTestId("export-done");
    expect(calls).toEqual([["export_report", { key: "3", dir: "/home/p/r" }]]);
    expect(screen.getByTestId("export-done").textContent).toContain("/home/p/r/index.html");
    expect(screen.queryByTestId("export-folder")).toBeNull();
  });

  it("writes nothing when the question is cancelled", async () => {
    const calls: string[] = [];
    mockIPC((cmd) => {
      calls.push(cmd);
    });
    render(<ExportReport suite={suite} onError={(m) => { throw new Error(m); }} />);
    fireEvent.click(screen.getByTestId("export"));
    fireEvent.click(await screen.findByText("Cancel"));
    await waitFor(() => expect(screen.queryByTestId("export-folder")).toBeNull());
    await waitFor(() => expect((screen.getByTestId("export") as HTMLButtonElement).disabled).toBe(false));
    expect(calls).toEqual([]);
  });
});
