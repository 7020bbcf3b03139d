#!/usr/bin/env python3
"""Time `magpie results site` over a store of 10,000 runs and `magpie results history`
of a series of 1,000 points (docs/PERFORMANCE.md, "Results store: site and history").

The runs are written in the documented schema (docs/RESULTS.md) into a scratch
store made by magpie, then copied into the store under test by magpie itself
(`results import --from`, the store's own write path). The layout, a team's
store after a few months of nightly CI:
  - one series of 1,000 commits, one run each (the history benchmark's series);
  - 45 series of 100 commits with two runs each (9,000 runs): 3 GPUs x 3 models
    x 5 workloads, each with a 5% throughput drop at 60% of its history.
Every run has the four default benchmark metrics and the metadata a benchmark
records; one run in ten has a workspace holding a benchmark_report.html (so the
site links points to reports), the rest name folders that are gone.
Prints the median wall time of RUNS calls of each command (default 5).

  python3 bench/results_site_bench.py [MAGPIE_BIN] [RUNS]
"""
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def fill(db: Path, work: Path):
    con = sqlite3.connect(db)
    rng = random.Random(1)
    minute = 0

    def add(commit, level, meta, workspace):
        nonlocal minute
        minute += 1
        when = f"2026-{1 + minute // 40000:02d}-{1 + minute // 1440 % 28:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00.000Z"
        v = level * (1 + rng.gauss(0, 0.01))
        rid = con.execute("INSERT INTO runs (kind, status, face, command_line, config_hash, git_commit, gpu, "
                          "workspace, error, started_at, finished_at, pid, host) VALUES ('benchmark', 'succeeded', "
                          "'cli', 'magpie benchmark vllm', 'bench', ?, ?, ?, '', ?, ?, ?, 'h')",
                          (commit, meta["gpu"], workspace, when, when, minute)).lastrowid
        for name, value in (("request_throughput", v), ("output_throughput", 16 * v), ("ttft.median_ms", 1000 / v),
                            ("tpot.median_ms", 10 / v)):
            con.execute("INSERT INTO run_metrics VALUES (?, ?, ?)", (rid, name, value))
        for k in ("engine", "model", "workload"):
            con.execute("INSERT INTO run_metadata VALUES (?, ?, ?)", (rid, k, meta[k]))
        con.execute("INSERT INTO run_metadata VALUES (?, 'host_class', 'ci-pool')", (rid,))

    def workspace(i):
        ws = work / "results" / f"benchmark_{i}"
        if i % 10 == 0:
            ws.mkdir(parents=True)
            (ws / "benchmark_report.html").write_text("<!DOCTYPE html><title>report</title>")
        return str(ws)

    n = 0
    long_series = {"gpu": "NVIDIA H100 80GB HBM3", "engine": "vllm", "model": "llama-8b", "workload": "nightly"}
    for c in range(1000):
        add(f"{c:040x}", 100 * (0.95 if c >= 600 else 1), long_series, workspace(n))
        n += 1
    for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "AMD Instinct MI300X"):
        for model in ("llama-8b", "qwen-7b", "mistral-7b"):
            for w in range(5):
                meta = {"gpu": gpu, "engine": "vllm", "model": model, "workload": f"CONC{2 ** w}_ISL512_OSL128"}
                for c in range(100):
                    for _ in range(2):
                        add(f"{c:040x}", 50 * (0.95 if c >= 60 else 1), meta, workspace(n))
                        n += 1
    con.commit()
    con.close()
    return n


def timed(cmd, runs):
    """Median wall time, every wall time, median CPU time (user + system), the last output."""
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert proc.returncode == 0, proc.stderr
    return statistics.median(times), times, statistics.median(cpu), proc.stdout


def main():
    magpie = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/apps/magpie/magpie")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scratch, db = tmp / "scratch.db", tmp / "results.db"
        subprocess.run([magpie, "results", "--db", scratch, "list"], check=True, capture_output=True)
        n = fill(scratch, tmp)
        t = time.perf_counter()
        subprocess.run([magpie, "results", "--db", db, "import", "--from", scratch], check=True, capture_output=True)
        print(f"results import --from: {n} runs in {time.perf_counter() - t:.1f} s")
        series = json.loads(subprocess.run([magpie, "results", "--db", db, "series", "--json"], check=True,
                                           capture_output=True, text=True).stdout)
        long_id = next(s["id"] for s in series if s["runs"] == 1000)
        med, all_t, cpu, out = timed([magpie, "results", "--db", db, "site", "-o", tmp / "site"], runs)
        size = sum(f.stat().st_size for f in (tmp / "site").rglob("*") if f.is_file())
        print(f"results site     {n} runs, {len(series)} series: median {med:.3f} s, CPU {cpu:.3f} s "
              f"(all: {', '.join(f'{x:.3f}' for x in all_t)}); {size / 1e6:.1f} MB; {out.strip()}")
        med, all_t, cpu, out = timed([magpie, "results", "--db", db, "history", long_id], runs)
        print(f"results history  1000 points: median {med:.3f} s, CPU {cpu:.3f} s "
              f"(all: {', '.join(f'{x:.3f}' for x in all_t)})")


if __name__ == "__main__":
    main()
