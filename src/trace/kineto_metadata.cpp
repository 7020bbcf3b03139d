#include "trace/kineto_metadata.hpp"

#include <simdjson.h>

namespace magpie::trace {

void KinetoNames::add(std::string_view kind, int64_t pid, int64_t tid, std::string_view value) {
  if (kind == "process_name") {
    processes_.emplace_back(pid, std::string(value));
  } else if (kind == "thread_name") {
    threads_.emplace_back(pid, tid, std::string(value));
  }
}

void KinetoNames::merge(const KinetoNames& other, const std::vector<StringId>& remap) {
  for (const auto& [pid, name] : other.processes_) processes_.emplace_back(remap_thread_key(pid, remap), name);
  for (const auto& [pid, tid, name] : other.threads_)
    threads_.emplace_back(remap_thread_key(pid, remap), remap_thread_key(tid, remap), name);
}

void KinetoNames::apply(Trace& trace) const {
  for (const auto& [pid, name] : processes_) trace.process_names[pid] = name;
  for (const auto& [pid, tid, name] : threads_) trace.thread_names[{pid, tid}] = name;
}

void read_kineto_top_level(std::string_view text, const EventArrayLocation& where, size_t close,
                           const std::string& origin, Trace& trace) {
  if (where.key_pos == std::string_view::npos) return;  // bare array: nothing around it
  std::string outer;
  outer.reserve(where.key_pos + (text.size() - close) + 32);
  outer.append(text.substr(0, where.key_pos));
  outer.append("\"traceEvents\":[]");
  outer.append(text.substr(close + 1));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(outer).get(root)) {
    trace.warnings.push_back(origin + ": could not read the fields around traceEvents (" +
                             simdjson::error_message(err) +
                             "); device properties and rank come from elsewhere");
    return;
  }
  simdjson::dom::array devices;
  if (root["deviceProperties"].get_array().get(devices) == simdjson::SUCCESS) {
    for (simdjson::dom::element d : devices) {
      DeviceInfo info;
      int64_t v = 0;
      std::string_view s;
      if (d["id"].get_int64().get(v) == simdjson::SUCCESS) info.id = static_cast<int>(v);
      if (d["name"].get_string().get(s) == simdjson::SUCCESS) info.name = std::string(s);
      if (d["computeMajor"].get_int64().get(v) == simdjson::SUCCESS) info.compute_major = static_cast<int>(v);
      if (d["computeMinor"].get_int64().get(v) == simdjson::SUCCESS) info.compute_minor = static_cast<int>(v);
      if (d["numSms"].get_int64().get(v) == simdjson::SUCCESS) info.num_sms = static_cast<int>(v);
      if (d["warpSize"].get_int64().get(v) == simdjson::SUCCESS) info.warp_size = static_cast<int>(v);
      if (d["totalGlobalMem"].get_int64().get(v) == simdjson::SUCCESS) info.total_global_mem = v;
      trace.devices.push_back(std::move(info));
    }
  }
  simdjson::dom::object dist;
  if (root["distributedInfo"].get_object().get(dist) == simdjson::SUCCESS) {
    int64_t v = 0;
    if (dist["rank"].get_int64().get(v) == simdjson::SUCCESS) {
      trace.rank = static_cast<int>(v);
      trace.rank_source = RankSource::kTrace;
    }
    if (dist["world_size"].get_int64().get(v) == simdjson::SUCCESS) trace.world_size = static_cast<int>(v);
  }
  int64_t base = 0;
  if (root["baseTimeNanoseconds"].get_int64().get(base) == simdjson::SUCCESS) trace.base_time_ns = base;
}

}  // namespace magpie::trace
