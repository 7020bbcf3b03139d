"""The rank, cycle and kind-of-trace rules (docs/TRACELENS.md "Ranks, cycles and
kinds of trace") give the same answer in every subcommand: gap analysis
(`benchmark --trace-dir`), `tracelens --mode pytorch` and `--mode inference`.

Every input is a real trace: tests/data/trace_rules (Kineto's own two-cycle
sample, a TraceFuse merge of HTA's two ranks, a headless-Chromium trace; its
README says how each was cut) and tests/data/public_traces. Expected values
are read from the traces here with json and gzip, not taken from magpie.
"""
import csv
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.e2e

RULES = REPO_ROOT / "tests" / "data" / "trace_rules"
PUBLIC = REPO_ROOT / "tests" / "data" / "public_traces"
CYCLES = RULES / "kineto_resnet50_cycles"
MERGED = RULES / "tracefuse_merged_sampled_rank_0_1.json.gz"
CHROME = RULES / "chrome_headless_gpu_process.json.gz"
CPU_ONLY = PUBLIC / "hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
SGLANG_RANK0 = PUBLIC / "tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"
HTA_RANK1 = PUBLIC / "hta__trace_file_list__inference_rank_1.json.gz"
HTA_SAMPLED = PUBLIC / "hta__trace_filter"
MODES = ("gap", "pytorch", "inference")


def run(magpie, mode, target, out):
    if mode == "gap":
        args = ["benchmark", "--trace-dir", str(target), "-o", str(out)]
    else:
        args = ["tracelens", str(target), "--mode", mode, "-o", str(out)]
    return subprocess.run([str(magpie), *args], capture_output=True, text=True, timeout=300)


def folder(tmp_path, name, files):
    """A folder holding `files` ({new name: source path})."""
    d = tmp_path / name
    d.mkdir()
    for new, src in files.items():
        shutil.copy(src, d / new)
    return d


def events(path):
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)["traceEvents"]


def manifest(out):
    return json.loads((out / "tracelens" / "tracelens_manifest.json").read_text())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("trace", [CHROME, CPU_ONLY], ids=["chrome", "cpu_only"])
def test_no_device_kernels_exits_6_everywhere(magpie, trace, mode, tmp_path):
    # The browser trace has a "gpu" category all right: the GPU process's CPU tasks.
    if trace == CHROME:
        assert sum(e.get("cat") == "gpu" for e in events(trace)) > 100
    target = folder(tmp_path, "in", {trace.name: trace}) if mode == "gap" else trace
    proc = run(magpie, mode, target, tmp_path / "out")
    if mode == "gap" and trace == CPU_ONLY:
        # Gap analysis ranks a CPU-only folder over its cpu_op events (README "Gap analysis").
        assert proc.returncode == 0 and "CPU-only" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 6, f"{mode}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert trace.name in proc.stderr and ("no GPU kernel events" in proc.stderr or "CUDA/HIP kernels" in proc.stderr), proc.stderr


@pytest.mark.parametrize("mode", MODES)
def test_duplicate_rank_is_an_error_naming_both_files(magpie, mode, tmp_path):
    a = PUBLIC / "hta__critical_path__cuda_event_sync__event_sync_trace.json.gz"
    b = HTA_SAMPLED / "sampled_rank-0.json.gz"
    d = folder(tmp_path, "two_jobs", {"job_a.json.gz": a, "job_b.json.gz": b})
    proc = run(magpie, mode, d, tmp_path / "out")
    assert proc.returncode == 2, f"{mode}: exit {proc.returncode}\n{proc.stderr}"
    assert "job_a.json.gz" in proc.stderr and "job_b.json.gz" in proc.stderr, proc.stderr
    assert "two traces are rank 0" in proc.stderr, proc.stderr
    assert not (tmp_path / "out" / "gap_analysis" / "gap_analysis_rank0.csv").exists()


def test_cycles_of_one_process_in_gap_analysis(magpie, tmp_path):
    proc = run(magpie, "gap", CYCLES, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "Ranks analyzed: 1 (0: 2 profiling cycles)" in proc.stdout, proc.stdout
    assert "profiling cycles" in proc.stderr
    out = tmp_path / "out" / "gap_analysis"
    assert (out / "gap_analysis_rank0_cycle0.csv").is_file()
    assert (out / "gap_analysis_rank0_cycle1.csv").is_file()
    assert not (out / "gap_analysis_rank1.csv").exists()
    report = json.loads((out / "gap_analysis.json").read_text())
    assert report["num_ranks"] == 1
    files = sorted(CYCLES.iterdir())
    got = [(r["rank"], r["cycle"], r["cycles"], Path(r["trace_file"]).name) for r in report["ranks"]]
    assert got == [(0, 0, 2, files[0].name), (0, 1, 2, files[1].name)]
    # Old Kineto's Memcpy/Memset count in each cycle's total, as gpu_memcpy/gpu_memset do.
    for rank, path in zip(report["ranks"], files):
        expected = sum(e.get("dur", 0) for e in events(path) if e.get("cat") in ("Kernel", "Memcpy", "Memset"))
        assert rank["total_duration_us"] == pytest.approx(expected, rel=1e-6)
        assert rank["timeline"]["exposed_memcpy_us"] > 0


def test_cycles_of_one_process_in_pytorch_mode(magpie, tmp_path):
    proc = run(magpie, "pytorch", CYCLES, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    m = manifest(tmp_path / "out")
    assert m["num_ranks"] == 1
    assert [(r["rank"], r["cycle"], r["cycles"]) for r in m["ranks"]] == [(0, 0, 2), (0, 1, 2)]
    assert (tmp_path / "out" / "tracelens" / "rank0_cycle0" / "kernel_summary.csv").is_file()
    assert (tmp_path / "out" / "tracelens" / "rank0_cycle1" / "kernel_summary.csv").is_file()


@pytest.mark.parametrize("mode", ("gap", "pytorch"))
def test_merged_trace_is_split_by_process(magpie, mode, tmp_path):
    target = folder(tmp_path, "in", {MERGED.name: MERGED})
    proc = run(magpie, mode, target, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    kernels = {r: sum(e.get("cat") == "kernel" for e in events(HTA_SAMPLED / f"sampled_rank-{r}.json.gz"))
               for r in (0, 1)}
    if mode == "gap":
        report = json.loads((tmp_path / "out" / "gap_analysis" / "gap_analysis.json").read_text())
        assert report["num_ranks"] == 2
        assert [(r["rank"], r["rank_source"]) for r in report["ranks"]] == [(0, "process name"), (1, "process name")]
        for r in report["ranks"]:
            assert r["links"]["gpu_events"] >= kernels[r["rank"]]
        assert (tmp_path / "out" / "gap_analysis" / "gap_analysis_rank1.csv").is_file()
    else:
        m = manifest(tmp_path / "out")
        assert m["num_ranks"] == 2
        assert (tmp_path / "out" / "tracelens" / "rank1" / "kernel_summary.csv").is_file()


def test_inference_takes_rank0_from_the_trace_not_the_first_name(magpie, tmp_path):
    # "a…" says rank 1 in its distributedInfo, "b…" rank 0: rank 0 is b.
    d = folder(tmp_path, "in", {"a.json.gz": HTA_RANK1, "b.json.gz": SGLANG_RANK0})
    proc = run(magpie, "inference", d, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    m = manifest(tmp_path / "out")
    assert Path(m["rank0_trace"]).name == "b.json.gz"
    assert m["ranks"] == [{"rank": 0, "rank_source": "trace", "cycle": 0, "cycles": 1,
                           "trace_file": str(d / "b.json.gz")}]


@pytest.mark.parametrize("mode", MODES)
def test_unreadable_file_in_a_folder_is_skipped_everywhere(magpie, mode, tmp_path):
    # A real rank-1 trace cut short: the gzip stream ends mid-file.
    raw = (HTA_SAMPLED / "sampled_rank-1.json.gz").read_bytes()
    d = folder(tmp_path, "in", {"rank0.json.gz": SGLANG_RANK0})
    (d / "rank1.json.gz").write_bytes(raw[: len(raw) // 2])
    proc = run(magpie, mode, d, tmp_path / "out")
    assert proc.returncode == 0, f"{mode}: exit {proc.returncode}\n{proc.stderr}"
    if mode == "gap":
        report = json.loads((tmp_path / "out" / "gap_analysis" / "gap_analysis.json").read_text())
        assert [Path(s["file"]).name for s in report["skipped"]] == ["rank1.json.gz"]
        assert "rank1.json.gz" in proc.stderr
    elif mode == "pytorch":
        m = manifest(tmp_path / "out")
        assert [Path(s["file"]).name for s in m["skipped"]] == ["rank1.json.gz"]
        assert m["skipped"][0]["kind"] == "bad_format"
        assert "rank1.json.gz" in proc.stderr
    else:
        # Inference mode reads rank 0 only; the broken rank-1 file is never inflated.
        assert Path(manifest(tmp_path / "out")["rank0_trace"]).name == "rank0.json.gz"


def test_every_file_unreadable_exits_with_the_files_error(magpie, tmp_path):
    raw = (HTA_SAMPLED / "sampled_rank-1.json.gz").read_bytes()
    d = tmp_path / "in"
    d.mkdir()
    (d / "rank1.json.gz").write_bytes(raw[: len(raw) // 2])
    (d / "rank2.json.gz").write_bytes(raw[: len(raw) // 3])
    for mode in ("gap", "pytorch"):
        proc = run(magpie, mode, d, tmp_path / f"out_{mode}")
        assert proc.returncode == 5, f"{mode}: exit {proc.returncode}\n{proc.stderr}"
        assert "rank1.json.gz" in proc.stderr


def test_roofline_for_a_gpu_outside_the_old_table(magpie, tmp_path):
    """MI210 (TraceLens' gpu-only trace) was not in the old roofline table; the datasheet has it."""
    trace = PUBLIC / "tracelens__mi210__gpu_only_trace.json.gz"
    proc = run(magpie, "pytorch", trace, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "unknown GPU" not in proc.stderr, proc.stderr


def test_own_category_list_is_matched_over_every_event(magpie, tmp_path):
    """The device-only rule is the default's; a list of one's own is Magpie's substring
    match over every event (Meta's MTIA writes mtia_ccp_events, not kernel)."""
    trace = PUBLIC / "hta__mtia_inference_trace__mtia_inference_rank_0.json.gz"
    d = folder(tmp_path, "in", {trace.name: trace})
    assert run(magpie, "gap", d, tmp_path / "default").returncode == 6
    proc = subprocess.run([str(magpie), "benchmark", "--trace-dir", str(d), "-o", str(tmp_path / "own"),
                           "--categories", "mtia_ccp_events"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    expected = sum(e.get("dur", 0) for e in events(trace) if "mtia_ccp_events" in str(e.get("cat", "")).lower())
    report = json.loads((tmp_path / "own" / "gap_analysis" / "gap_analysis.json").read_text())
    assert report["total_duration_us"] == pytest.approx(expected, rel=1e-6)


SYMM_MEM = REPO_ROOT / "tests" / "data" / "h200_symm_mem" / "symm_mem_allreduce.json.gz"


def test_non_nccl_communication_kernels_are_communication(magpie, tmp_path):
    """PyTorch's symmetric-memory all-reduce kernels (one-shot and two-shot,
    recorded on the H200: docs/GPU_VALIDATION.md run 9) are communication in
    gap analysis, in the timeline's exposed communication and in the
    collective report, although no NCCL name or collective args mark them."""
    evs = events(SYMM_MEM)
    comm = [e for e in evs if e.get("cat") == "kernel" and "all_reduce_kernel" in e["name"]]
    assert len(comm) == 8 and not any("nccl" in e["name"].lower() for e in comm)
    comm_us = sum(float(e["dur"]) for e in comm)
    # Every kernel runs on one stream, so none overlaps another: all of it is exposed.
    streams = {e["args"].get("stream") for e in evs if e.get("cat") == "kernel"}
    assert len(streams) == 1

    d = folder(tmp_path, "in", {SYMM_MEM.name: SYMM_MEM})
    r = run(magpie, "gap", d, tmp_path / "gap")
    assert r.returncode == 0, r.stderr

    rows = list(csv.DictReader(open(tmp_path / "gap" / "gap_analysis" / "gap_analysis.csv")))
    cats = {row["Normalized Name"]: row["Category"] for row in rows}
    assert cats["one_shot_all_reduce_kernel"] == "communication"
    assert cats["two_shot_all_reduce_kernel_inplace"] == "communication"
    gap = json.loads((tmp_path / "gap" / "gap_analysis" / "gap_analysis.json").read_text())
    timeline = gap["ranks"][0]["timeline"]
    exposed = timeline["exposed_communication_us"]
    assert abs(float(exposed) - comm_us) < 1e-3, (timeline, comm_us)

    r = run(magpie, "pytorch", SYMM_MEM, tmp_path / "pt")
    assert r.returncode == 0, r.stderr
    tl = {row["type"]: float(row["time ms"]) for row in
          csv.DictReader(open(tmp_path / "pt" / "tracelens" / "rank0" / "gpu_timeline.csv"))}
    assert abs(tl["exposed_comm_time"] * 1000 - comm_us) < 1e-3
    ranks = list(csv.DictReader(open(tmp_path / "pt" / "tracelens" / "collective_report" / "collective_ranks.csv")))
    assert int(ranks[0]["collectives"]) == 8
    assert abs(float(ranks[0]["communication_time_us"]) - comm_us) < 1e-3
    # Their sizes are not recorded: said, not guessed.
    assert "no message size" in r.stderr
