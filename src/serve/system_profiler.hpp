#pragma once
// `--system-profiler` / profiler.system_profiler: the launched engine runs
// under Nsight Systems (`nsys profile`, NVIDIA) or `rocprofv3 --sys-trace`
// (AMD). The capture lands in <workspace>/system_profile/ and its per-kernel
// summary goes into the report (docs/SYSTEM_PROFILER.md). The tool is found
// before anything starts; a missing one is Error(kNotFound), exit 3.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::serve {

enum class SystemProfilerTool { kNsys, kRocprofv3 };
const char* to_string(SystemProfilerTool tool);  // "nsys" | "rocprofv3"

struct SystemProfilerPlan {
  SystemProfilerTool tool = SystemProfilerTool::kNsys;
  std::string executable;                 // absolute path of nsys / rocprofv3
  std::vector<std::string> profile_args;  // the user's, after ours (so theirs win)
  std::string session;                    // nsys: the session `nsys stop` ends
  std::filesystem::path output_dir;       // <workspace>/system_profile
  std::filesystem::path capture() const;  // engine.nsys-rep, or the rocprofv3 directory
};

// Which tool, and where it is: `gpu_arch` (sm_* / gfx*) decides when given,
// else the first of nsys, rocprofv3 found by `find` (PATH lookup in use).
// Throws Error(kNotFound) naming what was looked for and how to install it.
SystemProfilerPlan resolve_system_profiler(
    const std::string& gpu_arch, const std::vector<std::string>& profile_args,
    const std::function<std::string(const std::string&)>& find);

// The engine's argv wrapped in the profiler's (pure).
std::vector<std::string> system_profiler_argv(const SystemProfilerPlan& plan,
                                              const std::vector<std::string>& engine_argv);
// nsys: ends the collection and writes the .nsys-rep while the engine still runs.
std::vector<std::string> nsys_stop_argv(const SystemProfilerPlan& plan);
// nsys: the per-kernel summary of the capture as CSV on stdout.
std::vector<std::string> nsys_kernel_summary_argv(const SystemProfilerPlan& plan);

// One row of `nsys stats --report cuda_gpu_kern_sum` (times in ns).
struct SystemKernelRow {
  std::string name;
  double percent = 0;
  double total_ns = 0;
  int64_t instances = 0;
  std::optional<double> avg_ns, med_ns, min_ns, max_ns, stddev_ns;
};

// Parses the report's CSV: whatever nsys prints before the header
// ("Generating SQLite file ...", "Processing [...]") is skipped, columns are
// found by name, numbers may carry thousands separators. No header: an empty
// list when the text says there was nothing to report ("does not contain CUDA
// kernel data"), else Error(kBadFormat) naming `origin`.
std::vector<SystemKernelRow> parse_nsys_kernel_summary(std::string_view text,
                                                       const std::string& origin);

// rocprofv3 kernel dispatches (its kernel_trace.csv) summed per kernel name,
// in the same rows, largest total first.
std::vector<SystemKernelRow> summarize_rocprof_kernel_trace(std::string_view csv,
                                                            const std::string& origin);

// The report's `system_profiler` block.
struct SystemProfileBlock {
  std::string tool;
  std::string command;                  // the wrapper's part of the launch line
  std::filesystem::path capture;        // .nsys-rep or rocprofv3 output directory
  std::filesystem::path kernel_csv;     // the summary as written to the workspace
  std::vector<SystemKernelRow> kernels;  // largest total first
  std::vector<std::string> errors;
};

// After the last case: ends the capture (nsys stop, while the engine runs;
// rocprofv3 writes when the engine exits, so call it after shutdown) and
// reads its kernel summary. Never throws: failures are in `errors`.
SystemProfileBlock finish_system_profile(const SystemProfilerPlan& plan, bool engine_running);

}  // namespace magpie::serve
