"""Progress on long work: a live line on stderr when it is a terminal (here a
real pseudo-terminal from Python's pty module), nothing when stderr is a file,
and plain lines with --progress (docs/HTML_REPORTS.md has the renderer's rules).

The work is real: waiting for a server that is not ready (503) (the wait shows
the address, the clock and the limit), a serving run against the timed stub
server (request counts, rate, ETA), a CPU compare (performance rounds) and gap
analysis of the sample trace (bytes parsed, files loaded)."""
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT  # noqa: E402
from not_ready_server import not_ready_server  # noqa: E402

HERE = Path(__file__).resolve().parent
LIVE = "\r\x1b[K"  # the renderer's rewrite-in-place prefix


def run_in_pty(args, timeout=300) -> tuple:
    """Runs with stdout and stderr on a pseudo-terminal; returns (exit code, everything written)."""
    master, slave = pty.openpty()
    # A wide terminal, so a line is not cut at the renderer's fallback width of 100.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen([str(a) for a in args], stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed its side
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        rc = proc.wait(timeout=timeout)
    finally:
        os.close(master)
    return rc, out.decode("utf-8", "replace")


def run_to_file(args, tmp: Path, *extra) -> tuple:
    err = tmp / "stderr.txt"
    with open(err, "w") as f:
        proc = subprocess.run([str(a) for a in args] + list(extra), stdout=subprocess.PIPE, stderr=f,
                              text=True, timeout=300)
    return proc.returncode, err.read_text()


@pytest.fixture()
def not_ready_url():
    with not_ready_server() as url:
        yield url


def test_waiting_for_a_server_that_never_answers(magpie, not_ready_url, tmp_path):
    url = not_ready_url
    args = [magpie, "benchmark", "vllm", "--endpoint", url, "--ready-timeout", "3", "-o", tmp_path / "a"]
    rc, out = run_in_pty(args)
    assert rc != 0
    lines = [x for x in out.split(LIVE) if x.startswith("waiting for the server to become ready")]
    assert lines, out
    assert all(f"at {url}" in x and "of 3s limit" in x for x in lines), lines
    # The clock moves while nothing else happens: the ticker re-draws at least 0s..2s.
    seen = {int(m.group(1)) for x in lines for m in [re.search(r"(\d+)s of 3s limit", x)] if m}
    assert {0, 1, 2} <= seen, lines
    assert "not ready within 3 s" in out  # the error, with the last failure, at the end
    # The live line says why it is still waiting: the last connection error, after the clock.
    assert any(re.search(r"\ds of 3s limit  last error: /health answered 503", x) for x in lines), lines

    rc, err = run_to_file(args[:-1] + [tmp_path / "b"], tmp_path)
    assert rc != 0 and "waiting for the server" not in err and LIVE not in err, err

    # --progress is a global flag: plain lines into the file, no terminal control codes.
    rc, err = run_to_file([magpie, "--progress", *args[1:-1], tmp_path / "c"], tmp_path)
    assert "waiting for the server to become ready" in err and LIVE not in err, err
    # The plain lines (the log) carry the last error too, as soon as it is known.
    assert re.search(rf"ready at {re.escape(url)}  \ds of 3s limit  last error: /health answered 503", err), err


@pytest.fixture(scope="module")
def stub():
    proc = subprocess.Popen([sys.executable, str(HERE / "timed_stream_server.py"), "--ttft-ms", "30",
                             "--itl-ms", "20", "--words-are-tokens"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("port "), line
    yield f"http://127.0.0.1:{int(line.split()[1])}"
    proc.terminate()
    proc.wait(timeout=10)


def test_serving_run_shows_requests_rate_and_eta(magpie, stub, tmp_path):
    # 24 requests of ~0.5 s at concurrency 2: about 6 s, so several redraws happen.
    args = [magpie, "benchmark", "vllm", "--endpoint", stub, "--concurrency", "2", "--num-prompts", "24",
            "--input-len", "16", "--output-len", "24", "--range-ratio", "0", "--token-id-max", "4000",
            "--warmups", "0", "--request-timeout", "60"]
    rc, out = run_in_pty(args + ["-o", tmp_path / "a"])
    assert rc == 0, out[-3000:]
    counts = [x for x in out.split(LIVE) if re.search(r"\d+/24 done", x)]
    assert counts, out[-3000:]
    assert any("req/s" in x for x in counts) and any("ETA" in x for x in counts), counts

    rc, err = run_to_file(args + ["-o", tmp_path / "b"], tmp_path)
    assert rc == 0 and "/24 done" not in err and LIVE not in err, err


def test_compare_shows_rounds(magpie, tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text("pass\n")
    args = [magpie, "compare", tmp_path / "a.py", tmp_path / "b.py", "--type", "pytorch",
            "--testcase", "sleep 0.3", "--rounds", "3"]
    rc, out = run_in_pty(args + ["-o", tmp_path / "x"])
    assert rc == 0, out[-3000:]
    rounds = {m.group(1) for m in re.finditer(r"performance round (\d)/3", out)}
    assert rounds == {"1", "2", "3"}, out[-3000:]

    rc, err = run_to_file(args + ["-o", tmp_path / "y"], tmp_path)
    assert rc == 0 and "performance round" not in err, err


def test_gap_analysis_shows_bytes_and_files(magpie, tmp_path):
    args = [magpie, "benchmark", "--trace-dir", REPO_ROOT / "examples" / "traces"]
    rc, out = run_in_pty(args + ["-o", tmp_path / "a"])
    assert rc == 0 and LIVE in out and "loaded" in out, out[-3000:]
    # Bytes while the 9 MB of JSON stream through the parser (one report per 1 MB chunk).
    assert re.search(r"reading llama_\S+\.json\.gz: \d+ of \d+ MB  \[\d+%\]", out), out[-3000:]
    rc, err = run_to_file(args + ["-o", tmp_path / "b"], tmp_path)
    assert rc == 0 and "loaded" not in err and LIVE not in err, err
