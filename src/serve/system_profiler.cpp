#include "serve/system_profiler.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>

#include "core/child_process.hpp"
#include "core/csv_line.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "profiler/rocprof_kernel_trace.hpp"
#include "serve/docker_command.hpp"

namespace magpie::serve {

namespace fs = std::filesystem;

const char* to_string(SystemProfilerTool tool) {
  return tool == SystemProfilerTool::kNsys ? "nsys" : "rocprofv3";
}

fs::path SystemProfilerPlan::capture() const {
  return tool == SystemProfilerTool::kNsys ? output_dir / "engine.nsys-rep" : output_dir;
}

SystemProfilerPlan resolve_system_profiler(
    const std::string& gpu_arch, const std::vector<std::string>& profile_args,
    const std::function<std::string(const std::string&)>& find) {
  SystemProfilerPlan plan;
  plan.profile_args = profile_args;
  plan.session = fmt::format("magpie-{}", ::getpid());
  const auto vendor = gpu_arch.empty() ? GpuVendor::kNone : vendor_for_arch(gpu_arch);
  std::vector<SystemProfilerTool> wanted;
  if (vendor == GpuVendor::kNvidia)
    wanted = {SystemProfilerTool::kNsys};
  else if (vendor == GpuVendor::kAmd)
    wanted = {SystemProfilerTool::kRocprofv3};
  else
    wanted = {SystemProfilerTool::kNsys, SystemProfilerTool::kRocprofv3};
  for (auto tool : wanted) {
    std::string path = find(to_string(tool));
    if (path.empty()) continue;
    plan.tool = tool;
    plan.executable = path;
    return plan;
  }
  std::string looked = wanted.size() == 1 ? std::string(to_string(wanted.front()))
                                          : "nsys or rocprofv3";
  throw Error(ErrorKind::kNotFound,
              fmt::format("system_profiler: {} is not on PATH{}; nothing was started", looked,
                          gpu_arch.empty() ? "" : fmt::format(" (gpu_arch {})", gpu_arch)),
              "", std::nullopt,
              "install Nsight Systems (NVIDIA; `nsys` on PATH) or ROCm's rocprofv3 (AMD), or run "
              "without --system-profiler / profiler.system_profiler.enabled");
}

std::vector<std::string> system_profiler_argv(const SystemProfilerPlan& plan,
                                              const std::vector<std::string>& engine_argv) {
  std::vector<std::string> argv{plan.executable};
  if (plan.tool == SystemProfilerTool::kNsys) {
    // Engines fork their GPU workers (vLLM's EngineCore): follow them.
    // A named session lets `nsys stop` end the capture while the engine runs.
    argv.insert(argv.end(), {"profile", "--trace=cuda,nvtx,osrt", "--sample=none",
                             "--cpuctxsw=none", "--trace-fork-before-exec=true",
                             "--force-overwrite=true", "--session-new=" + plan.session,
                             "--output=" + (plan.output_dir / "engine").string()});
  } else {
    argv.insert(argv.end(), {"--sys-trace", "--output-format", "csv", "-d",
                             plan.output_dir.string(), "-o", "engine"});
  }
  argv.insert(argv.end(), plan.profile_args.begin(), plan.profile_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), engine_argv.begin(), engine_argv.end());
  return argv;
}

std::vector<std::string> nsys_stop_argv(const SystemProfilerPlan& plan) {
  return {plan.executable, "stop", "--session=" + plan.session};
}

std::vector<std::string> nsys_kernel_summary_argv(const SystemProfilerPlan& plan) {
  return {plan.executable, "stats",      "--report",       "cuda_gpu_kern_sum",
          "--format",      "csv",        "--force-export=true", plan.capture().string()};
}

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  return s;
}

// "5,850,000" or "3105805.8": thousands separators are dropped.
std::optional<double> number(const std::string& cell) {
  std::string digits;
  for (char ch : cell)
    if (ch != ',' && ch != ' ') digits.push_back(ch);
  if (digits.empty()) return std::nullopt;
  try {
    size_t used = 0;
    double v = std::stod(digits, &used);
    if (used != digits.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<SystemKernelRow> parse_nsys_kernel_summary(std::string_view text,
                                                       const std::string& origin) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(trimmed(std::string(text.substr(pos, end - pos))));
    pos = end + 1;
  }
  size_t header = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("Total Time") != std::string::npos &&
        lines[i].find("Name") != std::string::npos) {
      header = i;
      break;
    }
  if (header == lines.size()) {
    // nsys says so in words when the capture has no kernels.
    for (const auto& l : lines)
      if (l.find("does not contain") != std::string::npos) return {};
    throw Error(ErrorKind::kBadFormat,
                "no cuda_gpu_kern_sum header (a line with \"Total Time\" and \"Name\") in the "
                "nsys stats output",
                origin, std::nullopt, "run the `nsys stats` command in the report by hand to see why");
  }
  const auto columns = split_csv_line(lines[header]);
  auto column = [&](std::string_view prefix) -> std::optional<size_t> {
    for (size_t i = 0; i < columns.size(); ++i)
      if (trimmed(columns[i]).rfind(prefix, 0) == 0) return i;
    return std::nullopt;
  };
  const auto name = column("Name"), total = column("Total Time"), percent = column("Time (%)"),
             instances = column("Instances"), avg = column("Avg"), med = column("Med"),
             min = column("Min"), max = column("Max"), stddev = column("StdDev");
  if (!name || !total || !instances)
    throw Error(ErrorKind::kBadFormat,
                fmt::format("cuda_gpu_kern_sum header lacks Name, Total Time or Instances: {}",
                            lines[header]),
                origin, std::nullopt);
  std::vector<SystemKernelRow> rows;
  for (size_t i = header + 1; i < lines.size(); ++i) {
    if (lines[i].empty()) break;  // the table ends at the first blank line
    const auto cells = split_csv_line(lines[i]);
    auto cell = [&](std::optional<size_t> c) -> std::optional<double> {
      if (!c || *c >= cells.size()) return std::nullopt;
      return number(cells[*c]);
    };
    if (*name >= cells.size() || !cell(total) || !cell(instances))
      throw Error(ErrorKind::kBadFormat,
                  fmt::format("line {} of the kernel summary is not a kernel row: {}", i + 1,
                              lines[i]),
                  origin, std::nullopt);
    SystemKernelRow r;
    r.name = cells[*name];
    r.total_ns = *cell(total);
    r.instances = static_cast<int64_t>(*cell(instances));
    r.percent = cell(percent).value_or(0);
    r.avg_ns = cell(avg);
    r.med_ns = cell(med);
    r.min_ns = cell(min);
    r.max_ns = cell(max);
    r.stddev_ns = cell(stddev);
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.total_ns > b.total_ns;
  });
  return rows;
}

std::vector<SystemKernelRow> summarize_rocprof_kernel_trace(std::string_view csv,
                                                            const std::string& origin) {
  const auto records = profiler::parse_rocprof_kernel_trace(csv, origin);
  std::map<std::string, std::vector<double>> by_name;
  double all = 0;
  for (const auto& r : records) {
    by_name[r.name].push_back(static_cast<double>(r.duration_ns()));
    all += static_cast<double>(r.duration_ns());
  }
  std::vector<SystemKernelRow> rows;
  for (auto& [kernel, durations] : by_name) {
    SystemKernelRow row;
    row.name = kernel;
    for (double d : durations) row.total_ns += d;
    row.instances = static_cast<int64_t>(durations.size());
    row.percent = all > 0 ? 100.0 * row.total_ns / all : 0;
    row.avg_ns = row.total_ns / static_cast<double>(durations.size());
    row.min_ns = *std::min_element(durations.begin(), durations.end());
    row.max_ns = *std::max_element(durations.begin(), durations.end());
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.total_ns > b.total_ns;
  });
  return rows;
}

SystemProfileBlock finish_system_profile(const SystemProfilerPlan& plan, bool engine_running) {
  SystemProfileBlock block;
  block.tool = to_string(plan.tool);
  block.command = shell_join(system_profiler_argv(plan, {}));
  block.capture = plan.capture();
  const fs::path log = plan.output_dir / "profiler.log";
  auto run = [&](std::vector<std::string> argv, int timeout_s) {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.timeout = std::chrono::seconds(timeout_s);
    spec.log_path = log;
    spec.capture_output = true;
    return run_process(spec);
  };
  try {
    if (plan.tool == SystemProfilerTool::kNsys) {
      if (engine_running) {
        // Writing the report can take minutes for a long capture.
        auto stop = run(nsys_stop_argv(plan), 900);
        if (!stop.ok())
          block.errors.push_back(fmt::format("system_profiler: `nsys stop` failed ({}): {}",
                                             stop.describe(), log_tail(log, 600)));
      }
      // The report may still be being written when `nsys stop` returns: wait
      // (bounded) until it exists and its size holds still.
      uintmax_t last_size = 0;
      for (int i = 0; i < 300; ++i) {
        std::error_code ec;
        const auto size = fs::file_size(block.capture, ec);
        if (!ec && size > 0 && size == last_size) break;
        if (ec && i >= 30) break;  // not there after 30 s: it will not come
        last_size = ec ? 0 : size;
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      if (!fs::exists(block.capture)) {
        block.errors.push_back(fmt::format("system_profiler: no capture at {}{}",
                                           block.capture.string(),
                                           engine_running ? "" : " (the engine had exited)"));
        return block;
      }
      auto stats = run(nsys_kernel_summary_argv(plan), 900);
      if (!stats.ok()) {
        block.errors.push_back(fmt::format("system_profiler: `nsys stats` failed ({}): {}",
                                           stats.describe(), log_tail(log, 600)));
        return block;
      }
      block.kernel_csv = plan.output_dir / "cuda_gpu_kern_sum.csv";
      write_file_atomic(block.kernel_csv, stats.output);
      block.kernels = parse_nsys_kernel_summary(stats.output, block.kernel_csv.string());
    } else {
      if (fs::is_directory(plan.output_dir))
        for (const auto& e : fs::recursive_directory_iterator(plan.output_dir))
          if (e.is_regular_file() && e.path().filename().string().ends_with("kernel_trace.csv")) {
            block.kernel_csv = e.path();
            block.kernels = summarize_rocprof_kernel_trace(
                std::string(read_file(e.path()).view()), e.path().string());
            break;  // one engine process writes one trace
          }
      if (block.kernel_csv.empty())
        block.errors.push_back(fmt::format("system_profiler: rocprofv3 wrote no kernel_trace.csv "
                                           "under {}",
                                           plan.output_dir.string()));
    }
  } catch (const std::exception& e) {
    block.errors.push_back(std::string("system_profiler: ") + e.what());
  }
  return block;
}

}  // namespace magpie::serve
