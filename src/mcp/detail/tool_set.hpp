#pragma once
// The tool definitions, one function per tool, grouped in tools_*.cpp by the
// library they map onto; tools.cpp puts them in the registry. Helpers here
// read arguments the input schema has already checked.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mcp/tool_registry.hpp"

namespace magpie::serve {
struct BenchmarkFlags;
}

namespace magpie::mcp::detail {

template <typename T>
T arg(const ToolCall& call, const char* name, T fallback) {
  auto it = call.arguments.find(name);
  if (it == call.arguments.end() || it->is_null()) return fallback;
  return it->get<T>();
}

inline bool has_arg(const ToolCall& call, const char* name) {
  auto it = call.arguments.find(name);
  return it != call.arguments.end() && !it->is_null();
}

// tools.cpp: the machine
Tool hardware_spec_tool();
Tool configure_gpu_tool();
// tools_results.cpp: the results store
Tool list_benchmark_results_tool();
Tool get_benchmark_result_tool();
Tool compare_benchmark_reports_tool();
Tool list_result_series_tool();
Tool get_series_history_tool();
Tool check_result_series_tool();
// tools_serve.cpp: serving
Tool list_benchmark_images_tool();
// tools_kernel.cpp: kernel discovery, config drafts, advice
Tool discover_kernels_tool();
Tool create_kernel_config_tool();
Tool suggest_optimizations_tool();
// tools_jobs.cpp: the long tools (src/jobs)
Tool gap_analysis_tool();
Tool tracelens_tool();
Tool trace_diff_tool();  // tools_trace_diff.cpp
Tool analyze_tool();
Tool compare_tool();
Tool benchmark_tool();
// tools_whatif.cpp: critical path and what-if (src/jobs/critical_path_jobs.hpp)
Tool whatif_tool();
// tools_ray.cpp: jobs on a Ray cluster (src/jobs/ray_jobs.hpp)
Tool ray_task_status_tool();
Tool ray_task_result_tool();
Tool ray_task_cancel_tool();
Tool ray_task_list_tool();
Tool benchmark_batch_tool();
void add_ray_benchmark_params(nlohmann::json& input_schema);  // benchmark's ray_* arguments
// benchmark's `slo`, `search`, `rate_ramp` and `concurrency_ramp` (the YAML's client keys): their
// schemas, the flags they set, and those flags on a Ray node's command line.
void add_load_shape_params(nlohmann::json& input_schema);
void load_shape_flags(const ToolCall& call, serve::BenchmarkFlags& f);
void append_load_shape_args(const serve::BenchmarkFlags& f, std::vector<std::string>& args);
bool wants_ray(const ToolCall& call);
ToolOutput ray_benchmark(const ToolCall& call);

}  // namespace magpie::mcp::detail
