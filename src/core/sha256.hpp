#pragma once
// SHA-256 for receipts: a file named in a report carries
// its digest, so a later reader can tell it is the file that was measured.
#include <filesystem>
#include <string>
#include <string_view>

namespace magpie {

std::string sha256_hex(std::string_view data);  // lower-case hex
// Throws Error(kUnreadable) naming the file.
std::string file_sha256(const std::filesystem::path& file);

}  // namespace magpie
