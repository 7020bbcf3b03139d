#!/usr/bin/env bash
# Second GPU pass for docs/GPU_VALIDATION.md: what `cupti_kind` changes. Run
# after run_h200.sh on the same machine (it reuses /tmp/libmagpie_cupti.so).
set -u
ROOT=$(pwd)
OUTDIR=${OUT:-/tmp/magpie_validation_out}
RES=/tmp/magpie_results_kind
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/cupti_kind.log") 2>&1
step() { echo; echo "===== $* ($(date +%T))"; }
V=$ROOT/examples/kernels/validation
for f in .kbin/lib/*; do ldconfig -p | grep -q " $(basename "$f") " && rm -f "$f"; done
export LD_LIBRARY_PATH=$ROOT/.kbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA=/usr/local/cuda; [ -d $CUDA ] || CUDA=$(ls -d /usr/local/cuda-1* | head -1)
export PATH=$CUDA/bin:$PATH
command -v ncu >/dev/null || export PATH=$PATH:$(dirname "$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)")
M=$ROOT/.kbin/magpie
LIB=/tmp/libmagpie_cupti.so
[ -f $LIB ] || { echo "run run_h200.sh first"; exit 1; }
export MAGPIE_CUPTI_LIB=$LIB MAGPIE_PYTHON_DIR=$ROOT/python

run() { step "magpie $*"; timeout 300 $M -v "$@" -o $RES; echo "exit=$?"; }
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
