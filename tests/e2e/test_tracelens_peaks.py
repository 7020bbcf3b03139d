"""Issue 26, items 7 and 8, on real traces: the op the user wrote gets its
subtree's kernels (autocast), FLOPs are counted once, no rate above the
device's peak goes unflagged, a trace without stages still gets its tables, and
ops without recorded shapes are categorised as their kernels are.

The autocast traces (tests/data/autocast) were recorded on an H100 by
examples/autocast_trace/record_autocast.py; the sweep also runs every trace in
tests/data and in the shared trace folder when it is there.
"""
import gzip
import json
from pathlib import Path

import pytest

from conftest import REPO_ROOT, shared_traces
from test_tracelens import read_csv, run as run_tracelens

pytestmark = pytest.mark.e2e

AUTOCAST = REPO_ROOT / "tests" / "data" / "autocast"
SHAPES = AUTOCAST / "autocast_shapes.json.gz"
NOSHAPES = AUTOCAST / "autocast_noshapes.json.gz"

# Datasheet memory bandwidth (TB/s) of the GPUs these traces ran on
# (docs/GPU_DATASHEET.md); compute peaks are read from each row's Peak TFLOPS.
BANDWIDTH = {"H100": 3.35, "H200": 4.8, "MI300X": 5.3, "A100": 2.039, "A100 SXM 40GB": 1.555}


def run(magpie, *args, check=True):
    return run_tracelens(magpie, args, check=check)


def manifest(out):
    return json.loads((out / "tracelens" / "tracelens_manifest.json").read_text())


def num(s):
    return float(s) if s not in ("", None) else None


def test_autocast_conv1d_and_linear_get_their_kernels(magpie, tmp_path):
    run(magpie, SHAPES, "--mode", "pytorch", "-o", tmp_path)
    rank = tmp_path / "tracelens" / "rank0"
    conv = [r for r in read_csv(rank / "CONV_fwd.csv") if r["name"] == "aten::conv1d"]
    assert len(conv) == 1, conv
    conv = conv[0]
    # Before: the cuDNN kernel went to aten::_convolution and conv1d kept only
    # its casts, at thousands of TFLOP/s.
    assert conv["Compute Spec"] == "matrix_bf16"
    assert float(conv["TFLOPS/s_mean"]) <= float(conv["Peak TFLOPS"]) == 989
    assert conv["Peak Check"] == ""
    gemm = [r for r in read_csv(rank / "GEMM.csv") if r["name"] == "aten::linear"]
    assert len(gemm) == 1 and gemm[0]["Compute Spec"] == "matrix_bf16"
    assert float(gemm[0]["TFLOPS/s_mean"]) <= 989
    kernels = read_csv(rank / "kernel_summary.csv")
    fprop = [k for k in kernels if "xmma_fprop" in k["name"]]
    assert fprop and all(k["launching_op"] == "aten::conv1d" for k in fprop)
    assert all(k["kernel_category"] == "GEMM" for k in fprop)
    # FLOPs once: no inner op of conv1d or linear has a row of its own.
    names = {r["name"] for r in read_csv(rank / "ops_summary.csv")}
    assert not names & {"aten::convolution", "aten::_convolution", "aten::cudnn_convolution",
                        "aten::matmul"}


def test_rates_above_the_peak_are_flagged_and_warned(magpie, tmp_path):
    """The H100's bf16 GEMMs run ~600 TFLOP/s; rooflined on an RTX 4060 (30.2 dense bf16)
    that is impossible: the rows say so and the manifest warns, never a bare number."""
    run(magpie, SHAPES, "--mode", "pytorch", "--gpu-arch", "RTX 4060", "-o", tmp_path)
    gemm = read_csv(tmp_path / "tracelens" / "rank0" / "GEMM.csv")
    fast = [r for r in gemm if float(r["TFLOPS/s_mean"]) > float(r["Peak TFLOPS"])]
    assert fast
    for r in fast:
        assert "above the matrix_bf16 compute peak" in r["Peak Check"], r
        assert "> 30.2 TFLOP/s" in r["Peak Check"], r
    warnings = manifest(tmp_path)["warnings"]
    assert any("Peak Check" in w and "above the matrix_bf16 compute peak" in w for w in warnings)


def rows_above_peak(table, bw):
    """Rows whose mean rates exceed the peak, and whether each carries a Peak Check."""
    out = []
    for r in table:
        tflops, peak = num(r.get("TFLOPS/s_mean")), num(r.get("Peak TFLOPS"))
        tbps = num(r.get("TB/s_mean"))
        above = (tflops is not None and peak and tflops > peak) or \
                (tbps is not None and bw and tbps > bw)
        if above:
            out.append((r["name"], bool(r["Peak Check"])))
    return out


TRACE_FOLDERS = ("autocast", "h200_graphs", "h200_symm_mem", "public_traces", "rocprof",
                 "trace_rules")


def all_traces():
    data = REPO_ROOT / "tests" / "data"
    files = sorted(p for d in TRACE_FOLDERS for p in (data / d).rglob("*.json*")
                   if p.name.endswith((".json", ".json.gz")))
    shared = shared_traces()
    if shared.is_dir():
        files += sorted(p for p in shared.rglob("*.json.gz"))
    return files


@pytest.mark.parametrize("trace", all_traces(), ids=lambda p: p.name)
def test_no_row_above_peak_without_a_flag(magpie, tmp_path, trace):
    """Every table of both modes: a mean TFLOP/s above the row's Peak TFLOPS, or a
    mean TB/s above the GPU's datasheet bandwidth, must carry a Peak Check."""
    checked = 0
    for mode in ("inference", "pytorch"):
        out = tmp_path / mode
        proc = run(magpie, trace, "--mode", mode, "-o", out, check=False)
        if proc.returncode != 0:  # not a trace, or no GPU work: test_public_traces covers it
            assert proc.returncode in (3, 4, 5, 6), proc.stderr
            return
        m = manifest(out)
        if mode == "inference":
            bw = BANDWIDTH.get(m["gpu_arch_platform"])
        flagged = 0
        for csv_path in sorted((out / "tracelens").rglob("*.csv")):
            table = read_csv(csv_path)
            if not table or "Peak Check" not in table[0] or "Peak TFLOPS" not in table[0]:
                continue
            for name, has_flag in rows_above_peak(table, bw):
                assert has_flag, f"{mode} {csv_path.name}: {name} above the peak, not flagged"
            flagged += sum(1 for r in table if r["Peak Check"])
            checked += len(table)
        if flagged:
            assert any("Peak Check" in w for w in m["warnings"]), m["warnings"]
    assert checked >= 0


def test_inference_mode_without_stages_reports_the_whole_trace(magpie, tmp_path):
    """Before: "split: whole trace", iterations {}, only the manifest, exit 0."""
    proc = run(magpie, SHAPES, "-o", tmp_path, "--isl", 8, "--osl", 1, "--conc", 1)
    m = manifest(tmp_path)
    assert set(m["stage_results"]) == {"whole_trace"}
    assert m["iterations"]["whole_trace"] == 1  # beside any iterations found without a stage
    r = m["stage_results"]["whole_trace"]
    assert r["phase_pick"]["stage"] == "whole_trace"
    simple = Path(r["simple_summary_file"])
    assert simple.name == "whole_trace_ISL8_OSL1_CONC1_kernel_roofline_simple.csv"
    assert read_csv(simple)
    for table in ("gpu_timeline", "ops_summary", "ops_summary_by_category", "kernel_summary"):
        assert (tmp_path / "tracelens" / "whole_trace" / f"{table}.csv").is_file()
    # The whole trace: every GPU event (kernels, copies, sets) of the file.
    kernels = read_csv(tmp_path / "tracelens" / "whole_trace" / "kernel_summary.csv")
    with gzip.open(SHAPES, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu = sum(1 for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert sum(int(k["calls"]) for k in kernels) == gpu
    assert r["summary"]["gpu_events"] == gpu
    assert "whole_trace" in proc.stdout
    assert any("whole trace is reported as one stage" in w for w in m["warnings"])


def test_ops_without_shapes_are_categorised_like_their_kernels(magpie, tmp_path):
    """Before: every op "other" (100%) while kernel_summary said GEMM."""
    run(magpie, NOSHAPES, "--mode", "pytorch", "-o", tmp_path)
    rank = tmp_path / "tracelens" / "rank0"
    ops = {r["name"]: r["op category"] for r in read_csv(rank / "ops_summary.csv")}
    # The op the user wrote, as with shapes (its name says what it is), and the
    # backward matrix ops.
    assert ops["aten::linear"] == "GEMM"
    assert ops["aten::conv1d"] == "CONV_fwd"
    assert ops["aten::mm"] == "GEMM"
    assert ops["aten::convolution_backward"] == "CONV_bwd"
    assert "aten::cudnn_convolution" not in ops  # inside aten::conv1d
    by_cat = {r["op category"]: float(r["Kernel Time (µs)_sum"])
              for r in read_csv(rank / "ops_summary_by_category.csv")}
    # Every GEMM kernel's op is a matrix op in the op tables too, so the matrix
    # categories hold at least the GEMM kernels' time.
    gemm_us = 0.0
    for k in read_csv(rank / "kernel_summary.csv"):
        if k["kernel_category"] == "GEMM":
            assert ops[k["launching_op"]] in ("GEMM", "CONV_fwd", "CONV_bwd"), k["name"]
            gemm_us += float(k["Kernel Time (µs)_sum"])
    matrix_us = sum(by_cat.get(c, 0) for c in ("GEMM", "CONV_fwd", "CONV_bwd"))
    assert gemm_us > 0 and matrix_us >= gemm_us * (1 - 1e-9), (matrix_us, gemm_us)


def test_collective_ops_without_shapes_are_communication(magpie, tmp_path):
    trace = shared_traces() / "public" / "hta__nccl_collectives.json.gz"
    if not trace.is_file():
        pytest.skip(f"no shared traces at {shared_traces()}")
    run(magpie, trace, "--mode", "pytorch", "-o", tmp_path)
    (rank,) = (tmp_path / "tracelens").glob("rank*")
    ops = {r["name"]: r["op category"] for r in read_csv(rank / "ops_summary.csv")}
    comm = [k for k in read_csv(rank / "kernel_summary.csv")
            if k["kernel_category"] == "communication"]
    assert comm
    for k in comm:
        assert ops[k["launching_op"]] == "communication", (k["launching_op"], k["name"])
