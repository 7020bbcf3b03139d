#!/usr/bin/env bash
# Session 16 call B (#28): L2-flush candidates; the new worker (CUPTI kind switched in place, fast
# JSONL reader) against the previous main (f9825bf, its binary and harness), paired; min_time 0.2.
set -u
R=$(pwd); T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for v in old new; do mkdir -p /tmp/$v; done
python3 -m zipfile -e .gpurun/old/magpie-*manylinux*.whl /tmp/old && python3 -m zipfile -e build-wheel/dist/magpie-*manylinux*.whl /tmp/new && chmod +x /tmp/old/Magpie/bin/magpie /tmp/new/Magpie/bin/magpie
timeout 90 python3 .gpurun/flush_bench.py 2>&1 | tee $OUT/flush.txt
sed 's/^kernels:/latency: {min_time_s: 0.2}\nkernels:/' examples/kernel_speed/compare.yaml > examples/kernel_speed/compare_02.yaml
pair() {  # NAME BIN PYDIR LIMIT_S YAML
  [ $(( $(date +%s) - T0 )) -lt 420 ] || { echo "SKIP $1" | tee -a $OUT/walls.txt; return; }
  local t0=$(date +%s.%N) rc
  MAGPIE_PYTHON_DIR=$3 MAGPIE_RESULTS_DB=/tmp/results_$1.db timeout $4 $2 compare -k $5 -o /tmp/pair/$1 > /tmp/pair_$1.stdout 2> /tmp/pair_$1.stderr
  rc=$?
  printf 'WALL %-10s %7.1f s exit %d  %s\n' "$1" "$(python3 -c "print($(date +%s.%N) - $t0)")" "$rc" "$5" | tee -a $OUT/walls.txt
  { echo "== $1"; cat /tmp/pair_$1.stdout; echo "-- stderr tail"; tail -5 /tmp/pair_$1.stderr; } >> $OUT/pair_stdout.txt
  grep -E "SAME|FASTER|SLOWER|FAILED" /tmp/pair_$1.stdout | head -3
}
python3 -c 'import torch; torch.zeros(1, device="cuda")'
pair old /tmp/old/Magpie/bin/magpie $R/.gpurun/old/python 120 examples/kernel_speed/compare.yaml
pair new /tmp/new/Magpie/bin/magpie $R/python 120 examples/kernel_speed/compare.yaml
pair new02 /tmp/new/Magpie/bin/magpie $R/python 120 examples/kernel_speed/compare_02.yaml
pair old_b /tmp/old/Magpie/bin/magpie $R/.gpurun/old/python 120 examples/kernel_speed/compare.yaml
pair new_b /tmp/new/Magpie/bin/magpie $R/python 120 examples/kernel_speed/compare.yaml
for n in new new02; do grep -h "worker\|CUPTI" /tmp/pair/$n/compare_*/gelu_torch/harness_worker.log | cut -c1-160; done > $OUT/worker_logs.txt
python3 - <<'PY' > $OUT/harness_cost.txt 2>&1
import glob, json, re
for f in sorted(glob.glob("/tmp/pair/*/compare_*/*/performance_r*.log")):
    t = open(f).read(); m = re.search(r'"harness_s":(\{[^}]*\})', t); s = re.search(r'"n_repeat":(\d+)', t)
    if m: print(f.replace("/tmp/pair/", ""), s.group(1) if s else "?", m.group(1))
PY
tail -12 $OUT/harness_cost.txt
tar czf $OUT/pair.tgz --exclude='*.jsonl' -C /tmp pair 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
