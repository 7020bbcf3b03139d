"""The collective report checked from the traces alone, rank by rank (issue: several GPUs of one host).

Each check recomputes, here and independently of Magpie, what the report says:
- every NCCL collective kernel of every rank is counted, with its message size and group size;
- algorithm bandwidth = message bytes / mean time, bus bandwidth with NCCL's factors
  (all_reduce 2(n-1)/n; all_gather and reduce_scatter (n-1)/n; broadcast, reduce and send/recv 1);
- the slowest rank of each collective is the rank whose calls took longest in total;
- exposed communication of a rank = time of its communication kernels that no other kernel of
  that rank overlaps.

The same checks run on two sets of traces:
- HTA's public NCCL trace (shared traces; CI has them; one rank, whose kernels carry the collective
  arguments that PyTorch records today), so the checks themselves are tested;
- tests/data/multirank_h200/: one trace per rank recorded by examples/multigpu/record_collectives.py
  on several H200s (skipped, saying so, until such a recording is in the tree).
"""
import csv
import gzip
import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import shared_traces

PUBLIC = shared_traces() / "public"
RECORDED = Path(__file__).resolve().parents[1] / "data" / "multirank_h200"
BYTES = {"Float": 4, "float": 4, "Long": 8, "BFloat16": 2, "c10::BFloat16": 2, "Half": 2,
         "c10::Half": 2, "Int": 4, "Double": 8, "Byte": 1, "Char": 1}
KIND = {"allreduce": "all_reduce", "all_reduce": "all_reduce", "allgather": "all_gather",
        "all_gather": "all_gather", "_allgather_base": "all_gather", "all_gather_into_tensor": "all_gather",
        "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
        "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
        "broadcast": "broadcast", "reduce": "reduce", "send": "send_recv", "recv": "send_recv",
        "sendrecv": "send_recv"}
BUS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
       "reduce_scatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0,
       "send_recv": lambda n: 1.0}


def rank_sets():
    sets = []
    hta = sorted(PUBLIC.glob("hta__nccl_collectives.json.gz")) if PUBLIC.is_dir() else []
    sets.append(pytest.param(hta, id="hta_nccl_collectives",
                             marks=pytest.mark.skipif(not hta, reason=f"no shared traces at {PUBLIC}")))
    rec = sorted(RECORDED.glob("rank*.pt.trace.json.gz")) if RECORDED.is_dir() else []
    sets.append(pytest.param(rec, id="h200_recorded",
                             marks=pytest.mark.skipif(len(rec) < 2, reason=(
                                 f"no multi-GPU recording in {RECORDED}: needs 2+ GPUs "
                                 "(examples/multigpu/run_h200_multi.sh)"))))
    return sets


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def trace_rank(doc, path):
    info = doc.get("distributedInfo") or {}
    if "rank" in info:
        return int(info["rank"])
    return int(path.name.split("rank")[-1].lstrip("-_").split(".")[0]) if "rank" in path.name else 0


def collectives_of(events):
    """NCCL kernels that carry collective arguments → [(kind, bytes, group, ts, dur)]."""
    out = []
    for e in events:
        a = e.get("args", {})
        if e.get("cat") != "kernel" or "Collective name" not in a:
            continue
        kind = KIND[a["Collective name"].lower()]
        nbytes = max(a.get("In msg nelems", 0), a.get("Out msg nelems", 0)) * BYTES[a["dtype"]]
        out.append((kind, nbytes, int(a["Group size"]), float(e["ts"]), float(e["dur"])))
    return out


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def exposed(comm, compute):
    """Length of the comm intervals' union not covered by the compute intervals' union."""
    merged = []
    for s, e in sorted(compute):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    covered = 0.0
    for s, e in _merge(comm):
        for cs, ce in merged:
            covered += max(0.0, min(e, ce) - max(s, cs))
    return union_length(comm) - covered


def _merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


@pytest.mark.parametrize("traces", rank_sets())
def test_collective_report_from_the_traces_alone(magpie, tmp_path, traces):
    ranks_dir = tmp_path / "ranks"
    ranks_dir.mkdir()
    per_rank = {}
    for t in traces:
        shutil.copy(t, ranks_dir)
        with gzip.open(t, "rt", encoding="utf-8", errors="replace") as f:
            doc = json.load(f)
        events = doc["traceEvents"]
        rank = trace_rank(doc, t)
        coll = collectives_of(events)
        kernels = [e for e in events if e.get("cat") == "kernel" and "dur" in e]
        comm_iv = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in kernels
                   if "nccl" in e["name"].lower()]
        compute_iv = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in kernels
                      if "nccl" not in e["name"].lower()]
        per_rank[rank] = {"coll": coll, "comm": comm_iv, "compute": compute_iv}
    assert len(per_rank) == len(traces), f"ranks {sorted(per_rank)} from {len(traces)} files"
    assert all(r["coll"] for r in per_rank.values()), "a rank without collectives"

    proc = subprocess.run([str(magpie), "tracelens", str(ranks_dir), "--mode", "pytorch", "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "tracelens" / "collective_report"

    # Every collective on every rank, with its size and group size; bandwidths per rank.
    want = defaultdict(list)  # (rank, kind, bytes) → durations
    group = {}
    for rank, r in per_rank.items():
        for kind, nbytes, n, _, dur in r["coll"]:
            want[(rank, kind, nbytes)].append(dur)
            group[(kind, nbytes)] = n
    rows = read_csv(out / "collective_per_rank.csv")
    got = {(int(r["rank"]), r["collective"], int(r["message_bytes"] or 0)): r for r in rows}
    assert sorted(got) == sorted(want), f"report {sorted(got)}\ntraces {sorted(want)}"
    for key, durs in want.items():
        r = got[key]
        _, kind, nbytes = key
        n = group[(kind, nbytes)]
        assert int(r["calls"]) == len(durs) and int(r["group_size"]) == n, r
        mean_us = sum(durs) / len(durs)
        assert float(r["mean_time_us"]) == pytest.approx(mean_us, rel=1e-6)
        algbw = nbytes / (mean_us * 1e-6) / 1e9
        assert float(r["algbw_GBps"]) == pytest.approx(algbw, rel=1e-6)
        assert float(r["busbw_GBps"]) == pytest.approx(algbw * BUS[kind](n), rel=1e-6), (kind, n)

    # The slowest rank per collective and size: the longest total.
    for s in read_csv(out / "collective_summary.csv"):
        if not s["message_bytes"]:
            continue
        key = (s["collective"], int(s["message_bytes"]))
        totals = {rank: sum(want.get((rank, *key), [])) for rank in per_rank if (rank, *key) in want}
        if len(totals) > 1:
            assert int(s["slowest_rank"]) == max(totals, key=totals.get), (key, totals)

    # Exposed communication on each rank's timeline.
    for r in read_csv(out / "collective_ranks.csv"):
        mine = per_rank[int(r["rank"])]
        assert float(r["communication_time_us"]) == pytest.approx(union_length(mine["comm"]), rel=1e-6)
        assert float(r["exposed_communication_us"]) == pytest.approx(exposed(mine["comm"], mine["compute"]),
                                                                     rel=1e-6, abs=1e-3)


@pytest.mark.skipif(not (RECORDED / "cuda_events_rank0.json").is_file(),
                    reason=f"no multi-GPU recording in {RECORDED}")
def test_largest_all_reduce_is_plausible_against_cuda_events(magpie, tmp_path):
    """Bus bandwidth of the largest all_reduce from the trace: below the link's peak (NVLink 4 on
    H200: 450 GB/s per direction) and within 2x of CUDA events around the same collective."""
    ranks_dir = tmp_path / "ranks"
    shutil.copytree(RECORDED, ranks_dir, ignore=shutil.ignore_patterns("*.json", "*.md"))
    proc = subprocess.run([str(magpie), "tracelens", str(ranks_dir), "--mode", "pytorch", "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [r for r in read_csv(tmp_path / "tracelens" / "collective_report" / "collective_summary.csv")
            if r["collective"] == "all_reduce" and r["message_bytes"]]
    largest = max(rows, key=lambda r: int(r["message_bytes"]))
    n = int(largest["group_size"])
    events = json.loads((RECORDED / "cuda_events_rank0.json").read_text())
    (timed,) = [t for t in events["timed"] if t["message_bytes"] == int(largest["message_bytes"])
                and t["dtype"].lower().replace("bfloat16", "bf16") in
                largest["dtype"].lower().replace("bfloat16", "bf16").replace("c10::", "")]
    direct_busbw = timed["message_bytes"] / (timed["median_us"] * 1e-6) / 1e9 * 2 * (n - 1) / n
    busbw = float(largest["busbw_GBps"])
    assert 0 < busbw < 450, busbw
    assert 0.5 < busbw / direct_busbw < 2.0, (busbw, direct_busbw)
