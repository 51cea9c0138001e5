// The calculator page: inputs → /api/analyze, /api/memory, /api/timeline, /api/collective → charts.
import { api } from "./api.js";
import { breakdownChart, busbwChart, memoryChart, timelineChart } from "./charts.js";
import { commTable, exportCsv, headline } from "./tables.js";
import { esc } from "./format.js";
import { initSearch } from "./search.js";
import { analyzeRequest, fromQuery, memoryRequest, readForm, toQuery, writeForm } from "./state.js";

const $ = (id) => document.getElementById(id);
const form = $("layout");
let presets = null, uploaded = null, last = null, generation = 0, timer = null;

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

function collectiveRequest(req) {
  const c = clusterOf(req.cluster), gpn = Number(req.gpus_per_node || c.gpus_per_node);
  const gbps = (bw, eff) => `${(bw * eff) / 1e9}GB/s`, us = (s) => `${s * 1e6}us`;
  const base = { kind: $("f-collective").value, size: "1KiB..4GiB", algorithm: "all" };
  const all = $("f-collective-dim").value === "cluster" && c.inter && Number(req.gpus) > gpn;
  if (!all) {
    return { ...base, topology: "switch", gpus: Math.min(gpn, Number(req.gpus) || gpn),
      bandwidth: gbps(c.intra.bandwidth_bytes_per_s, c.intra.efficiency), latency: us(c.intra.latency_s) };
  }
  return { ...base, topology: "hierarchical", gpus: Number(req.gpus), gpus_per_node: gpn,
    intra_bandwidth: gbps(c.intra.bandwidth_bytes_per_s, c.intra.efficiency), intra_latency: us(c.intra.latency_s),
    inter_bandwidth: gbps(c.inter.bandwidth_per_gpu_bytes_per_s, c.inter.efficiency), inter_latency: us(c.inter.latency_s) };
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
    $("chart-memory").innerHTML = memoryChart(memory);
    $("chart-breakdown").innerHTML = breakdownChart(report);
    $("chart-timeline").innerHTML = timelineChart(timeline);
    $("timeline-note").textContent = `first ${timeline.micro_batches_shown} of ${timeline.micro_batches} micro-batches, ${timeline.schedule}`;
    $("table-comm").innerHTML = commTable(report);
    await drawBusbw(req, mine);
  } catch (error) {
    if (mine !== generation) return;
    showValidity(error);
  }
}

async function drawBusbw(req, mine) {
  try {
    const coll = await api("/api/collective", collectiveRequest(req));
    if (mine === generation) $("chart-busbw").innerHTML = busbwChart(coll);
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
  presets = await api("/api/presets");
  const state = fromQuery(location.search);
  options($("f-model"), presets.models.map((m) => m.name), state.model);
  options($("f-cluster"), presets.clusters.map((c) => c.name), state.cluster);
  options($("f-gpu"), presets.gpus.map((g) => g.name), state.gpu);
  options($("f-collective"), presets.collectives.filter((k) => k !== "send-recv"), "all-reduce");
  writeForm(form, state);
  form.addEventListener("input", (e) => { if (e.target.id === "f-model") { uploaded = null; $("upload-note").textContent = ""; } schedule(); });
  $("f-upload").addEventListener("change", (e) => e.target.files[0] && upload(e.target.files[0]));
  $("f-collective").addEventListener("change", () => last && drawBusbw(last.request, generation));
  $("f-collective-dim").addEventListener("change", () => last && drawBusbw(last.request, generation));
  $("export-json").addEventListener("click", () => last && download("analyze.json", JSON.stringify(last.report, null, 2), "application/json"));
  $("export-csv").addEventListener("click", () => last && download("analyze.csv", exportCsv(last.report, last.memory), "text/csv"));
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
