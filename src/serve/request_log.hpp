#pragma once
// requests.jsonl: one line per finished request, written as it finishes, so
// a long run's memory stays flat and a crash keeps what was measured.
#include <cstdio>
#include <filesystem>

#include "serve/request_record.hpp"

namespace magpie::serve {

class RequestLog {
 public:
  explicit RequestLog(const std::filesystem::path& path);
  ~RequestLog();
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;
  void write(const RequestRecord& record, const char* phase_label);
  void flush();

 private:
  std::FILE* file_ = nullptr;
  size_t since_flush_ = 0;
};

}  // namespace magpie::serve
