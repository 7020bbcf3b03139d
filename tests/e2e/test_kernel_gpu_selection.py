"""gpu_selection and gpu_monitor in the kernel YAML (`magpie analyze|compare -k`),
through the real binary.

- Without a GPU (this repository's CI): a compare of a CPU PyTorch kernel with both
  keys on says in its report and console that there is no GPU, and succeeds.
- On the stand-in driver (tests/unit/fakes: a libnvidia-ml with two made-up H200s,
  because CI has no GPU): two compare runs held at a barrier inside their testcases,
  so both hold their GPU locks at the same moment, get different GPUs and each report
  names its own; a run finding every GPU held by another run fails with a message
  saying so; a clock-lowering reason the stand-in reports (a real idle GPU cannot be
  made to throttle on demand) becomes a warning in the report and on the console.

The same on real GPUs: examples/gpu/validate_compare_gpu_selection.sh.
"""
import ctypes
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, magpie_bin  # noqa: E402

pytestmark = pytest.mark.e2e
SOFTMAX = REPO_ROOT / "examples" / "kernels" / "softmax"
FAKE_UUIDS = ["GPU-00000000-1111-2222-3333-444444444444", "GPU-55555555-6666-7777-8888-999999999999"]


def nvidia_driver_present() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


def only(out: Path, prefix: str) -> Path:
    found = sorted(out.glob(prefix + "*"))
    assert len(found) == 1, (out, found)
    return found[0]


# --- no GPU: say so and carry on ---------------------------------------------------

def test_compare_of_a_cpu_torch_kernel_without_a_gpu_says_so_and_succeeds(magpie, tmp_path):
    if nvidia_driver_present():
        pytest.skip("this machine has an NVIDIA driver: examples/gpu/validate_compare_gpu_selection.sh covers it")
    import serving_env
    try:
        serving_env.ensure_vllm()  # the venv with torch (CPU)
    except Exception as e:
        pytest.fail(f"the torch venv could not be installed: {e}")
    env = dict(os.environ, PATH=f"{serving_env.VLLM.parent}:{os.environ['PATH']}",
               MAGPIE_GPU_LOCK_DIR=str(tmp_path))
    config = tmp_path / "compare.yaml"
    config.write_text(
        "kernels:\n"
        f"  - {{id: torch_a, type: pytorch, working_dir: {SOFTMAX},\n"
        "      bench_target: {module: softmax_torch, callable: softmax, get_inputs: get_inputs}}\n"
        f"  - {{id: torch_b, type: pytorch, working_dir: {SOFTMAX},\n"
        "      bench_target: {module: softmax_torch, callable: softmax, get_inputs: get_inputs}}\n"
        "correctness: {seeds: 1}\n"
        "gpu_selection: {count: 1}\n"
        "gpu_monitor: {enabled: true, interval_sec: 0.2}\n")
    out = tmp_path / "out"
    r = subprocess.run([str(magpie), "compare", "-k", str(config), "--no-perf", "-o", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ws = only(out, "compare_")
    report = json.loads((ws / "compare_report.json").read_text())
    sel = report["gpu_selection"]
    assert sel["applied"] is False and sel["reason"].startswith("no GPU found"), sel
    assert sel["requested"]["count"] == 1
    mon = report["gpu_monitor"]
    assert mon["available"] is False and "NVML not found" in mon["reason"], mon
    assert not (ws / "gpu_monitor.csv").exists()
    assert report["results"]["comparison_metrics"]["all_correct"] is True
    assert "note: gpu_selection: not applied: no GPU found" in r.stdout, r.stdout
    assert "note: gpu_monitor: unavailable: NVML not found" in r.stdout, r.stdout
    # Nothing was set for the children: the environment block records the variable as unset.
    assert report["environment"]["env_vars"].get("CUDA_VISIBLE_DEVICES") is None


# --- the stand-in driver: two runs at once, the lock, the throttle warning ----------

def fake_library(env_name: str, file_name: str) -> Path:
    """$MAGPIE_FAKE_NVML / $MAGPIE_FAKE_CUDA (ctest sets them), else the build tree's."""
    return Path(os.environ.get(env_name, magpie_bin().parents[2] / "tests" / file_name))


@pytest.fixture
def fake_driver(tmp_path):
    nvml, cuda = fake_library("MAGPIE_FAKE_NVML", "libmagpie_fake_nvml.so"), \
        fake_library("MAGPIE_FAKE_CUDA", "libmagpie_fake_cuda.so")
    if not (nvml.is_file() and cuda.is_file()):
        pytest.skip(f"stand-in driver libraries not built ({nvml}, {cuda})")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnvidia-ml.so.1").symlink_to(nvml)
    (lib / "libcuda.so.1").symlink_to(cuda)
    locks = tmp_path / "locks"
    locks.mkdir()
    return dict(os.environ, LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}",
                MAGPIE_GPU_LOCK_DIR=str(locks))


def barrier_config(folder: Path, name: str, peers: int, extra: str = "") -> Path:
    """A two-implementation compare whose testcases record the GPU they were given and,
    in the first one, wait until `peers` runs have arrived (at most 120 s)."""
    script = (f"echo \"$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER\" > {folder}/{name}.$MAGPIE_KERNEL_ID.env; "
              f"touch {folder}/arrived.{name}; "
              f"for i in $(seq 1200); do [ $(ls {folder} | grep -c '^arrived[.]') -ge {peers} ] && exit 0; "
              "sleep 0.1; done; exit 0")
    config = folder / f"{name}.yaml"
    config.write_text(
        "kernels:\n"
        f"  - {{id: first, type: hip, testcase_command: [sh, -c, {json.dumps(script)}]}}\n"
        f"  - {{id: second, type: hip, testcase_command: [sh, -c, {json.dumps(script)}]}}\n"
        "gpu_selection: {count: 1, min_free_memory_gb: 1}\n" + extra)
    return config


def start(magpie, config: Path, out: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([str(magpie), "compare", "-k", str(config), "--no-perf", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_two_compares_at_once_get_different_gpus_and_name_them(magpie, tmp_path, fake_driver):
    shared = tmp_path / "shared"
    shared.mkdir()
    runs = {}
    for name in ("a", "b"):
        runs[name] = start(magpie, barrier_config(shared, name, peers=2), tmp_path / f"out_{name}", fake_driver)
    chosen = {}
    for name, proc in runs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
        report = json.loads((only(tmp_path / f"out_{name}", "compare_") / "compare_report.json").read_text())
        sel = report["gpu_selection"]
        assert sel["applied"] is True and len(sel["indices"]) == 1, sel
        index = sel["indices"][0]
        chosen[name] = index
        # The report and the console name the GPU, and every child saw only it, in NVML's order.
        assert sel["gpus"] == [{"index": index, "name": "NVIDIA H200", "uuid": FAKE_UUIDS[index]}], sel
        assert sel["env"] == {"CUDA_VISIBLE_DEVICES": str(index)}
        assert f"GPU: GPU {index} (NVIDIA H200, {FAKE_UUIDS[index]}) via CUDA_VISIBLE_DEVICES={index}" in stdout, stdout
        assert [g["index"] for g in report["environment"]["gpus"]] == [index], report["environment"]["gpus"]
        assert report["environment"]["env_vars"]["CUDA_VISIBLE_DEVICES"] == str(index)
        for kernel in ("first", "second"):
            assert (shared / f"{name}.{kernel}.env").read_text().split() == [str(index), "PCI_BUS_ID"]
    # Both were inside their testcases at once (the barrier), each holding its lock.
    assert sorted(chosen.values()) == [0, 1], chosen


def test_a_run_that_finds_every_gpu_held_fails_saying_so(magpie, tmp_path, fake_driver):
    held = []
    for uuid in FAKE_UUIDS:  # hold both as another magpie run would: a flock on each GPU's lock file
        f = open(Path(fake_driver["MAGPIE_GPU_LOCK_DIR"]) / f"magpie-gpu-{uuid}.lock", "w")
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(f)
    try:
        config = barrier_config(tmp_path, "c", peers=1)
        r = subprocess.run([str(magpie), "compare", "-k", str(config), "--no-perf", "-o", str(tmp_path / "out")],
                           capture_output=True, text=True, env=fake_driver, timeout=300)
    finally:
        for f in held:
            f.close()
    assert r.returncode == 2, r.stdout + r.stderr
    assert "gpu_selection" in r.stderr and "in use by another magpie run" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("compare_*"))


def test_throttling_the_driver_reports_is_a_warning_in_report_and_console(magpie, tmp_path, fake_driver):
    env = dict(fake_driver, MAGPIE_FAKE_NVML_CLOCKS_EVENT_REASONS="0x4")  # sw_power_cap on every sample
    config = barrier_config(tmp_path, "t", peers=1, extra="gpu_monitor: {enabled: true, interval_sec: 0.05}\n")
    r = subprocess.run([str(magpie), "compare", "-k", str(config), "--no-perf", "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    ws = only(tmp_path / "out", "compare_")
    report = json.loads((ws / "compare_report.json").read_text())
    mon = report["gpu_monitor"]
    assert mon["available"] is True and [g["index"] for g in mon["gpus"]] == [0], mon
    assert mon["gpus"][0]["fields"]["sm_clock_mhz"]["max"] == 345
    t = mon["throttle"]
    assert t["throttled"] is True and t["window"] == "whole run", t  # --no-perf: no timing window
    assert t["gpus"][0]["reasons"] == {"sw_power_cap": t["gpus"][0]["samples"]}, t
    assert any(w.startswith("gpu_monitor: GPU 0 (NVIDIA H200): clocks lowered") for w in report["warnings"])
    assert "warning: gpu_monitor: GPU 0 (NVIDIA H200): clocks lowered" in r.stderr, r.stderr
    rows = (ws / "gpu_monitor.csv").read_text().splitlines()
    assert rows[0].endswith(",mem_clock_mhz,clocks_event_reasons") and rows[1].endswith(",sw_power_cap"), rows[:2]
    # The same run on an unthrottled (idle) stand-in: no warning.
    r = subprocess.run([str(magpie), "compare", "-k", str(config), "--no-perf", "-o", str(tmp_path / "idle")],
                       capture_output=True, text=True, env=fake_driver, timeout=300)
    assert r.returncode == 0 and "clocks lowered" not in r.stderr, r.stderr
