#include "core/error.hpp"

#include <fmt/format.h>

namespace magpie {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return 2;
    case ErrorKind::kNotFound: return 3;
    case ErrorKind::kUnreadable: return 4;
    case ErrorKind::kBadFormat: return 5;
    case ErrorKind::kNoGpuEvents: return 6;
    case ErrorKind::kInternal: return 1;
    case ErrorKind::kRejected: return 1;
    case ErrorKind::kCancelled: return 130;
    case ErrorKind::kUnreachable: return 7;
  }
  return 1;
}

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kUnreadable: return "unreadable";
    case ErrorKind::kBadFormat: return "bad_format";
    case ErrorKind::kNoGpuEvents: return "no_gpu_events";
    case ErrorKind::kInternal: return "internal";
    case ErrorKind::kRejected: return "rejected";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kUnreachable: return "unreachable";
  }
  return "internal";
}

Error::Error(ErrorKind kind, std::string message, std::string file,
             std::optional<uint64_t> byte_offset, std::string hint)
    : std::runtime_error(compose(message, file, byte_offset, hint)),
      kind_(kind),
      message_(std::move(message)),
      file_(std::move(file)),
      byte_offset_(byte_offset),
      hint_(std::move(hint)) {}

std::string Error::compose(const std::string& message, const std::string& file,
                           std::optional<uint64_t> byte_offset, const std::string& hint) {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (byte_offset) out += fmt::format(" (byte {})", *byte_offset);
    out += ": ";
  }
  out += message;
  if (!hint.empty()) out += fmt::format(" — {}", hint);
  return out;
}

}  // namespace magpie
