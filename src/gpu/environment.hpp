#pragma once
// The environment block every report carries (analyze, compare, benchmark,
// tracelens and gap analysis manifests): what a comparison needs to be
// reproduced. Captured once per run; written by environment_json only.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml.hpp"

namespace magpie::gpu {

struct GpuUsed {
  int index = 0;
  std::string name, uuid;
  std::string datasheet_entry;  // "H200"; "" when the datasheet does not know it
  std::string datasheet_match;  // why that entry, or why none
};

struct EnvironmentSnapshot {
  std::string magpie_version;  // CMake's project version
  std::string build_commit;    // git commit at configure time; "unknown" outside a checkout
  bool build_dirty = false;    // tracked files differed from that commit
  std::string host;            // hostname
  std::string os;              // "Linux 6.8.0-45-generic (Ubuntu 24.04.1 LTS)"
  std::string gpu_vendor;      // "NVIDIA" | "AMD" | ""
  std::string driver_version;
  std::string cuda_version;  // the driver's highest CUDA; "" on AMD
  std::vector<GpuUsed> gpus;
  // Each recorded variable: its value, or nullopt when unset.
  std::map<std::string, std::optional<std::string>> env_vars;
  // Filled by callers that know them (serving: the model and image it ran).
  std::string model, model_revision, image, image_digest;
  std::vector<std::string> notes;  // why a field is empty
};

// Variables every report records: GPU visibility and allocator settings.
std::vector<std::string> default_recorded_env_vars();

struct EnvironmentRequest {
  std::vector<std::string> env_vars = default_recorded_env_vars();
  // Variables the run sets for its child on top of the inherited environment
  // (recorded as set, overriding the inherited value).
  std::map<std::string, std::string> env_passed;
  // The GPUs the run used (driver indices); nullopt = those CUDA_VISIBLE_DEVICES /
  // HIP_VISIBLE_DEVICES leave visible, or all.
  std::optional<std::vector<int>> gpu_indices;
  std::string model, model_revision, image, image_digest;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Pure: from a driver status already read and an environment lookup.
EnvironmentSnapshot make_environment(const EnvironmentRequest& request, const SystemStatus& gpus,
                                     const EnvLookup& env);

// Reads the driver (NVML, else amd-smi), the host and the process environment.
EnvironmentSnapshot capture_environment(const EnvironmentRequest& request = {});

nlohmann::json environment_json(const EnvironmentSnapshot& snapshot);

}  // namespace magpie::gpu
