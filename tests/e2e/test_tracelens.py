"""End-to-end check of `magpie tracelens` on the real shared traces.

The real binary analyses each trace; this file checks its outputs against
figures computed here independently, with nothing but json, csv and gzip:

  * the stages found (from the engines' step annotations, the H200 trace's
    decode_step_N markers plus its unannotated prefill, or the token-id shapes);
  * GEMM FLOPs = 2·M·N·K (+ M·N for a bias) from the recorded Input Dims, both
    per row of the compact CSV and summed over every GEMM op of the raw trace
    that launched a kernel (pytorch mode, whole trace);
  * roofline_bound against the ridge point of the datasheet peaks (docs/REFERENCE_FACTS.md §4);
  * time_pct summing to 100 within rounding;
  * graph attribution coverage for the vLLM capture/replay pairs;
  * the compact CSV's columns and the manifest's shape (docs/MAGPIE_COMPATIBILITY.md §6);
  * bad inputs that still give reports, with a warning that says what to do.
"""
import csv
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import shared_traces

SHARED = shared_traces()
PUBLIC = SHARED / "public"
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not PUBLIC.is_dir(), reason=f"no shared traces at {SHARED}")]

SIMPLE_COLUMNS = [
    "source_category", "op_name", "param_signature", "operation_count", "num_kernels",
    "kernel_time_ms_sum", "time_pct", "kernel_time_us_mean", "gflops", "data_moved_mb",
    "arithmetic_intensity_flops_per_byte", "achieved_tflops_mean", "achieved_tbps_mean",
    "compute_spec", "roofline_bound", "pct_roofline_mean", "roofline_time_us", "has_perf_model",
    "params_json", "input_dims", "input_type", "peak_check"]

# Dense datasheet peaks (docs/REFERENCE_FACTS.md §4; AMD's datasheets give MI300X 1307.4 and
# 163.4 TFLOP/s, which the reference rounds): bf16/fp16 matrix and fp32 vector
# TFLOP/s, TB/s. 16-bit vector work runs at the fp32 vector peak (PyTorch's
# elementwise kernels compute in fp32; gpu_arch.hpp documents the fallback).
def _peaks(matrix16, vector32, bw):
    return {"matrix_bf16": matrix16, "matrix_fp16": matrix16, "vector_fp32": vector32,
            "vector_bf16": vector32, "vector_fp16": vector32, "bw": bw}


PEAKS = {"H100": _peaks(989, 67, 3.35), "H200": _peaks(989, 67, 4.8),
         "MI300X": _peaks(1307.4, 163.4, 5.3)}
LABEL = {"prefilldecode": "prefilldecode", "decode": "decode_only", "prefill": "prefill_only"}


def capture_of(replay: Path) -> Path:
    prefix = replay.name.replace("__graph_execution.json.gz", "")
    (capture,) = PUBLIC.glob(prefix + "__capture_traces__graph_capture_rank_0*.pt.trace.json.gz")
    return capture


# name → (trace, stages expected, GPU, capture trace or None)
CASES = {
    "vllm_decode_graph": (PUBLIC / "traces__inference__vllm_decode_full__graph_execution.json.gz",
                          {"decode"}, "MI300X", True),
    "vllm_prefilldecode_graph": (
        PUBLIC / "traces__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz",
        {"prefilldecode"}, "MI300X", True),
    "vllm_decode_graph_without_capture": (
        PUBLIC / "traces__inference__vllm_decode_full__graph_execution.json.gz",
        {"decode"}, "MI300X", False),
    "sglang_decode": (PUBLIC / "traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
                      {"decode"}, "MI300X", False),
    "h200_llama": (SHARED / "h200" / "llama_4layer_bs16_prompt1024_decode16.json.gz",
                   {"decode", "prefill"}, "H200", False),
    "h100_qwen": (PUBLIC / "traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                  {"prefill"}, "H100", False),
    "mi300_qwen": (PUBLIC / "traces__mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                   {"prefill"}, "MI300X", False),
    "h100_bert": (PUBLIC / "traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
                  {"prefill"}, "H100", False),
    "mi300_bert": (PUBLIC / "traces__mi300__gaunernst_bert-small-uncased__1016001.json.gz",
                   {"prefill"}, "MI300X", False),
}


def run(magpie, args, check=True):
    proc = subprocess.run([str(magpie), "tracelens", *map(str, args)], capture_output=True,
                          text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def header(path):
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f))


def load_events(path):
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return json.load(f)["traceEvents"]


def gemm_flops(op, dims):
    """2·M·N·K (+ M·N with a bias) from an aten op's Input Dims; None if not a plain GEMM."""
    if op == "aten::mm" and len(dims[0]) == 2:
        (m, k), (_, n) = dims[0], dims[1]
        return 2 * m * n * k
    if op == "aten::addmm" and len(dims[1]) == 2:
        (m, k), (_, n) = dims[1], dims[2]
        return 2 * m * n * k + m * n
    if op == "aten::bmm":
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return b * 2 * m * n * k
    if op == "aten::baddbmm":
        (b, m, k), (_, _, n) = dims[1], dims[2]
        return b * (2 * m * n * k + m * n)
    # linear's signature: x [..., K], W [N, K], bias [N] (vLLM's unquantized GEMM too)
    linear_like = op == "aten::linear" or "unquantized_gemm" in op
    if linear_like and len(dims) >= 2 and len(dims[1]) == 2 and dims[0]:
        x, (n, k) = dims[0], dims[1]
        m = 1
        for v in x[:-1]:
            m *= v
        bias = len(dims) > 2 and len(dims[2]) == 1
        return 2 * m * n * k + (m * n if bias else 0)
    return None


@pytest.fixture(scope="module")
def reports(magpie, tmp_path_factory):
    out = {}
    for name, (trace, _, _, with_capture) in CASES.items():
        if not trace.is_file():
            continue
        d = tmp_path_factory.mktemp(name)
        args = [trace, "-o", d, "--isl", 1024, "--osl", 512, "--conc", 32]
        if with_capture:
            cap = d / "capture_traces"
            cap.mkdir()
            shutil.copy(capture_of(trace), cap)
            args += ["--capture-dir", cap]
        proc = run(magpie, args)
        manifest = json.loads((d / "tracelens" / "tracelens_manifest.json").read_text())
        out[name] = (d, manifest, proc)
    return out


@pytest.mark.parametrize("name", CASES)
def test_stages_found_and_manifest_shape(reports, name):
    _, expected, gpu, _ = CASES[name]
    d, m, _ = reports[name]
    for key in ("enabled", "analysis_mode", "analysis_stages", "trace_dir", "output_files", "errors",
                "warnings", "stage_results", "gpu_arch_platform", "rank0_trace", "phase_picks"):
        assert key in m, key
    assert m["analysis_mode"] == "inference"
    assert m["errors"] == []
    assert set(m["stage_results"]) == expected
    assert set(m["phase_picks"]) == expected
    assert m["gpu_arch_platform"] == gpu
    for stage, r in m["stage_results"].items():
        for key in ("stage", "trace_path", "output_dir", "files", "simple_summary_file", "phase_pick"):
            assert key in r, key
        pick = m["phase_picks"][stage]
        for key in ("batch_size", "trace_path", "num_gpu_events", "gpu_duration",
                    "gpu_busy_duration", "selection_reason"):
            assert key in pick, key
        assert pick["num_gpu_events"] > 0 and pick["gpu_busy_duration"] > 0
        assert pick["gpu_busy_duration"] <= pick["gpu_duration"] + 1e-6
        simple = Path(r["simple_summary_file"])
        assert simple.name == f"{LABEL[stage]}_ISL1024_OSL512_CONC32_kernel_roofline_simple.csv"
        assert simple.parent == d / "tracelens"
        assert all(Path(f).is_file() for f in r["files"])
        for table in ("gpu_timeline", "ops_summary", "ops_summary_by_category", "kernel_summary"):
            assert (d / "tracelens" / LABEL[stage] / f"{table}.csv").is_file()


def test_h200_decode_steps_and_unannotated_prefill(reports):
    _, m, _ = reports["h200_llama"]
    assert m["iterations"] == {"decode": 16, "prefill": 1}
    assert "step_name" in m["split_method"] and "op pattern" in m["split_method"]
    assert m["phase_picks"]["decode"]["batch_size"] == 16
    assert m["phase_picks"]["prefill"]["batch_size"] == 16
    assert m["phase_picks"]["decode"]["marker"].startswith("decode_step_")


@pytest.mark.parametrize("name", CASES)
def test_compact_csv_columns_time_pct_and_gemm_flops(reports, name):
    _, m, _ = reports[name]
    for stage, r in m["stage_results"].items():
        path = r["simple_summary_file"]
        assert header(path) == SIMPLE_COLUMNS
        rows = read_csv(path)
        assert rows
        assert abs(sum(float(x["time_pct"]) for x in rows) - 100.0) < 0.01
        checked = 0
        for row in rows:
            assert row["has_perf_model"] in ("True", "False")
            if row["source_category"] != "GEMM" or not row["input_dims"]:
                continue
            expected = gemm_flops(row["op_name"], json.loads(row["input_dims"]))
            if expected is None:
                continue
            assert float(row["gflops"]) * 1e9 == pytest.approx(expected, rel=1e-5), row
            checked += 1
        if name != "sglang_decode":  # its GEMMs all run inside one unattributed graph
            assert checked > 0, f"{name}/{stage}: no GEMM row checked"


@pytest.mark.parametrize("name", CASES)
def test_roofline_bound_matches_ridge_point(reports, name):
    _, _, gpu, _ = CASES[name]
    _, m, _ = reports[name]
    peaks = PEAKS[gpu]
    checked = 0
    for r in m["stage_results"].values():
        for row in read_csv(r["simple_summary_file"]):
            spec = row["compute_spec"]
            if not row["roofline_bound"]:
                continue
            flops = float(row["gflops"]) * 1e9
            nbytes = float(row["data_moved_mb"]) * 1024 * 1024
            if spec == "":  # a dtype with no peak (integers): only the memory roof applies
                assert row["roofline_bound"] == "memory", row
                assert float(row["roofline_time_us"]) == pytest.approx(
                    nbytes / (peaks["bw"] * 1e6), rel=1e-4, abs=1e-6)
                checked += 1
                continue
            if spec not in peaks:
                continue
            compute_us = flops / (peaks[spec] * 1e6)
            memory_us = nbytes / (peaks["bw"] * 1e6)
            if nbytes > 0 and flops > 0:
                ridge = peaks[spec] / peaks["bw"]
                want = "compute" if flops / nbytes > ridge else "memory"
                if abs(flops / nbytes - ridge) / ridge > 1e-3:  # not on the ridge itself
                    assert row["roofline_bound"] == want, row
            assert float(row["roofline_time_us"]) == pytest.approx(max(compute_us, memory_us),
                                                                   rel=1e-4, abs=1e-6)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", ["vllm_decode_graph", "vllm_prefilldecode_graph"])
def test_graph_attribution_coverage(reports, name):
    trace = CASES[name][0]
    _, m, proc = reports[name]
    g = m["graph_attribution"]
    # Independent count of the kernels replayed by graph launches.
    events = load_events(trace)
    graph_corr = {e["args"]["correlation"] for e in events
                  if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e.get("name", "")}
    replayed = sum(1 for e in events if e.get("cat") == "kernel"
                   and e.get("args", {}).get("correlation") in graph_corr)
    assert g["graph_kernels"] == replayed
    assert g["graph_launches"] == len(graph_corr)
    assert g["attributed_kernels"] <= replayed
    assert g["coverage_pct"] == pytest.approx(100.0 * g["attributed_kernels"] / replayed)
    assert g["coverage_pct"] >= 95.0
    assert "graph kernels attributed" in proc.stdout
    (stage,) = m["stage_results"]
    rows = read_csv(m["stage_results"][stage]["simple_summary_file"])
    assert not any(r["source_category"] == "graph_replay" for r in rows)
    assert any(r["source_category"] == "SDPA_fwd" and r["has_perf_model"] == "True" for r in rows)


def test_graph_replay_without_capture_is_one_row_and_warned(reports):
    _, m, _ = reports["vllm_decode_graph_without_capture"]
    assert "graph_attribution" not in m
    assert any("--capture-dir" in w for w in m["warnings"])
    rows = read_csv(m["stage_results"]["decode"]["simple_summary_file"])
    graph = [r for r in rows if r["source_category"] == "graph_replay"]
    assert len(graph) == 1 and graph[0]["op_name"] == "hipGraphLaunch"


@pytest.mark.parametrize("trace", ["traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                                   "traces__mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                                   "traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
                                   "traces__mi300__gaunernst_bert-small-uncased__1016001.json.gz"])
def test_pytorch_mode_gemm_flops_sum_over_the_whole_trace(magpie, tmp_path, trace):
    """Σ FLOPs of every mm/addmm/bmm/baddbmm op that launched a kernel, from the raw trace,
    equals Σ FLOPs of the GEMM table, whatever op each row is charged to (aten::linear
    above aten::addmm, TraceLens-style): FLOPs are counted once."""
    run(magpie, [PUBLIC / trace, "--mode", "pytorch", "-o", tmp_path])
    events = load_events(PUBLIC / trace)
    launched = {e["args"].get("External id") for e in events
                if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    launched |= {e["args"].get("External id") for e in events
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "External id" in e.get("args", {})
                 and e["args"].get("correlation") in {k["args"].get("correlation") for k in events
                                                      if k.get("cat") == "kernel"}}
    want = 0
    for e in events:
        if e.get("cat") != "cpu_op" or e["args"].get("External id") not in launched:
            continue
        f = gemm_flops(e["name"], e["args"].get("Input Dims") or [[]])
        want += f or 0
    (rank_dir,) = (tmp_path / "tracelens").glob("rank*")
    got = sum(float(r["GFLOPS"]) * 1e9 * int(r["operation_count"])
              for r in read_csv(rank_dir / "GEMM.csv") if r["GFLOPS"])
    assert want > 0
    assert got == pytest.approx(want, rel=1e-6)
    m = json.loads((tmp_path / "tracelens" / "tracelens_manifest.json").read_text())
    assert m["analysis_mode"] == "pytorch" and m["num_ranks"] == 1 and m["errors"] == []


def test_excel_workbook(magpie, tmp_path):
    trace = CASES["h200_llama"][0]
    run(magpie, [trace, "--stages", "decode", "--export-format", "both", "-o", tmp_path])
    book = tmp_path / "tracelens" / "decode_only" / "perf_report.xlsx"
    assert book.read_bytes()[:2] == b"PK"
    assert not (tmp_path / "tracelens" / "prefill_only").exists()


# ---- bad input: reports still written, with a warning that says how to fix it ----

def rewrite(src: Path, dst: Path, edit):
    with gzip.open(src, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    edit(doc)
    with gzip.open(dst, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    return dst


def test_trace_without_shapes(magpie, tmp_path):
    def strip(doc):
        for e in doc["traceEvents"]:
            for k in ("Input Dims", "Input type", "Concrete Inputs", "Input Strides"):
                e.get("args", {}).pop(k, None)
    trace = rewrite(CASES["h100_bert"][0], tmp_path / "noshapes.json.gz", strip)
    run(magpie, [trace, "--mode", "pytorch", "-o", tmp_path / "out"])
    m = json.loads((tmp_path / "out" / "tracelens" / "tracelens_manifest.json").read_text())
    assert any("record_shapes=True" in w for w in m["warnings"])
    rows = read_csv(tmp_path / "out" / "tracelens" / "rank0" / "ops_summary.csv")
    assert rows


def test_unknown_gpu(magpie, tmp_path):
    def unknown(doc):
        for d in doc["deviceProperties"]:
            d.update(name="Imaginary GPU 9000", computeMajor=1, computeMinor=0, numSms=7)
    trace = rewrite(CASES["h200_llama"][0], tmp_path / "unknown.json.gz", unknown)
    run(magpie, [trace, "-o", tmp_path / "out"])
    m = json.loads((tmp_path / "out" / "tracelens" / "tracelens_manifest.json").read_text())
    assert m["gpu_arch_platform"] is None
    assert any("--gpu-arch" in w for w in m["warnings"])
    rows = read_csv(m["stage_results"]["decode"]["simple_summary_file"])
    assert all(r["roofline_bound"] == "" for r in rows)
    # ... and --gpu-arch brings the roofline back.
    run(magpie, [trace, "-o", tmp_path / "named", "--gpu-arch", "h200"])
    m = json.loads((tmp_path / "named" / "tracelens" / "tracelens_manifest.json").read_text())
    assert m["gpu_arch_platform"] == "H200"


def test_annotations_matching_no_grammar(magpie, tmp_path):
    trace = PUBLIC / "traces__torch_compile_triton__trace.json.gz"
    run(magpie, [trace, "-o", tmp_path])
    m = json.loads((tmp_path / "tracelens" / "tracelens_manifest.json").read_text())
    # No stage can be told: the whole trace is one stage (issue 26 item 8; it was
    # a manifest alone).
    assert set(m["stage_results"]) == {"whole_trace"}
    assert (tmp_path / "tracelens" / "whole_trace" / "kernel_summary.csv").is_file()
    assert any("step annotations" in w for w in m["warnings"])
    assert any("--mode pytorch" in w for w in m["warnings"])


def test_capture_that_does_not_match(magpie, tmp_path):
    cap = tmp_path / "capture_traces"
    cap.mkdir()
    shutil.copy(CASES["h200_llama"][0], cap / "graph_capture_rank_0.pt.trace.json.gz")
    run(magpie, [CASES["vllm_decode_graph"][0], "--capture-dir", cap, "-o", tmp_path / "out"])
    m = json.loads((tmp_path / "out" / "tracelens" / "tracelens_manifest.json").read_text())
    assert m["graph_attribution"]["attributed_kernels"] == 0
    assert any("do not match" in w or "may come from another run" in w for w in m["warnings"])
    assert "decode" in m["stage_results"]


def test_usage_errors(magpie, tmp_path):
    proc = run(magpie, [tmp_path / "missing.json.gz", "-o", tmp_path], check=False)
    assert proc.returncode != 0 and "missing.json.gz" in proc.stderr
    proc = run(magpie, [CASES["h200_llama"][0], "--gpu-arch", "nonesuch", "-o", tmp_path],
               check=False)
    assert proc.returncode == 2 and "nonesuch" in proc.stderr
    proc = run(magpie, [CASES["h200_llama"][0], "--stages", "training", "-o", tmp_path], check=False)
    assert proc.returncode == 2


def every_shared_trace():
    """Every trace file under the shared folder (public and h200), rocprof's too."""
    if not SHARED.is_dir():
        return []
    return sorted(p for d in ("public", "h200") for p in (SHARED / d).glob("*.json*"))


@pytest.mark.parametrize("mode", ["inference", "pytorch"])
@pytest.mark.parametrize("trace", every_shared_trace(), ids=lambda p: p.name)
def test_every_shared_trace_in_both_modes(magpie, tmp_path, trace, mode):
    """No shared trace may crash either mode: each ends with exit 0 and a
    manifest that lists what was written (issue: a negative tid in HTA's
    public NCCL trace once ended tracelens with SIGSEGV)."""
    proc = subprocess.run([str(magpie), "tracelens", str(trace), "--mode", mode, "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    manifest = json.loads((tmp_path / "tracelens" / "tracelens_manifest.json").read_text())
    assert manifest["analysis_mode"] == mode
    assert manifest["errors"] == []
    for f in manifest["output_files"]:
        assert Path(f).is_file(), f


def test_collective_report_on_hta_nccl_trace(magpie, tmp_path):
    """Pytorch mode's collective report: algBW/busBW recomputed here from the raw NCCL kernels."""
    trace = PUBLIC / "hta__nccl_collectives.json.gz"
    run(magpie, [trace, "--mode", "pytorch", "-o", tmp_path])
    want = {}  # (collective, bytes) → (durations, group size)
    size = {"Float": 4, "Long": 8, "BFloat16": 2, "Half": 2, "Int": 4}
    for e in load_events(trace):
        a = e.get("args", {})
        if e.get("cat") != "kernel" or "Collective name" not in a:
            continue
        kind = {"allreduce": "all_reduce", "broadcast": "broadcast"}[a["Collective name"]]
        nbytes = max(a["In msg nelems"], a["Out msg nelems"]) * size[a["dtype"]]
        want.setdefault((kind, nbytes), ([], a["Group size"]))[0].append(e["dur"])
    rows = read_csv(tmp_path / "tracelens" / "collective_report" / "collective_summary.csv")
    assert len(rows) == len(want)
    factor = {"all_reduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0}
    for r in rows:
        durs, n = want[(r["collective"], int(r["message_bytes"]))]
        mean_us = sum(durs) / len(durs)
        algbw = int(r["message_bytes"]) / (mean_us * 1e-6) / 1e9
        assert int(r["calls"]) == len(durs) and int(r["group_size"]) == n
        assert float(r["algbw_GBps"]) == pytest.approx(algbw, rel=1e-9)
        assert float(r["busbw_GBps"]) == pytest.approx(algbw * factor[r["collective"]](n), rel=1e-9)
    m = json.loads((tmp_path / "tracelens" / "tracelens_manifest.json").read_text())
    assert m["collective_report"]["collective_kernels"] == sum(len(d) for d, _ in want.values())


def test_collective_report_across_two_ranks(magpie, tmp_path):
    """HTA's two-rank sample: calls matched across ranks; slowest rank and wait from the raw kernels."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for i in (0, 1):
        shutil.copy(PUBLIC / f"hta__sendrecv-rank-{i}.json.gz", ranks)
    run(magpie, [ranks, "--mode", "pytorch", "-o", tmp_path])
    out = tmp_path / "tracelens" / "collective_report"
    calls = read_csv(out / "collective_calls.csv")
    assert {c["rank"] for c in calls} == {"0", "1"} and len(calls) == 20
    (ag,) = [r for r in read_csv(out / "collective_summary.csv") if r["collective"] == "all_gather"]
    per_rank = {}
    for c in calls:
        if c["collective"] == "all_gather":
            per_rank.setdefault(int(c["rank"]), []).append(float(c["dur_us"]))
    transfer = sum(min(a, b) for a, b in zip(per_rank[0], per_rank[1])) / len(per_rank[0])
    wait = sum(abs(a - b) for a, b in zip(per_rank[0], per_rank[1])) / len(per_rank[0])
    slowest = max(per_rank, key=lambda k: sum(per_rank[k]))
    algbw = int(ag["message_bytes"]) / (transfer * 1e-6) / 1e9
    assert float(ag["transfer_time_us"]) == pytest.approx(transfer)
    assert float(ag["wait_us"]) == pytest.approx(wait)
    assert int(ag["slowest_rank"]) == slowest
    n = int(ag["group_size"])
    assert float(ag["busbw_transfer_GBps"]) == pytest.approx(algbw * (n - 1) / n)
    assert len(read_csv(out / "collective_ranks.csv")) == 2


# Recorded on an H200 for this project (tests/data/h200_graphs/README.md).
H200_GRAPHS = Path(__file__).resolve().parents[1] / "data" / "h200_graphs"


@pytest.mark.skipif(not (H200_GRAPHS / "graph_replay.json.gz").is_file(),
                    reason=f"no recorded graph pair in {H200_GRAPHS}")
def test_plain_torch_cuda_graph_fully_attributed(magpie, tmp_path):
    """torch.cuda.graph: the capture trace's launches name no kernel; every replayed kernel, memset
    and copy still gets the op it was captured under."""
    cap = tmp_path / "capture"
    cap.mkdir()
    shutil.copy(H200_GRAPHS / "graph_capture.json.gz", cap)
    replay = H200_GRAPHS / "graph_replay.json.gz"
    run(magpie, [replay, "--capture-dir", cap, "-o", tmp_path])
    m = json.loads((tmp_path / "tracelens" / "tracelens_manifest.json").read_text())
    g = m["graph_attribution"]
    # Independently: GPU events whose correlation is a cudaGraphLaunch's.
    events = load_events(replay)
    graph_corr = {e["args"]["correlation"] for e in events
                  if e.get("cat") in ("cuda_runtime", "cuda_driver") and "GraphLaunch" in e.get("name", "")}
    replayed = [e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")
                and e.get("args", {}).get("correlation") in graph_corr]
    assert len(graph_corr) == g["graph_launches"] > 0
    # The recording holds what the issue asks of it: cuBLAS GEMMs, elementwise kernels, a memset.
    names = [e["name"] for e in replayed]
    assert any(e["cat"] == "gpu_memset" for e in replayed), "no replayed memset"
    assert any(n.startswith("nvjet") or "gemm" in n.lower() for n in names), "no cuBLAS GEMM"
    assert any("elementwise_kernel" in n for n in names), "no elementwise kernel"
    assert g["graph_kernels"] == len(replayed)
    assert g["attributed_kernels"] == g["attributed_to_op"] == len(replayed)
    assert g["coverage_pct"] == 100.0
    assert [x["method"] for x in g["graphs"]] == ["launch order"]
    # Without the capture the same replays stay unattributed.
    bare = run(magpie, [replay, "-o", tmp_path / "bare"])
    assert "--capture-dir" in bare.stderr
