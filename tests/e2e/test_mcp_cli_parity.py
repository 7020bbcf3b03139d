"""The CLI and the MCP server are two faces on the same jobs (src/jobs): the
same inputs must write the same report files from either face, apart from
times and paths. Gap analysis and both tracelens modes run on the shipped
sample trace and on a public shared trace; analyze runs a CPU PyTorch kernel
(correctness only, as CI has no GPU)."""
import asyncio
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="run with tests/e2e/mcp_env.py (MCP venv)")
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, shared_traces  # noqa: E402

pytestmark = pytest.mark.e2e
SAMPLE_DIR = REPO_ROOT / "examples" / "traces"
PUBLIC = shared_traces() / "public"
# Values that differ between two runs of the same job by nature.
VOLATILE_KEYS = {"timestamp", "timing_s", "wall_seconds", "seconds", "execution_time", "started_at",
                 "finished_at", "log", "commands", "run_id"}


def mcp_call(magpie, env, tool, arguments):
    async def go():
        async with Client(StdioServerParameters(command=str(magpie), args=["mcp"], env=env)) as c:
            return await c.call_tool(tool, arguments)
    result = asyncio.run(go())
    assert not result.is_error, "\n".join(x.text for x in result.content if x.type == "text")
    return result.structured_content


def cli(magpie, env, *args):
    proc = subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def normalise(value, roots):
    """Drops volatile keys and replaces each face's output root by a placeholder."""
    if isinstance(value, dict):
        return {k: normalise(v, roots) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [normalise(v, roots) for v in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(str(root), "<out>")
        return value
    return value


def tree(root: Path):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def assert_same_files(a: Path, b: Path, roots):
    assert tree(a), f"{a} holds no report files"
    assert tree(a) == tree(b)
    for rel in tree(a):
        fa, fb = a / rel, b / rel
        if rel.endswith(".json"):
            assert normalise(json.loads(fa.read_text()), roots) == normalise(json.loads(fb.read_text()), roots), rel
        elif rel.endswith(".csv"):
            assert list(csv.reader(fa.open())) == list(csv.reader(fb.open())), rel
        elif rel.endswith(".xlsx"):
            continue  # zip timestamps differ; its tables are the CSVs
        else:
            assert normalise(fa.read_text(), roots) == normalise(fb.read_text(), roots), rel


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))


def trace_dirs(tmp_path):
    dirs = [SAMPLE_DIR]
    nccl = PUBLIC / "hta__nccl_collectives.json.gz"
    if nccl.is_file():  # the public trace whose negative tids once crashed ingest
        d = tmp_path / "hta"
        d.mkdir()
        (d / nccl.name).symlink_to(nccl)
        dirs.append(d)
    return dirs


def test_gap_analysis_same_reports_from_cli_and_mcp(magpie, env, tmp_path):
    for i, trace_dir in enumerate(trace_dirs(tmp_path)):
        out_cli, out_mcp = tmp_path / f"cli{i}", tmp_path / f"mcp{i}"
        cli(magpie, env, "benchmark", "--trace-dir", trace_dir, "-o", out_cli)
        mcp_call(magpie, env, "gap_analysis", {"trace_dir": str(trace_dir), "output_dir": str(out_mcp)})
        assert (out_cli / "gap_analysis" / "gap_analysis.csv").is_file()
        assert_same_files(out_cli / "gap_analysis", out_mcp / "gap_analysis", [out_cli, out_mcp])


def tracelens_inputs():
    """The shipped sample, and public shared traces (an SGLang decode, the vLLM graph pair's replay)."""
    found = [next(SAMPLE_DIR.glob("*.json.gz"))]
    for name in ["traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
                 "traces__inference__vllm_decode_full__graph_execution.json.gz"]:
        if (PUBLIC / name).is_file():
            found.append(PUBLIC / name)
    return found


@pytest.mark.parametrize("mode", ["inference", "pytorch"])
@pytest.mark.parametrize("trace", tracelens_inputs(), ids=lambda p: p.name[:40])
def test_tracelens_same_reports_from_cli_and_mcp(magpie, env, tmp_path, mode, trace):
    out_cli, out_mcp = tmp_path / "cli", tmp_path / "mcp"
    cli(magpie, env, "tracelens", trace, "--mode", mode, "-o", out_cli)
    mcp_call(magpie, env, "tracelens", {"trace": str(trace), "mode": mode, "output_dir": str(out_mcp)})
    assert (out_cli / "tracelens" / "tracelens_manifest.json").is_file()
    assert_same_files(out_cli / "tracelens", out_mcp / "tracelens", [out_cli, out_mcp])


def test_both_faces_are_recorded_in_the_store(magpie, env, tmp_path):
    cli(magpie, env, "benchmark", "--trace-dir", SAMPLE_DIR, "-o", tmp_path / "cli")
    mcp_call(magpie, env, "gap_analysis", {"trace_dir": str(SAMPLE_DIR), "output_dir": str(tmp_path / "mcp")})
    rows = json.loads(cli(magpie, env, "results", "list", "--json").stdout)
    rows = rows if isinstance(rows, list) else rows.get("runs", rows)
    faces = sorted(r["face"] for r in rows if r["kind"] == "gap_analysis")
    assert faces == ["cli", "mcp"], rows
    assert all(r["status"] == "succeeded" for r in rows), rows
