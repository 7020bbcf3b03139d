#include "mcp/tools.hpp"

#include "analysis/gpu_arch.hpp"
#include "core/error.hpp"
#include "kernel/gpu_info.hpp"
#include "mcp/schema_build.hpp"
#include "serve/docker_command.hpp"
#include "serve/engine_command.hpp"

namespace magpie::mcp {

using nlohmann::json;
namespace s = schema;

namespace {

// ---- argument access (the schema already checked types) ----

template <typename T>
T arg(const ToolCall& call, const char* name, T fallback) {
  auto it = call.arguments.find(name);
  if (it == call.arguments.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// ---- hardware_spec ----

json datasheet_json(const analysis::GpuArch& a) {
  return {{"name", a.name},
          {"vendor", a.vendor},
          {"compute_capability", std::to_string(a.compute_major) + "." + std::to_string(a.compute_minor)},
          {"sm_count", a.sm_count},
          {"memory_gb", a.mem_gb},
          {"memory_bandwidth_tbps", a.mem_bw_tbps},
          {"matrix_tflops", a.matrix_tflops},
          {"vector_tflops", a.vector_tflops},
          {"aliases", a.aliases}};
}

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
      {{"device_id", s::with_default(s::integer("GPU index (detection reads the first GPU)", 0), 0)},
       {"include_all",
        s::with_default(s::boolean("Also return every GPU in Magpie's datasheet table"), false)}});
  t.output_schema = s::object(
      {{"device_id", s::integer("")},
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
    kernel::GpuInfo gpu = kernel::detect_gpu();
    const auto& table = analysis::builtin_gpu_archs();
    out["gpu_detected"] = gpu.found();
    if (gpu.found()) {
      json device = {{"vendor", gpu.vendor},
                     {"name", gpu.name},
                     {"arch", gpu.arch},
                     {"peak_memory_bandwidth_tbps", gpu.peak_tbps},
                     {"peak_bf16_tflops", gpu.peak_tflops}};
      auto pick = analysis::pick_gpu_arch(gpu.name, 0, 0, 0, 0, table);
      if (pick.arch) device["datasheet"] = datasheet_json(*pick.arch);
      out["device"] = std::move(device);
    } else {
      out["message"] =
          "no GPU detected: neither nvidia-smi nor rocminfo reported a device on this machine";
    }
    if (arg<bool>(call, "include_all", false)) {
      json all = json::array();
      for (const auto& a : table) all.push_back(datasheet_json(a));
      out["datasheets"] = std::move(all);
    }
    return ToolOutput{out, {}};
  };
  return t;
}

// ---- list_benchmark_images ----

Tool list_benchmark_images_tool() {
  Tool t;
  t.name = "list_benchmark_images";
  t.title = "Serving benchmark images";
  t.description =
      "The docker images `benchmark` uses per framework and GPU vendor when docker_image is not "
      "given (run_mode docker).";
  t.input_schema =
      s::input({{"framework", s::one_of("Only this framework", {"vllm", "sglang", "atom"})}});
  json entry = s::object({{"framework", s::string("")},
                          {"vendor", s::one_of("", {"nvidia", "amd"})},
                          {"gpu_archs", s::array(s::string(""), "archs this image is chosen for")},
                          {"image", s::string("")}},
                         {"framework", "vendor", "image"});
  t.output_schema = s::object({{"images", s::array(entry, "")}, {"note", s::string("")}}, {"images"});
  t.handler = [](const ToolCall& call) {
    std::string only = arg<std::string>(call, "framework", "");
    struct VendorArchs {
      const char* vendor;
      std::vector<std::string> archs;
    };
    const std::vector<VendorArchs> vendors = {{"nvidia", {"sm_80", "sm_90", "sm_100"}},
                                              {"amd", {"gfx942", "gfx950"}}};
    json images = json::array();
    for (auto f : {serve::Framework::kVllm, serve::Framework::kSglang, serve::Framework::kAtom}) {
      if (!only.empty() && only != serve::to_string(f)) continue;
      for (const auto& v : vendors) {
        try {
          images.push_back({{"framework", serve::to_string(f)},
                            {"vendor", v.vendor},
                            {"gpu_archs", v.archs},
                            {"image", serve::default_image(f, v.archs.front())}});
        } catch (const Error&) {
          // No image for this pair (ATOM on NVIDIA).
        }
      }
    }
    json out = {{"images", std::move(images)},
                {"note", "docker_image overrides the choice; gpu_arch picks the vendor"}};
    return ToolOutput{out, {}};
  };
  return t;
}

}  // namespace

ToolRegistry magpie_tools() {
  ToolRegistry r;
  r.add(hardware_spec_tool());
  r.add(list_benchmark_images_tool());
  return r;
}

}  // namespace magpie::mcp
