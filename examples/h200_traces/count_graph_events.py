"""Counts the GPU work (kernel, gpu_memset, gpu_memcpy) and the launch calls
(cudaLaunchKernel, cuLaunchKernelEx, cudaMemsetAsync, cudaGraphLaunch, ...) in
PyTorch profiler traces, with the most frequent GPU event names.
Usage: python count_graph_events.py TRACE.json[.gz] ...
(run beside record_traces.py on the GPU machine: docs/GPU_VALIDATION.md, run 10)."""
import collections
import gzip
import json
import sys

for f in sys.argv[1:]:
    opener = gzip.open if f.endswith(".gz") else open
    with opener(f, "rt") as fh:
        d = json.load(fh)
    c = collections.Counter()
    names = collections.Counter()
    for e in d.get("traceEvents", []):
        cat = e.get("cat", "")
        if cat in ("kernel", "gpu_memset", "gpu_memcpy"):
            c[cat] += 1
            names[(cat, e["name"][:70])] += 1
        if cat in ("cuda_runtime", "cuda_driver") and ("Memset" in e["name"] or "Launch" in e["name"] or "Graph" in e["name"]):
            c[e["name"]] += 1
    print(f, dict(c))
    for k, v in names.most_common(40):
        print("  ", v, k)
