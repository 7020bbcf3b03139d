"""The MCP Ray tools against a real Ray head (tests/e2e/ray_env.py), with the
official MCP SDK as the client (ctest runs this in the MCP venv, like
test_mcp.py): benchmark_batch submits real magpie jobs, ray_task_list /
ray_task_status / ray_task_result follow and gather them, ray_task_cancel
stops one mid-run, and `benchmark` with run_mode ray against a dead address
is an error that names it. Every structuredContent is checked against the
tool's outputSchema."""
import asyncio
import os
import re
import sys
import time
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="run with tests/e2e/mcp_env.py (MCP venv)")
mcp = pytest.importorskip("mcp", reason="run with tests/e2e/mcp_env.py (MCP venv)")
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT  # noqa: E402
from ray_env import RayHead, free_port  # noqa: E402

EXAMPLE_TRACES = REPO_ROOT / "examples" / "traces"
RAY_TOOLS = {"ray_task_status", "ray_task_result", "ray_task_cancel", "ray_task_list", "benchmark_batch"}


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    h = RayHead(num_cpus=2, log_dir=tmp_path_factory.mktemp("ray"))
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def server(magpie, tmp_path):
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))
    env.pop("RAY_ADDRESS", None)
    return StdioServerParameters(command=str(magpie), args=["mcp"], env=env)


async def _session(target, calls):
    """Runs `calls` (name, arguments) in one session; returns [(result, tool)]."""
    out = []
    async with Client(target) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name, arguments in calls:
            out.append((await client.call_tool(name, arguments), tools.get(name)))
    return out


def call(target, name, arguments):
    return asyncio.run(_session(target, [(name, arguments)]))[0]


def check(result, tool):
    text = "\n".join(c.text for c in result.content if c.type == "text")
    assert not result.is_error, text
    jsonschema.validate(result.structured_content, tool.output_schema)
    return result.structured_content


def test_ray_tools_are_listed_with_valid_schemas(server):
    async def names():
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}
    tools = asyncio.run(names())
    assert RAY_TOOLS <= set(tools), set(tools)
    for name in RAY_TOOLS:
        for schema in (tools[name].input_schema, tools[name].output_schema):
            jsonschema.Draft202012Validator.check_schema(schema)
    props = tools["benchmark"].input_schema["properties"]
    assert {"ray_cluster_address", "ray_shared_storage_path", "ray_entrypoint_num_gpus"} <= set(props)
    assert "ray" in props["run_mode"]["enum"]


def test_batch_status_result_list_on_a_real_head(server, head, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    batch = tmp_path / "batch.yaml"
    batch.write_text("batch:\n"
                     f"  - {{name: gap, command: [benchmark, --trace-dir, '{EXAMPLE_TRACES}']}}\n"
                     f"  - {{name: lens, command: [tracelens, '{trace}']}}\n")
    cluster = {"ray_cluster_address": head.address, "ray_shared_storage_path": str(shared)}
    out = tmp_path / "out"
    result, tool = call(server, "benchmark_batch", {"configs": [str(batch)], "output_dir": str(out),
                                                     "detach": True, **cluster})
    submitted = check(result, tool)
    assert [r["status"] for r in submitted["runs"]] == ["SUBMITTED", "SUBMITTED"], submitted
    ids = {r["name"]: r["task_id"] for r in submitted["runs"]}

    # Follow them with ray_task_status until both finish.
    deadline = time.time() + 150
    states = {}
    while time.time() < deadline:
        replies = asyncio.run(_session(server, [("ray_task_status", {"task_id": i, **cluster}) for i in ids.values()]))
        states = {}
        for (result, tool), name in zip(replies, ids):
            states[name] = check(result, tool)
        if all(s["status"] in ("SUCCEEDED", "FAILED", "STOPPED") for s in states.values()):
            break
        time.sleep(1)
    assert {n: s["status"] for n, s in states.items()} == {"gap": "SUCCEEDED", "lens": "SUCCEEDED"}, states
    assert states["gap"]["exit_code"] == 0 and "--trace-dir" in states["gap"]["command"]
    assert "Output:" in states["gap"]["logs_tail"], states["gap"]["logs_tail"]  # the node's console, last lines

    result, tool = call(server, "ray_task_result", {"task_id": ids["gap"], "output_dir": str(tmp_path / "got"),
                                                    **cluster})
    got = check(result, tool)
    # The run's own folder (gap_analysis_<time>/; gap_analysis links to it).
    assert got["collected"] and any(re.fullmatch(r"gap_analysis_[0-9_]+/gap_analysis\.csv", f)
                                    for f in got["files"]), got
    assert (tmp_path / "got" / "gap_analysis" / "gap_analysis.csv").is_file()
    assert got["report"]["content"]["top_kernels"], got["report"].keys()

    result, tool = call(server, "ray_task_list", {"ray_cluster_address": head.address})
    listed = {t["task_id"]: t for t in check(result, tool)["tasks"]}
    assert set(ids.values()) <= set(listed), listed.keys()
    assert listed[ids["lens"]]["label"] == "lens"


def test_cancel_stops_a_running_job(server, head, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    kernel = tmp_path / "k.py"
    kernel.write_text("def f(x):\n    return x\n")
    batch = tmp_path / "slow.yaml"
    batch.write_text("batch:\n  - {name: slow, command: [analyze, '%s', --type, pytorch, --no-perf, "
                     "--testcase, 'sleep 300']}\n" % kernel)
    cluster = {"ray_cluster_address": head.address, "ray_shared_storage_path": str(shared)}
    result, tool = call(server, "benchmark_batch", {"configs": [str(batch)], "detach": True,
                                                     "output_dir": str(tmp_path / "out"), **cluster})
    task = check(result, tool)["runs"][0]["task_id"]
    deadline = time.time() + 60
    while time.time() < deadline:
        status = check(*call(server, "ray_task_status", {"task_id": task, **cluster}))["status"]
        if status == "RUNNING":
            break
        time.sleep(0.5)
    result, tool = call(server, "ray_task_cancel", {"task_id": task, **cluster})
    assert check(result, tool)["status"] == "STOPPED"
    result, tool = call(server, "ray_task_list", {"status": "STOPPED", **cluster})
    assert task in {t["task_id"] for t in check(result, tool)["tasks"]}


def test_unknown_task_and_unreachable_cluster_are_clear_errors(server, head):
    result, _ = call(server, "ray_task_status", {"task_id": "magpie-no-such-job", "ray_cluster_address": head.address})
    assert result.is_error and "magpie-no-such-job" in result.content[0].text
    dead = f"http://127.0.0.1:{free_port()}"
    result, _ = call(server, "benchmark", {"framework": "vllm", "model": "m", "run_mode": "ray",
                                           "ray_cluster_address": dead})
    assert result.is_error and dead in result.content[0].text and "unreachable" in result.content[0].text


def test_batch_runs_here_without_a_cluster(server, tmp_path):
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    batch = tmp_path / "batch.yaml"
    batch.write_text("batch:\n"
                     f"  - {{name: gap, command: [benchmark, --trace-dir, '{EXAMPLE_TRACES}']}}\n"
                     f"  - {{name: lens, command: [tracelens, '{trace}']}}\n"
                     f"  - {{name: broken, command: [benchmark, --trace-dir, '{tmp_path / 'none'}']}}\n")
    result, tool = call(server, "benchmark_batch", {"configs": [str(batch)], "parallel": True,
                                                     "output_dir": str(tmp_path / "out")})
    out = check(result, tool)
    assert not out["on_ray"] and not out["all_succeeded"]
    status = {r["name"]: (r["status"], r["exit_code"]) for r in out["runs"]}
    assert status == {"gap": ("SUCCEEDED", 0), "lens": ("SUCCEEDED", 0), "broken": ("FAILED", 3)}, status
    assert Path(out["summary_json"]).is_file()
    assert (tmp_path / "out" / "gap" / "gap_analysis" / "gap_analysis.csv").is_file()


def test_batch_streams_job_logs_as_progress_and_records_the_runs(magpie, head, tmp_path):
    """benchmark_batch waiting on a Ray job sends the job's log lines as
    progress messages while it runs: the job (a node-side `magpie` wrapper)
    prints a marker and waits until the test, having seen the marker in a
    progress message, opens a gate; a log read only at the end would leave
    the gate shut and the job fails. The gathered run lands in the server's
    results store with the Ray job id."""
    gate = tmp_path / "gate"
    script = tmp_path / "gated-magpie.sh"
    script.write_text(
        "#!/bin/sh\n"
        "echo 'follow-marker: first line'\n"
        "i=0\n"
        f"while [ ! -e '{gate}' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
        f"[ -e '{gate}' ] || {{ echo 'follow-marker: gate never opened'; exit 1; }}\n"
        "echo 'follow-marker: gate opened'\n"
        f"exec '{magpie}' \"$@\"\n")
    script.chmod(0o755)
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"), MAGPIE_RAY_MAGPIE_COMMAND=str(script))
    env.pop("RAY_ADDRESS", None)
    server = StdioServerParameters(command=str(magpie), args=["mcp"], env=env)
    shared = tmp_path / "shared"
    shared.mkdir()
    batch = tmp_path / "batch.yaml"
    batch.write_text(f"batch:\n  - {{name: gap, command: [benchmark, --trace-dir, '{EXAMPLE_TRACES}']}}\n")
    cluster = {"ray_cluster_address": head.address, "ray_shared_storage_path": str(shared)}
    messages = []

    async def progress(value, total, message):
        messages.append(message or "")
        if message and "follow-marker: first line" in message:
            gate.touch()

    async def run():
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            result = await client.call_tool("benchmark_batch", {"configs": [str(batch)], "output_dir":
                                            str(tmp_path / "out"), **cluster}, progress_callback=progress)
            batch_out = check(result, tools["benchmark_batch"])
            task = batch_out["runs"][0]["task_id"]
            again = check(await client.call_tool("ray_task_result", {"task_id": task, **cluster}),
                          tools["ray_task_result"])
            listed = check(await client.call_tool("list_benchmark_results", {}), tools["list_benchmark_results"])
            return batch_out, again, listed

    batch_out, again, listed = asyncio.run(run())
    run_ = batch_out["runs"][0]
    assert run_["status"] == "SUCCEEDED", batch_out
    markers = [m for m in messages if "follow-marker" in m]
    assert markers == ["[gap] follow-marker: first line", "[gap] follow-marker: gate opened"], messages
    assert any(m.startswith("[gap] ") and "Gap Analysis" in m for m in messages), messages
    # One row in the store, found again (not duplicated) when the result is gathered a second time.
    assert len(run_["run_ids"]) == 1 and again["run_ids"] == run_["run_ids"], (run_, again)
    runs = listed["runs"]
    assert len(runs) == 1 and runs[0]["id"] == run_["run_ids"][0], runs
    assert runs[0]["kind"] == "gap_analysis" and runs[0]["metadata"]["ray_job_id"] == run_["task_id"], runs
    assert runs[0]["metadata"]["ray_cluster"] == head.address, runs
