#include "serve/profiling.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "analysis/gap_analysis_report.hpp"
#include "analysis/gap_analysis_run.hpp"
#include "core/error.hpp"
#include "serve/http_client.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

namespace {

std::string post_profile(const Endpoint& ep, const char* path, const std::string& body = "") {
  // Starting/stopping the torch profiler can take a long time on big models.
  auto r = http_request(ep, "POST", ep.target(path), body, std::chrono::minutes(5));
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

bool is_trace_name(const std::string& name) { return name.find(".json") != std::string::npos; }

// Trace files under dir (recursively, capture_N folders left out), relative path -> size.
std::map<fs::path, uintmax_t> trace_files(const fs::path& dir) {
  std::map<fs::path, uintmax_t> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto name = it->path().filename().string();
    if (it.depth() == 0 && it->is_directory(ec) && name.rfind("capture_", 0) == 0) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || !is_trace_name(name)) continue;
    out[fs::relative(it->path(), dir, ec)] = it->file_size(ec);
  }
  return out;
}

// Sleeps up to `seconds`, waking early when `done` is set; true when it was.
bool sleep_unless(double seconds, const std::atomic<bool>& done) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (std::chrono::steady_clock::now() < until) {
    if (done.load()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done.load();
}

}  // namespace

std::string capture_start_body(const std::string& framework, size_t index, int64_t num_steps) {
  nlohmann::json body = nlohmann::json::object();
  if (framework == "vllm") {
    body["profile_prefix"] = fmt::format("magpie_capture_{}", index);
    if (num_steps > 0) body["max_iterations"] = num_steps;
  } else if (framework == "sglang" && num_steps > 0) {
    body["num_steps"] = num_steps;
  }
  return body.empty() ? std::string() : body.dump();
}

std::vector<ProfileCapture> run_capture_schedule(const Endpoint& endpoint, const fs::path& trace_dir,
                                                 const TorchProfilerSettings& s,
                                                 const std::string& framework,
                                                 const std::atomic<bool>& load_done,
                                                 const std::function<bool()>& server_alive) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto since = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  const double window = s.capture_timeout_seconds > 0 ? s.capture_timeout_seconds : 10.0;
  std::vector<ProfileCapture> out;
  std::set<fs::path> taken;  // files already given to an earlier capture (or there before)
  for (const auto& [rel, size] : trace_files(trace_dir)) taken.insert(rel);
  for (size_t k = 1; k <= static_cast<size_t>(s.num_profiles); ++k) {
    ProfileCapture c;
    c.label = fmt::format("capture_{}", k);
    c.dir = trace_dir / c.label;
    if (load_done.load() || !server_alive()) {
      c.missing_reason = load_done.load() ? "the measured requests ended before it started"
                                          : "the server stopped before it started";
      out.push_back(std::move(c));
      continue;
    }
    c.start_s = since();
    if (auto e = start_profile(endpoint, capture_start_body(framework, k, s.num_steps)); !e.empty()) {
      c.missing_reason = e;
      out.push_back(std::move(c));
      continue;
    }
    if (sleep_unless(window, load_done))
      c.note = fmt::format("closed after {:.1f} s: the measured requests ended", since() - c.start_s);
    c.stop_s = since();
    if (auto e = server_alive() ? stop_profile(endpoint) : "the server stopped"; !e.empty()) {
      c.missing_reason = e;
      out.push_back(std::move(c));
      continue;
    }
    // The capture's files: new since the last capture, not named for another
    // capture, and unchanged over three looks a second apart.
    const std::string own = fmt::format("magpie_capture_{}_", k);
    auto fresh = [&] {
      std::map<fs::path, uintmax_t> m;
      for (auto& [rel, size] : trace_files(trace_dir)) {
        if (taken.count(rel)) continue;
        auto name = rel.filename().string();
        if (name.rfind("magpie_capture_", 0) == 0 && name.rfind(own, 0) != 0) continue;
        m[rel] = size;
      }
      return m;
    };
    const auto deadline = clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s.flush_timeout_seconds * 1000));
    std::map<fs::path, uintmax_t> last;
    int stable = 0;
    while (clock::now() < deadline) {
      auto now = fresh();
      stable = !now.empty() && now == last ? stable + 1 : 0;
      last = std::move(now);
      if (stable >= 3) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (stable < 3) {
      c.missing_reason =
          last.empty() ? fmt::format("no trace files within flush_timeout_seconds ({:g} s)", s.flush_timeout_seconds)
                       : fmt::format("{} trace file(s) still being written after flush_timeout_seconds ({:g} s)",
                                     last.size(), s.flush_timeout_seconds);
      // Late files stay where they are and are never counted as a later capture's.
      for (const auto& [rel, size] : last) taken.insert(rel);
      out.push_back(std::move(c));
      sleep_unless(s.interval_seconds, load_done);
      continue;
    }
    std::error_code ec;
    fs::create_directories(c.dir, ec);
    for (const auto& [rel, size] : last) {
      taken.insert(rel);
      // Flattened: gap analysis reads one folder.
      fs::path to = c.dir / rel.filename();
      fs::rename(trace_dir / rel, to, ec);
      if (ec) {
        fs::copy_file(trace_dir / rel, to, fs::copy_options::overwrite_existing, ec);
        if (ec) {
          c.missing_reason = fmt::format("cannot move {} into {}: {}", (trace_dir / rel).string(),
                                         c.dir.string(), ec.message());
          break;
        }
      }
      ++c.files;
    }
    out.push_back(std::move(c));
    if (k < static_cast<size_t>(s.num_profiles)) sleep_unless(s.interval_seconds, load_done);
  }
  return out;
}

std::string start_profile(const Endpoint& endpoint, const std::string& body) {
  return post_profile(endpoint, "/start_profile", body);
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
