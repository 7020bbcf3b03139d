"""CUPTI's per-kernel average duration (analyze_report.json) against ncu's
gpu__time_duration.sum (ncu_kernels.json) for the same kernel names."""
import glob
import json
import os
import statistics
import sys

for report in sys.argv[1:]:
    rep = json.load(open(report))
    for res in rep["results"] if rep["mode"] == "analyze" else rep["results"]["kernel_results"]:
        wl = res["performance_result"].get("workload_dir", "")
        ncu_path = os.path.join(wl, "ncu_kernels.json")
        if not os.path.exists(ncu_path):
            continue
        ncu = json.load(open(ncu_path))
        for k in res["performance_result"]["kernels"]:
            short = k["kernel_name"].split("(")[0].split()[-1]
            ncu_t = [n["metrics"].get("gpu__time_duration.sum") for n in ncu
                     if n["kernel_name"].split("(")[0].split()[-1] == short]
            ncu_t = [t for t in ncu_t if t]
            if not ncu_t:
                continue
            cupti_avg = k["duration_ns"]["avg"]
            ncu_med = statistics.median(ncu_t)
            print(json.dumps({"kernel": short, "cupti_avg_ns": cupti_avg, "cupti_dispatches": k["dispatch_count"],
                              "ncu_median_ns": ncu_med, "ncu_launches": len(ncu_t),
                              "cupti_over_ncu": cupti_avg / ncu_med}))
