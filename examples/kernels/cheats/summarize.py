"""One line per implementation of a compare report: states, median, verdict or the reason it is not ranked."""
import json
import sys
from pathlib import Path

d = Path(sys.argv[1])
res = json.loads((d / "compare_report.json").read_text())["results"]
verdicts = {v["kernel_id"]: v for v in res.get("verdicts", [])}
for i, k in enumerate(res["kernel_results"]):
    kid = res["verdicts"][i]["kernel_id"] if i < len(res.get("verdicts", [])) else str(i)
    v = verdicts.get(kid, {})
    errs = k.get("errors") or []
    integrity = [e for e in errs if "rule:" in e]
    print("%-22s correct=%-8s perf=%-8s median_us=%-9s %s %s" % (
        kid, k.get("correctness_state"), k.get("performance_state"),
        "%.2f" % (v["median_ns"] / 1e3) if v.get("median_ns") else "-",
        v.get("verdict") or v.get("role") or "", v.get("reason", "")[:60]))
    for e in integrity[:1]:
        print("    rejected:", e[:400])
print("winner:", res.get("winner"), "| summary:", res.get("summary"))
