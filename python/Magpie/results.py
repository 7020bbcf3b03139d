"""The results store from Python: `Magpie.results.list()` and
`Magpie.results.diff(a, b)`, the jobs behind `magpie results list` and
`magpie results diff` (src/jobs/results_jobs.hpp), in-process. docs/PYTHON_API.md.
"""

from __future__ import annotations

import builtins
import json
import os
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from Magpie.api import Table, _native

__all__ = ["RunList", "Diff", "list", "diff"]

Target = Union[int, str, "os.PathLike[str]", Sequence[Union[int, str, "os.PathLike[str]"]]]


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("this needs pandas: pip install pandas") from None
    return pandas


@dataclass
class RunList:
    """Recorded runs, newest first: `records` as `magpie results list --json` writes them."""

    records: builtins.list

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def to_pandas(self):
        """One row per run; `metrics` and `metadata` stay dicts (pandas.json_normalize flattens them)."""
        return _pandas().DataFrame(self.records)


@dataclass
class Diff:
    """A diff of runs: `kind` "reports" (serving or kernel reports, `report` as
    `--format json` writes it) or "ops" (op tables side by side, `ops` as the
    CSV `magpie results diff --ops` writes, numbers unrounded)."""

    kind: str
    report: Optional[dict]
    ops: Optional[Table]
    warnings: builtins.list = field(default_factory=builtins.list)
    notes: builtins.list = field(default_factory=builtins.list)  # repeats pooled, A/A pairs (the CLI's stderr)
    regression: bool = False  # a verdict is SLOWER (the CLI's --fail-on-regression exits 1)

    def to_pandas(self):
        """ops: the op table. reports: one row per kernel (kernel diffs) or per
        case and metric (serving diffs), the report's fields as columns."""
        if self.kind == "ops":
            return self.ops.to_pandas()
        rows = []
        for k in self.report.get("kernels", []):
            rows.append(dict(k))
        for case in self.report.get("serving", []):
            head = {key: v for key, v in case.items() if key != "metrics"}
            for m in case.get("metrics", []):
                rows.append({**head, **m})
        return _pandas().DataFrame(rows)


def _store(store) -> str:
    return os.fspath(store) if store is not None else ""


def _target(t) -> str:
    if isinstance(t, (builtins.list, tuple)):  # repeats of one config, pooled: [3, 5] as the CLI's 3,5
        return ",".join(_target(x) for x in t)
    return str(t) if isinstance(t, int) else os.fspath(t)


def list(*, kind: str = "", status: str = "", limit: int = 20, store=None) -> RunList:  # noqa: A001
    """`magpie results list --json`: recorded runs, newest first (`limit=0`: all).
    `store`: a results store file or postgresql:// URL (default $MAGPIE_RESULTS_DB
    or ~/.magpie/results.db)."""
    raw = _native().results_list(_store(store), kind, status, limit)
    return RunList(records=json.loads(raw))


def diff(*runs: Target, labels: Sequence[str] = (), ops: bool = False, no_repeats: bool = False,
         aa: bool = False, threshold: Optional[float] = None, resamples: Optional[int] = None,
         run_noise: Optional[float] = None, store=None) -> Diff:
    """`magpie results diff RUN RUN...`: run ids or workspace folders, baseline first;
    a list or tuple is one side's repeats ([3, 5] as the CLI's `3,5`)."""
    if len(runs) < 2:
        from Magpie._errors import MagpieError
        raise MagpieError("results.diff needs at least two runs: a baseline and a candidate", 2, "usage")
    raw = _native().results_diff(_store(store), [_target(r) for r in runs], builtins.list(labels), ops,
                                 no_repeats, aa, threshold, resamples, run_noise)
    report = json.loads(raw["report_json"]) if raw["kind"] == "reports" else None
    table = Table(raw["ops"]) if raw["kind"] == "ops" else None
    return Diff(kind=raw["kind"], report=report, ops=table, warnings=builtins.list(raw["warnings"]),
                notes=builtins.list(raw["notes"]), regression=raw["regression"])
