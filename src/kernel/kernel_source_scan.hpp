#pragma once
// Finds kernel definitions in one source text: `__global__` functions in
// C/C++/CUDA/HIP, `@triton.jit` functions and `nn.Module` subclasses in Python.
// Comments, string literals and preprocessor lines are blanked first (offsets
// and line numbers kept), so commented-out or quoted kernels never count.
// No regular expressions: a small tokenizer walks the declaration.
#include <string>
#include <string_view>
#include <vector>

namespace magpie::kernel {

struct ScannedKernel {
  int line = 0;      // 1-based line of the kernel's name (the `def`/`class` line in Python)
  std::string name;  // with enclosing named namespaces (`ops::kern`), without template arguments
};

struct CSourceScan {
  std::vector<ScannedKernel> kernels;  // definitions only (a body follows); declarations skipped
  bool hip_markers =
      false;  // `#include <hip/...>`, hip_runtime, hipLaunchKernelGGL, __HIP_PLATFORM
  bool cuda_markers = false;  // `#include <cuda...>`, cuda_runtime, cudaLaunchKernel, __CUDACC__
};

// C-family text (.cu, .cuh, .hip, .cpp, .h, ...). Also follows object-like
// macros defined to contain `__global__` (`#define KERNEL extern "C" __global__`)
// and skips `#if 0` blocks.
CSourceScan scan_c_source(std::string_view text);

struct PythonSourceScan {
  std::vector<ScannedKernel> triton;  // functions whose decorator chain holds triton.jit
  std::vector<ScannedKernel>
      modules;  // classes deriving (directly or within the file) from nn.Module
};

// Python text. Honours import aliases (`import triton as tr`, `from triton
// import jit`, `import torch.nn as nn`, `from torch.nn import Module`).
PythonSourceScan scan_python_source(std::string_view text);

// Blanking helpers (exposed for tests): every character of a comment or
// literal becomes a space, newlines stay, so offsets and lines are unchanged.
std::string blank_c_comments(std::string_view text, bool blank_strings_too);
std::string blank_python_comments_and_strings(std::string_view text);

}  // namespace magpie::kernel
