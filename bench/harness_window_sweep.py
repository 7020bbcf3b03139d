"""Cost of the timing harness's CUPTI analysis for one round (issue 28).

A round of the GELU example on an H100 takes about 2,850 samples; each sample's
window holds five kernels (the two L2-flush reduction kernels, the spin, the
call, the closing spin). This builds such a round synthetically and times, in
one process, the per-window analysis as the harness does it now (one sweep)
against testing every kernel against every window (the harness before), each
median of --repeats runs.

    python3 bench/harness_window_sweep.py [--samples 2850] [--repeats 3]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from magpie_bench.intervals import union_ns, unjoined_work, window_unions  # noqa: E402

SPIN = "spin_kernel"


def round_of(samples):
    kernels, windows, t = [], [], 0
    for i in range(samples):
        lo = t
        for name, dur, stream in (("reduce_1", 30_000, 7), ("reduce_2", 3_000, 7), (SPIN, 40_000, 7),
                                  ("gelu", 175_000, 7), (SPIN, 1_000, 7)):
            kernels.append({"start": t, "end": t + dur, "name": name, "stream": stream})
            t += dur + 2_000
        windows.append((lo + 30_000, t))
        t += 50_000
    return kernels, windows


def every_pair(kernels, windows):
    """The harness before issue 28: every kernel against every window."""
    iv = sorted((k["start"], k["end"], k.get("name", "")) for k in kernels if SPIN not in k["name"])
    out = []
    for lo, hi in windows:
        inside = [(s, e) for s, e, _ in iv if e > lo and s < hi]
        names = sorted({n for s, e, n in iv if e > lo and s < hi})
        out.append((union_ns(inside, lo, hi), names))
    for lo, hi in windows:
        [k for k in kernels if k["end"] > lo and k["start"] < hi]
    return out


def sweep(kernels, windows):
    out = window_unions([k for k in kernels if SPIN not in k["name"]], windows)
    unjoined_work(kernels, windows, SPIN)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2850)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    kernels, windows = round_of(a.samples)
    walls = {"every_pair": [], "sweep": []}
    for _ in range(a.repeats):
        for name, fn in (("every_pair", every_pair), ("sweep", sweep)):
            t0 = time.perf_counter()
            got = fn(kernels, windows)
            walls[name].append(time.perf_counter() - t0)
            if name == "every_pair":
                want = got
            elif got != want:
                sys.exit("the two analyses disagree")
    before, now = statistics.median(walls["every_pair"]), statistics.median(walls["sweep"])
    print("%d samples, %d kernels: every pair %.3f s, sweep %.4f s (median of %d), %.0fx" % (
        a.samples, len(kernels), before, now, a.repeats, before / now))


if __name__ == "__main__":
    main()
