#include "kernel/gpu_info.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

namespace magpie::kernel {

std::optional<std::string> sm_arch_from_compute_cap(const std::string& cap) {
  auto dot = cap.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= cap.size()) return std::nullopt;
  std::string major = cap.substr(0, dot), minor = cap.substr(dot + 1);
  for (char c : major + minor) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return "sm_" + major + minor;
}

void fill_peaks(GpuInfo& info) {
  struct Peak {
    const char* needle;
    double tbps, tflops;
  };
  static constexpr std::array<Peak, 9> kPeaks{{{"H200", 4.8, 989},
                                               {"H100", 3.35, 989},
                                               {"A100", 2.04, 312},
                                               {"B200", 8.0, 2250},
                                               {"MI300X", 5.3, 1307},
                                               {"MI325X", 6.0, 1307},
                                               {"MI350X", 8.0, 2307},
                                               {"MI355X", 8.0, 2517},
                                               {"gfx942", 5.3, 1307}}};
  for (const auto& p : kPeaks) {
    if (info.name.find(p.needle) != std::string::npos || info.arch == p.needle) {
      info.peak_tbps = p.tbps;
      info.peak_tflops = p.tflops;
      return;
    }
  }
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    auto p = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

namespace {
std::string capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  if (!pipe) return {};
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
  return out;
}
std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  return s;
}
}  // namespace

GpuInfo detect_gpu() {
  GpuInfo info;
  if (!find_on_path("nvidia-smi").empty()) {
    std::string out = capture("nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null");
    std::string first = out.substr(0, out.find('\n'));
    auto comma = first.rfind(',');
    if (comma != std::string::npos) {
      info.vendor = "NVIDIA";
      info.name = trim(first.substr(0, comma));
      info.arch = sm_arch_from_compute_cap(trim(first.substr(comma + 1))).value_or("");
    }
  }
  if (!info.found() && !find_on_path("rocminfo").empty()) {
    std::string out = capture("rocminfo 2>/dev/null | grep -m1 -o 'gfx[0-9a-f]*'");
    if (!trim(out).empty()) {
      info.vendor = "AMD";
      info.arch = trim(out);
      info.name = info.arch;
    }
  }
  if (const char* forced = std::getenv("MAGPIE_GPU_ARCH"); forced != nullptr && *forced != '\0') info.arch = forced;
  fill_peaks(info);
  return info;
}

}  // namespace magpie::kernel
