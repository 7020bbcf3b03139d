"""The pip package: a wheel built by `pip wheel .` and repaired by
scripts/repair-wheel.sh (auditwheel), installed into a fresh venv.

Building the wheel is CI's step (.ci/run, into build-wheel/dist/), not this
suite's: a cold build takes minutes. Here: check that the wheel is a manylinux
one that `auditwheel show` accepts and that its binary and extension load the
libraries bundled in it, not the machine's; install it with no index, then run
the binary through `python -m Magpie`, the `magpie` console script and
`python -m Magpie.mcp` (stdio and, with MAGPIE_PORT, HTTP).
"""
import json
import os
import re
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test_wheel", "version": "0"},
    },
}


def built_wheel() -> Path:
    """$MAGPIE_WHEEL, else the newest build-wheel/dist/magpie-*.whl."""
    if "MAGPIE_WHEEL" in os.environ:
        wheel = Path(os.environ["MAGPIE_WHEEL"])
        if not wheel.is_file():
            pytest.fail(f"MAGPIE_WHEEL={wheel} does not exist")
        return wheel
    wheels = sorted((REPO_ROOT / "build-wheel" / "dist").glob("magpie-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.skip(
            "no wheel in build-wheel/dist/: build one with "
            "`python3 -m pip wheel . --no-deps -w build-wheel/dist && bash scripts/repair-wheel.sh` (.ci/run does)"
        )
    return wheels[-1]


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    wheel = built_wheel()  # skips before any venv is made
    root = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", root], check=True)
    subprocess.run(
        [root / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel],
        check=True,
    )
    return root


# --- the repaired wheel (scripts/repair-wheel.sh) ---

# The libraries a stock Ubuntu 24.04 GPU machine lacks (docs/PACKAGING.md):
# the wheel must carry each, and its ELF files must load the wheel's copies.
BUNDLED = ["libhs", "libsimdjson", "libyaml-cpp", "libfmt", "libxlsxwriter", "libisal", "libminizip",
           "libsqlite3"]
# Never bundled: the machine's driver and toolkit provide them (dlopen'ed).
MACHINE_ONLY = ["libcupti", "libnvidia-ml", "libcuda"]
AUDITWHEEL = Path(os.environ.get("MAGPIE_AUDITWHEEL_VENV", Path.home() / ".cache" / "magpie-e2e" / "auditwheel-venv"))


def test_wheel_is_manylinux_and_passes_auditwheel_show():
    wheel = built_wheel()
    assert "manylinux_" in wheel.name, (
        f"{wheel.name} is not repaired: run `bash scripts/repair-wheel.sh` after `pip wheel` (.ci/run does)")
    exe = AUDITWHEEL / "bin" / "auditwheel"
    if not exe.exists():
        pytest.skip(f"no auditwheel at {exe}: `bash scripts/repair-wheel.sh` installs it")
    r = subprocess.run([exe, "show", wheel], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    tag = re.search(r"manylinux_\d+_\d+_x86_64", wheel.name).group(0)
    text = " ".join(r.stdout.split())
    assert f'constrains the platform tag to "{tag}"' in text, r.stdout
    # What the wheel still needs from the machine: the manylinux base (glibc,
    # libstdc++, libgcc_s) and libcupti, which the repair excluded on purpose
    # (so `show` calls the wheel linux_x86_64 where libmagpie_cupti.so is built).
    # libresolv is on the manylinux list too (libpq's LDAP lookup needs it).
    base = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libgcc_s.so.1",
            "libstdc++.so.6", "libresolv.so.2"}
    external = set(re.findall(r"(lib[\w+.-]+?\.so[.\d]*) with versions", text))
    # auditwheel puts its 8-hex hash before the first dot: libfmt-1a2b3c4d.so.9,
    # libldap-2-062bb940.5.so.0 (the soname's own ".5" follows the hash).
    bundled = {n for n in external if re.search(r"-[0-9a-f]{8}\.", n)}
    assert {n for n in external - base - bundled if not n.startswith("libcupti.so")} == set(), external
    shown = re.search(r'consistent with the following platform tag: "(\w+)"', text).group(1)
    assert shown == tag or (shown == "linux_x86_64" and any(n.startswith("libcupti.so") for n in external)), text
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    for lib in BUNDLED:
        assert any(Path(n).name.startswith(lib + "-") and ".libs/" in n for n in names), (lib, names)
    for lib in MACHINE_ONLY:
        assert not any(Path(n).name.startswith(lib) for n in names), lib


def _ldd(path: Path) -> dict:
    """soname → the path the loader resolves it to ("not found" when none)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    found = {}
    for line in r.stdout.splitlines():
        if m := re.match(r"\s*(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$", line):
            found[m.group(1)] = m.group(2)
    return found


@pytest.mark.parametrize("elf", ["bin/magpie", "_magpie*.so"])
def test_installed_elf_files_load_the_bundled_libraries(venv, elf):
    """No LD_LIBRARY_PATH: the RUNPATH that auditwheel wrote finds each of the
    8 libraries in the installed wheel, none of them on this machine."""
    package = next(venv.glob("lib/python*/site-packages/Magpie"))
    path = next(package.glob(elf), None)
    assert path, f"no {elf} in {package}"
    deps = _ldd(path)
    assert not [k for k, v in deps.items() if v == "not found"], deps
    for lib in BUNDLED:
        hits = {k: v for k, v in deps.items() if k.startswith(lib + "-") or k.startswith(lib + ".")}
        # The binary links all 8; the extension only what its jobs need (no yaml-cpp).
        assert hits or elf != "bin/magpie", f"{path.name} does not link {lib}: {deps}"
        for soname, resolved in hits.items():
            assert venv.resolve() in Path(resolved).resolve().parents, (soname, resolved)


def run(venv: Path, *args, **kw) -> subprocess.CompletedProcess:
    # Outside the source tree, so nothing can be found through it.
    return subprocess.run(args, capture_output=True, text=True, cwd=venv, timeout=300, **kw)


def test_python_m_magpie_version(venv):
    r = run(venv, venv / "bin" / "python", "-m", "Magpie", "--version")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"magpie \d+\.\d+\.\d+( \(git [0-9a-f]+(\+dirty)?\))?\n", r.stdout)


def test_console_script_version_and_exit_status(venv):
    r = run(venv, venv / "bin" / "magpie", "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("magpie ")
    bad = run(venv, venv / "bin" / "magpie", "no-such-subcommand")
    assert bad.returncode != 0 and "no-such-subcommand" in bad.stderr


def test_gap_analysis_on_the_sample_trace(venv, tmp_path):
    out = tmp_path / "results"
    r = run(venv, venv / "bin" / "python", "-m", "Magpie", "benchmark",
            "--trace-dir", REPO_ROOT / "examples" / "traces", "-o", out)
    assert r.returncode == 0, r.stderr
    csv = out / "gap_analysis" / "gap_analysis.csv"
    assert csv.is_file() and csv.stat().st_size > 0
    report = json.loads((out / "gap_analysis" / "gap_analysis.json").read_text())
    assert report["top_kernels"]


def test_installed_binary_finds_its_harness(venv, tmp_path):
    """`magpie -v analyze` names the harness it will use: the wheel's copy, not the source tree's."""
    r = run(venv, venv / "bin" / "magpie", "-v", "analyze", "--kernel-config",
            REPO_ROOT / "examples" / "kernels" / "vector_add" / "kernel.yaml", "-o", tmp_path / "an")
    harness = re.search(r"python harness: (\S+)", r.stderr)
    assert harness, r.stderr
    path = Path(harness.group(1))
    assert (path / "magpie_bench" / "__init__.py").is_file()
    assert venv.resolve() in path.resolve().parents


def test_python_api_without_numpy_says_what_to_install(venv):
    """This venv has the wheel only: the API's tables need NumPy, and the call
    says so before it runs the job (docs/PYTHON_API.md)."""
    code = ("import Magpie\ntry:\n    Magpie.gap_analysis('.')\nexcept ImportError as e:\n    print(e)\n")
    r = run(venv, venv / "bin" / "python", "-c", code)
    assert r.returncode == 0, r.stderr
    assert "pip install numpy" in r.stdout, r.stdout


def test_mcp_stdio_initialize(venv):
    env = {k: v for k, v in os.environ.items() if k not in ("MAGPIE_HOST", "MAGPIE_PORT")}
    r = run(venv, venv / "bin" / "python", "-m", "Magpie.mcp", input=json.dumps(INITIALIZE) + "\n", env=env)
    assert r.returncode == 0, r.stderr
    reply = json.loads(r.stdout.splitlines()[0])
    assert reply["id"] == 1
    assert reply["result"]["protocolVersion"]
    assert reply["result"]["serverInfo"]["name"]


def test_mcp_http_when_port_is_set(venv):
    env = dict(os.environ, MAGPIE_HOST="127.0.0.1", MAGPIE_PORT="0")  # 0: any free port
    server = subprocess.Popen([venv / "bin" / "python", "-m", "Magpie.mcp"], cwd=venv, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in server.stderr:
            if m := re.search(r"on (http://\S+/mcp)", line):
                url = m.group(1)
                break
        assert url, "the server never said where it listens"
        req = urllib.request.Request(url, data=json.dumps(INITIALIZE).encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read().decode()
        assert '"protocolVersion"' in body, body
    finally:
        server.terminate()
        server.wait(timeout=30)


# --- the build commit outside git (a wheel built from an sdist) ---
# These need no wheel: they run the CMake steps that the sdist and the build use.

def _configure_build_info(root: Path, out: Path) -> str:
    subprocess.run(
        ["cmake", "-DGIT=", f"-DROOT={root}", f"-DIN={REPO_ROOT / 'src/gpu/build_info.hpp.in'}",
         f"-DOUT={out}", "-DMAGPIE_VERSION=0.0.0", "-P", str(REPO_ROOT / "src/gpu/build_info.cmake")],
        check=True, capture_output=True, text=True, timeout=60,
    )
    return out.read_text()


def test_build_info_outside_git_reads_the_sdist_commit_file(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    (tmp_path / "BUILD_COMMIT").write_text(commit + "\ndirty\n")
    header = _configure_build_info(tmp_path, tmp_path / "a.hpp")
    assert f'kCommit = "{commit}"' in header and "kDirty = true" in header, header
    (tmp_path / "BUILD_COMMIT").write_text(commit + "\n")
    header = _configure_build_info(tmp_path, tmp_path / "b.hpp")
    assert f'kCommit = "{commit}"' in header and "kDirty = false" in header, header
    # Not a commit (an edited or damaged file): "unknown", never the text.
    (tmp_path / "BUILD_COMMIT").write_text("see README\n")
    header = _configure_build_info(tmp_path, tmp_path / "c.hpp")
    assert 'kCommit = "unknown"' in header, header
    (tmp_path / "BUILD_COMMIT").unlink()
    header = _configure_build_info(tmp_path, tmp_path / "d.hpp")
    assert 'kCommit = "unknown"' in header, header


def test_sdist_configure_step_writes_the_checkout_commit(tmp_path):
    """What `python -m build --sdist` runs (sdist.cmake): a configure with
    SKBUILD_STATE=sdist, in a clone of this checkout so the repo is not written."""
    if subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip(f"{REPO_ROOT} is not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO_ROOT), str(clone)], check=True, timeout=120)
    # This tree's files (with any uncommitted edits), in a clone whose HEAD is known.
    (clone / "src" / "gpu").mkdir(parents=True)
    for rel in ("CMakeLists.txt", "src/gpu/build_info.cmake"):
        (clone / rel).write_bytes((REPO_ROOT / rel).read_bytes())
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    r = subprocess.run(["cmake", "-S", str(clone), "-B", str(tmp_path / "b"), "-DSKBUILD_STATE=sdist"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = (clone / "BUILD_COMMIT").read_text().splitlines()
    assert lines[0] == head, lines
    # Only two files are there, so git sees the rest as deleted: dirty.
    assert lines[1:] == ["dirty"], lines
    # Nothing but the commit was configured: no targets, no dependency lookups.
    assert not (tmp_path / "b" / "build.ninja").exists() or "magpie" not in (tmp_path / "b" / "build.ninja").read_text()
