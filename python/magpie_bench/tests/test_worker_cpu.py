"""The persistent harness worker (worker.py) as a real process on CPU tensors:
its FIFO protocol, and that reuse does not let one request see another's
inputs or outputs. Skipped where torch is missing (CI's system Python);
tests/e2e/test_harness_torch_cpu.py runs this file with the serving venv."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

PYTHON_DIR = Path(__file__).resolve().parents[2]

SPY = '''import json, os, torch
SEEN = []  # every input and output of every call, kept alive: no address can be recycled
def get_inputs():
    return [torch.randn(32, 16)]
def softmax(x):
    out = torch.softmax(x, dim=-1)
    shared = [i for i, (a, b) in enumerate(SEEN) if a is x or a.data_ptr() == x.data_ptr() or b.data_ptr() == x.data_ptr()]
    with open(os.environ["SPY_LOG"], "a") as f:
        f.write(json.dumps({"sum": float(x.sum()), "shares_with_call": shared}) + "\\n")
    SEEN.append((x, out))
    return out
'''
BASE = '''import torch
def softmax(x):
    return torch.softmax(x, dim=-1)
'''


class Worker:
    def __init__(self, tmp, target):
        self.req, self.resp = tmp / "req", tmp / "resp"
        os.mkfifo(self.req)
        os.mkfifo(self.resp)
        env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "SPY_LOG": str(tmp / "spy.jsonl")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "magpie_bench", "worker", "--target", target, "--target-dir", str(tmp),
             "--inputs", target.split(":")[0] + ":get_inputs", "--baseline", "base:softmax", "--baseline-dir",
             str(tmp), "--requests", str(self.req), "--responses", str(self.resp)],
            env=env, stdout=open(tmp / "worker.log", "w"), stderr=subprocess.STDOUT)
        self.w = open(self.req, "w")
        self.r = open(self.resp)
        self.n = 0
        assert json.loads(self.r.readline()) == {"id": 0, "ready": True}

    def ask(self, **req):
        self.n += 1
        self.w.write(json.dumps({"id": self.n, **req}) + "\n")
        self.w.flush()
        answer = json.loads(self.r.readline())
        assert answer["id"] == self.n
        return answer

    def close(self):
        assert self.ask(op="exit")["ok"]
        assert self.proc.wait(timeout=30) == 0


def test_requests_get_fresh_inputs_and_never_another_requests_tensors(tmp_path):
    (tmp_path / "spy.py").write_text(SPY)
    (tmp_path / "base.py").write_text(BASE)
    w = Worker(tmp_path, "spy:softmax")
    reports = []
    for k in range(2):
        a = w.ask(op="check", json=str(tmp_path / f"c{k}.json"), seeds=[1, 2])
        assert a["ok"] and a["success"], a
        reports.append(json.loads((tmp_path / f"c{k}.json").read_text()))
    assert w.ask(op="bogus")["ok"] is False  # a failed request leaves the worker serving
    w.close()
    calls = [json.loads(l) for l in (tmp_path / "spy.jsonl").read_text().splitlines()]
    assert len(calls) == 4
    # No call got a tensor (or the storage of one) that an earlier call was given or returned.
    assert all(c["shares_with_call"] == [] for c in calls), calls
    # Fresh per seed, and the same seed gives the same values in either request.
    assert calls[0]["sum"] != calls[1]["sum"]
    assert [c["sum"] for c in calls[:2]] == [c["sum"] for c in calls[2:]]
    assert reports[0]["checks"] == reports[1]["checks"]
