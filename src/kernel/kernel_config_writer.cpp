#include "kernel/kernel_config_writer.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "kernel/command.hpp"
#include "kernel/kernel_config.hpp"

namespace magpie::kernel {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

[[noreturn]] void usage_error(const std::string& what, const std::string& fix) {
  throw Error(ErrorKind::kUsage, what, {}, std::nullopt, fix);
}

void check_id(const std::string& id) {
  if (id.empty()) usage_error("kernel_id is empty", "name the kernel, e.g. kernel_id: gemm_v2");
  const bool control =
      std::any_of(id.begin(), id.end(), [](unsigned char c) { return std::iscntrl(c); });
  if (id == "." || id == ".." || id.find_first_of("/\\") != std::string::npos || control ||
      trim(id) != id) {
    usage_error(
        fmt::format("kernel_id '{}' cannot be a folder name", id),
        "use letters, digits, '_', '-' or '.', without slashes (it names the workspace subfolder)");
  }
}

fs::path absolute_from_cwd(const std::string& p, const std::string& field,
                           std::vector<std::string>& warnings) {
  fs::path path = p;
  if (path.is_absolute()) return path.lexically_normal();
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec).lexically_normal();
  warnings.push_back(
      fmt::format("{} '{}' is relative; written as {} (relative to the current folder)", field, p,
                  abs.string()));
  return abs;
}

// Shell syntax that split_command passes to the program as plain arguments.
void warn_shell_syntax(const std::string& field, const std::string& command,
                       std::vector<std::string>& warnings) {
  static const std::set<std::string> kOperators{"|",  "||", "&&", ";",    "&", ">",
                                                ">>", "<",  "2>", "2>&1", "&>"};
  for (const auto& arg : split_command(command)) {
    if (kOperators.contains(arg) || arg.find("$(") != std::string::npos ||
        arg.find('`') != std::string::npos) {
      warnings.push_back(
          fmt::format("{}: '{}' reaches the program as an argument (commands are split on "
                      "whitespace, not run by a "
                      "shell); write it as bash -c '...' if it needs a shell",
                      field, arg));
      return;
    }
  }
}

}  // namespace

KernelConfigDraft draft_kernel_config(const KernelConfigDraftRequest& req) {
  KernelConfigDraft draft;
  auto& warnings = draft.warnings;
  check_id(req.kernel_id);
  const KernelType type = parse_kernel_type(trim(req.kernel_type), "kernel_type");
  if (trim(req.kernel_path).empty()) {
    usage_error("kernel_path is empty",
                "pass the kernel source file, e.g. kernel_path: src/gemm.hip");
  }
  const std::string testcase = trim(req.testcase_command);
  if (testcase.empty()) {
    usage_error("testcase_command is empty",
                "pass the command that runs and checks the kernel (exit 0 = correct), e.g. python3 "
                "test_gemm.py");
  }
  const std::string compile = trim(req.compile_command);

  const fs::path kernel = absolute_from_cwd(trim(req.kernel_path), "kernel_path", warnings);
  std::error_code ec;
  if (!fs::exists(kernel, ec))
    warnings.push_back(fmt::format("kernel_path {} does not exist (yet)", kernel.string()));
  fs::path working_dir = kernel.parent_path();
  if (!trim(req.working_dir).empty()) {
    working_dir = absolute_from_cwd(trim(req.working_dir), "working_dir", warnings);
    if (!fs::is_directory(working_dir, ec)) {
      warnings.push_back(
          fmt::format("working_dir {} is not an existing folder", working_dir.string()));
    }
  }
  warn_shell_syntax("testcase_command", testcase, warnings);
  if (!compile.empty()) warn_shell_syntax("compile_command", compile, warnings);
  if (is_python_type(type) && !compile.empty()) {
    warnings.push_back(fmt::format(
        "compile_command is set for a {} kernel; it runs before the testcase", to_string(type)));
  }

  const std::string config_path =
      trim(req.config_path).empty() ? req.kernel_id + ".yaml" : trim(req.config_path);
  draft.usage = "magpie analyze -k " + join_command({config_path});

  YAML::Emitter out;
  out << YAML::Comment(fmt::format("Kernel config for Magpie; run: {}", draft.usage))
      << YAML::Newline;
  out << YAML::BeginMap << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << req.kernel_id;
  out << YAML::Key << "type" << YAML::Value << to_string(type);
  out << YAML::Key << "source_files" << YAML::Value << YAML::BeginSeq << kernel.string()
      << YAML::EndSeq;
  out << YAML::Key << "working_dir" << YAML::Value << working_dir.string();
  if (!compile.empty())
    out << YAML::Key << "compile_command" << YAML::Value << YAML::DoubleQuoted << compile;
  out << YAML::Key << "testcase_command" << YAML::Value << YAML::DoubleQuoted << testcase;
  out << YAML::EndMap << YAML::EndMap;
  if (!out.good()) {
    throw Error(ErrorKind::kInternal, fmt::format("YAML emitter failed: {}", out.GetLastError()));
  }
  draft.config_content = std::string(out.c_str()) + "\n";
  return draft;
}

}  // namespace magpie::kernel
