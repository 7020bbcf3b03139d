#pragma once
// One error type for the whole toolkit. Libraries throw magpie::Error with a
// kind and as much context as they have; only apps/ turns kinds into exit codes.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace magpie {

enum class ErrorKind : uint8_t {
  kInternal,     // a bug or an unexpected system failure
  kUsage,        // bad flags or config values
  kNotFound,     // a path that does not exist, or a directory with nothing to read
  kUnreadable,   // exists but cannot be read (permissions, I/O error)
  kBadFormat,    // malformed JSON/CSV/gzip, or not the kind of file expected
  kNoGpuEvents,  // a valid trace with nothing on the GPU to analyse
  kRejected,     // a request Magpie refuses with exit 1 (no kernels, compare of one)
  kCancelled,    // stopped by the user (Ctrl-C, MCP notifications/cancelled)
  kUnreachable,  // a service Magpie must talk to does not answer (a Ray cluster's dashboard)
};

// Exit codes documented in README.md ("Exit codes").
int exit_code_for(ErrorKind kind);
const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string file = {},
        std::optional<uint64_t> byte_offset = std::nullopt, std::string hint = {});

  ErrorKind kind() const { return kind_; }
  const std::string& file() const { return file_; }
  std::optional<uint64_t> byte_offset() const { return byte_offset_; }
  const std::string& hint() const { return hint_; }
  const std::string& message() const { return message_; }

 private:
  static std::string compose(const std::string& message, const std::string& file,
                             std::optional<uint64_t> byte_offset, const std::string& hint);
  ErrorKind kind_;
  std::string message_;
  std::string file_;
  std::optional<uint64_t> byte_offset_;
  std::string hint_;
};

}  // namespace magpie
