"""Seeds the fuzz corpus with small, valid slices of real traces.

Each Kineto trace contributes its top-level fields and its first events of
every category (as JSON and as gzip), so the fuzzer starts from real shapes:
string pids, big ints, graph launches, nested args. rocprof inputs and any
fixture under tests/data are added as they are when small.
"""
import gzip
import json
import pathlib
import sys

MAX_BYTES = 60_000


def slices(doc):
    events = doc.get("traceEvents", [])
    by_cat = {}
    for ev in events:
        by_cat.setdefault(ev.get("cat"), []).append(ev)
    picked = []
    for evs in by_cat.values():
        picked.extend(evs[:8])
    outer = {k: v for k, v in doc.items() if k != "traceEvents"}
    outer["traceEvents"] = picked
    yield outer


def main(shared, corpus, fixtures):
    out = pathlib.Path(corpus)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in sorted(pathlib.Path(shared).rglob("*.json.gz")):
        try:
            doc = json.load(gzip.open(path))
        except Exception:
            continue
        if not isinstance(doc, dict) or "traceEvents" not in doc:
            continue
        for i, s in enumerate(slices(doc)):
            text = json.dumps(s).encode()[:MAX_BYTES]
            (out / f"{path.stem}_{i}.json").write_bytes(text)
            (out / f"{path.stem}_{i}.json.gz").write_bytes(gzip.compress(text))
            n += 2
    for path in sorted(pathlib.Path(fixtures).rglob("*")):
        if path.is_file() and path.stat().st_size <= MAX_BYTES:
            (out / f"fixture_{path.name}").write_bytes(path.read_bytes())
            n += 1
    print(f"seed corpus: {n} files in {out}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
