#!/usr/bin/env bash
# Third GPU pass: what `cupti_kind: auto` picks once it weighs serial's fixed
# per-kernel cost against concurrent's per-block cost (run 5 in
# docs/GPU_VALIDATION.md). Builds libmagpie_cupti.so itself.
set -u
OUTDIR=${OUT:-/tmp/magpie_validation_out}
RES=/tmp/magpie_results_auto
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/auto.log") 2>&1
source examples/kernels/validation/device_env.sh
build_cupti_lib /tmp/libmagpie_cupti.so || exit 1
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python
run analyze -k examples/kernels/vector_add/kernel.yaml --ncu
run analyze -k examples/kernels/softmax/kernel.yaml
run compare -k examples/kernels/side_stream/compare.yaml
step "CUPTI vs ncu"
python3 $V/cupti_vs_ncu.py $RES/analyze_*/analyze_report.json
step summary
python3 $V/summarize.py $RES
