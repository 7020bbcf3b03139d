"""Session workloads and recorded traffic (issue 30), through the real binary
against the timed stub (timed_stream_server.py) in its prefix-cache mode: the
stub keeps every prefilled prompt and generated reply, charges its first token
--prefill-ms-per-token for each token it has not seen, and logs what it
received (the prompt's tokens, the cached count, the x- headers).

* Every turn of a session sends the whole history, the stub's own previous
  replies included (chat messages, or one completions text); the sticky
  session header names the session; --session-concurrency caps sessions.
* The report's TTFT by turn shows the drop a prefix cache gives: turn 0
  prefills a long shared system prompt plus the first message (the sessions
  start together, so none finds it cached); later turns only their new words.
* ShareGPT conversations send every user turn, with --output-len honoured on
  each; a conversation with no user turn is skipped with a warning.
* A Mooncake trace is replayed on its timestamps (never early), requests that
  share hash ids share their token blocks, and the report gives the send
  lateness; a malformed line is exit 5 naming the file and line, before
  anything starts; a knob the workload cannot honour is refused (exit 1)."""
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

pytestmark = pytest.mark.e2e
STUB = HERE / "timed_stream_server.py"


@pytest.fixture
def stub(tmp_path):
    """The stub with a prefix cache: 2 ms a token not cached, first token after 5 ms, 1 ms between tokens."""
    log = tmp_path / "stub.jsonl"
    proc = subprocess.Popen([sys.executable, str(STUB), "--words-are-tokens", "--ttft-ms", "5", "--itl-ms", "1",
                             "--prefill-ms-per-token", "2", "--chat", "--log", str(log)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("port "), line
    yield f"http://127.0.0.1:{line.split()[1]}", log
    proc.terminate()
    proc.wait(timeout=10)


def run(magpie, args, out):
    return subprocess.run([str(magpie), "benchmark", "-o", str(out), *args], capture_output=True, text=True,
                          timeout=120)


def report_of(out: Path) -> dict:
    reports = list(out.glob("benchmark_*/benchmark_report.json"))
    assert len(reports) == 1, reports
    return json.loads(reports[0].read_text())


def stub_log(log: Path) -> list:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_every_turn_sends_the_whole_history_and_later_turns_find_it_cached(magpie, stub, tmp_path, api):
    url, log = stub
    proc = run(magpie, ["--endpoint", url, "--api", api, "--dataset", "synthetic_sessions", "--num-sessions", "4",
                        "--turns", "3", "--system-prompt-len", "120", "--input-len", "10", "--output-len", "4",
                        "--range-ratio", "0", "--think-time", "0.02", "--session-concurrency", "2",
                        "--concurrency", "8", "--session-header", "X-Session-ID", "--warmups", "0"], tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = report_of(tmp_path / "out")
    case = report["cases"][0]
    assert case["throughput"]["completed_requests"] == 12
    assert case["throughput"]["total_output_tokens"] == 12 * 4
    # Sessions under way at once are capped at 2 though --concurrency allows 8.
    assert case["peak_concurrency"] == 2, case["peak_concurrency"]

    # What the stub received, by the sticky header.
    by_session = defaultdict(list)
    for r in stub_log(log):
        by_session[r["headers"]["x-session-id"]].append(r)
    assert sorted(by_session) == [f"session-{i}" for i in range(4)]
    system = None
    for name, reqs in by_session.items():
        reqs.sort(key=lambda r: r["arrival"])
        assert len(reqs) == 3, name
        # One system prompt shared by all sessions: the first 120 words (after "<system>" in chat).
        head = reqs[0]["prompt"][:121] if api == "chat" else reqs[0]["prompt"][:120]
        system = system or head
        assert head == system, name
        for prev, cur in zip(reqs, reqs[1:]):
            # The previous prompt (chat: ending in the "<assistant>" generation marker), then its reply.
            history = prev["prompt"] + prev["reply"]
            assert cur["prompt"][:len(history)] == history, (name, cur["prompt"], history)
            # The stub's own reply (unique to that request) is in the next turn's history.
            assert prev["reply"][0].startswith("r") and prev["reply"][0] in cur["prompt"]
            # ...and the whole history was cached: only the new message is prefilled.
            assert cur["cached_tokens"] >= len(history), (cur["cached_tokens"], len(history))
            assert len(cur["prompt"]) - cur["cached_tokens"] <= 12

    # The report: requests carry their session and turn, and TTFT drops after turn 0.
    records = [json.loads(line) for line in Path(case["requests_path"]).read_text().splitlines()]
    assert sorted((r["session"], r["turn"]) for r in records) == [(s, t) for s in range(4) for t in range(3)]
    turns = case["turns"]
    assert [t["turn"] for t in turns] == [0, 1, 2]
    assert all(t["completed"] == 4 for t in turns)
    assert turns[0]["mean_input_tokens"] < turns[1]["mean_input_tokens"] < turns[2]["mean_input_tokens"]
    # Turn 0 of the first two sessions prefills ~130 tokens (~260 ms at 2 ms a token); a later turn ~12 (~24 ms).
    assert turns[1]["ttft"]["mean_ms"] < turns[0]["ttft"]["mean_ms"] / 2, turns
    assert turns[2]["ttft"]["mean_ms"] < turns[0]["ttft"]["mean_ms"] / 2, turns
    summary = next((tmp_path / "out").glob("benchmark_*/summary.txt")).read_text()
    assert "TTFT by turn (sessions):" in summary and "turn 2: 4 requests" in summary


def test_sharegpt_sessions_send_every_user_turn_with_the_given_output_len(magpie, stub, tmp_path):
    url, log = stub
    data = [{"conversations": [{"from": "human", "value": f"question one of {k}"},
                               {"from": "gpt", "value": "x" * 400},
                               {"from": "human", "value": f"question two of {k}"},
                               {"from": "gpt", "value": "y" * 400}]} for k in range(3)]
    data.append({"conversations": [{"from": "gpt", "value": "an answer without a question"}]})
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data))
    proc = run(magpie, ["--endpoint", url, "--api", "chat", "--dataset", "sharegpt_sessions", "--dataset-path",
                        str(path), "--output-len", "3", "--warmups", "0", "--concurrency", "4"], tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = report_of(tmp_path / "out")
    assert report["cases"][0]["throughput"]["completed_requests"] == 6
    assert report["cases"][0]["throughput"]["total_output_tokens"] == 6 * 3  # not the replies' ~100
    assert any("1 conversation(s) without a user turn were skipped" in w for w in report["warnings"]), report["warnings"]
    received = stub_log(log)
    assert all(r["max_tokens"] == 3 for r in received)
    second = [r for r in received if "two" in r["prompt"]]
    assert len(second) == 3
    for r in second:  # the first question, the stub's reply, then the second question
        k = r["prompt"][r["prompt"].index("two") + 2]
        assert " ".join(r["prompt"]).startswith(f"<user> question one of {k} <assistant> r"), r["prompt"]


def write_trace(path: Path, n: int, gap_ms: float):
    with path.open("w") as f:
        for i in range(n):
            # Odd requests extend the even one before them: blocks [i, 1000+i] vs [i].
            ids = [i // 2, 1000 + i] if i % 2 else [i // 2]
            f.write(json.dumps({"timestamp": 5000 + i * gap_ms, "input_length": 600 if i % 2 else 512,
                                "output_length": 2, "hash_ids": ids}) + "\n")


def test_mooncake_trace_is_replayed_on_its_timestamps_with_shared_blocks(magpie, tmp_path):
    log = tmp_path / "stub.jsonl"
    # No prefill charge here: every first token leaves 2 ms after arrival, so the
    # even request is prefilled (and cached) before the odd one that extends it arrives.
    proc = subprocess.Popen([sys.executable, str(STUB), "--ttft-ms", "2", "--itl-ms", "1",
                             "--prefill-ms-per-token", "0", "--log", str(log)], stdout=subprocess.PIPE, text=True)
    try:
        port = proc.stdout.readline().split()[1]
        trace = tmp_path / "trace.jsonl"
        write_trace(trace, 40, 20.0)
        res = run(magpie, ["--endpoint", f"http://127.0.0.1:{port}", "--dataset", "mooncake", "--dataset-path",
                           str(trace), "--trace-speedup", "2", "--concurrency", "64", "--token-id-max", "4000",
                           "--warmups", "0"], tmp_path / "out")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert res.returncode == 0, res.stdout + res.stderr
    report = report_of(tmp_path / "out")
    case = report["cases"][0]
    assert case["num_prompts"] == 40 and case["throughput"]["completed_requests"] == 40  # the whole trace
    assert case["throughput"]["total_input_tokens"] == 20 * 512 + 20 * 600
    lateness = case["client"]["send_lateness_ms"]
    assert set(lateness) == {"mean", "p50", "p99"}
    records = sorted((json.loads(line) for line in Path(case["requests_path"]).read_text().splitlines()),
                     key=lambda r: r["index"])
    # The schedule: (timestamp - first) / speed-up, 10 ms apart.
    assert [round(r["scheduled_s"], 6) for r in records] == [round(i * 0.010, 6) for i in range(40)]
    assert all(r["start_s"] >= r["scheduled_s"] for r in records)  # never early
    received = sorted(stub_log(log), key=lambda r: r["arrival"])
    assert received[-1]["arrival"] - received[0]["arrival"] >= 0.38  # spread over the trace's 0.39 s, not at once
    # Same hash id, same block: an odd request finds its even neighbour's 512 tokens cached
    # whenever the even one was prefilled before it arrived (10 ms later; under heavy load the
    # stub itself can be later than that, which is the stub's timing, not the client's).
    in_time = 0
    for even, odd in zip(received[0::2], received[1::2]):
        assert odd["prompt"][:512] == even["prompt"]
        if even["prefilled_at"] < odd["arrival"]:
            in_time += 1
            assert odd["cached_tokens"] == 512, odd["cached_tokens"]
    assert in_time > 0, "no even request was prefilled before its odd neighbour arrived: the machine is too loaded"
    assert received[2]["prompt"][:512] != received[0]["prompt"][:512]


def test_bad_trace_and_refused_knobs_stop_before_anything_starts(magpie, tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
                     '{"timestamp": 5, "output_length": 1, "hash_ids": [2]}\n')
    # Nothing listens at the endpoint: the trace is read before it is tried.
    res = run(magpie, ["--endpoint", "http://127.0.0.1:9", "--dataset", "mooncake", "--dataset-path", str(trace)],
              tmp_path / "out")
    assert res.returncode == 5, res.stdout + res.stderr
    assert f"{trace}:2" in res.stderr and "input_length" in res.stderr, res.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    res = run(magpie, ["--endpoint", "http://127.0.0.1:9", "--dataset", "mooncake", "--dataset-path", str(trace),
                       "--request-rate", "10"], tmp_path / "out")
    # Refused as every benchmark setting that cannot run is (exit 1, as Magpie's), naming the option and the fix.
    assert res.returncode == 1 and "--request-rate" in res.stderr and "--trace-speedup" in res.stderr, res.stderr
    res = run(magpie, ["--endpoint", "http://127.0.0.1:9", "--dataset", "sharegpt", "--dataset-path", str(trace),
                       "--prefix-len", "32"], tmp_path / "out")
    assert res.returncode == 1 and "--prefix-len" in res.stderr, res.stderr
