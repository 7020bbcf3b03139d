#include "trace/trace.hpp"

namespace magpie::trace {

const char* to_string(TraceFormat f) {
  switch (f) {
    case TraceFormat::kKineto: return "kineto";
    case TraceFormat::kRocprofJson: return "rocprofv3-json";
    case TraceFormat::kRocprofCsv: return "rocprofv3-csv";
  }
  return "unknown";
}

const char* to_string(RankSource s) {
  switch (s) {
    case RankSource::kTrace: return "trace";
    case RankSource::kProcessName: return "process name";
    case RankSource::kFileName: return "file name";
    case RankSource::kOrder: return "order";
  }
  return "order";
}

}  // namespace magpie::trace
