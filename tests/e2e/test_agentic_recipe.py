"""The agentic recipe (issue 30 item 4): examples/recipes/agentic_coding.yaml as
shipped, run through `magpie batch` (and so through `benchmark -b`) against the
timed stub in its prefix-cache mode. The stub logs what it received and how
much of each prompt it had already seen, so the test checks what the sessions
really sent: every turn the whole history, sub-agents started after their
parent's turn `spawn_after_turn` with the parent's history as their prefix
(found cached), and the report's per-turn records."""
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RECIPE = REPO / "examples" / "recipes" / "agentic_coding.yaml"
STUB = HERE / "timed_stream_server.py"

pytestmark = pytest.mark.e2e


@pytest.fixture
def stub(tmp_path):
    """Chat, a prefix cache, 0.02 ms a token not cached (a 6000-word first turn: 120 ms)."""
    log = tmp_path / "stub.jsonl"
    proc = subprocess.Popen([sys.executable, str(STUB), "--words-are-tokens", "--ttft-ms", "5", "--itl-ms", "1",
                             "--prefill-ms-per-token", "0.02", "--chat", "--log", str(log)],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("port "), line
    yield f"http://127.0.0.1:{line.split()[1]}", log
    proc.terminate()
    proc.wait(timeout=10)


def test_the_shipped_recipe_runs_from_batch_with_sub_agents_on_the_parents_prefix(magpie, stub, tmp_path):
    url, log = stub
    recipe = yaml.safe_load(RECIPE.read_text())["benchmark"]["client"]
    agent = recipe["agent"]
    parents, turns, subagents = recipe["num_sessions"], recipe["turns"], agent["subagents"]
    batch = tmp_path / "batch.yaml"
    batch.write_text("batch:\n"
                     f"  - {{name: agentic, command: [benchmark, -b, '{RECIPE}', --endpoint, '{url}',"
                     " --warmups, '0']}\n")
    out = tmp_path / "batch"
    r = subprocess.run([str(magpie), "batch", str(batch), "-o", str(out)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "r.db")))
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = json.loads((out / "batch_summary.json").read_text())["runs"]
    assert run["status"] == "SUCCEEDED", run
    (report_path,) = (out / "agentic").glob("benchmark_*/benchmark_report.json")
    case = json.loads(report_path.read_text())["cases"][0]
    planned = parents * (turns + subagents * agent["subagent_turns"])
    assert case["throughput"]["completed_requests"] == planned, case["throughput"]

    # Per-turn records: every session's turns, sub-agents naming their parent.
    records = [json.loads(line) for line in Path(case["requests_path"]).read_text().splitlines()]
    per = 1 + subagents
    by_session = defaultdict(list)
    for rec in records:
        assert rec["success"], rec
        by_session[rec["session"]].append(rec)
    assert len(by_session) == parents * per
    for s, recs in by_session.items():
        is_parent = s % per == 0
        assert sorted(x["turn"] for x in recs) == list(range(turns if is_parent else agent["subagent_turns"])), s
        assert all(x.get("parent_session", -1) == (-1 if is_parent else s - s % per) for x in recs), s
        lo, hi = (1 - agent["range_ratio"]) * agent["tool_call_len"], (1 + agent["range_ratio"]) * agent["tool_call_len"]
        assert all(int(lo) <= x["output_tokens"] <= int(hi) for x in recs), s
    # Contexts grow turn by turn: each session's prompt (the server's count) above its previous turn's,
    # a sub-agent's first above its parent's turn `spawn_after_turn`.
    spawn = agent["spawn_after_turn"]
    for s, recs in by_session.items():
        sizes = [x["usage_prompt_tokens"] for x in sorted(recs, key=lambda x: x["turn"])]
        assert all(b > a for a, b in zip(sizes, sizes[1:])), (s, sizes)
        if s % per:
            parent_turn = next(x for x in by_session[s - s % per] if x["turn"] == spawn)
            assert sizes[0] > parent_turn["usage_prompt_tokens"] + parent_turn["output_tokens"], s
    assert [t["turn"] for t in case["turns"]] == list(range(turns))
    assert case["turns"][0]["mean_input_tokens"] > recipe["system_prompt_len"] + agent["context_len"] / 2

    # What the stub received: a sub-agent's first request starts with its parent's request of turn
    # `spawn_after_turn` and that request's reply, found in the cache.
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(received) == planned
    sub_firsts = [x for x in received if "Sub-agent" in x["prompt"] and x["prompt"].count("<user>") == spawn + 2]
    assert len(sub_firsts) == parents * subagents, len(sub_firsts)
    parent_turns = [x for x in received if "Sub-agent" not in x["prompt"] and x["prompt"].count("<user>") == spawn + 1]
    for x in sub_firsts:
        history = [p["prompt"] + p["reply"] for p in parent_turns
                   if x["prompt"][:len(p["prompt"]) + len(p["reply"])] == p["prompt"] + p["reply"]]
        assert len(history) == 1, len(history)
        assert x["cached_tokens"] >= len(history[0]), (x["cached_tokens"], len(history[0]))
