"""Benchmark YAML keys that change how a run goes: the overall timeout,
gpu_selection, gpu_monitor, precision and server_lifecycle, through the real
binary. The server is the timed stub (timed_stream_server.py), either reached
with --endpoint or launched as the "engine" by a wrapper that stands where
`vllm` would (it records the argv and environment it was started with, so a
test sees what the engine really got). GPUs: with no driver here, the stand-in
libnvidia-ml from tests/unit/fakes (two H200s) plays the driver, as in
test_gpu_info.py; a test that needs no GPU says what happens without one."""
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
from conftest import magpie_bin  # noqa: E402

pytestmark = pytest.mark.e2e
STUB = HERE / "timed_stream_server.py"
BASE = ["--concurrency", "2", "--input-len", "8", "--range-ratio", "0", "--token-id-max", "4000", "--warmups", "0"]
WORKLOAD = [*BASE, "--output-len", "4"]


def start_stub(*extra):
    proc = subprocess.Popen([sys.executable, str(STUB), "--words-are-tokens", *extra], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("port "), line
    return proc, int(line.split()[1])


@pytest.fixture
def stub():
    proc, port = start_stub("--ttft-ms", "20", "--itl-ms", "5")
    yield port
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def stub_engine(tmp_path):
    """An executable that takes `vllm serve MODEL --port N ...` and serves the stub on N,
    after writing its argv, environment and pid to engine.json."""
    record = tmp_path / "engine.json"
    script = tmp_path / "vllm"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "argv = sys.argv[1:]\n"
        "port = argv[argv.index('--port') + 1]\n"
        f"json.dump({{'argv': argv, 'env': dict(os.environ), 'pid': os.getpid()}}, open({str(record)!r}, 'w'))\n"
        "if os.environ.get('STUB_NEVER_READY'):\n"
        "    import time; time.sleep(600)\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, {str(STUB)!r}, '--port', port, '--ttft-ms', '20',"
        " '--itl-ms', '5', '--words-are-tokens'])\n")
    script.chmod(0o755)
    return script, record


@pytest.fixture
def fake_driver(tmp_path):
    """LD_LIBRARY_PATH with the stand-in libnvidia-ml.so.1 (two H200s; no power or utilization readings)."""
    nvml = Path(os.environ.get("MAGPIE_FAKE_NVML", magpie_bin().parents[2] / "tests" / "libmagpie_fake_nvml.so"))
    if not nvml.is_file():
        pytest.skip(f"stand-in NVML not built ({nvml})")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnvidia-ml.so.1").symlink_to(nvml)
    return dict(os.environ, LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}")


def no_nvidia_driver() -> bool:
    return not any(Path(d, "libnvidia-ml.so.1").exists()
                   for d in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64"])


def run(magpie, args, tmp_path, env=None, timeout=300):
    out = tmp_path / "out"
    proc = subprocess.run([str(magpie), "benchmark", *map(str, args), "-o", str(out)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    found = sorted(out.glob("benchmark_*"))
    report = json.loads((found[-1] / "benchmark_report.json").read_text()) if found else None
    return proc, report, (found[-1] if found else None)


def yaml_config(tmp_path, body: str) -> Path:
    p = tmp_path / "bench.yaml"
    p.write_text("benchmark:\n  framework: vllm\n  model: timed-stub\n  run_mode: local\n"
                 "  envs: {CONC: 2, ISL: 8, OSL: 4, RANDOM_RANGE_RATIO: 0, NUM_PROMPTS: 6}\n"
                 "  profiler: {torch_profiler: {enabled: false}}\n" + body)
    return p


# --- the overall timeout -------------------------------------------------------------

def test_timeout_stops_the_run_and_keeps_what_was_measured(magpie, tmp_path):
    # Each request takes 0.6 s + 7 x 0.15 s = 1.65 s; 60 of them at concurrency 2 would take
    # about 50 s. The timeout ends the run after the first waves.
    proc_stub, port = start_stub("--ttft-ms", "600", "--itl-ms", "150")
    try:
        t0 = time.monotonic()
        proc, report, ws = run(magpie, ["vllm", "--endpoint", f"http://127.0.0.1:{port}", *BASE,
                                        "--output-len", "8", "--num-prompts", "60", "--timeout", "6"], tmp_path)
        elapsed = time.monotonic() - t0
    finally:
        proc_stub.terminate()
        proc_stub.wait(timeout=10)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["status"] == "timeout" and not report["complete"] and not report["success"]
    assert any("timeout_seconds (6 s)" in e for e in report["errors"]), report["errors"]
    case = report["cases"][0]
    assert not case["complete"]
    assert 1 <= case["throughput"]["completed_requests"] < 60, case["throughput"]
    assert report["throughput"]["completed_requests"] == case["throughput"]["completed_requests"]
    assert "Status: FAILED (TIMEOUT, INCOMPLETE)" in (ws / "summary.txt").read_text()
    assert elapsed < 40, elapsed  # far below the 50 s the whole workload would take
    lines = (ws / "requests.jsonl").read_text().splitlines()
    assert len(lines) >= case["throughput"]["completed_requests"]


def test_timeout_kills_a_launched_engine_that_never_gets_ready(magpie, tmp_path, stub_engine):
    script, record = stub_engine
    env = dict(os.environ, STUB_NEVER_READY="1")
    proc, report, _ = run(magpie, ["vllm", "--model", "timed-stub", "--run-mode", "local", "--engine-executable",
                                   script, "--timeout", "4", "--ready-timeout", "600", *WORKLOAD], tmp_path, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["status"] == "timeout", report
    assert any(e.startswith("timeout:") for e in report["errors"]), report["errors"]
    pid = json.loads(record.read_text())["pid"]
    for _ in range(50):  # the process group was signalled; give the kernel a moment to reap
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), f"engine {pid} still running after the timeout"


# --- gpu_monitor ---------------------------------------------------------------------

def test_gpu_monitor_without_nvml_is_unavailable_with_the_reason(magpie, tmp_path, stub):
    if not no_nvidia_driver():
        pytest.skip("this machine has an NVIDIA driver: examples/gpu/validate_gpu_monitor.sh covers it")
    cfg = yaml_config(tmp_path, "  profiler:\n    gpu_monitor: {enabled: true, interval_sec: 0.1}\n")
    cfg.write_text(cfg.read_text().replace("  profiler: {torch_profiler: {enabled: false}}\n", ""))
    proc, report, ws = run(magpie, ["-b", cfg, "--endpoint", f"http://127.0.0.1:{stub}"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    g = report["gpu_monitor"]
    assert g["available"] is False and "NVML not found" in g["reason"], g
    assert not (ws / "gpu_monitor.csv").exists()
    assert "GPU monitor:\n  unavailable: NVML not found" in (ws / "summary.txt").read_text()


def test_gpu_monitor_samples_the_stand_in_driver(magpie, tmp_path, stub, fake_driver):
    cfg = yaml_config(tmp_path, "")
    cfg.write_text(cfg.read_text().replace(
        "  profiler: {torch_profiler: {enabled: false}}\n",
        "  profiler:\n    torch_profiler: {enabled: false}\n    gpu_monitor: {enabled: true, interval_sec: 0.05}\n"))
    proc, report, ws = run(magpie, ["-b", cfg, "--endpoint", f"http://127.0.0.1:{stub}"], tmp_path, env=fake_driver)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    g = report["gpu_monitor"]
    assert g["available"] is True and g["samples"] >= 2, g
    assert [x["index"] for x in g["gpus"]] == [0, 1]
    fields = g["gpus"][0]["fields"]
    assert fields["sm_clock_mhz"] == {"min": 345, "mean": 345, "max": 345, "samples": g["samples"]}
    assert fields["temperature_c"]["max"] == 31
    assert "power_w" not in fields and any("power_w" in n for n in g["notes"])
    rows = (ws / "gpu_monitor.csv").read_text().splitlines()
    assert rows[0] == ("timestamp_s,gpu,utilization_pct,memory_used_mib,power_w,sm_clock_mhz,temperature_c,"
                       "mem_clock_mhz,clocks_event_reasons")
    assert len(rows) == 1 + 2 * g["samples"]
    # The measured requests are the window; the stand-in reports gpu_idle only, which is not throttling.
    t = g["throttle"]
    assert t["window"] == "measuring" and len(t["spans"]) == 1, t
    assert t["reasons_reported"] is True and t["throttled"] is False and t["warnings"] == [], t
    assert [x["throttled_samples"] for x in t["gpus"]] == [0, 0], t
    assert all(x["samples"] >= 2 for x in t["gpus"]), t  # measuring_begin's and _end's reads at least
    assert not any(w.startswith("gpu_monitor:") for w in report["warnings"]), report["warnings"]
    assert "  Throttling while measuring (" in (ws / "summary.txt").read_text()


def test_gpu_monitor_throttling_while_measuring_warns(magpie, tmp_path, stub, fake_driver):
    """A power cap reported by the driver (the stand-in made to report one: a real idle GPU
    cannot be made to throttle on demand) while a two-case sweep runs: one measuring span per
    case, after its warm-ups; each GPU's throttled samples a warning in the report and on the
    console, as analyze and compare do."""
    cfg = yaml_config(tmp_path, "  sweep_matrix: {cases: [{CONC: 1}, {CONC: 2}]}\n")
    cfg.write_text(cfg.read_text().replace(
        "  profiler: {torch_profiler: {enabled: false}}\n",
        "  profiler:\n    torch_profiler: {enabled: false}\n    gpu_monitor: {enabled: true, interval_sec: 0.05}\n"))
    env = dict(fake_driver, MAGPIE_FAKE_NVML_CLOCKS_EVENT_REASONS="0x4")  # sw_power_cap
    proc, report, ws = run(magpie, ["-b", cfg, "--endpoint", f"http://127.0.0.1:{stub}", "--warmups", "1",
                                    "--html"], tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a warning, not a failure
    assert len(report["cases"]) == 2
    g = report["gpu_monitor"]
    t = g["throttle"]
    assert t["window"] == "measuring" and t["reasons_reported"] and t["throttled"], t
    spans = t["spans"]
    assert len(spans) == 2, spans
    assert spans[0][0] <= spans[0][1] <= spans[1][0] <= spans[1][1], spans
    assert (t["from_s"], t["to_s"]) == (spans[0][0], spans[1][1])
    for gpu, whole in zip(t["gpus"], g["gpus"]):
        assert gpu["throttled_samples"] == gpu["samples"] and gpu["reasons"] == {"sw_power_cap": gpu["samples"]}
        assert 4 <= gpu["samples"] <= whole["samples"], (gpu, whole)  # each span's begin and end reads
    warned = [w for w in report["warnings"] if w.startswith("gpu_monitor: GPU ")]
    assert len(warned) == 2 and all("while measuring (sw_power_cap" in w for w in warned), report["warnings"]
    assert warned == ["gpu_monitor: " + w for w in t["warnings"]]
    for w in warned:
        assert f"warning: {w}" in proc.stderr, proc.stderr
    summary = (ws / "summary.txt").read_text()
    assert "  Throttling while measuring (" in summary and "GPU 1 (NVIDIA H200): clocks lowered" in summary, summary
    assert "GPU 0 (NVIDIA H200): clocks lowered" in (ws / "benchmark_report.html").read_text()


# --- gpu_selection -------------------------------------------------------------------

def test_gpu_selection_sets_visible_devices_for_the_engine(magpie, tmp_path, stub_engine, fake_driver):
    script, record = stub_engine
    cfg = yaml_config(tmp_path, "  gpu_selection: {auto: false, candidates: [1, 0], count: 1}\n")
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path, env=fake_driver)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sel = report["config"]["gpu_selection"]
    assert sel["indices"] == [1] and sel["env"] == {"CUDA_VISIBLE_DEVICES": "1"}, sel
    assert json.loads(record.read_text())["env"]["CUDA_VISIBLE_DEVICES"] == "1"
    assert report["server"]["env"]["CUDA_VISIBLE_DEVICES"] == "1"
    # NVML numbers GPUs in PCI order; CUDA must count the same way.
    assert json.loads(record.read_text())["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    # The environment block names the GPU the engine got and the variables it was given.
    envb = report["environment"]
    assert [g["index"] for g in envb["gpus"]] == [1], envb["gpus"]
    assert envb["gpus"][0]["name"] and envb["gpus"][0]["uuid"], envb["gpus"]
    assert envb["env_vars"]["CUDA_VISIBLE_DEVICES"] == "1"
    assert envb["env_vars"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_gpu_selection_skips_a_gpu_another_run_holds(magpie, tmp_path, stub_engine, fake_driver):
    """Another run's lock (a flock on the GPU's lock file, as magpie takes it) keeps its GPU out."""
    import fcntl
    script, record = stub_engine
    locks = tmp_path / "locks"
    locks.mkdir()
    env = dict(fake_driver, MAGPIE_GPU_LOCK_DIR=str(locks))
    held = open(locks / "magpie-gpu-GPU-00000000-1111-2222-3333-444444444444.lock", "w")  # the stand-in's GPU 0
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        cfg = yaml_config(tmp_path, "  gpu_selection: {auto: false, candidates: [0, 1], count: 1}\n")
        proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert report["config"]["gpu_selection"]["indices"] == [1], report["config"]
        cfg = yaml_config(tmp_path, "  gpu_selection: {auto: false, count: 2}\n")
        proc, _, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path, env=env)
        assert proc.returncode == 2 and "in use by another magpie run" in proc.stderr, proc.stderr
    finally:
        held.close()
    # Released with its holder: both GPUs can be had again.
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert report["config"]["gpu_selection"]["indices"] == [0, 1]


def test_gpu_selection_of_a_gpu_that_does_not_exist_is_refused(magpie, tmp_path, stub_engine, fake_driver):
    script, record = stub_engine
    cfg = yaml_config(tmp_path, "  gpu_selection: {candidates: [5]}\n")
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path, env=fake_driver)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "candidate GPU 5 does not exist; this machine has 2 GPU(s)" in proc.stderr, proc.stderr
    assert report is None and not record.exists()  # refused before anything started


def test_gpu_selection_without_any_gpu(magpie, tmp_path, stub_engine, stub):
    if not no_nvidia_driver():
        pytest.skip("this machine has an NVIDIA driver")
    script, record = stub_engine
    cfg = yaml_config(tmp_path, "  gpu_selection: {count: 1}\n")
    proc, _, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path)
    assert proc.returncode == 2 and "gpu_selection: no GPU found" in proc.stderr, proc.stderr
    assert "--endpoint" in proc.stderr
    # Against a running server there is nothing to select for: a warning, and the run goes on.
    proc, report, _ = run(magpie, ["-b", cfg, "--endpoint", f"http://127.0.0.1:{stub}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert any("gpu_selection is not applied" in w for w in report["warnings"])


# --- precision and server_lifecycle --------------------------------------------------

def test_precision_becomes_the_engine_flag(magpie, tmp_path, stub_engine):
    script, record = stub_engine
    cfg = yaml_config(tmp_path, "  precision: bf16\n")
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = json.loads(record.read_text())["argv"]
    i = argv.index("--dtype")
    assert argv[i + 1] == "bfloat16", argv
    assert report["config"]["precision_args"] == ["--dtype", "bfloat16"]
    assert "--gpu-memory-utilization" in argv  # without --cpu-engine the GPU flag stays
    # fp4 has no flag: said, not silently dropped.
    cfg = yaml_config(tmp_path, "  precision: fp4\n")
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path)
    assert any("precision fp4 is not applied" in w for w in report["warnings"]), report["warnings"]
    assert "warning: precision fp4 is not applied" in proc.stderr, proc.stderr  # on the console too


def test_server_lifecycle_reuse_and_disabled(magpie, tmp_path, stub):
    cfg = yaml_config(tmp_path, f"  server_lifecycle: {{force_reuse: true}}\n")
    cfg.write_text(cfg.read_text().replace("NUM_PROMPTS: 6}", f"NUM_PROMPTS: 6, PORT: {stub}}}"))
    # No engine executable would work here: the running stub must be reused.
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", "/nonexistent/vllm"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["server"]["mode"] == "endpoint" and report["config"]["run_mode"] == "endpoint"
    assert any("reusing the server already answering" in w for w in report["warnings"])
    assert report["throughput"]["completed_requests"] == 6
    # enabled: false and nothing at the port: a clear error, nothing launched.
    cfg.write_text(cfg.read_text().replace("force_reuse: true", "enabled: false").replace(f"PORT: {stub}", "PORT: 9"))
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", "/nonexistent/vllm"], tmp_path)
    assert proc.returncode == 1
    assert any("server_lifecycle.enabled is false" in e and "127.0.0.1:9" in e for e in report["errors"]), report


# --- the environment block -----------------------------------------------------------

def test_environment_block_names_build_model_and_engine_variables(magpie, tmp_path, stub_engine):
    script, record = stub_engine
    # hf_cache_path: a Hugging Face cache laid out as the hub library writes it;
    # refs/main holds the commit the model was fetched at.
    hf = tmp_path / "hf"
    (hf / "hub" / "models--timed-stub" / "refs").mkdir(parents=True)
    (hf / "hub" / "models--timed-stub" / "refs" / "main").write_text("3f1c0ffee\n")
    cfg = yaml_config(tmp_path, f"  hf_cache_path: {hf}\n")
    cfg.write_text(cfg.read_text().replace("NUM_PROMPTS: 6}", "NUM_PROMPTS: 6, MY_ENGINE_KNOB: on}"))
    proc, report, ws = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    envb = report["environment"]
    version = subprocess.run([str(magpie), "--version"], capture_output=True, text=True).stdout
    assert envb["magpie_version"] in version and envb["build_commit"], (envb, version)
    if envb["build_commit"] != "unknown":
        assert envb["build_commit"][:12] in version
    assert envb["model"] == "timed-stub"
    assert envb["model_revision"] == "3f1c0ffee" == report["server"]["model_revision"]
    # What the engine was given, as it really got it.
    assert envb["env_vars"]["MY_ENGINE_KNOB"] == "on"
    assert json.loads(record.read_text())["env"]["MY_ENGINE_KNOB"] == "on"
    assert envb["image"] is None and envb["image_digest"] is None  # local mode: no image
    assert "Environment:" in (ws / "summary.txt").read_text()


# --- unknown keys and --strict -------------------------------------------------------

def test_misspelled_key_warns_with_the_nearest_key_and_fails_under_strict(magpie, tmp_path, stub):
    cfg = yaml_config(tmp_path, "  gpu_selecton: {count: 1}\n")
    proc, report, _ = run(magpie, ["-b", cfg, "--endpoint", f"http://127.0.0.1:{stub}"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "unknown key 'benchmark.gpu_selecton' ignored (did you mean 'gpu_selection'?)" in proc.stderr
    assert any("did you mean 'gpu_selection'" in w for w in report["warnings"])
    proc, report, _ = run(magpie, ["-b", cfg, "--endpoint", f"http://127.0.0.1:{stub}", "--strict"], tmp_path / "s")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "gpu_selecton" in proc.stderr and "gpu_selection" in proc.stderr
    assert report is None  # refused before a workspace was made


# --- the system profiler -------------------------------------------------------------

def test_system_profiler_without_the_tool_is_a_clear_error_before_anything_starts(magpie, tmp_path, stub_engine):
    import shutil
    path = "/usr/bin:/bin"
    if shutil.which("nsys", path=path) or shutil.which("rocprofv3", path=path):
        pytest.skip("nsys or rocprofv3 is installed here: examples/gpu/validate_system_profiler.sh covers it")
    script, record = stub_engine
    env = dict(os.environ, PATH=path)
    proc, report, _ = run(magpie, ["vllm", "--model", "timed-stub", "--run-mode", "local", "--engine-executable",
                                   script, "--system-profiler", *WORKLOAD], tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "system_profiler: nsys or rocprofv3 is not on PATH; nothing was started" in proc.stderr, proc.stderr
    assert "Nsight Systems" in proc.stderr  # what to install
    assert report is None and not record.exists()  # no workspace, no engine
    # The same from the YAML key; an AMD arch names the AMD tool.
    cfg = yaml_config(tmp_path, "  gpu_arch: gfx942\n")
    cfg.write_text(cfg.read_text().replace("  profiler: {torch_profiler: {enabled: false}}\n",
                                           "  profiler: {system_profiler: {enabled: true}}\n"))
    proc, report, _ = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path, env=env)
    assert proc.returncode == 3 and "rocprofv3 is not on PATH (gpu_arch gfx942)" in proc.stderr, proc.stderr
    assert not record.exists()


def test_system_profiler_with_endpoint_is_a_warning(magpie, tmp_path, stub):
    proc, report, _ = run(magpie, ["vllm", "--endpoint", f"http://127.0.0.1:{stub}", "--system-profiler",
                                   *WORKLOAD, "--num-prompts", "4"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any("system_profiler is not applied" in w for w in report["warnings"]), report["warnings"]
    assert report["system_profiler"] is None and report["run_kind"] == "diagnostic"


# --- flags that must reach the engine or the load -------------------------------------

def test_engine_flags_reach_the_launch_line(magpie, tmp_path, stub_engine):
    script, record = stub_engine
    proc, report, _ = run(magpie, ["vllm", "--model", "timed-stub", "--run-mode", "local", "--engine-executable",
                                   script, "--tp", "2", "--max-model-len", "2048", "--engine-arg=--enforce-eager",
                                   "--env", "EXTRA_VLLM_ARGS=--swap-space 4", "-p", "fp16", "--cpu-engine",
                                   *WORKLOAD, "--num-prompts", "2"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = json.loads(record.read_text())["argv"]
    after = lambda flag: argv[argv.index(flag) + 1]  # noqa: E731
    assert after("--tensor-parallel-size") == "2" and after("--max-model-len") == "2048", argv
    assert "--enforce-eager" in argv and after("--swap-space") == "4", argv
    assert after("--dtype") == "float16", argv  # -p fp16
    assert "--gpu-memory-utilization" not in argv, argv  # --cpu-engine drops the GPU-only flag
    # Workload knobs are not engine variables.
    assert "TP" not in report["server"]["env"] and "EXTRA_VLLM_ARGS" not in report["server"]["env"]


def test_client_flags_shape_the_load(magpie, tmp_path, stub):
    url = f"http://127.0.0.1:{stub}"
    # --run-kind and a goodput SLO no request can meet (the stub's first token takes 20 ms).
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *WORKLOAD, "--num-prompts", "4", "--run-kind",
                                   "diagnostic", "--slo-ttft-ms", "1"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["run_kind"] == "diagnostic" and not report["reward_eligible"]
    assert report["throughput"]["completed_requests"] == 4
    assert report["throughput"]["request_goodput"] == 0
    # --duration bounds the case by time instead of a request count; --request-rate paces it.
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *WORKLOAD, "--duration", "1.5", "--request-rate", "20",
                                   "--burstiness", "1"], tmp_path / "d")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    case = report["cases"][0]
    assert case["request_rate"] == 20
    # Sent for 1.5 s at 20/s (a fixed-seed schedule of about 30 arrivals): more than the
    # CONC x 10 = 20 requests a count-bounded case would send, and over in about the duration.
    assert 1.0 <= report["throughput"]["duration_seconds"] < 10, report["throughput"]
    assert report["throughput"]["completed_requests"] > 20, report["throughput"]


def test_slo_terms_are_checked_per_case_and_a_bad_string_is_exit_2(magpie, tmp_path, stub):
    """The stub's first token takes 20 ms and each next one 5 ms: a 2 s TTFT p99
    holds and a 10 ms end-to-end median cannot (each request lasts at least
    20 + 3 x 5 = 35 ms by the stub's own sleeps; a busy client only sees tokens
    later, never sooner: a TPOT limit was not safe, since a client thread woken late
    reads the buffered tokens at once); goodput counts requests within the limits."""
    url = f"http://127.0.0.1:{stub}"
    proc, report, ws = run(magpie, ["vllm", "--endpoint", url, *WORKLOAD, "--num-prompts", "4",
                                    "--slo", "ttft_p99<=2s,e2el_p50<=10ms"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    slo = report["cases"][0]["slo"]
    assert [(t["term"], t["met"]) for t in slo["terms"]] == [("ttft_p99<=2s", True), ("e2el_p50<=10ms", False)], slo
    assert slo["terms"][0]["limit_ms"] == 2000 and 20 <= slo["terms"][0]["value_ms"] < 2000, slo
    assert slo["met"] is False and report["throughput"]["request_goodput"] == 0
    assert "SLO CONC2_ISL8_OSL4 NOT met: ttft_p99<=2s" in (ws / "summary.txt").read_text()
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *WORKLOAD, "--num-prompts", "4",
                                   "--slo", "ttft_p99<=2s,tpot_p50<=1s"], tmp_path / "met")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["cases"][0]["slo"]["met"] is True and report["throughput"]["request_goodput"] > 0
    proc, report, _ = run(magpie, ["vllm", "--endpoint", url, *WORKLOAD, "--slo", "ttft_p99<2s"], tmp_path / "bad")
    assert proc.returncode == 2 and report is None, proc.stdout + proc.stderr
    assert "--slo: 'ttft_p99<2s' has no '<='" in proc.stderr, proc.stderr

def test_slo_missed_once_requests_queue_for_the_stubs_slots(magpie, tmp_path, stub):
    """The stub with one slot serves one request at a time (20 ms to the first
    token, 3 more 5 ms apart: 35 ms each); three in flight queue behind each
    other, so some TTFT is at least 20 + 2 * 35 = 90 ms by the stub's own
    sleeps: a 60 ms TTFT p99 is missed. Without slots (the plain stub) it holds."""
    proc_slots, port = start_stub("--ttft-ms", "20", "--itl-ms", "5", "--slots", "1")
    try:
        args = ["--concurrency", "3", "--input-len", "8", "--output-len", "4", "--range-ratio", "0",
                "--token-id-max", "4000", "--warmups", "0", "--num-prompts", "9", "--slo", "ttft_p99<=60ms"]
        proc, report, _ = run(magpie, ["vllm", "--endpoint", f"http://127.0.0.1:{port}", *args], tmp_path / "slots")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        slo = report["cases"][0]["slo"]
        assert slo["met"] is False and slo["terms"][0]["value_ms"] >= 90, slo
        proc, report, _ = run(magpie, ["vllm", "--endpoint", f"http://127.0.0.1:{stub}", *args], tmp_path / "free")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert report["cases"][0]["slo"]["met"] is True, report["cases"][0]["slo"]
    finally:
        proc_slots.terminate()
        proc_slots.wait(timeout=10)

# --- the public Magpie tool's names (issue #31 item 5) ------------------------------

def test_public_client_only_example_runs_against_benchmark_base_url(magpie, tmp_path, stub):
    # AMD-AGI/Magpie examples/benchmarks/benchmark_sglang_client_only.yaml, its keys as
    # written there; the workload made small for the stub.
    cfg = tmp_path / "client_only.yaml"
    cfg.write_text(
        "benchmark:\n  framework: sglang\n  model: timed-stub\n  precision: fp8\n  run_mode: docker\n"
        '  docker_image: "your-client-image:version"\n  benchmark_script: "sglang_mi355x.sh"\n'
        "  timeout_seconds: 3600\n  envs:\n"
        f'    BENCHMARK_BASE_URL: "http://127.0.0.1:{stub}"\n'
        "    CONC: 2\n    ISL: 8\n    OSL: 4\n    NUM_PROMPTS: 6\n    RANDOM_RANGE_RATIO: 0\n"
        '    MAGPIE_BENCHMARK_BACKEND: "openai"\n    MAGPIE_BENCHMARK_ENDPOINT: "/v1/completions"\n'
        "  profiler:\n    torch_profiler:\n      enabled: false\n    system_profiler:\n      enabled: false\n"
        "    tracelens:\n      enabled: false\n")
    proc, report, _ = run(magpie, ["-b", cfg], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "unknown key" not in proc.stderr, proc.stderr
    assert f"benchmark.benchmark_script: not applicable here:" in proc.stderr, proc.stderr
    assert any("benchmark.benchmark_script: not applicable here:" in w for w in report["warnings"])
    assert report["config"]["run_mode"] == "endpoint"  # nothing launched: the stub was loaded
    assert report["throughput"]["completed_requests"] == 6
    # openai-chat sends chat completions; the stub serves only /v1/completions, so each one fails there.
    cfg.write_text(cfg.read_text().replace('"openai"', '"openai-chat"').replace('"/v1/completions"', '"/v1/chat/completions"'))
    proc, report, ws = run(magpie, ["-b", cfg], tmp_path / "chat")
    assert report["throughput"]["completed_requests"] == 0, report["throughput"]
    assert "/v1/chat/completions" in (ws / "config.yaml").read_text()
    assert any("404" in e for e in report["errors"] + report["warnings"]), report["errors"]


def make_bare_repo(tmp_path) -> Path:
    """A bare repository with one commit, as a remote to clone (no network)."""
    work, bare = tmp_path / "work", tmp_path / "aiter.git"
    work.mkdir()
    git = lambda *a: subprocess.run(["git", *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q", "--bare", str(bare))
    git("-C", str(work), "init", "-q")
    (work / "gemm.py").write_text("def gemm_a8w8_kernel(): pass\n")
    git("-C", str(work), "add", "gemm.py")
    git("-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    git("-C", str(work), "push", "-q", str(bare), "HEAD:refs/heads/main")
    git("--git-dir", str(bare), "symbolic-ref", "HEAD", "refs/heads/main")
    return bare


def test_auto_clone_repos_clones_into_repos_base_dir_before_anything_starts(magpie, tmp_path):
    bare = make_bare_repo(tmp_path)
    base = tmp_path / "repos"
    cfg = yaml_config(tmp_path, "  gap_analysis:\n    find_kernel_sources: true\n"
                      f"    kernel_source_repos: [file://{bare}]\n    auto_clone_repos: true\n"
                      f"    repos_base_dir: {base}\n")
    cfg.write_text(cfg.read_text().replace("torch_profiler: {enabled: false}", "torch_profiler: {enabled: true}"))
    # Nothing listens at port 9: the run ends there (exit 7), after the clone.
    proc, report, _ = run(magpie, ["-b", cfg, "--endpoint", "http://127.0.0.1:9"], tmp_path)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "could not clone" not in proc.stderr
    assert (base / "aiter" / "gemm.py").read_text().startswith("def gemm_a8w8_kernel")
    # A repository that is not there: exit 7 before anything starts, naming it and git's message.
    missing = tmp_path / "missing.git"
    cfg.write_text(cfg.read_text().replace(f"file://{bare}", str(missing)))
    proc, report, _ = run(magpie, ["-b", cfg, "--endpoint", "http://127.0.0.1:9"], tmp_path / "bad")
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert f"could not clone {missing}" in proc.stderr and "fatal:" in proc.stderr, proc.stderr
    assert report is None  # no workspace: nothing was started
    assert not (base / "missing").exists()


# --- repeated profiler captures ------------------------------------------------------

def test_a_capture_that_does_not_flush_is_named_missing_and_the_others_kept(magpie, tmp_path):
    """num_profiles 3 against the stub as the launched engine: its profiler routes
    write a real Kineto trace (tests/data/h200_graphs) per capture, except the
    second, which never flushes (the fault a real server cannot show on cue).
    capture_2 is reported missing with flush_timeout_seconds in its reason;
    capture_1 and capture_3 are analysed and make the stability table."""
    trace = HERE.parents[1] / "tests" / "data" / "h200_graphs" / "compile_default.json.gz"
    script = tmp_path / "vllm"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "argv = sys.argv[1:]\n"
        "port = argv[argv.index('--port') + 1]\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, {str(STUB)!r}, '--port', port, '--ttft-ms', '20',"
        f" '--itl-ms', '5', '--words-are-tokens', '--profile-trace', {str(trace)!r}, '--profile-lose', '2'])\n")
    script.chmod(0o755)
    cfg = yaml_config(tmp_path, "")
    cfg.write_text(cfg.read_text().replace(
        "  profiler: {torch_profiler: {enabled: false}}\n",
        "  profiler:\n    torch_profiler: {enabled: true, num_profiles: 3, capture_timeout_seconds: 0.5,\n"
        "                     flush_timeout_seconds: 4, num_steps: 7}\n"))
    # 200 requests at 10/s: 20 s of load; three captures need about 12 s (0.5 s + 3 s to settle each, 4 s lost).
    proc, report, ws = run(magpie, ["-b", cfg, "--engine-executable", script, "--num-prompts", "200",
                                    "--request-rate", "10", "--ready-timeout", "60"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    caps = {c["label"]: c for c in report["profile_captures"]}
    assert list(caps) == ["capture_1", "capture_2", "capture_3"], report["profile_captures"]
    assert caps["capture_2"]["status"] == "missing", caps["capture_2"]
    assert "flush_timeout_seconds (4 s)" in caps["capture_2"]["missing_reason"], caps["capture_2"]
    for label in ("capture_1", "capture_3"):
        assert caps[label]["status"] == "analysed" and caps[label]["kernel_summary"], caps[label]
        # vLLM's per-capture file prefix reached the server.
        assert (ws / "torch_trace" / label / f"magpie_{label}_dp0_pp0_tp0.pt.trace.json.gz").is_file()
    starts = [json.loads(line) for line in (ws / "stub_profile_starts.jsonl").read_text().splitlines()]
    assert starts == [{"profile_prefix": f"magpie_capture_{k}", "max_iterations": 7} for k in (1, 2, 3)], starts
    st = report["capture_stability"]
    assert st["analysed"] == ["capture_1", "capture_3"], st
    assert [m["label"] for m in st["missing"]] == ["capture_2"], st
    # The same trace twice: every top kernel's share is the same in both, no spread.
    assert st["kernels"] and all(k["share_pct"][0] == k["share_pct"][1] for k in st["kernels"]), st
    assert st["max_spread_pct"] == 0
    assert any("capture_2 is missing" in w for w in report["warnings"]), report["warnings"]
    summary = (ws / "summary.txt").read_text()
    assert "Capture stability (2 analysed, missing: capture_2 (" in summary, summary


# --- envs.MODEL_REVISION -------------------------------------------------------------

def hf_cache_with(tmp_path, commits: dict) -> Path:
    """A Hugging Face cache as the hub library lays it out: refs/NAME -> commit, snapshots/COMMIT/config.json."""
    repo = tmp_path / "hf" / "hub" / "models--timed-stub"
    (repo / "refs").mkdir(parents=True)
    for name, commit in commits.items():
        (repo / "refs" / name).write_text(commit + "\n")
        (repo / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
        (repo / "snapshots" / commit / "config.json").write_text('{"vocab_size": 32000}')
    return tmp_path / "hf"


def test_model_revision_reaches_the_engine_and_its_snapshot_is_the_receipt(magpie, tmp_path, stub_engine):
    script, record = stub_engine
    hf = hf_cache_with(tmp_path, {"main": "a" * 40, "v2": "b" * 40})
    cfg = yaml_config(tmp_path, f"  hf_cache_path: {hf}\n")
    cfg.write_text(cfg.read_text().replace("NUM_PROMPTS: 6}", "NUM_PROMPTS: 6, MODEL_REVISION: v2}"))
    proc, report, ws = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv = json.loads(record.read_text())["argv"]
    assert argv[argv.index("--revision") + 1] == "v2", argv
    assert "MODEL_REVISION" not in json.loads(record.read_text())["env"]
    receipt = json.loads((ws / "model_revision_receipt.json").read_text())
    assert receipt["status"] == "match" and receipt["resolved_commit"] == "b" * 40, receipt
    assert report["server"]["model_revision"] == "b" * 40  # not refs/main's
    assert not any("MODEL_REVISION" in w for w in report["warnings"]), report["warnings"]


def test_model_revision_the_engine_did_not_load_stops_the_run_before_timing(magpie, tmp_path, stub_engine):
    script, _ = stub_engine
    hf = hf_cache_with(tmp_path, {"main": "a" * 40})
    cfg = yaml_config(tmp_path, f"  hf_cache_path: {hf}\n")
    cfg.write_text(cfg.read_text().replace("NUM_PROMPTS: 6}", "NUM_PROMPTS: 6, MODEL_REVISION: v9}"))
    proc, report, ws = run(magpie, ["-b", cfg, "--engine-executable", script], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["cases"] == [] and not report["success"], report
    err = next(e for e in report["errors"] if "MODEL_REVISION" in e)
    assert "revision v9 of timed-stub is not what the engine loaded" in err and "refs/main is " + "a" * 40 in err, err
    receipt = json.loads((ws / "model_revision_receipt.json").read_text())
    assert receipt["status"] == "mismatch" and receipt["resolved_commit"] is None, receipt
    assert not (ws / "requests.jsonl").exists()  # nothing was timed
