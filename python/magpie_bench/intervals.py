"""Kernel records from libmagpie_cupti.so's JSONL, and busy time per window."""
import json
import re


_KERNEL_TAIL = re.compile(rb'"start":(\d+),"end":(\d+),[^{}]*?"stream":(\d+)[,}]')
_MARKER = re.compile(rb'\{"marker":"([^"\\]*)","ts":(\d+)\}')


def _fast_kernel(line, names):
    """start, end, stream and name of a libmagpie_cupti kernel line without a full JSON parse
    (json.loads was most of a round's analysis: the demangled and mangled names are long,
    and only the name is needed). None when the line is not in the library's own layout."""
    if not line.startswith(b'{"name":"'):
        return None
    cut = line.find(b'","mangled":"', 9)  # a quote inside a name is escaped, so this is the field's end
    if cut < 0:
        return None
    rest = line.find(b'","start":', cut + 13)
    m = _KERNEL_TAIL.match(line, rest + 2) if rest >= 0 else None
    if m is None:
        return None
    raw = line[9:cut]
    name = names.get(raw)
    if name is None:
        name = json.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8", "replace")
        names[raw] = name
    return {"name": name, "start": int(m.group(1)), "end": int(m.group(2)), "stream": int(m.group(3))}


def read_jsonl(path, offset=0):
    """Kernels and markers of the file from byte `offset` on (a worker's file holds earlier requests too).
    Kernel records keep name, start, end and stream (what the analyses read); lines in another
    layout are parsed in full; unreadable ones are skipped."""
    kernels, markers, names = [], [], {}
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return kernels, markers
    for line in data.split(b"\n"):
        line = line.strip()
        if not line:
            continue
        rec = _fast_kernel(line, names)
        if rec is not None:
            kernels.append(rec)
            continue
        m = _MARKER.fullmatch(line)
        if m is not None:
            markers.append({"marker": m.group(1).decode(), "ts": int(m.group(2))})
            continue
        try:
            rec = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(rec, dict):
            (markers if "marker" in rec else kernels).append(rec)
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


def kernels_per_window(kernels, windows):
    """For each (lo, hi) window, the kernels (any stream) that overlap it, in start order.

    One sweep over kernels sorted by start and windows sorted by lo, keeping the
    kernels still running: O((K + W) log) plus the overlaps. A timing round has
    thousands of windows and kernels; testing every kernel against every window
    cost 10-35 s of Python per round on an H100 (issue 28)."""
    ks = sorted(kernels, key=lambda k: (k["start"], k["end"]))
    order = sorted(range(len(windows)), key=lambda w: windows[w][0])
    out = [None] * len(windows)
    active, p = [], 0
    for w in order:
        lo, hi = windows[w]
        while p < len(ks) and ks[p]["start"] < hi:
            active.append(ks[p])
            p += 1
        # Windows come in lo order: a kernel ended by this lo overlaps no later window.
        active = [k for k in active if k["end"] > lo]
        out[w] = [k for k in active if k["start"] < hi]
    return out


def window_unions(kernels, windows):
    """Busy ns of all kernels (any stream) inside each (lo, hi) window, and their names."""
    out = []
    for (lo, hi), inside in zip(windows, kernels_per_window(kernels, windows)):
        out.append((union_ns([(k["start"], k["end"]) for k in inside], lo, hi),
                    sorted({k.get("name", "") for k in inside})))
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
    for inside in kernels_per_window(kernels, windows):
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
