"""The kernel harness's correctness gate on CPU tensors
(python/magpie_bench/tests/test_check_cpu.py: mutation caught, poisoned
outputs, NaN/Inf counts, dtype tolerances) and its timing-integrity spot
checks against cheating candidates (test_integrity_cpu.py), run with the serving suite's venv
Python, which has torch; the system Python has none, so there it skips."""
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_env as env  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_correctness_checks_on_cpu_tensors():
    env.ensure_vllm()
    if subprocess.run([str(env.PY), "-c", "import pytest"], capture_output=True).returncode:
        subprocess.run([str(env.PY), "-m", "pip", "install", "-q", "pytest"], check=True)
    r = subprocess.run(
        [str(env.PY), "-m", "pytest", "-q", "-rs",
         str(REPO / "python" / "magpie_bench" / "tests" / "test_check_cpu.py"),
         str(REPO / "python" / "magpie_bench" / "tests" / "test_integrity_cpu.py"),
         str(REPO / "python" / "magpie_bench" / "tests" / "test_worker_cpu.py")],
        env={**os.environ, "PYTHONPATH": str(REPO / "python")}, capture_output=True, text=True)
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "passed" in summary and "skipped" not in summary, summary
