#!/usr/bin/env bash
# Session 16, device call 2 (#28): the top 10 replays of the shipped H200 Llama trace, each
# baseline + its candidate (an unedited copy), default adaptive rounds, one after the other
# in this one call; per-compare walls. Stops starting new compares after 540 s.
set -u
R=$(pwd); T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p /tmp/w && python3 -m zipfile -e build-wheel/dist/magpie-*manylinux*.whl /tmp/w && chmod +x /tmp/w/Magpie/bin/magpie
M=/tmp/w/Magpie/bin/magpie
export MAGPIE_PYTHON_DIR=$R/python MAGPIE_RESULTS_DB=/tmp/replay_results.db
python3 -c 'import torch; torch.zeros(1, device="cuda"); print("cuda ok")'
t0=$(date +%s.%N)
$M replay .gpurun/trace.json.gz --top-k 10 -o /tmp/rp/replay > $OUT/replay.log 2>&1; echo "replay exit $? wall $(python3 -c "print(round($(date +%s.%N) - $t0,1))")" | tee -a $OUT/walls.txt
for yaml in /tmp/rp/replay/*/compare.yaml; do
  slug=$(basename "$(dirname "$yaml")")
  [ $(( $(date +%s) - T0 )) -lt 540 ] || { echo "SKIP $slug (time)" | tee -a $OUT/walls.txt; continue; }
  t0=$(date +%s.%N)
  timeout 120 $M compare -k "$yaml" -o /tmp/rp/compare/$slug > /tmp/rp_$slug.out 2>&1; rc=$?
  printf 'WALL %-48s %6.1f s exit %d\n' "$slug" "$(python3 -c "print($(date +%s.%N) - $t0)")" $rc | tee -a $OUT/walls.txt
  { echo "== $slug"; grep -vE '^\s*$' /tmp/rp_$slug.out | tail -25; } >> $OUT/compare_tails.txt
done
python3 examples/replay/summarize.py /tmp/rp/replay/replay.json /tmp/rp/compare > $OUT/summary.md 2>&1; cat $OUT/summary.md | head -30
tar czf $OUT/replay_reports.tgz --exclude='*.jsonl' -C /tmp rp 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
