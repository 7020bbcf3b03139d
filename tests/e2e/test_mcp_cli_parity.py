"""The CLI, the MCP server and the Python API (`import Magpie`) are three faces
on the same jobs (src/jobs): the same inputs must write the same report files
from each face, apart from times and paths. Gap analysis and both tracelens
modes run on the shipped sample trace and on a public shared trace; analyze
and compare run CPU PyTorch kernels (correctness only, as CI has no GPU;
analyze has no Python call); benchmark runs an --endpoint workload against
the timed stub server (tests/e2e/timed_stream_server.py).

The Python API runs in its own venv with the wheel installed (the `venv`
fixture of test_python_api.py: build-wheel/dist/, or MAGPIE_PYAPI_VENV); the
tests that compare three faces skip, saying how to build the wheel, when
there is none."""
import asyncio
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="run with tests/e2e/mcp_env.py (MCP venv)")
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, shared_traces  # noqa: E402
import serving_env  # noqa: E402
# Fixtures: venv (the Python API's), timed_stub (the stub at 40 ms to the first token, 10 ms a token).
from test_python_api import api, timed_stub, venv  # noqa: E402,F401

pytestmark = pytest.mark.e2e
SAMPLE_DIR = REPO_ROOT / "examples" / "traces"
PUBLIC = shared_traces() / "public"
# Values that differ between two runs of the same job by nature.
# Plus the build's identity: the Python API is the wheel's build, the CLI and
# MCP server build/'s, made from the same tree at different commits while one
# iterates (CI builds both from one commit).
VOLATILE_KEYS = {"timestamp", "timing_s", "wall_seconds", "seconds", "execution_time", "started_at",
                 "finished_at", "log", "commands", "run_id", "build_commit", "build_dirty"}


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
        # The build's identity in text ("magpie 0.1.0 (git 1a0f1a3b7804+dirty)"), as VOLATILE_KEYS.
        value = re.sub(r"\(git [0-9a-f]+(\+dirty)?\)", "(git <build>)", value)
        # Each gap analysis writes a folder named for the second it ran in.
        return re.sub(r"gap_analysis_\d{8}_\d{6}(_\d+)?", "gap_analysis_<time>", value)
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


def python_call(venv, env, cwd, call: str) -> dict:
    """Magpie.CALL in the Python API's venv; its result's report (a dict)."""
    return api(venv, f"out = Magpie.{call}.report", env, cwd)


def test_gap_analysis_same_reports_from_cli_mcp_and_python(magpie, env, tmp_path, venv):
    for i, trace_dir in enumerate(trace_dirs(tmp_path)):
        out_cli, out_mcp, out_py = tmp_path / f"cli{i}", tmp_path / f"mcp{i}", tmp_path / f"py{i}"
        cli(magpie, env, "benchmark", "--trace-dir", trace_dir, "-o", out_cli)
        got = mcp_call(magpie, env, "gap_analysis", {"trace_dir": str(trace_dir), "output_dir": str(out_mcp)})
        report = python_call(venv, env, tmp_path, f"gap_analysis({str(trace_dir)!r}, output_dir={str(out_py)!r})")
        assert (out_cli / "gap_analysis" / "gap_analysis.csv").is_file()
        roots = [out_cli, out_mcp, out_py]
        assert_same_files(out_cli / "gap_analysis", out_mcp / "gap_analysis", roots)
        assert_same_files(out_cli / "gap_analysis", out_py / "gap_analysis", roots)
        # What each face hands back in memory is the report it wrote.
        written = normalise(json.loads((out_cli / "gap_analysis" / "gap_analysis.json").read_text()), roots)
        assert normalise(report, roots) == written
        assert normalise(got["report"], roots) == written


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
def test_tracelens_same_reports_from_cli_mcp_and_python(magpie, env, tmp_path, venv, mode, trace):
    out_cli, out_mcp, out_py = tmp_path / "cli", tmp_path / "mcp", tmp_path / "py"
    cli(magpie, env, "tracelens", trace, "--mode", mode, "-o", out_cli)
    got = mcp_call(magpie, env, "tracelens", {"trace": str(trace), "mode": mode, "output_dir": str(out_mcp)})
    manifest = python_call(venv, env, tmp_path, f"tracelens({str(trace)!r}, mode={mode!r}, output_dir={str(out_py)!r})")
    assert (out_cli / "tracelens" / "tracelens_manifest.json").is_file()
    roots = [out_cli, out_mcp, out_py]
    assert_same_files(out_cli / "tracelens", out_mcp / "tracelens", roots)
    assert_same_files(out_cli / "tracelens", out_py / "tracelens", roots)
    written = normalise(json.loads((out_cli / "tracelens" / "tracelens_manifest.json").read_text()), roots)
    assert normalise(manifest, roots) == written == normalise(got["manifest"], roots)


def test_every_face_is_recorded_in_the_store(magpie, env, tmp_path, venv):
    cli(magpie, env, "benchmark", "--trace-dir", SAMPLE_DIR, "-o", tmp_path / "cli")
    mcp_call(magpie, env, "gap_analysis", {"trace_dir": str(SAMPLE_DIR), "output_dir": str(tmp_path / "mcp")})
    python_call(venv, env, tmp_path, f"gap_analysis({str(SAMPLE_DIR)!r}, output_dir={str(tmp_path / 'py')!r})")
    rows = json.loads(cli(magpie, env, "results", "list", "--json").stdout)
    rows = rows if isinstance(rows, list) else rows.get("runs", rows)
    faces = sorted(r["face"] for r in rows if r["kind"] == "gap_analysis")
    assert faces == ["cli", "mcp", "python"], rows
    assert all(r["status"] == "succeeded" for r in rows), rows


# --- analyze --no-perf of a CPU PyTorch kernel ----------------------------------------

SOFTMAX = REPO_ROOT / "examples" / "kernels" / "softmax"


def only_workspace(out: Path, prefix: str) -> Path:
    found = sorted(out.glob(prefix + "*"))
    assert len(found) == 1, (out, found)
    return found[0]


def test_analyze_same_reports_from_cli_and_mcp(magpie, env, engine, tmp_path):
    """Correctness only (--no-perf / check_performance false), so nothing is measured: normalised
    are the workspace folder's name and each face's output root (paths) and VOLATILE_KEYS (times
    of day, step timings). The kernel harness runs `python3 -m magpie_bench`: the vllm venv (it has
    torch) goes first on PATH."""
    env = dict(env, PATH=f"{serving_env.VLLM.parent}:{env['PATH']}")
    config = tmp_path / "softmax_torch.yaml"
    config.write_text(
        "kernel:\n  id: softmax_torch\n  type: pytorch\n"
        f"  working_dir: {SOFTMAX}\n"
        "  bench_target: {module: softmax_torch, callable: softmax, get_inputs: get_inputs}\n")
    out_cli, out_mcp = tmp_path / "cli", tmp_path / "mcp"
    cli(magpie, env, "analyze", "-k", config, "--no-perf", "-o", out_cli)
    got = mcp_call(magpie, env, "analyze", {"kernel_config": str(config), "check_performance": False,
                                            "output_dir": str(out_mcp)})
    assert got["all_correct"], got
    ws_cli, ws_mcp = only_workspace(out_cli, "analyze_"), only_workspace(out_mcp, "analyze_")
    assert (ws_cli / "analyze_report.json").is_file()
    # The workspaces' names carry their start time; each face's own folder is its root.
    assert_same_files(ws_cli, ws_mcp, [ws_cli, ws_mcp, out_cli, out_mcp])


def test_compare_same_reports_from_cli_mcp_and_python(magpie, env, engine, tmp_path, venv):
    """`compare --no-perf` of examples/kernel_speed's PyTorch GELU pair (CPU tensors):
    the same workspace from each face, normalised as analyze's. The harness's
    Python is the vllm venv's (it has torch), named to all three faces."""
    env = dict(env, PATH=f"{serving_env.VLLM.parent}:{env['PATH']}", MAGPIE_PYTHON=str(serving_env.PY))
    config = REPO_ROOT / "examples" / "kernel_speed" / "compare.yaml"
    out_cli, out_mcp, out_py = tmp_path / "cli", tmp_path / "mcp", tmp_path / "py"
    cli(magpie, env, "compare", "-k", config, "--no-perf", "-o", out_cli)
    got = mcp_call(magpie, env, "compare", {"kernel_config": str(config), "check_performance": False,
                                            "output_dir": str(out_mcp)})
    report = python_call(venv, env, tmp_path, f"compare({str(config)!r}, no_perf=True, output_dir={str(out_py)!r})")
    assert got["all_correct"], got
    ws = [only_workspace(out, "compare_") for out in (out_cli, out_mcp, out_py)]
    roots = [*ws, out_cli, out_mcp, out_py]
    written = json.loads((ws[0] / "compare_report.json").read_text())
    assert [v["kernel_id"] for v in written["results"]["verdicts"]] == ["gelu_torch", "gelu_twin"]
    assert_same_files(ws[0], ws[1], roots)
    assert_same_files(ws[0], ws[2], roots)
    assert normalise(report, roots) == normalise(written, roots)


# --- benchmark --endpoint against the timed stub ----------------------------------------
#
# The stub writes each token on a fixed schedule, so two runs of the same
# workload send the same requests and get the same tokens; only how long
# things took differs. Normalised, and why:
#  - times of day and run lengths (VOLATILE_KEYS, plus `date`): clocks;
#  - paths: each face writes under its own output folder and workspace name;
#  - measured latencies and rates: any key ending in _ms or _s (TTFT, ITL,
#    E2EL, queue and client times, per-request stamps), the vLLM result's
#    per-request arrays (ttfts, itls, latencies, start_times, queue_times),
#    durations and every throughput (they divide by a measured duration), and
#    the peak / per-second concurrency (a matter of when requests finished);
#  - the `latency` and `client` blocks and `server_metrics` (the stub's
#    /metrics before and after, which the second run sees after the first):
#    their keys must match, their numbers are measurements;
#  - summary.txt: its decimal figures (throughput, latency, duration,
#    execution time); the integer counts stay;
#  - requests.jsonl: lines are in completion order, compared sorted by index.
# Everything else — counts, tokens, config echo, labels, status, errors,
# warnings, the files written — must be identical.
MEASURED_KEYS = {"duration", "duration_seconds", "request_throughput", "output_throughput",
                 "total_token_throughput", "request_goodput", "max_output_tokens_per_s", "max_concurrent_requests",
                 "peak_concurrency", "ttfts", "itls", "latencies", "start_times", "queue_times", "date"}
MEASURED_BLOCKS = {"latency", "client", "server_metrics"}


def shape(value):
    """Keys kept, leaves replaced: the block's layout without its measurements."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return ["<measured>"] * len(value)
    return "<measured>"


def normalise_measured(value):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in MEASURED_BLOCKS:
                out[k] = shape(v)
            elif k in MEASURED_KEYS or re.search(r"_(ms|s)$", k):
                out[k] = "<measured>"
            else:
                out[k] = normalise_measured(v)
        return out
    if isinstance(value, list):
        return [normalise_measured(v) for v in value]
    return value


def assert_same_benchmark_files(a: Path, b: Path, roots):
    assert tree(a) == tree(b)
    assert {"benchmark_report.json", "summary.txt", "benchmark_serving_result.json", "requests.jsonl",
            "config.yaml"} <= set(tree(a)), tree(a)
    for rel in tree(a):
        ta, tb = (a / rel).read_text(), (b / rel).read_text()
        if rel.endswith(".json"):
            ja, jb = (normalise_measured(normalise(json.loads(t), roots)) for t in (ta, tb))
            assert ja == jb, rel
        elif rel.endswith(".jsonl"):
            ra, rb = ([normalise_measured(json.loads(x)) for x in t.splitlines()] for t in (ta, tb))
            assert sorted(ra, key=lambda r: r["index"]) == sorted(rb, key=lambda r: r["index"]), rel
        else:
            ta, tb = (re.sub(r"\d+\.\d+", "<n>", normalise(t, roots)) for t in (ta, tb))
            assert ta == tb, rel


def test_benchmark_same_reports_from_cli_mcp_and_python(magpie, env, tmp_path, timed_stub, venv):
    workload = {"concurrency": 2, "num_prompts": 6, "input_len": 16, "output_len": 4, "range_ratio": 0,
                "token_id_max": 4000, "warmups": 1}
    out_cli, out_mcp, out_py = tmp_path / "cli", tmp_path / "mcp", tmp_path / "py"
    args = ["benchmark", "vllm", "--endpoint", timed_stub, "--model", "timed-stub"]
    for k, v in workload.items():
        args += ["--" + k.replace("_", "-"), v]
    cli(magpie, env, *args, "-o", out_cli)
    got = mcp_call(magpie, env, "benchmark", {"framework": "vllm", "model": "timed-stub", "endpoint": timed_stub,
                                              "output_dir": str(out_mcp), **workload})
    assert got["success"], got
    py = api(venv, f"""
        r = Magpie.benchmark(framework="vllm", model="timed-stub", endpoint={timed_stub!r}, output_dir={str(out_py)!r},
                             **{workload!r})
        out = {{"success": r.success, "report": r.report, "cases": r.cases.to_pandas().to_dict("records")}}
    """, env, tmp_path)
    assert py["success"], py["report"].get("errors")
    ws_cli, ws_mcp = only_workspace(out_cli, "benchmark_vllm_"), only_workspace(out_mcp, "benchmark_vllm_")
    ws_py = only_workspace(out_py, "benchmark_vllm_")
    report = json.loads((ws_cli / "benchmark_report.json").read_text())
    # What the comparison leans on is really there: the counts it keeps are the workload's.
    assert report["status"] == "success" and report["throughput"]["completed_requests"] == 6
    assert report["throughput"]["total_output_tokens"] == 6 * 4
    assert got["report"]["throughput"]["completed_requests"] == 6
    roots = [ws_cli, ws_mcp, ws_py, out_cli, out_mcp, out_py]
    assert_same_benchmark_files(ws_cli, ws_mcp, roots)
    assert_same_benchmark_files(ws_cli, ws_py, roots)
    # The Python API's summary table holds its report's counts and figures.
    [case] = py["cases"]
    assert (case["completed"], case["total_output_tokens"]) == (6, 24)
    assert case["ttft_mean_ms"] == pytest.approx(py["report"]["latency"]["ttft"]["mean_ms"], rel=1e-9)
