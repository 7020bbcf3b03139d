#!/usr/bin/env bash
# Second GPU pass for docs/GPU_VALIDATION.md: what `cupti_kind` changes. Run
# after run_h200.sh on the same machine (it reuses /tmp/libmagpie_cupti.so).
set -u
OUTDIR=${OUT:-/tmp/magpie_validation_out}
RES=/tmp/magpie_results_kind
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/cupti_kind.log") 2>&1
source examples/kernels/validation/device_env.sh
LIB=/tmp/libmagpie_cupti.so
[ -f $LIB ] || { echo "run run_h200.sh first"; exit 1; }
export MAGPIE_CUPTI_LIB=$LIB MAGPIE_PYTHON_DIR=$ROOT/python

run analyze -k examples/kernels/vector_add/kernel.yaml --cupti-kind concurrent --ncu
run analyze -k examples/kernels/softmax/kernel.yaml --cupti-kind concurrent
run analyze -k examples/kernels/softmax/kernel.yaml --cupti-kind serial

step "CUPTI vs ncu, vector_add forced concurrent"
python3 $V/cupti_vs_ncu.py $RES/analyze_vector_add_*/analyze_report.json

step "PyTorch workload: CUPTI kernel durations under each kind"
cd $V
python3 cupti_modes.py $LIB 2 'softmax' python3 torch_workload.py x
python3 cupti_modes.py $LIB 2 'elementwise' python3 torch_workload.py x
python3 cupti_modes.py $LIB 2 'gemm|nvjet|cutlass|sm90' python3 torch_workload.py x
step "ncu on the workload's softmax and elementwise kernels"
for k in softmax elementwise; do
  echo "-- $k"
  ncu --clock-control none -k regex:$k --launch-count 10 --metrics gpu__time_duration.sum --csv python3 torch_workload.py x 2>&1 |
    grep gpu__time_duration | awk -F'","' '{print $NF}' | tr -d '"' | tr '\n' ' '; echo
done
cd $ROOT
step summary
python3 $V/summarize.py $RES
