#!/usr/bin/env bash
# Wall time of `magpie compare` on a CUDA machine (issue 28), from the repository
# root after `cmake --preset release && cmake --build --preset release -j16 --target magpie`:
#   bash examples/kernel_speed/measure_compare_speed.sh
# (a) one PyTorch candidate (~125 us GELU) vs its baseline: the default (a harness
#     worker per implementation, CUPTI kind from the first round, adaptive rounds),
#     then the same with a process per run and 5 fixed rounds (MAGPIE_HARNESS_WORKER=0
#     --rounds 5) for comparison;
# (b) the cheating-candidate suite (examples/kernels/cheats/compare.yaml): every
#     cheat must still be rejected, the honest verdicts kept.
# Prints verdicts and wall seconds; logs and reports go to $OUT (default /tmp/kernel_speed).
# Bounded to about 6 minutes (a timeout per compare).
set -u
ROOT=$(pwd)
OUTDIR=${OUT:-/tmp/kernel_speed}
M=${MAGPIE:-$ROOT/build/apps/magpie/magpie}
RES=$OUTDIR/results
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/measure.log") 2>&1
export MAGPIE_PYTHON_DIR=$ROOT/python MAGPIE_RESULTS_DB=$OUTDIR/results.db

echo "== $(date +%T) environment"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
"$M" --version || { echo "no magpie binary at $M"; exit 1; }
# Warm the page cache (torch's libraries, the CUDA driver) so the first timed compare is not the only cold one.
python3 -c 'import torch; torch.zeros(1, device="cuda"); print("cuda ok")'

# timed NAME LIMIT ARGS...: one compare, its wall seconds and a verdict line per implementation.
timed() {
  local name=$1 limit=$2; shift 2
  local out=$RES/$name t0 t1 rc
  echo; echo "== $(date +%T) $name: magpie $*"
  t0=$(date +%s.%N)
  timeout "$limit" "$M" "$@" -o "$out" > "$OUTDIR/$name.stdout" 2> "$OUTDIR/$name.stderr"
  rc=$?
  t1=$(date +%s.%N)
  cat "$OUTDIR/$name.stdout"
  grep -E "^verdict:|FAILED|note: CUPTI" "$OUTDIR/$name.stderr" "$OUTDIR/$name.stdout" | head -30
  local ws; ws=$(ls -d "$out"/compare_*/ 2>/dev/null | tail -1)
  [ -n "$ws" ] && [ -f "$ws/compare_report.json" ] && python3 examples/kernels/cheats/summarize.py "$ws"
  printf 'WALL %-24s %7.1f s  exit %d\n' "$name" "$(python3 -c "print($t1 - $t0)")" "$rc" | tee -a "$OUTDIR/walls.txt"
}

timed gelu_worker_adaptive 60 compare -k examples/kernel_speed/compare.yaml
timed gelu_worker_rounds5 60 compare -k examples/kernel_speed/compare.yaml --rounds 5
MAGPIE_HARNESS_WORKER=0 timed gelu_process_per_run_rounds5 100 compare -k examples/kernel_speed/compare.yaml --rounds 5
timed cheats_worker 140 compare -k examples/kernels/cheats/compare.yaml

echo; echo "== summary"; cat "$OUTDIR/walls.txt"
tar czf "$OUTDIR/results.tgz" --exclude='*.jsonl' --exclude='worker.re*' -C "$OUTDIR" results 2>/dev/null
