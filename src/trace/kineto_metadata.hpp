#pragma once
// The parts of a Kineto file outside the event array: deviceProperties,
// distributedInfo, baseTimeNanoseconds; and the names from 'M' events.
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "trace/json_chunker.hpp"
#include "trace/trace.hpp"

namespace magpie::trace {

class KinetoNames {
 public:
  // `kind` is the metadata event's name ("process_name", "thread_name", ...).
  void add(std::string_view kind, int64_t pid, int64_t tid, std::string_view value);
  // Folds in another chunk's names; its string-encoded pids/tids go through `remap`.
  void merge(const KinetoNames& other, const std::vector<StringId>& remap);
  void apply(Trace& trace) const;

 private:
  std::vector<std::pair<int64_t, std::string>> processes_;
  std::vector<std::tuple<int64_t, int64_t, std::string>> threads_;
};

// Parses everything around the event array (which is replaced by []), filling
// devices, rank/world size and base time. Problems become warnings: the events
// are already read and stay useful without this.
void read_kineto_top_level(std::string_view text, const EventArrayLocation& where, size_t close,
                           const std::string& origin, Trace& trace);

}  // namespace magpie::trace
