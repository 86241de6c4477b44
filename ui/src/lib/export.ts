// Names for a suite's exported report: the file a browser saves and the
// folder the desktop app suggests. They follow the server's rule for the
// report's folder (crates/service/src/service/report `Report::folder_name`): letters, digits, `-`,
// `_` and `.` stay, anything else becomes `-`, so a suite name can never
// steer a path (`../`, a drive letter, a slash).

/** The suite's name as the report's folder and file names use it. */
export function reportSlug(suite: string): string {
  const slug = suite.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[-.]+|[-.]+$/g, "");
  return slug || "suite";
}

/**
 * The file name a `Content-Disposition: attachment; filename="…"` header
 * offers, made safe the same way; `fallback` when there is none.
 */
export function attachmentName(disposition: string | null, fallback: string): string {
  const m = disposition?.match(/filename\s*=\s*"([^"]*)"|filename\s*=\s*([^;\s]+)/i);
  const raw = m?.[1] ?? m?.[2];
  if (!raw) return fallback;
  const dot = raw.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [raw.slice(0, dot), raw.slice(dot + 1)] : [raw, ""];
  const safeExt = ext.replace(/[^A-Za-z0-9]/g, "");
  return safeExt ? `${reportSlug(stem)}.${safeExt}` : reportSlug(stem);
}

/** Where the desktop app proposes to write a suite's report. */
export function suggestedReportDir(suite: string): string {
  return `~/attractor-reports/${reportSlug(suite)}-report`;
}

/** Hands a downloaded file to the browser to save. */
export function saveFile(blob: Blob, fileName: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  // The click has started the download; the URL may go once it has been read.
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}
