#!/usr/bin/env bash
# Checks gpu_selection and gpu_monitor of `magpie compare` on a machine with
# NVIDIA GPUs: two compare runs of a tiny PyTorch example (c = a + b, from
# examples/kernels/side_stream, against itself) are started at once, each with
# `gpu_selection: {count: 1}` and `gpu_monitor: {enabled: true}`.
#
#  - With 2 or more GPUs: both must succeed on different GPUs (the per-GPU lock),
#    each report's gpu_selection naming its GPU (index, name, UUID) and its
#    environment block listing only that GPU.
#  - With 1 GPU: exactly one run gets it; the other fails at once (exit 2) with a
#    message saying another magpie run holds it (gpu_selection.wait_sec is 0 by
#    default). Then the pair runs again with wait_sec: 300: both succeed, one
#    after the other, and the second's reason says how long it waited.
#  - Every run that succeeded: gpu_monitor sampled its GPU (and only it), with
#    SM clock and power in every sample of gpu_monitor.csv, and the report says
#    whether clocks were lowered (throttle reasons) while timing.
#
# Prints what each run chose and its monitor summary; exits 1 on any failed
# check, 2 when it cannot run, 0 with a SKIP line without an NVIDIA GPU.
# About a minute on an H200 pair; under 3 minutes on one GPU.
#
# Usage (from the checkout): examples/gpu/validate_compare_gpu_selection.sh path/to/magpie
# Needs bash, python3 with torch built for CUDA (the kernel harness imports it).
set -euo pipefail

magpie=${1:?usage: $0 path/to/magpie}
[[ -x "$magpie" ]] || { echo "not an executable: $magpie" >&2; exit 2; }
magpie=$(cd "$(dirname "$magpie")" && pwd)/$(basename "$magpie")
here=$(cd "$(dirname "$0")" && pwd)
example="$here/../kernels/side_stream"
[[ -f "$example/add_torch.py" ]] || { echo "example not found at $example" >&2; exit 2; }
# Libraries carried beside the binary (.kbin/lib).
if [[ -d "$(dirname "$magpie")/lib" ]]; then
  export LD_LIBRARY_PATH="$(cd "$(dirname "$magpie")/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A lock folder of our own: runs elsewhere on this host do not get in the way.
export MAGPIE_GPU_LOCK_DIR="$work/locks"
mkdir -p "$MAGPIE_GPU_LOCK_DIR"

"$magpie" --gpu-info --json >"$work/gpu_info.json" || { echo "magpie --gpu-info --json failed" >&2; exit 2; }
gpus=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["devices"]))' "$work/gpu_info.json")
if [[ "$gpus" == "0" ]]; then
  echo "SKIP: no NVIDIA GPU visible to NVML here; nothing to select"
  exit 0
fi
echo "GPUs: $gpus"
# The harness (python/magpie_bench) from this checkout.
export MAGPIE_PYTHON_DIR=${MAGPIE_PYTHON_DIR:-$(cd "$here/../../python" && pwd)}
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
  { echo "python3 with CUDA torch is needed (the kernel harness imports it)" >&2; exit 2; }

config() {  # config FILE WAIT_SEC
  cat >"$1" <<YAML
kernels:
  - {id: add_a, type: pytorch, working_dir: $example,
     bench_target: {module: add_torch, callable: add, get_inputs: get_inputs}}
  - {id: add_b, type: pytorch, working_dir: $example,
     bench_target: {module: add_torch, callable: add, get_inputs: get_inputs}}
correctness: {seeds: 1}
performance: {rounds: 2}
latency: {min_time_s: 0.3, max_time_s: 2}
gpu_selection: {count: 1, min_free_memory_gb: 4, wait_sec: $2}
gpu_monitor: {enabled: true, interval_sec: 0.2}
YAML
}

pair() {  # pair NAME WAIT_SEC: two compares at once; exit codes in $work/NAME_{1,2}.rc
  config "$work/$1.yaml" "$2"
  for i in 1 2; do
    ( set +e; timeout 170 "$magpie" compare -k "$work/$1.yaml" -o "$work/$1_$i" \
        >"$work/$1_$i.out" 2>"$work/$1_$i.err"; echo $? >"$work/$1_$i.rc" ) &
  done
  wait
}

check() {  # check NAME...: the successful runs' reports (python, below)
  python3 - "$work" "$gpus" "$@" <<'PY'
import csv, json, pathlib, sys
work, gpus, names = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
failed, chosen = [], []
def bad(msg):
    failed.append(msg); print("FAIL:", msg)
for name in names:
    rc = int((work / f"{name}.rc").read_text())
    out, err = (work / f"{name}.out").read_text(), (work / f"{name}.err").read_text()
    if rc != 0:
        print(f"{name}: exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}")
        if gpus == 1 and rc == 2 and "in use by another magpie run" in err and "wait" not in name:
            chosen.append(None)
            continue
        bad(f"{name} failed (exit {rc}):\n{out[-1500:]}\n{err[-1500:]}")
        continue
    ws = next((work / name).glob("compare_*"))
    rep = json.loads((ws / "compare_report.json").read_text())
    sel = rep.get("gpu_selection") or {}
    if not sel.get("applied"):
        bad(f"{name}: selection not applied: {sel}"); continue
    g = sel["gpus"][0]
    chosen.append(g["index"])
    print(f"{name}: GPU {g['index']} {g['name']} {g['uuid']} ({sel['reason']})")
    if not (g["name"] and str(g["uuid"]).startswith("GPU-")):
        bad(f"{name}: the report does not name its GPU: {g}")
    if f"GPU: GPU {g['index']} ({g['name']}" not in out:
        bad(f"{name}: the console does not name its GPU")
    env_gpus = [x["index"] for x in rep["environment"]["gpus"]]
    if env_gpus != [g["index"]]:
        bad(f"{name}: environment lists GPUs {env_gpus}, not {g['index']}")
    mon = rep.get("gpu_monitor") or {}
    if not mon.get("available"):
        bad(f"{name}: gpu_monitor unavailable: {mon}"); continue
    if [x["index"] for x in mon["gpus"]] != [g["index"]]:
        bad(f"{name}: monitor sampled {[x['index'] for x in mon['gpus']]}, not the chosen GPU")
    f = mon["gpus"][0]["fields"]
    print(f"  monitor: {mon['samples']} samples; SM clock {f.get('sm_clock_mhz')}; power {f.get('power_w')}")
    print(f"  throttle while timing: {mon['throttle']['throttled']} {[t['reasons'] for t in mon['throttle']['gpus']]}")
    if mon["samples"] < 3 or "sm_clock_mhz" not in f or "power_w" not in f:
        bad(f"{name}: too few samples or no SM clock / power: {mon}"); continue
    rows = list(csv.DictReader(open(ws / "gpu_monitor.csv")))
    if not rows or any(not r["sm_clock_mhz"] or not r["power_w"] for r in rows):
        bad(f"{name}: gpu_monitor.csv rows without SM clock or power")
    if not (0 < f["sm_clock_mhz"]["max"] < 4000 and 0 < f["power_w"]["max"] < 2000):
        bad(f"{name}: implausible SM clock or power: {f}")
    if mon["throttle"]["throttled"] and not any(w.startswith("gpu_monitor:") for w in rep.get("warnings", [])):
        bad(f"{name}: throttled but no warning in the report")
got = [c for c in chosen if c is not None]
if gpus >= 2 and len(set(got)) != 2:
    bad(f"two runs at once on {gpus} GPUs did not get two different GPUs: {chosen}")
if gpus == 1 and "wait" not in names[0] and sorted(chosen, key=lambda c: c is None) != [0, None]:
    bad(f"on one GPU exactly one of two runs at once must get it, the other fail clearly: {chosen}")
if gpus == 1 and "wait" in names[0] and got != [0, 0]:
    bad(f"with wait_sec both runs must get the GPU in turn: {chosen}")
sys.exit(1 if failed else 0)
PY
}

status=0
echo "== two compares at once, gpu_selection: {count: 1}"
pair at_once 0
check at_once_1 at_once_2 || status=1
if [[ "$gpus" == "1" ]]; then
  echo "== one GPU: the same pair with wait_sec: 300 (the second waits for the first)"
  pair wait 300
  check wait_1 wait_2 || status=1
  grep -h "waited" "$work"/wait_*/compare_*/compare_report.json >/dev/null ||
    { echo "FAIL: neither run says it waited"; status=1; }
fi
[[ $status == 0 ]] && echo "PASS" || echo "FAILED"
exit $status
