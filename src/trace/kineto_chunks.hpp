#pragma once
// Internal to magpie_trace: what the whole-text reader (kineto_reader.cpp) and
// the reader that works while a gzip stream is still inflating
// (kineto_stream.cpp) share. Each chunk of the event array is parsed into its
// own ChunkOutput; finish_kineto merges them into one Trace.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.hpp"
#include "trace/json_chunker.hpp"
#include "trace/kineto_metadata.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace.hpp"

namespace magpie::trace {

// A chunk's argument sets by the raw text that holds them: the stretch from the
// first of an op's four arrays to the last, and where each array lies in it.
// Equal text and layout are equal arrays, so an op whose set was seen before
// costs one hash and one compare instead of four interned strings and a set
// lookup (a large trace has hundreds of thousands of ops and a few hundred sets).
class ArgsTextCache {
 public:
  static constexpr uint32_t kMiss = UINT32_MAX;
  // Layout: each array's offset and length in the text (kAbsent when empty).
  static constexpr uint16_t kAbsent = UINT16_MAX;
  using Layout = std::array<uint16_t, 8>;
  // The set's row in the chunk's op_details, or kMiss; `hash` is computed for add().
  uint32_t find(std::string_view text, const Layout& layout, uint64_t& hash) const;
  void add(std::string_view text, const Layout& layout, uint64_t hash, uint32_t row);

 private:
  struct Entry {
    uint64_t hash = 0;
    uint32_t row = kMiss;
    uint32_t text_at = 0;  // in text_
    uint32_t text_len = 0;
    Layout layout{};
  };
  std::vector<Entry> slots_ = std::vector<Entry>(256);
  size_t used_ = 0;
  std::string text_;
};

struct ChunkOutput {
  StringPool strings;
  EventTable events;
  OpDetailIndex op_index;  // the chunk's distinct argument sets
  ArgsTextCache args_text;
  std::vector<FlowEvent> flows;
  KinetoNames names;
  IngestStats stats;
  bool failed = false;
  std::string error;
  size_t error_offset = 0;  // relative to the chunk's first byte
};

// Parses `[` + region + `]` from a private padded copy; never throws on bad JSON
// (sets `failed`, `error` and `error_offset` instead).
// `copied`, when given, is called as soon as the region has been copied: the
// caller may then drop the region's text.
void parse_chunk(std::string_view region, bool include_python, ChunkOutput& out,
                 const std::function<void()>& copied = {});

// Chunk tables folded, in chunk order, into one trace's tables (strings
// re-interned, argument sets joined); each chunk's memory is freed as it is
// folded in, so the streaming reader can fold chunks while others still parse.
class ChunkMerge {
 public:
  void reserve(size_t rows);
  void add(ChunkOutput&& chunk);

 private:
  friend Trace assemble_kineto(Trace top, ChunkMerge&& merged, const EventArrayLocation& where);
  Trace trace_;  // strings, events, flows and stats only
  KinetoNames names_;
  OpDetailIndex op_index_;
};

// The fields around the event array (devices, rank, base time) of `text`.
Trace read_top_level(std::string_view text, const EventArrayLocation& where, size_t close,
                     const std::string& origin);

// The trace: `top`'s fields with the merged tables; parses the argument sets,
// applies the metadata names, and rejects an event array with no object in it.
Trace assemble_kineto(Trace top, ChunkMerge&& merged, const EventArrayLocation& where);

// Redoes the plan exactly when a fast cut failed (or throws the JSON error),
// then merges the chunks. `owned`, when given, holds `text` and is released as
// soon as nothing points into it any more.
Trace finish_kineto(std::string_view text, const EventArrayLocation& where, ChunkPlan plan,
                    std::vector<ChunkOutput> outputs, PaddedBuffer* owned, const std::string& origin,
                    const IngestOptions& options);

}  // namespace magpie::trace
