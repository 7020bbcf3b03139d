"""HTA's critical path of one trace window, as JSON, to compare with `magpie whatif`.

    python hta_critical_path.py TRACE ANNOTATION [FIRST LAST]

Runs HolisticTraceAnalysis's critical_path_analysis (pip install HolisticTraceAnalysis) on rank
0 of TRACE, limited to the annotation instances FIRST..LAST (default 0..0) whose name contains
ANNOTATION, and prints {"ok", "seconds", "length_us", "bound_by_us": {...}} on the last line.
"""
import json
import os
import shutil
import sys
import tempfile
import time


def main():
    trace, annotation = sys.argv[1], sys.argv[2]
    first, last = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (0, 0)
    from hta.trace_analysis import TraceAnalysis

    d = tempfile.mkdtemp()
    try:
        shutil.copy(trace, os.path.join(d, "rank-0.json.gz" if trace.endswith(".gz") else "rank-0.json"))
        t0 = time.perf_counter()
        analyzer = TraceAnalysis(trace_dir=d)
        cp, ok = analyzer.critical_path_analysis(rank=0, annotation=annotation, instance_id=(first, last))
        df = cp.get_critical_path_breakdown()
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(d, ignore_errors=True)
    by = df.groupby("bound_by").duration.sum().to_dict() if df is not None else {}
    print(json.dumps({"ok": bool(ok), "seconds": round(seconds, 2),
                      "length_us": float(df.duration.sum()) if df is not None else 0.0,
                      "bound_by_us": {str(k) or "dependency": float(v) for k, v in by.items()}}))


if __name__ == "__main__":
    main()
