#!/usr/bin/env bash
# Session 16 call E (#28): CUPTI (this tree's compare) against ncu on the same GELU, one call.
set -u
R=$(pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p /tmp/new && python3 -m zipfile -e build-wheel/dist/magpie-*manylinux*.whl /tmp/new && chmod +x /tmp/new/Magpie/bin/magpie
MAGPIE_PYTHON_DIR=$R/python timeout 100 /tmp/new/Magpie/bin/magpie compare -k examples/kernel_speed/compare.yaml -o /tmp/c > $OUT/compare.txt 2>&1; echo "compare exit $?"
grep -E "^\| [01] " $OUT/compare.txt
cat > /tmp/g.py <<'PY'
import torch
x = torch.randn(8192, 8192, device="cuda")
for _ in range(40): torch.nn.functional.gelu(x)
torch.cuda.synchronize()
PY
timeout 120 ncu --clock-control none --cache-control all --metrics gpu__time_duration.sum -k regex:vectorized_elementwise --launch-skip 10 --launch-count 25 --csv python3 /tmp/g.py > $OUT/ncu.csv 2>&1; echo "ncu exit $?"
python3 - <<'PY' | tee $OUT/ncu_summary.txt
import csv, os, statistics
rows = [r for r in csv.reader(open(os.environ["OUT"] + "/ncu.csv")) if len(r) > 5 and "gpu__time_duration" in ",".join(r)]
v = [float(r[-1].replace(",", "")) for r in rows]
print("ncu gpu__time_duration of the GELU kernel: median %s %s over %d launches (cache-control all, clocks uncontrolled)"
      % (statistics.median(v) if v else None, rows[0][-2] if rows else "?", len(v)))
PY
