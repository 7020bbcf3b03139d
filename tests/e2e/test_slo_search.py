"""The SLO search (`--search`, issue 30) against the timed stub with a fixed
number of slots, whose knee follows from its parameters:

- each request holds a slot for S = TTFT + (OSL - 1) * ITL of the stub's own
  sleeps, and a request that finds every slot taken waits for one;
- concurrency: up to N (the slots) in flight, nobody waits, TTFT = the stub's
  TTFT; at N + 1 one request in N + 1 waits a whole S, so the TTFT p90 (of 20 requests, 5 of them waiting) is
  TTFT + S. An SLO halfway between is met up to N and missed from N + 1 on;
- request rate with near-regular arrivals (burstiness 10000: gaps within about
  1%): below N / S req/s a request finds a free slot; above it the queue grows
  with every request, and so does TTFT.

The margins are wide (a passing TTFT is 80 ms under its limit, a failing one
75 ms and more over it, and the statistic is a p90 or median of 20 and more
requests, so a few requests delayed by a loaded machine do not move it); the
rate knee is asserted within one step, as probes near N / S may land either way."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_serving_keys import run, start_stub  # noqa: E402

pytestmark = pytest.mark.e2e

TTFT_MS, ITL_MS, OSL = 100, 20, 4
SERVICE_MS = TTFT_MS + (OSL - 1) * ITL_MS  # 160 ms a slot is held
LIMIT_MS = 180  # met with no queueing (100 ms), missed by one wait (260 ms)
SLO = f"ttft_p90<={LIMIT_MS}ms"
COMMON = ["--input-len", "8", "--output-len", str(OSL), "--range-ratio", "0", "--token-id-max", "4000",
          "--warmups", "0", "--slo", SLO]


@pytest.fixture
def slotted_stub():
    procs = []

    def start(slots):
        proc, port = start_stub("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--slots", str(slots))
        procs.append(proc)
        return f"http://127.0.0.1:{port}"
    yield start
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


def test_concurrency_search_finds_the_stubs_slot_count(magpie, tmp_path, slotted_stub):
    slots = 3
    url = slotted_stub(slots)
    # 20 requests a run at every concurrency: at N + 1, 5 of them wait.
    proc, report, ws = run(magpie, ["vllm", "--endpoint", url, *COMMON, "--num-prompts", "20", "--search",
                                    "concurrency", "--search-range", "1:16"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    s = report["slo_search"]
    assert s["status"] == "found", s["summary"]
    # The knee from the stub's parameters: N slots pass, N + 1 waits.
    assert s["knee"] == {"highest_pass": slots, "lowest_fail": slots + 1}, s["summary"]
    assert s["step"] == 1 and s["variable"] == "concurrency"
    # Bracketing doubled 1, 2, 4 (fails), then bisected to 3.
    assert [p["value"] for p in s["probes"]] == [1, 2, 4, 3]
    for p in s["probes"]:
        assert p["verdict"] == ("pass" if p["value"] <= slots else "fail"), p
        assert len(p["runs"]) == 2, p  # repeats, none within noise
        (term,) = p["terms"]
        assert term["term"] == SLO and term["limit_ms"] == LIMIT_MS and len(term["values_ms"]) == 2
        if p["value"] <= slots:
            assert TTFT_MS <= term["value_ms"] < LIMIT_MS, term
        else:  # one request waited (all but the client's turnaround of) a whole service time
            assert term["value_ms"] >= TTFT_MS + SERVICE_MS - 20, term
        assert p["request_throughput"] > 0
        # Each run is a case of the report, in its own folder.
        for label in p["runs"]:
            assert (ws / "cases" / label / "requests.jsonl").is_file(), label
    assert len(report["cases"]) == 8
    out = proc.stdout + proc.stderr
    assert "slo search: probe 3: concurrency 4: fail" in proc.stderr, proc.stderr
    assert "knee: concurrency 3 passes, concurrency 4 fails" in out
    assert "SLO search (concurrency, knee: concurrency 3 passes" in (ws / "summary.txt").read_text()
    # The top-level figures (and so the results store's) are the knee's first run, not the lowest probe's.
    knee_run = s["probes"][3]["runs"][0]
    assert s["headline_case"] == knee_run
    (knee_case,) = [c for c in report["cases"] if c["label"] == knee_run]
    assert report["throughput"] == knee_case["throughput"] and report["latency"] == knee_case["latency"]
    assert report["throughput"] != report["cases"][0]["throughput"]


def test_rate_search_finds_the_knee_within_one_step(magpie, tmp_path, slotted_stub):
    slots, step = 2, 2.0
    url = slotted_stub(slots)
    knee = slots * 1000 / SERVICE_MS  # 12.5 req/s: N slots of S each
    # The median: above the knee the queue grows with every request, so half of them wait.
    args = [a.replace(SLO, f"ttft_p50<={LIMIT_MS}ms") for a in COMMON]
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *args, "--concurrency", "64", "--burstiness", "10000",
                                   "--duration", "2", "--search", "request_rate", "--search-range", "2:32",
                                   "--search-step", str(step)], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    s = report["slo_search"]
    assert s["status"] == "found", s["summary"]
    lo, hi = s["knee"]["highest_pass"], s["knee"]["lowest_fail"]
    assert 0 < hi - lo <= step, s["knee"]
    assert lo - step <= knee <= hi + step, (knee, s["knee"], [(p["value"], p["verdict"]) for p in s["probes"]])
    # Far from the knee the verdicts are certain: 64% of the capacity passes, 128% fails.
    verdicts = {p["value"]: p["verdict"] for p in s["probes"]}
    assert verdicts[4] == "pass" and verdicts[8] == "pass" and verdicts[16] == "fail", verdicts


def test_a_search_that_cannot_run_is_exit_2_naming_the_option(magpie, tmp_path, slotted_stub):
    url = slotted_stub(1)
    cases = [
        (["--search", "request_rate", "--search-range", "8:2"], "--search-range: the search range 8..2 req/s is empty"),
        (["--search", "concurrency", "--search-range", "1.5:4"], "a concurrency search takes whole numbers"),
        (["--search", "request_rate", "--search-range", "0:4"], "must start above 0"),
        (["--search", "request_rate"], "--search needs --search-range MIN:MAX"),
        (["--search-step", "2"], "none was asked for"),
    ]
    for extra, says in cases:
        proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *COMMON, *extra], tmp_path / str(len(extra)))
        assert proc.returncode == 2 and report is None, (extra, proc.stdout + proc.stderr)
        assert says in proc.stderr, (extra, proc.stderr)
    # No SLOs to meet, and an SLO string that does not parse.
    args = [a for a in COMMON if a not in ("--slo", SLO)]
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *args, "--search", "concurrency",
                                   "--search-range", "1:4"], tmp_path / "noslo")
    assert proc.returncode == 2 and report is None and "needs SLOs to meet" in proc.stderr, proc.stderr
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *args, "--slo", "ttft_p99<=80", "--search",
                                   "concurrency", "--search-range", "1:4"], tmp_path / "badslo")
    assert proc.returncode == 2 and report is None and "--slo: 'ttft_p99<=80'" in proc.stderr, proc.stderr


def test_a_search_stopped_by_its_budget_keeps_its_probes(magpie, tmp_path, slotted_stub):
    url = slotted_stub(3)
    proc, report, ws = run(magpie, ["vllm", "--endpoint", url, *COMMON, "--search", "concurrency",
                                    "--search-range", "1:16", "--search-max-probes", "2"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    s = report["slo_search"]
    assert s["status"] == "budget" and [p["value"] for p in s["probes"]] == [1, 2], s
    assert s["knee"] == {"highest_pass": 2, "lowest_fail": None}
    assert "stopped by its budget after 2 probes" in proc.stderr
    assert len(report["cases"]) == 4


def test_a_search_cut_short_by_the_timeout_keeps_its_probes(magpie, tmp_path, slotted_stub):
    """The whole search takes about 10 s (four probes of two runs of 10 to 40 requests); its first
    probe about 3.2 s (20 requests of 160 ms one after another). The run's 6 s timeout ends it in
    between: what was probed is kept, the bracket so far reported."""
    url = slotted_stub(3)
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *COMMON, "--search", "concurrency",
                                   "--search-range", "1:16", "--timeout", "6"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["status"] == "timeout" and report["complete"] is False
    s = report["slo_search"]
    assert s["status"] == "interrupted" and s["probes"], s
    assert "cut short after" in s["summary"]
    assert s["probes"][0]["value"] == 1 and s["probes"][0]["verdict"] == "pass"
    assert s["knee"]["highest_pass"] >= 1
    labels = {c["label"] for c in report["cases"]}
    assert all(set(p["runs"]) <= labels for p in s["probes"])


def test_an_error_mid_search_keeps_its_probes_and_says_why(magpie, tmp_path, slotted_stub):
    """The dataset is read again for every run. Once the first run has started (its request log
    exists), the test makes the file malformed, as a dataset edited under a running search would
    be: the next run fails with the file's error, and the report keeps the search so far."""
    url = slotted_stub(3)
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"prompt_token_ids": [11, 12, 13, 14, 15, 16, 17, 18]}) + "\n"
                            for _ in range(20)))
    out = tmp_path / "out"
    # COMMON without its random-token options (the dataset gives the prompts).
    args = ["--output-len", str(OSL), "--warmups", "0", "--slo", SLO]
    proc = subprocess.Popen([str(magpie), "benchmark", "vllm", "--endpoint", url, *args, "--dataset", "jsonl",
                             "--dataset-path", str(data), "--num-prompts", "20", "--search", "concurrency",
                             "--search-range", "1:16", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Drain both pipes while waiting (a full pipe would stall the run).
    streams = {}
    readers = [threading.Thread(target=lambda n, f: streams.__setitem__(n, f.read()), args=(n, f))
               for n, f in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    deadline = time.monotonic() + 120
    while not list(out.glob("benchmark_*/cases/*_run1/requests.jsonl")):
        if proc.poll() is not None:
            for t in readers:
                t.join()
        assert proc.poll() is None and time.monotonic() < deadline, ("the first run never started", streams)
        time.sleep(0.05)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    os.replace(broken, data)
    proc.wait(timeout=120)
    for t in readers:
        t.join()
    stderr = streams["err"]
    (ws,) = out.glob("benchmark_*")
    report = json.loads((ws / "benchmark_report.json").read_text())
    assert proc.returncode == 1, stderr
    assert report["success"] is False and report["complete"] is False
    s = report["slo_search"]
    assert s["status"] == "error", s
    assert f"{data}:1" in s["error"] and "JSONL line is not a JSON object" in s["error"], s
    assert any("JSONL line is not a JSON object" in e for e in report["errors"]), report["errors"]
    # The first run was measured before the file broke: its probe is kept, with the runs it has.
    assert s["probes"] and s["probes"][0]["value"] == 1, s
    labels = {c["label"] for c in report["cases"]}
    assert all(p["runs"] and set(p["runs"]) <= labels for p in s["probes"])
    assert "stopped by an error after" in s["summary"] and "slo search: stopped by an error" in stderr, stderr
