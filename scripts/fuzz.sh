#!/usr/bin/env bash
# Builds the trace-ingest fuzzer (clang, libFuzzer, ASan) and runs it for a
# fixed time on a corpus seeded from the shared real traces.
# Usage: scripts/fuzz.sh [SECONDS=60]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target trace_ingest_fuzzer
corpus=build-fuzz/corpus
mkdir -p "$corpus"
python3 fuzz/make_seed_corpus.py ../shared/traces "$corpus" tests/data
build-fuzz/fuzz/trace_ingest_fuzzer "$corpus" -max_total_time="$seconds" -max_len=65536 \
  -rss_limit_mb=4096 -print_final_stats=1 2>&1 | tail -n 25
