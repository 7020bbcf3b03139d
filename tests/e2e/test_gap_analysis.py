"""End-to-end check of `magpie benchmark --trace-dir` on every real Kineto trace.

Each trace is copied alone into a temporary directory, analysed by the real
binary, and the CSV/JSON it writes is compared with an independent computation
made here with nothing but json and gzip (docs/MAGPIE_COMPATIBILITY.md §5):

  keep an event when its lower-cased `cat` contains none of the ignored
  categories and one of the wanted ones; aggregate by exact `name`.

The timeline figures (span, busy) and the graph-launch fan-out are recomputed
the same way. Bad inputs must fail with the documented exit codes and a message
that names the file. The whole module runs in about half a minute on 2 cores.
"""
import csv
import functools
import gzip
import json
import math
import os
import re
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import shared_traces

SHARED = shared_traces()
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not (SHARED / "public").is_dir(), reason=f"no shared traces at {SHARED}")]

WANTED_CATEGORIES = ("kernel", "gpu")
IGNORED_CATEGORIES = ("gpu_user_annotation", "user_annotation")
TIMELINE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver"}
GRAPH_LAUNCH_NAMES = {"cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch"}

BASE_COLUMNS = ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total", "Input Shapes"]
EXTRA_COLUMNS = ["Normalized Name", "Category", "Median (us)", "Min (us)", "Max (us)", "Std (us)",
                 "Cumulative %", "Launching Op"]

CSV_ABS_TOL = 0.006  # values are written with 2 decimals
REL_TOL = 1e-3
RUN_TIMEOUT_S = 60


def kineto_traces():
    if not (SHARED / "public").is_dir():
        return []
    found = sorted(p for p in (SHARED / "public").glob("*.json.gz") if not p.name.startswith("rocprof__"))
    found += sorted((SHARED / "h200").glob("*.json.gz"))
    return found


TRACES = kineto_traces()
GRAPH_TRACES = [p for p in TRACES if "graph_execution" in p.name]
H100_QWEN = SHARED / "public" / "traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300_QWEN = SHARED / "public" / "traces__mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
H200_LLAMA = SHARED / "h200" / "llama_4layer_bs16_prompt1024_decode16.json.gz"


# --------------------------------------------------------------------------
# The independent computation
# --------------------------------------------------------------------------

@dataclass
class Expected:
    durations: dict = field(default_factory=dict)  # name -> [dur, ...] of kept events
    grand_total: float = 0.0
    span_us: float = 0.0
    busy_us: float = 0.0
    gpu_events: int = 0
    graph_fanouts: list = field(default_factory=list)  # kernels per graph launch


def read_raw(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


@functools.lru_cache(maxsize=None)
def load_trace(path: Path) -> dict:
    return json.loads(read_raw(path))


def is_kept(event) -> bool:
    cat = event.get("cat")
    if not isinstance(cat, str):
        return False
    cat = cat.lower()
    if any(ignored in cat for ignored in IGNORED_CATEGORIES):
        return False
    return any(wanted in cat for wanted in WANTED_CATEGORIES)


def interval_union(intervals):
    busy = 0.0
    cur_start = cur_end = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                busy += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        busy += cur_end - cur_start
    return busy


def expected_rank(path: Path) -> int:
    """The rank a lone file must get: its distributedInfo, else its name, else 0."""
    info = load_trace(path).get("distributedInfo") if isinstance(load_trace(path), dict) else None
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"]
    m = re.search(r"rank[-_]?(\d+)", path.name)
    return int(m.group(1)) if m else 0


@functools.lru_cache(maxsize=None)
def expected_for(path: Path) -> Expected:
    events = load_trace(path)["traceEvents"]
    exp = Expected()
    intervals = []
    gpu_by_correlation = {}
    launch_correlations = []
    for e in events:
        if is_kept(e):
            dur = float(e.get("dur", 0))
            exp.durations.setdefault(e["name"], []).append(dur)
            exp.grand_total += dur
        cat = e.get("cat")
        cat_lower = cat.lower() if isinstance(cat, str) else ""
        args = e.get("args") or {}
        if cat_lower in TIMELINE_CATEGORIES:
            exp.gpu_events += 1
            ts = float(e["ts"])
            intervals.append((ts, ts + float(e.get("dur", 0))))
            corr = args.get("correlation")
            if corr is not None:
                gpu_by_correlation[corr] = gpu_by_correlation.get(corr, 0) + 1
        elif cat_lower in LAUNCH_CATEGORIES and e.get("name") in GRAPH_LAUNCH_NAMES:
            launch_correlations.append(args.get("correlation"))
    if intervals:
        exp.span_us = max(end for _, end in intervals) - min(start for start, _ in intervals)
        exp.busy_us = interval_union(intervals)
    exp.graph_fanouts = [gpu_by_correlation.get(c, 0) for c in launch_correlations]
    return exp


def merge(*expecteds: Expected) -> dict:
    merged = {}
    for exp in expecteds:
        for name, durs in exp.durations.items():
            merged.setdefault(name, []).extend(durs)
    return merged


# --------------------------------------------------------------------------
# Running the binary and reading what it wrote
# --------------------------------------------------------------------------

@dataclass
class Run:
    trace_dir: Path
    out_dir: Path
    proc: subprocess.CompletedProcess

    @property
    def gap_dir(self) -> Path:
        return self.out_dir / "gap_analysis"

    def describe(self) -> str:
        cmd = " ".join(str(a) for a in self.proc.args)
        return (f"command: {cmd}\nexit: {self.proc.returncode}\n"
                f"stdout (tail):\n{self.proc.stdout[-3000:]}\nstderr (tail):\n{self.proc.stderr[-3000:]}")

    def assert_ok(self):
        assert self.proc.returncode == 0, self.describe()

    def report(self) -> dict:
        self.assert_ok()
        path = self.gap_dir / "gap_analysis.json"
        assert path.is_file(), f"missing {path}\n{self.describe()}"
        return json.loads(path.read_text())


def run_magpie(magpie: Path, trace_dir: Path, out_dir: Path) -> Run:
    cmd = [str(magpie), "benchmark", "--trace-dir", str(trace_dir), "-o", str(out_dir), "--top-k", "100000"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=RUN_TIMEOUT_S)
    return Run(trace_dir, out_dir, proc)


def read_csv(path: Path):
    assert path.is_file(), f"missing {path}"
    with path.open(newline="", encoding="utf-8", errors="replace") as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = list(csv.reader(lines))
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def single_runs(magpie, tmp_path_factory):
    """One magpie run per trace, made on first use and shared by the checks."""
    cache = {}

    def get(trace: Path) -> Run:
        if trace not in cache:
            base = tmp_path_factory.mktemp(trace.name[:40].replace(".", "_"))
            trace_dir = base / "traces"
            trace_dir.mkdir()
            shutil.copy(trace, trace_dir / trace.name)
            cache[trace] = run_magpie(magpie, trace_dir, base / "out")
        return cache[trace]

    return get


def trace_id(path: Path) -> str:
    return path.name.replace(".json.gz", "")


def close(actual, expected, rel=REL_TOL, abs_tol=1e-6) -> bool:
    return math.isclose(float(actual), float(expected), rel_tol=rel, abs_tol=abs_tol)


# --------------------------------------------------------------------------
# Checks shared by the single- and multi-rank cases
# --------------------------------------------------------------------------

def check_gap_csv(path: Path, durations: dict, grand_total: float, extra_columns=True):
    header, rows = read_csv(path)
    assert header[:6] == BASE_COLUMNS, f"{path.name}: header {header}"
    if extra_columns:
        assert header[6:14] == EXTRA_COLUMNS, f"{path.name}: extra columns {header[6:]}"
    col = {name: i for i, name in enumerate(header)}
    for i, row in enumerate(rows):
        assert len(row) == len(header), f"{path.name} row {i}: {len(row)} fields, header has {len(header)}: {row}"

    names = [r[col["Name"]] for r in rows]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"{path.name}: names listed twice: {dupes[:5]}"
    missing = sorted(set(durations) - set(names))
    extra = sorted(set(names) - set(durations))
    assert not missing and not extra, (f"{path.name}: {len(missing)} names missing (e.g. {missing[:3]}), "
                                       f"{len(extra)} unexpected (e.g. {extra[:3]})")

    totals = []
    for row in rows:
        name = row[col["Name"]]
        durs = durations[name]
        total = sum(durs)
        assert int(row[col["Calls"]]) == len(durs), f"{path.name}: calls of {name!r}"
        csv_total = float(row[col["Self CUDA total (us)"]])
        assert abs(csv_total - total) <= CSV_ABS_TOL, f"{path.name}: total of {name!r}: {csv_total} vs {total}"
        avg = float(row[col["Avg time (us)"]])
        assert abs(avg - total / len(durs)) <= CSV_ABS_TOL, f"{path.name}: avg of {name!r}: {avg}"
        totals.append(csv_total)

    pct_sum = sum(float(r[col["% Total"]]) for r in rows)
    assert abs(pct_sum - 100.0) <= 0.5, f"{path.name}: % Total sums to {pct_sum}"
    for r in rows:
        expected_pct = sum(durations[r[col["Name"]]]) / grand_total * 100.0
        assert abs(float(r[col["% Total"]]) - expected_pct) <= 0.006, f"{path.name}: % Total of {r[0]!r}"
    assert all(a >= b for a, b in zip(totals, totals[1:])), f"{path.name}: rows not sorted by total descending"

    if not extra_columns:
        return
    cumulative = []
    for row in rows:
        name = row[col["Name"]]
        durs = sorted(durations[name])
        lo, med, hi = (float(row[col[c]]) for c in ("Min (us)", "Median (us)", "Max (us)"))
        assert lo <= med <= hi, f"{path.name}: {name!r} min {lo} median {med} max {hi}"
        assert abs(lo - durs[0]) <= CSV_ABS_TOL and abs(hi - durs[-1]) <= CSV_ABS_TOL, \
            f"{path.name}: {name!r} min/max {lo}/{hi} vs {durs[0]}/{durs[-1]}"
        # Median and std have two common definitions each; accept either.
        mid_lo, mid_hi = durs[(len(durs) - 1) // 2], durs[len(durs) // 2]
        assert mid_lo - CSV_ABS_TOL <= med <= mid_hi + CSV_ABS_TOL, f"{path.name}: median of {name!r} = {med}"
        std = float(row[col["Std (us)"]])
        pstd = statistics.pstdev(durs)
        sstd = statistics.stdev(durs) if len(durs) > 1 else 0.0
        assert pstd - 0.01 <= std <= sstd + 0.01, f"{path.name}: std of {name!r} = {std} ({pstd}..{sstd})"
        cumulative.append(float(row[col["Cumulative %"]]))
    assert all(b >= a - 1e-9 for a, b in zip(cumulative, cumulative[1:])), f"{path.name}: Cumulative % decreases"
    assert abs(cumulative[-1] - 100.0) <= 0.5, f"{path.name}: Cumulative % ends at {cumulative[-1]}"


def check_top_kernels(report: dict, durations: dict, grand_total: float):
    top = report["top_kernels"]
    by_name = {k["name"]: k for k in top}
    assert len(by_name) == len(top), "top_kernels lists a name twice"
    assert set(by_name) == set(durations), (
        f"top_kernels names differ: missing {sorted(set(durations) - set(by_name))[:3]}, "
        f"extra {sorted(set(by_name) - set(durations))[:3]}")
    for name, durs in durations.items():
        k = by_name[name]
        assert set(k) >= {"name", "calls", "self_cuda_total_us", "avg_time_us", "pct_total", "input_shapes"}, k.keys()
        total = sum(durs)
        assert k["calls"] == len(durs), f"calls of {name!r}"
        assert abs(k["self_cuda_total_us"] - total) <= CSV_ABS_TOL, f"total of {name!r}: {k['self_cuda_total_us']}"
        assert abs(k["avg_time_us"] - total / len(durs)) <= CSV_ABS_TOL, f"avg of {name!r}"
        assert abs(k["pct_total"] - total / grand_total * 100.0) <= 0.006, f"pct of {name!r}"
    totals = [k["self_cuda_total_us"] for k in top]
    assert all(a >= b for a, b in zip(totals, totals[1:])), "top_kernels not sorted by total descending"


def check_rank_entry(entry: dict, exp: Expected, trace_name: str):
    assert Path(str(entry["trace_file"])).name == trace_name, entry["trace_file"]
    assert close(entry["total_duration_us"], exp.grand_total), (entry["total_duration_us"], exp.grand_total)
    tl = entry["timeline"]
    for key in ("span_us", "busy_us", "idle_us", "computation_us", "exposed_communication_us", "exposed_memcpy_us"):
        assert key in tl, f"timeline lacks {key}: {tl}"
        assert tl[key] >= -1e-6, f"timeline {key} negative: {tl}"
    assert close(tl["span_us"], exp.span_us), f"span_us {tl['span_us']} vs expected {exp.span_us}"
    assert close(tl["busy_us"], exp.busy_us), f"busy_us {tl['busy_us']} vs expected {exp.busy_us}"
    assert close(tl["idle_us"], exp.span_us - exp.busy_us, abs_tol=1e-3 * exp.span_us), \
        f"idle_us {tl['idle_us']} vs expected {exp.span_us - exp.busy_us}"
    for key in ("computation_us", "exposed_communication_us", "exposed_memcpy_us"):
        assert tl[key] <= tl["busy_us"] * (1 + REL_TOL) + 1e-6, f"{key} exceeds busy: {tl}"
    links = entry["links"]
    for key in ("gpu_events", "linked_gpu_events", "graph_launches", "graph_kernels", "max_kernels_per_graph_launch"):
        assert key in links, f"links lacks {key}: {links}"
    assert 0 <= links["linked_gpu_events"] <= links["gpu_events"], links


# --------------------------------------------------------------------------
# One trace at a time
# --------------------------------------------------------------------------

@pytest.mark.parametrize("trace", TRACES, ids=trace_id)
def test_exit_and_console(trace, single_runs):
    run = single_runs(trace)
    run.assert_ok()
    exp = expected_for(trace)
    out = run.proc.stdout
    assert "Gap Analysis (" in out, run.describe()
    m = re.search(r"Total duration:\s*([0-9.]+)\s*us", out)
    assert m, run.describe()
    assert abs(float(m.group(1)) - exp.grand_total) <= 0.006, (m.group(1), exp.grand_total)
    assert "Output:" in out, run.describe()


@pytest.mark.parametrize("trace", TRACES, ids=trace_id)
def test_csv_matches_reference(trace, single_runs):
    run = single_runs(trace)
    run.assert_ok()
    exp = expected_for(trace)
    check_gap_csv(run.gap_dir / "gap_analysis.csv", exp.durations, exp.grand_total)


@pytest.mark.parametrize("trace", TRACES, ids=trace_id)
def test_json_matches_reference(trace, single_runs):
    run = single_runs(trace)
    report = run.report()
    exp = expected_for(trace)
    for key in ("config", "total_duration_us", "num_ranks", "top_kernels", "errors", "csv_path", "output_dir", "ranks"):
        assert key in report, f"gap_analysis.json lacks {key}"
    assert close(report["total_duration_us"], exp.grand_total), (report["total_duration_us"], exp.grand_total)
    assert report["num_ranks"] == 1
    assert Path(report["csv_path"]).is_file(), report["csv_path"]
    check_top_kernels(report, exp.durations, exp.grand_total)
    assert len(report["ranks"]) == 1, report["ranks"]
    assert report["ranks"][0]["rank"] == expected_rank(trace)
    check_rank_entry(report["ranks"][0], exp, trace.name)


@pytest.mark.parametrize("trace", GRAPH_TRACES, ids=trace_id)
def test_graph_launch_fan_out(trace, single_runs):
    exp = expected_for(trace)
    assert exp.graph_fanouts, f"{trace.name} has no graph launch events"
    links = single_runs(trace).report()["ranks"][0]["links"]
    assert links["graph_launches"] == len(exp.graph_fanouts), links
    assert links["graph_kernels"] == sum(exp.graph_fanouts), links
    assert links["max_kernels_per_graph_launch"] == max(exp.graph_fanouts), links


def test_some_graph_launch_fans_out_to_hundreds():
    fanouts = {p.name: max(expected_for(p).graph_fanouts, default=0) for p in GRAPH_TRACES}
    assert any(n >= 100 for n in fanouts.values()), f"no graph launch replays >= 100 kernels: {fanouts}"


def test_plain_json_trace(magpie, tmp_path):
    """An uncompressed `.json` trace gives the same figures as its gzip."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    (trace_dir / "llama.json").write_bytes(read_raw(H200_LLAMA))
    run = run_magpie(magpie, trace_dir, tmp_path / "out")
    exp = expected_for(H200_LLAMA)
    run.assert_ok()
    check_gap_csv(run.gap_dir / "gap_analysis.csv", exp.durations, exp.grand_total)
    assert close(run.report()["total_duration_us"], exp.grand_total)


# --------------------------------------------------------------------------
# Two ranks
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_rank_run(magpie, tmp_path_factory):
    base = tmp_path_factory.mktemp("two_ranks")
    trace_dir = base / "traces"
    trace_dir.mkdir()
    shutil.copy(H100_QWEN, trace_dir / "a-rank-0.pt.trace.json.gz")
    shutil.copy(MI300_QWEN, trace_dir / "a-rank-1.pt.trace.json.gz")
    return run_magpie(magpie, trace_dir, base / "out")


def test_two_ranks_merged(two_rank_run):
    report = two_rank_run.report()
    exp0, exp1 = expected_for(H100_QWEN), expected_for(MI300_QWEN)
    grand = exp0.grand_total + exp1.grand_total
    assert report["num_ranks"] == 2
    assert close(report["total_duration_us"], grand), (report["total_duration_us"], grand)
    merged = merge(exp0, exp1)
    check_top_kernels(report, merged, grand)
    check_gap_csv(two_rank_run.gap_dir / "gap_analysis.csv", merged, grand)


def test_two_ranks_per_rank_outputs(two_rank_run):
    report = two_rank_run.report()
    entries = sorted(report["ranks"], key=lambda r: r["rank"])
    assert [r["rank"] for r in entries] == [0, 1], report["ranks"]
    for rank, trace in ((0, H100_QWEN), (1, MI300_QWEN)):
        exp = expected_for(trace)
        check_rank_entry(entries[rank], exp, f"a-rank-{rank}.pt.trace.json.gz")
        check_gap_csv(two_rank_run.gap_dir / f"gap_analysis_rank{rank}.csv", exp.durations, exp.grand_total,
                      extra_columns=False)


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------

def run_on_files(magpie, tmp_path, files: dict) -> Run:
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    for name, data in files.items():
        (trace_dir / name).write_bytes(data)
    return run_magpie(magpie, trace_dir, tmp_path / "out")


def assert_fails(run: Run, code: int, names_file: str = None):
    assert run.proc.returncode == code, f"expected exit {code}\n{run.describe()}"
    assert run.proc.stderr.strip(), f"no message on stderr\n{run.describe()}"
    if names_file:
        assert names_file in run.proc.stderr, f"stderr does not name {names_file}\n{run.describe()}"


def byte_offset(run: Run) -> int:
    m = re.search(r"byte (\d+)", run.proc.stderr)
    assert m, f"stderr gives no 'byte N'\n{run.describe()}"
    return int(m.group(1))


@functools.lru_cache(maxsize=None)
def llama_raw() -> bytes:
    return read_raw(H200_LLAMA)


def test_missing_dir(magpie, tmp_path):
    assert_fails(run_magpie(magpie, tmp_path / "does-not-exist", tmp_path / "out"), 3)


def test_empty_dir(magpie, tmp_path):
    assert_fails(run_on_files(magpie, tmp_path, {}), 3)


def test_not_a_trace(magpie, tmp_path):
    assert_fails(run_on_files(magpie, tmp_path, {"notatrace.json": b'{"a": 1}'}), 5, "notatrace.json")


def test_truncated_gzip(magpie, tmp_path):
    data = H200_LLAMA.read_bytes()
    run = run_on_files(magpie, tmp_path, {"cut.json.gz": data[: len(data) // 2]})
    assert_fails(run, 5, "cut.json.gz")
    assert "truncated" in run.proc.stderr.lower(), run.describe()


def test_json_cut_mid_event(magpie, tmp_path):
    raw = llama_raw()
    cut = raw.index(b'"name"', len(raw) // 2) + 10  # inside an event's name string
    run = run_on_files(magpie, tmp_path, {"cut.json": raw[:cut]})
    assert_fails(run, 5, "cut.json")
    offset = byte_offset(run)
    assert cut - 4096 <= offset <= cut, f"byte {offset} is not near the cut at {cut}\n{run.describe()}"


def test_json_stray_character(magpie, tmp_path):
    raw = llama_raw()
    pos = raw.index(b"},\n  {", len(raw) // 2) + 2  # just after the comma between two events
    run = run_on_files(magpie, tmp_path, {"stray.json": raw[:pos] + b"@" + raw[pos:]})
    assert_fails(run, 5, "stray.json")
    offset = byte_offset(run)
    assert abs(offset - pos) <= 64, f"byte {offset} is not near the stray '@' at {pos}\n{run.describe()}"


def trace_without(path: Path, keep) -> bytes:
    trace = dict(load_trace(path))
    trace["traceEvents"] = [e for e in trace["traceEvents"] if keep(e)]
    return gzip.compress(json.dumps(trace).encode(), 1)


def self_times(events) -> dict:
    """name -> total self time (us) of complete events: each event's duration less that of the
    events directly inside it on its thread (the innermost enclosing one is the parent)."""
    def ns(x) -> int:  # integer ns, so that equal ends compare equal
        return int(round(float(x) * 1000))

    by_thread = {}
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread.setdefault((e.get("pid"), e.get("tid")), []).append((ns(e["ts"]), ns(e["dur"]), e["name"]))
    totals = {}
    for evs in by_thread.values():
        # Start time, then the longer first, so that an event starting at the same instant nests;
        # then file order (a stable sort).
        evs.sort(key=lambda e: (e[0], -e[1]))
        stack, own = [], [d for _, d, _ in evs]
        for i, (ts, dur, _) in enumerate(evs):
            while stack and evs[stack[-1]][0] + evs[stack[-1]][1] < ts + dur:
                stack.pop()
            if stack:
                own[stack[-1]] -= dur
            stack.append(i)
        for i, (_, _, name) in enumerate(evs):
            totals[name] = totals.get(name, 0.0) + max(0, own[i]) / 1000.0
    return totals


def check_self_time_csv(run: Run, events):
    header, rows = read_csv(run.gap_dir / "gap_analysis.csv")
    assert header[2] == "Self CPU total (us)", header  # CPU time, as the column says
    expected = self_times(events)
    got = {r[0]: float(r[2]) for r in rows}
    assert set(got) == set(expected), set(got) ^ set(expected)
    for name, total in expected.items():
        assert math.isclose(got[name], total, rel_tol=1e-6, abs_tol=CSV_ABS_TOL), (name, got[name], total)
    report = run.report()
    assert report["time_basis"] == "host_self" and report["time_column"] == "Self CPU total (us)"
    grand = sum(expected.values())
    assert close(report["total_duration_us"], grand), (report["total_duration_us"], grand)
    return report


def test_cpu_only_trace_is_ranked_by_cpu_op_self_time(magpie, tmp_path):
    """A trace without GPU activity or kernel launches is ranked over its cpu_op events, as a
    profiled serving run of a CPU server is, by self time (nested ops are not counted twice)."""
    run = run_on_files(magpie, tmp_path, {"cpuonly.json.gz": trace_without(H200_LLAMA, lambda e: e.get("cat") == "cpu_op")})
    run.assert_ok()
    assert "CPU-only" in run.proc.stderr and "self time" in run.proc.stderr, run.describe()
    ops = [e for e in load_trace(H200_LLAMA)["traceEvents"] if e.get("cat") == "cpu_op"]
    report = check_self_time_csv(run, ops)
    assert report["config"]["categories"] == ["cpu_op"] and "CPU-only" in report["cpu_fallback"]
    assert report["total_duration_us"] < 0.8 * sum(float(e["dur"]) for e in ops)  # the ops nest


def test_categories_cpu_op_counts_self_time(magpie, tmp_path):
    """--categories cpu_op on a GPU trace: ops nest (aten::linear > aten::addmm), so each counts
    its self time, under a column that says CPU."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    shutil.copy(H100_QWEN, trace_dir / H100_QWEN.name)
    cmd = [str(magpie), "benchmark", "--trace-dir", str(trace_dir), "-o", str(tmp_path / "out"),
           "--top-k", "100000", "--categories", "cpu_op"]
    run = Run(trace_dir, tmp_path / "out", subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S))
    run.assert_ok()
    check_self_time_csv(run, [e for e in load_trace(H100_QWEN)["traceEvents"] if e.get("cat") == "cpu_op"])
    assert "Self CPU (us)" in run.proc.stdout and "Self CUDA" not in run.proc.stdout, run.proc.stdout[:2000]


def test_launches_without_device_events_blame_the_profiler(magpie, tmp_path):
    """CUDA runtime calls (kernel launches) but no kernels: the GPU side was lost, which
    recording with ProfilerActivity.CUDA would not fix by itself."""
    lost = trace_without(H200_LLAMA, lambda e: e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"))
    run = run_on_files(magpie, tmp_path, {"lost.json.gz": lost})
    assert_fails(run, 6, "lost.json.gz")
    err = run.proc.stderr
    assert "kernel launches" in err and "CUPTI" in err and "flushed" in err, run.describe()
    assert "ProfilerActivity.CUDA" not in err, run.describe()


PUBLIC_DATA = Path(__file__).resolve().parents[1] / "data" / "public_traces"


def test_range_profiler_trace_is_told_to_drop_profiler_metrics(magpie, tmp_path):
    """HTA's CUPTI profiler trace: launches and cuda_profiler_range events, no kernels."""
    name = "hta__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz"
    run = run_on_files(magpie, tmp_path, {name: (PUBLIC_DATA / name).read_bytes()})
    assert_fails(run, 6, name)
    assert "range profiler" in run.proc.stderr and "profiler_metrics" in run.proc.stderr, run.describe()


def test_another_accelerator_is_told_which_category_to_pass(magpie, tmp_path):
    """HTA's MTIA trace: its device work is in mtia_ccp_events; passing that category ranks it."""
    name = "hta__mtia_inference_trace__mtia_inference_rank_0.json.gz"
    run = run_on_files(magpie, tmp_path, {name: (PUBLIC_DATA / name).read_bytes()})
    assert_fails(run, 6, name)
    assert "--categories mtia_ccp_events" in run.proc.stderr, run.describe()
    cmd = [str(magpie), "benchmark", "--trace-dir", str(run.trace_dir), "-o", str(tmp_path / "out2"),
           "--categories", "mtia_ccp_events"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr


def rocprof_v1_results_json() -> bytes:
    """A results.json as rocprof v1 writes it (rocprof --hip-trace): `{ "traceEvents":[{}` then one
    line per lane label and per record, "ts"/"dur" as strings and BeginNs/EndNs args. Written
    here in that writer's format (its tblextr.py), as no licensed rocprof v1 file is at hand."""
    lines = ['{ "traceEvents":[{}',
             ',{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name"}',
             ',{"args":{"name":"GPU0"},"ph":"M","pid":6,"name":"process_name"}',
             ',{"ph":"X","name":"hipLaunchKernel","pid":2,"tid":2385,"ts":"1201478076","dur":"12",\n'
             '  "args":{\n    "BeginNs":"1201478076289",\n    "EndNs":"1201478088289",\n'
             '    "Name":"hipLaunchKernel",\n    "DurationNs":"12000"\n  }\n}',
             ',{"ph":"X","name":"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32","pid":6,"tid":0,"ts":"1201478090","dur":"35",\n'
             '  "args":{\n    "BeginNs":"1201478090100",\n    "EndNs":"1201478125100",\n'
             '    "DurationNs":"35000"\n  }\n}',
             '],', '"otherData": {}', '}']
    return ("\n".join(lines) + "\n").encode()


def test_rocprof_v1_is_named_with_what_is_read(magpie, tmp_path):
    run = run_on_files(magpie, tmp_path, {"results.json": rocprof_v1_results_json()})
    assert_fails(run, 5, "results.json")
    err = run.proc.stderr
    assert "rocprof v1" in err and "rocprofv3" in err and "ProfilerActivity.CUDA" not in err, run.describe()


# --------------------------------------------------------------------------
# Each run keeps its own folder
# --------------------------------------------------------------------------

def results_list(magpie, env) -> list:
    proc = subprocess.run([str(magpie), "results", "list", "--kind", "gap_analysis", "--json"],
                          capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    return sorted(json.loads(proc.stdout), key=lambda r: r["id"])


def test_two_runs_into_one_output_folder_keep_both(magpie, tmp_path):
    """A second run into the same -o writes a folder of its own: the first run's files stay as
    they were, each store row points at its own run's folder, and <out>/gap_analysis (the path
    Magpie's users' scripts read) is the newest run."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    shutil.copy(H100_QWEN, trace_dir / H100_QWEN.name)
    out = tmp_path / "out"
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))

    def go(top_k: int) -> dict:
        cmd = [str(magpie), "benchmark", "--trace-dir", str(trace_dir), "-o", str(out), "--top-k", str(top_k)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
        assert proc.returncode == 0, proc.stderr
        return json.loads((out / "gap_analysis" / "gap_analysis.json").read_text())

    first = go(3)
    first_dir = Path(first["output_dir"])
    before = {p.name: p.read_bytes() for p in first_dir.iterdir()}
    second = go(5)
    second_dir = Path(second["output_dir"])
    assert first_dir != second_dir and first_dir.parent == second_dir.parent == out
    assert {p.name: p.read_bytes() for p in first_dir.iterdir()} == before
    assert len(read_csv(first_dir / "gap_analysis.csv")[1]) == 3
    assert len(read_csv(second_dir / "gap_analysis.csv")[1]) == 5
    assert (out / "gap_analysis").is_symlink() and (out / "gap_analysis").resolve() == second_dir.resolve()
    rows = results_list(magpie, env)
    assert [r["workspace"] for r in rows] == [str(first_dir.resolve()), str(second_dir.resolve())], rows
    assert all(r["status"] == "succeeded" and r["workspace_exists"] for r in rows)


def test_an_older_fixed_folder_is_moved_with_its_store_row(magpie, tmp_path):
    """Before runs had folders of their own, every run wrote <out>/gap_analysis/. The next run
    moves that folder to a run folder of its own and repoints the store rows recorded at it."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    shutil.copy(H100_QWEN, trace_dir / H100_QWEN.name)
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))
    out = tmp_path / "out"
    out.mkdir()
    old = run_magpie(magpie, trace_dir, tmp_path / "earlier")
    old.assert_ok()
    shutil.copytree((tmp_path / "earlier" / "gap_analysis").resolve(), out / "gap_analysis")  # a real folder
    old_json = (out / "gap_analysis" / "gap_analysis.json").read_bytes()
    imported = subprocess.run([str(magpie), "results", "import", str(out / "gap_analysis")],
                              capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert "imported 1 workspace" in imported.stdout, imported.stdout + imported.stderr
    proc = subprocess.run([str(magpie), "benchmark", "--trace-dir", str(trace_dir), "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    assert "moved them to" in proc.stderr, proc.stderr
    assert (out / "gap_analysis").is_symlink()
    imported_row, new_row = results_list(magpie, env)
    moved = Path(imported_row["workspace"])
    assert moved.parent == out.resolve() and moved.name.startswith("gap_analysis_"), imported_row
    assert (moved / "gap_analysis.json").read_bytes() == old_json
    assert Path(new_row["workspace"]) == (out / "gap_analysis").resolve() != moved


@pytest.mark.skipif(os.geteuid() == 0, reason="running as root: root reads a chmod 000 file, so it cannot be unreadable")
def test_unreadable_file(magpie, tmp_path):
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    locked = trace_dir / "locked.json.gz"
    shutil.copy(H200_LLAMA, locked)
    locked.chmod(0)
    try:
        assert_fails(run_magpie(magpie, trace_dir, tmp_path / "out"), 4, "locked.json.gz")
    finally:
        locked.chmod(0o644)


def test_one_broken_rank_is_skipped(magpie, tmp_path):
    good = H100_QWEN.read_bytes()
    bad = H200_LLAMA.read_bytes()
    run = run_on_files(magpie, tmp_path, {"a-rank-0.pt.trace.json.gz": good,
                                          "a-rank-1.pt.trace.json.gz": bad[: len(bad) // 2]})
    report = run.report()
    exp = expected_for(H100_QWEN)
    assert close(report["total_duration_us"], exp.grand_total), (report["total_duration_us"], exp.grand_total)
    check_top_kernels(report, exp.durations, exp.grand_total)
    assert [Path(str(r["trace_file"])).name for r in report["ranks"]] == ["a-rank-0.pt.trace.json.gz"], report["ranks"]
    assert report["num_ranks"] == 1, report["num_ranks"]
    skipped = report.get("skipped")
    assert skipped, f"gap_analysis.json has no 'skipped' list: {sorted(report)}"
    text = json.dumps(skipped)
    assert "a-rank-1.pt.trace.json.gz" in text, skipped
    assert "truncated" in text.lower(), f"skip reason does not say why: {skipped}"
    assert "a-rank-1.pt.trace.json.gz" in run.proc.stdout + run.proc.stderr, f"no warning printed\n{run.describe()}"


H200_GRAPHS = Path(__file__).resolve().parents[1] / "data" / "h200_graphs"


def read_with_defaults(path: Path) -> list:
    """The CSV read as a user's script reads it: csv.DictReader and (where installed)
    pandas.read_csv, both with their defaults; no line skipped by hand. Both must see the
    same header and the same rows."""
    text = path.read_text(encoding="utf-8")
    assert not text.startswith("#"), f"{path} starts with a comment line:\n{text[:300]}"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and list(rows[0])[0] == "Name", list(rows[0])[:3] if rows else "no rows"
    try:
        import pandas
    except ImportError:
        return rows
    frame = pandas.read_csv(path, keep_default_na=False, dtype=str)
    assert list(frame.columns) == list(rows[0]), (list(frame.columns), list(rows[0]))
    assert len(frame) == len(rows)
    assert list(frame["Name"]) == [r["Name"] for r in rows]
    return rows


@pytest.mark.skipif(not (H200_GRAPHS / "inductor_cache").is_dir(),
                    reason=f"no recorded torch.compile run in {H200_GRAPHS}")
def test_torch_compile_kernels_resolve_to_their_inductor_cache_file(magpie, tmp_path):
    """Every triton_* kernel of a torch.compile trace maps `exact` to its own kernel file in the
    Inductor cache, with the compiled module named as the call site."""
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(H200_GRAPHS / "compile_reduce_overhead.json.gz", traces)
    cache = H200_GRAPHS / "inductor_cache"
    proc = subprocess.run([str(magpie), "benchmark", "--trace-dir", str(traces), "-o", str(tmp_path),
                           "--top-k", "1000", "--find-kernel-sources", "--kernel-source-repos", str(cache)],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    csv_path = tmp_path / "gap_analysis" / "gap_analysis.csv"
    rows = read_with_defaults(csv_path)
    # What each $VAR of the source columns stands for: in the JSON and on the console, not the CSV.
    report = json.loads((tmp_path / "gap_analysis" / "gap_analysis.json").read_text())
    assert report["repo_path_mappings"] == {"$INDUCTOR_CACHE": str(cache)}, report.get("repo_path_mappings")
    assert f"$INDUCTOR_CACHE={cache}" in proc.stdout, proc.stdout[-2000:]
    triton = [r for r in rows if r["Name"].startswith("triton_")]
    with gzip.open(H200_GRAPHS / "compile_reduce_overhead.json.gz", "rt") as f:
        names = {e["name"] for e in json.load(f)["traceEvents"]
                 if e.get("cat") == "kernel" and e["name"].startswith("triton_")}
    assert names and {r["Name"] for r in triton} == names
    for r in triton:
        assert r["notes"].startswith("exact:"), r["notes"]
        assert r["source_resolution"] == "resolved"
        path = r["source_file"].split("/", 1)[1].rsplit(":", 1)[0]
        defined = (cache / path).read_text()
        assert f"def {r['Name']}(" in defined and "async_compile.triton(" not in defined
        assert "(Inductor output code)" in r["notes"], r["notes"]
        # The Triton reference is the kernel's own definition.
        assert r["triton_ref_file"] == r["source_file"] and r["triton_ref_symbol"] == r["Name"]
        # The eager baseline: the ATen ops the output code says Inductor fused into this kernel,
        # read here from the comment above the kernel's async_compile.triton(...) line.
        out_file, line = r["baseline_ref_file"].split("/", 1)[1].rsplit(":", 1)
        lines = (cache / out_file).read_text().splitlines()
        comment = lines[int(line) - 1]
        assert "Original ATen: [" in comment, comment
        below = lines[int(line):]
        first_code = next(x for x in below if not x.startswith("#"))
        assert first_code.startswith(f"{r['Name']} = async_compile.triton("), first_code
        fused = []
        for op in comment.split("Original ATen: [", 1)[1].split("]", 1)[0].split(","):
            if op.strip() and "torch.ops." + op.strip() not in fused:
                fused.append("torch.ops." + op.strip())
        assert r["baseline_ref_symbol"] == "; ".join(fused) and r["baseline_ref_kind"] == "eager_fn"
        assert r["upstream_url"] == "" and r["test_file"] == ""  # a cache, not a checkout
    # nvjet GEMMs launched by aten::addmm get that op as their eager baseline.
    gemm = [r for r in rows if r["Launching Op"].startswith("aten::") and r["source_resolution"] == "unsupported"]
    for r in gemm:
        assert r["baseline_ref_symbol"] == "torch.ops.aten." + r["Launching Op"][6:], r
