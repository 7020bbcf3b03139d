#!/usr/bin/env bash
# The optimization loop's GPU half on the H200 (docs/OPTIMIZATION_LOOP.md), on a trace recorded
# there (the shipped Llama-shaped trace, prefill + decode):
#   gap analysis → the bottleneck ops → `magpie replay` of the top 10 → a candidate for one of
#   them (examples/loop/rowscale_triton.py for rank 7, RMSNorm's row scaling) → `magpie compare`
#   with the recorded op as baseline → the verdict.
# Run from the repository root with .kbin/ prepared (examples/kernels/validation/prepare_kbin.sh).
set -u
OUTDIR=${OUT:?set OUT}/loop
RES=$OUTDIR/scratch
mkdir -p "$OUTDIR" "$RES"
source examples/kernels/validation/device_env.sh
TRACE=$ROOT/examples/traces/llama_4layer_bs16_prompt1024_decode16.json.gz
build_cupti_lib /tmp/libmagpie_cupti.so
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python

step "1. gap analysis"
mkdir -p "$OUTDIR/trace" && cp "$TRACE" "$OUTDIR/trace/"
timeout 120 $M benchmark --trace-dir "$OUTDIR/trace" --top-k 10 -o "$OUTDIR/gap"; echo "exit=$?"
head -12 "$OUTDIR"/gap/gap_analysis/gap_analysis.csv

step "2. replay the top 10 ops"
timeout 120 $M replay "$TRACE" --top-k 10 -o "$OUTDIR/replay"; echo "exit=$?"
op=$(ls -d "$OUTDIR"/replay/07_aten_mul)
cat "$op/note.md" | head -20

step "3. a candidate for rank 7 and the compare"
cp examples/loop/rowscale_triton.py "$op/candidate.py"
timeout 300 $M -v compare -k "$op/compare.yaml" --rounds ${ROUNDS:-3} -o "$OUTDIR/compare"; echo "compare exit=$?"
cp "$OUTDIR"/compare/*/compare_report.json "$OUTDIR/../loop_compare_report.json" 2>/dev/null
rm -rf "$RES"
# Few files come back from the device: one archive.
(cd "$OUTDIR/.." && tar czf loop.tgz --exclude='*.json.gz' loop && rm -rf loop)
