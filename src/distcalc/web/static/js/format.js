// Number formatting for the page (the CLI's units: GiB = 2^30 B, GB/s = 1e9 B/s).
export function fmtTime(s) {
  if (!isFinite(s)) return "-";
  const a = Math.abs(s);
  if (a >= 1) return s.toFixed(2) + " s";
  if (a >= 1e-3) return (s * 1e3).toFixed(1) + " ms";
  if (a >= 1e-6) return (s * 1e6).toFixed(1) + " µs";
  return (s * 1e9).toFixed(0) + " ns";
}
export function fmtSize(b) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return (i === 0 ? b.toFixed(0) : b.toFixed(b >= 100 ? 0 : 1)) + " " + units[i];
}
export function fmtRate(r) {
  if (!isFinite(r)) return "-";
  if (r >= 1e12) return (r / 1e12).toFixed(2) + " TB/s";
  if (r >= 1e9) return (r / 1e9).toFixed(1) + " GB/s";
  return (r / 1e6).toFixed(1) + " MB/s";
}
export const pct = (x) => (100 * x).toFixed(1) + " %";
export function esc(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}
