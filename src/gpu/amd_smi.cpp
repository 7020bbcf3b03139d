#include "gpu/amd_smi.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/child_process.hpp"

namespace magpie::gpu {
namespace {

using nlohmann::json;

// The per-GPU list, unwrapped from ROCm 7's {"gpu_data": [...]}.
json gpu_list(std::string_view text, const char* what, std::vector<std::string>& notes) {
  if (text.empty()) return json::array();
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    notes.push_back(fmt::format("amd-smi {} --json: output is not JSON", what));
    return json::array();
  }
  if (doc.is_object() && doc.contains("gpu_data")) doc = doc["gpu_data"];
  if (!doc.is_array()) {
    notes.push_back(fmt::format("amd-smi {} --json: expected a list of GPUs", what));
    return json::array();
  }
  return doc;
}

const json* at(const json& obj, std::initializer_list<const char*> path) {
  const json* cur = &obj;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

// A number, {"value": N, "unit": U} or a numeric string; nullopt for "N/A".
std::optional<double> number(const json* v, std::string* unit = nullptr) {
  if (v == nullptr) return std::nullopt;
  if (v->is_object()) {
    if (unit != nullptr && v->contains("unit") && (*v)["unit"].is_string())
      *unit = (*v)["unit"].get<std::string>();
    return number(at(*v, {"value"}));
  }
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str()) return d;
  }
  return std::nullopt;
}

std::string text(const json* v) {
  if (v == nullptr || !v->is_string()) return {};
  auto s = v->get<std::string>();
  return s == "N/A" ? std::string() : s;
}

uint64_t bytes(const json* v) {
  std::string unit = "MB";
  auto n = number(v, &unit);
  if (!n) return 0;
  double scale = unit == "GB"   ? 1024.0 * 1024 * 1024
                 : unit == "KB" ? 1024.0
                 : unit == "B"  ? 1.0
                                : 1024.0 * 1024;
  return static_cast<uint64_t>(*n * scale);
}

// "AMD Instinct MI300X" as drivers spell it; amd-smi's market_name sometimes
// drops the vendor ("Instinct MI300X"), which the datasheet match accepts either way.
void read_static(const json& g, DeviceStatus& d, SystemStatus& s) {
  d.name = text(at(g, {"asic", "market_name"}));
  if (d.name.empty()) d.name = text(at(g, {"board", "product_name"}));
  d.arch = text(at(g, {"asic", "target_graphics_version"}));
  d.uuid = text(at(g, {"uuid"}));
  if (d.uuid.empty()) d.uuid = text(at(g, {"asic", "asic_serial"}));
  d.pci_bus_id = text(at(g, {"bus", "bdf"}));
  if (auto cu = number(at(g, {"asic", "num_compute_units"}))) d.sm_count = static_cast<int>(*cu);
  if (auto total = bytes(at(g, {"vram", "size"}))) d.memory_total = total;
  if (auto w = number(at(g, {"vram", "bit_width"})))
    d.memory_bus_width_bits = static_cast<unsigned>(*w);
  if (auto p = number(at(g, {"limit", "max_power"}))) d.power_limit_w = *p;
  if (auto w = number(at(g, {"bus", "max_pcie_width"}))) d.pcie.max_width = static_cast<int>(*w);
  if (s.driver_version.empty()) s.driver_version = text(at(g, {"driver", "version"}));
}

void read_metric(const json& g, DeviceStatus& d) {
  if (auto total = bytes(at(g, {"mem_usage", "total_vram"}))) d.memory_total = total;
  d.memory_used = bytes(at(g, {"mem_usage", "used_vram"}));
  d.memory_free = bytes(at(g, {"mem_usage", "free_vram"}));
  if (d.memory_free == 0 && d.memory_total > d.memory_used)
    d.memory_free = d.memory_total - d.memory_used;
  if (auto p = number(at(g, {"power", "socket_power"}))) d.power_draw_w = *p;
  if (auto c = number(at(g, {"clock", "gfx_0", "clk"}))) d.sm_clock_mhz = static_cast<unsigned>(*c);
  if (auto c = number(at(g, {"clock", "gfx_0", "max_clk"})))
    d.max_sm_clock_mhz = static_cast<unsigned>(*c);
  if (auto c = number(at(g, {"clock", "mem_0", "clk"})))
    d.mem_clock_mhz = static_cast<unsigned>(*c);
  if (auto c = number(at(g, {"clock", "mem_0", "max_clk"})))
    d.max_mem_clock_mhz = static_cast<unsigned>(*c);
  auto temp = number(at(g, {"temperature", "hotspot"}));
  if (!temp) temp = number(at(g, {"temperature", "edge"}));
  if (temp) d.temperature_c = static_cast<unsigned>(*temp);
  if (auto w = number(at(g, {"pcie", "width"}))) d.pcie.width = static_cast<int>(*w);
}

std::string find_tool(const std::string& name) {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      auto p = std::filesystem::path(dir.empty() ? "." : dir) / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  const char* rocm = std::getenv("ROCM_PATH");
  auto p =
      std::filesystem::path(rocm != nullptr && *rocm != '\0' ? rocm : "/opt/rocm") / "bin" / name;
  return ::access(p.c_str(), X_OK) == 0 ? p.string() : std::string();
}

// stdout+stderr of a short command, or nullopt (with a note) when it fails.
std::optional<std::string> run(const std::vector<std::string>& argv,
                               std::vector<std::string>& notes) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::seconds(30);
  spec.capture_output = true;
  auto r = run_process(spec);
  if (!r.ok()) {
    notes.push_back(
        fmt::format("`{} {}` failed: {}", argv[0], argv.size() > 1 ? argv[1] : "", r.describe()));
    return std::nullopt;
  }
  return r.output;
}

}  // namespace

SystemStatus parse_amd_smi(std::string_view static_json, std::string_view metric_json) {
  SystemStatus s;
  json statics = gpu_list(static_json, "static", s.notes);
  json metrics = gpu_list(metric_json, "metric", s.notes);
  for (size_t i = 0; i < statics.size(); ++i) {
    const json& g = statics[i];
    DeviceStatus d;
    d.index = g.contains("gpu") && g["gpu"].is_number_integer() ? g["gpu"].get<int>()
                                                                : static_cast<int>(i);
    read_static(g, d, s);
    for (const auto& m : metrics) {
      if (m.is_object() && m.value("gpu", -1) == d.index) read_metric(m, d);
    }
    s.devices.push_back(std::move(d));
  }
  if (!s.devices.empty()) s.vendor = "AMD";
  return s;
}

std::string parse_rocminfo_arch(std::string_view rocminfo_text) {
  static const std::regex kGfx(R"(\bgfx[0-9a-f]+\b)");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(rocminfo_text.begin(), rocminfo_text.end(), m, kGfx)) return m.str();
  return {};
}

SystemStatus query_amd_gpus() {
  SystemStatus s;
  if (auto amd_smi = find_tool("amd-smi"); !amd_smi.empty()) {
    auto st = run({amd_smi, "static", "--json"}, s.notes);
    if (st) {
      auto metric = run({amd_smi, "metric", "--json"}, s.notes);
      SystemStatus parsed = parse_amd_smi(*st, metric.value_or(""));
      parsed.notes.insert(parsed.notes.begin(), s.notes.begin(), s.notes.end());
      if (parsed.devices.empty()) parsed.notes.push_back("amd-smi reports no AMD GPU");
      return parsed;
    }
  } else {
    s.notes.push_back(
        "amd-smi not found (PATH, $ROCM_PATH/bin, /opt/rocm/bin): no AMD GPU details");
  }
  if (auto rocminfo = find_tool("rocminfo"); !rocminfo.empty()) {
    if (auto out = run({rocminfo}, s.notes)) {
      if (auto arch = parse_rocminfo_arch(*out); !arch.empty()) {
        DeviceStatus d;
        d.name = arch;  // rocminfo's marketing names vary; the datasheet matches the arch
        d.arch = arch;
        s.devices.push_back(std::move(d));
        s.vendor = "AMD";
        s.notes.push_back("AMD GPU named by rocminfo only: per-device fields need amd-smi");
      }
    }
  }
  return s;
}

}  // namespace magpie::gpu
