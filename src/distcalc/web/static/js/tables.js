// Headline numbers, the communication table and the CSV export.
import { esc, fmtRate, fmtSize, fmtTime, pct } from "./format.js";
import { BREAKDOWN } from "./charts.js";

function metric(id, label, text, value, cls = "") {
  return `<div class="metric ${cls}"><b id="${id}" data-value="${value}">${esc(text)}</b><span>${esc(label)}</span></div>`;
}

export function headline(r) {
  const m = r.memory;
  return metric("m-step", "step time", fmtTime(r.step_time_s), r.step_time_s) +
    metric("m-mfu", "MFU", pct(r.mfu), r.mfu) + metric("m-hfu", "HFU", pct(r.hfu), r.hfu) +
    metric("m-tokens", "tokens/s", Math.round(r.tokens_per_s).toLocaleString("en-US"), r.tokens_per_s) +
    metric("m-memory", "memory, worst stage", fmtSize(m.total_bytes), m.total_bytes, r.fits ? "good" : "bad") +
    metric("m-fits", `on ${r.cluster.gpu}`, r.fits ? "fits" : "does not fit", r.fits, r.fits ? "good" : "bad") +
    `<div class="metric"><b>${esc(r.model.name)}</b><span>${(r.model.parameters / 1e9).toFixed(1)}B · ` +
    `${r.cluster.gpus} GPUs · dp=${r.config.dp}</span></div>`;
}

const COMM_COLUMNS = [["dim", "l"], ["collective", "l"], ["phase", "l"], ["message", "l"], ["size", ""], ["count", ""],
  ["on link", ""], ["exposed", ""], ["algorithm", "l"], ["topology", "l"]];

export function commTable(r) {
  const head = COMM_COLUMNS.map(([c, cls]) => `<th class="${cls}">${c}</th>`).join("");
  const rows = r.communication.map((c) => `<tr data-exposed="${c.exposed_s}"><td class="l">${esc(c.dim)}</td>` +
    `<td class="l">${esc(c.collective)}</td><td class="l">${esc(c.phase)}</td><td class="l">${esc(c.note || "")}</td>` +
    `<td>${fmtSize(c.size_bytes)}</td><td>${c.count}</td><td>${fmtTime(c.time_s)}</td><td>${fmtTime(c.exposed_s)}</td>` +
    `<td class="l">${esc(c.algorithm)}</td><td class="l">${esc(c.topology)}</td></tr>`).join("");
  const groups = Object.entries(r.groups).filter(([, g]) => g.gpus > 1).map(([d, g]) =>
    `${d}: ${g.gpus} GPUs ${g.kind} (${g.tier}, ${fmtRate(g.inter_bandwidth_bytes_per_s || g.bandwidth_bytes_per_s)})`);
  return `<table><tr>${head}</tr>${rows}</table><div class="note">groups: ${esc(groups.join("; "))}</div>`;
}

const csvCell = (v) => (/[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));

// One CSV with three sections: the step-time breakdown, the communication rows, the memory per stage.
export function exportCsv(r, mem, memoryLines) {
  const lines = [["section", "name", "value", "unit"].join(",")];
  lines.push(["step", "step_time_s", r.step_time_s, "s"].join(","), ["step", "mfu", r.mfu, ""].join(","));
  for (const [k] of BREAKDOWN) lines.push(["breakdown", k, r.time_breakdown[k], "s"].join(","));
  lines.push("", ["dim", "collective", "phase", "note", "size_bytes", "count", "time_s", "exposed_s", "algorithm", "topology"].join(","));
  for (const c of r.communication) {
    lines.push([c.dim, c.collective, c.phase, c.note || "", c.size_bytes, c.count, c.time_s, c.exposed_s, c.algorithm, c.topology].map(csvCell).join(","));
  }
  lines.push("", ["stage", ...memoryLines.map(({ label }) => label), "total_bytes"].map(csvCell).join(","));
  for (const st of mem.memory.stages) {
    lines.push([st.stage, ...memoryLines.map(({ fields: f }) => f.reduce((a, k) => a + st[k], 0)), st.total_bytes].join(","));
  }
  return lines.join("\n") + "\n";
}
