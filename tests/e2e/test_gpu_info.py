"""`magpie --gpu-info [--json]`: the real binary, here and on a GPU machine.

Without an NVIDIA driver (this repository's CI) the answer is `(No GPU detected)`
with the reason, exit 0; with one, every NVML device is listed. The field-by-field
check against nvidia-smi is examples/gpu/validate_gpu_info.sh.
"""
import ctypes
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, magpie_bin

pytestmark = pytest.mark.e2e

KEYS = {"gpu_detected", "vendor", "architecture", "compiler", "profilers", "driver_version",
        "cuda_version", "devices", "notes"}


def nvidia_driver_present() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


def run(magpie, *args):
    return subprocess.run([str(magpie), *args], capture_output=True, text=True, timeout=120)


def test_text_names_compiler_and_profiler(magpie):
    r = run(magpie, "--gpu-info")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "GPU Information:"
    assert any(line.startswith("  Compiler: ") for line in lines), r.stdout
    assert any(line.startswith("  Profiler: ") for line in lines), r.stdout


@pytest.mark.skipif(nvidia_driver_present() or shutil.which("rocminfo") is not None,
                    reason="a GPU driver is installed here")
def test_no_gpu_says_so_and_why(magpie):
    r = run(magpie, "--gpu-info")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("GPU Information:\n  (No GPU detected)\n"), r.stdout
    assert "NVML not found (libnvidia-ml.so.1)" in r.stdout

    j = json.loads(run(magpie, "--gpu-info", "--json").stdout)
    assert j["gpu_detected"] is False
    assert j["devices"] == []
    assert any("NVML not found" in n for n in j["notes"])


@pytest.mark.skipif(not nvidia_driver_present(), reason="no NVIDIA driver here")
def test_nvidia_driver_lists_every_device(magpie):
    r = run(magpie, "--gpu-info", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    if not j["devices"]:
        pytest.skip("driver present but NVML lists no GPU: " + "; ".join(j["notes"]))
    assert j["vendor"] == "NVIDIA"
    assert j["architecture"].startswith("sm_")
    for d in j["devices"]:
        assert d["name"] and d["uuid"].startswith("GPU-") and d["memory_total_bytes"] > 0
    text = run(magpie, "--gpu-info").stdout
    assert "  Vendor: NVIDIA\n" in text and "  GPU 0: " in text


def test_json_is_one_object_with_the_documented_keys(magpie):
    r = run(magpie, "--gpu-info", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert KEYS <= set(j), sorted(KEYS - set(j))
    assert isinstance(j["profilers"], list) and isinstance(j["notes"], list)


def test_json_alone_is_a_usage_error(magpie):
    r = run(magpie, "--json")
    assert r.returncode == 2
    assert "--gpu-info" in r.stderr


# --- the real binary on stand-in driver libraries (tests/unit/fakes) ----------

def fake_library(env_name: str, file_name: str) -> Path:
    """$MAGPIE_FAKE_NVML / $MAGPIE_FAKE_CUDA (ctest sets them), else the build tree's."""
    return Path(os.environ.get(env_name, magpie_bin().parents[2] / "tests" / file_name))


@pytest.fixture
def fake_driver(tmp_path):
    """A folder whose libnvidia-ml.so.1 and libcuda.so.1 are the stand-ins: two H200s."""
    nvml, cuda = fake_library("MAGPIE_FAKE_NVML", "libmagpie_fake_nvml.so"), \
        fake_library("MAGPIE_FAKE_CUDA", "libmagpie_fake_cuda.so")
    if not (nvml.is_file() and cuda.is_file()):
        pytest.skip(f"stand-in driver libraries not built ({nvml}, {cuda})")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnvidia-ml.so.1").symlink_to(nvml)
    (lib / "libcuda.so.1").symlink_to(cuda)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{lib}:{env.get('LD_LIBRARY_PATH', '')}"
    return env


def test_stand_in_driver_fills_every_device_line(magpie, fake_driver):
    r = subprocess.run([str(magpie), "--gpu-info"], capture_output=True, text=True, env=fake_driver,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    for line in ["  Vendor: NVIDIA", "  Architecture: sm_90", "  Driver: 580.95.05", "  CUDA (driver): 13.0",
                 "  GPU 0: NVIDIA H200", "    PCI bus id: 00000000:19:00.0", "    SMs: 132",
                 "  GPU 1: NVIDIA H200", "    SMs: 114", "    MIG: n/a, ECC: enabled"]:
        assert line + "\n" in r.stdout, (line, r.stdout)
    j = json.loads(subprocess.run([str(magpie), "--gpu-info", "--json"], capture_output=True, text=True,
                                  env=fake_driver, timeout=120).stdout)
    assert [d["sm_count"] for d in j["devices"]] == [132, 114]
    assert j["devices"][1]["pci_bus_id"] == "00000000:3B:00.0"


SMI_ROWS = ("NVIDIA H200, GPU-00000000-1111-2222-3333-444444444444, 00000000:19:00.0, 9.0, 143771, 143258, "
            "345, 3201, 1980, 3201, 700.00, 32, 580.95.05, [N/A], Enabled, 5, 16\n"
            "NVIDIA H200, GPU-55555555-6666-7777-8888-999999999999, 00000000:3B:00.0, 9.0, 143771, 143200, "
            "380, 3201, 1980, 3201, 700.00, 30, 580.95.05, [N/A], Enabled, {gen}, 16\n")


def fake_nvidia_smi(folder: Path, pcie_gen_gpu1: int) -> None:
    """An nvidia-smi that answers the validation script's queries as the stand-in NVML would."""
    folder.mkdir()
    (folder / "rows.csv").write_text(SMI_ROWS.format(gen=pcie_gen_gpu1))
    (folder / "extra.csv").write_text("[N/A], [N/A], [N/A]\n[N/A], [N/A], [N/A]\n")
    script = folder / "nvidia-smi"
    script.write_text(f"""#!/usr/bin/env bash
case "$*" in
  *pcie.link.gen.max*) cat '{folder}/extra.csv';;
  *--query-gpu*) cat '{folder}/rows.csv';;
  *) echo '| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |';;
esac
""")
    script.chmod(0o755)


@pytest.mark.parametrize("gen, expected_rc", [(5, 0), (4, 1)])
def test_validation_script_against_stand_ins(magpie, fake_driver, tmp_path, gen, expected_rc):
    fake_nvidia_smi(tmp_path / "bin", gen)
    env = dict(fake_driver)
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    r = subprocess.run(["bash", str(REPO_ROOT / "examples" / "gpu" / "validate_gpu_info.sh"), str(magpie)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == expected_rc, r.stdout + r.stderr
    if expected_rc == 0:
        assert "0 failed" in r.stdout
    else:
        assert any("pcie.link.gen.current" in line and "MISMATCH" in line for line in r.stdout.splitlines())
