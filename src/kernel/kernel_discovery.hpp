#pragma once
// Kernel discovery (the MCP tool `discover_kernels`): walks a project and
// lists its GPU kernels — CUDA and HIP `__global__` functions, Triton
// `@triton.jit` functions and PyTorch `nn.Module` classes — with file and
// line, so an agent can pick one and write a kernel config for it.
// Rules (which files, which folders, how a .cpp becomes HIP): docs/KERNEL_DISCOVERY.md.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/kernel_config.hpp"

namespace magpie::kernel {

enum class KernelLanguage { kCuda, kHip, kTriton, kPyTorch };

std::string_view to_string(KernelLanguage language);  // "cuda", "hip", "triton", "pytorch"
// The kernel config's `type` for a discovered kernel.
KernelType to_kernel_type(KernelLanguage language);

struct DiscoveredKernel {
  KernelLanguage type;
  std::filesystem::path file;  // absolute, normalised
  int line = 0;                // 1-based line of the name (`def`/`class` line in Python)
  std::string name;
};

struct DiscoveryRequest {
  std::filesystem::path project_path;  // a folder, or one source file
  std::string kernel_type = "all";     // hip|cuda|triton|pytorch (torch)|all, case-insensitive
  bool include_tests = false;          // test/, tests/, test_*.py, *_test.*
  bool include_examples = true;        // examples/, example/
};

struct DiscoveryResult {
  std::vector<DiscoveredKernel> kernels;  // by file, then line
  size_t files_scanned = 0;               // source files read
  std::vector<std::string> warnings;      // unreadable files, guessed languages, ...
};

// Throws Error(kNotFound) when project_path does not exist, Error(kUsage) for
// an unknown kernel_type (naming the allowed values) or an empty path.
DiscoveryResult discover_kernels(const DiscoveryRequest& request);

}  // namespace magpie::kernel
