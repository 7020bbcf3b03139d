#pragma once
// Finding the source files of the repositories to search.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace magpie::sources::detail {

enum class SourceLanguage : uint8_t { kCpp, kPython };

struct SourceFile {
  uint32_t repo = 0;     // index into the roots passed to list_source_files
  std::string relative;  // path relative to its repository root, '/'-separated
  std::filesystem::path absolute;
  SourceLanguage language = SourceLanguage::kCpp;
};

// Absolute, lexically normal, without a trailing separator: the one spelling of
// a repository root used for indexing and for $VAR mappings alike.
std::string normalize_repo_root(const std::filesystem::path& root);

// Source files (.cu .cuh .hip .cpp .cc .cxx .h .hpp .hxx .inl .py) under each
// root, recursively. Skips hidden directories (.git), build* and node_modules
// directories and __pycache__; keeps third_party. Throws Error(kNotFound) for
// a root that is not a directory.
std::vector<SourceFile> list_source_files(const std::vector<std::string>& roots);

}  // namespace magpie::sources::detail
