// `magpie results site`: the page builders (html/html_reports.hpp) on a real
// store's series, and the job that writes the folder (jobs/results_jobs.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "html/html_reports.hpp"
#include "jobs/results_jobs.hpp"
#include "store/results_store.hpp"
#include "store/series.hpp"

namespace magpie::html {
namespace {

namespace fs = std::filesystem;
using store::RunKind;
using store::RunRecord;
using store::RunStatus;

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("magpie_site_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunRecord bench_run(const std::string& commit, int minute, double throughput,
                    const std::string& workspace) {
  RunRecord r;
  r.kind = RunKind::kBenchmark;
  r.status = RunStatus::kSucceeded;
  r.config_hash = "abc";
  r.git_commit = commit;
  r.gpu = "NVIDIA H100 80GB HBM3 (GPU 0)";
  r.host = "node7";
  r.workspace = workspace;
  r.started_at = r.finished_at = fmt::format("2026-12-01T10:{:02d}:00.000Z", minute);
  r.metrics = {{"request_throughput", throughput}, {"ttft.median_ms", 1000 / throughput}};
  r.metadata = {{"engine", "vllm"}, {"model", "tiny-llama"}, {"workload", "CONC2_ISL32_OSL8"},
                {"host_class", "ci-h100"}};
  return r;
}

// Commits c0..c10, two repeats each (the run-to-run noise), throughput down 10% from c6 on;
// every run has a workspace, the runs of even commits a report in it.
struct Fixture {
  fs::path root = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  store::ResultsStore db = store::ResultsStore::open(root / "results.db");
  Fixture() {
    for (int c = 0; c < 11; ++c)
      for (int rep = 0; rep < 2; ++rep) {
        auto ws = root / "results" / fmt::format("benchmark_c{}_{}", c, rep);
        fs::create_directories(ws);
        if (c % 2 == 0) write_file_atomic(ws / "benchmark_report.html", "<html></html>");
        db.insert_finished(bench_run(fmt::format("c{}", c), c * 2 + rep,
                                     (c >= 6 ? 90.0 : 100.0) + (rep ? 0.5 : -0.5),
                                     store::normalize_workspace(ws)));
      }
  }
};

TEST(ResultsSitePages, SeriesPageChartsPointsBandsChangesAndLinks) {
  Fixture f;
  auto overviews = store::series_overviews(f.db);
  ASSERT_EQ(overviews.size(), 1u);
  const auto& o = overviews[0];
  ASSERT_EQ(o.histories.size(), 2u);  // the benchmark's default metrics it has
  EXPECT_EQ(o.histories[0].metric, "request_throughput");
  ASSERT_EQ(o.histories[0].changes.size(), 1u);
  EXPECT_EQ(o.histories[0].changes[0].index, 6u);

  std::map<std::string, std::string> links;
  for (const auto& p : o.histories[0].points)
    if (p.commit == "c6") links[p.workspaces[1]] = "../../results/benchmark_c6_1/benchmark_report.html";
  Page page = results_series_page(o, links);
  EXPECT_EQ(page.kind, "results_series");
  ASSERT_EQ(page.sections.size(), 3u);  // two metrics, then the points
  const auto& chart = page.sections[0].charts.at(0).config;
  const auto& datasets = chart["data"]["datasets"];
  // CI band (low, high filled to it), the values, and one regression marker (no improvement).
  ASSERT_EQ(datasets.size(), 4u) << datasets.dump();
  EXPECT_EQ(datasets[1]["fill"], "-1");
  EXPECT_EQ(datasets[2]["label"], "value");
  EXPECT_EQ(datasets[2]["data"].size(), 11u);
  EXPECT_EQ(datasets[0]["data"].size(), 11u);  // every point has two runs: a CI each
  EXPECT_EQ(datasets[3]["label"], "regression");
  ASSERT_EQ(datasets[3]["data"].size(), 1u);
  EXPECT_EQ(datasets[3]["data"][0]["x"], 6.0);
  // The point of c6 links to the report of its second run; the others have none here.
  EXPECT_EQ(datasets[2]["data"][6]["href"], "../../results/benchmark_c6_1/benchmark_report.html");
  EXPECT_FALSE(datasets[2]["data"][5].contains("href"));
  EXPECT_NE(datasets[2]["data"][6]["label"].get<std::string>().find("c6"), std::string::npos);
  // The changes table (kind, commit, ..., the commit's report) under the chart.
  ASSERT_EQ(page.sections[0].tables.size(), 1u);
  EXPECT_EQ(page.sections[0].tables[0].rows.at(0).at(0), "regression");
  // The points table, newest first, with the report link where there is one.
  const auto& points = page.sections[2].tables.at(0);
  ASSERT_EQ(points.rows.size(), 11u);
  EXPECT_EQ(points.rows[4][1], "c6");
  EXPECT_EQ(points.rows[4][6], "report");
  EXPECT_EQ(points.links[4][6], "../../results/benchmark_c6_1/benchmark_report.html");
  EXPECT_EQ(points.rows[3][6], "");

  // --since after the step: the points before it are not drawn, the change no longer shown.
  Page later = results_series_page(o, links, "2026-12-01T10:14");
  EXPECT_EQ(later.sections[0].charts[0].config["data"]["datasets"][2]["data"].size(), 4u);
  EXPECT_TRUE(later.sections[0].tables.empty());
  EXPECT_EQ(later.sections[2].tables[0].rows.size(), 4u);

  // The rendered page carries the link as an anchor, escaped.
  const std::string html = render_page(page);
  EXPECT_NE(html.find("<a href=\"../../results/benchmark_c6_1/benchmark_report.html\">report</a>"),
            std::string::npos);
}

TEST(ResultsSitePages, IndexListsEachSeriesWithItsLatestChangeAndLinksItsPage) {
  Fixture f;
  auto other = bench_run("c10", 40, 50, "");
  other.metadata["host_class"] = "ci-a100";
  f.db.insert_finished(other);
  auto overviews = store::series_overviews(f.db);
  ASSERT_EQ(overviews.size(), 2u);
  Page page = results_site_index_page(overviews, "results.db");
  EXPECT_EQ(page.kind, "results_site");
  const auto& t = page.sections.at(0).tables.at(0);
  ASSERT_EQ(t.rows.size(), 2u);
  // Most recently run first: the a100 series (one run, no change), then the one with the step.
  EXPECT_EQ(t.links[0][0], "series/" + overviews[0].series.id + ".html");
  EXPECT_EQ(t.rows[0][1], "no change");
  EXPECT_EQ(t.rows[1][5], "11");  // points
  EXPECT_EQ(t.rows[1][3], "request_throughput");
  EXPECT_EQ(t.rows[1][1], "REGRESSION");
  // The headline metric's change (ttft changed at the same commit).
  EXPECT_NE(t.rows[1][2].find("request_throughput -10."), std::string::npos) << t.rows[1][2];
  EXPECT_NE(t.rows[1][2].find("at c6"), std::string::npos) << t.rows[1][2];
  // A change before --since is not the verdict.
  EXPECT_EQ(results_site_index_page(overviews, "results.db", "2026-12-01T10:14").sections[0]
                .tables[0].rows[1][1],
            "no change");
}

TEST(ResultsSiteJob, WritesTheSiteLinksReportsRelativelyAndReplacesOnlyItsOwnFolder) {
  Fixture f;
  jobs::ResultsSiteRequest request{f.root / "results.db", f.root / "site" / "perf", ""};
  auto outcome = jobs::build_results_site(request);
  EXPECT_EQ(outcome.series, 1u);
  EXPECT_EQ(outcome.runs, 22u);
  EXPECT_EQ(outcome.linked_points, 6u);  // c0, c2, ..., c10
  ASSERT_TRUE(fs::is_regular_file(outcome.index));
  auto id = store::series_overviews(f.db)[0].series.id;
  const fs::path page = f.root / "site" / "perf" / "series" / (id + ".html");
  ASSERT_TRUE(fs::is_regular_file(page));
  const std::string html = text_of(page);
  // Relative to the series page, and the file is there.
  const std::string link = "../../../results/benchmark_c4_0/benchmark_report.html";
  EXPECT_NE(html.find(link), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(page.parent_path() / link));
  EXPECT_EQ(html.find("benchmark_c5_0/benchmark_report.html"), std::string::npos);

  // A rebuild replaces the earlier site (a file left in it is gone) and leaves no staging folder.
  write_file_atomic(f.root / "site" / "perf" / "stale.html", "old");
  jobs::build_results_site(request);
  EXPECT_FALSE(fs::exists(f.root / "site" / "perf" / "stale.html"));
  EXPECT_EQ(std::distance(fs::directory_iterator(f.root / "site"), fs::directory_iterator()), 1);

  // A folder of other files is never replaced.
  fs::create_directories(f.root / "mine");
  write_file_atomic(f.root / "mine" / "notes.txt", "keep me");
  request.output_dir = f.root / "mine";
  try {
    jobs::build_results_site(request);
    FAIL() << "a foreign folder was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("not a site"), std::string::npos) << e.what();
  }
  EXPECT_EQ(text_of(f.root / "mine" / "notes.txt"), "keep me");
  EXPECT_FALSE(fs::exists(f.root / "mine" / "index.html"));
}

}  // namespace
}  // namespace magpie::html
