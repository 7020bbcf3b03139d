"""End-to-end check of `magpie results` with the real binary.

Workspaces are made the way users make them: a gap analysis of the repository's
example trace (`magpie benchmark --trace-dir examples/traces -o DIR`, twice,
which the CLI records in the store as it runs),
plus two serving benchmark workspaces written here in the layout
`magpie benchmark vllm` leaves (benchmark_report.json + requests.jsonl), with a
known truth: the candidate's requests take 60% of the baseline's time. Then
`results import`, `list`, `show` and `diff` run on them against a private store
($MAGPIE_RESULTS_DB), and the numbers are checked against a computation made
here from the request logs. Runs in a few seconds.
"""
import csv
import io
import json
import os
import random
import statistics
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e]

EXAMPLE_TRACES = REPO_ROOT / "examples" / "traces"


def run(magpie, *args, env, check=True):
    proc = subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, env=env, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"magpie {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def serving_workspace(path: Path, scale: float, seed: int) -> Path:
    """A closed-loop run of 200 requests at concurrency 4, latencies scaled by `scale`."""
    rng = random.Random(seed)
    slots = [0.0] * 4
    lines = [json.dumps({"index": 0, "warmup": True, "success": True, "ttft_s": 5, "e2el_s": 5, "itl_s": []})]
    ttfts = []
    for i in range(200):
        s = i % 4
        ttft = 0.05 * scale * rng.lognormvariate(0, 0.1)
        itl = [0.01 * scale * rng.lognormvariate(0, 0.1) for _ in range(15)]
        e2el = ttft + sum(itl)
        lines.append(json.dumps({"index": i + 1, "success": True, "start_s": slots[s], "ttft_s": ttft,
                                 "e2el_s": e2el, "itl_s": itl, "output_tokens": 16}))
        slots[s] += e2el
        ttfts.append(ttft)
    duration = max(slots)
    path.mkdir(parents=True)
    (path / "requests.jsonl").write_text("\n".join(lines) + "\n")
    report = {"success": True, "complete": True, "errors": [], "execution_time": duration + 1,
              "throughput": {"request_throughput": 200 / duration, "output_throughput": 3200 / duration,
                             "completed_requests": 200, "failed_requests": 0, "duration_seconds": duration},
              "latency": {"ttft": {"mean_ms": statistics.mean(ttfts) * 1000}},
              "cases": [{"label": "c4", "throughput": {"duration_seconds": duration}}]}
    (path / "benchmark_report.json").write_text(json.dumps(report))
    return path


@pytest.fixture(scope="module")
def setup(magpie, tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(root / "store" / "results.db"))
    out = root / "out"
    for name in ("gap_a", "gap_b"):
        run(magpie, "benchmark", "--trace-dir", EXAMPLE_TRACES, "-o", out / name, env=env)
    base = serving_workspace(out / "benchmark_vllm_20260101_000000", 1.0, 1)
    fast = serving_workspace(out / "benchmark_vllm_20260102_000000", 0.6, 2)
    return {"root": root, "out": out, "env": env, "base": base, "fast": fast}


def test_import_list_show(magpie, setup):
    env, out = setup["env"], setup["out"]
    # The CLI recorded its own gap analyses as they ran.
    recorded = json.loads(run(magpie, "results", "list", "--json", env=env).stdout)
    assert [r["kind"] for r in recorded] == ["gap_analysis", "gap_analysis"]
    assert all(r["face"] == "cli" and r["status"] == "succeeded" for r in recorded)
    # Each run's own folder, which <out>/gap_analysis links to while it is the newest there.
    assert {r["workspace"] for r in recorded} == {str((out / n / "gap_analysis").resolve()) for n in ("gap_a", "gap_b")}
    assert all(Path(r["workspace"]).name.startswith("gap_analysis_") for r in recorded)

    imported = run(magpie, "results", "import", out, env=env)
    assert "imported 2 workspaces" in imported.stdout  # the two benchmark_* folders
    for name in ("gap_a", "gap_b"):  # already recorded by the CLI: not indexed twice
        assert "imported 0 workspaces" in run(magpie, "results", "import", out / name, env=env).stdout
    assert "imported 0 workspaces" in run(magpie, "results", "import", out, env=env).stdout

    runs = json.loads(run(magpie, "results", "list", "--json", env=env).stdout)
    assert len(runs) == 4
    assert [r["id"] for r in runs] == sorted((r["id"] for r in runs), reverse=True)
    assert {r["kind"] for r in runs} == {"benchmark", "gap_analysis"}
    assert all(r["status"] == "succeeded" and r["workspace_exists"] for r in runs)
    assert sorted(r["face"] for r in runs) == ["cli", "cli", "import", "import"]
    gaps = json.loads(run(magpie, "results", "list", "--kind", "gap_analysis", "--json", env=env).stdout)
    assert len(gaps) == 2 and all(g["metrics"]["total_duration_us"] > 0 for g in gaps)
    table = run(magpie, "results", "list", env=env).stdout
    assert "benchmark" in table and "req/s" in table

    bench = next(r for r in runs if r["workspace"] == str(setup["fast"]))
    shown = json.loads(run(magpie, "results", "show", bench["id"], "--json", env=env).stdout)
    assert shown["metrics"]["completed_requests"] == 200
    by_path = run(magpie, "results", "show", setup["fast"], env=env).stdout
    assert f"id            {bench['id']}" in by_path and "request_throughput" in by_path

    missing = run(magpie, "results", "show", "99999", env=env, check=False)
    assert missing.returncode != 0 and "results.db" in missing.stderr


def test_diff_serving_matches_an_independent_computation(magpie, setup):
    env = setup["env"]
    proc = run(magpie, "results", "diff", setup["base"], setup["fast"], "--label", "base,fast",
               "--format", "json", "--resamples", "300", env=env)
    diff = json.loads(proc.stdout)
    metrics = {m["metric"]: m for m in diff["serving"][0]["metrics"]}
    assert len(metrics) == 14
    for m in metrics.values():
        # One run a side: FASTER within the runs, unconfirmed between them (docs/RESULTS.md).
        assert m["within_run_verdict"] == "FASTER", m
        assert m["verdict"] == "AMBIGUOUS" and "unconfirmed" in m["reason"], m
        assert m["noise_basis"] == "within-run only"
        assert m["ci_low"] <= m["ratio"] <= m["ci_high"]
    # With a run-to-run noise measured elsewhere (20%), a 1/0.6 = 1.67x change stands.
    given = json.loads(run(magpie, "results", "diff", setup["base"], setup["fast"], "--format", "json",
                           "--resamples", "300", "--run-noise", "0.2", env=env).stdout)
    for m in given["serving"][0]["metrics"]:
        assert m["verdict"] == "FASTER" and m["noise_basis"] == "given", m
        assert m["run_noise_floor"] == pytest.approx(1.2)
        assert m["noise_ci_low"] == pytest.approx(m["ci_low"] / 1.2)

    def ttfts(ws):
        recs = [json.loads(line) for line in (ws / "requests.jsonl").read_text().splitlines()]
        return [r["ttft_s"] * 1000 for r in recs if not r.get("warmup")]

    base_ttft, fast_ttft = ttfts(setup["base"]), ttfts(setup["fast"])
    assert metrics["ttft_mean_ms"]["baseline"] == pytest.approx(statistics.mean(base_ttft), rel=1e-9)
    assert metrics["ttft_median_ms"]["candidate"] == pytest.approx(statistics.median(fast_ttft), rel=1e-9)
    report = json.loads((setup["base"] / "benchmark_report.json").read_text())
    assert metrics["request_throughput"]["baseline"] == pytest.approx(
        report["throughput"]["request_throughput"], rel=1e-9)

    # CSV to a file, atomically; A/A is never a regression.
    out_csv = setup["root"] / "diff.csv"
    run(magpie, "results", "diff", setup["base"], setup["base"], "--format", "csv", "-o", out_csv, env=env)
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert len(rows) == 14
    for r in rows:  # a p99 of 200 requests may be too loose to call SAME; nothing is ever different
        assert r["verdict"] == "SAME" or (r["metric"].endswith("_p99_ms") and r["verdict"] == "AMBIGUOUS"), r
    # The baseline against a slower candidate fails the gate once the slowdown is confirmed
    # beyond run-to-run noise; with one run a side it is only "SLOWER within run".
    gate = run(magpie, "results", "diff", setup["fast"], setup["base"], "--fail-on-regression", env=env, check=False)
    assert gate.returncode == 0 and "AMBIGUOUS (SLOWER within run)" in gate.stdout, gate.stdout
    gate = run(magpie, "results", "diff", setup["fast"], setup["base"], "--fail-on-regression", "--run-noise", "0.2",
               env=env, check=False)
    assert gate.returncode == 1 and "SLOWER" in gate.stdout


def test_diff_by_run_id_and_op_tables(magpie, setup):
    env = setup["env"]
    runs = json.loads(run(magpie, "results", "list", "--json", env=env).stdout)
    benches = sorted(r["id"] for r in runs if r["kind"] == "benchmark")
    table = run(magpie, "results", "diff", *benches, "--resamples", "200", env=env).stdout
    assert f"#{benches[1]} vs #{benches[0]}" in table and "AMBIGUOUS (FASTER within run)" in table

    gaps = sorted((r for r in runs if r["kind"] == "gap_analysis"), key=lambda r: r["id"])
    ops = run(magpie, "results", "diff", gaps[0]["id"], gaps[1]["id"], env=env).stdout  # gap folders: op tables
    rows = list(csv.reader(io.StringIO(ops)))
    header = rows[0]
    assert header[:2] == ["section", "name"] and header[-1].endswith("delta_pct")
    # The same trace twice: every kernel is in both, with a zero delta.
    ours = list(csv.reader(open(Path(gaps[0]["workspace"]) / "gap_analysis.csv")))
    assert len(rows) == len(ours)
    assert all(float(r[header.index(f"#{gaps[1]['id']} delta_us")]) == 0 for r in rows[1:])


def test_deleted_workspace_shows_missing(magpie, setup):
    env = setup["env"]
    victim = setup["out"] / "benchmark_vllm_20260101_000000"
    copy = setup["root"] / "kept"
    victim.rename(copy)
    try:
        runs = json.loads(run(magpie, "results", "list", "--json", env=env).stdout)
        gone = [r for r in runs if r["workspace"] == str(victim)]
        assert len(gone) == 1 and gone[0]["workspace_exists"] is False
        assert "(missing)" in run(magpie, "results", "list", env=env).stdout
    finally:
        copy.rename(victim)


def test_store_and_report_agree_on_an_even_sample_count(magpie, tmp_path):
    """Issue 33: the store's `<id>.median_ns` was the upper-middle sample while the report
    takes the mean of the two middle ones. A testcase that prints four samples (1, 2, 3, 4 ms:
    the median is 2.5 ms, the upper-middle 3 ms) must give 2.5 ms in both. No GPU needed: the
    testcase prints the latency contract's line itself."""
    line = 'MAGPIE_LATENCY_JSON: {"mode":"events","stats":{"samples_ms":[4,1,3,2]}}'
    config = tmp_path / "kernel.yaml"
    config.write_text("kernels:\n  - {id: even, type: pytorch, testcase_command: [sh, -c, %s]}\n"
                      % json.dumps("echo " + json.dumps(line)))
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))
    run(magpie, "analyze", "-k", config, "-o", tmp_path / "out", env=env)
    report = json.loads(next((tmp_path / "out").rglob("analyze_report.json")).read_text())
    runs = json.loads(run(magpie, "results", "list", "--kind", "analyze", "--json", env=env).stdout)
    assert len(runs) == 1, runs
    shown = json.loads(run(magpie, "results", "show", runs[0]["id"], "--json", env=env).stdout)
    (result,) = report["results"]
    rounds = result["performance_result"]["magpie_stats"]["rounds"]
    assert rounds and all(r["samples"] == 4 and r["median_ns"] == pytest.approx(2.5e6) for r in rounds), rounds
    assert result["latency_result"]["primary_value_ms"] == pytest.approx(2.5)
    assert shown["metrics"]["even.median_ns"] == pytest.approx(2.5e6)
