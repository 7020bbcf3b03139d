#!/usr/bin/env bash
# One device call: the cheating-candidate suite (and the side-stream example),
# the trace recorder, then `magpie replay` of the top ops of the Llama-shaped
# trace just recorded there, each run through `magpie compare` (RANKS limits
# which; examples/replay/run_h200.sh). Everything lands in $OUT.
set -u
export SKIP_SOFTMAX=1
OUT=${OUT:-/tmp/session_out}
SKIP_TRACES=${SKIP_TRACES:-} SKIP_SIDE=${SKIP_SIDE:-} timeout ${CHEATS_BUDGET:-330} bash examples/kernels/cheats/run_h200.sh
echo "cheats+traces exit=$?"
TRACE=${TRACE:-$PWD/examples/traces/llama_4layer_bs16_prompt1024_decode16.json.gz}
if [ -f "$TRACE" ]; then
  TRACE=$TRACE TOPK=${TOPK:-10} RANKS="${RANKS:-1 2 3 4 5}" ROUNDS=${ROUNDS:-2} OUT=$OUT/replay \
    timeout ${REPLAY_BUDGET:-230} bash examples/replay/run_h200.sh
  echo "replay exit=$?"
  [ -f $OUT/replay/summary.md ] || python3 examples/replay/summarize.py $OUT/replay/replay/replay.json $OUT/replay/compare > $OUT/replay/summary.md
fi
