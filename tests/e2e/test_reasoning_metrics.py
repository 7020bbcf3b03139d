"""Metrics of today's models (issue 30 item 6) against the timed stub with
known timing: a reasoning model's stream (the first R tokens of each chat reply
as delta.reasoning_content, --reasoning-tokens R) gives the time to the first
reasoning token (the stub's TTFT) and to the first output token (TTFT + R
token gaps) apart, with the reasoning-token count from usage; and a server
exposing vLLM's speculative-decoding counters (--spec-decode K,A: every
generated token one draft of K tokens, A accepted) gives the acceptance rate
A/K and the mean acceptance length 1 + A from their deltas over the case."""
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_serving_keys import run, start_stub  # noqa: E402

pytestmark = pytest.mark.e2e

TTFT_MS, ITL_MS, REASONING, OSL, N = 40, 15, 5, 8, 12
BASE = ["vllm", "--api", "chat", "--input-len", "8", "--output-len", str(OSL), "--range-ratio", "0",
        "--token-id-max", "4000", "--num-prompts", str(N), "--concurrency", "4", "--warmups", "2"]


def run_on_stub(magpie, tmp_path, *stub_args):
    """The benchmark against a chat stub started with `stub_args`: (report, workspace)."""
    proc_stub, port = start_stub("--chat", *stub_args)
    try:
        proc, report, ws = run(magpie, [*BASE, "--endpoint", f"http://127.0.0.1:{port}"], tmp_path)
    finally:
        proc_stub.terminate()
        proc_stub.wait(timeout=10)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return report, ws


def test_reasoning_and_output_tokens_apart_and_spec_decode_acceptance(magpie, tmp_path):
    report, ws = run_on_stub(magpie, tmp_path, "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                             "--reasoning-tokens", str(REASONING), "--spec-decode", "4,3")
    (case,) = report["cases"]
    r = case["reasoning"]
    assert r["requests"] == N and r["reasoning_tokens"] == N * REASONING, r
    # The stub writes token k at TTFT + k * ITL, never early: the first reasoning token at TTFT, the
    # first output token REASONING gaps later; each measured at or after its deadline.
    first_r, first_o = r["first_reasoning_token"], r["first_output_token"]
    assert r["requests_with_output"] == N
    assert TTFT_MS <= first_r["median_ms"] < TTFT_MS + ITL_MS, first_r
    assert TTFT_MS + REASONING * ITL_MS <= first_o["median_ms"] < TTFT_MS + (REASONING + 1) * ITL_MS, first_o
    assert case["latency"]["ttft"]["median_ms"] == pytest.approx(first_r["median_ms"], abs=0.5)
    # Acceptance from the counters' deltas over the measured requests (warm-ups excluded).
    sd = case["spec_decode"]
    assert sd["drafts"] == N * OSL and sd["draft_tokens"] == 4 * N * OSL and sd["accepted_tokens"] == 3 * N * OSL, sd
    assert sd["acceptance_rate"] == 0.75 and sd["mean_acceptance_length"] == 4.0, sd
    summary = (ws / "summary.txt").read_text()
    assert f"Reasoning: {N} requests, {N * REASONING} reasoning tokens" in summary, summary
    assert "Speculative decoding: acceptance rate 0.750, mean acceptance length 4.00" in summary, summary


def test_a_plain_model_and_server_report_neither(magpie, tmp_path):
    report, ws = run_on_stub(magpie, tmp_path, "--ttft-ms", "5", "--itl-ms", "1")
    (case,) = report["cases"]
    assert "reasoning" not in case and "spec_decode" not in case, case.keys()
    assert "Reasoning:" not in (ws / "summary.txt").read_text()
