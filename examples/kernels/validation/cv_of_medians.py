"""Runs a command N times, reads each run's MAGPIE_LATENCY_JSON median, and
prints the CV of those medians (the repeatability figure of GPU_VALIDATION.md)."""
import json
import statistics
import subprocess
import sys

n = int(sys.argv[1])
cmd = sys.argv[2:]
medians = []
for _ in range(n):
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    lines = [l for l in out.splitlines() if l.startswith("MAGPIE_LATENCY_JSON:")]
    if not lines:
        print("no latency line; output tail:", out[-500:])
        continue
    medians.append(json.loads(lines[-1].split(":", 1)[1])["stats"]["median_ms"])
m = statistics.mean(medians)
print(json.dumps({"command": " ".join(cmd), "runs": len(medians), "medians_ms": medians,
                  "mean_ms": m, "cv_pct": 100 * statistics.stdev(medians) / m if len(medians) > 1 else None,
                  "max_over_min": max(medians) / min(medians)}))
