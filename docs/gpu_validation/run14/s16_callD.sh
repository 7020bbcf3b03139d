#!/usr/bin/env bash
# Session 16 call D (#28): previous main (f9825bf) vs this tree (+ workers wind down side by side), alternated.
set -u
R=$(pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt; date -u | tee -a $OUT/gpu.txt
for v in old new; do mkdir -p /tmp/$v; done
python3 -m zipfile -e .gpurun/old/magpie-*manylinux*.whl /tmp/old && python3 -m zipfile -e build-wheel/dist/magpie-*manylinux*.whl /tmp/new && chmod +x /tmp/old/Magpie/bin/magpie /tmp/new/Magpie/bin/magpie
OLD=/tmp/old/Magpie/bin/magpie; NEW=/tmp/new/Magpie/bin/magpie
python3 -c 'import torch; torch.zeros(1, device="cuda")'
pair() {  # NAME BIN PYDIR
  local t0=$(date +%s.%N) rc
  MAGPIE_PYTHON_DIR=$3 MAGPIE_RESULTS_DB=/tmp/results_$1.db timeout 100 $2 compare -k examples/kernel_speed/compare.yaml -o /tmp/pair/$1 > /tmp/pair_$1.stdout 2> /tmp/pair_$1.stderr
  rc=$?
  printf 'WALL %-6s %7.1f s exit %d\n' "$1" "$(python3 -c "print($(date +%s.%N) - $t0)")" "$rc" | tee -a $OUT/walls.txt
  { echo "== $1"; cat /tmp/pair_$1.stdout; } >> $OUT/pair_stdout.txt
  grep -E "SAME|FASTER|SLOWER|FAILED" /tmp/pair_$1.stdout | cut -c1-150 | head -2
}
pair new1 $NEW $R/python; pair old1 $OLD $R/.gpurun/old/python; pair new2 $NEW $R/python; pair new3 $NEW $R/python
for n in new1 new2 new3; do echo "== $n"; find /tmp/pair/$n -type f -printf '%TT %P\n' | sort | sed 's|compare_[0-9_]*/||'; done > $OUT/file_times.txt
tail -18 $OUT/file_times.txt
