#pragma once
// The first bytes of a text file, inflated when it is gzip: enough to read the
// fields a profiler writes before its event array (Kineto's distributedInfo)
// without inflating a whole multi-hundred-megabyte trace.
#include <cstddef>
#include <filesystem>
#include <string>

namespace magpie {

// Up to `max_bytes` of the (inflated) text of `path`. Throws Error(kNotFound /
// kUnreadable) when the file cannot be opened; a damaged gzip stream gives what
// inflated before the damage (the full load reports the damage).
std::string read_text_head(const std::filesystem::path& path, size_t max_bytes);

}  // namespace magpie
