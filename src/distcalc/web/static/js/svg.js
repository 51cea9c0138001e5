// Minimal SVG helpers: scales, axes, legends. Charts are drawn as inline SVG (no chart library, no network).
import { esc } from "./format.js";

export const PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#d69e2e",
  "#718096", "#e53e3e", "#4a5568", "#9f7aea", "#b7791f"];

export function attrs(map) {
  return Object.entries(map).map(([k, v]) => `${k}="${esc(v)}"`).join(" ");
}
export function frame(width, height, body) {
  return `<svg viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg">${body}</svg>`;
}
export function linear(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  return (v) => r0 + ((v - d0) / span) * (r1 - r0);
}
export function log2scale(d0, d1, r0, r1) {
  const l0 = Math.log2(d0), l1 = Math.log2(d1);
  return (v) => r0 + ((Math.log2(v) - l0) / ((l1 - l0) || 1)) * (r1 - r0);
}
// "Nice" ticks for a linear axis from 0 (or lo) to hi.
export function ticks(lo, hi, count = 5) {
  const raw = (hi - lo) / count || 1;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push(+v.toPrecision(12));
  return out;
}
export function yAxis(scale, values, x0, x1, label, fmt = (v) => String(v)) {
  let s = "";
  for (const v of values) {
    const y = scale(v);
    s += `<line x1="${x0}" x2="${x1}" y1="${y}" y2="${y}" stroke="#edf2f7"/>`;
    s += `<text x="${x0 - 4}" y="${y + 4}" text-anchor="end">${esc(fmt(v))}</text>`;
  }
  return s + `<text x="12" y="${(scale(values[0]) + scale(values[values.length - 1])) / 2}" text-anchor="middle"
    transform="rotate(-90 12 ${(scale(values[0]) + scale(values[values.length - 1])) / 2})">${esc(label)}</text>`;
}
export function legend(items, x, y, perRow = 3, colWidth = 150) {
  return items.map(([label, color], i) => {
    const cx = x + (i % perRow) * colWidth, cy = y + Math.floor(i / perRow) * 15;
    return `<rect x="${cx}" y="${cy - 9}" width="10" height="10" fill="${color}"/>` +
      `<text x="${cx + 14}" y="${cy}">${esc(label)}</text>`;
  }).join("");
}
