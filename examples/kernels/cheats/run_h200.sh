#!/usr/bin/env bash
# The cheating-candidate suite on a CUDA machine (from the repository root, with
# .kbin/ from examples/kernels/validation/prepare_kbin.sh), then the side-stream
# example and the softmax compare again (honest verdicts must not move).
# Also records the traces of examples/h200_traces/record_traces.py into $OUT.
set -u
OUTDIR=${OUT:-/tmp/magpie_cheats_out}
RES=/tmp/magpie_results
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/cheats.log") 2>&1
source examples/kernels/validation/device_env.sh

step environment
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
$M --version || { echo "magpie binary does not run here"; ldd $M; exit 1; }

step build libmagpie_cupti.so
build_cupti_lib /tmp/libmagpie_cupti.so
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python

run compare -k examples/kernels/cheats/compare.yaml
python3 examples/kernels/cheats/summarize.py "$(ls -d $RES/compare_*/ | tail -1)"
run compare -k examples/kernels/side_stream/compare.yaml
python3 examples/kernels/cheats/summarize.py "$(ls -d $RES/compare_*/ | tail -1)"
run compare -k examples/kernels/softmax/compare.yaml
python3 examples/kernels/cheats/summarize.py "$(ls -d $RES/compare_*/ | tail -1)"

if [ -z "${SKIP_TRACES:-}" ]; then
  step "record traces (examples/h200_traces/record_traces.py)"
  (cd /tmp && timeout 300 python3 $ROOT/examples/h200_traces/record_traces.py /tmp/h200_traces 2>&1 | grep -v -i warn | tail -20)
  (cd /tmp/h200_traces && du -sh . && tar czf $OUTDIR/inductor_cache.tgz inductor_cache && cp *.json.gz README.md $OUTDIR/)
fi
tar czf $OUTDIR/results.tgz --exclude='*.jsonl' -C /tmp magpie_results
ls -la $OUTDIR
