"""Magpie installed with pip: the C++ `magpie` binary and a thin launcher for it.

`python -m Magpie ARGS` and the `magpie` console script run the binary with
ARGS; `python -m Magpie.mcp` starts its MCP server. The wheel lays the binary
out the way `cmake --install` does, under this package's directory:
bin/magpie, lib/libmagpie_cupti.so (when CUPTI was found at build time) and
share/magpie/python/magpie_bench, so the binary finds its pieces on its own.

The same analyses run in-process too (api.py, docs/PYTHON_API.md):
`Magpie.load_trace`, `Magpie.gap_analysis`, `Magpie.tracelens`,
`Magpie.compare`, `Magpie.benchmark`,
`Magpie.results.list()` / `.diff()`, with tables as
pandas DataFrames and errors as `Magpie.MagpieError`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from Magpie.api import (Benchmark, Compare, GapAnalysis, MagpieError, Table, Trace, TraceLens, benchmark, compare,
                        gap_analysis, load_trace, tracelens)
from Magpie import results  # noqa: E402  (Magpie.results.list() / .diff())

__all__ = ["binary", "exec_magpie", "load_trace", "gap_analysis", "tracelens", "results", "compare", "benchmark", "MagpieError", "Table",
           "Compare", "Benchmark", "Trace", "GapAnalysis", "TraceLens"]

_HERE = Path(__file__).resolve().parent


def binary() -> Path:
    """The installed `magpie` executable."""
    path = _HERE / "bin" / "magpie"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: this Magpie package was not installed from a wheel "
            "(reinstall it with `pip install .` from the Magpie source tree)"
        )
    return path


def exec_magpie(args: list[str]) -> None:
    """Replace this process with `magpie ARGS`; its exit status becomes ours."""
    try:
        exe = str(binary())
    except FileNotFoundError as e:
        print(f"Magpie: {e}", file=sys.stderr)
        raise SystemExit(127) from None
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe, *args])
