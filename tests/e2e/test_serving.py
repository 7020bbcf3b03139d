"""`magpie benchmark` against a real inference server: vLLM's CPU build from
PyPI serving a tiny Llama-architecture model generated here (random weights
via --load-format dummy; nothing downloaded from a hub).

Covers a clean run (--endpoint), multi-turn sessions served from vLLM's
prefix cache, a prefix pool's hit rate in vLLM's own counters, a sweep over two concurrencies and a
profiled run (both with magpie launching the server itself), the server
killed mid-run, and the overall timeout ending a run whose server magpie
launched (its whole process group gone, the partial results kept). The comparison with `vllm bench serve` is in
test_serving_compare.py so this suite stays short."""
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_env as env  # noqa: E402

pytestmark = pytest.mark.e2e

ISL, OSL = 32, 16
WORKLOAD = ["--input-len", str(ISL), "--output-len", str(OSL), "--range-ratio", "0",
            "--token-id-max", "4000", "--warmups", "2"]


@pytest.fixture(scope="module")
def server(vllm_server):
    return vllm_server


def workspace_of(out: Path) -> Path:
    ws = sorted(out.glob("benchmark_vllm_*"))
    assert ws, f"no workspace under {out}"
    return ws[-1]


def run_magpie(magpie, args, out: Path, timeout=900):
    cmd = [str(magpie), "benchmark", "vllm", *args, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    ws = workspace_of(out)
    report = json.loads((ws / "benchmark_report.json").read_text())
    return proc, report, ws


def check_magpie_report_keys(report):
    for key in ["success", "framework", "model", "throughput", "latency", "kernel_summary",
                "top_bottlenecks", "tracelens_analysis", "gap_analysis", "gpu_monitor", "workspace_dir",
                "execution_time", "profiling_enabled", "run_kind", "reward_eligible", "errors"]:
        assert key in report, key
    for key in ["request_throughput", "output_throughput", "total_token_throughput", "completed_requests",
                "total_input_tokens", "total_output_tokens", "duration_seconds"]:
        assert key in report["throughput"], key
    for m in ["ttft", "tpot", "itl", "e2el"]:
        assert set(report["latency"][m]) >= {"mean_ms", "median_ms", "p99_ms", "std_ms"}


def port_closed(url: str) -> bool:
    host, port = url.split("//")[1].split(":")
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, int(port.split("/")[0]))) != 0


def test_clean_run(magpie, server, tmp_path):
    n = 16
    proc, report, ws = run_magpie(magpie, ["--endpoint", server.url, "--concurrency", "4",
                                           "--num-prompts", str(n), *WORKLOAD], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_magpie_report_keys(report)
    assert report["success"] and report["complete"]
    assert report["run_kind"] == "measurement" and report["reward_eligible"]
    assert not report["profiling_enabled"]
    t = report["throughput"]
    assert t["completed_requests"] == n and t["failed_requests"] == 0
    assert t["total_input_tokens"] == n * ISL  # token-id prompts: exact input lengths
    assert t["total_output_tokens"] == n * OSL  # ignore_eos
    lat = report["latency"]
    assert 0 < lat["ttft"]["mean_ms"] <= lat["e2el"]["mean_ms"]
    assert lat["tpot"]["mean_ms"] > 0 and lat["itl"]["mean_ms"] > 0
    raw = json.loads((ws / "benchmark_serving_result.json").read_text())
    for key in ["duration", "completed", "failed", "request_throughput", "output_throughput",
                "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "std_ttft_ms", "mean_tpot_ms", "p99_itl_ms",
                "mean_e2el_ms", "ttfts", "itls", "input_lens", "output_lens", "max_concurrent_requests"]:
        assert key in raw, key
    assert raw["completed"] == n
    lines = (ws / "requests.jsonl").read_text().splitlines()
    assert len(lines) == n
    assert all(json.loads(line)["success"] for line in lines)
    summary = (ws / "summary.txt").read_text()
    assert "Benchmark Result: VLLM" in summary and "TTFT (mean/p99):" in summary
    # The server's own counters moved by at least the measured tokens.
    delta = report["server_metrics"]["delta"]
    gen = [v for k, v in delta.items() if k.startswith("vllm:generation_tokens_total")]
    assert gen and gen[0] >= n * OSL
    assert report["cases"][0]["client"]["scheduled_to_sent_ms"]["p99"] >= 0


def test_sweep_two_concurrencies_local_launch(magpie, tiny_model, tmp_path):
    proc, report, ws = run_magpie(magpie, ["--model", str(tiny_model), "--run-mode", "local",
                                           "--concurrency", "1,4", "--num-prompts", "8", *WORKLOAD,
                                           *env.engine_flags()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr + (ws / "server.log").read_text()[-3000:]
    assert report["success"] and report["complete"]
    cases = report["cases"]
    assert [c["concurrency"] for c in cases] == [1, 4]
    for c in cases:
        assert c["throughput"]["completed_requests"] == 8
        assert Path(c["raw_result_path"]).is_file() and Path(c["requests_path"]).is_file()
    # Throughput is not compared across the two cases: on a CPU server sharing
    # the machine it depends on what else runs. test_serving_compare.py checks
    # a sweep's throughput against a server with a known schedule.
    assert cases[0]["peak_concurrency"] == 1 and cases[1]["peak_concurrency"] == 4
    server = report["server"]
    assert server["mode"] == "local" and "vllm" in server["command"] and "serve" in server["command"]
    assert (ws / "server.log").stat().st_size > 0
    assert (ws / "config.yaml").is_file()
    assert port_closed(server["url"]), "server still listening after magpie exited"
    assert "Sweep:" in (ws / "summary.txt").read_text()


def test_profiled_run_gap_analysis(magpie, tiny_model, tmp_path):
    proc, report, ws = run_magpie(magpie, ["--model", str(tiny_model), "--run-mode", "local",
                                           "--torch-profiler", "--concurrency", "2", "--num-prompts", "4",
                                           "--input-len", "32", "--output-len", "8", "--range-ratio", "0",
                                           "--token-id-max", "4000", "--warmups", "1",
                                           *env.engine_flags()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr + (ws / "server.log").read_text()[-3000:]
    assert report["run_kind"] == "diagnostic" and not report["reward_eligible"]
    assert report["profiling_enabled"]
    traces = [p for p in (ws / "torch_trace").rglob("*") if p.is_file() and ".json" in p.name]
    assert traces, "no torch trace written by the server"
    gap = report["gap_analysis"]
    assert gap and gap["top_kernels"], report.get("errors")
    assert (ws / "gap_analysis" / "gap_analysis.csv").is_file()
    assert report["kernel_summary"] and report["top_bottlenecks"]
    # A CPU-only server has no GPU kernels: the report says gap analysis used cpu_op events.
    assert any("cpu_op" in w for w in report["warnings"])
    assert report["throughput"]["completed_requests"] == 4


def test_prefix_pool_reaches_its_hit_rate_in_vllms_own_counters(magpie, server, tmp_path):
    """A pool of 4 prefixes of 256 tokens (two of vLLM CPU's 128-token blocks)
    on 80% of 40 requests, sent one at a time: vLLM's prefix_cache_hits /
    prefix_cache_queries over the measured requests is within 5 points of the
    hit rate the assignment predicts (28 later uses · 256 of 40 · 288 tokens);
    with reuse 0 every prefix is a request's own and the cache finds nothing."""
    def run(reuse, seed, out):
        proc, report, ws = run_magpie(magpie, ["--endpoint", server.url, "--input-len", "32", "--output-len", "2",
                                               "--range-ratio", "0", "--token-id-max", "4000", "--seed", seed,
                                               "--prefix-len", "256", "--prefix-pool", "4", "--prefix-reuse", reuse,
                                               "--num-prompts", "40", "--concurrency", "1", "--warmups", "0"], out)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return report["cases"][0]["prefix_cache"], (ws / "summary.txt").read_text()

    pc, summary = run("0.8", "11", tmp_path / "reuse")
    assert pc["requests_with_pool_prefix"] == 32 and pc["target_reuse"] == 0.8, pc
    assert pc["expected_hit_rate"] == pytest.approx(28 * 256 / (40 * 288)), pc
    assert pc["queried_tokens"] >= 40 * 288, pc
    assert abs(pc["measured_hit_rate"] - pc["expected_hit_rate"]) <= 0.05, pc
    assert "Prefix cache hit rate: expected 0.622, measured" in summary, summary
    # Another seed: the same one would resend the first run's prompts, which the server still holds.
    pc, _ = run("0", "12", tmp_path / "none")
    assert pc["requests_with_pool_prefix"] == 0 and pc["expected_hit_rate"] == 0, pc
    assert pc["measured_hit_rate"] <= 0.05, pc

def test_sessions_resend_a_history_the_prefix_cache_holds(magpie, server, tmp_path):
    """Multi-turn sessions with vLLM's prefix caching (on by default): every
    later turn resends its session's history, so vLLM's own counters show it
    served from the cache (all full 128-token blocks of the first turn), and
    TTFT after the first turn (~1000 tokens to prefill) drops (a dozen new)."""
    import random
    rng = random.Random(7)
    words = lambda n: " ".join(f"w{rng.randrange(10, 4000)}" for _ in range(n))  # the tiny model's vocabulary
    turns = lambda: [{"from": "human", "value": words(1000)}, {"from": "gpt", "value": "x"},
                     {"from": "human", "value": words(8)}, {"from": "gpt", "value": "x"},
                     {"from": "human", "value": words(8)}]
    data = tmp_path / "sessions.json"
    data.write_text(json.dumps([{"conversations": turns()} for _ in range(4)]))
    proc, report, ws = run_magpie(magpie, ["--endpoint", server.url, "--dataset", "sharegpt_sessions",
                                           "--dataset-path", str(data), "--output-len", "4", "--concurrency", "2",
                                           "--warmups", "1"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    case = report["cases"][0]
    assert case["throughput"]["completed_requests"] == 12
    turns_seen = case["turns"]
    assert [t["turn"] for t in turns_seen] == [0, 1, 2] and turns_seen[0]["mean_input_tokens"] == 1000
    delta = report["server_metrics"]["delta"]
    hits = sum(v for k, v in delta.items() if k.startswith("vllm:prefix_cache_hits_total"))
    # 8 later turns, each finding at least the first turn's 7 full blocks (896 tokens) cached.
    assert hits >= 8 * 896, {k: v for k, v in delta.items() if "prefix_cache" in k}
    later = (turns_seen[1]["ttft"]["mean_ms"] + turns_seen[2]["ttft"]["mean_ms"]) / 2
    assert later < turns_seen[0]["ttft"]["mean_ms"], turns_seen


def test_server_killed_mid_run(magpie, server, tmp_path):
    cmd = [str(magpie), "benchmark", "vllm", "--endpoint", server.url, "--concurrency", "2",
           "--num-prompts", "400", *WORKLOAD, "--request-timeout", "60", "-o", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    jsonl = None
    while time.time() < deadline:
        ws = sorted(tmp_path.glob("benchmark_vllm_*"))
        if ws and (ws[-1] / "requests.jsonl").is_file():
            jsonl = ws[-1] / "requests.jsonl"
            # Records are flushed in batches of 64; wait for the first batch.
            if len(jsonl.read_text().splitlines()) >= 64:
                break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    assert jsonl is not None
    server.kill()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    report = json.loads((jsonl.parent / "benchmark_report.json").read_text())
    assert report["complete"] is False and report["success"] is False
    assert any("server died" in e for e in report["errors"]), report["errors"]
    case = report["cases"][0]
    assert case["complete"] is False
    assert 64 <= case["throughput"]["completed_requests"] < 400
    assert "(INCOMPLETE)" in (jsonl.parent / "summary.txt").read_text()


def processes_with(marker: str) -> list:
    """Pids whose environment carries `marker` (the engine and every process it forked)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if marker.encode() in (p / "environ").read_bytes():
                found.append(int(p.name))
        except OSError:  # gone, or not ours
            pass
    return found


def test_overall_timeout_kills_the_launched_server_and_keeps_partial_results(magpie, server, tiny_model, tmp_path):
    # The limit leaves room for this machine's server start-up as measured by the
    # module's own server (plus a minute of load), far less than the 100000
    # requests would take: the timeout, not the workload, ends the run. On a
    # machine so loaded that this start-up took longer than the limit (the run
    # timed out before any case), the run is repeated once with a limit twice as long.
    assert server.ready_after_s is not None
    limit = int(2 * server.ready_after_s + 60)
    for attempt in range(2):
        marker = f"magpie-timeout-{uuid.uuid4().hex}"
        out = tmp_path / f"attempt{attempt}"
        t0 = time.monotonic()
        proc, report, ws = run_magpie(magpie, ["--model", str(tiny_model), "--run-mode", "local", "--concurrency",
                                               "2", "--num-prompts", "100000", *WORKLOAD, "--timeout", str(limit),
                                               "--env", f"MAGPIE_E2E_MARKER={marker}", *env.engine_flags()],
                                      out, timeout=limit + 300)
        elapsed = time.monotonic() - t0
        log = (ws / "server.log").read_text()[-3000:]
        assert proc.returncode == 1, proc.stdout + proc.stderr + log
        assert report["status"] == "timeout" and not report["complete"] and not report["success"], report["errors"]
        assert any(f"timeout_seconds ({limit} s)" in e for e in report["errors"]), report["errors"]
        assert elapsed < limit + 120, elapsed  # ended at the limit, not by the workload
        # Either way the server's whole process group is gone (vLLM forks its engine
        # core), and its port is free.
        left = processes_with(marker)
        for _ in range(50):
            if not left:
                break
            time.sleep(0.2)
            left = processes_with(marker)
        assert not left, f"engine processes still running after the timeout: {left}"
        assert port_closed(report["server"]["url"])
        if report["cases"]:
            break
        limit = 2 * limit
    case = report["cases"][0]
    assert not case["complete"]
    done = case["throughput"]["completed_requests"]
    assert 1 <= done < 100000, (case["throughput"], log)
    assert len((ws / "requests.jsonl").read_text().splitlines()) >= done
    assert "Status: FAILED (TIMEOUT, INCOMPLETE)" in (ws / "summary.txt").read_text()
    # The environment block says what ran: the local model path and the variable passed.
    envb = report["environment"]
    assert envb["model_revision"] == f"local:{tiny_model}"
    assert envb["env_vars"]["MAGPIE_E2E_MARKER"] == marker


def test_repeated_captures_are_each_analysed_with_a_stability_table(magpie, tiny_model, tmp_path):
    """profiler.torch_profiler.num_profiles: 2 captures of 2 s, 1 s apart, during
    one timed run (40 requests arriving at 2/s, about 20 s): each capture's files
    land in torch_trace/capture_N, each is gap-analysed, and the report and
    summary carry the stability table over both."""
    cfg = tmp_path / "captures.yaml"
    cfg.write_text("benchmark:\n  framework: vllm\n"
                   f"  model: {tiny_model}\n  run_mode: local\n"
                   "  envs: {CONC: 2, ISL: 32, OSL: 8, RANDOM_RANGE_RATIO: 0}\n"
                   "  profiler:\n    torch_profiler:\n      enabled: true\n      num_profiles: 2\n"
                   "      capture_timeout_seconds: 2\n      interval_seconds: 1\n"
                   "      flush_timeout_seconds: 120\n")
    proc, report, ws = run_magpie(magpie, ["-b", str(cfg), "--num-prompts", "40", "--request-rate", "2",
                                           "--token-id-max", "4000", "--warmups", "1", *env.engine_flags()],
                                  tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr + (ws / "server.log").read_text()[-3000:]
    assert not any("not implemented yet" in w for w in report["warnings"]), report["warnings"]
    caps = report["profile_captures"]
    assert [c["label"] for c in caps] == ["capture_1", "capture_2"], caps
    for c in caps:
        assert c["status"] == "analysed", c
        assert c["trace_files"] > 0 and c["kernel_summary"], c
        assert any(p.name.endswith((".json", ".json.gz")) for p in (ws / "torch_trace" / c["label"]).iterdir())
        assert (ws / "gap_analysis" / c["label"] / "gap_analysis.csv").is_file()
        assert c["stop_s"] > c["start_s"]
    assert caps[1]["start_s"] >= caps[0]["stop_s"] + 1, caps  # interval_seconds apart at least
    st = report["capture_stability"]
    assert st["analysed"] == ["capture_1", "capture_2"] and st["missing"] == [], st
    assert st["kernels"], st
    for row in st["kernels"]:
        assert len(row["share_pct"]) == 2
        assert row["min_pct"] <= row["mean_pct"] <= row["max_pct"]
    # Each capture's shares come from its own analysis: its kernel_summary percent.
    first = {k["name"]: k["percent"] for k in caps[0]["kernel_summary"]}
    top = st["kernels"][0]
    if top["name"] in first:
        assert top["share_pct"][0] == pytest.approx(first[top["name"]], abs=1e-6)
    summary = (ws / "summary.txt").read_text()
    assert "Capture stability (2 analysed)" in summary, summary
