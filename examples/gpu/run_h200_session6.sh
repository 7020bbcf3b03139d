#!/usr/bin/env bash
# One device call (sixth session):
#   1. `profiler.gpu_monitor` during a serving benchmark, now with the measuring
#      window and the throttle block (examples/gpu/validate_gpu_monitor.sh)
#   2. a real trace with non-NCCL communication kernels (PyTorch symmetric-memory
#      all-reduce, examples/h200_traces/record_symm_mem.py), then gap analysis and
#      both tracelens modes on it
# Run from the repository root with .kbin/ prepared (prepare_kbin.sh). OUT: where it all lands.
set -u
OUT=${OUT:?set OUT}
RES=$OUT/scratch
mkdir -p "$OUT" "$RES"
source examples/kernels/validation/device_env.sh
step environment
nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap,clocks.sm,clocks.max.sm,power.limit --format=csv
$M --version
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"

step "1. gpu_monitor during a serving benchmark (measuring window, throttle block)"
timeout 120 bash examples/gpu/validate_gpu_monitor.sh $M >"$OUT/gpu_monitor.log" 2>&1; echo "gpu_monitor exit=$?" | tee -a "$OUT/gpu_monitor.log"
tail -40 "$OUT/gpu_monitor.log"

step "2. symmetric-memory all-reduce trace"
SM=$OUT/symm_mem
timeout 180 python3 examples/h200_traces/record_symm_mem.py "$SM" >"$OUT/symm_mem.log" 2>&1
echo "record_symm_mem exit=$?" | tee -a "$OUT/symm_mem.log"
tail -20 "$OUT/symm_mem.log"
if [ -f "$SM/symm_mem_allreduce.json.gz" ]; then
  mkdir -p "$RES/in" && cp "$SM/symm_mem_allreduce.json.gz" "$RES/in/"
  for cmd in "benchmark --trace-dir $RES/in" "tracelens $SM/symm_mem_allreduce.json.gz --mode pytorch" \
             "tracelens $SM/symm_mem_allreduce.json.gz --mode inference"; do
    step "magpie $cmd"
    $M $cmd -o "$RES/out" 2>&1 | tail -25; echo "exit=${PIPESTATUS[0]}"
  done
  find "$RES/out" -name 'gpu_timeline.csv' -o -name 'collective_ranks.csv' -o -name 'gap_analysis.csv' | while read -r f; do
    echo "--- $f"; head -12 "$f"; done
fi
rm -rf "$RES"
cd "$OUT" && [ -d symm_mem ] && tar czf symm_mem.tgz symm_mem && rm -rf symm_mem; ls -la "$OUT"
