"""Tests of the harness parts that need no torch (run in CI)."""
import json
import os
import random

from magpie_bench.intervals import read_jsonl, union_ns, unjoined_work, window_unions
from magpie_bench.stopping import StdRelCriterion, rel_stddev
from magpie_bench.tolerance import tolerance_for


def test_tolerances_by_dtype():
    assert tolerance_for("torch.float32") == (1e-4, 1e-5)
    assert tolerance_for("bfloat16") == (2e-2, 1e-2)
    assert tolerance_for("int32") == (0.0, 0.0)
    assert tolerance_for("float16", rtol=0.5) == (0.5, 1e-3)


def test_union_counts_overlap_once():
    assert union_ns([(0, 10), (5, 15), (20, 30)]) == 25
    assert union_ns([(0, 10)], lo=5, hi=8) == 3
    assert union_ns([]) == 0


def test_window_unions_see_every_stream():
    kernels = [{"start": 100, "end": 200, "name": "main", "stream": 7},
               {"start": 150, "end": 400, "name": "side", "stream": 13},
               {"start": 900, "end": 950, "name": "flush", "stream": 7}]
    (busy, names), = window_unions(kernels, [(90, 500)])
    assert busy == 300 and names == ["main", "side"]


def test_read_jsonl_splits_markers(tmp_path):
    p = tmp_path / "k.jsonl"
    p.write_text(json.dumps({"name": "k", "start": 1, "end": 2}) + "\n" +
                 json.dumps({"marker": "s0", "ts": 0}) + "\n{broken\n")
    kernels, markers = read_jsonl(str(p))
    assert len(kernels) == 1 and markers[0]["marker"] == "s0"


def test_stops_on_low_noise():
    c = StdRelCriterion(max_noise=0.005, min_samples=10, min_time_s=0.0)
    rng = random.Random(1)
    xs = []
    for _ in range(1000):
        xs.append(1e-4 * (1 + rng.gauss(0, 0.001)))
        if c.should_stop(xs, sum(xs), 0.0):
            break
    assert c.reason == "noise" and len(xs) == 10


def test_converges_when_noise_stays_high():
    c = StdRelCriterion(max_noise=0.005, min_samples=10, min_time_s=0.0)
    rng = random.Random(2)
    xs = []
    for _ in range(5000):
        xs.append(1e-4 * (1 + rng.gauss(0, 0.03)))
        if c.should_stop(xs, sum(xs), 0.0):
            break
    assert c.reason == "noise_converged"
    assert 0.02 < rel_stddev(xs) < 0.04


def test_max_time_wins():
    c = StdRelCriterion(max_time_s=1.0)
    assert c.should_stop([1.0], 1.0, 2.0) and c.reason == "max_time"


def test_unjoined_side_stream_work_is_found_and_joined_work_is_not():
    spin = "spin_kernel"
    pre = {"start": 0, "end": 50, "name": spin, "stream": 7}
    post_unjoined = {"start": 60, "end": 61, "name": spin, "stream": 7}
    side = {"start": 55, "end": 300, "name": "add_kernel", "stream": 13}
    hit = unjoined_work([pre, side, post_unjoined], [(0, 400)], spin)
    assert hit == (1, "add_kernel", 240)
    # Joined: the caller's stream moves on only after the side kernel ended.
    post_joined = {"start": 301, "end": 302, "name": spin, "stream": 7}
    assert unjoined_work([pre, side, post_joined], [(0, 400)], spin) is None
    # Work on the caller's own stream is ordered by definition.
    own = dict(side, stream=7)
    assert unjoined_work([pre, own, post_unjoined], [(0, 400)], spin) is None
    # Without the two spins (no torch.cuda._sleep) nothing can be said.
    assert unjoined_work([side], [(0, 400)], spin) is None


def _brute_inside(kernels, lo, hi):
    return [k for k in kernels if k["end"] > lo and k["start"] < hi]


def test_window_sweep_matches_testing_every_pair():
    # The sweep (issue 28) against the definition, on random rounds: long kernels
    # spanning many windows, side streams, windows out of order and overlapping.
    rng = random.Random(7)
    for trial in range(40):
        kernels = []
        for i in range(rng.randint(0, 300)):
            s = rng.randint(0, 100_000)
            dur = rng.choice([rng.randint(1, 300), rng.randint(1, 30_000)])
            kernels.append({"start": s, "end": s + dur, "name": "k%d" % (i % 5), "stream": rng.choice([7, 13]),
                            "order": i})
        windows = []
        for _ in range(rng.randint(0, 200)):
            lo = rng.randint(0, 100_000)
            windows.append((lo, lo + rng.randint(0, 2_000)))
        if trial % 2:
            windows.sort()
        got = window_unions(kernels, windows)
        for (lo, hi), (busy, names) in zip(windows, got):
            inside = _brute_inside(kernels, lo, hi)
            assert busy == union_ns([(k["start"], k["end"]) for k in inside], lo, hi)
            assert names == sorted({k["name"] for k in inside})
        spin = "spin_kernel"
        for k in kernels:
            if k["order"] % 4 == 0:
                k["name"] = spin
        want_hit, want_worst, want_name = 0, 0, ""
        for lo, hi in windows:
            inside = _brute_inside(kernels, lo, hi)
            spins = sorted((k for k in inside if k["name"] == spin), key=lambda k: k["start"])
            if len(spins) < 2:
                continue
            post = spins[-1]
            late = [(k["end"] - post["start"], k["name"]) for k in inside
                    if k["name"] != spin and k["stream"] != post["stream"] and k["end"] > post["start"]]
            if late:
                want_hit += 1
                lateness, name = max(late)
                if lateness > want_worst:
                    want_worst, want_name = lateness, name
        got_u = unjoined_work(kernels, windows, spin)
        assert got_u == ((want_hit, want_name, want_worst) if want_hit else None)


def test_read_jsonl_fast_path_agrees_with_json(tmp_path):
    """The reader skips json.loads for the library's own kernel lines; every line must come out as
    json.loads reads it: escaped names, unicode, markers, other layouts, a torn last line."""
    def lib_line(name, start, end, stream):  # the layout libmagpie_cupti.cpp writes
        q = json.dumps(name, ensure_ascii=False)
        return ('{"name":%s,"mangled":%s,"start":%d,"end":%d,"grid":[1,2,3],"block":[4,5,6],"registers":7,'
                '"static_shared":0,"dynamic_shared":0,"stream":%d,"correlation":9,"device":0,"context":1,'
                '"graph_id":0}' % (q, q, start, end, stream))
    lines = [lib_line("plain_kernel", 10, 20, 7),
             lib_line('quote"d \\ back","mangled":"x', 30, 45, 13),
             lib_line("näme ✓ <lambda()#1>", 50, 60, 7),
             '{"marker":"ms0","ts":25}',
             '{"marker":"odd \\"label\\"","ts":26}',
             '{"name": "spaced", "start": 1, "end": 2, "stream": 3}',
             '{"marker":"dropped_records","ts":0,"count":4}',
             "not json",
             lib_line("plain_kernel", 70, 90, 8),
             '{"name":"torn","mangled":"torn","start":100,"en']
    p = tmp_path / "k.jsonl"
    p.write_text("\n".join(lines), encoding="utf-8")
    kernels, markers = read_jsonl(str(p))
    want_k, want_m = [], []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        (want_m if "marker" in rec else want_k).append(rec)
    assert [{k: r[k] for k in ("name", "start", "end", "stream")} for r in want_k] == \
        [{k: r[k] for k in ("name", "start", "end", "stream")} for r in kernels]
    assert markers == want_m
    assert kernels[1]["name"] == 'quote"d \\ back","mangled":"x'


def test_worker_refuses_cupti_kind_without_the_library(monkeypatch):
    """No injected library: the worker answers ok false, so the evaluator restarts it instead."""
    import pytest
    from magpie_bench.worker import set_cupti_kind
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    with pytest.raises(RuntimeError, match="no libmagpie_cupti.so"):
        set_cupti_kind("serial")
