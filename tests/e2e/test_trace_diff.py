"""`magpie trace-diff`: a real before/after pair (torch.compile default vs reduce-overhead, i.e.
CUDA graph trees, recorded on an H200; tests/data/h200_graphs/README.md) diffed by the real
binary, with the ops that changed, per-op totals and the end-to-end change checked against an
independent reading of the raw trace JSON in Python; a trace diffed with itself; the H100 vs
MI300 traces of one model (different GPUs: a warning and a partial result); unreadable input."""
import csv
import gzip
import json
import statistics
import subprocess

import pytest

from conftest import REPO_ROOT, shared_traces

DATA = REPO_ROOT / "tests" / "data" / "h200_graphs"
BEFORE = DATA / "compile_default.json.gz"
AFTER = DATA / "compile_reduce_overhead.json.gz"
PUBLIC = shared_traces() / "public"


def run(magpie, *args, check=True):
    r = subprocess.run([str(magpie), "trace-diff", *map(str, args)], capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def events(path):
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def op_total(ev, name):
    calls = [e for e in ev if e.get("cat") == "cpu_op" and e["name"] == name]
    return len(calls), sum(e["dur"] for e in calls)


def kernel_total(ev, name):
    return sum(e["dur"] for e in ev if e.get("cat") == "kernel" and e["name"] == name)


def iteration_lengths(ev):
    """Independent iteration windows: each opens at a `TorchDynamo Cache Lookup` (one per call of
    the compiled module; the traces have no ProfilerStep) and closes at the last end of the host
    work (ops, annotations, runtime calls) that started before the next one opens."""
    starts = sorted(e["ts"] for e in ev if e.get("name") == "TorchDynamo Cache Lookup")
    host = [e for e in ev if e.get("ph") == "X" and e.get("cat") in
            ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "gpu_user_annotation")]
    out = []
    for a, b in zip(starts, starts[1:] + [float("inf")]):
        out.append(max(e["ts"] + e["dur"] for e in host if a <= e["ts"] < b) - a)
    return out


def whole_window(ev):
    x = [e for e in ev if e.get("ph") == "X" and e.get("cat") not in (None, "Trace", "overhead")]
    return max(e["ts"] + e["dur"] for e in x) - min(e["ts"] for e in x)


def test_eager_vs_cuda_graphs_names_the_ops_that_changed_and_the_end_to_end_delta(magpie, tmp_path):
    out = tmp_path / "diff"
    r = run(magpie, BEFORE, AFTER, "-o", out)
    d = json.loads((out / "trace_diff.json").read_text())
    b, a = events(BEFORE), events(AFTER)

    # End to end, against the raw JSON: the whole window and the median iteration.
    e2e = d["end_to_end"]
    assert e2e["window_before_us"] == pytest.approx(whole_window(b), abs=0.01)
    assert e2e["window_after_us"] == pytest.approx(whole_window(a), abs=0.01)
    assert e2e["iterations_before"] == e2e["iterations_after"] == 3
    med_b, med_a = statistics.median(iteration_lengths(b)), statistics.median(iteration_lengths(a))
    assert e2e["median_step_before_us"] == pytest.approx(med_b, abs=0.01)
    assert e2e["median_step_after_us"] == pytest.approx(med_a, abs=0.01)
    assert e2e["median_step_delta_us"] == pytest.approx(med_a - med_b, abs=0.01)
    assert med_a < med_b  # CUDA graphs shortened the median call of the compiled module
    # ... explained by the critical path: the category changes sum to the end-to-end change.
    for key, total in (("window_breakdown", e2e["window_delta_us"]), ("median_step_breakdown", e2e["median_step_delta_us"])):
        assert sum(c["delta_us"] for c in e2e[key].values()) == pytest.approx(total, abs=0.01)
    assert e2e["median_step_breakdown"]["cpu"]["delta_us"] < 0  # less host work per call
    # ... and by op: the median call's path time per op covers the call; aten::addmm, whose host
    # time the graph replaces, is the largest drop.
    step_ops = d["critical_path_ops_median_step"]
    assert sum(o["path_delta_us"] for o in step_ops) == pytest.approx(e2e["median_step_delta_us"], abs=0.05)
    assert min(step_ops, key=lambda o: o["path_delta_us"])["name"] == "aten::addmm"

    # The ops that changed, with per-op totals recounted from the raw JSON.
    ops = d["ops"]
    addmm = [o for o in ops if o["op"] == "aten::addmm"]
    calls, host = op_total(b, "aten::addmm")
    assert calls == 6 and op_total(a, "aten::addmm")[0] == 0  # replayed inside the graph: no op
    assert {o["status"] for o in addmm} == {"removed"}
    assert sum(o["calls_before"] for o in addmm) == calls
    assert sum(o["host_before_us"] for o in addmm) == pytest.approx(host, abs=0.01)
    foreach = [o for o in ops if o["op"] == "aten::_foreach_copy_"]
    calls, host = op_total(a, "aten::_foreach_copy_")
    assert calls == 3 and [o["status"] for o in foreach] == ["added"]
    assert foreach[0]["host_after_us"] == pytest.approx(host, abs=0.01)
    # Kernels: the same Triton kernel, now launched from the graph: moved, GPU time as recorded.
    gelu = [k for k in d["kernels"] if k["kernel"] == "triton_poi_fused_gelu_0"]
    assert [k["status"] for k in gelu] == ["moved"]
    assert gelu[0]["gpu_before_us"] == pytest.approx(kernel_total(b, "triton_poi_fused_gelu_0"), abs=0.01)
    assert gelu[0]["gpu_after_us"] == pytest.approx(kernel_total(a, "triton_poi_fused_gelu_0"), abs=0.01)
    assert gelu[0]["op_before"] != gelu[0]["op_after"]

    # The console names them and the change; the CSVs hold every row.
    assert "median iteration" in r.stdout and f"{e2e['median_step_delta_us']:+.1f} us" in r.stdout
    for name in ("aten::_foreach_copy_", "aten::addmm", "triton_poi_fused_gelu_0"):
        assert name in r.stdout
    with open(out / "trace_diff_ops.csv") as f:
        assert len(list(csv.DictReader(f))) == len(ops)
    with open(out / "trace_diff_kernels.csv") as f:
        assert {row["status"] for row in csv.DictReader(f)} >= {"moved", "added"}
    assert (out / "trace_diff.html").is_file()


def test_a_trace_diffed_with_itself_reports_no_change(magpie):
    d = json.loads(run(magpie, AFTER, AFTER, "--json").stdout)
    assert d["counts"]["ops"]["changed"] == d["counts"]["ops"]["added"] == d["counts"]["ops"]["removed"] == 0
    assert d["counts"]["kernels"]["unchanged"] == len(d["kernels"]) > 0
    assert d["end_to_end"]["window_delta_us"] == 0 and d["end_to_end"]["median_step_delta_us"] == 0
    assert d["warnings"] == []


def test_one_model_on_h100_and_mi300_warns_and_matches_what_it_can(magpie):
    h100 = PUBLIC / "traces__h100__gaunernst_bert-small-uncased__1016001.json.gz"
    mi300 = PUBLIC / "traces__mi300__gaunernst_bert-small-uncased__1016001.json.gz"
    if not (h100.exists() and mi300.exists()):
        pytest.skip(f"{PUBLIC} is absent (the shared traces are not checked out beside the repo)")
    r = run(magpie, h100, mi300, "--json")
    d = json.loads(r.stdout)
    assert any("different GPUs" in w for w in d["warnings"]), d["warnings"]
    assert "warning: the traces ran on different GPUs" in r.stderr
    # The same model: most op places match on both sides.
    matched = d["counts"]["ops"]["changed"] + d["counts"]["ops"]["unchanged"]
    assert matched > d["counts"]["ops"]["added"] + d["counts"]["ops"]["removed"], d["counts"]


def test_ranks_of_a_merged_trace(magpie):
    merged = REPO_ROOT / "tests" / "data" / "trace_rules" / "tracefuse_merged_sampled_rank_0_1.json.gz"
    r = run(magpie, merged, merged, "--json")
    assert any("holds 2 ranks" in w for w in json.loads(r.stdout)["warnings"])
    d = json.loads(run(magpie, merged, merged, "--rank", "1", "--json").stdout)
    assert d["before"]["rank"] == d["after"]["rank"] == 1 and d["counts"]["ops"]["changed"] == 0
    r = run(magpie, merged, merged, "--rank", "7", check=False)
    assert r.returncode == 2 and "holds ranks 0, 1, not rank 7" in r.stderr, r.stderr


def test_unreadable_input_gets_the_loaders_error_and_exit_code(magpie, tmp_path):
    r = run(magpie, BEFORE, tmp_path / "missing.json.gz", check=False)
    assert r.returncode == 3 and "missing.json.gz" in r.stderr, (r.returncode, r.stderr)
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [ {"ph": "X", ')
    r = run(magpie, bad, AFTER, check=False)
    assert r.returncode == 5 and "bad.json" in r.stderr, (r.returncode, r.stderr)
