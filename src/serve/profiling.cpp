#include "serve/profiling.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "analysis/gap_analysis_report.hpp"
#include "analysis/gap_analysis_run.hpp"
#include "core/error.hpp"
#include "serve/http_client.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

namespace {

std::string post_profile(const Endpoint& ep, const char* path) {
  // Starting/stopping the torch profiler can take a long time on big models.
  auto r = http_request(ep, "POST", ep.target(path), "", std::chrono::minutes(5));
  if (!r.ok) return fmt::format("POST {}: {}", path, r.error);
  if (r.status != 200)
    return fmt::format(
        "POST {} answered HTTP {} (was the server launched with a profiler dir?): {:.300}", path,
        r.status, r.body);
  return {};
}

uintmax_t dir_bytes(const fs::path& dir, size_t& files) {
  uintmax_t total = 0;
  files = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    auto name = it->path().filename().string();
    if (name.find(".json") == std::string::npos) continue;
    ++files;
    total += it->file_size(ec);
  }
  return total;
}

}  // namespace

std::string start_profile(const Endpoint& endpoint) {
  return post_profile(endpoint, "/start_profile");
}
std::string stop_profile(const Endpoint& endpoint) {
  return post_profile(endpoint, "/stop_profile");
}

size_t wait_for_traces(const fs::path& dir, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  uintmax_t last = 0;
  int stable = 0;
  size_t files = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    auto bytes = dir_bytes(dir, files);
    // Three unchanged looks a second apart: the writer is done.
    stable = files > 0 && bytes == last ? stable + 1 : 0;
    if (stable >= 3) break;
    last = bytes;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return files;
}

GapOutcome run_profile_gap_analysis(const fs::path& trace_dir, const fs::path& output_dir,
                                    const GapSettings& s) {
  GapOutcome out;
  analysis::GapAnalysisRunOptions options;
  options.config.top_k = s.top_k;
  options.config.start_pct = s.start_pct;
  options.config.end_pct = s.end_pct;
  options.config.min_duration_us = s.min_duration_us;
  options.config.categories = s.categories;
  options.config.ignore_categories = s.ignore_categories;
  analysis::GapAnalysisResult result;
  try {
    result = analysis::run_gap_analysis(trace_dir, options);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNoGpuEvents) {
      out.errors.push_back(fmt::format("gap analysis: {}", e.what()));
      return out;
    }
    // A CPU-only server's trace has no kernels; its cpu_op events still show
    // where the time goes, so rank those instead of reporting nothing.
    out.notes.push_back(
        "the traces hold no GPU kernel events (CPU-only server): gap analysis ran over "
        "cpu_op events instead");
    options.config.categories = {"cpu_op"};
    try {
      result = analysis::run_gap_analysis(trace_dir, options);
    } catch (const Error& e2) {
      out.errors.push_back(fmt::format("gap analysis over cpu_op events: {}", e2.what()));
      return out;
    }
  }
  analysis::SourceSearchOptions sources;
  sources.enabled = s.find_kernel_sources;
  for (const auto& repo : s.kernel_source_repos) sources.repos.emplace_back(repo);
  if (sources.enabled && sources.repos.empty()) {
    out.notes.push_back("gap_analysis.find_kernel_sources needs gap_analysis.kernel_source_repos: no source search");
    sources.enabled = false;
  }
  std::erase_if(sources.repos, [&](const fs::path& repo) {
    if (fs::is_directory(repo)) return false;
    out.notes.push_back("gap_analysis.kernel_source_repos: " + repo.string() + " is not a directory; skipped");
    return true;
  });
  if (sources.repos.empty()) sources.enabled = false;
  GapAnalysisBlock block;
  block.files = analysis::write_gap_reports(result, output_dir, false, sources);
  block.notes = out.notes;
  for (const auto& k :
       analysis::make_rows(result.merged, result.total_duration_us, result.config.top_k)) {
    out.kernel_summary.push_back(
        {k.name, k.total_us / 1000.0, k.pct_total, static_cast<int64_t>(k.calls)});
    if (out.top_bottlenecks.size() < 10) out.top_bottlenecks.push_back(k.name);
  }
  block.result = std::move(result);
  out.block = std::move(block);
  return out;
}

analysis::TraceLensOptions tracelens_options(const TraceLensSettings& s) {
  analysis::TraceLensOptions o;
  o.mode = s.analysis_mode;
  o.stages = s.analysis_stages;
  o.num_steps = static_cast<size_t>(s.num_steps);
  o.write_csv = s.export_format != "excel";
  o.write_excel = s.export_format != "csv";
  o.gpu_arch_file = s.gpu_arch_config;
  o.perf_report = s.perf_report_enabled;
  o.collective_report = s.multi_rank_report_enabled;
  return o;
}

}  // namespace magpie::serve
