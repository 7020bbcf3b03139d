"""Table for docs/GPU_VALIDATION.md: per replayed op, the trace's GPU time per
call beside the baseline replay's measured median (magpie compare), and
whether they agree within 15%.

    python3 examples/replay/summarize.py REPLAY_DIR/replay.json COMPARE_DIR
"""
import json
import sys
from pathlib import Path

TOLERANCE = 0.15


def baseline_median_us(compare_dir):
    reports = sorted(Path(compare_dir).glob("compare_*/compare_report.json"))
    if not reports:
        return None, "no compare report"
    results = json.loads(reports[-1].read_text())["results"]["kernel_results"]
    base = results[0]
    if base.get("performance_state") != "SUCCESS":
        return None, "baseline performance %s: %s" % (base.get("performance_state"), "; ".join(base.get("errors", []))[:200])
    stats = base["performance_result"]["magpie_stats"]
    return stats["samples"]["median_ns"] / 1e3, stats.get("timing_source", "")


def main(replay_json, compare_root):
    plan = json.loads(Path(replay_json).read_text())
    print("| rank | op | arguments | trace µs/call | replay median µs | ratio | within 15% | timing |")
    print("| ---: | --- | --- | ---: | ---: | ---: | --- | --- |")
    for t in plan["targets"]:
        trace_us = t["cost"]["gpu_mean_us_per_call"]
        measured, source = baseline_median_us(Path(compare_root) / t["slug"])
        args = t["described"] if len(t["described"]) < 70 else t["described"][:69] + "…"
        if measured is None:
            print("| %d | `%s` | `%s` | %.2f | - | - | no | %s |" % (t["rank"], t["op"], args, trace_us, source))
            continue
        ratio = measured / trace_us if trace_us else float("nan")
        ok = abs(ratio - 1) <= TOLERANCE
        print("| %d | `%s` | `%s` | %.2f | %.2f | %.3f | %s | %s |"
              % (t["rank"], t["op"], args, trace_us, measured, ratio, "yes" if ok else "no", source))
    for k in plan["skipped"]:
        print("| %d | `%s` | not replayed | %.2f | - | - | - | %s |"
              % (k["rank"], k["op"], k["cost"]["gpu_mean_us_per_call"], k["reason"]))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
