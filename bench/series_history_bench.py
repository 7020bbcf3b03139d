#!/usr/bin/env python3
"""Time `magpie results history` and `results check` on a store holding one series of N points.

The store is made by magpie (schema), then filled with N succeeded benchmark runs
through SQLite (the documented schema, docs/RESULTS.md), one commit each, level
100 req/s with 1% noise and a 5% drop at 60%. Prints the median wall time of
five calls of each command.

  python3 bench/series_history_bench.py [MAGPIE_BIN] [N]
"""
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main():
    magpie = sys.argv[1] if len(sys.argv) > 1 else "build/apps/magpie/magpie"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "results.db"
        subprocess.run([magpie, "results", "--db", db, "list"], check=True, capture_output=True)
        con = sqlite3.connect(db)
        rng = random.Random(1)
        for i in range(n):
            v = 100 * (0.95 if i >= n * 6 // 10 else 1) * (1 + rng.gauss(0, 0.01))
            when = f"2026-01-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00.000Z"
            rid = con.execute("INSERT INTO runs (kind, status, face, config_hash, git_commit, started_at, "
                              "finished_at, host) VALUES ('benchmark', 'succeeded', 'cli', 'bench', ?, ?, ?, 'h')",
                              (f"{i:040x}", when, when)).lastrowid
            for name, value in (("request_throughput", v), ("output_throughput", 16 * v),
                                ("ttft.median_ms", 1000 / v), ("tpot.median_ms", 10 / v)):
                con.execute("INSERT INTO run_metrics VALUES (?, ?, ?)", (rid, name, value))
        con.commit()
        con.close()
        series = json.loads(subprocess.run([magpie, "results", "--db", db, "series", "--json"], check=True,
                                           capture_output=True, text=True).stdout)[0]["id"]
        for args in (["history", series], ["check"]):
            times = []
            for _ in range(5):
                t = time.perf_counter()
                subprocess.run([magpie, "results", "--db", db, *args], capture_output=True)
                times.append(time.perf_counter() - t)
            print(f"results {args[0]:8} {n} points: median {statistics.median(times):.3f} s")


if __name__ == "__main__":
    main()
