#include "gpu/environment.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "gpu/amd_smi.hpp"
#include "gpu/build_info.hpp"
#include "gpu/datasheet.hpp"

namespace magpie::gpu {
namespace {

using nlohmann::json;

// "0,2" or "GPU-…,GPU-…": does `d` appear in the list?
bool listed(const std::string& list, const DeviceStatus& d) {
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    if (item == std::to_string(d.index)) return true;
    if (!d.uuid.empty() && (item == d.uuid || d.uuid.rfind(item, 0) == 0)) return true;
  }
  return false;
}

std::string os_description() {
  std::string os;
  utsname u{};
  if (::uname(&u) == 0) os = fmt::format("{} {}", u.sysname, u.release);
  std::ifstream release("/etc/os-release");
  std::string line;
  while (std::getline(release, line)) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string name = line.substr(12);
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
      name = name.substr(1, name.size() - 2);
    os += " (" + name + ")";
  }
  return os;
}

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

std::vector<std::string> default_recorded_env_vars() {
  return {"CUDA_VISIBLE_DEVICES",   "HIP_VISIBLE_DEVICES",  "ROCR_VISIBLE_DEVICES",
          "NVIDIA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "PYTORCH_CUDA_ALLOC_CONF",
          "PYTORCH_HIP_ALLOC_CONF", "MAGPIE_GPU_ARCH",      "OMP_NUM_THREADS"};
}

EnvironmentSnapshot make_environment(const EnvironmentRequest& request, const SystemStatus& gpus,
                                     const EnvLookup& env) {
  EnvironmentSnapshot s;
  s.magpie_version = build_info::kVersion;
  s.build_commit = build_info::kCommit;
  s.build_dirty = build_info::kDirty;
  s.gpu_vendor = gpus.vendor;
  s.driver_version = gpus.driver_version;
  s.cuda_version = gpus.cuda_version;
  s.notes = gpus.notes;
  for (const auto& name : request.env_vars) s.env_vars[name] = env(name);
  for (const auto& [name, value] : request.env_passed) s.env_vars[name] = value;
  const char* mask_var = gpus.vendor == "AMD" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
  const auto mask = s.env_vars.contains(mask_var) ? s.env_vars[mask_var] : env(mask_var);
  for (const auto& d : gpus.devices) {
    if (request.gpu_indices) {
      const auto& want = *request.gpu_indices;
      if (std::find(want.begin(), want.end(), d.index) == want.end()) continue;
    } else if (mask && !listed(*mask, d)) {
      continue;
    }
    GpuUsed g{d.index, d.name, d.uuid, "", ""};
    auto match = find_spec_for_device(d.name, static_cast<int64_t>(d.memory_total));
    if (match.spec == nullptr && !d.arch.empty()) {
      if (const auto* by_arch = find_spec(d.arch)) match = {by_arch, "architecture " + d.arch};
    }
    if (match.spec != nullptr) g.datasheet_entry = match.spec->name;
    g.datasheet_match = match.reason;
    s.gpus.push_back(std::move(g));
  }
  if (gpus.devices.empty())
    s.notes.push_back("no GPU found: the run used none, or the driver was not readable");
  s.model = request.model;
  s.model_revision = request.model_revision;
  s.image = request.image;
  s.image_digest = request.image_digest;
  return s;
}

EnvironmentSnapshot capture_environment(const EnvironmentRequest& request) {
  SystemStatus gpus = query_nvml();
  if (gpus.devices.empty()) {
    SystemStatus amd = query_amd_gpus();
    if (!amd.devices.empty()) gpus = std::move(amd);
  }
  EnvironmentSnapshot s =
      make_environment(request, gpus, [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
      });
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) s.host = host;
  s.os = os_description();
  return s;
}

json environment_json(const EnvironmentSnapshot& s) {
  json gpus = json::array();
  for (const auto& g : s.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"uuid", or_null(g.uuid)},
                    {"datasheet_entry", or_null(g.datasheet_entry)},
                    {"datasheet_match", g.datasheet_match}});
  }
  json env = json::object();
  for (const auto& [k, v] : s.env_vars) env[k] = v ? json(*v) : json(nullptr);
  return {{"magpie_version", s.magpie_version},
          {"build_commit", s.build_commit},
          {"build_dirty", s.build_dirty},
          {"host", or_null(s.host)},
          {"os", or_null(s.os)},
          {"gpu_vendor", or_null(s.gpu_vendor)},
          {"driver_version", or_null(s.driver_version)},
          {"cuda_version", or_null(s.cuda_version)},
          {"gpus", gpus},
          {"env_vars", env},
          {"model", or_null(s.model)},
          {"model_revision", or_null(s.model_revision)},
          {"image", or_null(s.image)},
          {"image_digest", or_null(s.image_digest)},
          {"notes", s.notes}};
}

}  // namespace magpie::gpu
