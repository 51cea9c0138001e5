"""Event-driven timing of a schedule: every chunk transfer is an event on the links of its route.

The step-synchronous timing (:mod:`.timing`) ends every step at the slowest link of the step, so a pipelined
schedule (chain, double binary tree, rail rings, dimension-concurrent phases) pays its slowest hop class on
every step. Here there is no barrier:

* **per-link α-β (Hockney) service**: a directed link serves the transfers of one schedule step that cross it
  as one message, busy for α + bytes/B (α: the route latency of :mod:`.route`, the largest among the
  transfers it carries in that step; B: the link's own bandwidth). Messages on one link are served one after
  another, in schedule-step order (a rank issues its sends in program order);
  messages on different links overlap;
* **data dependency**: a link starts a step's message when the link is free and the data of every transfer
  it carries has arrived at the transfer's source (all earlier-step arrivals of that chunk at that node; a
  rank's own data is there at t = 0);
* **routes are circuits** (cut-through, no store-and-forward inside the network): a transfer starts when
  every link of its route can start its message, arrives after the longest of those messages, and holds
  every link of its route until it has arrived (a slow hop — an oversubscribed uplink — keeps the fast hops
  behind and ahead of it busy, as a wormhole/cut-through path does).

With one message per link per step and every link of a step starting together (the synchronous schedules)
this is Σ_s [α_s + max_l bytes_{s,l}/B_l], the step model, exactly. A pipelined schedule overlaps its steps:
a tandem of hops with service times t_h serves k segments in Σ_h t_h + (k − 1)·max_h t_h (the flow-shop
makespan of identical jobs; Conway, Maxwell & Miller, *Theory of Scheduling*, 1967), which is the collective
library's pipelined-chain formula. Source of the per-message cost: Hockney, *Parallel Computing* 20(3), 1994 (α + n/B
per message); a busy-until queue per link, cf. ASTRA-sim 2.0's congestion-aware analytical network (Won et
al., ISPASS 2023).

The time and its α part are carried along the critical path (the α of every message on the chain of
dependencies that ends last); the bandwidth part is the rest.

**Independent channels** (``channel``, one id per schedule row; NCCL runs each ring of a multi-ring
schedule as its own channel: its own thread block, connection and NCCL_STEPS = 8 buffer slots, so a send
waits for its own data and a free slot, never for a send of another ring nor for its own previous message
to land): every (link, channel) has its own in-order queue, a message occupies its link for the step's
bytes on that link over B (the channels of a step share the link: concurrent equal shares end together)
and α is in-flight latency that occupies nothing (LogP's L, not the gap: Culler et al., PPoPP 1993).
Without ``channel`` (the default) the per-message Hockney model above applies.
"""

from __future__ import annotations

import numpy as np

from distcalc.simulate.route import row_routes
from distcalc.simulate.schedule import Schedule
from distcalc.simulate.timing import Timing, TimingMode
from distcalc.topology import Topology

#: Largest nodes × chunks table of data-ready times kept dense (two float64 arrays: 128 MiB); above it the
#: (node, chunk) keys that ever receive data are compacted by sorting (All-to-All: N² chunks).
DENSE_READY_ENTRIES = 1 << 23


def _data_keys(schedule: Schedule) -> tuple[np.ndarray, np.ndarray, int]:
    """(key of every row's source data, key of every row's arrival, table size): key = node·chunks + chunk,
    compacted to the keys that are ever written when the dense table would be too large. A source key that is
    never written maps to a slot that stays at t = 0 (the rank's own data)."""
    chunks = schedule.chunks
    dep = schedule.src.astype(np.int64) * chunks + schedule.chunk
    arr = schedule.dst.astype(np.int64) * chunks + schedule.chunk
    if schedule.nodes * chunks <= DENSE_READY_ENTRIES:
        return dep, arr, schedule.nodes * chunks
    keys = np.unique(arr)
    arr_idx = np.searchsorted(keys, arr)
    found = np.searchsorted(keys, dep)
    clipped = np.minimum(found, keys.size - 1)
    dep_idx = np.where(keys[clipped] == dep, clipped, keys.size)
    return dep_idx, arr_idx, keys.size + 1


def _scatter_max(value: np.ndarray, shadow: np.ndarray, index: np.ndarray, new: np.ndarray,
                 new_shadow: np.ndarray) -> None:
    """value[index] = max(value[index], new) in place, with ``shadow`` (the α part) following the winner;
    among equal times the larger α part is kept (deterministic, and the synchronous schedules' own α)."""
    before = value[index]
    np.maximum.at(value, index, new)
    after = value[index]
    raised = after > before
    shadow[index[raised]] = 0.0
    wins = new == after
    np.maximum.at(shadow, index[wins], new_shadow[wins])


def time_events(schedule: Schedule, topo: Topology, channel: np.ndarray | None = None) -> Timing:
    """Event-driven :class:`Timing` of ``schedule`` on ``topo`` (see the module docstring); ``channel``: the
    channel of every row (independent queues per link, α in flight), or None (one Hockney queue per link)."""
    routes = row_routes(schedule, topo)
    links, bandwidth = routes.links, routes.bandwidth_bytes_per_s
    n_links, steps, gpus = len(links), schedule.steps, schedule.gpus
    sent = np.bincount(schedule.src, minlength=schedule.nodes).astype(float) * schedule.chunk_bytes
    zero = np.zeros(steps)
    if steps == 0 or schedule.src.size == 0:
        return Timing(0.0, 0.0, 0.0, steps, 0.0, zero, zero, zero, np.zeros(n_links), links, 0.0, None,
                      TimingMode.EVENT)
    dep, arr, table = _data_keys(schedule)
    ready, ready_alpha = np.zeros(table), np.zeros(table)
    queues = 1 if channel is None else int(np.max(channel)) + 1
    if channel is not None and (np.size(channel) != schedule.src.size or np.min(channel) < 0):
        raise ValueError(f"channel: {np.size(channel)} non-negative ids needed, one per row "
                         f"({schedule.src.size} rows)")
    free, free_alpha = np.zeros(n_links * queues), np.zeros(n_links * queues)
    link_bytes = np.zeros(n_links)
    done, done_alpha = np.zeros(steps), np.zeros(steps)  # last arrival of each step and its α part
    step_max_link_bytes = np.zeros(steps)
    lengths, flat, ptr = routes.lengths, routes.flat, routes.ptr
    uniform = bool(lengths.size and np.all(lengths == lengths[0]))
    hops = flat.reshape(lengths.size, int(lengths[0])) if uniform else None
    for s in range(steps):
        rows = schedule.step_rows(s)
        pair = routes.pair_of_row[rows]
        t, t_alpha = ready[dep[rows]], ready_alpha[dep[rows]]
        latency = routes.pair_latency[pair]
        if uniform:
            entry_link = hops[pair].ravel()
            entry_row = np.repeat(np.arange(pair.size), hops.shape[1])
        else:
            reps = lengths[pair]
            entry_row = np.repeat(np.arange(pair.size), reps)
            offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
            entry_link = flat[np.repeat(ptr[pair], reps) + offsets]
        # one message per link (per channel): its bytes, its α (largest route latency it carries), when its
        # data is ready
        queue = entry_link if channel is None else entry_link * queues + channel[rows][entry_row]
        used, entry_message = np.unique(queue, return_inverse=True)
        physical = used // queues
        size_bytes = np.bincount(entry_message, minlength=used.size) * schedule.chunk_bytes
        # the link's bytes in this step (all channels on it) set every message's service time on it
        link_step_bytes = size_bytes if channel is None else (
            np.bincount(entry_link, minlength=n_links)[physical] * schedule.chunk_bytes)
        alpha = np.zeros(used.size)
        np.maximum.at(alpha, entry_message, latency[entry_row])
        data, data_alpha = np.full(used.size, -np.inf), np.zeros(used.size)
        _scatter_max(data, data_alpha, entry_message, t[entry_row], t_alpha[entry_row])
        link_free, link_free_alpha = free[used], free_alpha[used]
        start = np.maximum(link_free, data)
        start_alpha = np.where(link_free > data, link_free_alpha,
                               np.where(link_free < data, data_alpha, np.maximum(link_free_alpha, data_alpha)))
        service = link_step_bytes / bandwidth[physical]
        duration = alpha + service
        # a transfer holds its whole route (cut-through circuit): it starts when every link of it can start,
        # and lasts as long as its slowest link's message
        row_start, row_start_alpha = np.full(pair.size, -np.inf), np.zeros(pair.size)
        _scatter_max(row_start, row_start_alpha, entry_row, start[entry_message], start_alpha[entry_message])
        row_duration = np.zeros(pair.size)
        np.maximum.at(row_duration, entry_row, duration[entry_message])
        row_alpha = np.zeros(pair.size)
        np.maximum.at(row_alpha, entry_row, alpha[entry_message])
        arrival, arrival_alpha = row_start + row_duration, row_start_alpha + row_alpha
        # a link is free again when its own message is through and every transfer holding it has arrived
        if channel is None:
            end, end_alpha = start + duration, start_alpha + alpha
            _scatter_max(end, end_alpha, entry_message, arrival[entry_row], arrival_alpha[entry_row])
        else:  # α in flight: the queue is free once its message is serialised on every link of its route
            end, end_alpha = np.full(used.size, -np.inf), np.zeros(used.size)
            _scatter_max(end, end_alpha, entry_message, row_start[entry_row] + service[entry_message],
                         row_start_alpha[entry_row])
        free[used], free_alpha[used] = end, end_alpha
        if channel is None:
            link_bytes[used] += size_bytes
        else:
            np.add.at(link_bytes, physical, size_bytes)
        step_max_link_bytes[s] = link_step_bytes.max()
        _scatter_max(ready, ready_alpha, arr[rows], arrival, arrival_alpha)
        last = int(np.argmax(arrival))
        done[s], done_alpha[s] = arrival[last], arrival_alpha[last]
    finish = int(np.argmax(done))
    time_s, alpha_s = float(done[finish]), float(done_alpha[finish])
    # per step: how far the step's last arrival moves the completion time forward (0 where it ends earlier)
    reached = np.maximum.accumulate(done)
    step_time = np.diff(np.concatenate([[0.0], reached]))
    reached_alpha = np.minimum(np.maximum.accumulate(np.minimum(done_alpha, done)), reached)
    step_latency = np.minimum(np.clip(np.diff(np.concatenate([[0.0], reached_alpha])), 0.0, None), step_time)
    busiest = int(np.argmax(link_bytes / bandwidth))
    return Timing(
        time_s=time_s,
        latency_term_s=alpha_s,
        bandwidth_term_s=time_s - alpha_s,
        steps=steps,
        bytes_sent_per_gpu=float(sent[:gpus].max()),
        step_time_s=step_time,
        step_latency_s=step_latency,
        step_max_link_bytes=step_max_link_bytes,
        link_bytes=link_bytes,
        links=links,
        max_link_bytes=float(link_bytes.max()),
        busiest_link=links[busiest],
        mode=TimingMode.EVENT,
    )
