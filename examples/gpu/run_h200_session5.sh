#!/usr/bin/env bash
# One device call (fifth session): what the H200 still owes the open issues.
#   1. `--gpu-info --json` against nvidia-smi (examples/gpu/validate_gpu_info.sh)
#   2. `profiler.gpu_monitor` during a benchmark (examples/gpu/validate_gpu_monitor.sh)
#   3. real plain-CUDA-graph and torch.compile traces with the inductor cache
#      (examples/h200_traces/record_traces.py → $OUT/h200_graphs)
#   4. `magpie replay` ranks 6-10 of the shipped Llama trace (examples/replay/run_h200.sh)
# Run from the repository root with .kbin/ prepared (prepare_kbin.sh). OUT: where it all lands.
set -u
OUT=${OUT:?set OUT}
RES=$OUT/scratch
mkdir -p "$OUT" "$RES"
source examples/kernels/validation/device_env.sh
step environment
nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap,clocks.sm,clocks.max.sm,power.limit --format=csv
$M --version

if [ -z "${SKIP_CHECKS:-}" ]; then
step "1. --gpu-info against nvidia-smi"
timeout 60 bash examples/gpu/validate_gpu_info.sh $M >"$OUT/gpu_info.log" 2>&1; echo "gpu_info exit=$?" | tee -a "$OUT/gpu_info.log"
tail -40 "$OUT/gpu_info.log"

step "2. gpu_monitor during a benchmark"
timeout 90 bash examples/gpu/validate_gpu_monitor.sh $M >"$OUT/gpu_monitor.log" 2>&1; echo "gpu_monitor exit=$?" | tee -a "$OUT/gpu_monitor.log"
tail -40 "$OUT/gpu_monitor.log"
fi

if [ -z "${SKIP_TRACES:-}" ]; then
  step "3. record plain CUDA graph and torch.compile traces"
  timeout ${TRACES_BUDGET:-200} python3 examples/h200_traces/record_traces.py "$OUT/h200_graphs" >"$OUT/record_traces.log" 2>&1
  echo "record_traces exit=$?" | tee -a "$OUT/record_traces.log"
  tail -15 "$OUT/record_traces.log"
  rm -rf "$OUT/h200_graphs/triton_cache"
  du -sh "$OUT/h200_graphs" 2>/dev/null; ls -la "$OUT/h200_graphs" 2>/dev/null
fi

if [ -z "${SKIP_REPLAY:-}" ]; then
  step "4. replay ranks ${RANKS:-6 7 8 9 10}"
  TRACE=$ROOT/examples/traces/llama_4layer_bs16_prompt1024_decode16.json.gz TOPK=10 RANKS="${RANKS:-6 7 8 9 10}" \
    ROUNDS=${ROUNDS:-1} OUT=$OUT/replay timeout ${REPLAY_BUDGET:-220} bash examples/replay/run_h200.sh >/dev/null 2>&1
  echo "replay exit=$?"
  [ -f $OUT/replay/summary.md ] || python3 examples/replay/summarize.py $OUT/replay/replay/replay.json $OUT/replay/compare > $OUT/replay/summary.md
  cat $OUT/replay/summary.md

fi
rm -rf "$RES"
# Few files come back from the device: one archive per part.
cd "$OUT" && for d in h200_graphs replay; do [ -d $d ] && tar czf $d.tgz $d && rm -rf $d; done; ls -la "$OUT"
