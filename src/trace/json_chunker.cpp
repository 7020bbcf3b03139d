#include "trace/json_chunker.hpp"

#include <cstring>

namespace magpie::trace {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t skip_ws(std::string_view doc, size_t i) {
  while (i < doc.size() && is_ws(doc[i])) ++i;
  return i;
}

// Trims trailing whitespace and the separating comma from [begin, end).
size_t trim_chunk_end(std::string_view doc, size_t begin, size_t end) {
  while (end > begin && is_ws(doc[end - 1])) --end;
  if (end > begin && doc[end - 1] == ',') --end;
  while (end > begin && is_ws(doc[end - 1])) --end;
  return end;
}

// Next `}` ws* `,` ws* `{` at or after `from`; returns the offset of that '{' or npos.
size_t next_boundary(std::string_view doc, size_t from) {
  const char* base = doc.data();
  while (from < doc.size()) {
    const void* hit = std::memchr(base + from, '}', doc.size() - from);
    if (!hit) return std::string_view::npos;
    size_t i = static_cast<size_t>(static_cast<const char*>(hit) - base) + 1;
    i = skip_ws(doc, i);
    if (i < doc.size() && doc[i] == ',') {
      i = skip_ws(doc, i + 1);
      if (i < doc.size() && doc[i] == '{') return i;
    }
    from = i;
  }
  return std::string_view::npos;
}

// Walks from `pos` (between elements, depth 0 of the array) to the closing ']'.
// When target > 0, records element boundaries every ~target bytes into `plan`.
void scan_exact(std::string_view doc, size_t pos, size_t target, ChunkPlan& plan) {
  int depth = 0;
  bool in_string = false;
  size_t chunk_begin = skip_ws(doc, pos);
  for (size_t i = pos; i < doc.size(); ++i) {
    char c = doc[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '{':
      case '[': ++depth; break;
      case '}': --depth; break;
      case ']':
        if (depth == 0) {
          size_t end = trim_chunk_end(doc, chunk_begin, i);
          if (end > chunk_begin) plan.chunks.emplace_back(chunk_begin, end);
          plan.close = i;
          plan.closed = true;
          return;
        }
        --depth;
        break;
      case ',':
        if (depth == 0 && target > 0 && i - chunk_begin >= target) {
          size_t end = trim_chunk_end(doc, chunk_begin, i);
          if (end > chunk_begin) plan.chunks.emplace_back(chunk_begin, end);
          chunk_begin = skip_ws(doc, i + 1);
        }
        break;
      default: break;
    }
  }
  plan.closed = false;
  plan.scan_stopped_at = doc.size();
}

}  // namespace

bool locate_event_array(std::string_view doc, EventArrayLocation& out) {
  size_t first = skip_ws(doc, 0);
  if (first < doc.size() && doc[first] == '[') {
    out.key_pos = std::string_view::npos;
    out.open = first;
    return true;
  }
  if (first >= doc.size() || doc[first] != '{') return false;
  constexpr std::string_view kKey = "\"traceEvents\"";
  for (size_t at = doc.find(kKey); at != std::string_view::npos; at = doc.find(kKey, at + 1)) {
    size_t i = skip_ws(doc, at + kKey.size());
    if (i >= doc.size() || doc[i] != ':') continue;
    i = skip_ws(doc, i + 1);
    if (i >= doc.size() || doc[i] != '[') continue;
    out.key_pos = at;
    out.open = i;
    return true;
  }
  return false;
}

ChunkPlan plan_chunks_fast(std::string_view doc, size_t open, size_t target) {
  return plan_chunks_fast_from(doc, open + 1, target);
}

size_t next_fast_cut(std::string_view doc, size_t from) { return next_boundary(doc, from); }

size_t chunk_end_before(std::string_view doc, size_t begin, size_t cut) { return trim_chunk_end(doc, begin, cut); }

ChunkPlan plan_chunks_fast_from(std::string_view doc, size_t begin, size_t target) {
  ChunkPlan plan;
  begin = skip_ws(doc, begin);
  if (begin < doc.size() && doc[begin] == ']') {
    plan.close = begin;
    plan.closed = true;
    return plan;
  }
  for (;;) {
    size_t next = next_boundary(doc, begin + target);
    if (next == std::string_view::npos) break;
    plan.chunks.emplace_back(begin, trim_chunk_end(doc, begin, next));
    begin = next;
  }
  // The last stretch is scanned exactly: it is where the array's ']' is.
  scan_exact(doc, begin, 0, plan);
  return plan;
}

ChunkPlan plan_chunks_exact(std::string_view doc, size_t open, size_t target) {
  ChunkPlan plan;
  scan_exact(doc, open + 1, target, plan);
  return plan;
}

}  // namespace magpie::trace
