"""Does libmagpie_cupti.so change the kernels it times? For each binary, runs
alternate between no library, MAGPIE_CUPTI_KIND=concurrent and =serial; each
prints the binary's CUDA-event median (MAGPIE_LATENCY_JSON) and, with the
library, the median CUPTI duration of the named kernel.

  python3 cupti_modes.py LIB REPEATS KERNEL_REGEX BINARY [ARGS...]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run(lib, kind, cmd, kernel_re):
    env = dict(os.environ)
    out_path = None
    if kind != "none":
        fd, out_path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        env.update(CUDA_INJECTION64_PATH=lib, MAGPIE_CUPTI_OUTPUT=out_path, MAGPIE_CUPTI_KIND=kind)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("MAGPIE_LATENCY_JSON:")), None)
    row = {"kind": kind, "rc": proc.returncode}
    if line:
        row["events_median_us"] = round(json.loads(line.split(":", 1)[1])["stats"]["median_ms"] * 1e3, 3)
    if out_path:
        durs = []
        with open(out_path) as f:
            for l in f:
                rec = json.loads(l)
                if "start" in rec and re.search(kernel_re, rec["name"]):
                    durs.append(rec["end"] - rec["start"])
        os.unlink(out_path)
        if durs:
            row["cupti_median_us"] = round(statistics.median(durs) / 1e3, 3)
            row["cupti_records"] = len(durs)
    if proc.returncode != 0:
        row["stderr"] = proc.stderr[-400:]
    return row


def main():
    lib, repeats, kernel_re, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    rows = []
    for _ in range(repeats):
        for kind in ("none", "concurrent", "serial"):
            row = run(lib, kind, cmd, kernel_re)
            print(json.dumps(row), flush=True)
            rows.append(row)
    summary = {"command": " ".join(cmd)}
    for kind in ("none", "concurrent", "serial"):
        ev = [r["events_median_us"] for r in rows if r["kind"] == kind and "events_median_us" in r]
        cu = [r["cupti_median_us"] for r in rows if r["kind"] == kind and "cupti_median_us" in r]
        if ev:
            summary[kind + "_events_us"] = statistics.median(ev)
        if cu:
            summary[kind + "_cupti_us"] = statistics.median(cu)
    print("SUMMARY " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
