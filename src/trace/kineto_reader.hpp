#pragma once
// PyTorch profiler (Kineto) JSON → Trace, with simdjson On-Demand over chunks
// of the event array parsed in parallel.
#include <atomic>
#include <functional>
#include <string>

#include "core/file_io.hpp"
#include "core/arriving_text.hpp"
#include "trace/trace.hpp"

namespace magpie::trace {

struct IngestOptions {
  bool include_python_functions = false;  // python_function events are 60–90% of inference traces
  unsigned threads = 0;                   // 0 = all hardware threads
  size_t chunk_bytes = size_t{1} << 20;  // parser memory is ~5x a chunk, per thread
  // A streamed ingest keeps at most this much text ahead of what the parsers
  // have taken (0 = the whole text stays until the end): the text of a 220 MB
  // trace never needs 220 MB of memory at once.
  size_t text_window_bytes = size_t{16} << 20;
  // Progress of a streamed ingest: (file, bytes of text parsed so far, bytes expected),
  // from the reading thread, once per chunk. May be empty.
  std::function<void(const std::string& origin, size_t done, size_t total)> on_bytes;
  // Set → the ingest stops at its next chunk with Error(kCancelled) (core/cancel.hpp).
  // Checked where on_bytes reports, and before each file of a folder.
  const std::atomic<bool>* cancel = nullptr;
};

// `doc` must stay alive only during the call. Throws Error(kBadFormat) with the
// file name and byte offset when the JSON is malformed or holds no event array.
Trace parse_kineto(const PaddedBuffer& doc, const std::string& origin, const IngestOptions& options);
// Same, but frees `doc` as soon as its events are parsed (lower peak memory).
Trace parse_kineto(PaddedBuffer&& doc, const std::string& origin, const IngestOptions& options);

// Same, parsing chunks of the event array while the rest of the text is still
// arriving (inflated or read: the two overlap). Falls back to the whole-text
// path when the text did not arrive clean (several gzip members, damage).
Trace parse_kineto(ArrivingText& text, const std::string& origin, const IngestOptions& options);

// Exact conversion of a JSON number of microseconds ("1773709742341309.550",
// "12", "1.5e3") to integer nanoseconds; doubles would lose the ns digits of
// epoch-based timestamps. Returns false for text that is not a number.
// Times beyond ±4e18 ns (year 2096 after the epoch) are refused as not a
// time: the sum or difference of two accepted times then always fits int64.
bool parse_us_to_ns(std::string_view token, int64_t& out);

}  // namespace magpie::trace
