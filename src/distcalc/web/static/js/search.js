// The search tab: /api/search → Pareto scatter (click a point: load its layout) and the fastest rows.
import { api } from "./api.js";
import { paretoChart } from "./charts.js";
import { esc, fmtSize, fmtTime, pct } from "./format.js";

const LAYOUT_KEYS = ["gpus", "tp", "pp", "dp", "cp", "ep", "vpp", "zero", "micro_batch", "recompute", "schedule",
  "sequence_parallel", "account_for_embedding_and_loss"];

export function label(r) {
  const parts = [`TP${r.tp}`, `PP${r.pp}`, `DP${r.dp}`];
  if (r.cp > 1) parts.push(`CP${r.cp}`);
  if (r.ep > 1) parts.push(`EP${r.ep}`);
  if (r.vpp > 1) parts.push(`vpp${r.vpp}`);
  parts.push(`mb${r.micro_batch}`);
  if (r.zero) parts.push(`ZeRO-${r.zero}`);
  if (r.recompute !== "none") parts.push(`rc:${r.recompute}`);
  if (r.sequence_parallel) parts.push("SP");
  return parts.join(" ");
}

export function initSearch(presets, loadLayout) {
  const $ = (id) => document.getElementById(id), form = $("search-form");
  $("s-model").innerHTML = presets.models.map((m) => `<option>${esc(m.name)}</option>`).join("");
  $("s-cluster").innerHTML = presets.clusters.map((c) => `<option>${esc(c.name)}</option>`).join("");
  $("s-model").value = "gpt3-175b";
  $("s-cluster").value = "dgx-a100";
  let request = null;
  const load = (row) => {
    const layout = {};
    for (const k of LAYOUT_KEYS) layout[k] = row[k];
    loadLayout({ ...layout, model: request.model, cluster: request.cluster, global_batch: request.global_batch,
      seq_len: request.seq_len, distributed_optimizer: false, dp: row.dp });
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    request = { model: $("s-model").value, cluster: $("s-cluster").value, gpus: $("s-gpus").value.trim(),
      global_batch: Number($("s-global_batch").value), seq_len: Number($("s-seq_len").value),
      headroom: Number($("s-headroom").value), top: 10 };
    const status = $("search-status");
    status.className = "validity busy"; status.textContent = "searching…";
    try {
      const out = await api("/api/search", request);
      status.className = "validity ok";
      status.textContent = `${out.universe.toLocaleString("en-US")} combinations, ${out.evaluated.toLocaleString("en-US")} valid, ` +
        `${out.feasible.toLocaleString("en-US")} fit in memory; Pareto front ${out.pareto.length} points`;
      const points = out.pareto.map((r) => ({ ...r, label: label(r) }));
      $("chart-pareto").innerHTML = points.length ? paretoChart(points) : "no configuration fits";
      for (const c of document.querySelectorAll("#chart-pareto circle.point")) {
        c.addEventListener("click", () => load(points[Number(c.dataset.index)]));
      }
      $("table-search").innerHTML = `<table><tr><th>#</th><th class="l">configuration</th><th>step time</th><th>MFU</th>` +
        `<th>memory/GPU</th></tr>` + out.results.map((r, i) => `<tr class="pick" data-index="${i}"><td>${i + 1}</td>` +
        `<td class="l">${esc(label(r))}</td><td>${fmtTime(r.step_time_s)}</td><td>${pct(r.mfu)}</td>` +
        `<td>${fmtSize(r.memory_bytes)}</td></tr>`).join("") + "</table>";
      for (const tr of document.querySelectorAll("#table-search tr.pick")) {
        tr.addEventListener("click", () => load(out.results[Number(tr.dataset.index)]));
      }
    } catch (error) {
      status.className = "validity error"; status.textContent = "error: " + error.message;
    }
  });
}
