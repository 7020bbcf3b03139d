#!/usr/bin/env bash
# Writes every output of gap analysis and both tracelens modes on a set of real traces
# into one folder, with the volatile fields (timings, dates, paths, versions) taken out,
# so that two builds can be compared with `diff -r`: an ingest or data-structure change
# must leave every CSV/JSON byte the same.
#
#   bench/trace_outputs_snapshot.sh MAGPIE_BIN OUT_DIR
#   diff -r OUT_BEFORE OUT_AFTER && echo identical
set -uo pipefail
BIN=$(realpath "$1")
OUT=$2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=$ROOT/../shared/traces
mkdir -p "$OUT"
traces=()
for f in "$SHARED"/h200/*.json.gz "$SHARED"/public/*.json.gz "$ROOT"/tests/data/public_traces/*.json.gz \
         "$ROOT"/tests/data/public_traces/*.json; do
  [[ -f $f ]] && traces+=("$f")
done
[[ -d $SHARED ]] || echo "note: $SHARED absent, only tests/data traces" >&2
# Fields that differ from run to run by design, not by what the trace says.
scrub() {
  find "$1" -type f \( -name '*.json' -o -name '*.csv' -o -name '*.txt' -o -name '*.md' \) -print0 |
    xargs -0 -r sed -i -E \
      -e 's/"(load|analyse_and_write|total|elapsed_s|execution_time|duration_s|wall_s|[a-z_]*_s)": ?[0-9.e+-]+/"\1": T/g' \
      -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?/DATE/g' \
      -e "s#$2#TMP#g" \
      -e 's/"(magpie_version|version|git_commit|hostname|host|kernel|cpu_model|load_average)": ?"[^"]*"/"\1": V/g' \
      -e 's/"build_dirty": ?(true|false)/"build_dirty": V/g'
}
i=0
for t in "${traces[@]}"; do
  name=$(basename "$t"); name=${name%.gz}; name=${name%.json}
  d=$OUT/$name; mkdir -p "$d"
  work=$(mktemp -d)
  mkdir -p "$work/in" && ln -s "$t" "$work/in/$(basename "$t")"
  "$BIN" benchmark --trace-dir "$work/in" -o "$work/gap" >"$work/gap.stdout" 2>"$work/gap.stderr"; echo "gap rc=$?" >"$d/rc"
  for mode in pytorch inference; do
    "$BIN" tracelens "$t" --mode $mode -o "$work/$mode" >"$work/$mode.stdout" 2>"$work/$mode.stderr"
    echo "$mode rc=$?" >>"$d/rc"
  done
  for sub in gap pytorch inference; do
    [[ -d $work/$sub ]] && cp -r "$work/$sub" "$d/$sub"
  done
  scrub "$d" "$work"
  rm -rf "$work"
  i=$((i+1))
done
echo "$i traces written to $OUT" >&2
