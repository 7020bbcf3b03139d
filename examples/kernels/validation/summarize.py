"""Prints the key figures of every analyze/compare report under a folder."""
import glob
import json
import sys


def short(x, n=70):
    return (x or "")[:n]


for path in sorted(glob.glob(sys.argv[1] + "/*/*_report.json")):
    rep = json.load(open(path))
    print("\n##", path.split("/")[-2], "(%s)" % rep["mode"])
    results = rep["results"] if rep["mode"] == "analyze" else rep["results"]["kernel_results"]
    for r in results:
        pr = r["performance_result"]
        st = pr.get("magpie_stats", {}).get("samples", {})
        lat = r.get("latency_result") or {}
        cc = (lat.get("payload") or {}).get("crosscheck") or {}
        print("-", r["extra"]["kernel_id"], r["compiling_state"], r["correctness_state"], r["performance_state"],
              "median_us=%.3f" % (st.get("median_ns", 0) / 1e3), "cv=%.4f" % st.get("cv", 0), "n=%s" % st.get("count"),
              "src=%s" % pr.get("magpie_stats", {}).get("timing_source"),
              "scope=%s" % short(r["correctness_result"].get("scope")))
        if cc:
            print("    crosscheck:", json.dumps({k: v for k, v in cc.items() if k != "kernels"})[:300])
        for k in pr.get("kernels", [])[:3]:
            print("    cupti: %s x%d avg=%.0f ns" % (short(k["kernel_name"], 60), k["dispatch_count"], k["duration_ns"]["avg"]))
        for m, v in (pr.get("summary") or {}).items():
            if m in ("achieved_tbps", "achieved_tflops", "gpu_time_duration_sum", "dram_bytes", "roofline_floor"):
                print("    %s=%s" % (m, json.dumps(v)))
        for e in r["errors"][:2]:
            print("    error:", short(e.splitlines()[0], 200))
    if rep["mode"] == "compare":
        res = rep["results"]
        for v in res["verdicts"]:
            print("  verdict:", v["kernel_id"], v.get("role", ""), v.get("verdict", ""),
                  "speedup=%s ci=[%s, %s]" % (v.get("speedup"), v.get("ci_low"), v.get("ci_high")), short(v.get("reason"), 90))
        print("  winner:", res["winner"], "|", res["summary"])
