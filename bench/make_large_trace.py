#!/usr/bin/env python3
"""Synthesise a large Kineto trace from a real one, for the trace-ingest benchmark.

The events of a source trace are written N times. Copy k is shifted in time past
the end of copy k-1, and its ids (`correlation`, `External id`, flow `id`,
`Python id`/`Python parent id`) are offset by k * stride so that launch→kernel
links and flows stay unique and correct. Metadata (`ph: M`) events are written
once. The top-level keys (deviceProperties, baseTimeNanoseconds, ...) are kept in
their original order. Timestamps are shifted with exact decimal arithmetic, so
the nanosecond fractions survive. The output is deterministic (gzip mtime 0).

    python3 bench/make_large_trace.py                 # bench/data/large_trace.json(.gz), >= 220 MB raw
    python3 bench/make_large_trace.py --ranks 4       # also bench/data/ranks/large-rank-{0..3}.pt.trace.json.gz
"""
import argparse
import gzip
import json
import math
import sys
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parent.parent / "shared" / "traces" / "h200" / "llama_4layer_bs16_prompt1024_decode16.json.gz"
ID_ARGS = ("correlation", "External id", "Python id", "Python parent id")
GAP_US = 1000  # idle time between two copies


class Source:
    """The source trace, parsed once, with each event pre-split for fast re-emission."""

    def __init__(self, path: Path):
        with gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb") as f:
            self.trace = json.load(f)
        events = self.trace["traceEvents"]
        self.metadata = [e for e in events if e.get("ph") == "M"]
        self.events = [e for e in events if e.get("ph") != "M"]
        ids = [e["id"] for e in self.events if isinstance(e.get("id"), int)]
        for e in self.events:
            args = e.get("args") or {}
            ids += [args[k] for k in ID_ARGS if isinstance(args.get(k), int)]
        self.id_stride = 10 ** math.ceil(math.log10(max(ids, default=0) + 2))
        timed = [e for e in self.events if isinstance(e.get("ts"), (int, float))]
        start = min(e["ts"] for e in timed)
        end = max(e["ts"] + e.get("dur", 0) for e in timed)
        self.period_us = math.ceil(end - start) + GAP_US

    def header_and_footer(self, extra: dict):
        """The file text before and after the event list, keys in the source's order."""
        keys = list(self.trace.keys())
        split = keys.index("traceEvents")
        head = {k: self.trace[k] for k in keys[:split]}
        tail = {k: self.trace[k] for k in keys[split + 1:]}
        head.update(extra)
        head_text = json.dumps(head, indent=2)[:-2] + ("," if head else "") + '\n  "traceEvents": [\n'
        tail_text = "\n  ]" + ("," + json.dumps(tail, indent=2)[1:-2] if tail else "") + "\n}\n"
        return head_text, tail_text


def shifted(event: dict, copy: int, src: Source, ts_offset_us: int) -> str:
    """One event of copy `copy`, as JSON text, with its time and ids moved."""
    e = dict(event)
    id_offset = copy * src.id_stride
    if copy and isinstance(e.get("id"), int):
        e["id"] += id_offset
    args = e.get("args")
    if copy and args:
        args = dict(args)
        for k in ID_ARGS:
            if isinstance(args.get(k), int) and args[k] >= 0:
                args[k] += id_offset
        e["args"] = args
    ts = e.pop("ts", None)
    body = json.dumps(e, ensure_ascii=False)
    if ts is None:
        return "  " + body
    ts_text = str(Decimal(repr(ts)) + ts_offset_us) if (ts_offset_us or isinstance(ts, float)) else str(ts)
    return '  {"ts": ' + ts_text + (", " + body[1:] if len(body) > 2 else "}")


def write_trace(src: Source, target_bytes: int, outputs, extra: dict, ts_base_us: int = 0):
    """Write copies until the raw text reaches target_bytes; returns (raw bytes, copies)."""
    head, tail = src.header_and_footer(extra)
    written = 0

    def emit(text: str):
        nonlocal written
        data = text.encode("utf-8")
        written += len(data)
        for out in outputs:
            out.write(data)

    emit(head)
    first = True
    for e in src.metadata:
        emit(("" if first else ",\n") + shifted(e, 0, src, 0))
        first = False
    copies = 0
    while written < target_bytes:
        ts_offset = ts_base_us + copies * src.period_us
        chunk = ",\n".join(shifted(e, copies, src, ts_offset) for e in src.events)
        emit(("" if first else ",\n") + chunk)
        first = False
        copies += 1
    emit(tail)
    return written, copies


def gzip_writer(path: Path):
    raw = path.open("wb")
    return raw, gzip.GzipFile(filename=path.name[:-3], mode="wb", fileobj=raw, compresslevel=6, mtime=0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="real Kineto trace to replicate")
    ap.add_argument("--target-mb", type=float, default=220.0, help="minimum raw JSON size (MB = 1e6 bytes)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "data")
    ap.add_argument("--ranks", type=int, default=0, help="also write R rank files sharing the same total size")
    ap.add_argument("--skip-single", action="store_true", help="only write the rank files")
    args = ap.parse_args(argv)

    src = Source(args.source)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    target = int(args.target_mb * 1e6)
    print(f"source {args.source.name}: {len(src.events)} events per copy, period {src.period_us} us, "
          f"id stride {src.id_stride}")

    if not args.skip_single:
        raw_path = args.out_dir / "large_trace.json"
        gz_path = args.out_dir / "large_trace.json.gz"
        fz, gz = gzip_writer(gz_path)
        with raw_path.open("wb") as raw, fz, gz:
            size, copies = write_trace(src, target, [raw, gz], {})
        print(f"{raw_path}: {copies} copies, raw {size / 1e6:.1f} MB, gzip {gz_path.stat().st_size / 1e6:.1f} MB")

    if args.ranks:
        rank_dir = args.out_dir / "ranks"
        rank_dir.mkdir(parents=True, exist_ok=True)
        for old in rank_dir.glob("large-rank-*.pt.trace.json.gz"):
            old.unlink()
        per_rank = target // args.ranks
        for r in range(args.ranks):
            path = rank_dir / f"large-rank-{r}.pt.trace.json.gz"
            dist = {"distributedInfo": {"backend": "nccl", "rank": r, "world_size": args.ranks}}
            fz, gz = gzip_writer(path)
            with fz, gz:
                # Ranks start a few microseconds apart, as real ranks do.
                size, copies = write_trace(src, per_rank, [gz], dist, ts_base_us=3 * r)
            print(f"{path}: {copies} copies, raw {size / 1e6:.1f} MB, gzip {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
