// `magpie results site` (jobs/results_jobs.hpp): read the store once, find
// each run's report on disk, render the pages (html/), swap the folder in.
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "html/html_reports.hpp"
#include "jobs/results_jobs.hpp"
#include "store/series.hpp"

namespace magpie::jobs {

namespace fs = std::filesystem;

namespace {

// Marks a folder as a site made here, so a rebuild may replace it (and nothing else).
constexpr const char* kSiteMarker = ".magpie-results-site";

// The HTML report a workspace holds, by the names the --html writers give (docs/HTML_REPORTS.md).
std::optional<fs::path> report_of(const std::string& workspace) {
  if (workspace.empty()) return std::nullopt;
  static const char* names[] = {"benchmark_report.html", "analyze_report.html",
                                "compare_report.html", "gap_analysis.html",
                                "tracelens_report.html", "gap_analysis/gap_analysis.html"};
  std::error_code ec;
  for (const char* name : names) {
    fs::path p = fs::path(workspace) / name;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

// A relative path as a URL path: unreserved characters and '/' kept, the rest %XX.
std::string url_path(const fs::path& relative) {
  std::string out;
  for (unsigned char c : relative.generic_string()) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

void check_output_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::kUsage, "the site's output is a file, not a folder", dir.string(),
                std::nullopt, "give -o a new folder, or one an earlier `results site` made");
  if (fs::exists(dir / kSiteMarker, ec) || fs::is_empty(dir, ec)) return;
  throw Error(ErrorKind::kUsage,
              "the folder holds files and is not a site made by `magpie results site`; it is "
              "left as it is",
              dir.string(), std::nullopt,
              "give -o a new folder, or one an earlier `results site` made (it is replaced)");
}

}  // namespace

ResultsSiteOutcome build_results_site(const ResultsSiteRequest& request) {
  if (request.output_dir.empty())
    throw Error(ErrorKind::kUsage, "no output folder for the site", "", std::nullopt,
                "pass -o DIR");
  const fs::path dir = fs::absolute(request.output_dir).lexically_normal();
  const fs::path final_dir = dir.has_filename() ? dir : dir.parent_path();
  check_output_dir(final_dir);
  const std::string since = store::resolve_since(request.since);
  auto db = store::ResultsStore::open(request.store.empty() ? store::ResultsStore::default_path()
                                                           : request.store);
  const auto overviews = store::series_overviews(db, since);

  // Each run's report, relative to the series pages (final_dir/series/).
  std::error_code ec;
  const fs::path pages_dir = fs::weakly_canonical(final_dir, ec) / "series";
  std::map<std::string, std::string> links;
  ResultsSiteOutcome outcome;
  outcome.series = overviews.size();
  for (const auto& o : overviews) {
    outcome.runs += o.series.runs;
    for (const auto& h : o.histories)
      for (const auto& p : h.points)
        for (const auto& w : p.workspaces) {
          if (links.count(w)) continue;
          auto report = report_of(w);
          if (!report) continue;
          links[w] = url_path(fs::weakly_canonical(*report, ec).lexically_relative(pages_dir));
        }
  }

  // Build beside the destination, then swap it in.
  fs::create_directories(final_dir.parent_path());
  const fs::path staging =
      final_dir.parent_path() / fmt::format(".{}.tmp-{}", final_dir.filename().string(), getpid());
  fs::remove_all(staging, ec);
  try {
    fs::create_directories(staging / "series");
    write_file_atomic(staging / kSiteMarker, "made by magpie results site\n");
    write_file_atomic(staging / "index.html",
                      html::render_page(html::results_site_index_page(
                          overviews, db.path().string(), since)));
    for (const auto& o : overviews) {
      write_file_atomic(staging / html::results_series_page_path(o.series.id),
                        html::render_page(html::results_series_page(o, links, since)));
      if (o.histories.empty()) continue;
      for (const auto& p : o.histories.front().points)
        for (const auto& w : p.workspaces)
          if (links.count(w)) {
            ++outcome.linked_points;
            break;
          }
    }
    const fs::path old =
        final_dir.parent_path() / fmt::format(".{}.old-{}", final_dir.filename().string(), getpid());
    const bool had_old = fs::exists(final_dir, ec);
    if (had_old) fs::rename(final_dir, old);
    try {
      fs::rename(staging, final_dir);
    } catch (...) {
      if (had_old) fs::rename(old, final_dir, ec);  // the earlier site back in place
      throw;
    }
    if (had_old) fs::remove_all(old, ec);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, ec);
    throw Error(ErrorKind::kUnreadable, fmt::format("cannot write the site: {}", e.what()),
                final_dir.string(), std::nullopt, "check the folder's permissions and free space");
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  outcome.index = final_dir / "index.html";
  return outcome;
}

}  // namespace magpie::jobs
