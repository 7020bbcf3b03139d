"""Shared setup for the end-to-end suites: where the binary and the traces are."""
import os
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
