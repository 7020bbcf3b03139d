#!/usr/bin/env python3
"""HolisticTraceAnalysis's kernel breakdown on a trace directory, for the ingest benchmark.

Runs `TraceAnalysis(trace_dir=...).get_gpu_kernel_breakdown()` (HTA parses the whole
trace into pandas frames first, which is most of its time) and prints the kernel
count and total kernel time so the result can be sanity-checked against Magpie's.

HTA takes every `*.json`/`*.gz` in the directory and finds each file's rank by
the regex `"rank":\\s+(\\d+)`; a file without one becomes rank 0 (with a warning),
so a directory holding exactly one trace works without a distributedInfo block.
Run it with the venv that bench/run_trace_bench.sh creates:

    bench/.venv/bin/python bench/hta_kernel_breakdown.py TRACE_DIR
"""
import argparse
import logging
import sys
import time
import warnings
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace_dir")
    ap.add_argument("-o", "--output-dir", help="write HTA's per-kernel frame here as hta_kernels.csv")
    args = ap.parse_args(argv)

    warnings.simplefilter("ignore")
    logging.getLogger("hta").setLevel(logging.ERROR)
    from hta.trace_analysis import TraceAnalysis

    start = time.perf_counter()
    analyzer = TraceAnalysis(trace_dir=args.trace_dir)
    parsed = time.perf_counter()
    by_type, by_kernel = analyzer.get_gpu_kernel_breakdown(visualize=False, num_kernels=1_000_000,
                                                           duration_ratio=1.0)
    done = time.perf_counter()

    if args.output_dir:
        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        by_kernel.to_csv(out / "hta_kernels.csv", index=False)
    total_col = "sum (us)" if "sum (us)" in by_kernel.columns else by_kernel.columns[-1]
    print(f"HTA ranks: {sorted(analyzer.t.traces.keys())}")
    print(f"HTA kernel types:\n{by_type.to_string(index=False)}")
    print(f"HTA kernels listed: {len(by_kernel)}, total {by_kernel[total_col].sum():.2f} us ({total_col})")
    print(f"HTA parse {parsed - start:.2f} s, breakdown {done - parsed:.2f} s, total {done - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
