#!/usr/bin/env bash
# Session 16, device call 1: #27 what-if record + graph gap (every card), then #28 paired timing of
# one compare: harness of the previous main c36d45e vs this tree's, the same binary from the
# manylinux wheel; then the cheat suite. Steps are skipped once 480 s have passed.
set -u
R=$(pwd); T0=$(date +%s)
left() { [ $(( $(date +%s) - T0 )) -lt 480 ] || { echo "SKIP $1 (time)" | tee -a $OUT/walls.txt; return 1; }; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
date -u | tee -a $OUT/gpu.txt
mkdir -p /tmp/w && python3 -m zipfile -e build-wheel/dist/magpie-*manylinux*.whl /tmp/w && chmod +x /tmp/w/Magpie/bin/magpie
M=/tmp/w/Magpie/bin/magpie
$M --version | tee -a $OUT/gpu.txt
$M --gpu-info 2>&1 | head -8 | tee -a $OUT/gpu.txt
t0=$(date +%s.%N)
timeout 150 python3 examples/critical_path/validate_whatif.py record $OUT/rec > $OUT/record.log 2>&1; echo "record exit $? wall $(python3 -c "print(round($(date +%s.%N) - $t0,1))")" | tee -a $OUT/walls.txt
tail -14 $OUT/record.log
rm -f $OUT/rec/decode_graph.json.gz
tar czf $OUT/rec.tgz -C $OUT rec && rm -rf $OUT/rec
timeout 60 python3 examples/critical_path/graph_gap.py 2>&1 | tee -a $OUT/graph_gap.txt
sed 's/^kernels:/latency: {min_time_s: 0.17}\nkernels:/' examples/kernel_speed/compare.yaml > examples/kernel_speed/compare_short.yaml
pair() {  # NAME PYDIR LIMIT_S YAML
  left $1 || return
  local t0 t1 rc
  t0=$(date +%s.%N)
  MAGPIE_PYTHON_DIR=$2 MAGPIE_RESULTS_DB=/tmp/results_$1.db timeout $3 $M compare -k $4 -o /tmp/pair/$1 > /tmp/pair_$1.stdout 2> /tmp/pair_$1.stderr
  rc=$?; t1=$(date +%s.%N)
  printf 'WALL %-14s %7.1f s exit %d  %s\n' "$1" "$(python3 -c "print($t1 - $t0)")" "$rc" "$4" | tee -a $OUT/walls.txt
  { echo "== $1"; cat /tmp/pair_$1.stdout; echo "-- stderr tail"; tail -5 /tmp/pair_$1.stderr; } >> $OUT/pair_stdout.txt
  grep -E "SAME|FASTER|SLOWER|FAILED|REJECT|rounds" /tmp/pair_$1.stdout | head -12
}
pair prev $R/build-prev/python 160 examples/kernel_speed/compare.yaml
pair now $R/python 90 examples/kernel_speed/compare.yaml
pair cheats $R/python 150 examples/kernels/cheats/compare.yaml
pair now2 $R/python 90 examples/kernel_speed/compare.yaml
pair short $R/python 90 examples/kernel_speed/compare_short.yaml
python3 - <<'PY' > $OUT/harness_cost.txt 2>&1
import glob, json
for f in sorted(glob.glob("/tmp/pair/*/compare_*/**/*.json", recursive=True)):
    try: j = json.load(open(f))
    except Exception: continue
    def find(o):
        if isinstance(o, dict):
            if "harness_s" in o and o["harness_s"]: yield o
            for v in o.values(): yield from find(v)
        elif isinstance(o, list):
            for v in o: yield from find(v)
    for o in find(j):
        h = o["harness_s"]; st = o.get("stats", {})
        print(f.replace("/tmp/pair/", ""), "n=%s sampling=%.2fs analysis=%.2fs per_sample=%.0fus stop=%s" % (
            o.get("n_repeat", st.get("n_repeat")), h["sampling"], h["analysis"], h["per_sample_us"], o.get("stopped_by")))
PY
head -30 $OUT/harness_cost.txt
tar czf $OUT/pair.tgz --exclude='*.jsonl' --exclude='*.whl' -C /tmp pair 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
