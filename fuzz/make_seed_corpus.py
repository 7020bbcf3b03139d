"""Seeds the fuzz corpus with small, valid cut-downs of real traces.

Usage: make_seed_corpus.py CORPUS_DIR SOURCE [SOURCE ...]

Each SOURCE is a folder searched recursively (tests/data/public_traces in the
repository, ../shared/traces when present) or a single file. Every Kineto
trace contributes, each with its top-level fields (deviceProperties,
distributedInfo, ...) and its metadata events kept:

  - `cat`: the first events of every category (the old seed: every shape);
  - `linked`: a few GPU events with what links them to the host: their launch
    call (same correlation id), the cpu_ops and annotations around the launch,
    and the ac2g flow events, so that attribution code runs from the start;
  - `window`: every event of one short time window (nesting and overlap as
    recorded);
  - `graph`: a CUDA/HIP graph launch with the kernels it replayed, when any.

Each is written as JSON, and the `linked` cut also gzipped. rocprof inputs and
any other small fixture are added as they are. Cut-downs stay under
MAX_BYTES so that one run of the target is fast.
"""
import gzip
import json
import pathlib
import sys

MAX_BYTES = 48_000
LINKED_GPU_EVENTS = 6
WINDOW_EVENTS = 120
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_NAMES = ("GraphLaunch",)


def load(path: pathlib.Path):
    raw = path.read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError, ValueError):
        return None


def is_gpu(ev):
    return str(ev.get("cat", "")).lower() in GPU_CATS


def corr(ev):
    args = ev.get("args")
    return args.get("correlation") if isinstance(args, dict) else None


def span(ev):
    ts = ev.get("ts")
    if not isinstance(ts, (int, float)):
        return None
    dur = ev.get("dur", 0)
    return ts, ts + (dur if isinstance(dur, (int, float)) else 0)


def around(events, launch):
    """cpu_ops and annotations on the launch's thread whose span holds it."""
    s = span(launch)
    if s is None:
        return []
    out = []
    for ev in events:
        if ev is launch or ev.get("ph") != "X" or is_gpu(ev):
            continue
        if (ev.get("pid"), ev.get("tid")) != (launch.get("pid"), launch.get("tid")):
            continue
        e = span(ev)
        if e and e[0] <= s[0] and s[1] <= e[1]:
            out.append(ev)
    return out


def linked(events, gpu):
    launches = {}
    for ev in events:
        c = corr(ev)
        if c is not None and not is_gpu(ev):
            launches.setdefault(c, ev)
    picked, ids = [], set()
    step = max(1, len(gpu) // LINKED_GPU_EVENTS)
    for k in gpu[::step][:LINKED_GPU_EVENTS]:
        picked.append(k)
        launch = launches.get(corr(k))
        if launch is not None:
            picked.append(launch)
            picked += around(events, launch)
            ids.add(corr(k))
    picked += [ev for ev in events if ev.get("ph") in ("s", "f") and ev.get("id") in ids]
    return picked


def window(events):
    timed = sorted((ev for ev in events if span(ev) and ev.get("ph") != "M"), key=lambda e: e["ts"])
    if not timed:
        return []
    gpu_at = next((i for i, ev in enumerate(timed) if is_gpu(ev)), 0)
    start = max(0, gpu_at - WINDOW_EVENTS // 2)
    return timed[start:start + WINDOW_EVENTS]


def graph(events):
    for ev in events:
        if any(n in str(ev.get("name", "")) for n in LAUNCH_NAMES):
            c = corr(ev)
            replayed = [k for k in events if is_gpu(k) and corr(k) == c][:40]
            if replayed:
                return [ev, *around(events, ev), *replayed]
    return []


def dedup(events):
    seen, out = set(), []
    for ev in events:
        if id(ev) not in seen:
            seen.add(id(ev))
            out.append(ev)
    return out


def cuts(doc):
    events = [ev for ev in doc.get("traceEvents", []) if isinstance(ev, dict)]
    meta = [ev for ev in events if ev.get("ph") == "M"][:40]
    gpu = [ev for ev in events if is_gpu(ev)]
    by_cat = {}
    for ev in events:
        by_cat.setdefault(ev.get("cat"), []).append(ev)
    outer = {k: v for k, v in doc.items() if k != "traceEvents"}
    yield "cat", outer, [ev for evs in by_cat.values() for ev in evs[:8]]
    if gpu:
        yield "linked", outer, meta + linked(events, gpu)
    yield "window", outer, meta + window(events)
    g = graph(events)
    if g:
        yield "graph", outer, meta + g


def write_cut(out, stem, kind, outer, events, gz):
    events = dedup(events)
    while events:
        text = json.dumps({**outer, "traceEvents": events}).encode()
        if len(text) <= MAX_BYTES:
            break
        events = events[: len(events) * 3 // 4]  # too big: keep the first part
    else:
        return 0
    (out / f"{stem}_{kind}.json").write_bytes(text)
    if gz:
        (out / f"{stem}_{kind}.json.gz").write_bytes(gzip.compress(text))
    return 2 if gz else 1


def files_of(source: pathlib.Path):
    if source.is_file():
        return [source]
    return sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else []


def main(corpus, *sources):
    out = pathlib.Path(corpus)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for source in map(pathlib.Path, sources):
        for path in files_of(source):
            if path.suffix == ".md" or path.name.startswith("LICENSE"):
                continue
            stem = path.name.replace(".json", "").replace(".gz", "").replace(".", "_")
            doc = load(path) if path.name.endswith((".json", ".gz")) else None
            if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
                for kind, outer, events in cuts(doc):
                    n += write_cut(out, stem, kind, outer, events, gz=kind == "linked")
            elif path.stat().st_size <= MAX_BYTES:
                (out / f"fixture_{path.name}").write_bytes(path.read_bytes())
                n += 1
    print(f"seed corpus: {n} files in {out}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
