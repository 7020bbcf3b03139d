"""Rate and concurrency ramps (`--rate-ramp`, `--concurrency-ramp`, issue 30 item 5) against the timed stub with a
fixed number of slots: N slots each held S = TTFT + (OSL - 1) * ITL ms serve
N / S req/s. A step below that rate queues nothing (TTFT p99 = the stub's TTFT);
a step above it queues more with every request. The steps sit 20% and more
either side of the capacity and the SLO is on the median TTFT with 80 ms to
spare, so a few requests delayed by a loaded machine do not flip a verdict."""
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_serving_keys import run, start_stub  # noqa: E402

pytestmark = pytest.mark.e2e

TTFT_MS, ITL_MS, OSL, SLOTS = 100, 20, 4, 2
CAPACITY = SLOTS * 1000 / (TTFT_MS + (OSL - 1) * ITL_MS)  # 12.5 req/s
LIMIT_MS = 180


@pytest.fixture
def slotted_stub():
    proc, port = start_stub("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--slots", str(SLOTS))
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def test_rate_steps_cross_the_stubs_capacity(magpie, tmp_path, slotted_stub):
    rates = [4, 10, 16, 22]  # 0.32x, 0.8x, 1.28x, 1.76x the capacity
    proc, report, ws = run(magpie, ["vllm", "--endpoint", slotted_stub, "--input-len", "8", "--output-len", str(OSL),
                                    "--range-ratio", "0", "--token-id-max", "4000", "--warmups", "0",
                                    "--concurrency", "256", "--burstiness", "10000", "--slo", f"ttft_p50<={LIMIT_MS}ms",
                                    "--rate-ramp", "steps:4,22,6,4"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (case,) = report["cases"]
    windows = case["ramp"]
    assert [w["offered_rate"] for w in windows] == rates
    assert [(w["from_s"], w["to_s"]) for w in windows] == [(0, 1.5), (1.5, 3), (3, 4.5), (4.5, 6)]
    for w, rate in zip(windows, rates):
        assert abs(w["requests"] - rate * 1.5) <= 1, w  # the schedule follows the step
        assert w["failed"] == 0, w
        below = rate < CAPACITY
        assert w["slo"]["met"] is below, w
        if below:
            assert TTFT_MS <= w["ttft_median_ms"] < LIMIT_MS, w
    assert windows[3]["ttft_median_ms"] > windows[2]["ttft_median_ms"] > LIMIT_MS
    assert case["num_prompts"] == sum(w["requests"] for w in windows)
    summary = (ws / "summary.txt").read_text()
    assert "Rate ramp CONC256_ISL8_OSL4:" in summary and "NOT met" in summary, summary


def test_a_ramp_that_cannot_run_is_exit_2(magpie, tmp_path, slotted_stub):
    base = ["vllm", "--endpoint", slotted_stub, "--input-len", "8", "--output-len", "4", "--token-id-max", "4000"]
    for extra, says in [(["--rate-ramp", "steps:5,35,6"], "--rate-ramp: 'steps:5,35,6' has 3 numbers"),
                        (["--rate-ramp", "linear:1,8,5", "--duration", "5"], "cannot be combined with --duration"),
                        (["--rate-ramp", "linear:1,8,5", "--request-rate", "4"], "cannot be combined with --request-rate")]:
        proc, report, _ = run(magpie, [*base, *extra], tmp_path / str(len(extra)))
        assert proc.returncode == 2 and report is None, (extra, proc.stdout + proc.stderr)
        assert says in proc.stderr, (extra, proc.stderr)


def test_concurrency_steps_cross_the_stubs_slots(magpie, tmp_path, slotted_stub):
    """Closed loop: with C in flight on 2 slots of S = 160 ms each, C <= 2 queues nothing
    (TTFT = the stub's, C / S req/s) and C > 2 serves the capacity with the rest queued:
    TTFT about C / CAPACITY - S + TTFT: 260 ms at 4, 420 ms at 6, 580 ms at 8."""
    caps = [2, 4, 6, 8]
    proc, report, ws = run(magpie, ["vllm", "--endpoint", slotted_stub, "--input-len", "8", "--output-len", str(OSL),
                                    "--range-ratio", "0", "--token-id-max", "4000", "--warmups", "0",
                                    "--slo", f"ttft_p50<={LIMIT_MS}ms", "--concurrency-ramp", "steps:2,8,6,4"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (case,) = report["cases"]
    assert case["concurrency"] == 8 and case["label"] == "CONC8_ISL8_OSL4", case["label"]
    windows = case["ramp"]
    assert [w["target_concurrency"] for w in windows] == caps
    assert all("offered_rate" not in w for w in windows)
    hold_s = (TTFT_MS + (OSL - 1) * ITL_MS) / 1000
    for w, cap in zip(windows, caps):
        assert w["failed"] == 0, w
        # The client keeps the cap filled: what was in flight is the target, give or take a request's turn-around.
        assert abs(w["mean_in_flight"] - cap) <= 0.15 * cap, w
        expected_rate = min(cap, SLOTS) / hold_s
        assert abs(w["request_throughput"] - expected_rate) <= 0.25 * expected_rate, w
        below = cap <= SLOTS
        assert w["slo"]["met"] is below, w
        if below:
            assert TTFT_MS <= w["ttft_median_ms"] < LIMIT_MS, w
    assert windows[3]["ttft_median_ms"] > windows[2]["ttft_median_ms"] > windows[1]["ttft_median_ms"] > LIMIT_MS
    assert case["num_prompts"] == sum(w["requests"] for w in windows)
    summary = (ws / "summary.txt").read_text()
    assert "Concurrency ramp CONC8_ISL8_OSL4:" in summary and "NOT met" in summary, summary


def test_a_concurrency_ramp_that_cannot_run_is_exit_2(magpie, tmp_path, slotted_stub):
    base = ["vllm", "--endpoint", slotted_stub, "--input-len", "8", "--output-len", "4", "--token-id-max", "4000"]
    for extra, says in [(["--concurrency-ramp", "steps:1,2.5,6,2"], "--concurrency-ramp: 'steps:1,2.5,6,2' has a "
                         "concurrency that is not a whole number >= 1"),
                        (["--concurrency-ramp", "linear:1,8,5", "--concurrency", "4"],
                         "cannot be combined with --concurrency"),
                        (["--concurrency-ramp", "linear:1,8,5", "--rate-ramp", "linear:1,8,5"],
                         "cannot be combined with --rate-ramp")]:
        proc, report, _ = run(magpie, [*base, *extra], tmp_path / str(len(extra)))
        assert proc.returncode == 2 and report is None, (extra, proc.stdout + proc.stderr)
        assert says in proc.stderr, (extra, proc.stderr)
