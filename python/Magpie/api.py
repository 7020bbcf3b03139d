"""Magpie's analyses called in-process: the C++ jobs behind `magpie benchmark
--trace-dir` and `magpie tracelens`, through the extension Magpie._magpie
(src/python_api), with the GIL released while they run. Tables come back as
columns built in C++ (NumPy arrays for numbers, lists for text) and become
pandas DataFrames here, never through a CSV file. docs/PYTHON_API.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from Magpie._errors import MagpieError

__all__ = ["MagpieError", "Table", "Trace", "GapAnalysis", "TraceLens", "Compare", "Benchmark", "load_trace",
           "gap_analysis", "tracelens", "compare", "benchmark"]

Progress = Optional[Callable[[float, Optional[float], str], Any]]


def _native():
    try:
        from Magpie import _magpie
    except ImportError as e:
        raise ImportError(
            f"Magpie's Python API (the extension Magpie._magpie) cannot be imported: {e}. "
            "It is built into the wheel (`pip install .` from the Magpie source tree); "
            "the `magpie` command works without it"
        ) from e
    return _magpie


def _need_numpy() -> None:
    """Tables hold NumPy arrays: say so before the job runs, not after."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise ImportError("Magpie's tables are NumPy arrays: pip install numpy (and pandas for DataFrames)") from None


class Table:
    """Named columns of equal length: NumPy arrays (numbers) and lists (text)."""

    def __init__(self, columns: dict):
        self.columns = columns

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __repr__(self) -> str:
        return f"Table({len(self)} rows: {', '.join(self.columns)})"

    def to_pandas(self):
        """A pandas DataFrame of the columns (pandas is needed only here)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Table.to_pandas() needs pandas: pip install pandas") from None
        return pandas.DataFrame(self.columns)

    def to_dict(self) -> dict:
        return dict(self.columns)


@dataclass
class Trace:
    """One trace file in memory (load_trace)."""

    path: str
    format: str
    rank: int
    kernels: Table  # kernels, copies and sets: ts_ns, dur_ns, name, category, device, stream, ...
    ops: Table  # cpu_op events: ts_ns, dur_ns, name, pid, tid, external_id, input_dims
    timeline: Table  # one row: span, busy, idle, computation, exposed communication and copies (us)
    warnings: list = field(default_factory=list)


@dataclass
class GapAnalysis:
    """gap_analysis's result; the report files are written as by the CLI."""

    kernels: Table  # gap_analysis.csv's rows and columns, numbers unrounded
    ranks: Table  # one row per rank: trace file, kernel time, GPU timeline
    report: dict  # gap_analysis.json
    console: str  # the CLI's summary
    warnings: list
    output_dir: str
    csv: str
    json: str
    seconds: float
    run_id: int  # the results store's row; 0 when not recorded


@dataclass
class TraceLens:
    """tracelens's result: the manifest and the report files it lists."""

    report: dict  # tracelens_manifest.json
    console: str
    output_files: list
    errors: list  # problems that still left some report (the CLI exits 1 when there are any)
    warnings: list
    manifest: str
    run_id: int


def load_trace(path: "os.PathLike | str", *, threads: int = 0, include_python_functions: bool = False,
               progress: Progress = None) -> Trace:
    """Read one trace file (Kineto JSON, gzip or not; rocprofv3 JSON or CSV)."""
    _need_numpy()
    raw = _native().load_trace(os.fspath(path), threads, include_python_functions, progress)
    return Trace(path=raw["path"], format=raw["format"], rank=raw["rank"], kernels=Table(raw["kernels"]),
                 ops=Table(raw["ops"]), timeline=Table(raw["timeline"]), warnings=list(raw["warnings"]))


def gap_analysis(trace_dir: "os.PathLike | str", *, top_k: int = 20, start_pct: float = 0, end_pct: float = 100,
                 min_duration_us: float = 0, output_dir: "os.PathLike | str" = "./results", threads: int = 0,
                 record: bool = True, progress: Progress = None) -> GapAnalysis:
    """`magpie benchmark --trace-dir TRACE_DIR`: the top kernels over every rank.

    Writes the same reports as the CLI under OUTPUT_DIR/gap_analysis_<time>/
    (OUTPUT_DIR/gap_analysis points at the newest) and, with `record`, a row
    in the results store."""
    _need_numpy()
    raw = _native().gap_analysis(os.fspath(trace_dir), top_k, start_pct, end_pct, min_duration_us,
                                 os.fspath(output_dir), threads, record, progress)
    return GapAnalysis(kernels=Table(raw["kernels"]), ranks=Table(raw["ranks"]),
                       report=json.loads(raw["report_json"]), console=raw["console"],
                       warnings=list(raw["warnings"]), output_dir=raw["output_dir"], csv=raw["csv"],
                       json=raw["json"], seconds=raw["seconds"], run_id=raw["run_id"])


def tracelens(trace: "os.PathLike | str", *, mode: str = "inference", stages: Sequence[str] = (),
              output_dir: "os.PathLike | str" = "./results", threads: int = 0, record: bool = True,
              progress: Progress = None) -> TraceLens:
    """`magpie tracelens TRACE --mode MODE`: reports under OUTPUT_DIR/tracelens."""
    raw = _native().tracelens(os.fspath(trace), mode, list(stages), os.fspath(output_dir), threads, record,
                              progress)
    return TraceLens(report=json.loads(raw["report_json"]), console=raw["console"],
                     output_files=list(raw["output_files"]), errors=list(raw["errors"]),
                     warnings=list(raw["warnings"]), manifest=raw["manifest"], run_id=raw["run_id"])


@dataclass
class Compare:
    """compare's result: the report the CLI writes (compare_report.json) and the
    exit status the CLI returns for it (0; 1 not all correct, or a regression
    with fail_on_regression; 8 correct but not timed: no GPU)."""

    report: Optional[dict]  # compare_report.json (None when no workspace was made)
    exit_code: int
    all_correct: bool
    regression: bool
    performance_not_measured: str  # why timing could not run ("" when it ran or no_perf)
    console: str  # the CLI's stdout
    errors: str  # the CLI's stderr lines for failed stages
    warnings: list
    workspace: str
    report_path: str
    run_id: int

    @property
    def verdicts(self) -> Table:
        """The verdict table: one row per implementation (index, kernel_id, role,
        eligible, median_ns, cv, samples, rank, speedup, ci_low, ci_high,
        verdict, verdict_reason, reason, fix), as the report's verdicts list."""
        rows = (self.report or {}).get("results", {}).get("verdicts", [])
        names = ["index", "kernel_id", "role", "eligible", "median_ns", "cv", "samples", "rank", "speedup", "ci_low",
                 "ci_high", "verdict", "verdict_reason", "reason", "fix"]
        return Table({n: [r.get(n) for r in rows] for n in names})


def _bundled_paths() -> None:
    """The wheel's magpie_bench and CUPTI library for jobs run in this process:
    the binary finds them beside itself, the extension runs inside Python."""
    here = os.path.dirname(os.path.abspath(__file__))
    share = os.path.join(here, "share", "magpie", "python")
    if os.path.isdir(os.path.join(share, "magpie_bench")):
        os.environ.setdefault("MAGPIE_PYTHON_DIR", share)
    cupti = os.path.join(here, "lib", "libmagpie_cupti.so")
    if os.path.isfile(cupti):
        os.environ.setdefault("MAGPIE_CUPTI_LIB", cupti)


def compare(config: "os.PathLike | str", *, no_perf: bool = False, no_latency: bool = False, baseline: int = 0,
            rounds: int = 0, threshold: Optional[float] = None, fail_on_regression: bool = False,
            strict: bool = False, output_dir: "os.PathLike | str" = "./results", record: bool = True,
            progress: Progress = None) -> Compare:
    """`magpie compare -k CONFIG`: every implementation through compile,
    correctness and (unless no_perf) performance, ranked against the baseline.
    A request Magpie refuses raises MagpieError (the CLI's exit code); a
    finished run returns, its exit_code as the CLI's."""
    _bundled_paths()
    raw = _native().compare(os.fspath(config), no_perf, no_latency, baseline, rounds,
                            -1.0 if threshold is None else threshold, fail_on_regression, strict,
                            os.fspath(output_dir), record, progress)
    return Compare(report=json.loads(raw["report_json"]) if raw["report_json"] else None,
                   exit_code=raw["exit_code"], all_correct=raw["all_correct"], regression=raw["regression"],
                   performance_not_measured=raw["performance_not_measured"], console=raw["console"],
                   errors=raw["errors"], warnings=list(raw["warnings"]), workspace=raw["workspace"],
                   report_path=raw["report_path"], run_id=raw["run_id"])


@dataclass
class Benchmark:
    """benchmark's result: the workspace the CLI writes, its report, and the
    exit status the CLI returns for it (0 success; 1 the run did not succeed:
    `status` and `errors` say why, and what was measured is kept)."""

    cases: Table  # one row per case: workload, counts, throughputs, TTFT/TPOT/ITL/E2EL mean/median/std/pN (ms)
    requests: Table  # one row per measured request, as requests.jsonl: ttft_s, e2el_s, output_tokens, ...
    itls: Table  # one row per inter-token latency: case, index, chunk, itl_s
    report: dict  # benchmark_report.json
    console: str  # summary.txt (the CLI's stdout)
    success: bool
    status: str  # success | failed | incomplete | timeout | cancelled
    exit_code: int
    errors: list
    warnings: list
    workspace: str
    run_id: int


def _setting_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_setting_text(v) for v in value)  # --concurrency 4,8: a sweep
    return str(value)


def benchmark(config: "os.PathLike | str | None" = None, *, framework: Optional[str] = None,
              output_dir: "os.PathLike | str" = "./results", engine_args: Sequence[str] = (),
              env: Optional[dict] = None, strict: bool = False, record: bool = True, progress: Progress = None,
              **settings) -> Benchmark:
    """`magpie benchmark [FRAMEWORK] [-b CONFIG] --setting value ...`: the
    serving benchmark, against a running server (endpoint="http://host:port")
    or an engine Magpie launches. SETTINGS are the CLI's flags without dashes
    (model, endpoint, concurrency, input_len, output_len, num_prompts,
    range_ratio, warmups, ready_timeout, cpu_engine, ...), applied over CONFIG
    as the CLI applies them; ENGINE_ARGS and ENV are its --engine-arg and
    --env. A request Magpie refuses raises MagpieError (the CLI's exit code);
    a run that started returns, with exit_code as the CLI's."""
    _need_numpy()
    _bundled_paths()
    text = {k: _setting_text(v) for k, v in settings.items() if v is not None}
    if framework is not None:
        text["framework"] = framework
    text["output_dir"] = os.fspath(output_dir)
    envs = [f"{k}={v}" for k, v in (env or {}).items()]
    raw = _native().benchmark(os.fspath(config) if config is not None else "", text, list(engine_args), envs,
                              strict, record, progress)
    return Benchmark(cases=Table(raw["cases"]), requests=Table(raw["requests"]), itls=Table(raw["itls"]),
                     report=json.loads(raw["report_json"]), console=raw["console"], success=raw["success"],
                     status=raw["status"], exit_code=raw["exit_code"], errors=list(raw["errors"]),
                     warnings=list(raw["warnings"]), workspace=raw["workspace"], run_id=raw["run_id"])
