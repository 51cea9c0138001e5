// The calculator's inputs: defaults (the CLI's built-in example), form <-> request, and the URL query.
export const DEFAULTS = {
  model: "llama3-70b", cluster: "dgx-h100", gpu: "", gpus_per_node: "", intra_bandwidth: "", intra_latency: "",
  inter_bandwidth: "", inter_latency: "", gpus: 64, tp: 8, pp: 4, dp: "", cp: 1,
  ep: 1, vpp: 5, zero: 0, micro_batch: 1, global_batch: 128, seq_len: 8192, recompute: "none", schedule: "",
  dtype: "bf16", distributed_optimizer: true, sequence_parallel: true, flash_attention: true,
  account_for_embedding_and_loss: false,
};
const INTS = ["gpus_per_node", "gpus", "tp", "pp", "dp", "cp", "ep", "vpp", "zero", "micro_batch", "global_batch", "seq_len"];
const BOOLS = ["distributed_optimizer", "sequence_parallel", "flash_attention", "account_for_embedding_and_loss"];

export function readForm(form) {
  const state = {};
  for (const name of Object.keys(DEFAULTS)) {
    const el = form.elements[name];
    state[name] = BOOLS.includes(name) ? el.checked : el.value.trim();
  }
  return state;
}
export function writeForm(form, state) {
  for (const [name, value] of Object.entries(state)) {
    const el = form.elements[name];
    if (!el) continue;
    if (BOOLS.includes(name)) el.checked = !!value; else el.value = value;
  }
}
// Form state → the analyze request (empty optional fields are left to the CLI's defaults).
export function analyzeRequest(state, uploaded) {
  const req = {};
  for (const [name, value] of Object.entries(state)) {
    if (value === "" || value === null) continue;
    req[name] = INTS.includes(name) && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  if (uploaded) { req.model = uploaded.name; req.model_config_json = uploaded.config; }
  return req;
}
// The same layout as a memory request (memory takes the GPU, not the cluster).
export function memoryRequest(req, clusterGpu) {
  const out = { ...req, gpu: req.gpu || clusterGpu };
  for (const key of ["cluster", "gpus_per_node", "intra_bandwidth", "intra_latency", "inter_bandwidth", "inter_latency"]) delete out[key];
  return out;
}
export function toQuery(state) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (String(v) !== String(DEFAULTS[k])) params.set(k, v);
  return params.toString();
}
export function fromQuery(query) {
  const params = new URLSearchParams(query), state = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS)) {
    if (!params.has(k)) continue;
    state[k] = BOOLS.includes(k) ? params.get(k) === "true" : params.get(k);
  }
  return state;
}
