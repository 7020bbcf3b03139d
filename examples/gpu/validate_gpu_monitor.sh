#!/usr/bin/env bash
# Checks `profiler.gpu_monitor` on a machine with an NVIDIA GPU: a short
# `magpie benchmark --endpoint` run against the timed stub server
# (tests/e2e/timed_stream_server.py; no engine, no model) with the monitor on,
# then the report's `gpu_monitor` block and gpu_monitor.csv are checked: every
# GPU the driver lists was sampled, several times, and each sample carries
# utilization, memory used, power, SM clock and temperature, with values in a
# plausible range (SM clock within the GPU's max, temperature 1-120 C, power
# above 0). The block's `throttle` part is checked too: the window is the
# measured requests (one span, after the warm-ups), the driver reports clocks
# event reasons, and its per-GPU counts agree with the CSV rows inside the span;
# a GPU throttled while measuring must be a report warning and a `warning:`
# line on stderr. Prints the block; exits 1 on any failed check, 2 when it
# cannot run, and 0 with a SKIP line on a machine without an NVIDIA GPU.
#
# Usage: examples/gpu/validate_gpu_monitor.sh path/to/magpie
#   (from the checkout: it needs tests/e2e/timed_stream_server.py beside it)
# Needs bash and python3.
set -euo pipefail

magpie=${1:?usage: $0 path/to/magpie}
[[ -x "$magpie" ]] || { echo "not an executable: $magpie" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
stub="$here/../../tests/e2e/timed_stream_server.py"
[[ -f "$stub" ]] || { echo "timed stub not found at $stub" >&2; exit 2; }
if [[ -d "$(dirname "$magpie")/lib" ]]; then
  export LD_LIBRARY_PATH="$(cd "$(dirname "$magpie")/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

work=$(mktemp -d)
stub_pid=""
cleanup() { [[ -n "$stub_pid" ]] && kill "$stub_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$magpie" --gpu-info --json >"$work/gpu_info.json" || { echo "magpie --gpu-info --json failed" >&2; exit 2; }
gpus=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["devices"]))' "$work/gpu_info.json")
if [[ "$gpus" == "0" ]]; then
  why=$(python3 -c 'import json,sys; print("; ".join(json.load(open(sys.argv[1]))["notes"]))' "$work/gpu_info.json")
  echo "SKIP: no NVIDIA GPU visible to NVML here ($why); nothing to sample"
  exit 0
fi

# Each request: 50 ms to the first token, then 15 more 20 ms apart: 0.35 s; 40
# requests at concurrency 4 run about 3.5 s, sampled every 0.25 s.
python3 "$stub" --ttft-ms 50 --itl-ms 20 --words-are-tokens >"$work/stub.out" &
stub_pid=$!
for _ in $(seq 50); do grep -q '^port ' "$work/stub.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$work/stub.out")
[[ -n "$port" ]] || { echo "the stub server did not start" >&2; exit 2; }

cat >"$work/bench.yaml" <<YAML
benchmark:
  framework: vllm
  model: timed-stub
  envs: {CONC: 4, ISL: 16, OSL: 16, RANDOM_RANGE_RATIO: 0, NUM_PROMPTS: 40}
  profiler:
    torch_profiler: {enabled: false}
    gpu_monitor: {enabled: true, interval_sec: 0.25}
YAML
"$magpie" benchmark -b "$work/bench.yaml" --endpoint "http://127.0.0.1:$port" --token-id-max 4000 \
  -o "$work/out" >"$work/summary.txt" 2>"$work/stderr.txt" || {
  echo "magpie benchmark failed:" >&2; cat "$work/summary.txt" "$work/stderr.txt" >&2; exit 2; }
ws=$(ls -d "$work"/out/benchmark_vllm_* | head -1)
echo "== gpu_monitor block"
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["gpu_monitor"], indent=2))' \
  "$ws/benchmark_report.json"
sed -n '/^GPU monitor:/,/^$/p' "$ws/summary.txt"

python3 - "$ws" "$work/gpu_info.json" "$work/stderr.txt" <<'PY'
import csv, json, sys
from pathlib import Path

ws, info = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
stderr = Path(sys.argv[3]).read_text()
report = json.loads((ws / "benchmark_report.json").read_text())
block = report["gpu_monitor"]
problems = []
def need(ok, what):
    if not ok:
        problems.append(what)

need(block is not None and block.get("available") is True, f"gpu_monitor not available: {block}")
if block and block.get("available"):
    need(block["samples"] >= 5, f"only {block['samples']} sampling rounds over a ~3.5 s run at 0.25 s")
    need(sorted(g["index"] for g in block["gpus"]) == sorted(d["index"] for d in info["devices"]),
         "the GPUs sampled are not the GPUs --gpu-info lists")
    max_clock = {d["index"]: d.get("max_sm_clock_mhz") for d in info["devices"]}
    for g in block["gpus"]:
        f = g["fields"]
        for name in ["utilization_pct", "memory_used_mib", "power_w", "sm_clock_mhz", "temperature_c"]:
            need(name in f and f[name]["samples"] == g["samples"], f"GPU {g['index']}: {name} missing from samples")
        if all(n in f for n in ["utilization_pct", "power_w", "sm_clock_mhz", "temperature_c"]):
            need(0 <= f["utilization_pct"]["min"] <= f["utilization_pct"]["max"] <= 100, f"GPU {g['index']}: utilization out of 0-100")
            need(f["power_w"]["min"] > 0, f"GPU {g['index']}: power 0 W")
            need(f["sm_clock_mhz"]["max"] > 0, f"GPU {g['index']}: SM clock 0")
            if max_clock.get(g["index"]):
                need(f["sm_clock_mhz"]["max"] <= max_clock[g["index"]] * 1.01, f"GPU {g['index']}: SM clock above max")
            need(1 <= f["temperature_c"]["min"] <= 120, f"GPU {g['index']}: temperature implausible")
            need(f["sm_clock_mhz"]["min"] <= f["sm_clock_mhz"]["mean"] <= f["sm_clock_mhz"]["max"], "mean outside min..max")
    rows = list(csv.reader((ws / "gpu_monitor.csv").open()))
    need(rows and rows[0][:2] == ["timestamp_s", "gpu"], "gpu_monitor.csv header")
    need(len(rows) - 1 == sum(g["samples"] for g in block["gpus"]), "gpu_monitor.csv rows != samples")
    # Throttling while measuring: one span (one case), judged over the CSV rows inside it.
    t = block.get("throttle") or {}
    need(t.get("window") == "measuring", f"throttle window {t.get('window')!r}, not the measured requests")
    spans = t.get("spans") or []
    need(len(spans) == 1 and 0 < spans[0][0] <= spans[0][1], f"throttle spans {spans}: want one, after the warm-ups")
    need(t.get("reasons_reported") is True, "the driver reported no clocks event reasons (NVML >= 535 on an H200 does)")
    lowering = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
    header = rows[0] if rows else []
    if len(spans) == 1 and "clocks_event_reasons" in header:
        lo, hi = spans[0][0] - 0.0005, spans[0][1] + 0.0005  # the CSV's times have 3 decimals
        it, ig, ir = header.index("timestamp_s"), header.index("gpu"), header.index("clocks_event_reasons")
        for g in t.get("gpus", []):
            inside = [r for r in rows[1:] if int(r[ig]) == g["index"] and lo <= float(r[it]) <= hi and r[ir]]
            throttled = [r for r in inside if lowering & set(r[ir].split("|"))]
            need(g["samples"] == len(inside) and g["samples"] >= 2,
                 f"GPU {g['index']}: {g['samples']} samples in the throttle window, the CSV has {len(inside)} (want >= 2)")
            need(g["throttled_samples"] == len(throttled),
                 f"GPU {g['index']}: {g['throttled_samples']} throttled samples, the CSV has {len(throttled)}")
    for w in t.get("warnings", []):
        need("gpu_monitor: " + w in report["warnings"], f"throttle warning not in the report's warnings: {w}")
        need("warning: gpu_monitor: " + w in stderr, f"throttle warning not on stderr: {w}")
    need(t.get("throttled") == bool(t.get("warnings")), "throttled and warnings disagree")
    summary = (ws / "summary.txt").read_text()
    need("  Throttling while measuring (" in summary, "summary.txt has no throttle line")
    print(f"throttle: window {spans}, throttled: {t.get('throttled')}; {'; '.join(t.get('warnings', [])) or 'no warning'}")
for p in problems:
    print("FAIL:", p)
print("gpu_monitor: OK" if not problems else f"gpu_monitor: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY
