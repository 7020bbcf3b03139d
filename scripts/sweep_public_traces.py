#!/usr/bin/env python3
"""Runs Magpie over every public test trace of HTA and TraceLens (issue 12, item 1).

Reads the two repositories from bare git directories (no work tree needed),
writes every trace-like file of their test folders (and the traces inside
TraceLens' agent_evals tarballs) under a work folder, and runs on each:

  - gap analysis: `magpie benchmark --trace-dir DIR`, the file alone in DIR;
  - `magpie tracelens FILE --mode inference`;
  - `magpie tracelens FILE --mode pytorch`;

and on every folder that holds two or more traces, the same three commands on
the folder as it is. `--extended` runs each once more with every writer on
(XLSX + CSV, HTML, python_function ingest).

A run passes when it exits 0, or with a documented error exit (3 not found,
4 unreadable, 5 bad format, 6 no GPU events) whose message names the input.
Anything else (a signal, exit 1 or 2, a time-out, an error that names no
input) is a failure. As a check against silent nonsense, the kernel events of
each file are counted here with Python's json module, independently of Magpie,
and gap analysis must find the same number (or exit 6 where there are none).

Results go to WORK/sweep.json and, with --doc, into the marked section of
docs/PUBLIC_TRACES.md. Exit status 1 when any run failed.

Usage:
  scripts/sweep_public_traces.py --magpie build/apps/magpie/magpie \
      --repo HTA=/path/HolisticTraceAnalysis.git --repo TraceLens=/path/TraceLens.git \
      [--work build-sweep] [--doc docs/PUBLIC_TRACES.md] [--extended] [--timeout 120]
"""
import argparse
import csv
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

# Which folders of each repository hold its test data.
TEST_FOLDERS = {
    "HTA": ("tests/",),
    "TraceLens": ("tests/", "agent_evals/"),
}
# Files a profiler or trace tool writes; reference outputs (.csv, .xlsx), code
# and docs are not traces.
TRACE_SUFFIXES = (".json", ".json.gz", ".raw.gz", ".pb", ".pt.trace.json")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
DOCUMENTED_ERRORS = {3: "not found", 4: "unreadable", 5: "bad format", 6: "no GPU events"}
KERNEL_CATEGORIES = ("kernel", "gpu")
# tracelens' GPU events: the exact categories Kineto and older CUPTI traces write.
GPU_ACTIVITY_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
IGNORED_CATEGORIES = ("gpu_user_annotation", "user_annotation")
MARK_BEGIN = "<!-- sweep:begin (written by scripts/sweep_public_traces.py; do not edit by hand) -->"
MARK_END = "<!-- sweep:end -->"


def git(gitdir, *args, data=None):
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], input=data, capture_output=True,
                          check=True).stdout


def is_trace_like(path: str) -> bool:
    return path.endswith(TRACE_SUFFIXES) and not path.endswith(ARCHIVE_SUFFIXES)


def human(n: int) -> str:
    if n >= 1e6:
        return f"{n / 1e6:.2f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.1f} KB"
    return f"{n} B"


def list_blobs(gitdir, commit, folders):
    """(path, sha, size or None) for every file under the test folders at commit."""
    out = []
    for line in git(gitdir, "ls-tree", "-r", "-l", commit).decode().splitlines():
        meta, path = line.split("\t", 1)
        _, kind, sha, size = meta.split()
        if kind != "blob" or not path.startswith(folders):
            continue
        out.append((path, sha, int(size) if size.isdigit() else None))  # "BAD": object absent
    return out


def read_blob(gitdir, sha):
    """The blob's bytes, or None when the mirror lacks the object."""
    try:
        return git(gitdir, "cat-file", "blob", sha)
    except subprocess.CalledProcessError:
        return None


def extract(source, gitdir, work: Path, missing: list):
    """Writes the source's trace-like files under work/source; returns their records."""
    commit = git(gitdir, "rev-parse", "HEAD").decode().strip()
    records = []
    for path, sha, size in list_blobs(gitdir, commit, TEST_FOLDERS[source]):
        archive = path.endswith(ARCHIVE_SUFFIXES)
        if not archive and not is_trace_like(path):
            continue
        data = read_blob(gitdir, sha) if size is not None else None
        if data is None:
            missing.append({"source": source, "path": path, "why": "object absent from the mirror"})
            continue
        if data.startswith(b"version https://git-lfs"):
            missing.append({"source": source, "path": path, "why": "Git LFS pointer"})
            continue
        if archive:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for member in sorted(tar.getmembers(), key=lambda m: m.name):
                    if not member.isfile() or not is_trace_like(member.name):
                        continue
                    # Members carry their repository path; the archive is named in front.
                    inner = member.name.lstrip("./")
                    dest = work / source / "archives" / Path(path).name / inner
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(tar.extractfile(member).read())
                    records.append({"source": source, "path": f"{Path(path).name}: {inner}", "file": dest})
            continue
        dest = work / source / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        records.append({"source": source, "path": path, "file": dest})
    return commit, records


def count_kernels(path: Path):
    """Kernel events as gap analysis defines them, counted with Python's json module;
    None when Python cannot read the file as a trace either."""
    raw = path.read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
    except (OSError, EOFError, ValueError):
        return None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return None
    n, total_us, gpu = 0, 0.0, 0
    for ev in events:
        if isinstance(ev, dict) and ev.get("cat") in GPU_ACTIVITY_CATEGORIES and "ts" in ev and \
                str(ev.get("ph", "X"))[:1] not in ("M", "s", "t", "f", "C"):
            gpu += 1
        if not isinstance(ev, dict) or ev.get("ph") != "X" or "ts" not in ev:
            continue
        cat = str(ev.get("cat", "")).lower()
        if any(c in cat for c in IGNORED_CATEGORIES):
            continue
        if any(c in cat for c in KERNEL_CATEGORIES):
            n += 1
            try:
                total_us += float(ev.get("dur", 0))
            except (TypeError, ValueError):
                pass
    return n, total_us, gpu


def first_error_line(stderr: str, scrub) -> str:
    for line in stderr.splitlines():
        if "error" in line.lower() or "terminate" in line.lower() or "sanitizer" in line.lower():
            return scrub(line.strip())
    lines = [l for l in stderr.splitlines() if l.strip()]
    return scrub(lines[-1].strip()) if lines else ""


def run_one(magpie, args, timeout, scrub):
    t0 = time.monotonic()
    try:
        proc = subprocess.run([str(magpie), *args], capture_output=True, text=True, errors="replace",
                              timeout=timeout)
        rc, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, stderr = "timeout", (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    return {"rc": rc, "error": first_error_line(stderr, scrub) if rc != 0 else "",
            "stderr_tail": stderr[-1500:] if rc != 0 else "", "s": round(time.monotonic() - t0, 3)}


def judge(result, names):
    """Why a run failed, or None when it passed."""
    rc = result["rc"]
    if rc == "timeout":
        return "time-out"
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc == 0:
        return None
    if rc not in DOCUMENTED_ERRORS:
        return f"exit {rc} (not a documented input error)"
    if "error:" not in result["stderr_tail"]:
        return "no error message"
    if not any(n in result["stderr_tail"] for n in names):
        return "the error names no input"
    return None


def gap_kernel_calls(out: Path):
    """(kernel events, their total µs) as gap analysis reports them (run with a top-k
    above any trace's kernel names, so that top_kernels lists them all)."""
    try:
        doc = json.loads((out / "gap_analysis" / "gap_analysis.json").read_text())
    except (OSError, ValueError):
        return None
    return sum(int(k["calls"]) for k in doc.get("top_kernels", [])), float(doc.get("total_duration_us", 0))


def cpu_fallback(out: Path) -> bool:
    """A CPU-only trace ranked over its cpu_op events (README "Gap analysis")."""
    try:
        doc = json.loads((out / "gap_analysis" / "gap_analysis.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(doc.get("cpu_fallback")) and doc.get("time_basis") == "host_self"


def pytorch_gpu_calls(out: Path):
    """GPU events in pytorch mode's kernel summaries (every rank)."""
    total, seen = 0, False
    for f in sorted((out / "tracelens").glob("rank*/kernel_summary.csv")):
        seen = True
        with f.open(newline="") as fh:
            total += sum(int(row["calls"]) for row in csv.DictReader(fh))
    return total if seen else None


def sweep_target(magpie, target: dict, tmp: Path, timeout: int, extended: bool, scrub):
    path = target["file"]
    names = {path.name, str(path)} | {p.name for p in target.get("members", [])}
    runs = {}
    with tempfile.TemporaryDirectory(dir=tmp) as d:
        d = Path(d)
        if path.is_dir():
            trace_dir = path
        else:
            trace_dir = d / "in"
            trace_dir.mkdir()
            shutil.copy(path, trace_dir / path.name)
        names.add(str(trace_dir))
        extra_gap = ["--include-python-functions"] if extended else []
        extra_tl = ["--export-format", "both", "--html", "--include-python-functions"] if extended else []
        runs["gap"] = run_one(magpie, ["benchmark", "--trace-dir", str(trace_dir), "-o", str(d / "gap"),
                                       "--top-k", "1000000", *extra_gap],
                              timeout, scrub)
        if runs["gap"]["rc"] == 0 and not path.is_dir():
            runs["gap"]["kernel_calls"] = gap_kernel_calls(d / "gap")
            runs["gap"]["cpu_fallback"] = cpu_fallback(d / "gap")
        for mode in ("inference", "pytorch"):
            runs[mode] = run_one(magpie, ["tracelens", str(path), "--mode", mode, "-o", str(d / mode), *extra_tl],
                                 timeout, scrub)
        if runs["pytorch"]["rc"] == 0 and not path.is_dir():
            runs["pytorch"]["gpu_calls"] = pytorch_gpu_calls(d / "pytorch")
    problems = {}
    for key, r in runs.items():
        why = judge(r, names)
        if why:
            problems[key] = why
    # Silent nonsense: gap analysis must see the kernels Python sees.
    k = target.get("kernels")
    gap = runs["gap"]
    if k is not None and not path.is_dir():
        if k == 0 and gap["rc"] == 0 and not gap.get("cpu_fallback"):
            problems["gap"] = "exit 0 on a trace without kernel events"
        elif k == 0 and gap["rc"] == 0:
            pass  # a CPU-only trace, ranked over its CPU ops and said so
        elif k > 0 and gap["rc"] != 0 and "gap" not in problems:
            problems["gap"] = f"exit {gap['rc']} although the trace has {k} kernel events"
        elif gap.get("kernel_calls") is not None:
            calls, us = gap["kernel_calls"]
            if calls != k or abs(us - target["kernel_us"]) > 1e-6 * abs(us) + 0.01 * k:
                problems["gap"] = (f"reports {calls} kernel events, {us:.2f} us; Python counts {k}, "
                                   f"{target['kernel_us']:.2f} us")
    g = target.get("gpu_events")
    calls = runs["pytorch"].get("gpu_calls")
    if g and calls is not None and calls != g and "pytorch" not in problems:
        problems["pytorch"] = f"kernel summary counts {calls} GPU events, Python counts {g}"
    return runs, problems


def folders_of(records):
    """Folders (as extracted) that hold two or more trace files: run as they are."""
    by_dir = {}
    for r in records:
        by_dir.setdefault(r["file"].parent, []).append(r)
    out = []
    for folder, members in sorted(by_dir.items()):
        if len(members) < 2:
            continue
        rel = str(Path(members[0]["path"]).parent) + "/"
        out.append({"source": members[0]["source"], "path": rel, "file": folder,
                    "members": [m["file"] for m in members],
                    "size": sum(m["size"] for m in members), "kernels": None, "gpu_events": None})
    return out


def cell(run, problem):
    rc = run["rc"]
    text = str(rc) if rc != "timeout" else "time-out"
    if rc != 0 and run["error"]:
        err = run["error"].replace("|", "\\|")
        if len(err) > 140:
            err = err[:137] + "…"
        text += f": {err}"
    if problem:
        text = f"**FAIL ({problem})** " + text
    return text


def table(rows):
    lines = ["| source | path | size | kernel events | gap analysis | tracelens inference | tracelens pytorch | time (s) |",
             "| --- | --- | ---: | ---: | --- | --- | --- | ---: |"]
    for t in rows:
        runs, problems = t["runs"], t["problems"]
        k = "—" if t.get("kernels") is None else str(t["kernels"])
        total_s = sum(r["s"] for r in runs.values())
        lines.append(f"| {t['source']} | `{t['path']}` | {human(t['size'])} | {k} | "
                     f"{cell(runs['gap'], problems.get('gap'))} | {cell(runs['inference'], problems.get('inference'))} | "
                     f"{cell(runs['pytorch'], problems.get('pytorch'))} | {total_s:.2f} |")
    return "\n".join(lines)


def render(summary, files, folders, missing, extended_failures):
    out = [MARK_BEGIN, ""]
    out.append(f"Swept {summary['date']} with `{summary['magpie_version']}`; "
               + ", ".join(f"{s} at `{c}`" for s, c in summary["commits"].items()) + ".")
    out.append("")
    out.append("| | inputs | runs | exit 0 | exit 3 | exit 4 | exit 5 | exit 6 | failures | slowest run |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, t in summary["totals"].items():
        out.append(f"| {label} | {t['inputs']} | {t['runs']} | {t['rc'].get('0', 0)} | {t['rc'].get('3', 0)} | "
                   f"{t['rc'].get('4', 0)} | {t['rc'].get('5', 0)} | {t['rc'].get('6', 0)} | {t['failures']} | "
                   f"{t['slowest_s']:.2f} s |")
    out.append("")
    if summary.get("extended"):
        out.append(f"Extended pass (every writer on: `--export-format both --html --include-python-functions`): "
                   f"{summary['extended']['runs']} runs, {summary['extended']['failures']} failures"
                   + ("." if not extended_failures else ": " + "; ".join(extended_failures) + "."))
        out.append("")
    out.append("### Single files")
    out.append("")
    out.append(table(files))
    out.append("")
    out.append("### Folders, run as they are")
    out.append("")
    out.append(table(folders))
    out.append("")
    out.append("### Not run: absent from the mirror")
    out.append("")
    out.append("| source | path | why |")
    out.append("| --- | --- | --- |")
    for m in missing:
        out.append(f"| {m['source']} | `{m['path']}` | {m['why']} |")
    out.append("")
    out.append(MARK_END)
    return "\n".join(out)


def totals(targets, keys=("gap", "inference", "pytorch")):
    t = {"inputs": len(targets), "runs": 0, "rc": {}, "failures": 0, "slowest_s": 0.0}
    for x in targets:
        for k in keys:
            r = x["runs"][k]
            t["runs"] += 1
            t["rc"][str(r["rc"])] = t["rc"].get(str(r["rc"]), 0) + 1
            t["slowest_s"] = max(t["slowest_s"], r["s"])
        t["failures"] += len(x["problems"])
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--magpie", required=True, type=Path)
    ap.add_argument("--repo", action="append", required=True, metavar="NAME=GITDIR",
                    help="HTA=... and/or TraceLens=... (bare git directories)")
    ap.add_argument("--work", type=Path, default=Path("build-sweep"))
    ap.add_argument("--doc", type=Path, help="rewrite the marked section of this markdown file")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--extended", action="store_true", help="also run with every writer on")
    ap.add_argument("--only", help="regex: sweep only paths that match")
    args = ap.parse_args()

    magpie = args.magpie.resolve()
    work = args.work.resolve()
    shutil.rmtree(work / "traces", ignore_errors=True)
    (work / "traces").mkdir(parents=True)
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)

    def scrub(line):
        line = line.replace(str(work / "traces") + "/", "")
        return re.sub(re.escape(str(tmp)) + r"/[^/\s:]+/in", "DIR", line)

    commits, records, missing = {}, [], []
    for spec in args.repo:
        name, gitdir = spec.split("=", 1)
        if name not in TEST_FOLDERS:
            sys.exit(f"unknown source {name!r}: expected one of {', '.join(TEST_FOLDERS)}")
        commit, recs = extract(name, gitdir, work / "traces", missing)
        commits[name] = commit
        records += recs
    for r in records:
        r["size"] = r["file"].stat().st_size
        counted = count_kernels(r["file"])
        r["kernels"], r["kernel_us"], r["gpu_events"] = counted if counted else (None, None, None)
    if args.only:
        records = [r for r in records if re.search(args.only, r["path"])]
    folders = folders_of(records)

    version = subprocess.run([str(magpie), "--version"], capture_output=True, text=True).stdout.strip()
    summary = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "magpie_version": version or str(magpie),
               "commits": commits}
    failures = []
    extended_failures = []
    for group in (records, folders):
        for t in group:
            t["runs"], t["problems"] = sweep_target(magpie, t, tmp, args.timeout, False, scrub)
            for k, why in t["problems"].items():
                failures.append(f"{t['source']} {t['path']} [{k}]: {why}")
                print(f"FAIL {t['source']} {t['path']} [{k}]: {why}", file=sys.stderr)
            if args.extended:
                runs, problems = sweep_target(magpie, t, tmp, args.timeout, True, scrub)
                t["extended_runs"] = runs
                for k, why in problems.items():
                    extended_failures.append(f"`{t['path']}` [{k}]: {why}")
                    print(f"FAIL (extended) {t['source']} {t['path']} [{k}]: {why}", file=sys.stderr)
            print(f"{t['source']:9} {t['path'][:90]:90} "
                  + " ".join(str(t["runs"][k]["rc"]) for k in ("gap", "inference", "pytorch")), flush=True)
    summary["totals"] = {"single files": totals(records), "folders": totals(folders)}
    if args.extended:
        summary["extended"] = {"runs": 3 * (len(records) + len(folders)), "failures": len(extended_failures)}

    def plain(t):
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in t.items() if k != "members"}

    (work / "sweep.json").write_text(json.dumps(
        {"summary": summary, "files": [plain(r) for r in records], "folders": [plain(f) for f in folders],
         "missing": missing, "failures": failures, "extended_failures": extended_failures}, indent=1))
    if args.doc:
        text = args.doc.read_text()
        section = render(summary, records, folders, missing, extended_failures)
        if MARK_BEGIN in text and MARK_END in text:
            head, rest = text.split(MARK_BEGIN, 1)
            text = head + section + rest.split(MARK_END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        args.doc.write_text(text)
    print(f"{len(records)} files, {len(folders)} folders, {len(missing)} not in the mirror, "
          f"{len(failures) + len(extended_failures)} failures; details in {work / 'sweep.json'}")
    return 1 if failures or extended_failures else 0


if __name__ == "__main__":
    sys.exit(main())
