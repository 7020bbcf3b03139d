"""Kernel records from libmagpie_cupti.so's JSONL, and busy time per window."""
import json


def read_jsonl(path, offset=0):
    """Kernels and markers of the file from byte `offset` on (a worker's file holds earlier requests too)."""
    kernels, markers = [], []
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            for raw in f:
                line = raw.decode("utf-8", "replace")
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                (markers if "marker" in rec else kernels).append(rec)
    except FileNotFoundError:
        pass
    return kernels, markers


def union_ns(intervals, lo=None, hi=None):
    """Length of the union of [start, end) intervals, clipped to [lo, hi]."""
    clipped = []
    for s, e in intervals:
        if lo is not None:
            s = max(s, lo)
        if hi is not None:
            e = min(e, hi)
        if e > s:
            clipped.append((s, e))
    clipped.sort()
    total, cur_s, cur_e = 0, None, None
    for s, e in clipped:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def window_unions(kernels, windows):
    """Busy ns of all kernels (any stream) inside each (lo, hi) window, and their names."""
    iv = sorted((k["start"], k["end"], k.get("name", "")) for k in kernels)
    out = []
    for lo, hi in windows:
        inside = [(s, e) for s, e, _ in iv if e > lo and s < hi]
        names = sorted({n for s, e, n in iv if e > lo and s < hi})
        out.append((union_ns(inside, lo, hi), names))
    return out


def unjoined_work(kernels, windows, spin_name):
    """Work a caller's stream did not wait for, per timed window.

    The timing loop runs a spin kernel on the caller's stream before the call and
    a tiny one right after it: the last spin in a window marks where that stream
    got past the call. A kernel on another stream that ends after that point ran
    unordered with respect to the caller. Returns (windows hit, a kernel name,
    the largest lateness ns) or None. Deterministic: a properly joined side
    stream can never end after the caller's stream moved on.
    """
    hit, worst, worst_name = 0, 0, ""
    for lo, hi in windows:
        inside = [k for k in kernels if k["end"] > lo and k["start"] < hi]
        spins = sorted((k for k in inside if spin_name in k.get("name", "")), key=lambda k: k["start"])
        if len(spins) < 2:
            continue
        post = spins[-1]
        caller = post.get("stream")
        late = [(k["end"] - post["start"], k.get("name", "")) for k in inside
                if spin_name not in k.get("name", "") and k.get("stream") != caller and k["end"] > post["start"]]
        if late:
            hit += 1
            lateness, name = max(late)
            if lateness > worst:
                worst, worst_name = lateness, name
    return (hit, worst_name, worst) if hit else None
