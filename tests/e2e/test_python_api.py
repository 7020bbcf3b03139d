"""The Python API (`import Magpie`; docs/PYTHON_API.md) as a user gets it: the
wheel that .ci/run builds into build-wheel/dist/, installed into a fresh venv
with no index. pandas and NumPy come from a cached venv of their own
(~/.cache/magpie-e2e/pyapi-venv), joined to the fresh venv by a .pth file, so
the wheel itself is installed exactly as `pip install magpie-*.whl` does.

Every call runs in a subprocess of that venv's Python and is checked against
the wheel's own `magpie` binary on the same input: the DataFrames against the
CLI's CSV (numbers formatted as the CSV writes them), the errors against the
CLI's exit code and message.
"""
import csv
import gzip
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO_ROOT, shared_traces
from test_results_cli import serving_workspace
from test_wheel import built_wheel

pytestmark = pytest.mark.e2e

CACHE = Path(os.environ.get("MAGPIE_E2E_CACHE", Path.home() / ".cache" / "magpie-e2e"))
DEPS_VENV = CACHE / "pyapi-venv"
DEPS = ["numpy", "pandas"]
# The notebook's own needs (examples/notebooks), in a cached venv of their own.
NOTEBOOK_VENV = CACHE / "notebook-venv"
NOTEBOOK_DEPS = ["nbclient", "nbformat", "ipykernel", "matplotlib", "pandas"]
SAMPLE = REPO_ROOT / "examples" / "traces"
SHARED = shared_traces()
SENDRECV = sorted((SHARED / "public").glob("hta__sendrecv-rank-*.json.gz"))


def _deps_site_packages(venv: Path = DEPS_VENV, deps: list = DEPS, modules: str = "numpy, pandas") -> Path:
    """DEPS for this Python, installed once into the cached VENV (MODULES import from it)."""
    py = venv / "bin" / "python"
    probe = f"import {modules}, sysconfig; print(sysconfig.get_paths()['purelib'])"
    r = subprocess.run([py, "-c", probe], capture_output=True, text=True) if py.exists() else None
    if r is None or r.returncode != 0:
        CACHE.mkdir(parents=True, exist_ok=True)
        log = CACHE / f"{venv.name}-install.log"
        with open(log, "a") as f:
            subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True, stdout=f, stderr=f)
            ok = subprocess.run([py, "-m", "pip", "install", "-q", *deps], stdout=f, stderr=subprocess.STDOUT)
        r = subprocess.run([py, "-c", probe], capture_output=True, text=True)
        if ok.returncode != 0 or r.returncode != 0:
            pytest.fail(f"cannot install {' '.join(deps)} into {venv}; see {log}")
    return Path(r.stdout.strip())


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    if "MAGPIE_PYAPI_VENV" in os.environ:
        # A developer's venv with Magpie importable (the extension built in build/
        # with -DMAGPIE_BUILD_PYTHON=ON, docs/PYTHON_API.md "Tests"): for iterating
        # only; CI runs against the wheel.
        return Path(os.environ["MAGPIE_PYAPI_VENV"])
    wheel = built_wheel()  # skips, saying how to build one, when there is none
    deps = _deps_site_packages()
    root = tmp_path_factory.mktemp("pyapi") / "venv"
    subprocess.run([sys.executable, "-m", "venv", root], check=True)
    subprocess.run([root / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel],
                   check=True)
    site = subprocess.run([root / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "magpie_test_deps.pth").write_text(f"{deps}\n")
    return root


@pytest.fixture
def env(tmp_path) -> dict:
    """The results store in tmp_path: neither face writes the user's."""
    return dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))


def api(venv: Path, code: str, env: dict, cwd: Path, timeout: int = 300) -> dict:
    """Runs CODE in the venv's Python; CODE sets `out` (JSON-able), returned here."""
    script = "import json, Magpie\n" + textwrap.dedent(code) + "\nprint(json.dumps(out))\n"
    r = subprocess.run([venv / "bin" / "python", "-c", script], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def cli(venv: Path, env: dict, cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([venv / "bin" / "magpie", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


# The DataFrame, its numbers written as gap_analysis.csv writes them, beside
# the CLI's CSV read by pandas as text: equal cell for cell.
COMPARE_TO_CSV = """
import pandas as pd
r = Magpie.gap_analysis(TRACE_DIR, top_k=TOP_K, output_dir="py")
df = r.kernels.to_pandas()
cli = pd.read_csv(CLI_CSV, dtype=str, keep_default_na=False)
three = {"Median (us)", "Min (us)", "Max (us)", "Std (us)"}
def text(col, v):
    if df[col].dtype.kind == "f":
        return f"{v:.3f}" if col in three else f"{v:.2f}"
    return str(v)
mine = [[text(c, v) for c, v in zip(df.columns, row)] for row in df.itertuples(index=False)]
out = {"columns": list(df.columns), "cli_columns": list(cli.columns), "rows": mine,
       "cli_rows": cli.values.tolist(), "dtypes": {c: df[c].dtype.kind for c in df.columns},
       "ranks": r.ranks.to_pandas().to_dict("list"), "report": r.report, "csv": r.csv}
"""


def compare_gap_analysis(venv, env, tmp_path, trace_dir: Path, top_k: int) -> dict:
    r = cli(venv, env, tmp_path, "benchmark", "--trace-dir", trace_dir, "--top-k", top_k, "-o", "cli")
    assert r.returncode == 0, r.stderr
    cli_csv = tmp_path / "cli" / "gap_analysis" / "gap_analysis.csv"
    code = (f"TRACE_DIR = {str(trace_dir)!r}\nTOP_K = {top_k}\nCLI_CSV = {str(cli_csv)!r}\n" + COMPARE_TO_CSV)
    out = api(venv, code, env, tmp_path)
    assert out["columns"] == out["cli_columns"]
    assert out["rows"], "no kernels: the comparison would prove nothing"
    assert out["rows"] == out["cli_rows"]
    # Numbers are numbers, not text through a CSV.
    assert out["dtypes"]["Calls"] == "i" and out["dtypes"]["Avg time (us)"] == "f"
    # The Python face wrote the same CSV as the CLI.
    assert (tmp_path / out["csv"]).read_text() == cli_csv.read_text()
    return out


def test_gap_analysis_dataframe_equals_the_cli_csv(venv, env, tmp_path):
    out = compare_gap_analysis(venv, env, tmp_path, SAMPLE, 20)
    assert len(out["rows"]) == 20


@pytest.mark.skipif(len(SENDRECV) < 2, reason=f"no hta__sendrecv rank pair under {SHARED}/public")
def test_gap_analysis_of_two_ranks_matches_the_cli(venv, env, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    for p in SENDRECV:
        shutil.copy(p, traces / p.name)
    out = compare_gap_analysis(venv, env, tmp_path, traces, 50)
    cli_json = json.loads((tmp_path / "cli" / "gap_analysis" / "gap_analysis.json").read_text())
    ranks = out["ranks"]
    assert ranks["rank"] == [0, 1]
    assert [r["rank"] for r in cli_json["ranks"]] == ranks["rank"]
    for i, r in enumerate(cli_json["ranks"]):
        for key in ("span_us", "busy_us", "idle_us", "computation_us"):
            assert ranks[key][i] == pytest.approx(r["timeline"][key], abs=0.01), key


def _gpu_events(path: Path) -> list:
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"
            and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def test_load_trace_tables(venv, env, tmp_path):
    trace = next(SAMPLE.glob("*.json.gz"))
    out = api(venv, f"""
        t = Magpie.load_trace({str(trace)!r})
        k = t.kernels.to_pandas()
        o = t.ops.to_pandas()
        out = {{"names": k["name"].tolist(), "ts_ns": k["ts_ns"].tolist(), "dur_ns": k["dur_ns"].tolist(),
               "kernel_dtypes": [k["ts_ns"].dtype.kind, k["dur_ns"].dtype.kind], "ops": len(o),
               "op_names": sorted(set(o["name"])), "timeline": t.timeline.to_pandas().iloc[0].to_dict(),
               "format": t.format}}
    """, env, tmp_path)
    events = sorted(_gpu_events(trace), key=lambda e: (e["ts"], e["name"]))
    rows = sorted(zip(out["ts_ns"], out["names"], out["dur_ns"]))
    assert len(rows) == len(events) > 0
    assert [n for _, n, _ in rows] == [e["name"] for e in events]
    assert [ts for ts, _, _ in rows] == [round(e["ts"] * 1000) for e in events]
    assert [d for _, _, d in rows] == [round(e["dur"] * 1000) for e in events]
    assert out["kernel_dtypes"] == ["i", "i"] and out["format"] == "kineto"
    assert out["ops"] > 0 and "aten::mm" in out["op_names"]
    # The timeline is gap analysis's for the same trace (the CLI's gap_analysis.json).
    r = cli(venv, env, tmp_path, "benchmark", "--trace-dir", SAMPLE, "-o", "cli")
    assert r.returncode == 0, r.stderr
    timeline = json.loads((tmp_path / "cli" / "gap_analysis" / "gap_analysis.json").read_text())["ranks"][0]["timeline"]
    for key in ("span_us", "busy_us", "idle_us", "computation_us"):
        assert out["timeline"][key] == pytest.approx(timeline[key], abs=0.01), key


def _bad_inputs(tmp_path: Path) -> dict:
    truncated = tmp_path / "truncated.json.gz"
    truncated.write_bytes(next(SAMPLE.glob("*.json.gz")).read_bytes()[:20000])
    return {"missing": tmp_path / "no-such-dir", "truncated": truncated}


@pytest.mark.parametrize("case", ["missing", "truncated"])
def test_errors_carry_the_cli_exit_code_and_message(venv, env, tmp_path, case):
    bad = _bad_inputs(tmp_path)[case]
    r = cli(venv, env, tmp_path, "tracelens", bad, "-o", "cli")
    assert r.returncode not in (0, 1), r.stderr  # a specific kind (3 not found, 5 bad format)
    out = api(venv, f"""
        try:
            Magpie.tracelens({str(bad)!r}, output_dir="py")
            out = None
        except Magpie.MagpieError as e:
            out = {{"exit_code": e.exit_code, "message": str(e), "kind": e.kind}}
    """, env, tmp_path)
    assert out, "no MagpieError"
    assert out["exit_code"] == r.returncode
    assert f"error: {out['message']}\n" in r.stderr
    assert str(bad) in out["message"]


def test_load_trace_of_a_missing_file(venv, env, tmp_path):
    out = api(venv, """
        try:
            Magpie.load_trace("no-such-trace.json.gz")
            out = None
        except Magpie.MagpieError as e:
            out = {"exit_code": e.exit_code, "message": str(e)}
    """, env, tmp_path)
    assert out and out["exit_code"] == 3 and "no-such-trace.json.gz" in out["message"]


def test_gil_is_released_while_gap_analysis_runs(venv, env, tmp_path):
    """A Python thread counts while the analysis runs: the counter read by the
    first and the last progress callback (both inside the call) must differ.
    Were the GIL held by the call, the job's callbacks (which take the GIL from
    the job's thread) could not run at all: the call would hang, and time out."""
    out = api(venv, f"""
        import threading
        count = 0
        seen = []
        stop = threading.Event()
        def counter():
            global count
            while not stop.is_set():
                count += 1
        t = threading.Thread(target=counter)
        t.start()
        try:
            Magpie.gap_analysis({str(SAMPLE)!r}, output_dir="py", progress=lambda done, total, msg: seen.append(count))
        finally:
            stop.set()
            t.join()
        out = {{"seen": seen}}
    """, env, tmp_path, timeout=120)
    assert len(out["seen"]) >= 2, out
    assert out["seen"][-1] - out["seen"][0] > 0, out


@pytest.fixture(scope="module")
def large_trace(tmp_path_factory) -> Path:
    """A folder holding one ~220 MB Kineto trace: bench/data/large_trace.json.gz
    when the benchmark made it, else made the same way (bench/make_large_trace.py,
    the shipped trace replicated with fresh ids) for this test."""
    folder = tmp_path_factory.mktemp("large")
    made = REPO_ROOT / "bench" / "data" / "large_trace.json.gz"
    if not made.is_file():
        source = next(SAMPLE.glob("*.json.gz"))
        subprocess.run([sys.executable, REPO_ROOT / "bench" / "make_large_trace.py", "--source", source,
                        "--out-dir", folder / "made"], check=True, capture_output=True, timeout=900)
        made = folder / "made" / "large_trace.json.gz"
    (folder / "trace").mkdir()
    os.symlink(made, folder / "trace" / "large_trace.json.gz")
    return folder / "trace"


# The call runs in a child Python that prints each progress step as a JSON
# line; the test sends SIGINT (Ctrl-C) after the first one and reads how the
# call ended and which steps it saw.
CANCELLED_CALL = """
import json, sys, Magpie
def progress(done, total, message):
    print(json.dumps({"done": done, "total": total, "message": message}), flush=True)
try:
    CALL
    out = {"outcome": "returned"}
except KeyboardInterrupt:
    out = {"outcome": "KeyboardInterrupt"}
except Magpie.MagpieError as e:
    out = {"outcome": "MagpieError", "exit_code": e.exit_code, "message": str(e)}
print(json.dumps(out), flush=True)
"""

CALLS = {
    "gap_analysis": "Magpie.gap_analysis(TRACE_DIR, output_dir='py', progress=progress)",
    "tracelens": "Magpie.tracelens(TRACE, output_dir='py', progress=progress)",
    "load_trace": "Magpie.load_trace(TRACE, progress=progress)",
}


def interrupted(argv: list, env: dict, cwd: Path, stream: str, first) -> tuple:
    """Runs ARGV, sends SIGINT once a line of its STREAM ("stdout" or "stderr")
    passes FIRST; returns (returncode, the lines of that stream, the other stream)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    watched = p.stdout if stream == "stdout" else p.stderr
    other = p.stderr if watched is p.stdout else p.stdout
    lines = []
    try:
        for line in watched:
            lines.append(line.rstrip("\n"))
            if first(line):
                p.send_signal(signal.SIGINT)
                break
        lines += [line.rstrip("\n") for line in watched]
        rest = other.read()
        p.wait(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, lines, rest


@pytest.mark.parametrize("call", sorted(CALLS))
def test_ctrl_c_stops_a_long_call_with_keyboard_interrupt(venv, env, tmp_path, large_trace, call):
    """Ctrl-C while a call reads the 220 MB trace: KeyboardInterrupt, and the job
    stopped where it was. A call that ran to the end (the trace jobs before they
    checked the cancel flag) reports every chunk and then the trace as loaded;
    a cancelled one saw only part of the chunks, and wrote no report."""
    code = CANCELLED_CALL.replace("CALL", CALLS[call])
    code = f"TRACE_DIR = {str(large_trace)!r}\nTRACE = {str(next(large_trace.iterdir()))!r}\n" + code
    # SIGINT after the first progress step.
    rc, lines, err = interrupted([venv / "bin" / "python", "-c", code], env, tmp_path, "stdout", lambda line: True)
    assert rc == 0, err
    steps, out = [json.loads(x) for x in lines[:-1]], json.loads(lines[-1])
    assert out == {"outcome": "KeyboardInterrupt"}, (out, err)
    # A run to the end ends its steps with "loaded ..." (gap_analysis, tracelens) or "read ..." (load_trace).
    assert steps and all(s["message"].startswith("reading ") for s in steps), steps
    assert not (tmp_path / "py" / "gap_analysis").exists() and not (tmp_path / "py" / "tracelens" /
                                                                      "tracelens_manifest.json").exists()


def test_ctrl_c_stops_the_cli_too(venv, env, tmp_path, large_trace):
    """The same cancel flag under `magpie benchmark --trace-dir`: Ctrl-C during
    the read ends the run with exit 130, no report, and the run recorded as
    cancelled in the results store."""
    argv = [venv / "bin" / "magpie", "--progress", "benchmark", "--trace-dir", large_trace, "-o", "cli"]
    rc, lines, _ = interrupted(list(map(str, argv)), env, tmp_path, "stderr",
                               lambda line: "large_trace" in line and "MB" in line)  # the read's first line
    assert rc == 130, lines
    assert any("cancelled" in x for x in lines), lines
    assert not any(x.startswith("loaded") or "loaded large_trace" in x for x in lines), lines
    assert not (tmp_path / "cli" / "gap_analysis").exists()
    runs = json.loads(cli(venv, env, tmp_path, "results", "list", "--json").stdout)
    assert [r["status"] for r in runs] == ["cancelled"]


# Magpie.results beside `magpie results`: a private store with gap analyses
# recorded by both faces, and two serving workspaces in the layout `magpie
# benchmark vllm` leaves (test_results_cli.serving_workspace: the candidate's
# requests take 60% of the baseline's time).
RESULTS_CODE = """
import pandas as pd
runs = Magpie.results.list(limit=0)
by_id = Magpie.results.list(kind="gap_analysis", limit=2)
ops = Magpie.results.diff(GAP_A, GAP_B)
ops_by_id = Magpie.results.diff(1, 2).to_pandas()
ops_by_id.columns = ops.to_pandas().columns  # labelled #1, #2 rather than by folder
rep = Magpie.results.diff(BASE, FAST, labels=["base", "fast"])
df = ops.to_pandas()
def text(col, v):
    if col.endswith(" calls"):
        return str(int(v))
    if df[col].dtype.kind == "f":
        if v != v:
            return ""
        return f"{v:.3f}" if col.endswith(("time_us", "delta_us")) else f"{v:.2f}"
    return str(v)
cells = [[text(c, v) for c, v in zip(df.columns, row)] for row in df.itertuples(index=False)]
rdf = rep.to_pandas()
out = {"runs": runs.records, "runs_df": len(runs.to_pandas()), "by_id": by_id.records,
       "ops_kind": ops.kind, "ops_columns": list(df.columns), "ops_rows": cells,
       "ops_by_id": ops_by_id.equals(df), "report": rep.report, "report_rows": len(rdf),
       "metrics": sorted(set(rdf["metric"])), "regression": rep.regression}
"""


def test_results_list_and_diff_equal_the_cli(venv, env, tmp_path):
    for name in ("gap_a", "gap_b"):
        r = cli(venv, env, tmp_path, "benchmark", "--trace-dir", SAMPLE, "-o", name)
        assert r.returncode == 0, r.stderr
    api(venv, f"Magpie.gap_analysis({str(SAMPLE)!r}, output_dir='gap_py')\nout = 0", env, tmp_path)
    base = serving_workspace(tmp_path / "benchmark_vllm_20260101_000000", 1.0, 1)
    fast = serving_workspace(tmp_path / "benchmark_vllm_20260102_000000", 0.6, 2)
    gap_a, gap_b = (tmp_path / n / "gap_analysis" for n in ("gap_a", "gap_b"))
    code = (f"GAP_A, GAP_B = {str(gap_a)!r}, {str(gap_b)!r}\nBASE, FAST = {str(base)!r}, {str(fast)!r}\n"
            + RESULTS_CODE)
    out = api(venv, code, env, tmp_path)

    runs = json.loads(cli(venv, env, tmp_path, "results", "list", "--json", "--limit", "0").stdout)
    assert out["runs"] == runs and len(runs) == 3 and out["runs_df"] == 3
    assert [r["face"] for r in runs] == ["python", "cli", "cli"]
    limited = cli(venv, env, tmp_path, "results", "list", "--json", "--kind", "gap_analysis", "--limit", "2")
    assert out["by_id"] == json.loads(limited.stdout)

    r = cli(venv, env, tmp_path, "results", "diff", gap_a, gap_b)
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert out["ops_kind"] == "ops" and out["ops_columns"] == rows[0]
    assert out["ops_rows"] and out["ops_rows"] == rows[1:]
    assert out["ops_by_id"], "diff(1, 2) by run id differs from the diff of their folders"

    r = cli(venv, env, tmp_path, "results", "diff", base, fast, "--label", "base,fast", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert out["report"] == json.loads(r.stdout)
    # The candidate is faster: TTFT, TPOT, ITL, E2EL and throughput rows, verdicts from the bootstrap.
    assert out["report_rows"] == sum(len(c["metrics"]) for c in out["report"]["serving"]) > 0
    assert "ttft_mean_ms" in out["metrics"] and out["regression"] is False


@pytest.mark.parametrize("call, argv", [
    ("Magpie.results.diff(999, 1)", ["results", "diff", "999", "1"]),
    ("Magpie.results.diff('no-such-dir', 'no-such-dir-2')", ["results", "diff", "no-such-dir", "no-such-dir-2"]),
])
def test_results_errors_carry_the_cli_exit_code_and_message(venv, env, tmp_path, call, argv):
    cli(venv, env, tmp_path, "benchmark", "--trace-dir", SAMPLE, "-o", "gap")  # a store with run 1
    r = cli(venv, env, tmp_path, *argv)
    assert r.returncode not in (0, 1), r.stderr
    out = api(venv, f"""
        try:
            {call}
            out = None
        except Magpie.MagpieError as e:
            out = {{"exit_code": e.exit_code, "message": str(e)}}
    """, env, tmp_path)
    assert out and out["exit_code"] == r.returncode
    assert f"error: {out['message']}\n" in r.stderr


def test_results_list_of_an_unknown_kind_is_a_usage_error(venv, env, tmp_path):
    out = api(venv, """
        try:
            Magpie.results.list(kind="benchmarks")
            out = None
        except Magpie.MagpieError as e:
            out = {"exit_code": e.exit_code, "message": str(e)}
    """, env, tmp_path)
    assert out and out["exit_code"] == 2 and "benchmarks" in out["message"]


# Magpie.compare beside `magpie compare`: the PyTorch GELU pair of
# examples/kernel_speed, whose inputs fall back to CPU tensors, run by the
# serving suite's venv Python (it has torch; MAGPIE_PYTHON names it to both faces).
KERNEL_PAIR = REPO_ROOT / "examples" / "kernel_speed" / "compare.yaml"


@pytest.fixture(scope="module")
def torch_env():
    import serving_env
    serving_env.ensure_vllm()
    return {"MAGPIE_PYTHON": str(serving_env.PY)}


COMPARE_CODE = """
r = Magpie.compare(CONFIG, no_perf=NO_PERF, output_dir="py")
v = r.verdicts.to_pandas()
out = {"exit_code": r.exit_code, "all_correct": r.all_correct, "verdicts": r.report["results"]["verdicts"],
       "table": v.where(v.notna(), None).to_dict("records"), "not_measured": r.performance_not_measured,
       "console": r.console, "report_path": r.report_path}
"""


@pytest.mark.parametrize("no_perf", [True, False], ids=["no-perf", "timed-where-possible"])
def test_compare_gives_what_the_cli_gives(venv, env, tmp_path, torch_env, no_perf):
    env = {**env, **torch_env}
    argv = ["compare", "-k", KERNEL_PAIR, "-o", "cli"] + (["--no-perf"] if no_perf else [])
    r = cli(venv, env, tmp_path, *argv)
    assert r.returncode in (0, 8), r.stdout + r.stderr  # 8: correct, but no GPU to time on
    cli_report = json.loads(next((tmp_path / "cli").glob("compare_*/compare_report.json")).read_text())
    out = api(venv, f"CONFIG = {str(KERNEL_PAIR)!r}\nNO_PERF = {no_perf}\n" + COMPARE_CODE, env, tmp_path)
    assert out["exit_code"] == r.returncode and out["all_correct"]
    assert bool(out["not_measured"]) == (r.returncode == 8)
    if no_perf:
        assert r.returncode == 0
    # Same verdict rows (timings differ run to run: compared when not timed).
    cli_verdicts = cli_report["results"]["verdicts"]
    assert [v["kernel_id"] for v in out["verdicts"]] == [v["kernel_id"] for v in cli_verdicts] == \
        ["gelu_torch", "gelu_twin"]
    if r.returncode != 0 or no_perf:
        assert out["verdicts"] == cli_verdicts
    assert [row["kernel_id"] for row in out["table"]] == ["gelu_torch", "gelu_twin"]
    assert out["table"][0]["role"] == "baseline"
    assert [row["eligible"] for row in out["table"]] == [v["eligible"] for v in out["verdicts"]]
    assert Path(out["report_path"]).is_file()


def test_compare_errors_carry_the_cli_exit_code_and_message(venv, env, tmp_path, torch_env):
    one = tmp_path / "one.yaml"
    one.write_text("kernels:\n  - id: gelu_torch\n    type: pytorch\n"
                   "    bench_target: {module: gelu_torch, callable: gelu, get_inputs: get_inputs}\n")
    env = {**env, **torch_env}
    r = cli(venv, env, tmp_path, "compare", "-k", one, "--no-perf", "-o", "cli")
    assert r.returncode == 1 and "at least 2 kernels" in r.stderr, r.stderr  # refused (kRejected): exit 1
    out = api(venv, f"""
        try:
            Magpie.compare({str(one)!r}, no_perf=True, output_dir="py")
            out = None
        except Magpie.MagpieError as e:
            out = {{"exit_code": e.exit_code, "message": str(e)}}
    """, env, tmp_path)
    assert out and out["exit_code"] == r.returncode
    assert f"error: {out['message']}\n" in r.stderr


NOTEBOOK = REPO_ROOT / "examples" / "notebooks" / "trace_analysis.ipynb"


def test_notebook_runs_and_shows_the_cli_numbers(venv, env, tmp_path):
    """examples/notebooks/trace_analysis.ipynb executed with nbclient by the
    wheel's Python (its kernel is that Python): every cell runs, the top-kernels
    table is the CLI's gap_analysis.csv, the roofline table is there and the
    plot is rendered as a PNG."""
    nb_site = _deps_site_packages(NOTEBOOK_VENV, NOTEBOOK_DEPS, "nbclient, nbformat, ipykernel, matplotlib")
    site = subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    nb_env = dict(env, PYTHONPATH=str(nb_site), MPLBACKEND="module://matplotlib_inline.backend_inline")
    out = api(venv, f"""
        import nbformat
        from nbclient import NotebookClient
        nb = nbformat.read({str(NOTEBOOK)!r}, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={{"metadata": {{"path": {str(NOTEBOOK.parent)!r}}}}}).execute()
        cells = []
        for c in nb.cells:
            if c.cell_type != "code":
                continue
            texts, images = [], 0
            for o in c.outputs:
                data = o.get("data", {{}})
                texts.append(data.get("text/plain", "") + o.get("text", ""))
                images += "image/png" in data
                assert o.output_type != "error", o
            cells.append({{"text": "\\n".join(texts), "images": images}})
        out = {{"cells": cells}}
    """, nb_env, tmp_path, timeout=900)
    assert site  # the wheel's venv ran it
    cells = out["cells"]
    r = cli(venv, env, tmp_path, "benchmark", "--trace-dir", SAMPLE, "--top-k", "10", "-o", "cli")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "cli" / "gap_analysis" / "gap_analysis.csv")))
    top = cells[1]["text"]
    assert rows[0]["Name"][:20] in top and rows[0]["Calls"] in top, top
    assert "roofline_bound" in cells[3]["text"], cells[3]
    assert cells[-1]["images"] == 1, cells[-1]


def test_launcher_still_runs_the_binary(venv, env, tmp_path):
    r = subprocess.run([venv / "bin" / "python", "-m", "Magpie", "--version"], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("magpie "), r.stderr


# --- Magpie.benchmark against the timed stub -------------------------------------------
#
# `magpie benchmark vllm --endpoint URL` and Magpie.benchmark(framework="vllm",
# endpoint=URL) drive the same workload at the timed stub
# (tests/e2e/timed_stream_server.py: a fixed token schedule, so both runs send
# the same requests and get the same tokens). The API's tables are checked
# against the CLI's files: the counts and tokens are equal; measured times
# (TTFT, E2EL) are each face's own, so the API's tables are checked against
# its own benchmark_report.json and requests.jsonl, where every figure is.
WORKLOAD = {"concurrency": 2, "num_prompts": 6, "input_len": 16, "output_len": 4, "range_ratio": 0,
            "token_id_max": 4000, "warmups": 1}


@pytest.fixture
def timed_stub(tmp_path):
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parent / "timed_stream_server.py"),
                             "--ttft-ms", "40", "--itl-ms", "10", "--words-are-tokens"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("port "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


BENCHMARK_CODE = """
import pandas as pd
steps = []
r = Magpie.benchmark(framework="vllm", endpoint=URL, model="timed-stub", output_dir="py",
                     progress=lambda done, total, msg: steps.append(msg), **WORKLOAD)
cases, requests, itls = r.cases.to_pandas(), r.requests.to_pandas(), r.itls.to_pandas()
out = {"success": r.success, "status": r.status, "exit_code": r.exit_code, "workspace": r.workspace,
       "report": r.report, "console": r.console, "run_id": r.run_id, "steps": steps,
       "cases": cases.to_dict("records"), "requests": requests.to_dict("records"),
       "itls": itls.to_dict("records"), "dtypes": {c: requests[c].dtype.kind for c in requests.columns}}
"""


def test_benchmark_tables_give_what_the_cli_gives(venv, env, tmp_path, timed_stub):
    args = ["benchmark", "vllm", "--endpoint", timed_stub, "--model", "timed-stub", "-o", "cli"]
    for k, v in WORKLOAD.items():
        args += ["--" + k.replace("_", "-"), v]
    r = cli(venv, env, tmp_path, *args)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ws_cli = next((tmp_path / "cli").glob("benchmark_vllm_*"))
    cli_report = json.loads((ws_cli / "benchmark_report.json").read_text())
    out = api(venv, f"URL = {timed_stub!r}\nWORKLOAD = {WORKLOAD!r}\n" + BENCHMARK_CODE, env, tmp_path)
    assert out["success"] and out["status"] == "success" and out["exit_code"] == 0, out["report"].get("errors")
    assert out["run_id"] > 0 and out["steps"], out["steps"]
    ws = Path(out["workspace"])
    assert ws.parent == tmp_path / "py" and (ws / "benchmark_report.json").is_file()
    # The report returned is the one written, and holds the workload's counts as the CLI's does.
    assert out["report"] == json.loads((ws / "benchmark_report.json").read_text())
    for report in (cli_report, out["report"]):
        assert report["throughput"]["completed_requests"] == 6 and report["throughput"]["total_output_tokens"] == 24
    assert out["console"] == (ws / "summary.txt").read_text()

    # cases: one row, its figures the report's (the API's own run; latencies are measured per run).
    [case] = out["cases"]
    [report_case] = out["report"]["cases"]
    assert case["case"] == report_case["label"] and case["concurrency"] == 2 and case["num_prompts"] == 6
    assert (case["completed"], case["failed"], case["total_output_tokens"]) == (6, 0, 24)
    lat = out["report"]["latency"]
    for metric in ["ttft", "tpot", "itl", "e2el"]:
        assert case[f"{metric}_mean_ms"] == pytest.approx(lat[metric]["mean_ms"], rel=1e-9), metric
        assert case[f"{metric}_p99_ms"] == pytest.approx(lat[metric]["p99_ms"], rel=1e-9), metric
    # The stub's schedule: TTFT >= 40 ms, ITL >= 10 ms (later on a loaded machine, never earlier).
    assert case["ttft_median_ms"] >= 40 and case["itl_median_ms"] >= 10

    # requests: requests.jsonl's records (the measured ones: warm-ups are not logged), numbers as numbers.
    lines = [json.loads(x) for x in (ws / "requests.jsonl").read_text().splitlines()]
    by_index = {x["index"]: x for x in lines}
    assert len(out["requests"]) == len(lines) == 6
    assert [r["index"] for r in out["requests"]] == sorted(by_index)
    for row in out["requests"]:
        rec = by_index[row["index"]]
        for key in ["success", "prompt_len", "output_tokens", "output_chars", "ttft_s", "e2el_s", "start_s"]:
            assert row[key] == rec[key], (key, row, rec)
        assert row["itls"] == len(rec["itl_s"]) == 3
    assert out["dtypes"]["ttft_s"] == "f" and out["dtypes"]["output_tokens"] == "i"
    # ...and the CLI's requests.jsonl has the same requests, tokens and lengths.
    cli_lines = sorted((json.loads(x) for x in (ws_cli / "requests.jsonl").read_text().splitlines()),
                       key=lambda x: x["index"])
    keep = ["index", "success", "prompt_len", "expected_output_len", "output_tokens", "output_chars"]
    assert [[x[k] for k in keep] for x in cli_lines] == [[row[k] for k in keep] for row in out["requests"]]
    # itls: one row per inter-token latency, the records' own.
    assert [(x["index"], x["chunk"], x["itl_s"]) for x in out["itls"]] == \
        [(row["index"], k, v) for row in out["requests"] for k, v in enumerate(by_index[row["index"]]["itl_s"])]


def test_benchmark_errors_carry_the_cli_exit_code_and_message(venv, env, tmp_path):
    """No model and no config: the CLI refuses (exit 1) before any workspace;
    an unknown setting is a usage error (exit 2), as an unknown flag is."""
    r = cli(venv, env, tmp_path, "benchmark", "vllm", "-o", "cli")
    assert r.returncode == 1, r.stderr
    out = api(venv, """
        got = []
        for kwargs in [{"framework": "vllm"}, {"framework": "vllm", "model": "m", "concurency": 2},
                       {"framework": "vllm", "model": "m", "warmups": "two"}]:
            try:
                Magpie.benchmark(output_dir="py", **kwargs)
                got.append(None)
            except Magpie.MagpieError as e:
                got.append({"exit_code": e.exit_code, "message": str(e)})
        out = got
    """, env, tmp_path)
    assert out[0]["exit_code"] == 1 and out[0]["message"] in r.stderr, (out, r.stderr)
    assert out[1]["exit_code"] == 2 and "concurency" in out[1]["message"], out
    assert out[2]["exit_code"] == 2 and "warmups='two'" in out[2]["message"], out
    assert not (tmp_path / "py").exists()


def test_ctrl_c_stops_a_benchmark_and_keeps_what_was_measured(venv, env, tmp_path):
    """A slow stub (1 s to the first token, then a token every 100 ms) and 40
    requests of 20 tokens, 2 at a time: about 50 s. SIGINT after the first
    finished request: KeyboardInterrupt within seconds, the run recorded as
    cancelled, and the requests measured so far kept in the workspace."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parent / "timed_stream_server.py"),
                             "--ttft-ms", "1000", "--itl-ms", "100", "--words-are-tokens"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{int(proc.stdout.readline().split()[1])}"
        call = (f"Magpie.benchmark(framework='vllm', endpoint={url!r}, model='timed-stub', output_dir='py', "
                "concurrency=2, num_prompts=40, input_len=16, output_len=20, range_ratio=0, token_id_max=4000, "
                "warmups=0, progress=progress)")
        code = CANCELLED_CALL.replace("CALL", call)
        # SIGINT once a request has finished: the progress line counts them ("case 1/1: 3/40 done ...").
        rc, lines, err = interrupted([venv / "bin" / "python", "-c", code], env, tmp_path, "stdout",
                                     lambda line: re.search(r'"case 1/1: [1-9]\d*/40 done', line) is not None)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert rc == 0, err
    out = json.loads(lines[-1])
    assert out == {"outcome": "KeyboardInterrupt"}, (out, lines[-5:], err[-2000:])
    ws = next((tmp_path / "py").glob("benchmark_vllm_*"))
    kept = [json.loads(x) for x in (ws / "requests.jsonl").read_text().splitlines()]
    assert 1 <= sum(x["success"] for x in kept) < 40, kept
    runs = json.loads(cli(venv, env, tmp_path, "results", "list", "--json").stdout)
    assert [(r["kind"], r["status"]) for r in runs] == [("benchmark", "cancelled")], runs


def test_benchmark_from_a_yaml_config_as_the_cli(venv, env, tmp_path, timed_stub):
    """A benchmark YAML (one misspelt key) and an endpoint: the API resolves it
    as `magpie benchmark -b CONFIG --endpoint URL` does (the same workload, the
    same warning); under strict it refuses it as --strict does (exit 2, the same message)."""
    config = tmp_path / "bench.yaml"
    config.write_text("benchmark:\n  framework: vllm\n  model: timed-stub\n  run_mode: local\n"
                      "  envs: {CONC: 2, ISL: 8, OSL: 4, RANDOM_RANGE_RATIO: 0, NUM_PROMPTS: 6}\n"
                      "  profiler: {torch_profiler: {enabled: false}}\n  concurrancy: 4\n")
    r = cli(venv, env, tmp_path, "benchmark", "-b", config, "--endpoint", timed_stub, "-o", "cli")
    assert r.returncode == 0, r.stderr[-2000:]
    strict = cli(venv, env, tmp_path, "benchmark", "-b", config, "--endpoint", timed_stub, "--strict", "-o", "cli2")
    assert strict.returncode == 2, strict.stderr
    cli_report = json.loads(next((tmp_path / "cli").glob("benchmark_vllm_*/benchmark_report.json")).read_text())
    out = api(venv, f"""
        r = Magpie.benchmark({str(config)!r}, endpoint={timed_stub!r}, output_dir="py")
        try:
            Magpie.benchmark({str(config)!r}, endpoint={timed_stub!r}, output_dir="py2", strict=True)
            refused = None
        except Magpie.MagpieError as e:
            refused = {{"exit_code": e.exit_code, "message": str(e)}}
        out = {{"success": r.success, "warnings": r.warnings, "cases": r.cases.to_pandas().to_dict("records"),
                "refused": refused}}
    """, env, tmp_path)
    assert out["success"]
    [case] = out["cases"]
    [cli_case] = cli_report["cases"]
    assert (case["case"], case["concurrency"], case["input_len"], case["output_len"], case["completed"]) == \
        (cli_case["label"], 2, 8, 4, 6)
    assert any("concurrancy" in w for w in out["warnings"]), out["warnings"]
    assert any("concurrancy" in w for w in out["warnings"] if f"warning: {w}" in r.stderr), (out["warnings"], r.stderr)
    assert out["refused"]["exit_code"] == 2 and out["refused"]["message"] in strict.stderr, (out, strict.stderr)
    assert not (tmp_path / "py2").exists()
