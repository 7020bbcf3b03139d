#!/usr/bin/env bash
# Session 16 call C (#28 final): previous main (f9825bf: binary + harness) vs this tree (worker switches
# CUPTI kind in place, fast JSONL reader, float32 L2 flush, min_time_s 0.2 per round), paired and
# alternated; the cheat suite; the top 10 replays of the shipped H200 Llama trace; ncu vs CUPTI on the GELU.
set -u
R=$(pwd); T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt; date -u | tee -a $OUT/gpu.txt
for v in old new; do mkdir -p /tmp/$v; done
python3 -m zipfile -e .gpurun/old/magpie-*manylinux*.whl /tmp/old && python3 -m zipfile -e build-wheel/dist/magpie-*manylinux*.whl /tmp/new && chmod +x /tmp/old/Magpie/bin/magpie /tmp/new/Magpie/bin/magpie
OLD=/tmp/old/Magpie/bin/magpie; NEW=/tmp/new/Magpie/bin/magpie
$NEW --version | tee -a $OUT/gpu.txt
python3 -c 'import torch; torch.zeros(1, device="cuda")'
pair() {  # NAME BIN PYDIR LIMIT_S YAML
  local t0=$(date +%s.%N) rc
  MAGPIE_PYTHON_DIR=$3 MAGPIE_RESULTS_DB=/tmp/results_$1.db timeout $4 $2 compare -k $5 -o /tmp/pair/$1 > /tmp/pair_$1.stdout 2> /tmp/pair_$1.stderr
  rc=$?
  printf 'WALL %-10s %7.1f s exit %d  %s\n' "$1" "$(python3 -c "print($(date +%s.%N) - $t0)")" "$rc" "$5" | tee -a $OUT/walls.txt
  { echo "== $1"; cat /tmp/pair_$1.stdout; echo "-- stderr tail"; tail -5 /tmp/pair_$1.stderr; } >> $OUT/pair_stdout.txt
  grep -E "SAME|FASTER|SLOWER|FAILED" /tmp/pair_$1.stdout | cut -c1-150 | head -9
}
pair old $OLD $R/.gpurun/old/python 120 examples/kernel_speed/compare.yaml
pair new $NEW $R/python 120 examples/kernel_speed/compare.yaml
pair old_b $OLD $R/.gpurun/old/python 120 examples/kernel_speed/compare.yaml
pair new_b $NEW $R/python 120 examples/kernel_speed/compare.yaml
pair cheats $NEW $R/python 150 examples/kernels/cheats/compare.yaml
export MAGPIE_PYTHON_DIR=$R/python MAGPIE_RESULTS_DB=/tmp/replay_results.db
$NEW replay .gpurun/trace.json.gz --top-k 10 -o /tmp/rp/replay > $OUT/replay.log 2>&1
T1=$(date +%s)
for yaml in /tmp/rp/replay/*/compare.yaml; do
  slug=$(basename "$(dirname "$yaml")")
  [ $(( $(date +%s) - T0 )) -lt 500 ] || { echo "SKIP $slug (time)" | tee -a $OUT/walls.txt; continue; }
  t0=$(date +%s.%N)
  timeout 90 $NEW compare -k "$yaml" -o /tmp/rp/compare/$slug > /tmp/rp_$slug.out 2>&1; rc=$?
  printf 'WALL %-14s %6.1f s exit %d\n' "$slug" "$(python3 -c "print($(date +%s.%N) - $t0)")" $rc | tee -a $OUT/walls.txt
  { echo "== $slug"; grep -vE '^\s*$' /tmp/rp_$slug.out | tail -12; } >> $OUT/compare_tails.txt
done
echo "replays: $(( $(date +%s) - T1 )) s for 10 compares" | tee -a $OUT/walls.txt
python3 examples/replay/summarize.py /tmp/rp/replay/replay.json /tmp/rp/compare > $OUT/summary.md 2>&1; cat $OUT/summary.md
cat > /tmp/g.py <<'PY'
import torch
x = torch.randn(8192, 8192, device="cuda")
for _ in range(30): torch.nn.functional.gelu(x)
torch.cuda.synchronize()
PY
timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:GeluCUDAKernel --launch-skip 5 --launch-count 20 --csv python3 /tmp/g.py > $OUT/ncu.csv 2>&1; echo "ncu exit $?"
python3 - <<'PY' | tee -a $OUT/walls.txt
import csv, statistics
rows = [r for r in csv.reader(open("/root/out/ncu.csv".replace("/root/out", __import__("os").environ["OUT"]))) if len(r) > 5 and r[-3] == "gpu__time_duration.sum"]
v = [float(r[-1].replace(",", "")) for r in rows]
unit = rows[0][-2] if rows else "?"
print("ncu gelu median %s %s over %d launches" % (statistics.median(v) if v else None, unit, len(v)))
PY
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 150 python3 examples/critical_path/validate_whatif.py record $OUT/rec > $OUT/record.log 2>&1; echo "record exit $?"
  rm -f $OUT/rec/decode_graph.json.gz; tar czf $OUT/rec.tgz -C $OUT rec && rm -rf $OUT/rec
  timeout 60 python3 examples/critical_path/graph_gap.py 2>&1 | tee -a $OUT/graph_gap.txt
fi
tar czf $OUT/results.tgz --exclude='*.jsonl' -C /tmp pair rp 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
