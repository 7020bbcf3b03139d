#include "gpu/gpu_info_report.hpp"

#include <fmt/format.h>

#include "gpu/datasheet_json.hpp"

namespace magpie::gpu {

std::string architecture_of(const DeviceStatus& device) {
  if (!device.arch.empty()) return device.arch;
  if (device.cc_major <= 0) return {};
  return fmt::format("sm_{}{}", device.cc_major, device.cc_minor);
}

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string or_unknown(const std::string& s) { return s.empty() ? "(unknown)" : s; }

template <typename T>
std::string number_or_unknown(T value, const char* unit) {
  if (value == T{}) return "?";
  return fmt::format("{}{}", value, unit);
}

std::string tool_text(const ToolStatus& tool) {
  std::string text = fmt::format("{} ({}", tool.name, tool.path);
  if (!tool.version.empty()) text += ", " + tool.version;
  return text + ")";
}

std::string mode_text(const std::optional<bool>& mode) {
  if (!mode) return "n/a";
  return *mode ? "enabled" : "disabled";
}

std::string pcie_text(const PcieLink& link) {
  if (link.gen == 0 && link.width == 0 && link.max_gen == 0 && link.max_width == 0)
    return "(unknown)";
  return fmt::format("gen {} x{} (max gen {} x{})", number_or_unknown(link.gen, ""),
                     number_or_unknown(link.width, ""), number_or_unknown(link.max_gen, ""),
                     number_or_unknown(link.max_width, ""));
}

void append_device(std::string& out, const DeviceStatus& d) {
  out += fmt::format("  GPU {}: {}\n", d.index, or_unknown(d.name));
  out += fmt::format("    UUID: {}\n", or_unknown(d.uuid));
  out += fmt::format("    PCI bus id: {}\n", or_unknown(d.pci_bus_id));
  std::string cc = d.cc_major > 0
                       ? fmt::format("{}.{} ({})", d.cc_major, d.cc_minor, architecture_of(d))
                       : "(unknown)";
  out += fmt::format("    Compute capability: {}\n", cc);
  out += fmt::format("    SMs: {}\n", d.sm_count > 0 ? std::to_string(d.sm_count) : "(unknown)");
  if (d.memory_total > 0) {
    out += fmt::format("    Memory: {:.0f} MiB total, {:.0f} MiB free, {:.0f} MiB used\n",
                       d.memory_total / kMiB, d.memory_free / kMiB, d.memory_used / kMiB);
  } else {
    out += "    Memory: (unknown)\n";
  }
  out +=
      fmt::format("    SM clock: {} current, {} max\n", number_or_unknown(d.sm_clock_mhz, " MHz"),
                  number_or_unknown(d.max_sm_clock_mhz, " MHz"));
  out += fmt::format("    Memory clock: {} current, {} max\n",
                     number_or_unknown(d.mem_clock_mhz, " MHz"),
                     number_or_unknown(d.max_mem_clock_mhz, " MHz"));
  std::string limit = d.power_limit_w > 0 ? fmt::format("{:.1f} W", d.power_limit_w) : "?";
  std::string draw = d.power_draw_w > 0 ? fmt::format("{:.1f} W", d.power_draw_w) : "?";
  out += fmt::format("    Power: {} limit, {} draw\n", limit, draw);
  out += fmt::format("    Temperature: {}\n", number_or_unknown(d.temperature_c, " C"));
  out += fmt::format("    MIG: {}, ECC: {}\n", mode_text(d.mig_enabled), mode_text(d.ecc_enabled));
  out += fmt::format("    PCIe: {}\n", pcie_text(d.pcie));
  const auto sheet = device_datasheet_json(d);
  if (sheet["figures_from"] == "datasheet") {
    out += fmt::format("    Datasheet: {} ({:g} TB/s, {} bf16 TFLOP/s dense)\n",
                       sheet["entry"]["name"].get<std::string>(),
                       sheet["memory_bandwidth_tbps"].get<double>(),
                       sheet["peak_bf16_tflops"].is_number()
                           ? fmt::format("{:g}", sheet["peak_bf16_tflops"].get<double>())
                           : std::string("?"));
  } else {
    out +=
        fmt::format("    Datasheet: none ({}); driver-reported bandwidth {}\n",
                    sheet["match"].get<std::string>(),
                    sheet["memory_bandwidth_tbps"].is_number()
                        ? fmt::format("{:.2f} TB/s", sheet["memory_bandwidth_tbps"].get<double>())
                        : std::string("(unknown)"));
  }
}

template <typename T>
nlohmann::json value_or_null(T value) {
  if (value == T{}) return nullptr;
  return value;
}

nlohmann::json optional_json(const std::optional<bool>& v) {
  if (!v) return nullptr;
  return *v;
}

nlohmann::json tool_json(const ToolStatus& tool) {
  return {
      {"name", tool.name},
      {"path", tool.path},
      {"version", tool.version.empty() ? nlohmann::json(nullptr) : nlohmann::json(tool.version)}};
}

nlohmann::json device_json(const DeviceStatus& d) {
  bool memory_known = d.memory_total > 0;
  return {
      {"index", d.index},
      {"name", value_or_null(d.name)},
      {"uuid", value_or_null(d.uuid)},
      {"pci_bus_id", value_or_null(d.pci_bus_id)},
      {"compute_capability", d.cc_major > 0
                                 ? nlohmann::json(fmt::format("{}.{}", d.cc_major, d.cc_minor))
                                 : nlohmann::json(nullptr)},
      {"architecture", value_or_null(architecture_of(d))},
      {"sm_count", value_or_null(d.sm_count)},
      {"memory_total_bytes", value_or_null(d.memory_total)},
      {"memory_free_bytes", memory_known ? nlohmann::json(d.memory_free) : nlohmann::json(nullptr)},
      {"memory_used_bytes", memory_known ? nlohmann::json(d.memory_used) : nlohmann::json(nullptr)},
      {"sm_clock_mhz", value_or_null(d.sm_clock_mhz)},
      {"mem_clock_mhz", value_or_null(d.mem_clock_mhz)},
      {"max_sm_clock_mhz", value_or_null(d.max_sm_clock_mhz)},
      {"max_mem_clock_mhz", value_or_null(d.max_mem_clock_mhz)},
      {"power_limit_w", value_or_null(d.power_limit_w)},
      {"power_draw_w", value_or_null(d.power_draw_w)},
      {"temperature_c", value_or_null(d.temperature_c)},
      {"mig_enabled", optional_json(d.mig_enabled)},
      {"ecc_enabled", optional_json(d.ecc_enabled)},
      {"pcie",
       {{"gen", value_or_null(d.pcie.gen)},
        {"width", value_or_null(d.pcie.width)},
        {"max_gen", value_or_null(d.pcie.max_gen)},
        {"max_width", value_or_null(d.pcie.max_width)}}},
      {"datasheet", device_datasheet_json(d)},
  };
}

}  // namespace

std::string render_gpu_info_text(const GpuInfoReport& report) {
  const SystemStatus& s = report.system;
  std::string out = "GPU Information:\n";
  if (s.vendor.empty()) {
    out += "  (No GPU detected)\n";
  } else {
    out += fmt::format("  Vendor: {}\n", s.vendor);
    out += fmt::format("  Architecture: {}\n", or_unknown(report.architecture));
  }
  out += fmt::format("  Compiler: {}\n",
                     report.compiler ? tool_text(*report.compiler) : "(none found)");
  std::string profilers;
  for (const auto& p : report.profilers)
    profilers += (profilers.empty() ? "" : ", ") + tool_text(p);
  out += fmt::format("  Profiler: {}\n", profilers.empty() ? "(none found)" : profilers);
  if (!s.driver_version.empty()) out += fmt::format("  Driver: {}\n", s.driver_version);
  if (!s.cuda_version.empty()) out += fmt::format("  CUDA (driver): {}\n", s.cuda_version);
  for (const auto& d : s.devices) append_device(out, d);
  if (!s.notes.empty()) {
    out += s.vendor.empty() ? "  Reason:\n" : "  Notes:\n";
    for (const auto& n : s.notes) out += fmt::format("    - {}\n", n);
  }
  return out;
}

nlohmann::json gpu_info_json(const GpuInfoReport& report) {
  const SystemStatus& s = report.system;
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : s.devices) devices.push_back(device_json(d));
  nlohmann::json profilers = nlohmann::json::array();
  for (const auto& p : report.profilers) profilers.push_back(tool_json(p));
  return {
      {"gpu_detected", !s.vendor.empty()},
      {"vendor", value_or_null(s.vendor)},
      {"architecture", value_or_null(report.architecture)},
      {"compiler", report.compiler ? tool_json(*report.compiler) : nlohmann::json(nullptr)},
      {"profilers", profilers},
      {"driver_version", value_or_null(s.driver_version)},
      {"cuda_version", value_or_null(s.cuda_version)},
      {"devices", devices},
      {"notes", s.notes},
  };
}

}  // namespace magpie::gpu
