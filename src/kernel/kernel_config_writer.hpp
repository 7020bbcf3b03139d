#pragma once
// Writes a kernel config (the MCP tool `create_kernel_config`): one `kernel:`
// entry in the schema kernel_config.hpp reads, emitted by yaml-cpp so commands
// with spaces, quotes and colons survive, ready for `magpie analyze -k FILE`.
#include <string>
#include <vector>

namespace magpie::kernel {

struct KernelConfigDraftRequest {
  std::string kernel_id;    // required; the workspace subfolder, so no path separators
  std::string kernel_path;  // required; the kernel source (relative → made absolute from the cwd)
  std::string testcase_command;     // required; exit status 0 = correct
  std::string kernel_type = "hip";  // hip|cuda|pytorch|torch|py|triton, case-insensitive
  std::string working_dir;          // "" → the kernel file's folder
  std::string compile_command;      // "" → the built-in nvcc/hipcc build (none for Python types)
  std::string config_path;  // where the caller will save it, for `usage`; "" → <kernel_id>.yaml
};

struct KernelConfigDraft {
  std::string config_content;         // the YAML text
  std::string usage;                  // `magpie analyze -k <config_path>`
  std::vector<std::string> warnings;  // a missing file, shell syntax in a command, ...
};

// Throws Error(kUsage) for a missing required field, an unsafe kernel_id, or
// an unknown kernel_type (naming the allowed values).
KernelConfigDraft draft_kernel_config(const KernelConfigDraftRequest& request);

}  // namespace magpie::kernel
