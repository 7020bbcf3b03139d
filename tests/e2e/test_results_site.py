"""`magpie results site` end to end: a store of real runs, the site built by the
real binary, and its pages loaded in real headless Chromium.

The store is filled the way a team fills it: serving benchmarks through the real
CLI (`magpie benchmark vllm --endpoint ... --html`) against two timed stub
servers (timed_stream_server.py, the second twice as slow: the injected
regression), one git commit per run in a throwaway repository (the first
commit run twice: its repeat measures the run-to-run noise), and a gap analysis
of the shipped sample trace with its HTML report (a series of another kind).
Then `results site -o DIR` must write an index of both series and a page per
series whose charts render in Chromium with no JavaScript error, no blocked or
fetched resource, the regression marked at the first slow commit, and every
link (index -> series page, point -> its run's benchmark_report.html) pointing
at a file that is there. A rebuild replaces the site; a folder of other files is
refused (exit 2) and left alone. About 10 s."""
import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT  # noqa: E402
from test_html import render  # noqa: E402
from test_results_series import FAST_COMMITS, SLOW_COMMITS, record_series, run  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def site(magpie, tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    recorded = record_series(magpie, root, "--html")
    env, repo, commits = recorded["env"], recorded["repo"], recorded["commits"]
    run(magpie, "benchmark", "--trace-dir", REPO_ROOT / "examples" / "traces", "-o", root / "gap", "--html",
        env=env, cwd=repo)
    proc = run(magpie, "results", "site", "-o", root / "site", env=env)
    assert re.search(r"site of 2 series \(13 runs, 12 points linked to reports\)", proc.stdout), proc.stdout
    series = json.loads(run(magpie, "results", "series", "--json", env=env).stdout)
    return {"root": root, "env": env, "commits": commits, "dir": root / "site", "series": series}


def links_of(page: Path) -> list:
    """Every relative link of a page: <a href> and the chart points' "href"."""
    text = page.read_text(encoding="utf-8")
    hrefs = re.findall(r'<a href="([^"]+)"', text)
    charts = re.search(r'<script type="application/json" id="magpie-charts">(.*?)</script>', text, re.S)
    for spec in json.loads(charts.group(1)):
        for d in spec["config"]["data"]["datasets"]:
            hrefs += [p["href"] for p in d["data"] if isinstance(p, dict) and "href" in p]
    return hrefs


def test_index_lists_both_series_and_renders(site, tmp_path):
    index = site["dir"] / "index.html"
    dom = render(index, tmp_path, "results_site", 0)
    assert dom.body.get("data-charts-rendered") == "0"
    text = index.read_text(encoding="utf-8")
    for s in site["series"]:
        assert f'<a href="series/{s["id"]}.html">' in text, s["id"]
        assert (site["dir"] / "series" / f'{s["id"]}.html').is_file()
    assert "REGRESSION" in text and "gap_analysis" in text and "e2e-runner" in text
    assert site["commits"][FAST_COMMITS][:10] in text  # the latest change: at the first slow commit


def test_series_page_charts_the_regression_and_links_each_run(site, tmp_path):
    serving = next(s for s in site["series"] if s["key"]["kind"] == "benchmark")
    page = site["dir"] / "series" / f'{serving["id"]}.html'
    dom = render(page, tmp_path, "results_series", 4)  # the benchmark's four default metrics
    assert len(dom.canvases) == 4
    text = page.read_text(encoding="utf-8")
    charts = json.loads(re.search(r'id="magpie-charts">(.*?)</script>', text, re.S).group(1))
    throughput = next(c for c in charts if any(d["label"] == "value" for d in c["config"]["data"]["datasets"]))
    sets = {d["label"]: d["data"] for d in throughput["config"]["data"]["datasets"]}
    assert len(sets["value"]) == FAST_COMMITS + SLOW_COMMITS
    assert [p["x"] for p in sets["regression"]] == [FAST_COMMITS]
    assert len(sets["95% CI (low)"]) == 1  # only the first commit has a repeat
    # Every point links to a report that is there, each relative to the page.
    links = links_of(page)
    assert sum(1 for p in sets["value"] if "href" in p) == FAST_COMMITS + SLOW_COMMITS
    for href in links:
        assert not href.startswith(("/", "file:", "http")), href
        target = (page.parent / unquote(href)).resolve()
        assert target.is_file() and target.name == "benchmark_report.html", href
    gap = next(s for s in site["series"] if s["key"]["kind"] == "gap_analysis")
    gap_page = site["dir"] / "series" / f'{gap["id"]}.html'
    render(gap_page, tmp_path, "results_series", 1)
    assert all((gap_page.parent / unquote(h)).resolve().name == "gap_analysis.html" for h in links_of(gap_page))


def test_rebuild_replaces_the_site_and_a_foreign_folder_is_refused(magpie, site):
    (site["dir"] / "stale.html").write_text("old")
    run(magpie, "results", "site", "-o", site["dir"], env=site["env"])
    assert not (site["dir"] / "stale.html").exists() and (site["dir"] / "index.html").is_file()
    assert sorted(p.name for p in site["root"].iterdir() if p.name.startswith(".site")) == []
    mine = site["root"] / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    proc = run(magpie, "results", "site", "-o", mine, env=site["env"], check=False)
    assert proc.returncode == 2 and "not a site made by `magpie results site`" in proc.stderr, proc.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    bad = run(magpie, "results", "site", "-o", site["root"] / "s2", "--since", "last week", env=site["env"],
              check=False)
    assert bad.returncode == 2 and "is not a date" in bad.stderr, bad.stderr
