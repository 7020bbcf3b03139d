"""Measures the gap a CUDA graph leaves between consecutive kernels on this GPU, without the
profiler: the value `magpie whatif --graph-gap-us` takes for its `launch:0` scenario.

  python3 examples/critical_path/graph_gap.py [--json]      (on the GPU machine; PyTorch; ~5 s)

Why: `launch:0` re-times an eager trace as if its launches were one CUDA graph, so each kernel
follows the previous one after the graph's own gap. An eager trace cannot show that gap: eager
kernels queued on a stream sit further apart (about 1.25 us on an H100) than kernels replayed
from a graph (about 0.4 us). The figure depends on the GPU and driver, not on the model, so it is
measured here on a workload of its own: a graph of GRAPH_KERNELS kernels mixing elementwise ops,
small cuBLAS GEMMs and a softmax, replayed behind a 2 ms sleep (so the whole graph is queued
before it starts), timed with CUDA events. The kernels' own durations come from a traced replay
(the profiler adds little to a kernel's duration, but it does add to the gaps); the gap is
(untraced span - sum of durations) / kernels.
"""
import json
import statistics
import sys

GRAPH_KERNELS_PER_BLOCK = 4  # add, mm, softmax, mul
BLOCKS = 60
REPLAYS = 30


def build(torch, dev):
    x = torch.randn(256, device=dev)
    a = torch.randn(64, 64, device=dev)
    b = torch.randn(64, 64, device=dev)
    c = torch.empty(64, 64, device=dev)

    def body():
        for _ in range(BLOCKS):
            x.add_(1.0)
            torch.mm(a, b, out=c)
            torch.softmax(c, dim=-1)
            x.mul_(0.5)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    return g


def untraced_span_us(torch, g, cycles_per_us):
    """Median span of one replay, from an event before it to an event after it, without the profiler."""
    spans = []
    for i in range(REPLAYS + 3):
        torch.cuda._sleep(int(2000 * cycles_per_us))
        first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        first.record()
        g.replay()
        last.record()
        torch.cuda.synchronize()
        if i >= 3:
            spans.append(first.elapsed_time(last) * 1000.0)
    return statistics.median(spans)


def traced_kernels(torch, g, cycles_per_us, tmp_path):
    """Per replay: the kernels' durations and the gaps between them, from a traced run."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            torch.cuda._sleep(int(2000 * cycles_per_us))
            g.replay()
            torch.cuda.synchronize()
    prof.export_chrome_trace(tmp_path)
    with open(tmp_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                     if e.get("cat") == "kernel" and "sleep" not in e.get("name", "").lower()
                     and "spin" not in e.get("name", "").lower())
    n = GRAPH_KERNELS_PER_BLOCK * BLOCKS
    replays = [kernels[i:i + n] for i in range(0, len(kernels) - n + 1, n)]
    return n, replays, len(kernels)


def measure(torch, dev, cycles_per_us, tmp_path):
    """The untraced part runs first; call before any other profiler session in the process
    (after one, kineto leaves CUPTI callbacks behind that slow later work)."""
    g = build(torch, dev)
    span_us = untraced_span_us(torch, g, cycles_per_us)
    return {"graph": g, "untraced_span_us": span_us}


def finish(torch, state, cycles_per_us, tmp_path):
    n, replays, seen = traced_kernels(torch, state["graph"], cycles_per_us, tmp_path)
    if not replays:
        raise SystemExit(f"graph_gap: expected {n} kernels per replay in the trace, saw {seen} in all")
    durations = statistics.median(sum(e - s for s, e in r) for r in replays)
    traced_gaps = [r[i + 1][0] - r[i][1] for r in replays for i in range(len(r) - 1)]
    gap = max(0.0, (state["untraced_span_us"] - durations) / n)
    return {"kernels_per_replay": n, "untraced_span_us": round(state["untraced_span_us"], 2),
            "kernel_time_us": round(durations, 2), "gap_us": round(gap, 3),
            "traced_median_gap_us": round(statistics.median(traced_gaps), 3),
            "replays_traced": len(replays)}


def cycles_per_microsecond(torch):
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 200_000_000
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    return cycles / (start.elapsed_time(end) * 1000.0)


def main():
    import os
    import tempfile
    import torch
    dev = torch.device("cuda")
    cpu = cycles_per_microsecond(torch)
    state = measure(torch, dev, cpu, None)
    with tempfile.TemporaryDirectory() as d:
        r = finish(torch, state, cpu, os.path.join(d, "graph_gap.json"))
    r["gpu"] = torch.cuda.get_device_name()
    if "--json" in sys.argv:
        print(json.dumps(r, indent=2))
    else:
        print(f"{r['gpu']}: a CUDA graph leaves {r['gap_us']:.3f} us between kernels "
              f"({r['kernels_per_replay']} kernels, {r['untraced_span_us']:.1f} us a replay untraced, "
              f"{r['kernel_time_us']:.1f} us of kernels; traced gap {r['traced_median_gap_us']:.3f} us)")
        print(f"use: magpie whatif TRACE --scenario launch:0 --graph-gap-us {r['gap_us']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
