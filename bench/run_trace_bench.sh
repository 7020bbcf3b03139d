#!/usr/bin/env bash
# Trace-ingest benchmark: magpie `benchmark --trace-dir` against the plain-Python
# reference (bench/reference_gap_analysis.py) and HolisticTraceAnalysis, on the same
# synthetic large trace in the same run. Results: docs/PERFORMANCE.md.
#
#   MAGPIE_BIN=build/apps/magpie/magpie bench/run_trace_bench.sh
#
# Environment:
#   MAGPIE_BIN   magpie binary (default build/apps/magpie/magpie); SKIP_MAGPIE=1 to leave it out
#   RUNS         runs per magpie/reference case, the median is reported (default 3)
#   HTA_RUNS     runs per HTA case (default 1, it is slow); SKIP_HTA=1 to leave it out
#   RANKS        rank files for the multi-rank case (default 4)
#   TARGET_MB    raw size of the single large trace (default 220)
#   OUT          where outputs and results.tsv go (default bench/data/results/<timestamp>)
#   CASES        which inputs (default "single_gz single_raw ranks")
#   SKIP_TRACELENS=1  leave out `magpie tracelens --mode pytorch` on the gzipped single trace
#   MAGPIE_BASE_BIN   a second magpie build (e.g. main's) timed in the same rounds, for a
#                paired before/after comparison
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MAGPIE_BIN=${MAGPIE_BIN:-$ROOT/build/apps/magpie/magpie}
RUNS=${RUNS:-3}
HTA_RUNS=${HTA_RUNS:-1}
RANKS=${RANKS:-4}
TARGET_MB=${TARGET_MB:-220}
SKIP_HTA=${SKIP_HTA:-0}
SKIP_MAGPIE=${SKIP_MAGPIE:-0}
SKIP_TRACELENS=${SKIP_TRACELENS:-0}
MAGPIE_BASE_BIN=${MAGPIE_BASE_BIN:-}
CASES=${CASES:-single_gz single_raw ranks}
DATA=$ROOT/bench/data
OUT=${OUT:-$DATA/results/$(date +%Y%m%d_%H%M%S)}
PY=${PYTHON:-python3}
VENV=$ROOT/bench/.venv

log() { printf '[trace-bench] %s\n' "$*" >&2; }

if [[ ! -x /usr/bin/time ]]; then
  log "installing GNU time"
  apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
if [[ $SKIP_MAGPIE != 1 && ! -x $MAGPIE_BIN ]]; then
  log "no magpie binary at $MAGPIE_BIN (set MAGPIE_BIN, or SKIP_MAGPIE=1 to time the others only)"
  exit 1
fi

# --- inputs ---------------------------------------------------------------
if [[ ! -f $DATA/large_trace.json.gz || ! -f $DATA/large_trace.json ]] ||
   [[ $(ls "$DATA"/ranks/large-rank-*.pt.trace.json.gz 2>/dev/null | wc -l) -ne $RANKS ]]; then
  log "synthesising traces"
  "$PY" "$ROOT/bench/make_large_trace.py" --target-mb "$TARGET_MB" --ranks "$RANKS"
fi
# Each tool takes a directory; give each input a directory of its own (hard links, no copies).
mkdir -p "$DATA/single_gz" "$DATA/single_raw"
ln -f "$DATA/large_trace.json.gz" "$DATA/single_gz/large_trace.json.gz"
ln -f "$DATA/large_trace.json" "$DATA/single_raw/large_trace.json"

raw_bytes() {  # uncompressed bytes of the traces in a directory (gzip ISIZE; files < 4 GiB)
  "$PY" - "$1" <<'EOF'
import pathlib, struct, sys
total = 0
for p in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    if p.name.endswith(".gz"):
        with p.open("rb") as f:
            f.seek(-4, 2)
            total += struct.unpack("<I", f.read(4))[0]
    elif p.name.endswith(".json"):
        total += p.stat().st_size
print(total)
EOF
}
SINGLE_RAW=$(raw_bytes "$DATA/single_gz")
RANKS_RAW=$(raw_bytes "$DATA/ranks")

if [[ $SKIP_HTA != 1 && ! -x $VENV/bin/python ]]; then
  log "creating $VENV with HolisticTraceAnalysis"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q holistictraceanalysis
fi

mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
printf 'case\ttool\trun\twall_s\trss_kb\traw_bytes\ttotal_us\tload1\tcpu_s\n' >"$RESULTS"

# measure CASE TOOL RUN RAW_BYTES CMD... : wall seconds, peak RSS and CPU seconds (user+sys) of
# one run. CPU seconds matter on a shared machine: they barely move with other users' load.
measure() {
  local case=$1 tool=$2 i=$3 raw=$4
  shift 4
  local dir=$OUT/$case.$tool.$i load
  mkdir -p "$dir"
  load=$(cut -d' ' -f1 /proc/loadavg)
  log "$case / $tool run $i (load $load): $*"
  if ! /usr/bin/time -f '%e %M %U %S' -o "$dir/time" "$@" -o "$dir/out" >"$dir/stdout" 2>"$dir/stderr"; then
    log "FAILED (see $dir/stderr):"
    tail -5 "$dir/stderr" >&2
    printf '%s\t%s\t%d\tFAIL\tFAIL\t%s\t\t%s\t\n' "$case" "$tool" "$i" "$raw" "$load" >>"$RESULTS"
    return 0
  fi
  local total wall rss user sys
  total=$(sed -n 's/.*Total duration: *\([0-9.]*\) *us.*/\1/p; s/.*HTA kernels listed: .*total \([0-9.]*\) us.*/\1/p' \
          "$dir/stdout" | head -1)
  read -r wall rss user sys <"$dir/time"
  printf '%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$tool" "$i" "$wall" "$rss" "$raw" "$total" "$load" \
    "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" >>"$RESULTS"
}

log "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
log "single trace: $SINGLE_RAW raw bytes; $RANKS ranks: $RANKS_RAW raw bytes"

REF=("$PY" "$ROOT/bench/reference_gap_analysis.py" --top-k 20)
MAG=("$MAGPIE_BIN" benchmark --top-k 20)
HAS_THREADS=0
if [[ $SKIP_MAGPIE != 1 ]] && "$MAGPIE_BIN" benchmark --help 2>&1 | grep -q -- '--threads'; then HAS_THREADS=1; fi
# Runs are interleaved (magpie, reference, magpie, ...) so that load from other users
# of the machine falls on both alike.
for ((run = 1; run <= RUNS; run++)); do
  for case in $CASES; do
    dir=$DATA/$case
    raw=$SINGLE_RAW
    [[ $case == ranks ]] && raw=$RANKS_RAW
    if [[ $SKIP_MAGPIE != 1 ]]; then
      measure "$case" magpie "$run" "$raw" "${MAG[@]}" --trace-dir "$dir"
      if [[ $case == ranks && $HAS_THREADS == 1 ]]; then
        measure "$case" magpie_1thread "$run" "$raw" "${MAG[@]}" --threads 1 --trace-dir "$dir"
      fi
    fi
    measure "$case" python_ref "$run" "$raw" "${REF[@]}" "$dir"
    if [[ -n $MAGPIE_BASE_BIN ]]; then
      measure "$case" magpie_base "$run" "$raw" "$MAGPIE_BASE_BIN" benchmark --top-k 20 --trace-dir "$dir"
    fi
    if [[ $case == single_gz && $SKIP_MAGPIE != 1 && $SKIP_TRACELENS != 1 ]]; then
      measure "$case" tracelens_pytorch "$run" "$raw" "$MAGPIE_BIN" tracelens "$DATA/large_trace.json.gz" --mode pytorch
      if [[ -n $MAGPIE_BASE_BIN ]]; then
        measure "$case" tracelens_pytorch_base "$run" "$raw" "$MAGPIE_BASE_BIN" tracelens "$DATA/large_trace.json.gz" --mode pytorch
      fi
    fi
  done
done
if [[ $SKIP_HTA != 1 ]]; then
  HTA=("$VENV/bin/python" "$ROOT/bench/hta_kernel_breakdown.py")
  for ((run = 1; run <= HTA_RUNS; run++)); do
    measure single_gz hta "$run" "$SINGLE_RAW" "${HTA[@]}" "$DATA/single_gz"
    measure ranks hta "$run" "$RANKS_RAW" "${HTA[@]}" "$DATA/ranks"
  done
fi

"$PY" "$ROOT/bench/trace_bench_table.py" "$RESULTS"
log "raw results: $RESULTS"
