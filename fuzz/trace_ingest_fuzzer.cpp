// Feeds arbitrary bytes to every trace reader: gzip (whole, and parsed while
// inflating), Kineto JSON (with tiny
// chunks so the splitter's fast path and fallback both run), rocprofv3 JSON
// and CSV. Only magpie::Error may escape a reader; anything else is a bug.
#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "core/gzip.hpp"
#include "core/arriving_text.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/rocprof_reader.hpp"
#include "trace/trace_links.hpp"

using namespace magpie;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  PaddedBuffer buf(size);
  if (size) std::memcpy(buf.data(), data, size);
  trace::IngestOptions options;
  options.threads = 1;
  options.chunk_bytes = 64 + (size % 512);
  options.include_python_functions = (size & 1) != 0;
  if (is_gzip(bytes)) {
    try {  // the path that parses while inflating
      PaddedBuffer copy(size);
      std::memcpy(copy.data(), data, size);
      auto gz = ArrivingText::inflate(std::move(copy), "fuzz.json.gz");
      (void)trace::parse_kineto(*gz, "fuzz.json.gz", options);
    } catch (const Error&) {
    }
  }
  try {
    if (is_gzip(bytes)) buf = gunzip(bytes, "fuzz.json.gz");
  } catch (const Error&) {
    return 0;
  }
  try {
    trace::Trace t = trace::parse_kineto(buf, "fuzz.json", options);
    (void)trace::link_trace(t);
  } catch (const Error&) {
  }
  try {
    if (trace::looks_like_rocprof_json(buf.view().substr(0, 4096)))
      (void)trace::parse_rocprof_json(buf, "fuzz.json");
  } catch (const Error&) {
  }
  try {
    if (trace::looks_like_rocprof_csv(buf.view().substr(0, 4096)))
      (void)trace::parse_rocprof_csv(buf.view(), "fuzz.csv");
  } catch (const Error&) {
  }
  return 0;
}
