#pragma once
// rocprofv3 output → Trace: the JSON results file (`--output-format json`) and
// the kernel trace CSV (`*_kernel_trace.csv`). Kernel dispatches and memory
// copies become GPU rows shaped like Kineto's, so the analyses need not care
// which profiler wrote the file.
#include <string>
#include <string_view>

#include "core/file_io.hpp"
#include "trace/trace.hpp"

namespace magpie::trace {

// Content sniffing for the loader; `head` is the first few KB of the file.
bool looks_like_rocprof_json(std::string_view head);  // mentions "rocprofiler-sdk-tool"
bool looks_like_rocprof_csv(std::string_view head);   // header has Kernel_Name and Start_Timestamp

// `json` must keep its PaddedBuffer padding readable (simdjson reads past the
// end). Throws Error(kBadFormat) naming `origin` and, where known, the byte
// offset. Fills a Trace with format kRocprofJson.
Trace parse_rocprof_json(const PaddedBuffer& json, const std::string& origin);

// `csv` is a `*_kernel_trace.csv`. Columns are found by header name. The CSV
// only names agents by node id ("Agent 4"); pass the sibling
// `*_agent_info.csv` text to map them to GPU indices and fill `devices`.
// Without it, GPUs are numbered in the order of their node ids, with a warning.
// Throws Error(kBadFormat) naming `origin` and the line number.
Trace parse_rocprof_csv(std::string_view csv, const std::string& origin,
                        std::string_view agent_info_csv = {});

}  // namespace magpie::trace
