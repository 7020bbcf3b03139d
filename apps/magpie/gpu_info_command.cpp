#include "gpu_info_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/child_process.hpp"
#include "gpu/amd_smi.hpp"
#include "gpu/gpu_info_report.hpp"
#include "gpu/nvml.hpp"
#include "kernel/evaluator.hpp"

namespace magpie::app {

namespace fs = std::filesystem;

namespace {

// On PATH, else where the toolkits install by default (a login shell's PATH
// often lacks /usr/local/cuda/bin).
std::string find_tool(const std::string& name, const std::vector<fs::path>& fallbacks) {
  if (auto path = find_on_path(name); !path.empty()) return path;
  for (const auto& dir : fallbacks) {
    if (::access((dir / name).c_str(), X_OK) == 0) return (dir / name).string();
  }
  return {};
}

// The line of `tool --version` that carries the version ("Cuda compilation
// tools, release 13.0, V13.0.88", "HIP version: 6.2.41133"), else its first line.
std::string tool_version(const std::string& path) {
  ProcessSpec spec;
  spec.argv = {path, "--version"};
  spec.timeout = std::chrono::seconds(20);
  spec.capture_output = true;
  auto result = run_process(spec);
  std::string text = result.ok() ? result.output : std::string{};
  std::istringstream lines(text);
  std::string line, first;
  while (std::getline(lines, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("release") != std::string::npos ||
        line.find("HIP version") != std::string::npos) {
      return line;
    }
  }
  return first;
}

std::vector<fs::path> cuda_dirs() {
  std::vector<fs::path> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    dirs.push_back(fs::path(home) / "bin");
  }
  dirs.emplace_back("/usr/local/cuda/bin");
  return dirs;
}

std::vector<fs::path> rocm_dirs() {
  std::vector<fs::path> dirs;
  if (const char* home = std::getenv("ROCM_PATH"); home != nullptr && *home != '\0') {
    dirs.push_back(fs::path(home) / "bin");
  }
  dirs.emplace_back("/opt/rocm/bin");
  return dirs;
}

// The compiler Magpie builds kernels with: nvcc on NVIDIA, hipcc on AMD, and
// whichever is installed when no GPU is found.
std::optional<gpu::ToolStatus> probe_compiler(const std::string& vendor) {
  std::vector<std::pair<std::string, std::vector<fs::path>>> order;
  if (vendor != "AMD") order.push_back({"nvcc", cuda_dirs()});
  if (vendor != "NVIDIA") order.push_back({"hipcc", rocm_dirs()});
  for (const auto& [name, dirs] : order) {
    if (auto path = find_tool(name, dirs); !path.empty()) {
      return gpu::ToolStatus{name, path, tool_version(path)};
    }
  }
  return std::nullopt;
}

std::vector<gpu::ToolStatus> probe_profilers(const std::string& vendor) {
  std::vector<gpu::ToolStatus> found;
  if (vendor != "AMD") {
    for (const char* name : {"ncu", "nsys"}) {
      if (auto path = find_tool(name, cuda_dirs()); !path.empty())
        found.push_back({name, path, ""});
    }
    if (auto lib = kernel::default_cupti_lib(); !lib.empty()) {
      found.push_back({"libmagpie_cupti", lib.string(), ""});
    }
  }
  if (vendor != "NVIDIA") {
    for (const char* name : {"rocprofv3", "rocprof-compute"}) {
      if (auto path = find_tool(name, rocm_dirs()); !path.empty())
        found.push_back({name, path, ""});
    }
  }
  return found;
}

gpu::GpuInfoReport gather() {
  gpu::GpuInfoReport report;
  report.system = gpu::query_nvml();
  if (!report.system.devices.empty()) {
    report.architecture = gpu::architecture_of(report.system.devices.front());
  } else {
    // No NVML device: amd-smi (then rocminfo) for AMD GPUs, into the same typed status.
    gpu::SystemStatus amd = gpu::query_amd_gpus();
    if (!amd.devices.empty()) {
      std::vector<std::string> nvml_notes = std::move(report.system.notes);
      report.system = std::move(amd);
      report.architecture = gpu::architecture_of(report.system.devices.front());
      report.system.notes.insert(report.system.notes.end(), nvml_notes.begin(), nvml_notes.end());
    } else {
      report.system.notes.insert(report.system.notes.end(), amd.notes.begin(), amd.notes.end());
    }
  }
  if (const char* forced = std::getenv("MAGPIE_GPU_ARCH"); forced != nullptr && *forced != '\0') {
    report.architecture = forced;
    report.system.notes.push_back("architecture set by MAGPIE_GPU_ARCH");
  }
  report.compiler = probe_compiler(report.system.vendor);
  report.profilers = probe_profilers(report.system.vendor);
  return report;
}

}  // namespace

void GpuInfoCommand::register_with(CLI::App& app) {
  auto* gpu_info = app.add_flag(
      "--gpu-info", gpu_info_, "Print the GPU, compiler and profilers Magpie would use, then exit");
  app.add_flag("--json", json_, "With --gpu-info: print one JSON object instead of text")
      ->needs(gpu_info);
}

int GpuInfoCommand::run() const {
  auto report = gather();
  if (json_) {
    std::cout << gpu::gpu_info_json(report).dump(2) << "\n";
  } else {
    std::cout << gpu::render_gpu_info_text(report);
  }
  return 0;
}

}  // namespace magpie::app
