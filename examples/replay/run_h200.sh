#!/usr/bin/env bash
# `magpie replay` on the H200 (docs/REPLAY.md, docs/OPTIMIZATION_LOOP.md): the
# top-k ops of a trace recorded there become compare configs, and each is run
# with `magpie compare` with performance on (CUPTI timing). The summary puts
# each replay's measured per-call kernel time beside the trace's per-call
# kernel time for that op (the issue #14 check: within 15%).
#
# Run from the repository root on a CUDA machine with torch, with the magpie
# binary (and any shared libraries it needs) in .kbin/ as for
# examples/kernels/validation/run_h200.sh. Environment:
#   TRACE  the trace (default: shared/traces/h200/llama_4layer_bs16_prompt1024_decode16.json.gz
#          beside the repository, else examples/replay/trace.json.gz)
#   TOPK   ops to replay (default 10)
#   OUT    where logs, replays and reports go (default /tmp/magpie_replay_out)
#   ROUNDS compare rounds (default 3)
#   RANKS  only these ranks, e.g. "1 2 3 4 5" (default: all). Ten ops take about
#          12 minutes; to stay under a 10-minute limit per command, run
#          RANKS="1 2 3 4 5" then RANKS="6 7 8 9 10" with the same OUT (the
#          replay is rewritten identically and the summary covers both halves).
set -u
OUTDIR=${OUT:-/tmp/magpie_replay_out}
RES=$OUTDIR/compare
mkdir -p "$OUTDIR" "$RES"
exec > >(tee -a "$OUTDIR/replay.log") 2>&1
source examples/kernels/validation/device_env.sh

TRACE=${TRACE:-}
for t in "$ROOT/../shared/traces/h200/llama_4layer_bs16_prompt1024_decode16.json.gz" "$ROOT/examples/replay/trace.json.gz"; do
  [ -z "$TRACE" ] && [ -f "$t" ] && TRACE=$t
done
[ -f "${TRACE:-}" ] || { echo "no trace: set TRACE=path/to/trace.json.gz"; exit 3; }

step environment
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
$M --version || { echo "magpie binary does not run here"; ldd $M; exit 1; }

step build libmagpie_cupti.so
build_cupti_lib /tmp/libmagpie_cupti.so
export MAGPIE_CUPTI_LIB=/tmp/libmagpie_cupti.so MAGPIE_PYTHON_DIR=$ROOT/python

step "magpie replay $TRACE --top-k ${TOPK:-10}"
$M -v replay "$TRACE" --top-k "${TOPK:-10}" -o "$OUTDIR/replay" || exit $?

for yaml in "$OUTDIR"/replay/*/compare.yaml; do
  slug=$(basename "$(dirname "$yaml")")
  rank=$((10#${slug%%_*}))
  if [ -n "${RANKS:-}" ] && ! [[ " $RANKS " == *" $rank "* ]]; then continue; fi
  rm -rf "$RES/$slug"
  step "magpie compare $slug"
  timeout 600 $M -v compare -k "$yaml" --rounds "${ROUNDS:-3}" -o "$RES/$slug"
  echo "exit=$?"
done

step summary
python3 examples/replay/summarize.py "$OUTDIR/replay/replay.json" "$RES" | tee "$OUTDIR/summary.md"
tar czf "$OUTDIR/replay_reports.tgz" -C "$OUTDIR" replay compare summary.md replay.log 2>/dev/null
echo "wrote $OUTDIR/summary.md and $OUTDIR/replay_reports.tgz"
