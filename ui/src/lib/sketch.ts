// A chart's first frame drawn without ECharts: the same option, the part of
// it the app's charts use (fixed grids, a category axis along x, a value or
// category axis along y, lines, points and box plots), on a plain canvas.
//
// Why: ECharts' first run on a freshly loaded page is its code run for the
// first time — ~300 ms of the main thread for the Charts screen's three
// charts at 500 epochs × 50 tasks, on top of downloading and compiling its
// 650 KB. Drawn this way the picture is on screen at once, and ECharts —
// loaded meanwhile — draws over it with its tooltips, zoom and legends
// (components/EChart.tsx). Anything this file does not know (another series
// type, a value x-axis, a time axis) makes `sketch` decline, and that chart
// simply waits for ECharts. The look follows ECharts' default theme closely
// enough that the hand-over is a quiet one: same plot rectangle, same
// colours, the same "nice" axis steps.
import type { EChartsCoreOption } from "echarts/core";

type Rec = Record<string, unknown>;

/** ECharts' default theme's axis colours (light and dark). */
const THEME = {
  light: { label: "#6E7079", axis: "#6E7079", split: "#E0E6F1" },
  dark: { label: "#B9B8CE", axis: "#B9B8CE", split: "#484753" },
};
const FONT = "12px sans-serif";

/** The columns a first frame shows (0-based, inclusive): its zoom window's. */
export interface Columns {
  from: number;
  to: number;
}

/**
 * Draws `option` on `canvas` (sized to `width` × `height` CSS pixels) as
 * ECharts opens it — only the columns its zoom window shows — and says
 * which columns, or `null` when it could not (the canvas left empty).
 */
export function sketch(canvas: HTMLCanvasElement, option: EChartsCoreOption, width: number, height: number, dark = false): Columns | null {
  const plan = planOf(option as Rec);
  if (!plan || width <= 0 || height <= 0) return null;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.scale(ratio, ratio);
  ctx.font = FONT;
  draw(ctx, plan, width, height, dark ? THEME.dark : THEME.light);
  return { from: plan.x.from, to: plan.x.to };
}

/**
 * The columns `sketch` would draw of `option`, or `null` when it cannot draw
 * it (a part of it this file does not know).
 */
export function sketchable(option: EChartsCoreOption): Columns | null {
  const plan = planOf(option as Rec);
  return plan && { from: plan.x.from, to: plan.x.to };
}

interface Plan {
  grid: { left: number; right: number; top: number; bottom: number };
  /** The category axis; `from`–`to` (inclusive) the columns its zoom window opens on. */
  x: { labels: string[]; name?: string; split: boolean; from: number; to: number };
  y: { kind: "value"; scale: boolean; max?: unknown; format: (v: number) => string; name?: string } | { kind: "category"; labels: string[]; inverse: boolean; width: number };
  series: Rec[];
}

const first = (v: unknown): Rec | undefined => (Array.isArray(v) ? (v[0] as Rec | undefined) : (v as Rec | undefined));
const num = (v: unknown, fallback: number) => (typeof v === "number" ? v : fallback);

/** What the option asks for, when every part of it is one this file draws. */
function planOf(o: Rec): Plan | null {
  const grid = first(o.grid);
  const x = first(o.xAxis);
  const y = first(o.yAxis);
  const series = Array.isArray(o.series) ? (o.series as Rec[]) : [];
  if (!grid || !x || !y || x.type !== "category" || !Array.isArray(x.data)) return null;
  if (series.length === 0 || series.some((s) => !["line", "scatter", "boxplot"].includes(String(s.type)))) return null;
  const yPlan = yAxisPlan(y);
  if (!yPlan) return null;
  const labels = (x.data as unknown[]).map(String);
  // ECharts maps a zoom window's percentages onto the columns' indices and
  // rounds them (AxisProxy: 80 % of 500 columns opens on column 399).
  const zoom = first(o.dataZoom);
  const last = Math.max(0, labels.length - 1);
  const column = (percent: number) => Math.min(last, Math.max(0, Math.round((percent / 100) * last)));
  const from = column(num(zoom?.start, 0));
  const to = Math.max(from, column(num(zoom?.end, 100)));
  return {
    grid: { left: num(grid.left, 80), right: num(grid.right, 80), top: num(grid.top, 60), bottom: num(grid.bottom, 60) },
    x: { labels, name: x.name as string | undefined, split: !!(x.splitLine as Rec | undefined)?.show, from, to },
    y: yPlan,
    series,
  };
}

/** The y axis: a value scale (its labels as ECharts' formatter writes them) or named rows. */
function yAxisPlan(y: Rec): Plan["y"] | null {
  const label = (y.axisLabel ?? {}) as Rec;
  if (y.type === "value") {
    const f = label.formatter;
    const format =
      typeof f === "function" ? (v: number) => String((f as (v: number) => unknown)(v)) : typeof f === "string" ? (v: number) => f.replace("{value}", String(v)) : String;
    return { kind: "value", scale: !!y.scale, max: y.max, format, name: y.name as string | undefined };
  }
  if (y.type === "category" && Array.isArray(y.data)) return { kind: "category", labels: y.data.map(String), inverse: !!y.inverse, width: num(label.width, 100) };
  return null;
}

/** ECharts' "nice" step: 1, 2, 3, 5 or 10 times a power of ten (util/number.ts). */
export function niceStep(value: number): number {
  const exponent = Math.floor(Math.log10(value));
  const exp10 = 10 ** exponent;
  const f = value / exp10;
  const nf = f < 1.5 ? 1 : f < 2.5 ? 2 : f < 4 ? 3 : f < 7 ? 5 : 10;
  return exponent < 0 ? Number((nf * exp10).toFixed(-exponent)) : nf * exp10;
}

/**
 * ECharts' "nice" extent over `lo`–`hi`: a step for five-ish ticks, the ends
 * rounded out to it, and the rounding that keeps ticks free of float noise
 * (0.30000000000000004).
 */
export function niceExtent(lo: number, hi: number): { lo: number; hi: number; step: number; round: (v: number) => number } {
  const step = niceStep((hi - lo) / 5);
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  const round = (v: number) => Number(v.toFixed(Math.min(20, decimals)));
  return { lo: round(Math.floor(lo / step) * step), hi: round(Math.ceil(hi / step) * step), step, round };
}

/**
 * A value axis' ticks the way ECharts lays them out: five-ish nice steps
 * over the data's extent (from 0 unless `scale`), the ends rounded out to a
 * step, `max` (a number or a function of the extent) fixing the top.
 */
export function valueTicks(values: number[], scale: boolean, max?: unknown): number[] {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [0, 1];
  if (!scale) {
    lo = Math.min(lo, 0);
    hi = Math.max(hi, 0);
  }
  const fixed = typeof max === "function" ? (max as (e: { min: number; max: number }) => number | null)({ min: lo, max: hi }) : typeof max === "number" ? max : null;
  if (fixed !== null && fixed !== undefined) hi = fixed;
  // Flat data — or data a rounding error apart (a mean of three equal
  // losses), whose step would be too small to move a float — gets room.
  if (hi - lo <= 1e-9 * Math.max(1, Math.abs(hi))) {
    const pad = lo === 0 ? 1 : Math.abs(lo) / 2;
    lo -= pad;
    if (fixed === null || fixed === undefined) hi += pad;
  }
  const nice = niceExtent(lo, hi);
  const { step, round } = nice;
  const start = nice.lo;
  const end = fixed !== null && fixed !== undefined ? hi : nice.hi;
  const ticks: number[] = [];
  // Counted, not accumulated: at most a few dozen ticks, whatever the floats do.
  for (let k = 0; k <= 100; k++) {
    const v = round(start + k * step);
    if (v > end + step * 1e-9) break;
    ticks.push(v);
  }
  if (ticks.length === 0) ticks.push(start);
  if (fixed !== null && fixed !== undefined && ticks[ticks.length - 1] !== hi) ticks.push(hi);
  return ticks;
}

/** The y values a series puts on a value axis in columns `from`–`to` (what the zoom window shows). */
function seriesValues(s: Rec, from: number, to: number): number[] {
  const out: number[] = [];
  ((s.data as unknown[]) ?? []).forEach((d, i) => {
    const v = unwrap(d);
    if (Array.isArray(v) && s.type !== "boxplot") {
      if (typeof v[0] === "number" && v[0] >= from && v[0] <= to && typeof v[1] === "number") out.push(v[1]);
    } else if (i >= from && i <= to) {
      if (Array.isArray(v)) for (const x of v) typeof x === "number" && out.push(x);
      else if (typeof v === "number") out.push(v);
    }
  });
  return out;
}

type Colors = (typeof THEME)["light"];

function draw(ctx: CanvasRenderingContext2D, plan: Plan, width: number, height: number, c: Colors) {
  const { grid } = plan;
  const left = grid.left;
  const top = grid.top;
  const w = width - grid.left - grid.right;
  const h = height - grid.top - grid.bottom;
  if (w <= 0 || h <= 0) return;
  const { from, to } = plan.x;
  const band = w / (to - from + 1);
  const xAt = (i: number) => left + (i - from + 0.5) * band;
  const shown = (i: number) => i >= from && i <= to;

  // The y axis: a value scale or rows.
  let yAt: (v: number) => number;
  ctx.fillStyle = c.label;
  ctx.strokeStyle = c.split;
  ctx.lineWidth = 1;
  if (plan.y.kind === "value") {
    const ticks = valueTicks(
      plan.series.flatMap((s) => seriesValues(s, from, to)),
      plan.y.scale,
      plan.y.max,
    );
    const lo = ticks[0];
    const hi = ticks[ticks.length - 1];
    yAt = (v) => top + h - ((v - lo) / (hi - lo || 1)) * h;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const t of ticks) {
      const y = Math.round(yAt(t)) + 0.5;
      line(ctx, left, y, left + w, y);
      ctx.fillText(plan.y.format(t), left - 8, y);
    }
    if (plan.y.name) {
      ctx.textAlign = "center";
      ctx.textBaseline = "bottom";
      ctx.fillText(plan.y.name, left, top - 8);
    }
  } else {
    const rows = plan.y.labels;
    const rowH = h / Math.max(1, rows.length);
    const inverse = plan.y.inverse;
    yAt = (r) => top + ((inverse ? r : rows.length - 1 - r) + 0.5) * rowH;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    const width = plan.y.width;
    rows.forEach((label, r) => ctx.fillText(truncate(ctx, label, width), left - 8, yAt(r)));
    ctx.strokeStyle = c.axis;
    line(ctx, left + 0.5, top, left + 0.5, top + h);
  }

  // The x axis: its line, and as many category labels as fit.
  const every = labelInterval(ctx, plan.x.labels.slice(from, to + 1), band);
  ctx.strokeStyle = c.axis;
  line(ctx, left, Math.round(top + h) + 0.5, left + w, Math.round(top + h) + 0.5);
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillStyle = c.label;
  for (let i = from; i <= to; i += every) {
    const x = Math.round(xAt(i)) + 0.5;
    line(ctx, x, top + h, x, top + h + 5);
    ctx.fillText(plan.x.labels[i], x, top + h + 8);
    if (plan.x.split) {
      ctx.strokeStyle = c.split;
      line(ctx, x, top, x, top + h);
      ctx.strokeStyle = c.axis;
    }
  }
  if (plan.x.name) ctx.fillText(plan.x.name, left + w / 2, top + h + 24 - 6);

  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top - 8, w, h + 16);
  ctx.clip();
  for (const s of plan.series) {
    if (s.type === "line") drawLine(ctx, s, xAt, yAt, shown);
    else if (s.type === "scatter") drawScatter(ctx, s, xAt, yAt, shown);
    else drawBoxes(ctx, s, xAt, yAt, band, shown);
  }
  ctx.restore();
}

function line(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number) {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
}

/** Every how many columns a label fits (ECharts' automatic interval, roughly). */
function labelInterval(ctx: CanvasRenderingContext2D, labels: string[], band: number): number {
  const widest = Math.max(0, ...labels.map((l) => l.length));
  const room = ctx.measureText("0".repeat(widest)).width + 10;
  return Math.max(1, Math.ceil(room / band));
}

function truncate(ctx: CanvasRenderingContext2D, text: string, width: number): string {
  if (ctx.measureText(text).width <= width) return text;
  let cut = text;
  while (cut.length > 1 && ctx.measureText(`${cut}...`).width > width) cut = cut.slice(0, -1);
  return `${cut}...`;
}

type At = (v: number) => number;
type Shown = (column: number) => boolean;

/** A line series: its stroke (dashed or dotted as asked), then its symbols. */
function drawLine(ctx: CanvasRenderingContext2D, s: Rec, xAt: At, yAt: At, shown: Shown) {
  const data = (s.data as unknown[]) ?? [];
  const style = (s.lineStyle ?? {}) as Rec;
  const color = String(s.color ?? "#5470c6");
  ctx.strokeStyle = color;
  ctx.lineWidth = num(style.width, 2);
  ctx.setLineDash(style.type === "dashed" ? [5, 5] : style.type === "dotted" ? [1, 3] : []);
  ctx.beginPath();
  let open = false;
  data.forEach((d, i) => {
    const v = valueOf(d);
    if (v === null || !shown(i)) return void (open = false);
    if (open) ctx.lineTo(xAt(i), yAt(v));
    else ctx.moveTo(xAt(i), yAt(v));
    open = true;
  });
  ctx.stroke();
  ctx.setLineDash([]);
  if (s.symbol === "none") return;
  const size = num(s.symbolSize, 4);
  data.forEach((d, i) => {
    const v = valueOf(d);
    if (v === null || !shown(i)) return;
    const own = d !== null && typeof d === "object" ? (((d as Rec).itemStyle as Rec | undefined)?.color as string | undefined) : undefined;
    symbol(ctx, String(s.symbol ?? "emptyCircle"), xAt(i), yAt(v), size, own ?? color, color);
  });
}

/** A data item's value: ECharts takes `{value, itemStyle, …}` or the value itself. */
function unwrap(d: unknown): unknown {
  return d !== null && typeof d === "object" && !Array.isArray(d) ? (d as Rec).value : d;
}

function valueOf(d: unknown): number | null {
  const v = unwrap(d);
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** A scatter series of [column, value or row] points (a row's y is its centre, as a value's is its height). */
function drawScatter(ctx: CanvasRenderingContext2D, s: Rec, xAt: At, yAt: At, shown: Shown) {
  const size = num(s.symbolSize, 10);
  const offset = Array.isArray(s.symbolOffset) ? num(s.symbolOffset[0], 0) : 0;
  const item = (s.itemStyle ?? {}) as Rec;
  const color = String(s.color ?? "#5470c6");
  const fill = typeof item.color === "string" ? item.color : color;
  const stroke = typeof item.borderColor === "string" ? item.borderColor : undefined;
  for (const d of (s.data as unknown[]) ?? []) {
    if (!Array.isArray(d) || typeof d[0] !== "number" || typeof d[1] !== "number" || !shown(d[0])) continue;
    symbol(ctx, String(s.symbol ?? "circle"), xAt(d[0]) + offset, yAt(d[1]), size, fill, stroke, num(item.borderWidth, 0));
  }
}

/** A box plot: whiskers from the lowest to the highest, the box over the middle half, the median across. */
function drawBoxes(ctx: CanvasRenderingContext2D, s: Rec, xAt: At, yAt: At, band: number, shown: Shown) {
  const item = (s.itemStyle ?? {}) as Rec;
  const bounds = Array.isArray(s.boxWidth) ? s.boxWidth : [7, 50];
  const half = Math.max(num(bounds[0], 7), Math.min(num(bounds[1], 50), band / 2)) / 2;
  ctx.fillStyle = String(item.color ?? "#fff");
  ctx.strokeStyle = String(item.borderColor ?? s.color ?? "#5470c6");
  ctx.lineWidth = num(item.borderWidth, 1);
  ((s.data as unknown[]) ?? []).forEach((d, i) => {
    if (!shown(i) || !Array.isArray(d) || d.some((v) => typeof v !== "number")) return;
    const [lo, q1, med, q3, hi] = (d as number[]).map(yAt);
    const x = xAt(i);
    ctx.fillRect(x - half, q3, 2 * half, q1 - q3);
    ctx.strokeRect(x - half, q3, 2 * half, q1 - q3);
    ctx.beginPath();
    ctx.moveTo(x, q3);
    ctx.lineTo(x, hi);
    ctx.moveTo(x - half, hi);
    ctx.lineTo(x + half, hi);
    ctx.moveTo(x, q1);
    ctx.lineTo(x, lo);
    ctx.moveTo(x - half, lo);
    ctx.lineTo(x + half, lo);
    ctx.moveTo(x - half, med);
    ctx.lineTo(x + half, med);
    ctx.stroke();
  });
}

/** One symbol: a circle, a diamond or an SVG polygon (`path://M… L… Z`). */
function symbol(ctx: CanvasRenderingContext2D, kind: string, x: number, y: number, size: number, fill: string, stroke?: string, strokeWidth = 1) {
  const r = size / 2;
  ctx.beginPath();
  if (kind === "diamond") {
    ctx.moveTo(x, y - r);
    ctx.lineTo(x + r, y);
    ctx.lineTo(x, y + r);
    ctx.lineTo(x - r, y);
    ctx.closePath();
  } else if (kind.startsWith("path://")) {
    const pts = [...kind.slice(7).matchAll(/(-?[\d.]+),(-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
    const xs = pts.map((p) => p[0]);
    const ys = pts.map((p) => p[1]);
    const [x0, y0] = [Math.min(...xs), Math.min(...ys)];
    const k = size / Math.max(1, Math.max(...xs) - x0, Math.max(...ys) - y0);
    pts.forEach(([px, py], i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, x - r + (px - x0) * k, y - r + (py - y0) * k));
    ctx.closePath();
  } else {
    ctx.arc(x, y, r, 0, 2 * Math.PI);
  }
  if (kind === "emptyCircle") {
    ctx.fillStyle = "#fff";
    ctx.fill();
    ctx.strokeStyle = fill;
    ctx.lineWidth = 2;
    ctx.stroke();
    return;
  }
  if (fill !== "transparent") {
    ctx.fillStyle = fill;
    ctx.fill();
  }
  if (stroke && strokeWidth > 0) {
    ctx.strokeStyle = stroke;
    ctx.lineWidth = strokeWidth;
    ctx.stroke();
  }
}
