#include "trace/trace_loader.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/gzip.hpp"
#include "core/phase_times.hpp"
#include "core/arriving_text.hpp"
#include "trace/merged_trace.hpp"
#include "trace/rocprof_reader.hpp"
#include "trace/trace_links.hpp"

namespace magpie::trace {

namespace fs = std::filesystem;

namespace {

bool looks_like_json(std::string_view head) {
  size_t first = head.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (head[first] == '{' || head[first] == '[');
}

// rocprof v1's results.json (rocprof --hip-trace / --sys-trace): a Chrome
// trace whose event array opens with an empty object, "ts"/"dur" as strings
// and BeginNs/EndNs args. Read as Kineto it has no kernels, so it is refused
// by name rather than reported as a trace without GPU events.
bool looks_like_rocprof_v1(std::string_view head) {
  std::string compact;
  for (char c : head.substr(0, 64))
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') compact += c;
  const bool opens_empty = compact.starts_with(R"({"traceEvents":[{})");
  const bool hip_lanes = head.find("HIP API") != std::string_view::npos ||
                         head.find("HSA API") != std::string_view::npos;
  return head.find(R"("BeginNs":")") != std::string_view::npos || (opens_empty && hip_lanes);
}

// Any format, from the whole (inflated) text.
Trace load_text(PaddedBuffer text, const fs::path& path, const IngestOptions& options) {
  std::string_view head = text.view().substr(0, 4096);
  size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    throw Error(ErrorKind::kBadFormat, "the file is empty", path.string(), 0,
                "the profiler did not finish writing it; re-export the trace");
  }
  const size_t text_bytes = text.size();
  Trace trace;
  if (looks_like_rocprof_json(head)) {
    trace = parse_rocprof_json(text, path.string());
  } else if (looks_like_rocprof_csv(head)) {
    // rocprofv3 writes <prefix>_agent_info.csv beside the kernel trace; with it
    // the CSV's agent ids become real GPU indices and devices get names.
    std::string agent_info;
    std::string file = path.filename().string();
    if (auto at = file.rfind("_kernel_trace.csv"); at != std::string::npos) {
      auto sibling = path.parent_path() / (file.substr(0, at) + "_agent_info.csv");
      std::error_code ec;
      if (fs::exists(sibling, ec)) agent_info = std::string(read_file(sibling).view());
    }
    trace = parse_rocprof_csv(text.view(), path.string(), agent_info);
  } else if (looks_like_json(head)) {
    trace = parse_kineto(std::move(text), path.string(), options);
  } else {
    throw Error(ErrorKind::kBadFormat, "not a trace: expected JSON or a rocprofv3 kernel-trace CSV",
                path.string(), first,
                "pass PyTorch profiler .json/.json.gz files or rocprofv3 output");
  }
  trace.stats.raw_bytes = text_bytes;
  return trace;
}

}  // namespace

Trace load_trace(const fs::path& path, const IngestOptions& options) {
  // Kineto JSON is parsed while it arrives (read, or inflated when the file is
  // gzip); anything else waits for the whole text.
  std::unique_ptr<ArrivingText> text = ArrivingText::open(path);
  size_t file_bytes = text->inflating() ? text->file_bytes() : 0;
  std::string_view head(text->data(), std::min<size_t>(text->wait_for(4096), 4096));
  if (looks_like_rocprof_v1(head)) {
    throw Error(ErrorKind::kBadFormat,
                "rocprof v1 output (results.json of rocprof --hip-trace/--sys-trace), which Magpie "
                "does not read: it reads PyTorch profiler (Kineto) JSON, rocprofv3 JSON and "
                "rocprofv3 *_kernel_trace.csv",
                path.string(), std::nullopt,
                "record with rocprofv3 --kernel-trace --output-format json (or csv), or with the "
                "PyTorch profiler");
  }
  Trace trace;
  if (looks_like_json(head) && !looks_like_rocprof_json(head)) {
    trace = parse_kineto(*text, path.string(), options);
  } else {
    trace = load_text(text->finish().text, path, options);
  }
  magpie_phase::mark("kineto returned");
  links_of(trace);  // once, here: every analysis reads them
  magpie_phase::mark("links built");
  if (file_bytes == 0) file_bytes = trace.stats.raw_bytes;
  trace.path = path.string();
  trace.stats.file_bytes = file_bytes;
  return trace;
}

std::vector<Trace> load_trace_ranks(const fs::path& path, const IngestOptions& options) {
  return split_merged_trace(load_trace(path, options));
}

namespace {
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::vector<fs::path> discover_trace_files(const fs::path& dir_in) {
  std::error_code ec;
  if (!fs::exists(dir_in, ec)) {
    throw Error(ErrorKind::kNotFound, "trace directory does not exist", dir_in.string(),
                std::nullopt, "pass the folder holding the profiler's .json/.json.gz files");
  }
  if (!fs::is_directory(dir_in, ec)) {
    throw Error(ErrorKind::kUsage, "--trace-dir must be a directory", dir_in.string(), std::nullopt,
                "pass the folder that holds the trace, not the file");
  }
  fs::path dir = dir_in;
  if (fs::is_directory(dir / "torch_trace", ec)) dir /= "torch_trace";
  std::vector<fs::path> all;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) || it->is_symlink(ec)) all.push_back(it->path());
  }
  if (ec) throw Error(ErrorKind::kUnreadable, "cannot list directory: " + ec.message(), dir.string());
  std::sort(all.begin(), all.end());
  auto pick = [&](auto pred) {
    std::vector<fs::path> out;
    for (const auto& p : all)
      if (pred(p.filename().string())) out.push_back(p);
    return out;
  };
  auto ranked = [](std::string_view suffix) {
    return [suffix](const std::string& n) {
      return n.find("-rank-") != std::string::npos && ends_with(n, suffix);
    };
  };
  auto found = pick(ranked(".pt.trace.json.gz"));
  if (found.empty()) found = pick(ranked(".pt.trace.json"));
  if (found.empty()) {
    found = pick([](const std::string& n) {
      return ends_with(n, ".json.gz") || ends_with(n, ".json") || ends_with(n, "_kernel_trace.csv");
    });
  }
  if (found.empty()) {
    throw Error(ErrorKind::kNotFound, "no trace files (*.json, *.json.gz, *_kernel_trace.csv)",
                dir.string(), std::nullopt,
                "run the workload with torch.profiler and point --trace-dir at its output folder");
  }
  return found;
}

}  // namespace magpie::trace
