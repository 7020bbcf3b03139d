#!/usr/bin/env bash
# GPU validation of `magpie analyze|compare` (docs/GPU_VALIDATION.md). Run from
# the repository root on a CUDA machine, with the magpie binary (and any shared
# libraries it needs) in .kbin/. Writes logs and a tarball of reports to $OUT.
# QUICK=1 skips the matmul analyze, the wrong-kernel compare and the overhead runs.
set -u
OUTDIR=${OUT:-/tmp/magpie_validation_out}
RES=/tmp/magpie_results
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/validation.log") 2>&1
source examples/kernels/validation/device_env.sh

step environment
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.max.sm --format=csv
nvcc --version | tail -2; ncu --version | tail -1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
$M --version || { echo "magpie binary does not run here"; ldd $M; exit 1; }

step build libmagpie_cupti.so
build_cupti_lib /tmp/libmagpie_cupti.so && nm -D /tmp/libmagpie_cupti.so | grep -E 'Initialize|magpie_'
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python

run analyze -k examples/kernels/vector_add/kernel.yaml --ncu
run compare -k examples/kernels/vector_add/compare_self.yaml
[ -n "${QUICK:-}" ] || run analyze -k examples/kernels/matmul/kernel.yaml --ncu
run compare -k examples/kernels/matmul/compare.yaml
[ -n "${QUICK:-}" ] || run compare -k examples/kernels/wrong/compare.yaml
run analyze -k examples/kernels/softmax/kernel.yaml
run compare -k examples/kernels/softmax/compare.yaml
run compare -k examples/kernels/side_stream/compare.yaml

step CV of repeated medians, 10 processes each
VA=$(ls $RES/analyze_vector_add_*/vector_add/vector_add | head -1)
MT=$(ls $RES/analyze_matmul_tiled_*/matmul_tiled/matmul $RES/compare_*/matmul_tiled/matmul 2>/dev/null | head -1)
python3 $V/cv_of_medians.py 10 $VA 50
python3 $V/cv_of_medians.py 10 $MT 30
(cd examples/kernels/softmax && PYTHONPATH=$ROOT/python python3 $V/cv_of_medians.py 10 python3 -m magpie_bench time \
  --target softmax_triton:softmax --target-dir . --inputs softmax_triton:get_inputs --json /tmp/t.json --min-time 0.3 --max-time 3)

step CUPTI vs ncu
python3 $V/cupti_vs_ncu.py $RES/analyze_*/analyze_report.json

step CUPTI library overhead on a PyTorch workload, alternating, 3 each
for i in $([ -n "${QUICK:-}" ] || echo 1 2 3); do
  python3 $V/torch_workload.py plain
  CUDA_INJECTION64_PATH=/tmp/libmagpie_cupti.so MAGPIE_CUPTI_OUTPUT=/tmp/ov.jsonl python3 $V/torch_workload.py cupti
  echo "cupti records: $(wc -l < /tmp/ov.jsonl)"; rm -f /tmp/ov.jsonl
done

step summary
python3 $V/summarize.py $RES
head -c 3000 "$(ls $RES/analyze_vector_add_*/vector_add/kernels_r0.jsonl | head -1)" > $OUTDIR/cupti_sample.jsonl
tail -40 "$(ls $RES/analyze_vector_add_*/vector_add/ncu.log | head -1)" > $OUTDIR/ncu_tail.log 2>/dev/null
tar czf $OUTDIR/results.tgz --exclude='*.jsonl' -C /tmp magpie_results
ls -la $OUTDIR
