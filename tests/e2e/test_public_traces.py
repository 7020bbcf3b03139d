"""Magpie never crashes on the public test traces of HTA and TraceLens.

tests/data/public_traces/ holds a small selection of the traces that Meta's
HolisticTraceAnalysis and AMD's TraceLens ship in their own test folders
(their README names source, commit and licence; docs/PUBLIC_TRACES.md lists
every public trace that was run). Each top-level file is one trace, each
top-level folder is run as it is (multi-rank or several traces).

For each, the real binary runs gap analysis (`benchmark --trace-dir`, the file
alone in a temporary directory) and `tracelens` in both modes. Each must exit 0
or with a documented error exit (README.md "Exit codes": 3 not found, 4
unreadable, 5 bad format, 6 no GPU events) whose message names the input; a
signal, exit 1 or a hang is a bug. Where the trace has GPU kernels (an event
whose category contains "kernel" or "gpu" and is not an annotation, the same
rule as gap analysis' defaults), every command must exit 0.
"""
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "public_traces"
DOCUMENTED_ERRORS = {3, 4, 5, 6}
RUN_TIMEOUT_S = 120
WANTED_CATEGORIES = ("kernel", "gpu")
IGNORED_CATEGORIES = ("gpu_user_annotation", "user_annotation")

pytestmark = pytest.mark.e2e


def inputs():
    if not DATA.is_dir():
        return []
    return sorted(p for p in DATA.iterdir() if p.name != "README.md" and not p.name.startswith("LICENSE"))


def trace_files(target: Path):
    return sorted(p for p in target.iterdir() if p.is_file()) if target.is_dir() else [target]


def load_events(path: Path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        doc = json.loads(raw)
    except ValueError:
        return []
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return events if isinstance(events, list) else []


def has_gpu_kernels(path: Path) -> bool:
    for ev in load_events(path):
        if not isinstance(ev, dict) or "ts" not in ev:
            continue
        cat = str(ev.get("cat", "")).lower()
        if any(c in cat for c in IGNORED_CATEGORIES):
            continue
        if any(c in cat for c in WANTED_CATEGORIES):
            return True
    return False


def every_file_has_kernels(target: Path) -> bool:
    return all(has_gpu_kernels(p) for p in trace_files(target))


def run(magpie, args):
    try:
        return subprocess.run([str(magpie), *args], capture_output=True, text=True, errors="replace",
                              timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"magpie {' '.join(args)} hung for more than {RUN_TIMEOUT_S} s")


def check(proc, target: Path, expect_success: bool, what: str, folder: Path = None):
    rc = proc.returncode
    assert rc >= 0, f"{what}: killed by signal {-rc}\n{proc.stderr[-2000:]}"
    if expect_success:
        assert rc == 0, f"{what}: the trace has GPU kernels but magpie exited {rc}\n{proc.stderr[-2000:]}"
        return
    assert rc == 0 or rc in DOCUMENTED_ERRORS, \
        f"{what}: exit {rc} is neither success nor a documented error\n{proc.stderr[-2000:]}"
    if rc != 0:
        # Exit 3 (no trace files) names the folder; the others name the file.
        names = {target.name} | {p.name for p in trace_files(target)} | ({str(folder)} if folder else set())
        assert any(n in proc.stderr for n in names), f"{what}: the error names no input\n{proc.stderr}"
        assert "error:" in proc.stderr, f"{what}: no error message\n{proc.stderr}"


TARGETS = inputs()


def test_selection_is_present():
    assert len(TARGETS) >= 10, f"expected the public trace selection in {DATA}"
    assert (DATA / "README.md").is_file()


@pytest.mark.parametrize("target", TARGETS, ids=[p.name for p in TARGETS])
def test_gap_analysis(magpie, target, tmp_path):
    if target.is_dir():
        trace_dir = target
    else:
        trace_dir = tmp_path / "in"
        trace_dir.mkdir()
        shutil.copy(target, trace_dir / target.name)
    proc = run(magpie, ["benchmark", "--trace-dir", str(trace_dir), "-o", str(tmp_path / "out")])
    has_kernels = every_file_has_kernels(target)
    check(proc, target, has_kernels, f"gap analysis of {target.name}", trace_dir)
    if proc.returncode == 0:
        report = json.loads((tmp_path / "out" / "gap_analysis" / "gap_analysis.json").read_text())
        assert report, "empty gap_analysis.json"
    if has_kernels:
        assert (tmp_path / "out" / "gap_analysis" / "gap_analysis.csv").stat().st_size > 0


@pytest.mark.parametrize("mode", ["inference", "pytorch"])
@pytest.mark.parametrize("target", TARGETS, ids=[p.name for p in TARGETS])
def test_tracelens(magpie, target, mode, tmp_path):
    proc = run(magpie, ["tracelens", str(target), "--mode", mode, "-o", str(tmp_path / "out")])
    check(proc, target, every_file_has_kernels(target), f"tracelens --mode {mode} on {target.name}")
    if proc.returncode == 0:
        manifest = tmp_path / "out" / "tracelens" / "tracelens_manifest.json"
        assert manifest.is_file(), f"no manifest for {target.name}"
        m = json.loads(manifest.read_text())
        if mode == "inference":
            # Issue 26 item 8: a trace without stages is reported as one whole-trace
            # stage, never as a manifest alone.
            assert m["stage_results"], f"{target.name}: no stage report ({m['warnings']})"
            for r in m["stage_results"].values():
                assert all(Path(f).is_file() for f in r["files"])


def test_memory_timeline_is_rejected_as_not_a_trace(magpie, tmp_path):
    """HTA's memory timeline is a JSON array of [ts, action, bytes, device] rows; it
    used to parse as an empty trace (tracelens exit 0, empty reports)."""
    target = DATA / "hta__memory_analysis__memory_timeline.raw.gz"
    for mode in ("inference", "pytorch"):
        proc = run(magpie, ["tracelens", str(target), "--mode", mode, "-o", str(tmp_path / mode)])
        assert proc.returncode == 5, proc.stderr
        assert target.name in proc.stderr and "not a PyTorch profiler trace" in proc.stderr


def test_capture_folder_with_execution_details_runs(magpie, tmp_path):
    """TraceLens' capture_traces/ folders hold execution_details.json (a JSON array of
    objects without ts) beside the traces. It must not fail the folder: an early fix
    for the memory timeline rejected it, and `tracelens --mode pytorch` exited 5."""
    folder = tmp_path / "capture_traces"
    folder.mkdir()
    trace = DATA / "tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"
    shutil.copy(trace, folder / "bs_32_rank0.json.gz")
    # The file as TraceLens ships it in tests/traces/inference/sglang_decode/capture_traces/.
    (folder / "execution_details.json").write_text(
        '[\n  {\n    "file": "bs_32_rank0.json.gz",\n    "batch_size": 32,\n    "mode": "FULL"\n  }\n]')
    for mode in ("inference", "pytorch"):
        proc = run(magpie, ["tracelens", str(folder), "--mode", mode, "-o", str(tmp_path / mode)])
        assert proc.returncode == 0, proc.stderr
    proc = run(magpie, ["benchmark", "--trace-dir", str(folder), "-o", str(tmp_path / "gap")])
    assert proc.returncode == 0, proc.stderr
