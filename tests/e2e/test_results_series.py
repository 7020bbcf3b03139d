"""`magpie results series | history | check` end to end, on real runs.

Real serving runs through the real CLI (`magpie benchmark vllm --endpoint`)
against two timed stub servers (timed_stream_server.py): one answers each
request in half the time of the other. The runs are made from a throwaway git
repository with a commit before each run, so the private store
($MAGPIE_RESULTS_DB) holds a series along commits: six commits on the fast
server (the first one run twice: a repeat measures the run-to-run noise),
then five on the slow one, the injected regression (request throughput about
halves, TTFT doubles). Then `series` must group them into one series,
`history` must show one point per commit with the step, and `check` must
find the regression at the first slow commit and exit 9, writing JUnit,
GitHub summary, Bencher and CSV files; `--since` after the step exits 0.

Why the verdict cannot depend on machine load: the stub never answers early,
so load only adds lateness (tens of ms under heavy load) against a 2x step;
the gate is the run-to-run noise measured from the repeat, so a noisy
machine raises the bar rather than faking a change. About 5 s."""
import csv
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
FAST_COMMITS, SLOW_COMMITS = 6, 5


class Stub:
    def __init__(self, ttft_ms: float, itl_ms: float):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "timed_stream_server.py"), "--ttft-ms",
                                      str(ttft_ms), "--itl-ms", str(itl_ms)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("port "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run(magpie, *args, env, cwd=None, check=True):
    proc = subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)
    if check:
        assert proc.returncode == 0, f"magpie {' '.join(map(str, args))}:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return proc


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@e"))
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip() if args[0] == "commit" else ""


def record_series(magpie, root: Path, *benchmark_args) -> dict:
    """The store this suite reads (and test_results_site.py builds a site over): a private
    store under `root`, the runs along commits of a throwaway repository as the module
    docstring says; `benchmark_args` are added to each benchmark (e.g. --html)."""
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(root / "results.db"), MAGPIE_HOST_CLASS="e2e-runner")
    repo = root / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    fast, slow = Stub(40, 4), Stub(80, 8)
    commits = []
    try:
        for i in range(FAST_COMMITS + SLOW_COMMITS):
            (repo / "version.txt").write_text(f"{i}\n")
            git(repo, "add", "version.txt")
            commits.append(git(repo, "commit", "-q", "-m", f"change {i}"))
            stub = fast if i < FAST_COMMITS else slow
            for _ in range(2 if i == 0 else 1):
                run(magpie, "benchmark", "vllm", "--endpoint", stub.url, "--concurrency", "2", "--num-prompts", "6",
                    "--input-len", "8", "--output-len", "4", "--range-ratio", "0", "--token-id-max", "4000",
                    "--warmups", "0", "--request-timeout", "60", *benchmark_args, "-o", root / "out", env=env,
                    cwd=repo)
    finally:
        fast.stop()
        slow.stop()
    return {"root": root, "env": env, "commits": commits, "repo": repo}


@pytest.fixture(scope="module")
def store(magpie, tmp_path_factory):
    return record_series(magpie, tmp_path_factory.mktemp("series"))


def the_series(magpie, store):
    listed = json.loads(run(magpie, "results", "series", "--json", env=store["env"]).stdout)
    assert len(listed) == 1, listed  # one endpoint or the other: the same engine, model, workload
    return listed[0]


def test_series_groups_the_runs(magpie, store):
    s = the_series(magpie, store)
    assert s["runs"] == FAST_COMMITS + SLOW_COMMITS + 1 and s["commits"] == FAST_COMMITS + SLOW_COMMITS
    assert len(s["id"]) == 10
    assert s["key"]["engine"] == "vllm" and s["key"]["host_class"] == "e2e-runner"
    assert s["key"]["workload"] == "CONC2_ISL8_OSL4_N6", s["key"]
    text = run(magpie, "results", "series", env=store["env"]).stdout
    assert s["id"] in text and "e2e-runner" in text


def test_history_has_a_point_per_commit_and_the_step(magpie, store):
    s = the_series(magpie, store)
    h = json.loads(run(magpie, "results", "history", s["id"][:6], "--json", env=store["env"]).stdout)
    assert h["metric"] == "request_throughput" and h["higher_is_better"]
    assert [p["commit"] for p in h["points"]] == store["commits"]
    first = h["points"][0]
    assert len(first["run_ids"]) == 2 and first["ci_low"] <= first["value"] <= first["ci_high"]
    assert h["noise"]["basis"] == "repeats"
    fast = [p["value"] for p in h["points"][:FAST_COMMITS]]
    slow = [p["value"] for p in h["points"][FAST_COMMITS:]]
    assert max(slow) < min(fast)  # the injected step, as measured
    assert [(c["index"], c["kind"]) for c in h["changes"]] == [(FAST_COMMITS, "regression")], h["changes"]
    ttft = json.loads(run(magpie, "results", "history", s["id"], "--metric", "ttft.median_ms", "--json",
                          env=store["env"]).stdout)
    assert not ttft["higher_is_better"]
    assert [(c["index"], c["kind"]) for c in ttft["changes"]] == [(FAST_COMMITS, "regression")]
    table = run(magpie, "results", "history", s["id"], env=store["env"]).stdout
    assert "regression" in table and store["commits"][FAST_COMMITS][:10] in table
    bad = run(magpie, "results", "history", s["id"], "--metric", "nope", env=store["env"], check=False)
    assert bad.returncode == 3 and "has no metric 'nope'" in bad.stderr, bad.stderr


def test_check_exits_9_on_the_regression_and_writes_ci_files(magpie, store):
    root, env = store["root"], store["env"]
    files = {k: root / f"check.{k}" for k in ("xml", "md", "json", "csv")}
    proc = run(magpie, "results", "check", "--junit", files["xml"], "--github-summary", files["md"], "--bmf",
               files["json"], "--csv", files["csv"], env=env, check=False)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert "REGRESSION" in proc.stdout
    step = store["commits"][FAST_COMMITS]
    # JUnit: the throughput and TTFT test cases fail at the first slow commit.
    suite = ET.parse(files["xml"]).getroot()
    assert suite.tag == "testsuites" and int(suite.get("failures")) >= 2
    failed = {c.get("name"): c.find("failure") for c in suite.iter("testcase")}
    assert failed["request_throughput"] is not None and failed["ttft.median_ms"] is not None
    assert step[:10] in failed["request_throughput"].text
    # GitHub summary, Bencher Metric Format, CSV.
    md = files["md"].read_text()
    assert "regression" in md and step[:10] in md
    bmf = json.loads(files["json"].read_text())
    (name, measures), = bmf.items()
    assert measures["request_throughput"]["value"] > 0
    rows = list(csv.DictReader(files["csv"].open()))
    assert {(r["metric"], r["kind"], r["commit"]) for r in rows} >= {("request_throughput", "regression", step)}
    # After the step: nothing new, exit 0. JSON carries the same verdict.
    last = json.loads(run(magpie, "results", "history", the_series(magpie, store)["id"], "--json",
                          env=env).stdout)["points"][-1]["date"]
    quiet = run(magpie, "results", "check", "--since", last, "--json", env=env)
    assert json.loads(quiet.stdout)["regression"] is False
    bad = run(magpie, "results", "check", "--since", "last tuesday", env=env, check=False)
    assert bad.returncode == 2 and "7d" in bad.stderr
