"""`--html` reports, rendered by real headless Chromium (Debian's `chromium`).

Each kind of report is produced by the real binary from real inputs (the
shipped sample trace, the shared public traces, a CPU compare run, serving
runs against the timed stub server, results diffs of those), then loaded in
Chromium with the network unreachable. The page's own script records what it
did in the DOM (docs/HTML_REPORTS.md): every chart's canvas gets
data-rendered="true" after Chart.js drew it, <body> counts charts expected and
rendered, JavaScript errors and Content-Security-Policy violations go into
#magpie-errors and body[data-errors], and data-resources-loaded is the Resource
Timing count (0: nothing fetched). A screenshot must not be blank.

Skips, saying why, when chromium is not installed (scripts/install-deps.sh
installs it). MAGPIE_HTML_SCREENSHOTS=DIR keeps the first screenshot of each kind there
(docs/html_reports/ was made so)."""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT, shared_traces  # noqa: E402

HERE = Path(__file__).resolve().parent
SAMPLE_TRACES = REPO_ROOT / "examples" / "traces"
CHART_JS = Path("/usr/share/javascript/chart.js/chart.min.js")
# No proxy that answers and no name that resolves: a page that needs the network cannot get it.
OFFLINE = ["--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium not installed (Debian: apt-get install chromium, "
                "or bash scripts/install-deps.sh); the HTML reports are not rendered")


def browser_args(tmp: Path) -> list:
    return [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
            f"--user-data-dir={tmp / 'chromium-profile'}", "--virtual-time-budget=10000", *OFFLINE]


class BodyAndErrors(html.parser.HTMLParser):
    """<body>'s attributes, the canvases and the text of #magpie-errors from a dumped DOM."""

    def __init__(self):
        super().__init__()
        self.body, self.canvases, self.errors, self._in_errors = {}, [], "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "canvas":
            self.canvases.append(a)
        elif a.get("id") == "magpie-errors":
            self._in_errors = True

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in_errors = False

    def handle_data(self, data):
        if self._in_errors:
            self.errors += data


def png_is_not_blank(png: bytes) -> bool:
    """Decodes the PNG's pixels (8-bit RGB/RGBA, no interlace: what Chromium writes) and
    says whether more than a few colours appear."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels + 1
    colours = set()
    # Sample every 7th row; filter bytes differ per row, so compare pixels of unfiltered
    # ("None" filter) rows and of the row deltas alike: a blank page has almost no variety.
    for y in range(0, height, 7):
        row = raw[y * stride + 1:(y + 1) * stride]
        colours.update(row[i:i + channels] for i in range(0, len(row), channels * 5))
        if len(colours) > 50:
            return True
    return False


def render(report: Path, tmp: Path, kind: str, min_charts: int) -> BodyAndErrors:
    text = report.read_text(encoding="utf-8")
    # Offline by construction: a policy that forbids fetching anything, nothing referenced
    # by URL, and no http(s) URL beyond the two inside Chart.js's own text (its licence
    # banner and a comment), which are never requested.
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", text, re.I), report
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text, re.I), report
    urls = re.findall(r"https?://[^\s\"'<>)]+", text)
    if CHART_JS.is_file():
        assert sorted(urls) == sorted(re.findall(r"https?://[^\s\"'<>)]+", CHART_JS.read_text())), urls
    else:
        assert len(urls) <= 2, urls

    proc = subprocess.run(browser_args(tmp) + ["--dump-dom", report.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = BodyAndErrors()
    dom.feed(proc.stdout)
    assert dom.body.get("data-report-kind") == kind, dom.body
    assert dom.errors.strip() == "" and "data-errors" not in dom.body, dom.errors
    expected = int(dom.body.get("data-charts-expected", "-1"))
    assert expected >= min_charts, (expected, min_charts)
    assert dom.body.get("data-charts-rendered") == str(expected), dom.body
    assert len(dom.canvases) == expected
    assert all(c.get("data-rendered") == "true" for c in dom.canvases), dom.canvases
    assert dom.body.get("data-resources-loaded") == "0", dom.body

    shot = tmp / f"{kind}.png"
    proc = subprocess.run(browser_args(tmp) + ["--hide-scrollbars", "--window-size=1280,1600",
                                               f"--screenshot={shot}", report.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    assert png_is_not_blank(shot.read_bytes()), f"blank screenshot of {report}"
    keep = os.environ.get("MAGPIE_HTML_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        if not (Path(keep) / f"{kind}.png").exists():  # the first report of each kind
            shutil.copy(shot, Path(keep) / f"{kind}.png")
    return dom


def run(magpie, *args, ok=True):
    proc = subprocess.run([str(magpie), *map(str, args)], capture_output=True, text=True, timeout=600)
    if ok:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def html_path_from(proc) -> Path:
    m = re.search(r"^html report: (.+)$", proc.stderr, re.M)
    assert m, proc.stderr
    return Path(m.group(1))


# --- one test per kind ----------------------------------------------------------------------

def test_gap_analysis_of_the_sample_trace(magpie, tmp_path):
    proc = run(magpie, "benchmark", "--trace-dir", SAMPLE_TRACES, "-o", tmp_path / "out", "--html")
    report = html_path_from(proc)
    # Written into the run's own folder, which <out>/gap_analysis links to.
    assert report.resolve() == (tmp_path / "out" / "gap_analysis" / "gap_analysis.html").resolve()
    render(report, tmp_path, "gap_analysis", 3)


def test_gap_analysis_of_shared_rank_traces(magpie, tmp_path):
    ranks = sorted((shared_traces() / "public").glob("hta__sendrecv-rank-*.json.gz"))
    if len(ranks) < 2:
        pytest.skip(f"shared rank traces not found under {shared_traces() / 'public'}")
    for r in ranks:
        (tmp_path / "traces").mkdir(exist_ok=True)
        shutil.copy(r, tmp_path / "traces" / r.name)
    proc = run(magpie, "benchmark", "--trace-dir", tmp_path / "traces", "-o", tmp_path / "out", "--html")
    dom = render(html_path_from(proc), tmp_path, "gap_analysis", 3)
    assert len(dom.canvases) == 3


def test_tracelens_of_the_sample_trace(magpie, tmp_path):
    trace = SAMPLE_TRACES / "llama_4layer_bs16_prompt1024_decode16.json.gz"
    proc = run(magpie, "tracelens", trace, "-o", tmp_path, "--html")
    report = html_path_from(proc)
    assert report == tmp_path / "tracelens" / "tracelens_report.html"
    # Stage time, categories, and per stage (decode, prefill) top kernels and a roofline.
    render(report, tmp_path, "tracelens", 6)
    assert "roof matrix_bf16" in report.read_text()  # the H200's roof is drawn


def test_tracelens_of_a_shared_sglang_trace(magpie, tmp_path):
    trace = shared_traces() / "public" / "traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"
    if not trace.is_file():
        pytest.skip(f"shared trace {trace} not found")
    proc = run(magpie, "tracelens", trace, "-o", tmp_path, "--html")
    render(html_path_from(proc), tmp_path, "tracelens", 1)


# A CPU "kernel": the testcase sleeps longer for the slow implementation.
SLEEP_BY_ID = "sh -c 'case $MAGPIE_KERNEL_ID in *slow*) sleep 0.12;; *) sleep 0.03;; esac'"


def cpu_compare(magpie, tmp_path: Path, out: Path, ok=True):
    for name in ("slow", "fast"):
        (tmp_path / f"{name}.py").write_text("pass\n")
    return run(magpie, "compare", tmp_path / "slow.py", tmp_path / "fast.py", "--type", "pytorch",
               "--testcase", SLEEP_BY_ID, "--rounds", "4", "-o", out, "--html", ok=ok)


def test_compare_on_the_cpu(magpie, tmp_path):
    proc = cpu_compare(magpie, tmp_path, tmp_path / "out")
    report = html_path_from(proc)
    assert report.name == "compare_report.html" and (report.parent / "compare_report.json").is_file()
    # Speedup CIs, the latency distribution, the medians per round.
    render(report, tmp_path, "compare", 3)
    text = report.read_text()
    assert "kernel_1_fast" in text and "Speedup" in text


def test_analyze_on_the_cpu(magpie, tmp_path):
    (tmp_path / "k.py").write_text("pass\n")
    proc = run(magpie, "analyze", tmp_path / "k.py", "--type", "pytorch", "--testcase", "sleep 0.02",
               "--rounds", "3", "-o", tmp_path / "out", "--html")
    report = html_path_from(proc)
    assert report.name == "analyze_report.html"
    render(report, tmp_path, "analyze", 1)


class TimedStub:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "timed_stream_server.py"), "--ttft-ms", "40", "--itl-ms", "4",
             "--words-are-tokens"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("port "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def stub():
    s = TimedStub()
    yield s
    s.stop()


def serving_run(magpie, stub, out: Path, html=True):
    args = ["benchmark", "vllm", "--endpoint", stub.url, "--concurrency", "1,4", "--num-prompts", "12",
            "--input-len", "32", "--output-len", "12", "--range-ratio", "0", "--token-id-max", "4000",
            "--warmups", "1", "--request-timeout", "60", "-o", out]
    proc = run(magpie, *args, *(["--html"] if html else []))
    return proc, sorted(out.glob("benchmark_vllm_*"))[-1]


def test_serving_sweep(magpie, stub, tmp_path):
    proc, ws = serving_run(magpie, stub, tmp_path / "out")
    report = html_path_from(proc)
    assert report == ws / "benchmark_report.html"
    # 4 percentile charts, 2 throughput-vs-latency, 4 distributions, a timeline per case.
    dom = render(report, tmp_path, "serving", 12)
    assert len(dom.canvases) == 12


def test_serving_page_shows_the_search_curve_and_ttft_by_turn(magpie, stub, tmp_path):
    """A concurrency search against the timed stub with 2 slots (tests/e2e/test_slo_search.py) and a
    synthetic-sessions run: the page carries the rate/goodput curve with its knee, and TTFT by turn."""
    from test_serving_keys import start_stub
    slotted, port = start_stub("--ttft-ms", "100", "--itl-ms", "20", "--slots", "2")
    try:
        out = tmp_path / "search"
        proc = run(magpie, "benchmark", "vllm", "--endpoint", f"http://127.0.0.1:{port}", "--input-len", "8",
                   "--output-len", "4", "--range-ratio", "0", "--token-id-max", "4000", "--warmups", "0",
                   "--num-prompts", "20", "--slo", "ttft_p90<=180ms", "--search", "concurrency",
                   "--search-range", "1:4", "-o", out, "--html")
    finally:
        slotted.terminate()
        slotted.wait(timeout=10)
    page = html_path_from(proc)
    text = page.read_text()
    assert "SLO search: throughput and goodput against the load" in text
    assert "knee: concurrency 2 passes, concurrency 3 fails" in text
    assert "Request throughput and goodput per probe" in text
    render(page, tmp_path, "serving", 1)

    out = tmp_path / "sessions"
    proc = run(magpie, "benchmark", "vllm", "--endpoint", stub.url, "--dataset", "synthetic_sessions",
               "--num-sessions", "3", "--turns", "3", "--input-len", "10", "--output-len", "4", "--range-ratio",
               "0", "--warmups", "0", "-o", out, "--html")
    page = html_path_from(proc)
    text = page.read_text()
    assert "Median TTFT by turn" in text and "TTFT p99 by turn" in text
    assert "SLO search" not in text
    render(page, tmp_path, "serving", 2)


def test_results_diff_of_serving_runs(magpie, stub, tmp_path):
    _, a = serving_run(magpie, stub, tmp_path / "a", html=False)
    _, b = serving_run(magpie, stub, tmp_path / "b", html=False)
    out = tmp_path / "diff.html"
    proc = run(magpie, "results", "diff", a, b, "--label", "base,new", "--html", out)
    assert html_path_from(proc) == out
    # One interval chart per case of the sweep.
    render(out, tmp_path, "results_diff", 2)
    assert "ttft_mean_ms" in out.read_text()


def test_results_diff_of_compare_runs(magpie, tmp_path):
    cpu_compare(magpie, tmp_path, tmp_path / "a")
    cpu_compare(magpie, tmp_path, tmp_path / "b")
    a, b = (sorted((tmp_path / x).glob("compare_*"))[-1] for x in ("a", "b"))
    out = tmp_path / "diff.html"
    run(magpie, "results", "diff", a, b, "--html", out)
    render(out, tmp_path, "results_diff", 1)
    assert "kernel_1_fast" in out.read_text()


def test_results_diff_of_op_tables(magpie, tmp_path):
    """`results diff --ops --html`: two gap analyses of the sample trace, one listing the top 5
    kernels and one the top 8, so three kernels are in one table only."""
    gaps = []
    for name, k in (("a", 5), ("b", 8)):
        run(magpie, "benchmark", "--trace-dir", SAMPLE_TRACES, "--top-k", k, "-o", tmp_path / name)
        gaps.append(tmp_path / name / "gap_analysis")
    out = tmp_path / "ops.html"
    proc = run(magpie, "results", "diff", *gaps, "--ops", "--label", "top5,top8", "--html", out)
    assert html_path_from(proc) == out
    assert proc.stdout.startswith("section,name")  # the CSV still goes to stdout
    # Per section: time per op in each workspace, and the change against the baseline.
    render(out, tmp_path, "results_diff_ops", 2)
    text = out.read_text()
    assert "only in candidate" in text and "within ±5%" in text


def test_serving_run_with_gpu_monitor(magpie, stub, tmp_path):
    """The GPU monitor plots: CI has no GPU, so the run samples the stand-in NVML driver
    (tests/unit/fakes/fake_nvml.cpp: two H200s reporting memory, SM clock and temperature, no
    power or utilization) through the real monitor, which writes the real gpu_monitor.csv and
    report block; the page plots each reported field over time, one line per GPU."""
    nvml = Path(os.environ.get("MAGPIE_FAKE_NVML", Path(magpie).parents[2] / "tests" / "libmagpie_fake_nvml.so"))
    if not nvml.is_file():
        pytest.skip(f"stand-in NVML not built ({nvml})")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnvidia-ml.so.1").symlink_to(nvml.resolve())
    env = dict(os.environ, LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("benchmark:\n  framework: vllm\n  model: timed-stub\n  run_mode: local\n"
                   "  envs: {CONC: 2, ISL: 8, OSL: 6, RANDOM_RANGE_RATIO: 0, NUM_PROMPTS: 8}\n"
                   "  profiler:\n    torch_profiler: {enabled: false}\n"
                   "    gpu_monitor: {enabled: true, interval_sec: 0.05}\n")
    proc = subprocess.run([str(magpie), "benchmark", "-b", cfg, "--endpoint", stub.url, "-o", tmp_path / "out",
                           "--html"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = html_path_from(proc)
    block = json.loads((report.parent / "benchmark_report.json").read_text())["gpu_monitor"]
    assert block["available"] and block["samples"] >= 2, block
    # 4 percentile charts, 4 distributions, 1 timeline, and memory, SM clock, temperature over time.
    dom = render(report, tmp_path, "serving", 12)
    assert len(dom.canvases) == 12
    text = report.read_text()
    assert "GPU monitor" in text and "SM clock" in text and "GPU 1" in text
    assert "Power draw" not in text  # the stand-in reports no power: no empty chart


def test_trace_diff_of_the_compile_pair(magpie, tmp_path):
    """`magpie trace-diff -o`: torch.compile default vs reduce-overhead (tests/data/h200_graphs)."""
    data = REPO_ROOT / "tests" / "data" / "h200_graphs"
    run(magpie, "trace-diff", data / "compile_default.json.gz", data / "compile_reduce_overhead.json.gz",
        "-o", tmp_path / "diff")
    out = tmp_path / "diff" / "trace_diff.html"
    render(out, tmp_path, "trace_diff", 2)
    assert "triton_poi_fused_gelu_0" in out.read_text()
