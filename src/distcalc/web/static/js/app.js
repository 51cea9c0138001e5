// The calculator page: inputs → /api/analyze, /api/memory, /api/timeline, /api/collective → charts.
import { api } from "./api.js";
import { breakdownChart, busbwChart, memoryChart, timelineChart } from "./charts.js";
import { commTable, exportCsv, headline } from "./tables.js";
import { esc } from "./format.js";
import { initSearch } from "./search.js";
import { analyzeRequest, fromQuery, memoryRequest, readForm, toQuery, writeForm } from "./state.js";

const $ = (id) => document.getElementById(id);
const form = $("layout");
let presets = null, memoryLines = null, uploaded = null, last = null, generation = 0, timer = null;

function options(select, names, selected) {
  select.innerHTML += names.map((n) => `<option ${n === selected ? "selected" : ""}>${esc(n)}</option>`).join("");
}

function showValidity(error) {
  for (const el of form.querySelectorAll(".invalid")) el.classList.remove("invalid");
  const box = $("validity");
  $("results").classList.toggle("stale", !!error);  // charts below still show the last valid layout
  if (!error) { box.className = "validity ok"; box.textContent = "valid layout"; return; }
  box.className = "validity error";
  box.textContent = "error: " + error.message;
  box.dataset.field = error.field || "";
  for (const name of error.fields && error.fields.length ? error.fields : [error.field]) {
    const el = form.elements[name];
    if (el && el.classList) el.classList.add("invalid");
  }
}

function clusterOf(name) { return presets.clusters.find((c) => c.name === name); }

// Process groups to price the chosen collective on: one node of the cluster, or a parallel dimension's group
// as analyze placed it (its η·B and α, two tiers when it spans nodes): the numbers the step-time model uses.
function collectiveGroups(report) {
  const c = report.cluster, groups = [];
  const node = { kind: c.intra_topology === "torus" ? "torus" : "switch", gpus: c.gpus_per_node,
    bandwidth_bytes_per_s: c.intra.bandwidth_bytes_per_s * c.intra.efficiency, latency_s: c.intra.latency_s,
    shape: c.shape };
  groups.push(["node", `one node (${c.gpus_per_node} GPUs)`, node]);
  for (const [dim, g] of Object.entries(report.groups)) {
    if (g.gpus > 1) groups.push([dim, `${dim} group (${g.gpus} GPUs${g.nodes > 1 ? `, ${g.nodes} nodes` : ""})`, g]);
  }
  return groups;
}

function collectiveRequest(group) {
  const gbps = (bw) => `${bw / 1e9}GB/s`, us = (s) => `${s * 1e6}us`;
  const base = { kind: $("f-collective").value, size: "1KiB..4GiB", algorithm: "all", gpus: group.gpus };
  if (group.kind === "hierarchical") {
    return { ...base, topology: "hierarchical", gpus_per_node: group.members_per_node,
      intra_bandwidth: gbps(group.bandwidth_bytes_per_s), intra_latency: us(group.latency_s),
      inter_bandwidth: gbps(group.inter_bandwidth_bytes_per_s), inter_latency: us(group.inter_latency_s) };
  }
  const shape = group.kind === "torus" && group.shape ? { shape: group.shape.join("x") } : {};
  return { ...base, ...shape, topology: group.kind === "torus" ? "torus" : "switch",
    bandwidth: gbps(group.bandwidth_bytes_per_s), latency: us(group.latency_s) };
}

async function recompute() {
  const mine = ++generation, state = readForm(form);
  history.replaceState(null, "", "?" + toQuery(state));
  const req = analyzeRequest(state, uploaded);
  $("validity").className = "validity busy";
  $("validity").textContent = "computing…";
  try {
    const gpu = req.gpu || clusterOf(req.cluster).gpu;
    const [report, memory, timeline] = await Promise.all([
      api("/api/analyze", req), api("/api/memory", memoryRequest(req, gpu)), api("/api/timeline", req)]);
    if (mine !== generation) return;
    last = { request: req, report, memory };
    showValidity(null);
    $("headline").innerHTML = headline(report);
    $("chart-memory").innerHTML = memoryChart(memory, memoryLines);
    $("chart-breakdown").innerHTML = breakdownChart(report);
    $("chart-timeline").innerHTML = timelineChart(timeline);
    $("timeline-note").textContent = `first ${timeline.micro_batches_shown} of ${timeline.micro_batches} micro-batches, ${timeline.schedule}`;
    $("table-comm").innerHTML = commTable(report);
    const select = $("f-collective-group"), keep = select.value;
    last.groups = collectiveGroups(report);
    select.innerHTML = last.groups.map(([key, text]) => `<option value="${key}">${esc(text)}</option>`).join("");
    if (last.groups.some(([key]) => key === keep)) select.value = keep;
    await drawBusbw(mine);
  } catch (error) {
    if (mine !== generation) return;
    showValidity(error);
  }
}

async function drawBusbw(mine) {
  try {
    const group = last.groups.find(([key]) => key === $("f-collective-group").value) || last.groups[0];
    const coll = await api("/api/collective", collectiveRequest(group[2]));
    if (mine !== generation) return;
    $("chart-busbw").innerHTML = busbwChart(coll);
    $("chart-busbw").dataset.request = JSON.stringify(collectiveRequest(group[2]));
  } catch (error) {
    if (mine === generation) $("chart-busbw").textContent = "error: " + error.message;
  }
}

function schedule() { clearTimeout(timer); timer = setTimeout(recompute, 120); }

function download(name, text, type) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  document.body.appendChild(a); a.click(); a.remove();
}

async function exportYaml() {
  const out = await api("/api/config", last.request);
  download("run.yaml", out.yaml, "application/yaml");
  $("export-note").textContent = `reproduce with: ${out.command}`;
  $("export-note").dataset.yaml = out.yaml;
}

async function upload(file) {
  try {
    const config = JSON.parse(await file.text());
    uploaded = { name: file.name.replace(/\.json$/, "").replace(/^config$/, "uploaded"), config };
    $("upload-note").textContent = `using ${file.name} (not kept in the URL)`;
  } catch (error) {
    uploaded = null;
    $("upload-note").textContent = `cannot read ${file.name}: ${error.message}`;
  }
  recompute();
}

export function loadLayout(layout) {
  writeForm(form, { ...readForm(form), ...layout });
  document.querySelector('.tab[data-tab="calc"]').click();
  recompute();
}

async function main() {
  [presets, { lines: memoryLines }] = await Promise.all([api("/api/presets"), api("/api/memory-lines")]);
  const state = fromQuery(location.search);
  options($("f-model"), presets.models.map((m) => m.name), state.model);
  options($("f-cluster"), presets.clusters.map((c) => c.name), state.cluster);
  options($("f-gpu"), presets.gpus.map((g) => g.name), state.gpu);
  options($("f-collective"), presets.collectives.filter((k) => k !== "send-recv"), "all-reduce");
  writeForm(form, state);
  form.addEventListener("input", (e) => { if (e.target.id === "f-model") { uploaded = null; $("upload-note").textContent = ""; } schedule(); });
  $("f-upload").addEventListener("change", (e) => e.target.files[0] && upload(e.target.files[0]));
  $("f-collective").addEventListener("change", () => last && drawBusbw(generation));
  $("f-collective-group").addEventListener("change", () => last && drawBusbw(generation));
  $("export-json").addEventListener("click", () => last && download("analyze.json", JSON.stringify(last.report, null, 2), "application/json"));
  $("export-csv").addEventListener("click", () => last && download("analyze.csv", exportCsv(last.report, last.memory, memoryLines), "text/csv"));
  $("export-yaml").addEventListener("click", () => last && exportYaml());
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => {
      for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t === tab);
      for (const p of document.querySelectorAll(".pane")) p.classList.toggle("active", p.id === "pane-" + tab.dataset.tab);
    });
  }
  initSearch(presets, loadLayout);
  await recompute();
}

main();
