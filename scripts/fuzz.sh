#!/usr/bin/env bash
# Builds the trace fuzzer (clang, libFuzzer, ASan + UBSan) and runs it for a
# fixed time on a corpus seeded from real traces, with the Kineto dictionary
# and the structure-aware mutator (docs/FUZZING.md).
#
# Usage: scripts/fuzz.sh [SECONDS=180] [JOBS=nproc]
#
# Exit 0: no crash. Otherwise the fuzzer's exit status, with each reproducer
# saved under build-fuzz/crashes/ and printed (base64) so that a CI log alone
# is enough to reproduce: save it to fuzz/regressions/ once fixed, and the
# unit test FuzzRegressions replays it on every build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-180}"
jobs="${2:-$(nproc)}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target trace_ingest_fuzzer

corpus=build-fuzz/corpus  # kept between runs on one machine: it grows
crashes=build-fuzz/crashes
rm -rf "$crashes"  # a reproducer from an earlier run must not fail this one
mkdir -p "$corpus" "$crashes"
sources=(tests/data/public_traces fuzz/regressions)
[ -d ../shared/traces ] && sources+=(../shared/traces)
python3 fuzz/make_seed_corpus.py "$corpus" "${sources[@]}"

log=build-fuzz/fuzz.log
status=0
# -fork: one corpus, $jobs processes; -ignore_crashes=0 stops at the first.
build-fuzz/fuzz/trace_ingest_fuzzer "$corpus" -fork="$jobs" -max_total_time="$seconds" \
  -dict=fuzz/kineto.dict -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$crashes/" -print_final_stats=1 >"$log" 2>&1 || status=$?
tail -n 30 "$log"
shopt -s nullglob
found=("$crashes"/crash-* "$crashes"/leak-* "$crashes"/timeout-* "$crashes"/oom-*)
if [ "$status" -ne 0 ] || [ "${#found[@]}" -gt 0 ]; then
  echo "fuzz: FAILED (exit $status); reproducers in $crashes/:" >&2
  for f in "${found[@]}"; do
    echo "== $f ($(stat -c %s "$f") bytes); base64:" >&2
    base64 -w 0 "$f" | head -c 200000 >&2
    echo >&2
  done
  echo "reproduce: build-fuzz/fuzz/trace_ingest_fuzzer FILE" >&2
  exit "$(( status ? status : 1 ))"
fi
echo "fuzz: no crash in ${seconds} s ($jobs jobs); corpus: $(ls "$corpus" | wc -l) inputs"
