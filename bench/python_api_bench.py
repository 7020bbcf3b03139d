#!/usr/bin/env python3
"""Gap analysis from Python: `Magpie.gap_analysis` beside `magpie benchmark --trace-dir`
and HolisticTraceAnalysis's kernel breakdown, on the same trace, in paired rounds.

Each round runs, one after another and each in its own child process:
  cli    `magpie benchmark --trace-dir DIR -o OUT` (the binary of the same wheel)
  api    `python -c "import Magpie; Magpie.gap_analysis(DIR, output_dir=OUT)"`;
         the child times the call itself (what a notebook sees once Magpie
         and NumPy are imported), then calls it again (a second analysis in the same
         session); the process's wall time is of the first call only: it is
         measured from the start to the end of the first call in the child
  hta    bench/hta_kernel_breakdown.py DIR (TraceAnalysis + get_gpu_kernel_breakdown)
and the script prints each one's median wall time, the medians of the per-round
ratios (api/cli, hta/api) and a Markdown table for docs/PERFORMANCE.md.
Both Magpie faces record their run in a throwaway results store.

    python3 bench/python_api_bench.py --python VENV/bin/python --hta-python HTA/bin/python \\
        --runs 5 TRACE [TRACE ...]

--python is an interpreter where `import Magpie` works (the wheel installed,
NumPy beside it); the CLI is that wheel's own binary unless --magpie names
another. TRACE is a trace file (it is linked alone into a folder, as HTA reads
every trace in a folder) or a folder of rank files. Without --hta-python HTA is
left out. A TRACE that does not exist is reported and skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

API_CHILD = """
import sys, time
t0 = time.perf_counter()
import Magpie
import numpy  # the tables' arrays: a notebook has it (through pandas) before it calls Magpie
t1 = time.perf_counter()
r = Magpie.gap_analysis(sys.argv[1], output_dir=sys.argv[2])
t2 = time.perf_counter()
r = Magpie.gap_analysis(sys.argv[1], output_dir=sys.argv[2])
t3 = time.perf_counter()
print(f"import {t1 - t0:.6f} call {t2 - t1:.6f} again {t3 - t2:.6f} kernels {len(r.kernels)}")
"""


def timed(argv: list, env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return wall, r.stdout


def trace_dir(trace: Path, scratch: Path) -> Path:
    if trace.is_dir():
        return trace
    d = scratch / "in" / trace.name.split(".")[0]
    d.mkdir(parents=True, exist_ok=True)
    link = d / trace.name
    if not link.exists():
        link.symlink_to(trace.resolve())
    return d


def bench_one(trace: Path, args, magpie: str, scratch: Path) -> dict:
    d = trace_dir(trace, scratch)
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(scratch / "results.db"))
    times = {"cli": [], "api": [], "api_call": [], "api_again": [], "hta": []}
    for i in range(args.runs):
        out = scratch / f"out{i}"
        times["cli"].append(timed([magpie, "benchmark", "--trace-dir", str(d), "-o", str(out / "cli")], env)[0])
        wall, text = timed([args.python, "-c", API_CHILD, str(d), str(out / "api")], env)
        words = text.split()
        times["api"].append(wall - float(words[5]))  # the process, less its second call
        times["api_call"].append(float(words[3]))
        times["api_again"].append(float(words[5]))
        if args.hta_python:
            times["hta"].append(timed([args.hta_python, str(HERE / "hta_kernel_breakdown.py"), str(d)], env)[0])
        shutil.rmtree(out, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))  # noqa: E731
    row = {"trace": trace.name, "mb": sum(p.stat().st_size for p in d.iterdir()) / 1e6, "runs": args.runs,
           "times": times, "median": med, "api_over_cli": ratio("api", "cli"),
           "api_call_over_cli": ratio("api_call", "cli"), "api_again_over_cli": ratio("api_again", "cli")}
    if times["hta"]:
        row["hta_over_api"] = ratio("hta", "api")
        row["hta_over_api_call"] = ratio("hta", "api_call")
        row["hta_over_cli"] = ratio("hta", "cli")
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--python", default=sys.executable, help="an interpreter where `import Magpie` works")
    ap.add_argument("--magpie", help="the CLI binary (default: the wheel's own, Magpie.binary())")
    ap.add_argument("--hta-python", help="an interpreter with HolisticTraceAnalysis (leave out: no HTA)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write every time here too")
    args = ap.parse_args(argv)
    magpie = args.magpie or subprocess.run([args.python, "-c", "import Magpie; print(Magpie.binary())"],
                                           capture_output=True, text=True, check=True).stdout.strip()
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"cli: {magpie}\napi: {args.python}\nhta: {args.hta_python or '(left out)'}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="magpie-pyapi-bench-") as tmp:
        for trace in args.traces:
            if not trace.exists():
                print(f"skipped {trace}: it does not exist", file=sys.stderr)
                continue
            rows.append(bench_one(trace, args, magpie, Path(tmp)))
            r = rows[-1]
            print(f"{r['trace']}: " + ", ".join(f"{k} {v:.3f} s" for k, v in r["median"].items()))
    print(f"load at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| trace (MB on disk) | runs | CLI s | API process s | API call s | API 2nd call s "
          "| process/CLI | call/CLI | 2nd call/CLI | HTA s | HTA/API process | HTA/API call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        m = r["median"]
        hta = (f"{m['hta']:.2f} | {r['hta_over_api']:.1f}× | {r['hta_over_api_call']:.1f}×" if "hta" in m
               else "– | – | –")
        print(f"| {r['trace']} ({r['mb']:.1f}) | {r['runs']} | {m['cli']:.3f} | {m['api']:.3f} | {m['api_call']:.3f} "
              f"| {m['api_again']:.3f} | {r['api_over_cli']:.2f} | {r['api_call_over_cli']:.2f} "
              f"| {r['api_again_over_cli']:.2f} | {hta} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
