"""A real Ray head for the Ray suites: Ray with its dashboard (the Jobs REST
API lives there, hence "ray[default]") in a cached venv
(~/.cache/magpie-e2e/ray-venv), and a fixture helper that starts a small head
on loopback in a temporary directory and always stops it.

    python3 tests/e2e/ray_env.py          # create/refresh the venv (CI step); prints the ray CLI
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CACHE = Path(os.environ.get("MAGPIE_E2E_CACHE", Path.home() / ".cache" / "magpie-e2e"))
VENV = CACHE / "ray-venv"
PY = VENV / "bin" / "python"
RAY = VENV / "bin" / "ray"
PACKAGES = ["ray[default]"]


def _works() -> bool:
    if not RAY.exists():
        return False
    probe = "import ray, ray.dashboard, aiohttp"
    return subprocess.run([str(PY), "-c", probe], capture_output=True).returncode == 0


def ensure_ray() -> Path:
    """Installs Ray once; returns the `ray` executable."""
    if _works():
        return RAY
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / "ray-install.log"
    with open(log, "a") as f:
        if not PY.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, stdout=f, stderr=f)
        r = subprocess.run([str(PY), "-m", "pip", "install", "-q", "--upgrade", *PACKAGES],
                           stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0 or not _works():
        raise RuntimeError(f"cannot install {' '.join(PACKAGES)} into {VENV}; see {log}")
    return RAY


def free_ports(n: int) -> list:
    """n distinct free TCP ports outside Ray's default worker range (10002-19999).
    Every socket stays bound until all n are chosen: picking them one at a time
    can hand out the same port twice (a CI run got client_server = dashboard)."""
    held, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port >= 20000:
                ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


def free_port() -> int:
    return free_ports(1)[0]


class RayHead:
    """`ray start --head --block` on loopback in a temporary folder, in its own
    session; stop() ends that session's processes (the head's, and every
    worker and job it started) and removes the folder. Nothing else is touched:
    other Ray heads on the machine keep running."""

    def __init__(self, num_cpus: int = 2, log_dir: Path | None = None):
        ray = ensure_ray()
        # Short: Ray puts unix sockets under it (107-byte path limit).
        self.temp_dir = Path(tempfile.mkdtemp(prefix="mray", dir="/tmp"))
        self.dashboard_port, gcs_port, client_port, agent_port = free_ports(4)
        self.address = f"http://127.0.0.1:{self.dashboard_port}"
        self.log = (log_dir or self.temp_dir) / "ray-head.log"
        t0 = time.monotonic()
        cmd = [str(ray), "start", "--head", "--block", f"--num-cpus={num_cpus}", "--num-gpus=0",
               "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}",
               f"--port={gcs_port}", f"--ray-client-server-port={client_port}",
               f"--dashboard-agent-listen-port={agent_port}", f"--temp-dir={self.temp_dir}",
               "--include-dashboard=true", "--disable-usage-stats",
               # small: the CI box has 2 cores and 24 GiB
               "--object-store-memory=100000000"]
        env = dict(os.environ)
        env.pop("RAY_ADDRESS", None)
        # Jobs inherit the head's environment: their magpie records runs in a private store.
        env["MAGPIE_RESULTS_DB"] = str(self.temp_dir / "results.db")
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"ray start exited {self.proc.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.address}/api/version", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.25)
        else:
            self.stop()
            raise RuntimeError(f"the Ray dashboard did not answer in 120 s; see {self.log}")
        self.start_seconds = time.monotonic() - t0

    def _session_pids(self):
        """Processes of this head: its session, plus any whose command line names our temp dir."""
        pids = set()
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                if os.getsid(int(d.name)) == self.proc.pid:
                    pids.add(int(d.name))
                    continue
                if str(self.temp_dir) in (d / "cmdline").read_bytes().decode(errors="replace"):
                    pids.add(int(d.name))
            except (OSError, ProcessLookupError):
                continue
        pids.discard(os.getpid())
        return pids

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)  # --block: ray stops what it started
                self.proc.wait(timeout=3)  # it drains up to 30 s; a test head need not
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        for _ in range(20):
            left = self._session_pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.25)
        subprocess.run(["rm", "-rf", str(self.temp_dir)], check=False)


if __name__ == "__main__":
    t0 = time.monotonic()
    ray = ensure_ray()
    print(ray)
    print(f"ray venv ready in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    if len(sys.argv) > 1 and sys.argv[1] == "--time-head":
        head = RayHead()
        print(f"ray head answered in {head.start_seconds:.1f} s", file=sys.stderr)
        head.stop()
