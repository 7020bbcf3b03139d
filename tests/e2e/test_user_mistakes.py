"""What a new user types wrong, and what the real binary answers: a typo of
every command and of every long option, each answered with the cause (the
unknown word), the fix (the nearest command or option the parser knows, and
where to look) and exit 2 (usage).

The commands and options are read from the binary's own `--help` pages, not
from a list kept here, so a new flag is covered the day it is added. Each typo
is one edit away from its original (two letters swapped, or one dropped), and
is chosen so that the original is the only name that close; the expected
suggestion is computed here with an independent edit distance."""
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
USAGE = 2


def run(magpie, *args, cwd=None):
    return subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd)


def osa(a: str, b: str) -> int:
    """Edit distance with adjacent swaps as one edit (optimal string alignment)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def typo_of(name: str, others: list):
    """A one-edit typo of `name` (no dashes) whose only nearest among `others` is `name`, or None."""
    candidates = []
    for i in range(1, len(name) - 1):  # swap two letters, then drop one, away from the first letter
        if name[i] != name[i + 1] and name[i] != "-" and name[i + 1] != "-":
            candidates.append(name[:i] + name[i + 1] + name[i] + name[i + 2:])
    for i in range(1, len(name)):
        if name[i] != "-":
            candidates.append(name[:i] + name[i + 1:])
    for t in candidates:
        if t in others or len(t) < 2:
            continue
        if all(osa(t, o) > 1 for o in others if o != name):
            return t
    return None


# --help pages: CLI11 lists commands under "Subcommands:" and options as
# indented lines starting with their names ("  -o,--output-dir TEXT ...").


@lru_cache(maxsize=None)
def help_page(magpie, path: tuple) -> str:
    r = run(magpie, *path, "--help")
    assert r.returncode == 0, r.stderr
    return r.stdout


def commands_of(magpie, path=()) -> list:
    names, inside = [], False
    for line in help_page(magpie, path).splitlines():
        if line.strip().upper().rstrip(":") == "SUBCOMMANDS":
            inside = True
            continue
        if inside:
            if line.strip() and not line.startswith(" "):
                break
            if m := re.match(r"^ {2}(\S+)(\s|$)", line):  # description lines are indented further
                names.append(m.group(1))
    return names


def long_options_of(magpie, path=()) -> list:
    """(name, takes_value) for every long option on a help page."""
    out = []
    for line in help_page(magpie, path).splitlines():
        m = re.match(r"^\s{1,6}((?:-\w,\s*)?--[a-z][\w-]*(?:,\s*--[a-z][\w-]*)*)(\s+[A-Z]+\b)?", line)
        if not m:
            continue
        for name in re.findall(r"--([a-z][\w-]*)", m.group(1)):
            out.append((name, bool(m.group(2))))
    return out


def all_command_paths(magpie):
    paths, todo = [()], [()]
    while todo:
        path = todo.pop()
        for c in commands_of(magpie, path):
            paths.append(path + (c,))
            todo.append(path + (c,))
    return paths


def test_help_pages_list_commands_and_options(magpie):
    """The generators below read real help pages: they must find what README.md documents."""
    commands = commands_of(magpie)
    for c in ("benchmark", "tracelens", "analyze", "compare", "replay", "results", "mcp", "batch"):
        assert c in commands, commands
    assert "list" in commands_of(magpie, ("results",))
    assert ("top-k", True) in long_options_of(magpie, ("benchmark",))
    assert ("no-rank-csv", False) in long_options_of(magpie, ("benchmark",))


def test_the_two_cases_from_the_issue(magpie):
    """`--topk 5`: the unknown flag, not the positional its value landed in; `benchmrk`: the command."""
    r = run(magpie, "benchmark", "--trace-dir", "t", "--topk", "5")
    assert r.returncode == USAGE, r
    assert "unknown option '--topk' (did you mean '--top-k'?)" in r.stderr, r.stderr
    assert "Run 'magpie benchmark --help'" in r.stderr and "not in {vllm" not in r.stderr, r.stderr
    r = run(magpie, "benchmrk", "--trace-dir", "examples/traces")
    assert r.returncode == USAGE, r
    assert "unknown command 'benchmrk' (did you mean 'benchmark'?)" in r.stderr, r.stderr
    assert "Run 'magpie --help' for the commands." in r.stderr, r.stderr
    assert "not expected" not in r.stderr, r.stderr


def test_a_typo_of_every_command(magpie):
    checked = 0
    for path in all_command_paths(magpie):
        commands = commands_of(magpie, path)
        for name in commands:
            typo = typo_of(name, commands)
            if typo is None:
                continue
            r = run(magpie, *path, typo)
            where = " ".join(("magpie",) + path)
            assert r.returncode == USAGE, (where, typo, r)
            assert f"unknown command '{typo}' (did you mean '{name}'?)" in r.stderr, (where, r.stderr)
            assert f"Run '{where} --help' for the commands." in r.stderr, r.stderr
            checked += 1
    assert checked >= 12, checked  # magpie's commands and results' own


def test_a_typo_of_every_long_option(magpie):
    checked = 0
    for path in all_command_paths(magpie):
        options = long_options_of(magpie, path)
        names = [n for n, _ in options]
        where = " ".join(("magpie",) + path)
        for name, takes_value in options:
            typo = typo_of(name, names)
            if typo is None:
                continue
            args = [*path, f"--{typo}"] + (["5"] if takes_value else [])
            r = run(magpie, *args)
            assert r.returncode == USAGE, (args, r)
            assert f"unknown option '--{typo}' (did you mean '--{name}'?)" in r.stderr, (args, r.stderr)
            assert f"Run '{where} --help' for its options." in r.stderr, (args, r.stderr)
            checked += 1
    assert checked >= 100, checked


def test_typo_with_equals_and_among_good_arguments(magpie, tmp_path):
    """`--ouput-dir=x` is named without its value, and the good arguments around it do not hide it."""
    r = run(magpie, "benchmark", "--trace-dir", REPO_ROOT / "examples" / "traces", f"--ouput-dir={tmp_path}",
            "--top-k", "3")
    assert r.returncode == USAGE, r
    assert "unknown option '--ouput-dir' (did you mean '--output-dir'?)" in r.stderr, r.stderr
    assert not any(tmp_path.iterdir()), "nothing runs when the command line is wrong"


def test_an_option_of_another_command(magpie):
    """A real option given to the wrong command says whose it is."""
    r = run(magpie, "tracelens", "trace.json.gz", "--top-k", "5", "-o", "out")
    assert r.returncode == USAGE, r
    assert "unknown option '--top-k' for 'magpie tracelens': it is an option of 'magpie benchmark'" in r.stderr, \
        r.stderr
    r = run(magpie, "--top-k", "5", "benchmark", "--trace-dir", "t")
    assert r.returncode == USAGE, r
    assert "unknown option '--top-k' for 'magpie'" in r.stderr and "put it after that command" in r.stderr, r.stderr


def test_nothing_near(magpie):
    """A word like no command lists the commands; an option like none points to --help."""
    r = run(magpie, "frobnicate")
    assert r.returncode == USAGE, r
    assert "unknown command 'frobnicate' for 'magpie'; the commands are: benchmark," in r.stderr, r.stderr
    r = run(magpie, "replay", "t.json.gz", "--zzzzzz")
    assert r.returncode == USAGE, r
    assert "unknown option '--zzzzzz' for 'magpie replay'" in r.stderr, r.stderr
    assert "Run 'magpie replay --help' for its options." in r.stderr, r.stderr


def test_right_spelling_still_runs_and_other_errors_keep_their_words(magpie, tmp_path):
    """No false alarm: a correct command runs, and a bad value is still named as CLI11 names it."""
    r = run(magpie, "benchmark", "--trace-dir", REPO_ROOT / "examples" / "traces", "-o", tmp_path, "--top-k", "3")
    assert r.returncode == 0, r.stderr
    r = run(magpie, "benchmark", "--trace-dir", "t", "--top-k", "zero")
    assert r.returncode == USAGE and "--top-k" in r.stderr and "unknown" not in r.stderr, r.stderr
    r = run(magpie, "benchmark", "vllm", "sglang")  # a second positional: CLI11's own words
    assert r.returncode == USAGE and "sglang" in r.stderr and "unknown" not in r.stderr, r.stderr
