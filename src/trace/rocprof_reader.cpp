#include "trace/rocprof_reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/error.hpp"

namespace magpie::trace {

namespace od = simdjson::ondemand;

namespace {

// ---------------------------------------------------------------------------
// Shared by both formats: agents → GPU indices, and rows in Kineto's shape.

struct Agent {
  uint64_t handle = 0;   // JSON: agents[].id.handle, what records refer to
  int64_t node_id = -1;  // CSV: "Agent N" names this
  bool is_gpu = false;
  int gpu_index = -1;  // explicit in new rocprofv3 (gpu_index / logical_node_type_id)
  DeviceInfo info;
};

// GPUs without an explicit index are numbered by node id, as HIP numbers them.
void assign_gpu_indices(std::vector<Agent>& agents) {
  std::vector<Agent*> unnumbered;
  for (auto& a : agents)
    if (a.is_gpu && a.gpu_index < 0) unnumbered.push_back(&a);
  std::sort(unnumbered.begin(), unnumbered.end(),
            [](const Agent* x, const Agent* y) { return x->node_id < y->node_id; });
  int next = 0;
  for (const auto& a : agents)
    if (a.is_gpu && a.gpu_index >= next) next = a.gpu_index + 1;
  for (Agent* a : unnumbered) a->gpu_index = next++;
  for (auto& a : agents) a.info.id = a.is_gpu ? a.gpu_index : -1;
}

void add_devices(const std::vector<Agent>& agents, Trace& trace) {
  for (const auto& a : agents) {
    if (!a.is_gpu) continue;
    auto same = [&](const DeviceInfo& d) { return d.id == a.gpu_index; };
    if (std::none_of(trace.devices.begin(), trace.devices.end(), same))
      trace.devices.push_back(a.info);
  }
  std::sort(trace.devices.begin(), trace.devices.end(),
            [](const DeviceInfo& x, const DeviceInfo& y) { return x.id < y.id; });
}

// gfx_target_version is major*10000 + minor*100 + stepping (gfx942 → 90402).
void set_gfx_version(int64_t v, DeviceInfo& d) {
  if (v <= 0) return;
  d.compute_major = static_cast<int>(v / 10000);
  d.compute_minor = static_cast<int>(v / 100 % 100);
}

// HSA grid sizes count work-items; Kineto's grid (CUDA's and HIP's launch
// argument) counts blocks. Store blocks so KernelDetail means one thing.
int32_t blocks(int64_t grid_items, int64_t workgroup) {
  if (workgroup <= 0) return static_cast<int32_t>(grid_items);
  return static_cast<int32_t>((grid_items + workgroup - 1) / workgroup);
}

struct GpuRow {
  int64_t start = -1, end = -1;
  Category category = Category::kKernel;
  StringId name = kEmptyString;
  int64_t correlation = kNoValue, external_id = kNoValue;
  int32_t device = -1;
  int64_t stream = kNoValue;
  std::optional<KernelDetail> detail;
};

// Appends one complete GPU event: pid = device, tid = stream, as in Kineto.
void push_row(Trace& t, const GpuRow& r, StringId cat_name) {
  auto& e = t.events;
  e.ts_ns.push_back(r.start);
  e.dur_ns.push_back(r.end - r.start);
  e.name.push_back(r.name);
  e.cat_name.push_back(cat_name);
  e.category.push_back(r.category);
  e.phase.push_back(Phase::kComplete);
  e.pid.push_back(r.device);
  e.tid.push_back(r.stream);
  e.correlation.push_back(r.correlation);
  e.external_id.push_back(r.external_id);
  e.device.push_back(r.device);
  e.stream.push_back(r.stream);
  uint32_t detail = kNoDetail;
  if (r.detail) {
    detail = static_cast<uint32_t>(e.kernel_details.size());
    e.kernel_details.push_back(*r.detail);
  }
  e.detail.push_back(detail);
}

void warn_dropped(Trace& trace) {
  if (trace.stats.malformed_events) {
    trace.warnings.push_back(fmt::format(
        "{} rocprofv3 records had no timestamps or ended before they started and were skipped",
        trace.stats.malformed_events));
  }
}

// ---------------------------------------------------------------------------
// JSON: {"rocprofiler-sdk-tool": [ {agents, kernel_symbols, buffer_records}, ... ]}
// One On-Demand pass; fields are matched by name, so their order does not matter.

int64_t get_int(od::value v) {
  int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
  uint64_t u = 0;  // handles and ids are uint64 in rocprofiler-sdk
  if (auto err = v.get_uint64().get(u)) throw simdjson::simdjson_error(err);
  return static_cast<int64_t>(u);
}

// {"handle": N}; old or hand-written files may give the number directly.
uint64_t get_handle(od::value v) {
  od::json_type type = v.type();
  if (type != od::json_type::object) return static_cast<uint64_t>(get_int(v));
  uint64_t handle = 0;
  for (od::field f : v.get_object())
    if (f.unescaped_key().value() == "handle") handle = static_cast<uint64_t>(get_int(f.value()));
  return handle;
}

std::array<int64_t, 3> get_xyz(od::value v) {
  std::array<int64_t, 3> out{0, 0, 0};
  for (od::field f : v.get_object()) {
    std::string_view k = f.unescaped_key();
    if (k.size() == 1 && k[0] >= 'x' && k[0] <= 'z') out[k[0] - 'x'] = get_int(f.value());
  }
  return out;
}

std::string_view strip_kd(std::string_view s) {
  if (s.size() > 3 && s.substr(s.size() - 3) == ".kd") s.remove_suffix(3);
  return s;
}

struct KernelSymbol {
  std::string_view name;  // views into the parser's string buffer, alive for the document
  int32_t vgprs = -1;
  StringId interned = StringPool::kNotInterned;
};

// Rows of one tool section wait here for names and devices: agents and kernel
// symbols are per process and may in principle come after the records.
struct Section {
  std::vector<Agent> agents;
  std::unordered_map<uint64_t, KernelSymbol> symbols;
  size_t first_row = 0;
  std::vector<std::optional<uint64_t>> kernel_id;    // per row; nullopt for copies
  std::vector<std::pair<uint64_t, uint64_t>> agent;  // per row: preferred, fallback
};

struct JsonContext {
  Trace& trace;
  StringId kernel_cat, memcpy_cat;
  std::map<std::string, size_t> skipped;  // record kind → count
  size_t unknown_kernels = 0, unknown_agents = 0;
};

Agent read_agent(od::object obj) {
  Agent a;
  int64_t type = 0, logical_node_id = -1, type_index = -1, gpu_index = -1;
  std::string_view name, product;
  for (od::field f : obj) {
    std::string_view k = f.unescaped_key();
    od::value v = f.value();
    if (k == "id")
      a.handle = get_handle(v);
    else if (k == "type")
      type = get_int(v);  // 1 = CPU, 2 = GPU
    else if (k == "node_id")
      a.node_id = get_int(v);
    else if (k == "logical_node_id")
      logical_node_id = get_int(v);
    else if (k == "logical_node_type_id")
      type_index = get_int(v);
    else if (k == "gpu_index")
      gpu_index = get_int(v);
    else if (k == "name")
      name = v.get_string();
    else if (k == "product_name")
      product = v.get_string();
    else if (k == "cu_count")
      a.info.num_sms = static_cast<int>(get_int(v));
    else if (k == "wave_front_size")
      a.info.warp_size = static_cast<int>(get_int(v));
    else if (k == "gfx_target_version")
      set_gfx_version(get_int(v), a.info);
    else if (k == "mem_banks") {
      for (od::value bank : v.get_array())
        for (od::field bf : bank.get_object())
          if (bf.unescaped_key().value() == "size_in_bytes")
            a.info.total_global_mem += get_int(bf.value());
    }
  }
  a.is_gpu = type == 2;
  if (logical_node_id >= 0) a.node_id = logical_node_id;
  a.gpu_index = gpu_index >= 0 ? static_cast<int>(gpu_index) : static_cast<int>(type_index);
  a.info.name = std::string(product.empty() ? name : product);
  return a;
}

void read_kernel_symbol(od::object obj, Section& s) {
  uint64_t id = 0;
  std::string_view formatted, demangled, mangled;
  int64_t arch_vgpr = -1, accum_vgpr = 0;
  for (od::field f : obj) {
    std::string_view k = f.unescaped_key();
    od::value v = f.value();
    if (k == "kernel_id")
      id = static_cast<uint64_t>(get_int(v));
    else if (k == "formatted_kernel_name")
      formatted = v.get_string();
    else if (k == "demangled_kernel_name")
      demangled = v.get_string();
    else if (k == "kernel_name")
      mangled = v.get_string();
    else if (k == "arch_vgpr_count")
      arch_vgpr = get_int(v);
    else if (k == "accum_vgpr_count")
      accum_vgpr = get_int(v);
  }
  // formatted = demangled without the ".kd" descriptor suffix: Kineto's names.
  std::string_view name = !formatted.empty()   ? formatted
                          : !demangled.empty() ? strip_kd(demangled)
                                               : strip_kd(mangled);
  s.symbols[id] = {name, arch_vgpr < 0 ? -1 : static_cast<int32_t>(arch_vgpr + accum_vgpr)};
}

// One kernel_dispatch or memory_copy record, before names and devices are known.
struct RawRecord {
  GpuRow row;
  uint64_t kernel_id = 0;
  uint64_t agent = 0;           // dispatch agent; copy destination
  uint64_t fallback_agent = 0;  // copy source (the GPU side of a DtoH copy)
  int64_t operation = 0;
};

void read_correlation(od::value v, GpuRow& row) {
  for (od::field c : v.get_object()) {
    std::string_view k = c.unescaped_key();
    if (k == "internal")
      row.correlation = get_int(c.value());
    else if (k == "external")
      row.external_id = get_int(c.value());
  }
  if (row.external_id == 0) row.external_id = kNoValue;  // 0 means none in rocprofiler-sdk
}

RawRecord read_record(od::object obj, bool is_copy) {
  RawRecord r;
  std::optional<int64_t> stream_id;
  int64_t queue = kNoValue, lds = -1;
  std::array<int64_t, 3> wg{0, 0, 0}, grid{0, 0, 0};
  for (od::field f : obj) {
    std::string_view k = f.unescaped_key();
    od::value v = f.value();
    if (k == "start_timestamp")
      r.row.start = get_int(v);
    else if (k == "end_timestamp")
      r.row.end = get_int(v);
    else if (k == "correlation_id")
      read_correlation(v, r.row);
    else if (k == "operation")
      r.operation = get_int(v);
    else if (k == "stream_id")
      stream_id = static_cast<int64_t>(get_handle(v));
    else if (k == "dst_agent_id")
      r.agent = get_handle(v);
    else if (k == "src_agent_id")
      r.fallback_agent = get_handle(v);
    else if (k == "dispatch_info") {
      for (od::field d : v.get_object()) {
        std::string_view dk = d.unescaped_key();
        od::value dv = d.value();
        if (dk == "agent_id")
          r.agent = r.fallback_agent = get_handle(dv);
        else if (dk == "queue_id")
          queue = static_cast<int64_t>(get_handle(dv));
        else if (dk == "kernel_id")
          r.kernel_id = static_cast<uint64_t>(get_int(dv));
        else if (dk == "group_segment_size")
          lds = get_int(dv);
        else if (dk == "workgroup_size")
          wg = get_xyz(dv);
        else if (dk == "grid_size")
          grid = get_xyz(dv);
      }
    }
  }
  // The HIP stream when rocprofv3 recorded it (ROCm 7), else the HSA queue.
  r.row.stream = stream_id ? *stream_id : queue;
  if (is_copy) {
    r.row.category = Category::kGpuMemcpy;
  } else {
    KernelDetail d;
    for (size_t i = 0; i < 3; ++i) {
      d.block[i] = static_cast<int32_t>(wg[i]);
      d.grid[i] = blocks(grid[i], wg[i]);
    }
    d.shared_memory = static_cast<int32_t>(lds);
    r.row.detail = d;
  }
  return r;
}

void read_records(od::array records, bool is_copy, Section& s, JsonContext& ctx) {
  // MEMORY_COPY operation codes 1..4, named the way Kineto names copies.
  static constexpr std::string_view kCopyNames[] = {"Memcpy", "Memcpy HtoH", "Memcpy HtoD",
                                                    "Memcpy DtoH", "Memcpy DtoD"};
  Trace& t = ctx.trace;
  for (od::value v : records) {
    ++t.stats.events_seen;
    RawRecord r = read_record(v.get_object(), is_copy);
    if (r.row.start < 0 || r.row.end < r.row.start) {
      ++t.stats.malformed_events;
      continue;
    }
    if (is_copy) {
      bool known = r.operation >= 1 && r.operation <= 4;
      r.row.name = t.strings.intern(kCopyNames[known ? r.operation : 0]);
    }
    push_row(t, r.row, is_copy ? ctx.memcpy_cat : ctx.kernel_cat);
    s.kernel_id.push_back(is_copy ? std::nullopt : std::optional<uint64_t>(r.kernel_id));
    s.agent.emplace_back(r.agent, r.fallback_agent);
  }
}

void read_buffer_records(od::object obj, Section& s, JsonContext& ctx) {
  for (od::field f : obj) {
    std::string_view kind = f.unescaped_key();
    od::value v = f.value();
    if (kind == "kernel_dispatch" || kind == "memory_copy") {
      read_records(v.get_array(), kind == "memory_copy", s, ctx);
    } else if (v.type() == od::json_type::array) {
      // hip_api, hsa_api, marker_api, ...: host-side records, counted not kept.
      size_t n = 0;
      for (od::value rec : v.get_array()) {
        (void)rec;
        ++n;
      }
      ctx.trace.stats.events_seen += n;
      if (n) ctx.skipped[std::string(kind)] += n;
    }
  }
}

// Names and devices for the rows of one section, now that its agents and
// kernel symbols are all read.
void resolve_section(Section& s, JsonContext& ctx) {
  assign_gpu_indices(s.agents);
  add_devices(s.agents, ctx.trace);
  std::unordered_map<uint64_t, int> gpu_of;
  for (const auto& a : s.agents)
    if (a.is_gpu) gpu_of[a.handle] = a.gpu_index;
  auto& e = ctx.trace.events;
  for (size_t i = 0; i < s.kernel_id.size(); ++i) {
    const size_t row = s.first_row + i;
    int device = -1;
    if (auto it = gpu_of.find(s.agent[i].first); it != gpu_of.end())
      device = it->second;
    else if (auto it2 = gpu_of.find(s.agent[i].second); it2 != gpu_of.end())
      device = it2->second;
    e.device[row] = device;
    e.pid[row] = device;
    if (!s.kernel_id[i]) continue;  // a copy: named already
    if (device < 0) ++ctx.unknown_agents;
    auto sym = s.symbols.find(*s.kernel_id[i]);
    if (sym == s.symbols.end()) {
      ++ctx.unknown_kernels;
      e.name[row] = ctx.trace.strings.intern(fmt::format("kernel_id {}", *s.kernel_id[i]));
      continue;
    }
    KernelSymbol& k = sym->second;
    if (k.interned == StringPool::kNotInterned) k.interned = ctx.trace.strings.intern(k.name);
    e.name[row] = k.interned;
    e.kernel_details[e.detail[row]].registers_per_thread = k.vgprs;
  }
}

void read_section(od::object obj, JsonContext& ctx) {
  Section s;
  s.first_row = ctx.trace.events.size();
  for (od::field f : obj) {
    std::string_view k = f.unescaped_key();
    od::value v = f.value();
    if (k == "agents") {
      for (od::value a : v.get_array()) s.agents.push_back(read_agent(a.get_object()));
    } else if (k == "kernel_symbols") {
      for (od::value sym : v.get_array()) read_kernel_symbol(sym.get_object(), s);
    } else if (k == "buffer_records") {
      read_buffer_records(v.get_object(), s, ctx);
    }
  }
  resolve_section(s, ctx);
}

constexpr const char* kJsonHint =
    "expected the results file of `rocprofv3 --kernel-trace --output-format json`; "
    "check that it is complete (`python -m json.tool FILE`)";

}  // namespace

bool looks_like_rocprof_json(std::string_view head) {
  return head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos;
}

Trace parse_rocprof_json(const PaddedBuffer& json, const std::string& origin) {
  Trace trace;
  trace.path = origin;
  trace.format = TraceFormat::kRocprofJson;
  trace.stats.raw_bytes = json.size();
  JsonContext ctx{trace, trace.strings.intern("kernel"), trace.strings.intern("gpu_memcpy")};

  od::parser parser;
  od::document doc;
  if (auto err =
          parser.iterate(json.data(), json.size(), json.size() + PaddedBuffer::kPadding).get(doc)) {
    throw Error(ErrorKind::kBadFormat,
                fmt::format("not valid JSON ({})", simdjson::error_message(err)), origin,
                std::nullopt, kJsonHint);
  }
  bool found = false;
  try {
    od::object root = doc.get_object();
    for (od::field f : root) {
      if (f.unescaped_key().value() != "rocprofiler-sdk-tool") continue;
      found = true;
      // One element per profiled process, each with its own agents and symbols.
      for (od::value section : f.value().get_array()) read_section(section.get_object(), ctx);
    }
    // simdjson 3.0 has no document::at_end(); a location left means more text.
    const char* rest = nullptr;
    if (doc.current_location().get(rest) == simdjson::SUCCESS) {
      throw simdjson::simdjson_error(simdjson::TRAILING_CONTENT);
    }
  } catch (const simdjson::simdjson_error& e) {
    if (e.error() == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
      throw Error(ErrorKind::kBadFormat, "the JSON ends inside an object or array: it is truncated",
                  origin, json.size(),
                  "the profiler was killed or the copy interrupted; re-run rocprofv3");
    }
    std::optional<uint64_t> offset;
    const char* at = nullptr;
    if (doc.current_location().get(at) == simdjson::SUCCESS && at >= json.data() &&
        at <= json.data() + json.size()) {
      offset = static_cast<uint64_t>(at - json.data());
    }
    throw Error(ErrorKind::kBadFormat, fmt::format("malformed rocprofv3 JSON ({})", e.what()),
                origin, offset, kJsonHint);
  }
  if (!found) {
    throw Error(ErrorKind::kBadFormat, "no \"rocprofiler-sdk-tool\" key: not a rocprofv3 JSON file",
                origin, std::nullopt, kJsonHint);
  }

  trace.stats.events_kept = trace.events.size();
  for (const auto& [kind, n] : ctx.skipped) {
    trace.warnings.push_back(
        fmt::format("skipped {} rocprofv3 {} records (only kernel_dispatch and memory_copy are "
                    "ingested)",
                    n, kind));
  }
  if (ctx.unknown_kernels) {
    trace.warnings.push_back(fmt::format(
        "{} kernel dispatches name a kernel_id missing from kernel_symbols; they are named "
        "\"kernel_id N\"",
        ctx.unknown_kernels));
  }
  if (ctx.unknown_agents) {
    trace.warnings.push_back(fmt::format(
        "{} kernel dispatches ran on an agent that is not a GPU in `agents`; their device is -1",
        ctx.unknown_agents));
  }
  warn_dropped(trace);
  return trace;
}

// ---------------------------------------------------------------------------
// CSV

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 4180 records: comma-separated fields, optionally double-quoted; a quoted
// field may hold commas, line breaks and doubled quotes (""). Kernel names are
// full of commas ("void f<int, float>(int*, float)"), so splitting on ',' fails.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string label) : text_(text), label_(std::move(label)) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
  }

  // Reads the next record into `fields`; false at the end of the text.
  bool next(std::vector<std::string>& fields) {
    if (pos_ >= text_.size()) return false;
    record_line_ = line_;
    record_pos_ = pos_;
    size_t n = 0;
    for (;;) {
      if (n == fields.size()) fields.emplace_back();
      read_field(fields[n++]);
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      break;
    }
    fields.resize(n);
    if (pos_ < text_.size() && text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
    return true;
  }

  [[noreturn]] void fail(const std::string& message, const char* hint) const {
    throw Error(ErrorKind::kBadFormat, fmt::format("line {}: {}", record_line_, message), label_,
                record_pos_, hint);
  }

 private:
  void read_field(std::string& out) {
    out.clear();
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      size_t end = std::min(text_.find_first_of(",\r\n", pos_), text_.size());
      out.append(text_.substr(pos_, end - pos_));
      pos_ = end;
      return;
    }
    ++pos_;
    for (;;) {
      size_t quote = text_.find('"', pos_);
      if (quote == std::string_view::npos) {
        fail("a quoted field never ends", "the file is truncated or a quote is unbalanced");
      }
      std::string_view part = text_.substr(pos_, quote - pos_);
      line_ += static_cast<size_t>(std::count(part.begin(), part.end(), '\n'));
      out.append(part);
      pos_ = quote + 1;
      if (pos_ < text_.size() && text_[pos_] == '"') {  // "" is a literal quote
        out.push_back('"');
        ++pos_;
        continue;
      }
      break;
    }
    if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\r' && text_[pos_] != '\n') {
      fail("text after a closing quote", "a quote inside a quoted field must be doubled (\"\")");
    }
  }

  std::string_view text_;
  std::string label_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t record_line_ = 1;
  size_t record_pos_ = 0;
};

constexpr const char* kCsvHint =
    "expected a rocprofv3 `*_kernel_trace.csv` (rocprofv3 --kernel-trace --output-format csv)";

class CsvHeader {
 public:
  explicit CsvHeader(const std::vector<std::string>& fields) {
    for (const auto& f : fields) names_.emplace_back(trim(f));
  }
  size_t size() const { return names_.size(); }
  std::optional<size_t> find(std::string_view name) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return i;
    return std::nullopt;
  }
  size_t require(std::string_view name, const CsvReader& reader) const {
    if (auto i = find(name)) return *i;
    reader.fail(fmt::format("missing required column \"{}\"", name), kCsvHint);
  }

 private:
  std::vector<std::string> names_;
};

// Integer cell; "Agent 4" (rocprofv3's Agent_Id) reads as 4.
int64_t cell_int(std::string_view cell, std::string_view column, const CsvReader& reader) {
  std::string_view s = trim(cell);
  if (s.substr(0, 6) == "Agent ") s.remove_prefix(6);
  int64_t v = 0;
  std::from_chars_result res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec == std::errc::result_out_of_range) {
    uint64_t u = 0;  // 64-bit handles
    res = std::from_chars(s.data(), s.data() + s.size(), u);
    v = static_cast<int64_t>(u);
  }
  if (res.ec != std::errc{} || res.ptr != s.data() + s.size()) {
    reader.fail(fmt::format("column {}: \"{}\" is not an integer", column, cell), kCsvHint);
  }
  return v;
}

// Optional column: `fallback` when the column is absent or the cell empty.
struct OptionalCell {
  std::optional<size_t> index;
  std::string_view name;
  int64_t get(const std::vector<std::string>& row, int64_t fallback, const CsvReader& r) const {
    if (!index || trim(row[*index]).empty()) return fallback;
    return cell_int(row[*index], name, r);
  }
};

OptionalCell optional_cell(const CsvHeader& h, std::string_view name,
                           std::string_view alternative = {}) {
  if (auto i = h.find(name)) return {i, name};
  if (!alternative.empty())
    if (auto i = h.find(alternative)) return {i, alternative};
  return {std::nullopt, name};
}

bool is_blank(const std::vector<std::string>& row) {
  return row.size() == 1 && trim(row[0]).empty();
}

void check_width(const std::vector<std::string>& row, const CsvHeader& h, const CsvReader& r) {
  if (row.size() != h.size()) {
    r.fail(fmt::format("{} fields where the header has {}", row.size(), h.size()),
           "a field holding commas must be double-quoted");
  }
}

// `*_agent_info.csv`: one row per agent, CPUs included.
std::vector<Agent> read_agent_info(std::string_view text, const std::string& label) {
  CsvReader r(text, label);
  std::vector<std::string> row;
  std::vector<Agent> agents;
  if (!r.next(row)) return agents;
  const CsvHeader h(row);
  const size_t type = h.require("Agent_Type", r);
  const OptionalCell node = optional_cell(h, "Logical_Node_Id", "Node_Id");
  const OptionalCell type_index = optional_cell(h, "Logical_Node_Type_Id");
  const OptionalCell cus = optional_cell(h, "Cu_Count");
  const OptionalCell gfx = optional_cell(h, "Gfx_Target_Version");
  const OptionalCell wave = optional_cell(h, "Wave_Front_Size");
  const auto name = h.find("Name"), product = h.find("Product_Name");
  if (!node.index) h.require("Node_Id", r);
  while (r.next(row)) {
    if (is_blank(row)) continue;
    check_width(row, h, r);
    Agent a;
    a.is_gpu = trim(row[type]) == "GPU";
    a.node_id = node.get(row, -1, r);
    a.gpu_index = a.is_gpu ? static_cast<int>(type_index.get(row, -1, r)) : -1;
    a.info.num_sms = static_cast<int>(cus.get(row, 0, r));
    a.info.warp_size = static_cast<int>(wave.get(row, 0, r));
    set_gfx_version(gfx.get(row, 0, r), a.info);
    if (product && !trim(row[*product]).empty())
      a.info.name = trim(row[*product]);
    else if (name)
      a.info.name = trim(row[*name]);
    agents.push_back(std::move(a));
  }
  return agents;
}

}  // namespace

bool looks_like_rocprof_csv(std::string_view head) {
  std::string_view first_line = head.substr(0, head.find('\n'));
  return first_line.find("Kernel_Name") != std::string_view::npos &&
         first_line.find("Start_Timestamp") != std::string_view::npos;
}

Trace parse_rocprof_csv(std::string_view csv, const std::string& origin,
                        std::string_view agent_info_csv) {
  Trace trace;
  trace.path = origin;
  trace.format = TraceFormat::kRocprofCsv;
  trace.stats.raw_bytes = csv.size();
  const StringId kernel_cat = trace.strings.intern("kernel");

  CsvReader r(csv, origin);
  std::vector<std::string> row;
  if (!r.next(row)) {
    throw Error(ErrorKind::kBadFormat, "empty file: no CSV header", origin, std::nullopt, kCsvHint);
  }
  const CsvHeader h(row);
  const size_t c_agent = h.require("Agent_Id", r);
  const size_t c_name = h.require("Kernel_Name", r);
  const size_t c_corr = h.require("Correlation_Id", r);
  const size_t c_start = h.require("Start_Timestamp", r);
  const size_t c_end = h.require("End_Timestamp", r);
  const OptionalCell queue = optional_cell(h, "Queue_Id");
  const OptionalCell stream = optional_cell(h, "Stream_Id");
  const OptionalCell lds = optional_cell(h, "LDS_Block_Size", "Group_Segment_Size");
  const OptionalCell vgpr = optional_cell(h, "VGPR_Count", "Arch_VGPR_Count");
  const OptionalCell accum = optional_cell(h, "Accum_VGPR_Count");
  const OptionalCell wg[3] = {optional_cell(h, "Workgroup_Size_X"),
                              optional_cell(h, "Workgroup_Size_Y"),
                              optional_cell(h, "Workgroup_Size_Z")};
  const OptionalCell grid[3] = {optional_cell(h, "Grid_Size_X"), optional_cell(h, "Grid_Size_Y"),
                                optional_cell(h, "Grid_Size_Z")};

  std::vector<int64_t> agent_of_row;  // "Agent N" node ids, mapped to GPUs below
  while (r.next(row)) {
    if (is_blank(row)) continue;
    ++trace.stats.events_seen;
    check_width(row, h, r);
    GpuRow g;
    g.start = cell_int(row[c_start], "Start_Timestamp", r);
    g.end = cell_int(row[c_end], "End_Timestamp", r);
    if (g.end < g.start) {
      ++trace.stats.malformed_events;
      continue;
    }
    g.name = trace.strings.intern(row[c_name]);
    g.correlation = cell_int(row[c_corr], "Correlation_Id", r);
    g.stream = stream.get(row, queue.get(row, kNoValue, r), r);
    KernelDetail d;
    for (size_t i = 0; i < 3; ++i) {
      int64_t block = wg[i].get(row, 0, r);
      d.block[i] = static_cast<int32_t>(block);
      d.grid[i] = blocks(grid[i].get(row, 0, r), block);
    }
    d.shared_memory = static_cast<int32_t>(lds.get(row, -1, r));
    int64_t regs = vgpr.get(row, -1, r);
    d.registers_per_thread = static_cast<int32_t>(regs < 0 ? -1 : regs + accum.get(row, 0, r));
    g.detail = d;
    agent_of_row.push_back(cell_int(row[c_agent], "Agent_Id", r));
    push_row(trace, g, kernel_cat);
  }

  std::map<int64_t, int> gpu_of_node;
  if (!agent_info_csv.empty()) {
    std::vector<Agent> agents = read_agent_info(agent_info_csv, origin + " (agent info)");
    assign_gpu_indices(agents);
    add_devices(agents, trace);
    for (const auto& a : agents)
      if (a.is_gpu) gpu_of_node[a.node_id] = a.gpu_index;
  } else if (!agent_of_row.empty()) {
    for (int64_t node : agent_of_row) gpu_of_node.emplace(node, 0);
    int next = 0;
    for (auto& [node, index] : gpu_of_node) index = next++;
    trace.warnings.push_back(
        "no agent_info.csv: GPUs are numbered by the order of their agent ids in the kernel trace");
  }
  size_t unknown = 0;
  for (size_t i = 0; i < agent_of_row.size(); ++i) {
    auto it = gpu_of_node.find(agent_of_row[i]);
    int device = it == gpu_of_node.end() ? -1 : it->second;
    unknown += device < 0;
    trace.events.device[i] = device;
    trace.events.pid[i] = device;
  }
  if (unknown) {
    trace.warnings.push_back(fmt::format(
        "{} kernel dispatches ran on an agent that agent_info.csv does not list as a GPU",
        unknown));
  }
  trace.stats.events_kept = trace.events.size();
  warn_dropped(trace);
  return trace;
}

}  // namespace magpie::trace
