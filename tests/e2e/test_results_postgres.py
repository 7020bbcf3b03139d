"""`magpie results` against a real PostgreSQL server (MAGPIE_RESULTS_DB=postgresql://...).

The test starts its own throwaway cluster: initdb in a temporary directory, a
role with a password, the server on a free loopback port, stopped at the end.
initdb refuses to run as root, so as root the cluster runs as `nobody`. Skips
with a message when the PostgreSQL server binaries are not installed.

Checks: runs recorded by the CLI and imported workspaces list, show and diff
as with SQLite; 8 processes importing the same 80 workspaces at once (schema
creation included) leave exactly 80 rows, none lost, none twice; 8 processes
writing 50 runs each at once leave 400; a store exported from SQLite prints the
same `list`, `show` and `diff`; and the errors for
a malformed URL, a refused connection, a missing table and a newer schema.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from test_results_cli import serving_workspace

pytestmark = [pytest.mark.e2e]

PG_BIN = Path(os.environ.get("MAGPIE_PG_BIN", "/usr/lib/postgresql/15/bin"))
USER, PASSWORD = "magpie_test", "throwaway-Secret1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_owner(cmd):
    return (["runuser", "-u", "nobody", "--"] + cmd) if os.geteuid() == 0 else cmd


@pytest.fixture(scope="module")
def server():
    tools = [PG_BIN / t for t in ("initdb", "pg_ctl", "postgres")]
    if not all(t.is_file() for t in tools):
        pytest.skip(f"PostgreSQL server binaries not found in {PG_BIN} (Debian: postgresql-15; "
                    "or set MAGPIE_PG_BIN)")
    if os.geteuid() == 0 and not shutil.which("runuser"):
        pytest.skip("running as root and runuser is missing: initdb refuses to run as root")
    root = Path(tempfile.mkdtemp(prefix="magpie-pg-"))
    data, pwfile, log = root / "data", root / "pw", root / "server.log"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        for p in (root, pwfile):
            shutil.chown(p, "nobody")
    port = free_port()
    subprocess.run(as_owner([str(PG_BIN / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={pwfile}",
                             "-A", "scram-sha-256", "--no-sync"]), check=True, capture_output=True)
    subprocess.run(as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "start", "-o",
                             f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"]),
                   check=True, capture_output=True)
    try:
        yield {"port": port, "root": root,
               "url": f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/postgres"}
    finally:
        subprocess.run(as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def psql(server, sql, db="postgres"):
    """Runs SQL as the test's role through the server's own client library (psql)."""
    psql_bin = PG_BIN / "psql" if (PG_BIN / "psql").is_file() else Path(shutil.which("psql") or "psql")
    url = f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{server['port']}/{db}"
    out = subprocess.run([str(psql_bin), url, "-qAtc", sql], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run(magpie, *args, url, check=True):
    env = dict(os.environ, MAGPIE_RESULTS_DB=url)
    proc = subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, env=env, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"magpie {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def fresh_db(server, name):
    psql(server, f"CREATE DATABASE {name}")
    return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{server['port']}/{name}"


def test_record_list_show_diff(magpie, server, tmp_path):
    url = fresh_db(server, "record")
    # A gap analysis records itself (begin, then finish with metrics) as it runs.
    run(magpie, "benchmark", "--trace-dir", REPO_ROOT / "examples" / "traces", "-o", tmp_path / "gap", url=url)
    base = serving_workspace(tmp_path / "out" / "benchmark_vllm_20260101_000000", 1.0, 1)
    fast = serving_workspace(tmp_path / "out" / "benchmark_vllm_20260102_000000", 0.6, 2)
    assert "imported 2 workspaces" in run(magpie, "results", "import", tmp_path / "out", url=url).stdout
    assert "imported 0 workspaces" in run(magpie, "results", "import", tmp_path / "out", url=url).stdout

    runs = json.loads(run(magpie, "results", "list", "--json", url=url).stdout)
    assert [r["kind"] for r in runs] == ["benchmark", "benchmark", "gap_analysis"]
    assert [r["id"] for r in runs] == [3, 2, 1]
    assert all(r["status"] == "succeeded" for r in runs)
    assert runs[2]["face"] == "cli" and runs[2]["metrics"]["total_duration_us"] > 0
    # The same rows through the server's own client: the store is really there.
    assert psql(server, "SELECT count(*) FROM runs", db="record") == "3"
    assert psql(server, "SELECT version FROM schema_version", db="record") == "2"

    shown = json.loads(run(magpie, "results", "show", fast, "--json", url=url).stdout)
    assert shown["metrics"]["completed_requests"] == 200
    table = run(magpie, "results", "list", url=url).stdout
    assert f"127.0.0.1:{server['port']}/record" in run(magpie, "results", "list", "--kind", "analyze", url=url).stdout
    assert PASSWORD not in table
    diff = json.loads(run(magpie, "results", "diff", base, fast, "--format", "json", "--resamples", "200",
                          url=url).stdout)
    ttft = next(m for m in diff["serving"][0]["metrics"] if m["metric"] == "ttft_mean_ms")
    assert ttft["within_run_verdict"] == "FASTER"


def test_concurrent_writers_lose_and_duplicate_nothing(magpie, server, tmp_path):
    url = fresh_db(server, "concurrent")
    out = tmp_path / "all"
    for p in range(8):
        for i in range(10):
            serving_workspace(out / f"benchmark_vllm_2026010{p + 1}_0000{i:02d}", 1.0 + i / 10, p * 10 + i)
    env = dict(os.environ, MAGPIE_RESULTS_DB=url)
    # All 8 processes index the same 80 workspaces at once: each must be added
    # by exactly one of them.
    procs = [subprocess.Popen([str(magpie), "results", "import", str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    added = 0
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        added += int(stdout.split()[1])  # "imported N workspaces from ..."
    assert added == 80
    runs = json.loads(run(magpie, "results", "list", "--limit", "0", "--json", url=url).stdout)
    assert len(runs) == 80
    assert len({r["workspace"] for r in runs}) == 80
    assert {r["workspace"] for r in runs} == {str(p) for p in out.glob("benchmark_*")}
    assert all(r["metrics"]["completed_requests"] == 200 for r in runs)
    assert psql(server, "SELECT count(*), count(DISTINCT workspace) FROM runs", db="concurrent") == "80|80"


def test_errors_name_the_url_and_the_fix(magpie, server):
    port = server["port"]
    bad = run(magpie, "results", "list", url=f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/postgres?nosuch=1",
              check=False)
    assert bad.returncode == 2 and "URL is not valid" in bad.stderr and PASSWORD not in bad.stderr

    refused = run(magpie, "results", "list", url=f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{free_port()}/postgres",
                  check=False)
    assert refused.returncode == 7, refused.stderr
    assert "Connection refused" in refused.stderr and PASSWORD not in refused.stderr
    assert f"postgresql://{USER}@127.0.0.1:" in refused.stderr and "check that the server runs" in refused.stderr

    url = fresh_db(server, "damaged")
    run(magpie, "results", "list", url=url)  # creates the schema
    psql(server, "UPDATE schema_version SET version = 99", db="damaged")
    newer = run(magpie, "results", "list", url=url, check=False)
    assert newer.returncode == 5 and "schema version 99, newer than this magpie knows (2)" in newer.stderr
    assert f"127.0.0.1:{port}/damaged" in newer.stderr and "use a newer magpie" in newer.stderr

    psql(server, "UPDATE schema_version SET version = 2; DROP TABLE run_metadata", db="damaged")
    missing = run(magpie, "results", "list", url=url, check=False)
    assert missing.returncode == 3 and "has no table run_metadata" in missing.stderr, missing.stderr
    assert "restore the store from a backup" in missing.stderr and PASSWORD not in missing.stderr


def test_export_and_import_between_sqlite_and_postgresql(magpie, server, tmp_path):
    sqlite_store = tmp_path / "local" / "results.db"
    run(magpie, "benchmark", "--trace-dir", REPO_ROOT / "examples" / "traces", "-o", tmp_path / "gap",
        url=str(sqlite_store))
    for i in range(3):
        serving_workspace(tmp_path / "out" / f"benchmark_vllm_2026010{i + 1}_000000", 1.0 + i / 3, 10 + i)
    run(magpie, "results", "import", tmp_path / "out", url=str(sqlite_store))
    url = fresh_db(server, "shared")

    def runs(store):
        listed = json.loads(run(magpie, "results", "list", "--limit", "0", "--json", url=store).stdout)
        return [{k: v for k, v in r.items() if k != "id"} for r in listed]

    local = runs(str(sqlite_store))
    assert len(local) == 4
    out = run(magpie, "results", "export", "--to", url, url=str(sqlite_store)).stdout
    assert "copied 4 runs" in out and PASSWORD not in out
    assert runs(url) == local  # every field, metrics to the last bit, in the same order
    assert "copied 0 runs" in run(magpie, "results", "export", "--to", url, url=str(sqlite_store)).stdout

    # Metadata travels too (set here in the shared store, as a Ray job's facts would be).
    psql(server, "INSERT INTO run_metadata (run_id, key, value) SELECT id, 'engine', 'vllm ' || id FROM runs",
         db="shared")
    shared = runs(url)
    assert sorted(r["metadata"]["engine"] for r in shared) == ["vllm 1", "vllm 2", "vllm 3", "vllm 4"]
    back = tmp_path / "back" / "results.db"
    assert "copied 4 runs" in run(magpie, "results", "import", "--from", url, url=str(back)).stdout
    assert runs(str(back)) == shared
    assert "copied 0 runs" in run(magpie, "results", "import", "--from", url, url=str(back)).stdout
    assert psql(server, "SELECT count(*) FROM runs", db="shared") == "4"


def test_exported_store_answers_list_show_and_diff_as_the_original(magpie, server, tmp_path):
    """What a user reads: `results list`, `show` and `diff` print the same for a SQLite
    store and its copy in PostgreSQL (only the line naming the store differs)."""
    sqlite_store = tmp_path / "local" / "results.db"
    for i in range(3):
        serving_workspace(tmp_path / "out" / f"benchmark_vllm_2026020{i + 1}_000000", 1.0 - i / 4, 20 + i)
    run(magpie, "results", "import", tmp_path / "out", url=str(sqlite_store))
    url = fresh_db(server, "same_output")
    run(magpie, "results", "export", "--to", url, url=str(sqlite_store))

    def printed(store, *args):
        text = run(magpie, "results", *args, url=store).stdout
        return [line for line in text.splitlines() if "results.db" not in line and "127.0.0.1:" not in line]

    for args in (("list",), ("list", "--json"), ("show", "2"), ("show", "3", "--json"),
                 ("diff", "1", "2", "3", "--format", "json", "--resamples", "200"), ("diff", "1", "3")):
        assert printed(str(sqlite_store), *args) == printed(url, *args), args


def test_eight_writers_of_fifty_runs_each_lose_and_duplicate_nothing(magpie, server, tmp_path):
    """8 processes at once, each recording its own 50 runs: 400 rows, every one once."""
    url = fresh_db(server, "writers")
    env = dict(os.environ, MAGPIE_RESULTS_DB=url)
    procs = []
    for p in range(8):
        own = tmp_path / f"writer{p}"
        for i in range(50):
            serving_workspace(own / f"benchmark_vllm_202603{p + 1:02d}_0000{i:02d}", 1.0 + i / 50, p * 50 + i)
        procs.append(subprocess.Popen([str(magpie), "results", "import", str(own)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        assert stdout.split()[1] == "50", stdout
    assert psql(server, "SELECT count(*), count(DISTINCT workspace), count(DISTINCT id) FROM runs",
                db="writers") == "400|400|400"
    runs = json.loads(run(magpie, "results", "list", "--limit", "0", "--json", url=url).stdout)
    assert {r["workspace"] for r in runs} == {str(p) for p in tmp_path.glob("writer*/benchmark_*")}
