#!/usr/bin/env bash
# Checks `--system-profiler` on a machine with an NVIDIA GPU: a short
# `magpie benchmark` whose "engine" is examples/gpu/torch_matmul_engine.py
# (the timed stub's API plus bf16 matrix multiplies in PyTorch per request),
# launched by magpie under `nsys profile`. Then checks the report: the
# system_profiler block names nsys, the capture exists, its kernel summary
# (nsys stats cuda_gpu_kern_sum) lists kernels with times and call counts, a
# GEMM among them, and Magpie's kernel_summary is filled from it. Prints the
# block and summary.txt.
#
# Without nsys: runs the same command once to show the clear error (exit 3,
# nothing started), prints SKIP and exits 0. Without PyTorch on a CUDA GPU:
# SKIP, exit 0. Exit 1 on a failed check, 2 when it cannot run. About a minute.
#
# Usage: examples/gpu/validate_system_profiler.sh path/to/magpie [python3]
#   (from the checkout: it needs tests/e2e/timed_stream_server.py)
set -euo pipefail

magpie=${1:?usage: $0 path/to/magpie [python-with-torch]}
py=${2:-python3}
[[ -x "$magpie" ]] || { echo "ERROR: not an executable: $magpie" >&2; exit 2; }
magpie=$(cd "$(dirname "$magpie")" && pwd)/$(basename "$magpie")
here=$(cd "$(dirname "$0")" && pwd)
[[ -f "$here/../../tests/e2e/timed_stream_server.py" ]] || { echo "ERROR: run from a checkout" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The engine magpie launches: `<exe> serve MODEL --port N ...`.
cat >"$work/engine" <<SH
#!/usr/bin/env bash
exec "$(command -v "$py")" "$here/torch_matmul_engine.py" "\$@"
SH
chmod +x "$work/engine"
run() {
  timeout 170 "$magpie" benchmark vllm --model torch-matmul --run-mode local --engine-executable "$work/engine" \
    --system-profiler --concurrency 2 --num-prompts 24 --input-len 8 --output-len 8 --range-ratio 0 \
    --token-id-max 4000 --warmups 0 --ready-timeout 90 --timeout 160 -o "$work/out" "$@"
}

if ! command -v nsys >/dev/null; then
  set +e
  run >"$work/stdout" 2>"$work/stderr"
  rc=$?
  set -e
  echo "nsys is not on PATH. magpie's answer (exit $rc):"
  cat "$work/stderr"
  if [[ $rc -ne 3 ]] || ls "$work/out"/benchmark_* >/dev/null 2>&1; then
    echo "ERROR: expected exit 3 and no workspace when nsys is missing" >&2
    exit 1
  fi
  echo "SKIP: nsys not installed; the missing-tool error above is what a user gets"
  exit 0
fi
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIP: $py has no PyTorch with a CUDA GPU; nothing to profile"
  exit 0
fi
echo "nsys: $(nsys --version 2>&1 | head -1)"

set +e
run
rc=$?
set -e
ws=$(ls -d "$work/out"/benchmark_vllm_* 2>/dev/null | tail -1)
[[ -n "$ws" ]] || { echo "ERROR: no workspace (magpie exit $rc)" >&2; exit 1; }
cat "$ws/summary.txt"
"$py" - "$ws" "$rc" <<'PY'
import json, sys
from pathlib import Path
ws, rc = Path(sys.argv[1]), int(sys.argv[2])
r = json.loads((ws / "benchmark_report.json").read_text())
sp = r["system_profiler"]
print(json.dumps(sp, indent=1)[:4000])
problems = []
if rc != 0:
    problems.append(f"magpie exited {rc}: {r['errors']}")
if not sp or sp["tool"] != "nsys":
    problems.append("no nsys system_profiler block")
else:
    if not Path(sp["capture"]).is_file():
        problems.append(f"no capture at {sp['capture']}")
    ks = sp["kernels"]
    if not ks:
        problems.append(f"empty kernel summary; errors: {sp['errors']}")
    if not any("gemm" in k["name"].lower() or "matmul" in k["name"].lower() or "nvjet" in k["name"].lower() for k in ks):
        problems.append("no GEMM kernel in the summary: " + ", ".join(k["name"][:60] for k in ks[:10]))
    if any(k["instances"] < 1 or k["total_ns"] <= 0 for k in ks):
        problems.append("a kernel row without calls or time")
    if ks and abs(sum(k["percent"] for k in ks) - 100) > 1.5:
        problems.append(f"percentages add to {sum(k['percent'] for k in ks):.1f}")
if not r["kernel_summary"]:
    problems.append("Magpie's kernel_summary was not filled from the capture")
if r["throughput"] is None or r["throughput"]["completed_requests"] != 24:
    problems.append(f"load did not complete: {r['throughput']}")
if problems:
    print("FAIL:\n  " + "\n  ".join(problems))
    sys.exit(1)
print(f"OK: {len(sp['kernels'])} kernels in the nsys summary; top: {sp['kernels'][0]['name'][:80]}")
PY
