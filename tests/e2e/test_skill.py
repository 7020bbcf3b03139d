"""The agent skill (skills/magpie/) never drifts from the tool it teaches.

Every `magpie ...` line in the skill's sh code blocks is checked against the
real binary: its subcommand exists (`magpie SUB --help` exits 0) and every
flag it uses appears in that help (or the global help). Commands that need no
GPU, engine or earlier runs are run for real, in document order, in a scratch
folder that sees the repository's examples/ (so the skill's relative paths
work) with a scratch results store; each must exit 0. The rest are listed in
NOT_RUN with the reason. The MCP tools named in SKILL.md's "MCP tools" table
must be exactly the tools the real server lists (`magpie mcp`, tools/list over
stdio JSON-RPC)."""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT  # noqa: E402

SKILL_DIR = REPO_ROOT / "skills" / "magpie"
FILES = ["SKILL.md", "reference.md", "examples.md"]

# Commands the test does not run, and why. Each is still checked against --help.
NOT_RUN = [
    (r"^magpie benchmark (vllm|sglang|atom)\b", "needs an inference engine or a running server"),
    (r"^magpie benchmark -b\b", "launches the engine the YAML names"),
    (r"^magpie (analyze|compare)\b", "needs a GPU and its compiler (or torch/triton on a GPU)"),
    (r"^magpie results diff 12 15\b", "needs runs 12 and 15 in the user's results store"),
    (r"^magpie results diff before after\b", "needs the two serving runs above it"),
    (r"^magpie mcp\b", "a server: it runs until its client closes it (tools/list is checked below)"),
]


def skill_commands() -> list:
    """(file, line number, command) for every `magpie` line in the sh blocks, in order."""
    out = []
    for name in FILES:
        in_block = False
        for i, line in enumerate((SKILL_DIR / name).read_text().splitlines(), 1):
            if line.startswith("```"):
                in_block = (not in_block) and line.strip() in ("```sh", "```bash", "```console")
                continue
            cmd = line.strip().removeprefix("$ ")
            if in_block and cmd.startswith("magpie"):
                out.append((name, i, cmd.split("  #")[0].strip()))
    return out


def help_text(magpie, path: list) -> str:
    proc = subprocess.run([str(magpie), *path, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"`magpie {' '.join(path)} --help` failed: {proc.stderr}"
    return proc.stdout


def subcommands_in(help_out: str) -> set:
    section = help_out.split("Subcommands:", 1)
    if len(section) < 2:
        return set()
    return {m.group(1) for m in re.finditer(r"^  ([a-z][a-z0-9_-]*)\s", section[1], re.M)}


def test_the_skill_has_front_matter():
    text = (SKILL_DIR / "SKILL.md").read_text()
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert m, "SKILL.md must start with YAML front matter"
    keys = dict(line.split(":", 1) for line in m.group(1).splitlines() if ":" in line)
    assert keys.get("name", "").strip() == "magpie"
    assert len(keys.get("description", "").strip()) > 50
    for name in FILES:
        assert (SKILL_DIR / name).is_file(), name
    assert len(skill_commands()) >= 15


@pytest.mark.parametrize("where,line,cmd", skill_commands(), ids=lambda v: str(v)[:60])
def test_every_command_exists_with_its_flags(magpie, where, line, cmd):
    words = shlex.split(cmd)[1:]
    # Global options only (the top help's examples mention subcommands' flags too).
    top = help_text(magpie, []).split("Options:", 1)[1].split("Subcommands:", 1)[0]
    path = []
    while words and not words[0].startswith("-") and words[0] in subcommands_in(help_text(magpie, path)):
        path.append(words.pop(0))
    assert path or all(w.startswith("-") for w in words[:1]), f"{where}:{line}: no such subcommand: {cmd}"
    helps = help_text(magpie, path) + top
    for w in words:
        if re.match(r"^--?[A-Za-z]", w):
            flag = w.split("=", 1)[0]
            assert re.search(rf"(^|[\s,]){re.escape(flag)}([\s,=:]|$)", helps, re.M), \
                f"{where}:{line}: `{flag}` is not an option of `magpie {' '.join(path)}`"


def test_runnable_commands_succeed(magpie, tmp_path):
    (tmp_path / "examples").symlink_to(REPO_ROOT / "examples")
    env = dict(os.environ, MAGPIE_RESULTS_DB=str(tmp_path / "results.db"))
    ran, skipped = [], []
    for where, line, cmd in skill_commands():
        reason = next((why for pat, why in NOT_RUN if re.search(pat, cmd)), None)
        if reason:
            skipped.append((cmd, reason))
            continue
        proc = subprocess.run([str(magpie), *shlex.split(cmd)[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{where}:{line}: `{cmd}` exited {proc.returncode}:\n" \
                                     f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        ran.append(cmd)
    print(f"ran {len(ran)} skill commands; not run: " + "; ".join(f"{c} ({r})" for c, r in skipped))
    assert len(ran) >= 10, ran
    # What the runnable ones promise exists.
    # Each gap analysis run has its own folder (results/gap_analysis links to the newest, which
    # a later run in the list without --html may be): the --html run's page is in its own.
    assert list((tmp_path / "results").glob("gap_analysis_*/gap_analysis.html"))
    assert (tmp_path / "results" / "tracelens" / "tracelens_report.html").is_file()


def mcp_tool_names(magpie) -> set:
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "test_skill", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    proc = subprocess.run([str(magpie), "mcp"], input="".join(json.dumps(m) + "\n" for m in msgs),
                          capture_output=True, text=True, timeout=60)
    for line in proc.stdout.splitlines():
        reply = json.loads(line)
        if reply.get("id") == 2:
            return {t["name"] for t in reply["result"]["tools"]}
    raise AssertionError(f"no tools/list reply: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")


def test_mcp_tools_in_the_skill_are_the_servers(magpie):
    text = (SKILL_DIR / "SKILL.md").read_text()
    section = text.split("## MCP tools", 1)[1].split("\n## ", 1)[0]
    in_table = {m.group(1) for m in re.finditer(r"^\| `([a-z_]+)` \|", section, re.M)}
    served = mcp_tool_names(magpie)
    assert in_table == served, f"only in the skill: {in_table - served}; only on the server: {served - in_table}"
    # Every tool named anywhere in the skill's prose exists too.
    for name in FILES:
        for m in re.finditer(r"MCP tool `([a-z_]+)`", (SKILL_DIR / name).read_text()):
            assert m.group(1) in served, (name, m.group(1))
