#include "serve/request_log.hpp"

#include "core/error.hpp"

namespace magpie::serve {

RequestLog::RequestLog(const std::filesystem::path& path) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_)
    throw Error(ErrorKind::kUnreadable, "cannot open request log for writing", path.string());
}

RequestLog::~RequestLog() {
  if (file_) std::fclose(file_);
}

void RequestLog::write(const RequestRecord& record, const char* phase_label) {
  auto j = record.to_json();
  if (phase_label && *phase_label) j["phase"] = phase_label;
  auto line = j.dump();
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), file_);
  // Flush in batches: per-line flushes would be the client's largest cost.
  if (++since_flush_ >= 64) flush();
}

void RequestLog::flush() {
  std::fflush(file_);
  since_flush_ = 0;
}

}  // namespace magpie::serve
