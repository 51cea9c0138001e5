// The page's charts, each a pure function of an API response → SVG markup.
import { esc, fmtRate, fmtSize, fmtTime } from "./format.js";
import { PALETTE, attrs, frame, legend, linear, log2scale, ticks, yAxis } from "./svg.js";

const GIB = 2 ** 30;

// `lines`: the labelled lines of a memory breakdown from /api/memory-lines ({label, fields}), the same
// segments as `distcalc memory --plot`.
export function memoryChart(mem, lines) {
  const stages = mem.memory.stages, capacity = mem.gpu ? mem.gpu.memory_bytes : 0;
  const W = 520, H = 300, left = 48, right = 62, top = 52, bottom = 28;
  const maxBytes = Math.max(capacity, ...stages.map((s) => s.total_bytes)) * 1.08;
  const y = linear(0, maxBytes / GIB, H - bottom, top);
  const slot = (W - left - right) / stages.length, bw = Math.min(60, slot * 0.7);
  let body = yAxis(y, ticks(0, maxBytes / GIB), left, W - right, "GiB per GPU", (v) => v);
  stages.forEach((st, i) => {
    const x = left + i * slot + (slot - bw) / 2;
    let base = 0, parts = "";
    lines.forEach(({ label, fields }, k) => {
      const bytes = fields.reduce((a, f) => a + st[f], 0);
      if (bytes <= 0) return;
      const y0 = y((base + bytes) / GIB), h = y(base / GIB) - y0;
      parts += `<rect ${attrs({ x, y: y0, width: bw, height: h, fill: PALETTE[k % PALETTE.length], "data-segment": label,
        "data-bytes": bytes })}><title>stage ${st.stage} ${label}: ${fmtSize(bytes)}</title></rect>`;
      base += bytes;
    });
    const over = capacity && st.total_bytes > capacity;
    body += `<g class="stage" data-stage="${st.stage}" data-total="${st.total_bytes}">${parts}` +
      `<text x="${x + bw / 2}" y="${y(st.total_bytes / GIB) - 3}" text-anchor="middle"
        ${over ? 'style="fill:#c53030;font-weight:600"' : ""}>${fmtSize(st.total_bytes)}</text>` +
      `<text x="${x + bw / 2}" y="${H - bottom + 14}" text-anchor="middle">stage ${st.stage}</text></g>`;
  });
  if (capacity) {
    const yc = y(capacity / GIB);
    body += `<line class="capacity" x1="${left}" x2="${W - right}" y1="${yc}" y2="${yc}" stroke="#1a202c"
      stroke-dasharray="5 3" data-bytes="${capacity}"/>` +
      `<text x="${W - right + 4}" y="${yc - 2}">${esc(mem.gpu.name)}</text>` +
      `<text x="${W - right + 4}" y="${yc + 11}">${fmtSize(capacity)}</text>`;
  }
  body += legend(lines.map(({ label }, k) => [label, PALETTE[k % PALETTE.length]]), left, 12, 3, 150);
  return frame(W, H, body);
}

export const BREAKDOWN = [
  ["compute_s", "compute"], ["recompute_s", "recomputation"], ["tp_exposed_s", "TP collectives (exposed)"],
  ["cp_exposed_s", "CP exchange (exposed)"], ["ep_exposed_s", "EP all-to-all (exposed)"], ["pp_p2p_s", "PP send/recv"],
  ["bubble_s", "pipeline bubble"], ["dp_exposed_s", "DP collectives (exposed)"],
  ["embedding_sync_s", "tied-embedding sync"], ["optimizer_s", "optimizer step"],
];

export function breakdownChart(report) {
  const rows = BREAKDOWN.filter(([k]) => report.time_breakdown[k] > 0);
  const W = 520, rowH = 24, left = 170, right = 110, top = 8;
  const H = top + rows.length * rowH + 10, step = report.step_time_s;
  const x = linear(0, Math.max(...rows.map(([k]) => report.time_breakdown[k])), left, W - right);
  const body = rows.map(([key, label], i) => {
    const v = report.time_breakdown[key], yy = top + i * rowH;
    return `<g class="component" data-key="${key}" data-seconds="${v}">` +
      `<text x="${left - 6}" y="${yy + 15}" text-anchor="end">${esc(label)}</text>` +
      `<rect x="${left}" y="${yy + 3}" width="${Math.max(1, x(v) - left)}" height="${rowH - 8}" fill="${PALETTE[i % PALETTE.length]}"/>` +
      `<text x="${x(v) + 5}" y="${yy + 15}">${fmtTime(v)} (${(100 * v / step).toFixed(1)} %)</text></g>`;
  }).join("");
  return frame(W, H, body);
}

const KIND_COLOR = { F: "#63b3ed", B: "#f6ad55", W: "#9ae6b4", "F&B": "#b794f4" };

export function timelineChart(tl) {
  const W = 1040, laneH = 22, left = 60, right = 10, top = 6, axis = 24;
  const H = top + tl.stages * laneH + axis;
  const x = linear(0, tl.makespan_s, left, W - right);
  let body = "";
  for (let s = 0; s < tl.stages; s++) {
    body += `<text x="${left - 6}" y="${top + s * laneH + 15}" text-anchor="end">stage ${s}</text>`;
  }
  for (const e of tl.events) {
    const x0 = x(e.start_s), w = Math.max(0.5, x(e.end_s) - x0), yy = top + e.stage * laneH;
    body += `<rect class="op" ${attrs({ x: x0, y: yy + 2, width: w, height: laneH - 4, fill: KIND_COLOR[e.kind],
      stroke: "#fff", "stroke-width": 0.5, "data-kind": e.kind })}><title>${e.kind} mb ${e.micro_batch} chunk ${e.chunk}: ` +
      `${fmtTime(e.start_s)}–${fmtTime(e.end_s)}</title></rect>`;
    if (w > 14) body += `<text x="${x0 + w / 2}" y="${yy + 15}" text-anchor="middle" style="fill:#1a202c;font-size:9px">${e.micro_batch}</text>`;
  }
  for (const t of ticks(0, tl.makespan_s, 8)) {
    body += `<text x="${x(t)}" y="${H - 6}" text-anchor="middle">${t === 0 ? "0" : fmtTime(t)}</text>`;
  }
  return frame(W, H, body);
}

export function busbwChart(coll) {
  const sizes = coll.size_bytes, byAlg = {};
  for (const r of coll.results) (byAlg[r.algorithm] ||= []).push(r);
  const W = 1040, H = 260, left = 60, right = 160, top = 10, bottom = 30;
  const maxBw = Math.max(...coll.results.map((r) => r.busbw_bytes_per_s || 0)) / 1e9 * 1.1 || 1;
  const x = log2scale(sizes[0], sizes[sizes.length - 1], left, W - right), y = linear(0, maxBw, H - bottom, top);
  let body = yAxis(y, ticks(0, maxBw), left, W - right, "busbw GB/s", (v) => v);
  sizes.forEach((s, i) => { if (i % 2 === 0) body += `<text x="${x(s)}" y="${H - 10}" text-anchor="middle">${fmtSize(s)}</text>`; });
  Object.entries(byAlg).forEach(([alg, rows], k) => {
    const pts = rows.filter((r) => r.busbw_bytes_per_s != null).map((r) => `${x(r.size_bytes)},${y(r.busbw_bytes_per_s / 1e9)}`);
    body += `<polyline class="series" data-algorithm="${esc(alg)}" data-busbw="${esc(JSON.stringify(rows.map((r) => r.busbw_bytes_per_s)))}"
      points="${pts.join(" ")}" fill="none"
      stroke="${PALETTE[k % PALETTE.length]}" stroke-width="2"/>`;
    body += legend([[alg, PALETTE[k % PALETTE.length]]], W - right + 12, top + 12 + k * 16, 1);
  });
  return frame(W, H, body) + `<div class="note">${esc(coll.collective)} on ${esc(coll.topology.kind)} of
    ${coll.topology.gpus} GPUs; best at ${fmtSize(sizes[sizes.length - 1])}: ${fmtRate(Math.max(...coll.results
      .filter((r) => r.size_bytes === sizes[sizes.length - 1]).map((r) => r.busbw_bytes_per_s || 0)))}</div>`;
}

// Log-scale step time (the front spans orders of magnitude), memory axis from the front's smallest value.
export function paretoChart(points) {
  const W = 1040, H = 320, left = 60, right = 20, top = 10, bottom = 34;
  const mem = points.map((p) => p.memory_bytes / GIB), m0 = Math.min(...mem) * 0.97, m1 = Math.max(...mem) * 1.03;
  const ts = points.map((p) => p.step_time_s), t0 = Math.min(...ts) * 0.9, t1 = Math.max(...ts) * 1.1;
  const x = linear(m0, m1, left, W - right), ly = linear(Math.log10(t0), Math.log10(t1), H - bottom, top);
  const y = (t) => ly(Math.log10(t));
  const logTicks = [];
  for (let e = Math.floor(Math.log10(t0)); e <= Math.ceil(Math.log10(t1)); e++) {
    for (const m of [1, 2, 5]) { const v = m * 10 ** e; if (v >= t0 && v <= t1) logTicks.push(v); }
  }
  let body = yAxis(y, logTicks.length ? logTicks : [t0, t1], left, W - right, "step time (s, log)", (v) => +v.toPrecision(3));
  for (const t of ticks(m0, m1, 8)) body += `<text x="${x(t)}" y="${H - 16}" text-anchor="middle">${t}</text>`;
  body += `<text x="${(left + W - right) / 2}" y="${H - 2}" text-anchor="middle">memory per GPU (GiB)</text>`;
  points.forEach((p, i) => {
    body += `<circle class="point" ${attrs({ cx: x(p.memory_bytes / GIB), cy: y(p.step_time_s), r: 6, fill: PALETTE[0],
      "data-index": i })}><title>${esc(p.label)}: ${fmtTime(p.step_time_s)}, ${fmtSize(p.memory_bytes)}</title></circle>`;
  });
  return frame(W, H, body);
}
