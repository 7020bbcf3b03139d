"""`magpie whatif`: critical path per iteration and what-if re-timing, on real traces, checked
against an independent reading of the trace in Python (window lengths), against the tool's own
invariants (breakdowns add up, an unchanged scenario gains nothing), and, where a HolisticTrace-
Analysis venv exists (/tmp/hta or $MAGPIE_HTA_VENV), against HTA's critical path."""
import csv
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, shared_traces

LLAMA = shared_traces() / "h200" / "llama_4layer_bs16_prompt1024_decode16.json.gz"
GRAPH_REPLAY = REPO_ROOT / "tests" / "data" / "h200_graphs" / "graph_replay.json.gz"
NCCL = shared_traces() / "public" / "hta__nccl_collectives.json.gz"
CATEGORIES = ["cpu", "launch", "gpu", "sync", "collective", "idle"]


def run(magpie, *args, check=True):
    r = subprocess.run([str(magpie), "whatif", *map(str, args)], capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def whatif_json(magpie, trace, *scenarios):
    args = [trace, "--json"]
    for s in scenarios:
        args += ["--scenario", s]
    return json.loads(run(magpie, *args).stdout)["ranks"][0]


def need(path):
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared traces are not checked out beside the repo)")


def events(path):
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def test_decode_steps_are_windows_of_the_trace_and_breakdowns_add_up(magpie):
    need(LLAMA)
    r = whatif_json(magpie, LLAMA)
    ev = events(LLAMA)
    # Independent window lengths: a decode_step_N annotation opens at its start and closes when
    # it ends or when the last GPU work launched inside it ends, whichever is later.
    steps = {e["name"]: e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("decode_step_")}
    launches = {e["args"]["correlation"]: e for e in ev
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    paths = {p["window"]: p for p in r["paths"]}
    assert len(steps) == 16
    for name, a in steps.items():
        end = a["ts"] + a["dur"]
        for k in gpu:
            l = launches.get(k["args"].get("correlation"))
            if l is not None and a["ts"] <= l["ts"] < a["ts"] + a["dur"]:
                end = max(end, k["ts"] + k["dur"])
        assert paths[name]["length_us"] == pytest.approx(end - a["ts"], abs=0.01), name
    for p in r["paths"]:
        total = sum(p["breakdown"][c]["us"] for c in CATEGORIES)
        assert total == pytest.approx(p["length_us"], abs=0.01 * len(CATEGORIES)), p["window"]
    # The trace is host-bound: the GPU is busy a small part of each decode step.
    assert r["bound"] in ("CPU-bound", "launch-bound")
    assert r["breakdown"]["gpu"]["pct"] < 50


def test_unchanged_scenarios_gain_nothing_and_kernels_of_a_host_bound_trace_gain_little(magpie):
    need(LLAMA)
    r = whatif_json(magpie, LLAMA, "op:aten::mm:1x", "cpu:1x", "op:aten::mm:inf", "launch:0")
    same_op, same_cpu, mm_free, graph = r["whatif"]
    assert same_op["gain_us"] == 0 and same_cpu["gain_us"] == 0
    assert same_op["matched"] > 0
    # GEMMs at zero time: the GPU-bound prefill gains, the host-bound decode steps (the median
    # step) almost nothing.
    mm_kernel_us = next(o["kernel_us"] for o in r["ops"] if o["name"] == "aten::mm")
    assert 0 < mm_free["gain_us"] < mm_kernel_us
    assert mm_free["median_step_after_us"] > 0.99 * mm_free["median_step_before_us"]
    # Launch overhead removed (CUDA graphs) gains more than any GEMM could.
    assert graph["gain_us"] > mm_free["gain_us"]
    assert graph["median_step_after_us"] < graph["median_step_before_us"]


def test_calibration_to_a_measured_step_moves_the_bottleneck(magpie):
    """--measured-step-us: the calibrated median step is the measured one. The traced decode
    steps are host-bound (42 ms, mostly cuDNN's host work); calibrated to 1/30 of that they sit
    near the GPU floor, so making the host 2x faster gains a far smaller share."""
    need(LLAMA)
    traced = whatif_json(magpie, LLAMA, "cpu:2x")
    step = traced["whatif"][0]["median_step_before_us"]
    args = [LLAMA, "--json", "--scenario", "cpu:2x", "--measured-step-us", f"{step / 30:.3f}"]
    calibrated = json.loads(run(magpie, *args).stdout)["ranks"][0]
    c = calibrated["calibration"]
    assert traced["calibration"] is None
    assert c["traced_step_us"] == pytest.approx(step, rel=1e-6)
    assert c["calibrated_step_us"] == pytest.approx(step / 30, rel=0.01)
    assert c["host_speedup"] > 1
    w_traced, w_cal = traced["whatif"][0], calibrated["whatif"][0]
    assert w_cal["median_step_before_us"] == pytest.approx(step / 30, rel=0.01)
    share = lambda w: 1 - w["median_step_after_us"] / w["median_step_before_us"]
    assert share(w_traced) > 0.4          # host-bound as traced: half the host time is ~half the step
    assert share(w_cal) < share(w_traced) / 2
    # Per-step figures are in the JSON; the report itself stays as traced.
    assert len(w_cal["steps"]) == calibrated["iterations"]
    assert calibrated["path_us"] == pytest.approx(traced["path_us"])
    # A measured step the GPU work cannot reach is said, not hidden.
    r = run(magpie, LLAMA, "--measured-step-us", "1", "--scenario", "launch:0")
    assert "slower under the profiler" in r.stdout


def test_launch0_spacing_comes_from_graph_kernels_in_the_trace_or_the_option(magpie):
    """launch:0 spaces kernels by the gap a CUDA graph leaves. In a graph-replayed trace that gap
    is measured (the median gap between consecutive kernels one cudaGraphLaunch replayed on one
    stream, recounted here from the raw JSON); in an eager trace it is the eager queued gap, with
    a warning, unless --graph-gap-us gives it; a smaller gap predicts a shorter step."""
    ev = events(GRAPH_REPLAY)
    launches = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime"
                and e["name"] in ("cudaGraphLaunch", "cuGraphLaunch")}
    by_stream = {}
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            by_stream.setdefault((e["pid"], e["tid"]), []).append(e)
    gaps = []
    for work in by_stream.values():
        work.sort(key=lambda e: e["ts"])
        for a, b in zip(work, work[1:]):
            ca, cb = a["args"].get("correlation"), b["args"].get("correlation")
            if ca == cb and ca in launches:
                gaps.append(b["ts"] - (a["ts"] + a["dur"]))
    gaps.sort()
    assert len(gaps) >= 20
    g = whatif_json(magpie, GRAPH_REPLAY, "launch:0")["graph"]
    assert g["graph_gap_source"] == "kernels replayed from a CUDA graph in this trace"
    assert g["graph_gap_samples"] == len(gaps)
    assert g["graph_gap_us"] == pytest.approx(gaps[len(gaps) // 2], abs=0.002)

    # An eager trace from an H100 SXM takes the figure graph_gap.py measured on that GPU model.
    h100 = whatif_json(magpie, REPO_ROOT / "tests" / "data" / "public_traces" /
                       "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz", "launch:0")
    assert h100["graph"]["graph_gap_source"] == "measured on this GPU model without the profiler"
    assert h100["graph"]["graph_gap_us"] == pytest.approx(0.106)
    assert not any("--graph-gap-us" in w for w in h100["whatif"][0]["warnings"])

    need(LLAMA)  # an H200 trace: no figure measured on that model yet
    eager = whatif_json(magpie, LLAMA, "launch:0")
    assert eager["graph"]["graph_gap_source"].startswith("the gap between queued eager kernels")
    assert eager["graph"]["graph_gap_us"] == eager["graph"]["back_to_back_gap_us"]
    assert any("--graph-gap-us" in w for w in eager["whatif"][0]["warnings"])
    given = json.loads(run(magpie, LLAMA, "--json", "--scenario", "launch:0", "--graph-gap-us", "0").stdout)["ranks"][0]
    assert given["graph"]["graph_gap_source"] == "given (--graph-gap-us)" and given["graph"]["graph_gap_us"] == 0
    assert not given["whatif"][0]["warnings"] or not any("--graph-gap-us" in w for w in given["whatif"][0]["warnings"])
    assert given["whatif"][0]["median_step_after_us"] < eager["whatif"][0]["median_step_after_us"]
    assert run(magpie, LLAMA, "--graph-gap-us", "-1", check=False).returncode == 2


SENDRECV = [shared_traces() / "public" / f"hta__sendrecv-rank-{r}.json.gz" for r in (0, 1)]


def test_two_ranks_link_the_collectives_that_end_together(magpie, tmp_path):
    """HTA's two-rank send/recv pair (a sampled window of a 128-rank job): the NCCL kernels of
    rank 0 and rank 1 that complete together (each the other's nearest by end, within 50 us or 1%
    of the shorter kernel) are one collective; counted here from the raw JSON, they must be the
    ones linked. Given as two files or as a folder."""
    for p in SENDRECV:
        need(p)
    calls = []
    for p in SENDRECV:
        calls.append([(e["ts"], e["ts"] + e["dur"]) for e in events(p)
                      if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower()])
    nearest = lambda end, cs: min(cs, key=lambda c: abs(c[1] - end))
    pairs = 0
    for a in calls[0]:
        b = nearest(a[1], calls[1])
        tolerance = max(50, min(a[1] - a[0], b[1] - b[0]) / 100)
        pairs += abs(a[1] - b[1]) <= tolerance and nearest(b[1], calls[0]) == a
    assert pairs == 5
    r = run(magpie, *SENDRECV, "--json", "--scenario", "wait:0")
    out = json.loads(r.stdout)
    assert out["cross_rank_matched"] == 2 * pairs
    assert [rk["graph"]["cross_rank_edges"] for rk in out["ranks"]] == [pairs, pairs]
    assert all(rk["whatif"][0]["matched"] == pairs for rk in out["ranks"])
    assert "have no partner" in r.stderr  # the other 10 kernels: other groups of the 128-rank job
    folder = tmp_path / "job"
    folder.mkdir()
    for p in SENDRECV:
        (folder / p.name).symlink_to(p)
    again = json.loads(run(magpie, folder, "--json").stdout)
    assert again["cross_rank_matched"] == 2 * pairs
    # One rank alone: nothing to link, and wait:0 says why.
    alone = run(magpie, SENDRECV[0], "--scenario", "wait:0")
    assert "no collective of this rank was matched" in alone.stderr


def test_outputs_are_written_and_agree_with_stdout(magpie, tmp_path):
    need(GRAPH_REPLAY)
    out = tmp_path / "whatif"
    r = run(magpie, GRAPH_REPLAY, "-o", out, "--scenario", "kernel:gemm:2x")
    assert "scenario" in r.stdout and "kernel:gemm:2x" in r.stdout
    report = json.loads((out / "critical_path.json").read_text())
    rank = report["ranks"][0]
    assert rank["graph"]["gpu_nodes"] > 0 and rank["graph"]["launch_edges"] > 0
    with open(out / "whatif.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["scenario"] == "kernel:gemm:2x"
    assert float(rows[0]["gain_us"]) == pytest.approx(rank["whatif"][0]["gain_us"], abs=0.001)
    with open(out / "critical_path.csv") as f:
        windows = list(csv.DictReader(f))
    assert windows[0]["window"] == "whole trace"
    assert (out / "critical_path_ops.csv").stat().st_size > 0


def test_collectives_are_their_own_category(magpie):
    need(NCCL)
    r = whatif_json(magpie, NCCL)
    whole = r["paths"][0]
    assert sum(whole["breakdown"][c]["us"] for c in CATEGORIES) == pytest.approx(whole["length_us"], abs=0.1)
    kernels = {k["name"] for k in r["kernels"]}
    assert any("nccl" in k.lower() for k in kernels)


ODD_TRACES = sorted((REPO_ROOT / "tests" / "data" / "public_traces").glob("*.json.gz")) + sorted(
    (REPO_ROOT / "tests" / "data" / "h200_graphs").glob("*.json.gz"))


@pytest.mark.parametrize("trace", [t for t in ODD_TRACES if "execution_trace" not in t.name], ids=lambda t: t.name)
def test_every_kind_of_trace_gives_a_path_or_a_warning_never_a_crash(magpie, trace):
    """CPU-only, GPU-only (rocprof, no launches), ROCm, MTIA, graph replays, torch.compile:
    exit 0, every window's breakdown adds up, and what is missing is said on stderr."""
    r = run(magpie, trace, "--json", "-s", "launch:0", "-s", "sync:0", "-s", "cpu:2x")
    for rank in json.loads(r.stdout)["ranks"]:
        for p in rank["paths"]:
            assert sum(p["breakdown"][c]["us"] for c in CATEGORIES) == pytest.approx(p["length_us"], abs=0.01)
        if rank["graph"]["gpu_nodes"] == 0:
            assert "no GPU work" in r.stderr


def test_bad_scenario_is_a_usage_error_before_reading(magpie, tmp_path):
    r = run(magpie, tmp_path / "missing.json", "--scenario", "op:aten::mm:fast", check=False)
    assert r.returncode == 2
    assert "bad scenario 'op:aten::mm:fast'" in r.stderr and "op:NAME:2x" in r.stderr


def test_missing_trace_is_not_found(magpie, tmp_path):
    r = run(magpie, tmp_path / "missing.json", check=False)
    assert r.returncode == 3


# ----------------------------------------------------------------------------- HTA comparison
HTA_PY = Path(os.environ.get("MAGPIE_HTA_VENV", "/tmp/hta")) / "bin" / "python"
HTA_SCRIPT = REPO_ROOT / "examples" / "critical_path" / "hta_critical_path.py"


@pytest.mark.skipif(not HTA_PY.exists(),
                    reason="no HolisticTraceAnalysis venv at /tmp/hta ($MAGPIE_HTA_VENV): HTA comparison skipped")
def test_agrees_with_hta_on_a_decode_step(magpie):
    """docs/CRITICAL_PATH.md "Compared with HTA": the host-bound share agrees; HTA's path is the
    step's time inside recorded events (it leaves out untraced host time between ops)."""
    need(LLAMA)
    r = subprocess.run([str(HTA_PY), str(HTA_SCRIPT), str(LLAMA), "decode_step_5", "0", "0"],
                       capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        pytest.skip(f"HTA's critical path did not run on this trace: {r.stderr[-400:]}")
    hta = json.loads(r.stdout.strip().splitlines()[-1])
    ours = next(p for p in whatif_json(magpie, LLAMA)["paths"] if p["window"] == "decode_step_5")
    hta_host = 100 * hta["bound_by_us"].get("cpu_bound", 0) / hta["length_us"]
    ours_host = sum(ours["breakdown"][c]["pct"] for c in ("cpu", "launch", "sync"))
    assert abs(hta_host - ours_host) < 5
    assert 0.9 * ours["length_us"] <= hta["length_us"] <= ours["length_us"]


# ---- the loop acts on it: gap analysis and replay --top-k rank by predicted end-to-end gain ----

PUBLIC = REPO_ROOT / "tests" / "data" / "public_traces"
# BERT-small inference on an H100: the GPU busy 7% of the step, 92% of the path host time.
HOST_BOUND = PUBLIC / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz"
# torch.compile'd transformer block (MI300X): the GPU busy 97%, the GEMMs the path.
GPU_BOUND = PUBLIC / "tracelens__torch_compile_triton__trace.json.gz"
HOST_FIXES = {"launch", "sync", "cpu"}


def replay_top_k(magpie, trace, out):
    r = subprocess.run([str(magpie), "replay", str(trace), "--top-k", "3", "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout, json.loads((out / "replay.json").read_text())


def test_replay_top_k_puts_the_host_fix_first_on_a_host_bound_trace(magpie, tmp_path):
    stdout, j = replay_top_k(magpie, HOST_BOUND, tmp_path / "r")
    first = j["recommendations"][0]
    assert first["kind"] in HOST_FIXES and first["predicted_gain_us"] > 0, first
    assert j["critical_path"]["host_bound"] and j["critical_path"]["gpu_busy_pct"] < 50
    # Said before the kernel table, with the gain and the class of fix.
    assert stdout.index("host-bound") < stdout.index("By kernel time")
    assert first["target"] in stdout.split("By kernel time")[0]
    # Kernel work of every selected op buys less than the first host fix, and keeps its kernel-time rank.
    ranked = j["by_end_to_end_gain"]
    assert sorted(r["kernel_time_rank"] for r in ranked) == [t["rank"] for t in j["targets"]]
    assert all(r["e2e_gain_bound_us"] < first["predicted_gain_us"] for r in ranked)
    # The existing outputs stay: targets in kernel-time order with their slugs.
    assert [t["rank"] for t in j["targets"]] == [1, 2, 3]


def test_replay_top_k_keeps_the_top_kernel_first_on_a_gpu_bound_trace(magpie, tmp_path):
    stdout, j = replay_top_k(magpie, GPU_BOUND, tmp_path / "r")
    first = j["recommendations"][0]
    assert first["kind"] == "kernel" and first["kernel_rank"] == 1, first
    assert first["target"] == j["targets"][0]["signature"]["name"]
    assert not j["critical_path"]["host_bound"]
    assert "host-bound" not in stdout
    top = j["by_end_to_end_gain"][0]
    assert top["kernel_time_rank"] == 1 and top["e2e_gain_bound_us"] > 0


def test_gap_analysis_has_a_critical_path_section(magpie, tmp_path):
    runs = {}
    for name, trace in (("host", HOST_BOUND), ("gpu", GPU_BOUND)):
        d = tmp_path / name
        d.mkdir()
        (d / trace.name).symlink_to(trace)
        r = subprocess.run([str(magpie), "benchmark", "--trace-dir", str(d), "-o", str(tmp_path / f"out_{name}"), "--html"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "critical path:" in r.stdout
        folder = tmp_path / f"out_{name}" / "gap_analysis"
        runs[name] = (json.loads((folder / "gap_analysis.json").read_text()), folder)
    for name, (j, folder) in runs.items():
        cp = j["ranks"][0]["critical_path"]
        whole = cp["whole"]
        assert abs(sum(c["pct"] for c in whole["breakdown"].values()) - 100) < 0.1
        # The median step where the trace has iterations (the BERT trace has one ProfilerStep).
        assert (cp["median_step"] is None) == (cp["iterations"] == 0)
        assert {f["scenario"] for f in cp["host_fixes"]} == {"launch:0", "sync:0", "cpu:2x"}
        rows = list(csv.DictReader(open(j["critical_path_csv"])))
        recs = [r for r in rows if r["row"] == "recommendation"]
        assert recs[0]["name"] == cp["recommendations"][0]["target"]
        assert any(r["row"] == "whole_trace" for r in rows) and any(r["row"] == "op" for r in rows)
        assert "Critical path, rank" in (folder / "gap_analysis.html").read_text()
    assert runs["host"][0]["ranks"][0]["critical_path"]["median_step"]["length_us"] > 0
    assert runs["host"][0]["ranks"][0]["critical_path"]["recommendations"][0]["kind"] in HOST_FIXES
    assert runs["gpu"][0]["ranks"][0]["critical_path"]["recommendations"][0]["kind"] == "kernel"


def test_gap_analysis_critical_path_keeps_to_the_time_window(magpie, tmp_path):
    """--start-pct/--end-pct: the critical path's steps are the iterations wholly inside the
    window (recounted here from the ProfilerStep annotations of the raw JSON), and a warning says
    the whole-window figures stay the whole trace's."""
    need(LLAMA)
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events(LLAMA)
                   if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    out = {}
    for name, extra in (("all", []), ("half", ["--start-pct", "50"])):
        d = tmp_path / name
        r = subprocess.run([str(magpie), "benchmark", "--trace-dir", str(LLAMA.parent), "-o", str(d), *extra],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name] = json.loads((d / "gap_analysis" / "gap_analysis.json").read_text())["ranks"][0]["critical_path"]
    assert out["all"]["iterations"] > 0
    assert not any("time window" in w for w in out["all"]["warnings"])
    half = out["half"]
    assert 0 < half["iterations"] < out["all"]["iterations"]
    assert any("lie wholly inside the time window" in w for w in half["warnings"])
    assert half["whole"]["length_us"] == pytest.approx(out["all"]["whole"]["length_us"])


def test_op_scenario_with_shapes_changes_only_that_signature(magpie):
    """op:NAME:SHAPES:CHANGE touches only the calls whose Input Dims are SHAPES: each signature's
    call count (recounted from the raw JSON) is what +1us matches, the signatures add up to the
    name alone, and the prefill GEMM (16384 rows) buys more than the decode GEMM of its weight."""
    need(LLAMA)
    counts = {}
    for e in events(LLAMA):
        if e.get("name") == "aten::mm" and e.get("ph") == "X":
            key = json.dumps(e["args"].get("Input Dims"), separators=(",", ":"))
            counts[key] = counts.get(key, 0) + 1
    sigs = sorted(counts)
    r = whatif_json(magpie, LLAMA, "op:aten::mm:+1us", *[f"op:aten::mm:{s}:+1us" for s in sigs])
    whole, per_sig = r["whatif"][0], r["whatif"][1:]
    assert [w["matched"] for w in per_sig] == [counts[s] for s in sigs]
    assert sum(w["matched"] for w in per_sig) == whole["matched"]
    # Spaces in SHAPES do not matter; the prefill GEMM gains more at zero time than its decode twin.
    prefill, decode = "[[16384, 4096], [4096, 14336]]", "[[16, 4096], [4096, 14336]]"
    a, b = whatif_json(magpie, LLAMA, f"op:aten::mm:{prefill}:inf", f"op:aten::mm:{decode}:inf")["whatif"]
    assert a["matched"] > 0 and b["matched"] > 0
    assert a["gain_us"] > b["gain_us"]
    bad = run(magpie, LLAMA, "--scenario", "op:aten::mm:[[16,4096:inf", check=False)
    assert bad.returncode == 2 and "SHAPES" in bad.stderr
