#pragma once
// Splits a trace's event array into byte ranges that each hold whole events,
// so they can be parsed independently (in parallel, with a parser sized to a
// chunk rather than to the whole file: a 220 MB trace would otherwise need a
// 4-bytes-per-byte structural index).
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

namespace magpie::trace {

struct EventArrayLocation {
  size_t key_pos = std::string_view::npos;  // offset of "traceEvents" key; npos for a bare array
  size_t open = 0;                          // offset of the '['
};

// Finds the top-level event array: the value of "traceEvents", or the whole
// document when it is a bare array (legacy Chrome traces). Returns false if neither.
bool locate_event_array(std::string_view doc, EventArrayLocation& out);

struct ChunkPlan {
  std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end) of event text, no brackets
  size_t close = 0;                               // offset of the array's ']'
  bool closed = false;                            // false: the array never ends (truncated file)
  size_t scan_stopped_at = 0;                     // where the exact scan gave up, if !closed
};

// Fast plan: cuts at the first `}` ws `,` ws `{` after every `target` bytes.
// Such a cut can land inside a string or a nested array of objects; the parser
// then fails on that chunk and the caller falls back to plan_chunks_exact.
ChunkPlan plan_chunks_fast(std::string_view doc, size_t open, size_t target);

// The same plan from `begin` (the first byte of an event, or just after '[').
ChunkPlan plan_chunks_fast_from(std::string_view doc, size_t begin, size_t target);

// The fast plan's cut: offset of the '{' of the first `}` ws `,` ws `{` at or
// after `from`, npos if `doc` holds none. For text that is still arriving: a
// cut found in a prefix is the cut the whole text gives, and a cut that is not
// yet complete in the prefix is not reported.
size_t next_fast_cut(std::string_view doc, size_t from);
// End of the chunk [begin, cut): the separating comma and whitespace dropped.
size_t chunk_end_before(std::string_view doc, size_t begin, size_t cut);

// Exact plan: walks every byte tracking strings and nesting. Slower, always right.
ChunkPlan plan_chunks_exact(std::string_view doc, size_t open, size_t target);

}  // namespace magpie::trace
