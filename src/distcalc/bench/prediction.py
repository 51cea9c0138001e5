"""What distcalc's analytic model says a ``bench training`` step sends, for comparison with the counts.

The bytes come from the SAME functions :mod:`distcalc.analyze` uses (:mod:`distcalc.traffic`), fed with the
bench model's dimensions and its parameter count from :func:`distcalc.model.params.layer_parameters`
(not from the torch module):

* dp: :func:`~distcalc.traffic.dp_gradient_messages` (ZeRO 0: one AllReduce of ``P·4`` bytes per step),
  per rank;
* tp: :func:`~distcalc.traffic.tp_layer_messages` per layer per micro-batch, × L × m, per rank;
* pp: :func:`~distcalc.traffic.pp_boundary_messages` per boundary per micro-batch: stage r sends the
  FORWARD message if it is not the last stage and the BACKWARD one if it is not the first; × m.

Totals are summed over ranks: ``Σ_ranks Σ_calls M`` (M in the NCCL convention; a Send/Recv counts once, on
the sending rank). float32 training: 4 bytes per element, gradient and parameter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.bench.training import TrainingConfig, TrainingMode

BYTES_PER_ELEMENT = 4  # float32 activations, gradients and parameters


def bench_model_spec(config: TrainingConfig) -> Any:
    """The :class:`~distcalc.model.ModelSpec` the bench layer implements (GPT-style, biases, LayerNorm)."""
    from distcalc.model import ModelSpec

    return ModelSpec(
        name="bench-layer", model_type="gpt2", hidden_size=config.hidden, num_hidden_layers=config.layers,
        num_attention_heads=config.heads, intermediate_size=config.ffn_size, vocab_size=1,
        hidden_act="gelu", gated_mlp=False, norm_type="layernorm", attention_qkv_bias=True,
        attention_out_bias=True, mlp_bias=True, position_embedding="none", tie_word_embeddings=True,
    )


def parameters_per_rank(config: TrainingConfig) -> int:
    """Analytic parameters one rank holds: all layers (dp), the TP shard ``(P − P_rep)/t + P_rep`` (tp),
    or L/N layers (pp)."""
    from distcalc.model import layer_parameters

    spec = bench_model_spec(config)
    layers = [layer_parameters(spec, i) for i in range(config.layers)]
    n = config.world_size
    if config.mode is TrainingMode.TP:
        return sum((p.total - p.replicated) // n + p.replicated for p in layers)
    if config.mode is TrainingMode.PP:
        return sum(p.total for p in layers) // n
    return sum(p.total for p in layers)


def predicted_messages(config: TrainingConfig) -> list[list[dict[str, Any]]]:
    """Per rank, the messages the model predicts for one step: ``{collective, size_bytes, count, phase}``
    with ``count`` already multiplied out to one step (zero-count messages dropped)."""
    from distcalc import traffic

    n, m, e = config.world_size, config.micro_batches, BYTES_PER_ELEMENT
    b, s, h = config.micro_batch, config.seq_len, config.hidden
    per_rank: list[list[tuple[Any, float]]] = [[] for _ in range(n)]
    if config.mode is TrainingMode.DP:
        messages = traffic.dp_gradient_messages(parameters_per_rank(config), n, 0, m, grad_bytes=e, param_bytes=e)
        per_rank = [[(msg, 1.0) for msg in messages] for _ in range(n)]
    elif config.mode is TrainingMode.TP:
        messages = traffic.tp_layer_messages(b, s, h, e, n, int(config.sequence_parallel), 0)
        per_rank = [[(msg, config.layers * m) for msg in messages] for _ in range(n)]
    else:
        messages = traffic.pp_boundary_messages(b, s, h, e, 1, n, 0)
        for rank in range(n):
            for msg in messages:
                sends_forward = msg.phase is traffic.Phase.FORWARD and rank < n - 1
                sends_backward = msg.phase is traffic.Phase.BACKWARD and rank > 0
                if msg.collective is traffic.Comm.SEND_RECV and (sends_forward or sends_backward):
                    per_rank[rank].append((msg, m))
    rows: list[list[dict[str, Any]]] = []
    for entries in per_rank:
        rank_rows = []
        for msg, factor in entries:
            count = float(np.asarray(msg.count)) * factor
            if count > 0 and float(np.asarray(msg.size_bytes)) > 0:
                rank_rows.append({"collective": msg.collective.value, "size_bytes": float(np.asarray(msg.size_bytes)),
                                  "count": count, "phase": msg.phase.value, "dim": msg.dim.value})
        rows.append(rank_rows)
    return rows


def predicted_totals(config: TrainingConfig) -> dict[str, Any]:
    """Predicted bytes and calls per rank and in total (see the module docstring)."""
    messages = predicted_messages(config)
    per_rank = [sum(row["size_bytes"] * row["count"] for row in rows) for rows in messages]
    calls = [sum(row["count"] for row in rows) for rows in messages]
    return {"bytes_per_rank": per_rank, "calls_per_rank": calls, "bytes": sum(per_rank), "calls": sum(calls),
            "parameters_per_rank": parameters_per_rank(config), "messages": messages}


def _as_int(value: float) -> int | float:
    return int(round(value)) if abs(value - round(value)) < 1e-9 * max(1.0, abs(value)) else value


def compare_training(config: TrainingConfig, rank_results: list[dict[str, Any]]) -> dict[str, Any]:
    """Counted (from every rank's :class:`~distcalc.bench.counting.CountingComm`) against predicted traffic.

    ``counted_bytes`` = Σ over ranks of M of every collective call and every Send (Recv is reported apart
    as ``received_bytes`` and must equal the sends). ``match`` is exact equality, per rank and in total.
    """
    predicted = predicted_totals(config)
    counted = [sum(r["bytes"] for r in res["counts"] if r["op"] != "recv") for res in rank_results]
    calls = [sum(r["calls"] for r in res["counts"] if r["op"] != "recv") for res in rank_results]
    received = sum(r["bytes"] for res in rank_results for r in res["counts"] if r["op"] == "recv")
    predicted_per_rank = [_as_int(x) for x in predicted["bytes_per_rank"]]
    predicted_calls = [_as_int(x) for x in predicted["calls_per_rank"]]
    times = sorted(rank_results[0]["step_times_s"])
    return {
        "mode": config.mode.value,
        "world_size": config.world_size,
        "counted_bytes": sum(counted),
        "predicted_bytes": _as_int(predicted["bytes"]),
        "match": counted == predicted_per_rank and calls == predicted_calls,
        "counted_bytes_per_rank": counted,
        "predicted_bytes_per_rank": predicted_per_rank,
        "counted_calls_per_rank": calls,
        "predicted_calls_per_rank": predicted_calls,
        "received_bytes": received,
        "parameters_per_rank": [res["parameters"] for res in rank_results],
        "predicted_parameters_per_rank": predicted["parameters_per_rank"],
        "step_time_s": times[len(times) // 2],
        "step_times_s": rank_results[0]["step_times_s"],
        "peak_memory_bytes": max(res["peak_memory_bytes"] for res in rank_results),
        "memory_method": rank_results[0]["memory_method"],
        "counts": [dict(row, rank=res["rank"]) for res in rank_results for row in res["counts"]],
        "predicted_messages": predicted["messages"][0],
    }


def _stage_layers(config: TrainingConfig) -> int:
    return config.layers // config.world_size if config.mode is TrainingMode.PP else config.layers


def predicted_memory_bytes(config: TrainingConfig) -> float:
    """Peak memory the model predicts for one rank: fp32 weights and gradients (4 + 4 bytes per parameter;
    plain SGD keeps no optimizer state) plus the stored activations of the micro-batches in flight
    (1 for dp/tp, where each micro-batch's backward runs before the next forward; all m on every GPipe stage),
    from :func:`distcalc.memory.activations.layer_activation_bytes` with flash attention (torch's CPU and
    CUDA SDPA kernels keep only the softmax statistics), no dropout, scaled from its 16-bit activations to
    float32 (×2)."""
    from distcalc.memory.activations import ACTIVATION_BYTES_16, layer_activation_bytes
    from distcalc.model.dims import model_dims

    dims = model_dims(bench_model_spec(config))
    tp = config.world_size if config.mode is TrainingMode.TP else 1
    stored, _ = layer_activation_bytes(dims, False, config.seq_len, config.micro_batch, tp, 1,
                                       config.sequence_parallel, 0, True)
    in_flight = config.micro_batches if config.mode is TrainingMode.PP else 1
    activations = float(stored) * (BYTES_PER_ELEMENT / ACTIVATION_BYTES_16) * _stage_layers(config) * in_flight
    return 2.0 * BYTES_PER_ELEMENT * parameters_per_rank(config) + activations


def _compute_time_s(config: TrainingConfig, compute: dict[str, Any]) -> float:
    """GEMM time of one micro-batch's forward + backward on one rank with the calibrated GEMM model
    (:func:`distcalc.compute.device.gemm_time_s`): the layer GEMMs of :func:`distcalc.bench.gemm.layer_shapes`
    plus the attention score and context GEMMs, backward = 2 × forward (input and weight gradients).
    Non-GEMM work (norms, softmax, GeLU, autograd) is not modelled."""
    from distcalc.bench.gemm import GemmConfig, layer_shapes
    from distcalc.compute.device import DeviceCompute, gemm_time_s

    constants, fitted = compute["device_constants"], compute["parameters"]
    device = DeviceCompute(name=constants["name"], peak_flops_per_s=constants["peak_flops_per_s"],
                           hbm_bandwidth_bytes_per_s=constants["hbm_bandwidth_bytes_per_s"],
                           sm_count=constants["sm_count"], l2_bandwidth_bytes_per_s=constants["l2_bandwidth_bytes_per_s"],
                           flash_forward_efficiency=0.0, flash_backward_efficiency=0.0, **fitted)
    tp = config.world_size if config.mode is TrainingMode.TP else 1
    tokens = config.micro_batch * config.seq_len
    shapes = GemmConfig(hidden=config.hidden, ffn=config.ffn_size, heads=config.heads, tp=tp, tokens=[tokens])
    forward = sum(float(gemm_time_s(1, m, n, k, device, BYTES_PER_ELEMENT, BYTES_PER_ELEMENT))
                  for _, m, n, k in layer_shapes(shapes, tokens))
    d, s, batch = config.hidden // config.heads, config.seq_len, config.micro_batch * config.heads // tp
    forward += float(gemm_time_s(batch, s, s, d, device, BYTES_PER_ELEMENT, BYTES_PER_ELEMENT))
    forward += float(gemm_time_s(batch, s, d, s, device, BYTES_PER_ELEMENT, BYTES_PER_ELEMENT))
    return 3.0 * forward * _stage_layers(config)


def _communication_time_s(config: TrainingConfig, calibration: Any, backend: str) -> float:
    """Σ count × cost of the predicted messages on the busiest rank, each collective on an ideal switch of N
    ranks with the calibration's α and B for that collective (:func:`distcalc.calibration.calibrated_topology`)."""
    from distcalc.calibration import calibrated_topology
    from distcalc.calibration.collectives import BACKEND_ALGORITHMS
    from distcalc.collective import collective_cost
    from distcalc.p2p import send_recv_cost
    from distcalc.topology import make_topology

    base = make_topology("switch", config.world_size)
    algorithms = BACKEND_ALGORITHMS.get(backend, BACKEND_ALGORITHMS["gloo"])
    busiest = 0.0
    for rows in predicted_messages(config):
        total = 0.0
        for row in rows:
            topo = calibrated_topology(base, row["collective"], calibration, row["size_bytes"])
            if row["collective"] == "send-recv":
                cost = send_recv_cost(row["size_bytes"], topo, 0, 1)
            else:
                cost = collective_cost(row["collective"], row["size_bytes"], topo, algorithms[row["collective"]])
            total += float(cost.time_s) * row["count"]
        busiest = max(busiest, total)
    return busiest


def predict_step(config: TrainingConfig, comparison: dict[str, Any], backend: str,
                 calibration_path: str | None) -> dict[str, Any]:
    """Model predictions to print beside the measurement: memory always; communication time when a
    calibration with collective fits is given; compute time when it also has a GEMM fit. Step time:
    dp/tp ``m·t_mb + t_comm`` (blocking collectives, DP AllReduce after the last backward); pp GPipe
    ``(m + N − 1)·t_mb + t_comm`` (Huang et al. 2019: the bubble adds N − 1 micro-batch slots)."""
    out: dict[str, Any] = {"predicted_memory_bytes": predicted_memory_bytes(config), "predicted_step_time_s": None,
                           "predicted_compute_s": None, "predicted_communication_s": None}
    if not calibration_path:
        return out
    from distcalc.calibration import load_calibration

    calibration = load_calibration(calibration_path)
    if calibration.fits:
        out["predicted_communication_s"] = _communication_time_s(config, calibration, backend)
    if calibration.compute:
        slots = config.micro_batches + (config.world_size - 1 if config.mode is TrainingMode.PP else 0)
        out["predicted_compute_s"] = slots * _compute_time_s(config, calibration.compute)
    if out["predicted_compute_s"] is not None and out["predicted_communication_s"] is not None:
        out["predicted_step_time_s"] = out["predicted_compute_s"] + out["predicted_communication_s"]
    return out
