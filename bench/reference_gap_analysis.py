#!/usr/bin/env python3
"""Plain-Python gap analysis: the baseline `magpie benchmark --trace-dir` is timed against.

It does what Python Magpie's gap analysis does (docs/MAGPIE_COMPATIBILITY.md §5) the way a
Python tool does it: `json.load` of each whole trace, a dict keyed by kernel name,
and `csv` to write `gap_analysis.csv` with the six base columns.

  keep an event when its lower-cased `cat` contains none of the ignored
  categories and one of the wanted ones; aggregate by exact `name`; merge ranks
  by name; percentages against the total of all kept events; top-k after totals.

Input shapes come, as in Magpie, from the CPU op that launched the kernel
(`External id` → the cpu_op's `Input Dims`), up to 10 unique per kernel.

    python3 bench/reference_gap_analysis.py TRACE_DIR [-o OUT] [--top-k 20]
"""
import argparse
import csv
import gzip
import json
import sys
import time
from pathlib import Path

WANTED_CATEGORIES = ("kernel", "gpu")
IGNORED_CATEGORIES = ("gpu_user_annotation", "user_annotation")
MAX_SHAPES = 10
BASE_COLUMNS = ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total", "Input Shapes"]


def find_traces(trace_dir: Path) -> list:
    if (trace_dir / "torch_trace").is_dir():
        trace_dir = trace_dir / "torch_trace"
    ranked = sorted(trace_dir.glob("*-rank-*.pt.trace.json.gz")) + sorted(trace_dir.glob("*-rank-*.pt.trace.json"))
    if ranked:
        return ranked
    return sorted(p for p in trace_dir.iterdir() if p.name.endswith((".json", ".json.gz")))


def load(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.load(f)


def format_dims(dims) -> str:
    return "x".join("[" + ",".join(str(d) for d in dim) + "]" for dim in dims if isinstance(dim, list))


def analyse_rank(trace: dict) -> dict:
    """name -> [calls, total_us, set of input shapes] for one trace."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    dims_by_external_id = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            args = e.get("args")
            if args and "Input Dims" in args and "External id" in args:
                dims_by_external_id[args["External id"]] = args["Input Dims"]
    stats = {}
    for e in events:
        cat = e.get("cat")
        if not isinstance(cat, str):
            continue
        cat = cat.lower()
        if any(c in cat for c in IGNORED_CATEGORIES) or not any(c in cat for c in WANTED_CATEGORIES):
            continue
        entry = stats.get(e["name"])
        if entry is None:
            entry = stats[e["name"]] = [0, 0.0, set()]
        entry[0] += 1
        entry[1] += float(e.get("dur", 0))
        args = e.get("args")
        if args and len(entry[2]) < MAX_SHAPES:
            dims = args.get("Input Dims") or dims_by_external_id.get(args.get("External id"))
            if dims:
                entry[2].add(format_dims(dims))
    return stats


def merge(ranks: list) -> dict:
    merged = {}
    for stats in ranks:
        for name, (calls, total, shapes) in stats.items():
            entry = merged.setdefault(name, [0, 0.0, set()])
            entry[0] += calls
            entry[1] += total
            entry[2] |= shapes
    return merged


def write_csv(path: Path, stats: dict, grand_total: float, top_k: int):
    rows = sorted(stats.items(), key=lambda kv: kv[1][1], reverse=True)[:top_k]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(BASE_COLUMNS)
        for name, (calls, total, shapes) in rows:
            pct = total / grand_total * 100.0 if grand_total else 0.0
            w.writerow([name, calls, f"{total:.2f}", f"{total / calls:.2f}", f"{pct:.2f}",
                        "; ".join(sorted(shapes)[:MAX_SHAPES])])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace_dir", type=Path)
    ap.add_argument("-o", "--output-dir", type=Path, default=Path("results"))
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--no-rank-csv", action="store_true")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    traces = find_traces(args.trace_dir)
    if not traces:
        print(f"no traces in {args.trace_dir}", file=sys.stderr)
        return 3
    out = args.output_dir / "gap_analysis"
    out.mkdir(parents=True, exist_ok=True)
    per_rank = []
    for i, path in enumerate(traces):
        stats = analyse_rank(load(path))
        per_rank.append(stats)
        if len(traces) > 1 and not args.no_rank_csv:
            total = sum(v[1] for v in stats.values())
            write_csv(out / f"gap_analysis_rank{i}.csv", stats, total, args.top_k)
    merged = merge(per_rank)
    if not merged:
        print(f"no GPU events in {args.trace_dir}", file=sys.stderr)
        return 6
    grand_total = sum(v[1] for v in merged.values())
    write_csv(out / "gap_analysis.csv", merged, grand_total, args.top_k)
    print(f"Ranks analyzed: {len(traces)}")
    print(f"Total duration: {grand_total:.2f} us")
    print(f"Kernels: {len(merged)}  elapsed: {time.perf_counter() - start:.2f} s")
    print(f"Output: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
