#!/usr/bin/env bash
# Third GPU pass: what `cupti_kind: auto` picks once it weighs serial's fixed
# per-kernel cost against concurrent's per-block cost (run 5 in
# docs/GPU_VALIDATION.md). Builds libmagpie_cupti.so itself.
set -u
ROOT=$(pwd)
OUTDIR=${OUT:-/tmp/magpie_validation_out}
RES=/tmp/magpie_results_auto
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/auto.log") 2>&1
step() { echo; echo "===== $* ($(date +%T))"; }
V=$ROOT/examples/kernels/validation
for f in .kbin/lib/*; do ldconfig -p | grep -q " $(basename "$f") " && rm -f "$f"; done
export LD_LIBRARY_PATH=$ROOT/.kbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CUDA=/usr/local/cuda; [ -d $CUDA ] || CUDA=$(ls -d /usr/local/cuda-1* | head -1)
export PATH=$CUDA/bin:$PATH
command -v ncu >/dev/null || export PATH=$PATH:$(dirname "$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)")
M=$ROOT/.kbin/magpie
INC=$(dirname "$(find -L $CUDA/ -name cupti.h | head -1)")
LIBDIR=$(dirname "$(find -L $CUDA/ -name 'libcupti.so' | head -1)")
g++ -std=c++17 -O2 -shared -fPIC -fvisibility=hidden -I"$INC" -I$CUDA/include src/profiler/cupti/magpie_cupti.cpp \
  -L"$LIBDIR" -lcupti -Wl,-rpath,"$LIBDIR" -o /tmp/libmagpie_cupti.so || exit 1
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python
run() { step "magpie $*"; timeout 300 $M -v "$@" -o $RES; echo "exit=$?"; }
run analyze -k examples/kernels/vector_add/kernel.yaml --ncu
run analyze -k examples/kernels/softmax/kernel.yaml
run compare -k examples/kernels/side_stream/compare.yaml
step "CUPTI vs ncu"
python3 $V/cupti_vs_ncu.py $RES/analyze_*/analyze_report.json
step summary
python3 $V/summarize.py $RES
