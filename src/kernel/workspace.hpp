#pragma once
// Workspaces as Magpie names them: <out>/analyze_<id>_<YYYYmmdd_HHMMSS>/ and
// <out>/compare_<YYYYmmdd_HHMMSS>/ (a _2, _3 suffix when one exists already).
#include <filesystem>
#include <string>

namespace magpie::kernel {

std::string local_timestamp();  // YYYYmmdd_HHMMSS
std::string iso_timestamp();    // for the reports' "timestamp"

// Creates and returns the folder, absolute (a relative parent is the caller's working folder's).
std::filesystem::path make_workspace(const std::filesystem::path& output_dir, const std::string& name);

}  // namespace magpie::kernel
