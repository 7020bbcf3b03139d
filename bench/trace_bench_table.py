#!/usr/bin/env python3
"""Summarise bench/run_trace_bench.sh's results.tsv as a Markdown table with ratios.

Per case and tool: median wall seconds over the runs, the peak RSS of that median
run, throughput in MB/s of raw (uncompressed) JSON, RSS as a multiple of the raw
size, and each tool's wall time as a multiple of magpie's on the same case.

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
    "python_ref": "Python reference",
    "hta": "HTA",
}


def main(path: str) -> int:
    runs = defaultdict(list)
    failed = defaultdict(int)
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["case"], row["tool"])
            if row["wall_s"] == "FAIL":
                failed[key] += 1
                continue
            runs[key].append(row)

    summary = {}
    for key, rows in runs.items():
        rows.sort(key=lambda r: float(r["wall_s"]))
        median_row = rows[(len(rows) - 1) // 2]
        wall = statistics.median(float(r["wall_s"]) for r in rows)
        raw = int(median_row["raw_bytes"])
        summary[key] = {
            "n": len(rows),
            "wall": wall,
            "walls": [float(r["wall_s"]) for r in rows],
            "rss_mb": int(median_row["rss_kb"]) * 1024 / 1e6,
            "raw_mb": raw / 1e6,
            "total_us": median_row["total_us"],
        }

    print("| input | tool | runs | wall s (median; all) | MB/s raw | peak RSS MB | RSS / raw | × magpie wall |"
          " kernel total (us) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case in CASE_LABELS:
        for tool in TOOL_LABELS:
            key = (case, tool)
            if key in failed and key not in summary:
                print(f"| {CASE_LABELS[case]} | {TOOL_LABELS[tool]} | {failed[key]} failed | | | | | | |")
            if key not in summary:
                continue
            s = summary[key]
            base = summary.get((case, "magpie"))
            ratio = f"{s['wall'] / base['wall']:.1f}×" if base and base["wall"] > 0 else "–"
            walls = ", ".join(f"{w:.2f}" for w in s["walls"])
            mbps = s["raw_mb"] / s["wall"] if s["wall"] > 0 else float("inf")
            print(f"| {CASE_LABELS[case]} ({s['raw_mb']:.1f} MB raw) | {TOOL_LABELS[tool]} | {s['n']} | "
                  f"{s['wall']:.2f} ({walls}) | {mbps:.0f} | {s['rss_mb']:.0f} | {s['rss_mb'] / s['raw_mb']:.2f} | "
                  f"{ratio} | {s['total_us']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
