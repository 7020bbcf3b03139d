#include "mcp/tools.hpp"

#include "analysis/gpu_arch.hpp"
#include "core/error.hpp"
#include "gpu/amd_smi.hpp"
#include "gpu/datasheet.hpp"
#include "gpu/datasheet_json.hpp"
#include "gpu/gpu_info_report.hpp"
#include "gpu/nvml.hpp"
#include "kernel/gpu_settings.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"

namespace magpie::mcp {

using nlohmann::json;
namespace s = schema;

namespace detail {

namespace {

// One datasheet entry: the roofline's per-device figures (what analyses use)
// and, under "spec", every figure with the vendor document it comes from.
json datasheet_json(const gpu::GpuSpec& spec) {
  const auto a = *analysis::find_gpu_arch(spec.name, analysis::builtin_gpu_archs());
  return {{"name", a.name},
          {"vendor", a.vendor},
          {"compute_capability",
           std::to_string(a.compute_major) + "." + std::to_string(a.compute_minor)},
          {"sm_count", a.sm_count},
          {"memory_gb", a.mem_gb},
          {"memory_bandwidth_tbps", a.mem_bw_tbps},
          {"matrix_tflops", a.matrix_tflops},
          {"vector_tflops", a.vector_tflops},
          {"aliases", a.aliases},
          {"spec", gpu::spec_json(spec)}};
}

}  // namespace

Tool hardware_spec_tool() {
  json datasheet = s::object({{"name", s::string("")}, {"vendor", s::string("")}},
                             {"name", "vendor", "memory_bandwidth_tbps", "matrix_tflops"});
  Tool t;
  t.name = "hardware_spec";
  t.title = "GPU hardware specification";
  t.description =
      "The local GPU (vendor, name, architecture) with its datasheet peaks (memory bandwidth, "
      "dense matrix/vector TFLOP/s per precision). On a machine without a GPU, gpu_detected is "
      "false and message says so. include_all adds Magpie's whole datasheet table.";
  t.input_schema = s::input(
      {{"device_id", s::with_default(s::integer("GPU index (nvidia-smi order)", 0), 0)},
       {"include_all",
        s::with_default(s::boolean("Also return every GPU in Magpie's datasheet table"), false)}});
  t.output_schema =
      s::object({{"device_id", s::integer("")},
                 {"gpu_detected", s::boolean("false on a machine without a GPU")},
                 {"message", s::string("why no GPU was found")},
                 {"device", s::object({{"vendor", s::string("")},
                                       {"name", s::string("")},
                                       {"arch", s::string("sm_90, gfx942, ...")},
                                       {"peak_memory_bandwidth_tbps", s::number("")},
                                       {"peak_bf16_tflops", s::number("")},
                                       {"datasheet", datasheet}},
                                      {"vendor", "name", "arch"})},
                 {"datasheets", s::array(datasheet, "include_all: Magpie's datasheet table")}},
                {"device_id", "gpu_detected"});
  t.handler = [](const ToolCall& call) {
    int64_t device_id = arg<int64_t>(call, "device_id", 0);
    json out = {{"device_id", device_id}};
    gpu::SystemStatus sys = gpu::query_nvml();
    if (sys.devices.empty()) {
      gpu::SystemStatus amd = gpu::query_amd_gpus();
      amd.notes.insert(amd.notes.begin(), sys.notes.begin(), sys.notes.end());
      sys = std::move(amd);
    }
    if (!sys.devices.empty()) {
      const gpu::DeviceStatus* d = nullptr;
      for (const auto& dev : sys.devices)
        if (dev.index == device_id) d = &dev;
      if (!d)
        throw Error(ErrorKind::kUsage, "device_id " + std::to_string(device_id) +
                                           " does not exist: this machine has " +
                                           std::to_string(sys.devices.size()) + " GPU(s), 0.." +
                                           std::to_string(sys.devices.size() - 1));
      json device = {{"vendor", sys.vendor},
                     {"name", d->name},
                     {"arch", gpu::architecture_of(*d)},
                     {"uuid", d->uuid},
                     {"memory_total_gib", static_cast<double>(d->memory_total) / (1ull << 30)},
                     {"sm_count", d->sm_count},
                     {"max_sm_clock_mhz", d->max_sm_clock_mhz},
                     {"max_mem_clock_mhz", d->max_mem_clock_mhz},
                     {"power_limit_w", d->power_limit_w},
                     {"driver_version", sys.driver_version},
                     {"cuda_version", sys.cuda_version}};
      // Datasheet figures, or for a GPU the datasheet lacks the driver's bandwidth.
      const json sheet = gpu::device_datasheet_json(*d);
      device["datasheet_match"] = sheet["match"];
      device["figures_from"] = sheet["figures_from"];
      if (sheet["memory_bandwidth_tbps"].is_number())
        device["peak_memory_bandwidth_tbps"] = sheet["memory_bandwidth_tbps"];
      if (sheet["peak_bf16_tflops"].is_number())
        device["peak_bf16_tflops"] = sheet["peak_bf16_tflops"];
      if (!sheet["entry"].is_null()) {
        if (const auto* spec = gpu::find_spec(sheet["entry"]["name"].get<std::string>()))
          device["datasheet"] = datasheet_json(*spec);
      }
      out["gpu_detected"] = true;
      out["device"] = std::move(device);
    } else {
      std::string why;
      for (const auto& n : sys.notes) why += (why.empty() ? "" : "; ") + n;
      out["gpu_detected"] = false;
      out["message"] = "no GPU detected: NVML reports no NVIDIA device and amd-smi/rocminfo no AMD one" +
                       (why.empty() ? std::string() : " (" + why + ")");
    }
    if (arg<bool>(call, "include_all", false)) {
      json all = json::array();
      for (const auto& spec : gpu::datasheet()) all.push_back(datasheet_json(spec));
      out["datasheets"] = std::move(all);
    }
    return ToolOutput{out, {}};
  };
  return t;
}

Tool configure_gpu_tool() {
  Tool t;
  t.name = "configure_gpu";
  t.title = "Set GPU power limit and clocks";
  // Changes machine state other work depends on.
  t.annotations = {{"readOnlyHint", false},
                   {"destructiveHint", true},
                   {"idempotentHint", true},
                   {"openWorldHint", false}};
  t.description =
      "Sets the power limit and locks graphics/memory clocks on NVIDIA GPUs through nvidia-smi "
      "(needs root), or resets them. All or nothing: if one change fails, the ones already made "
      "are undone. On a machine without an NVIDIA GPU it fails saying so.";
  t.input_schema = s::input(
      {{"device_ids", s::array(s::integer("", 0), "GPU indices (default: all)")},
       {"power_limit_watts", s::number("Power limit in watts", 1)},
       {"gpu_clock_mhz", s::integer("Lock graphics clocks to this frequency", 1)},
       {"mem_clock_mhz", s::integer("Lock memory clocks to this frequency", 1)},
       {"reset",
        s::with_default(s::boolean("Unlock clocks and restore the default power limit"), false)}});
  json step = s::object({{"device", s::integer("")},
                         {"setting", s::string("")},
                         {"command", s::string("")},
                         {"ok", s::boolean("")},
                         {"output", s::string("")},
                         {"rolled_back", s::boolean("")}},
                        {"device", "setting", "ok"});
  t.output_schema =
      s::object({{"applied", s::boolean("every change was made")},
                 {"rolled_back", s::boolean("a change failed and earlier ones were undone")},
                 {"devices", s::array(s::integer(""), "")},
                 {"steps", s::array(step, "")},
                 {"error", s::string("")}},
                {"applied", "rolled_back", "steps"});
  t.handler = [](const ToolCall& call) {
    kernel::GpuSettingsRequest req;
    req.device_ids = arg<std::vector<int>>(call, "device_ids", {});
    if (has_arg(call, "power_limit_watts"))
      req.power_limit_watts = arg<double>(call, "power_limit_watts", 0);
    if (has_arg(call, "gpu_clock_mhz")) req.gpu_clock_mhz = arg<int>(call, "gpu_clock_mhz", 0);
    if (has_arg(call, "mem_clock_mhz")) req.mem_clock_mhz = arg<int>(call, "mem_clock_mhz", 0);
    req.reset = arg<bool>(call, "reset", false);
    kernel::GpuSettingsOutcome o = kernel::configure_gpus(req);
    json steps = json::array();
    for (const auto& st : o.steps)
      steps.push_back({{"device", st.device},
                       {"setting", st.setting},
                       {"command", st.command},
                       {"ok", st.ok},
                       {"output", st.output},
                       {"rolled_back", st.rolled_back}});
    json out = {{"applied", o.applied},
                {"rolled_back", o.rolled_back},
                {"devices", o.devices},
                {"steps", std::move(steps)}};
    if (!o.error.empty()) out["error"] = o.error;
    // A refused change is the call failing: say so as an error the agent sees.
    if (!o.applied)
      throw Error(ErrorKind::kUsage,
                  o.error + (o.rolled_back ? "; earlier changes were undone" : ""));
    return ToolOutput{out, {}};
  };
  return t;
}

}  // namespace detail

namespace {

// Reads and reports only: safe to call any time.
Tool read_only(Tool t) {
  t.annotations = {{"readOnlyHint", true}, {"openWorldHint", false}};
  return t;
}
// Runs builds, testcases, engines or writes reports: not read-only, but
// adds files rather than destroying anything.
Tool runs_work(Tool t, bool open_world = false) {
  t.annotations = {
      {"readOnlyHint", false}, {"destructiveHint", false}, {"openWorldHint", open_world}};
  return t;
}

}  // namespace

ToolRegistry magpie_tools() {
  using namespace detail;
  ToolRegistry r;
  r.add(read_only(hardware_spec_tool()));
  r.add(runs_work(analyze_tool()));
  r.add(runs_work(compare_tool()));
  r.add(configure_gpu_tool());
  r.add(read_only(discover_kernels_tool()));
  r.add(read_only(suggest_optimizations_tool()));
  r.add(runs_work(create_kernel_config_tool()));
  r.add(runs_work(benchmark_tool(), /*open_world=*/true));
  r.add(runs_work(gap_analysis_tool()));
  r.add(runs_work(tracelens_tool()));
  r.add(runs_work(trace_diff_tool()));
  r.add(runs_work(whatif_tool()));
  r.add(read_only(list_benchmark_images_tool()));
  r.add(runs_work(list_benchmark_results_tool()));
  r.add(read_only(get_benchmark_result_tool()));
  r.add(runs_work(compare_benchmark_reports_tool()));
  r.add(read_only(list_result_series_tool()));
  r.add(read_only(get_series_history_tool()));
  r.add(read_only(check_result_series_tool()));
  // The Ray tools talk to a cluster: their annotations are set in tools_ray.cpp.
  r.add(ray_task_status_tool());
  r.add(ray_task_result_tool());
  r.add(ray_task_cancel_tool());
  r.add(ray_task_list_tool());
  r.add(benchmark_batch_tool());
  return r;
}

}  // namespace magpie::mcp
