"""End-to-end check of `magpie benchmark --trace-dir` on rocprofv3 output.

The trace directory holds only the rocprofv3 file, so the loader must pick the
rocprof reader by content. The gap-analysis CSV it writes is compared with an
aggregation made here from the raw file with json/csv alone: one kernel per
dispatch record, named by its kernel_symbols entry (formatted_kernel_name),
duration end_timestamp - start_timestamp (ns, shown in us).
"""
import csv
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, magpie_bin, shared_traces

pytestmark = pytest.mark.e2e

ROCPROF_JSON = shared_traces() / "public" / "rocprof__908_results.json.gz"
ROCPROF_CSV = REPO_ROOT / "tests" / "data" / "rocprof" / "908_kernel_trace.csv"
BASE_COLUMNS = ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total", "Input Shapes"]
CSV_ABS_TOL = 0.006  # the CSV carries 2 decimals
RUN_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def magpie():
    path = magpie_bin()
    if not path.is_file():
        pytest.skip(f"magpie binary not found at {path} (set MAGPIE_BIN or build apps/magpie)")
    return path


def expected_from_json(path: Path) -> dict:
    """name -> [calls, total_us] over every kernel_dispatch record of every process."""
    out = {}
    for tool in json.loads(gzip.decompress(path.read_bytes()))["rocprofiler-sdk-tool"]:
        names = {s["kernel_id"]: s["formatted_kernel_name"] for s in tool["kernel_symbols"]}
        for d in tool["buffer_records"].get("kernel_dispatch", []):
            entry = out.setdefault(names[d["dispatch_info"]["kernel_id"]], [0, 0])
            entry[0] += 1
            entry[1] += d["end_timestamp"] - d["start_timestamp"]
    return {name: (calls, ns / 1000.0) for name, (calls, ns) in out.items()}


def expected_from_csv(path: Path) -> dict:
    out = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            entry = out.setdefault(row["Kernel_Name"], [0, 0])
            entry[0] += 1
            entry[1] += int(row["End_Timestamp"]) - int(row["Start_Timestamp"])
    return {name: (calls, ns / 1000.0) for name, (calls, ns) in out.items()}


def run_on(magpie: Path, trace: Path, name: str, tmp: Path) -> Path:
    trace_dir = tmp / "traces"
    trace_dir.mkdir()
    shutil.copy(trace, trace_dir / name)
    out_dir = tmp / "out"
    # --top-k above the kernel count, so every name is listed and checked.
    cmd = [str(magpie), "benchmark", "--trace-dir", str(trace_dir), "-o", str(out_dir),
           "--top-k", "100000"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                          timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, (f"{' '.join(cmd)}\nexit {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return out_dir / "gap_analysis" / "gap_analysis.csv"


def check_gap_csv(path: Path, expected: dict):
    assert path.is_file(), f"missing {path}"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(line for line in f if not line.startswith("#")))
    header, rows = rows[0], rows[1:]
    assert header[:6] == BASE_COLUMNS, header
    col = {name: i for i, name in enumerate(header)}
    got = {}
    for row in rows:
        assert row[col["Name"]] not in got, f"{row[col['Name']]!r} listed twice"
        got[row[col["Name"]]] = (int(row[col["Calls"]]), float(row[col["Self CUDA total (us)"]]))
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing[:3]}, unexpected {extra[:3]}"
    grand_total = sum(total for _, total in expected.values())
    for name, (calls, total) in expected.items():
        assert got[name][0] == calls, f"calls of {name!r}: {got[name][0]} vs {calls}"
        assert abs(got[name][1] - total) <= CSV_ABS_TOL, f"total of {name!r}: {got[name][1]} vs {total}"
    pct = sum(float(r[col["% Total"]]) for r in rows)
    assert abs(pct - 100.0) <= 0.5, f"% Total sums to {pct}"
    totals = [t for _, t in (got[r[col["Name"]]] for r in rows)]
    assert totals == sorted(totals, reverse=True), "rows not sorted by total, descending"
    assert grand_total > 0


def test_rocprof_json_gap_analysis(magpie, tmp_path):
    if not ROCPROF_JSON.is_file():
        pytest.skip(f"shared rocprofv3 sample not found at {ROCPROF_JSON}")
    expected = expected_from_json(ROCPROF_JSON)
    # 43915 dispatches of 80 kernels (see tests/unit/trace_rocprof_test.cpp).
    assert sum(calls for calls, _ in expected.values()) == 43915
    assert len(expected) == 80
    check_gap_csv(run_on(magpie, ROCPROF_JSON, ROCPROF_JSON.name, tmp_path), expected)


def test_rocprof_kernel_trace_csv_gap_analysis(magpie, tmp_path):
    expected = expected_from_csv(ROCPROF_CSV)
    assert len(expected) == 10
    # The loader takes rocprofv3's file name pattern, *_kernel_trace.csv.
    check_gap_csv(run_on(magpie, ROCPROF_CSV, ROCPROF_CSV.name, tmp_path), expected)
