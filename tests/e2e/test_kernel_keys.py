"""Kernel-evaluation flags that must reach what magpie runs: --latency-rep-ms
(and the YAML's latency.rep_ms) arrive in the testcase's environment as
MAGPIE_LATENCY_REP_MS, where a latency harness reads its repetition target.
The testcase is a real Python script that records its environment; no GPU."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def analyze(magpie, tmp_path, *extra):
    (tmp_path / "kernel.py").write_text("pass\n")
    record = tmp_path / "env.json"
    (tmp_path / "record_env.py").write_text(
        "import json, os\n"
        f"json.dump({{'rep_ms': os.environ.get('MAGPIE_LATENCY_REP_MS')}}, open({str(record)!r}, 'w'))\n")
    proc = subprocess.run([str(magpie), "analyze", str(tmp_path / "kernel.py"), "--type", "pytorch",
                           "--testcase", f"{sys.executable} {tmp_path / 'record_env.py'}", "--rounds", "1",
                           "-o", str(tmp_path / "out"), *extra], capture_output=True, text=True, timeout=300)
    return proc, (json.loads(record.read_text()) if record.exists() else None)


def test_latency_rep_ms_reaches_the_testcase(magpie, tmp_path):
    proc, seen = analyze(magpie, tmp_path, "--latency-rep-ms", "7.5")
    assert seen is not None, proc.stdout + proc.stderr
    assert seen["rep_ms"] == "7.5", seen
    # Without the flag: Magpie's default (latency.rep_ms 20).
    proc, seen = analyze(magpie, tmp_path)
    assert seen is not None and seen["rep_ms"] == "20", (seen, proc.stderr)
    # A value that cannot be a time is refused.
    proc, _ = analyze(magpie, tmp_path, "--latency-rep-ms", "-3")
    assert proc.returncode == 2, proc.stderr
