#!/usr/bin/env python3
"""Summarise bench/run_trace_bench.sh's results.tsv as a Markdown table with ratios.

Per case and tool: median wall seconds over the runs (all runs listed), median CPU
seconds (user+sys), throughput in MB/s of raw (uncompressed) JSON per wall second,
the peak RSS of the median-wall run and that RSS as a multiple of the raw size, and
each tool's wall and CPU time as a multiple of magpie's on the same input. The paired
ratio divides each run's wall time by the magpie run of the same round (the two ran
one after the other, under the same load) and gives the median of those ratios: on a
shared machine it is the figure to quote. The load average at the start of the runs
is shown because the machine may be shared.

    python3 bench/trace_bench_table.py bench/data/results/<stamp>/results.tsv
"""
import csv
import statistics
import sys
from collections import defaultdict

CASE_LABELS = {
    "single_gz": "1 trace, .json.gz",
    "single_raw": "1 trace, .json",
    "ranks": "rank files, .json.gz",
}
TOOL_LABELS = {
    "magpie": "magpie",
    "magpie_1thread": "magpie --threads 1",
    "magpie_base": "magpie (baseline build)",
    "tracelens_pytorch": "magpie tracelens --mode pytorch",
    "tracelens_pytorch_base": "tracelens --mode pytorch (baseline build)",
    "python_ref": "Python reference",
    "hta": "HTA",
}


def ratio(value, base):
    return f"{value / base:.1f}×" if base else "–"


def main(path: str) -> int:
    runs = defaultdict(list)
    failed = defaultdict(int)
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["case"], row["tool"])
            if row["wall_s"] == "FAIL":
                failed[key] += 1
            else:
                runs[key].append(row)

    summary = {}
    for key, rows in runs.items():
        rows.sort(key=lambda r: float(r["wall_s"]))
        median_row = rows[(len(rows) - 1) // 2]
        cpus = [float(r["cpu_s"]) for r in rows if r.get("cpu_s")]
        by_run = {int(r["run"]): float(r["wall_s"]) for r in rows}
        summary[key] = {
            "by_run": by_run,
            "n": len(rows),
            "wall": statistics.median(float(r["wall_s"]) for r in rows),
            "walls": [float(r["wall_s"]) for r in rows],
            "cpu": statistics.median(cpus) if cpus else None,
            "rss_mb": int(median_row["rss_kb"]) * 1024 / 1e6,
            "raw_mb": int(median_row["raw_bytes"]) / 1e6,
            "total_us": median_row["total_us"],
            "loads": [float(r["load1"]) for r in rows if r.get("load1")],
        }

    print("| input | tool | runs | wall s: median (all) | CPU s | MB/s raw | peak RSS MB | RSS / raw |"
          " × magpie wall | paired × magpie wall: median (all) | × magpie CPU | kernel total (us) | load avg |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case in CASE_LABELS:
        for tool in TOOL_LABELS:
            key = (case, tool)
            if key in failed and key not in summary:
                print(f"| {CASE_LABELS[case]} | {TOOL_LABELS[tool]} | {failed[key]} failed |" + " |" * 10)
            if key not in summary:
                continue
            s = summary[key]
            base = summary.get((case, "magpie"), {})
            walls = ", ".join(f"{w:.2f}" for w in s["walls"])
            cpu = f"{s['cpu']:.2f}" if s["cpu"] is not None else ""
            cpu_ratio = ratio(s["cpu"], base.get("cpu")) if s["cpu"] is not None else ""
            loads = f"{min(s['loads']):.1f}–{max(s['loads']):.1f}" if s["loads"] else ""
            pairs = sorted(s["by_run"][i] / base["by_run"][i] for i in s["by_run"]
                           if base and i in base["by_run"] and base["by_run"][i] > 0)
            paired = (f"{statistics.median(pairs):.1f}× (" + ", ".join(f"{p:.1f}" for p in pairs) + ")"
                      if pairs else "–")
            mbps = s["raw_mb"] / s["wall"] if s["wall"] > 0 else float("inf")
            print(f"| {CASE_LABELS[case]} ({s['raw_mb']:.1f} MB raw) | {TOOL_LABELS[tool]} | {s['n']} | "
                  f"{s['wall']:.2f} ({walls}) | {cpu} | {mbps:.0f} | {s['rss_mb']:.0f} | "
                  f"{s['rss_mb'] / s['raw_mb']:.2f} | {ratio(s['wall'], base.get('wall'))} | {paired} | {cpu_ratio} | "
                  f"{s['total_us']} | {loads} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
