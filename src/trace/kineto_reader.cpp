#include "trace/kineto_reader.hpp"

#include <simdjson.h>

#include <charconv>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <limits>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/phase_times.hpp"
#include "trace/json_chunker.hpp"
#include "trace/kineto_chunks.hpp"
#include "trace/kineto_metadata.hpp"
#include "trace/open_addressing.hpp"
#include "trace/utf8_repair.hpp"

namespace magpie::trace {

namespace od = simdjson::ondemand;

namespace {
constexpr int64_t kMaxAbsTimeNs = 4'000'000'000'000'000'000;  // see parse_us_to_ns
}  // namespace

namespace {
bool is_trimmed(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == '"'; }

// Every form parse_us_to_ns takes: sign, quotes, exponents, overflow.
bool parse_us_to_ns_general(std::string_view t, int64_t& out) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' ||
                        t.back() == '\t' || t.back() == ',' || t.back() == '"'))
    t.remove_suffix(1);
  if (!t.empty() && t.front() == '"') t.remove_prefix(1);
  if (t.empty()) return false;
  bool neg = t.front() == '-';
  size_t i = neg ? 1 : 0;
  int64_t whole = 0;
  size_t digits = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    if (whole > (INT64_MAX - 9) / 10) return false;
    whole = whole * 10 + (t[i] - '0');
  }
  int64_t frac_ns = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    int scale = 100;
    int round_digit = -1;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
      if (scale >= 1) {
        frac_ns += (t[i] - '0') * scale;
        scale /= 10;
      } else if (round_digit < 0) {
        round_digit = t[i] - '0';
      }
    }
    if (round_digit >= 5) ++frac_ns;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    double d = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
    if (ec != std::errc{} || !std::isfinite(d) || std::abs(d * 1000.0) > static_cast<double>(kMaxAbsTimeNs))
      return false;
    out = static_cast<int64_t>(std::llround(d * 1000.0));
    return true;
  }
  if (digits == 0 || i != t.size()) return false;
  if (whole > kMaxAbsTimeNs / 1000) return false;
  int64_t v = whole * 1000 + frac_ns;
  out = neg ? -v : v;
  return true;
}
}  // namespace

// The form Kineto writes (unsigned, at most 15 integer digits, a fraction) in
// one pass; anything else, as written, by the general parser. Both give the
// same value for every text the fast path takes.
bool parse_us_to_ns(std::string_view t, int64_t& out) {
  const char* p = t.data();
  const char* const e = p + t.size();
  if (p == e || static_cast<unsigned>(*p - '0') > 9) return parse_us_to_ns_general(t, out);
  int64_t whole = 0;
  const char* const start = p;
  for (; p < e && static_cast<unsigned>(*p - '0') <= 9; ++p) {
    if (p - start == 15) return parse_us_to_ns_general(t, out);  // a 16th digit: before it can overflow
    whole = whole * 10 + (*p - '0');
  }
  int64_t frac_ns = 0;
  if (p < e && *p == '.') {
    ++p;
    int64_t scale = 100;
    for (; p < e && static_cast<unsigned>(*p - '0') <= 9; ++p) {
      if (scale > 0) {
        frac_ns += (*p - '0') * scale;
        scale /= 10;
      } else if (scale == 0) {
        if (*p >= '5') ++frac_ns;  // the first dropped digit rounds
        scale = -1;
      }
    }
  }
  for (; p < e; ++p)
    if (!is_trimmed(*p)) return parse_us_to_ns_general(t, out);
  out = whole * 1000 + frac_ns;
  return true;
}

namespace {

// Integer token; values outside int64 (e.g. NCCL "Comms Id") read as "absent".
int64_t parse_int_token(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range) {
    // Ids above int64 (uint64 correlation or flow ids) keep their bits: they
    // are only compared for equality.
    uint64_t u = 0;
    auto [pu, ecu] = std::from_chars(t.data(), t.data() + t.size(), u);
    if (ecu != std::errc{}) return kNoValue;
    v = static_cast<int64_t>(u);
    p = pu;
    ec = std::errc{};
  }
  if (ec != std::errc{}) return kNoValue;
  if (p != t.data() + t.size()) {
    // "12.0": keep the integer part of a float-typed integer.
    if (*p != '.') return kNoValue;
  }
  return v;
}

int64_t value_to_int(od::value v) {
  std::string_view tok;
  tok = v.raw_json_token();
  if (!tok.empty() && tok.front() == '"') {
    std::string_view s;
    if (v.get_string().get(s)) return kNoValue;
    return parse_int_token(s);
  }
  return parse_int_token(tok);
}

// The key as written. Kineto keys never contain escapes, so the raw text is
// the key and we skip unescape's copy; a key with a backslash takes the slow path.
// The closing quote is found 8 bytes at a time (SWAR): every parse buffer has
// simdjson's padding after the text, so reading past the key stays inside it.
simdjson::error_code field_key(od::field& field, std::string_view& key) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const char* p = field.key().raw();
  for (size_t i = 0;; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    const uint64_t quote = w ^ (kOnes * '"'), slash = w ^ (kOnes * '\\');
    // A byte is 0x80 where it was '"' or '\\'; borrows only make bits above the
    // lowest hit, so the lowest is exact.
    const uint64_t hit = ((quote - kOnes) & ~quote & kHighs) | ((slash - kOnes) & ~slash & kHighs);
    if (hit == 0) continue;
    const size_t at = i + static_cast<size_t>(__builtin_ctzll(hit) >> 3);
    if (p[at] != '"') break;
    key = std::string_view(p, at);
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(key);
}

// Key comparison against a literal that inlines to a few integer compares.
template <size_t N>
inline bool key_is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

// A string value without copying it when it has no escapes (the common case:
// kernel names are long, and unescaping copies them). Escaped strings are
// unescaped into the parser's buffer as usual.
simdjson::error_code string_value(od::value v, std::string_view& out) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty() || tok.front() != '"') return v.get_string().get(out);
  size_t end = tok.find_last_of('"');
  std::string_view body = tok.substr(1, end == 0 ? 0 : end - 1);
  if (end == 0 || body.find('\\') != std::string_view::npos) return v.get_string().get(out);
  out = body;
  return simdjson::SUCCESS;
}

// Everything one event contributes, as views into the parser's buffers.
struct RawEvent {
  std::string_view ph, cat, name, pid_str, tid_str, ts_tok, dur_tok;
  int64_t pid = 0, tid = 0, id = kNoValue;  // a missing pid/tid reads as 0
  bool pid_is_text = false, tid_is_text = false;
  // args
  int64_t correlation = kNoValue, external_id = kNoValue, device = kNoValue, stream = kNoValue;
  KernelDetail kernel;
  std::string_view kernel_name, collective, input_dims, input_type, concrete_inputs, input_strides, meta_name;
  std::string_view coll_dtype, coll_group;
  int64_t in_nelems = kNoValue, out_nelems = kNoValue, group_size = kNoValue;
  bool has_kernel_detail = false;
  bool has_collective = false;
};


void read_triple(od::value v, std::array<int32_t, 3>& out, bool& seen) {
  od::array arr;
  if (v.get_array().get(arr)) return;
  size_t i = 0;
  for (auto x : arr) {
    od::value xv;
    if (x.get(xv)) return;
    if (i < 3) out[i] = static_cast<int32_t>(value_to_int(xv));
    ++i;
  }
  seen = true;
}

// Raw text of an array value ("[[1, 2], []]"); empty when it is not an array.
std::string_view raw_array(od::value v) {
  od::array arr;
  std::string_view raw;
  if (v.get_array().get(arr) || arr.raw_json().get(raw)) return {};
  return raw;
}

simdjson::error_code read_args(od::object args, RawEvent& ev) {
  for (auto field_result : args) {
    // Used in place: copying the field out (get()) stored it in parts and
    // reloaded it whole, a store-forwarding stall that took a quarter of the walk.
    if (auto err = field_result.error()) return err;
    od::field& field = field_result.value_unsafe();
    std::string_view key;
    if (auto err = field_key(field, key)) return err;
    od::value v = field.value();
    // By length first: most keys of an args object (queued, context, blocks per
    // SM, Ev Idx, ...) are not read at all and are told apart in one compare.
    switch (key.size()) {
      case 4:
        if (key_is(key, "grid")) {
          read_triple(v, ev.kernel.grid, ev.has_kernel_detail);
        } else if (key_is(key, "name")) {
          if (v.get_string().get(ev.meta_name)) ev.meta_name = {};
        }
        break;
      case 5:
        if (key_is(key, "block")) {
          read_triple(v, ev.kernel.block, ev.has_kernel_detail);
        } else if (key_is(key, "dtype")) {
          if (v.get_string().get(ev.coll_dtype)) ev.coll_dtype = {};
        }
        break;
      case 6:
        if (key_is(key, "device")) {
          ev.device = value_to_int(v);
        } else if (key_is(key, "stream")) {
          ev.stream = value_to_int(v);
        } else if (key_is(key, "kernel")) {
          if (!string_value(v, ev.kernel_name)) ev.has_kernel_detail = true;
        }
        break;
      case 10:
        if (key_is(key, "Input Dims")) {
          ev.input_dims = raw_array(v);
        } else if (key_is(key, "Input type")) {
          ev.input_type = raw_array(v);
        } else if (key_is(key, "Group size")) {
          ev.group_size = value_to_int(v);
          ev.has_collective = true;
        }
        break;
      case 11:
        if (key_is(key, "correlation")) {
          ev.correlation = value_to_int(v);
        } else if (key_is(key, "External id")) {
          ev.external_id = value_to_int(v);
        }
        break;
      case 13:
        if (key_is(key, "Input Strides")) {
          ev.input_strides = raw_array(v);
        } else if (key_is(key, "shared memory")) {
          ev.kernel.shared_memory = static_cast<int32_t>(value_to_int(v));
          ev.has_kernel_detail = true;
        } else if (key_is(key, "graph node id") || key_is(key, "Graph node id") || key_is(key, "graph_node_id")) {
          ev.kernel.graph_node_id = value_to_int(v);
          ev.has_kernel_detail = ev.kernel.graph_node_id >= 0 || ev.has_kernel_detail;
        } else if (key_is(key, "In msg nelems")) {
          ev.in_nelems = value_to_int(v);
          ev.has_collective = true;
        }
        break;
      case 14:
        if (key_is(key, "Out msg nelems")) {
          ev.out_nelems = value_to_int(v);
          ev.has_collective = true;
        }
        break;
      case 15:
        if (key_is(key, "Concrete Inputs")) {
          ev.concrete_inputs = raw_array(v);
        } else if (key_is(key, "Collective name")) {
          if (!v.get_string().get(ev.collective)) ev.has_kernel_detail = ev.has_collective = true;
        }
        break;
      case 18:
        if (key_is(key, "Process Group Name")) {
          if (v.get_string().get(ev.coll_group)) ev.coll_group = {};
        }
        break;
      case 20:
        if (key_is(key, "registers per thread")) {
          ev.kernel.registers_per_thread = static_cast<int32_t>(value_to_int(v));
          ev.has_kernel_detail = true;
        }
        break;
      default:
        break;
    }
  }
  return simdjson::SUCCESS;
}

// Kineto writes pids and tids as any JSON integer (negative tids are common:
// HTA's test traces), integers beyond int64, or strings ("Spans"). Only
// non-negative int64 values are kept as numbers; everything else is kept as
// its text and interned, so the negative range of the column stays reserved
// for encoded string ids (EventTable::pid).
simdjson::error_code read_pid_tid(od::value v, int64_t& num, std::string_view& str, bool& is_text) {
  od::json_type type;
  if (auto err = v.type().get(type)) return err;
  if (type == od::json_type::string) {
    is_text = true;
    return v.get_string().get(str);
  }
  std::string_view tok = v.raw_json_token();
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t'))
    tok.remove_suffix(1);
  int64_t parsed = 0;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), parsed);
  if (ec == std::errc{} && p == tok.data() + tok.size() && parsed >= 0) {
    num = parsed;
  } else {
    str = tok;  // negative, beyond int64, fractional, or not a number at all
    is_text = true;
  }
  return simdjson::SUCCESS;
}

// Returns false when the event is to be skipped (python_function not wanted).
simdjson::error_code read_event(od::object obj, bool include_python, RawEvent& ev, bool& keep) {
  keep = true;
  for (auto field_result : obj) {
    // Used in place: copying the field out (get()) stored it in parts and
    // reloaded it whole, a store-forwarding stall that took a quarter of the walk.
    if (auto err = field_result.error()) return err;
    od::field& field = field_result.value_unsafe();
    std::string_view key;
    if (auto err = field_key(field, key)) return err;
    od::value v = field.value();
    switch (key.size()) {
      case 2:
        if (key_is(key, "ph")) {
          if (auto err = string_value(v, ev.ph)) return err;
        } else if (key_is(key, "ts")) {
          ev.ts_tok = v.raw_json_token();
        } else if (key_is(key, "id")) {
          ev.id = value_to_int(v);
        }
        break;
      case 3:
        if (key_is(key, "cat")) {
          if (auto err = string_value(v, ev.cat)) return err;
          if (!include_python && ev.cat == "python_function") {
            keep = false;
            return simdjson::SUCCESS;  // the array iterator skips the rest of this object
          }
        } else if (key_is(key, "dur")) {
          ev.dur_tok = v.raw_json_token();
        } else if (key_is(key, "pid")) {
          if (auto err = read_pid_tid(v, ev.pid, ev.pid_str, ev.pid_is_text)) return err;
        } else if (key_is(key, "tid")) {
          if (auto err = read_pid_tid(v, ev.tid, ev.tid_str, ev.tid_is_text)) return err;
        }
        break;
      case 4:
        if (key_is(key, "name")) {
          if (string_value(v, ev.name)) ev.name = v.raw_json_token();
        } else if (key_is(key, "args")) {
          od::object args;
          if (v.get_object().get(args) == simdjson::SUCCESS) {
            if (auto err = read_args(args, ev)) return err;
          }
        }
        break;
      default:
        break;
    }
  }
  return simdjson::SUCCESS;
}

Phase phase_of(std::string_view ph) {
  if (ph.empty()) return Phase::kComplete;
  switch (ph[0]) {
    case 'X': return Phase::kComplete;
    case 'i':
    case 'I': return Phase::kInstant;
    case 'C': return Phase::kCounter;
    case 's': return Phase::kFlowStart;
    case 't': return Phase::kFlowStep;
    case 'f': return Phase::kFlowEnd;
    default: return Phase::kOther;
  }
}

// The device of GPU work: args.device, else the pid (Kineto's GPU rows use the
// device index as pid); 0 when neither is a plausible index.
int32_t gpu_device(int64_t device_arg, int64_t pid) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (device_arg >= 0 && device_arg <= kMax) return static_cast<int32_t>(device_arg);
  if (pid >= 0 && pid <= kMax) return static_cast<int32_t>(pid);
  return 0;
}

// A pid/tid column value: the number itself (never negative), or an encoded
// string id (always negative) for everything read as text.
int64_t thread_key(bool is_text, int64_t num, std::string_view text, StringPool& strings) {
  return is_text ? encode_string_id(strings.intern(text)) : num;
}

// The op's argument set, through the chunk's cache of argument texts. The
// four arrays are views into one event's text; their stretch and layout key
// the cache (an event whose arrays lie far apart skips it).
uint32_t op_detail_of(const RawEvent& ev, ChunkOutput& out) {
  const std::string_view parts[4] = {ev.input_dims, ev.input_type, ev.concrete_inputs, ev.input_strides};
  const char* begin = nullptr;
  const char* end = nullptr;
  for (std::string_view p : parts) {
    if (p.empty()) continue;
    if (!begin || p.data() < begin) begin = p.data();
    if (!end || p.data() + p.size() > end) end = p.data() + p.size();
  }
  const auto intern_all = [&] {
    return out.op_index.add(out.events, {out.strings.intern(ev.input_dims), out.strings.intern(ev.input_type),
                                         out.strings.intern(ev.concrete_inputs),
                                         out.strings.intern(ev.input_strides)});
  };
  if (!begin || end - begin >= ArgsTextCache::kAbsent) return intern_all();
  ArgsTextCache::Layout layout;
  for (size_t i = 0; i < 4; ++i) {
    layout[2 * i] = parts[i].empty() ? ArgsTextCache::kAbsent : static_cast<uint16_t>(parts[i].data() - begin);
    layout[2 * i + 1] = static_cast<uint16_t>(parts[i].size());
  }
  const std::string_view text(begin, static_cast<size_t>(end - begin));
  uint64_t hash = 0;
  uint32_t row = out.args_text.find(text, layout, hash);
  if (row == ArgsTextCache::kMiss) {
    row = intern_all();
    out.args_text.add(text, layout, hash, row);
  }
  return row;
}

void commit_event(const RawEvent& ev, ChunkOutput& out) {
  auto& t = out.events;
  if (!ev.ph.empty() && ev.ph[0] == 'M') {
    ++out.stats.metadata_events;
    out.names.add(ev.name, thread_key(ev.pid_is_text, ev.pid, ev.pid_str, out.strings),
                  thread_key(ev.tid_is_text, ev.tid, ev.tid_str, out.strings), ev.meta_name);
    return;
  }
  int64_t ts = 0;
  if (ev.ts_tok.empty() || !parse_us_to_ns(ev.ts_tok, ts)) {
    ++out.stats.malformed_events;  // an event without a time cannot be placed
    return;
  }
  int64_t pid = thread_key(ev.pid_is_text, ev.pid, ev.pid_str, out.strings);
  int64_t tid = thread_key(ev.tid_is_text, ev.tid, ev.tid_str, out.strings);
  Phase phase = ev.ph.empty() ? (ev.dur_tok.empty() ? Phase::kInstant : Phase::kComplete)
                              : phase_of(ev.ph);
  if (phase == Phase::kFlowStart || phase == Phase::kFlowStep || phase == Phase::kFlowEnd) {
    out.flows.push_back({ev.id, ts, pid, tid, phase});
    return;
  }
  if (phase == Phase::kCounter) return;
  int64_t dur = 0;
  if (!ev.dur_tok.empty() && !parse_us_to_ns(ev.dur_tok, dur)) dur = 0;
  Category cat = category_from_string(ev.cat);
  if (ev.has_collective) {
    CollectiveArgs c;
    c.row = static_cast<uint32_t>(t.ts_ns.size());
    c.name = out.strings.intern(ev.collective);
    c.dtype = out.strings.intern(ev.coll_dtype);
    c.group = out.strings.intern(ev.coll_group);
    c.in_nelems = ev.in_nelems;
    c.out_nelems = ev.out_nelems;
    c.group_size = ev.group_size >= 0 && ev.group_size <= INT32_MAX ? static_cast<int32_t>(ev.group_size) : -1;
    t.collectives.push_back(c);
  }
  t.ts_ns.push_back(ts);
  t.dur_ns.push_back(dur < 0 ? 0 : dur);
  t.name.push_back(out.strings.intern(ev.name));
  t.cat_name.push_back(out.strings.intern(ev.cat));
  t.category.push_back(cat);
  t.phase.push_back(phase);
  t.pid.push_back(pid);
  t.tid.push_back(tid);
  t.correlation.push_back(ev.correlation);
  t.external_id.push_back(ev.external_id);
  bool gpu = is_gpu_activity(cat);
  t.device.push_back(gpu ? gpu_device(ev.device, pid) : -1);
  t.stream.push_back(gpu ? (ev.stream != kNoValue ? ev.stream : tid) : -1);
  uint32_t detail = kNoDetail;
  if ((gpu || is_launch_api(cat)) && ev.has_kernel_detail) {
    KernelDetail k = ev.kernel;
    k.kernel = out.strings.intern(ev.kernel_name);
    k.collective = out.strings.intern(ev.collective);
    detail = static_cast<uint32_t>(t.kernel_details.size());
    t.kernel_details.push_back(k);
  } else if (!gpu && !is_launch_api(cat) &&
             !(ev.input_dims.empty() && ev.input_type.empty() && ev.concrete_inputs.empty())) {
    detail = op_detail_of(ev, out);
  }
  t.detail.push_back(detail);
}

}  // namespace

uint32_t ArgsTextCache::find(std::string_view text, const Layout& layout, uint64_t& hash) const {
  uint64_t h = StringViewHash{}(text);
  for (uint16_t v : layout) h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  hash = h ^ (h >> 32);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask; slots_[i].row != kMiss; i = (i + 1) & mask) {
    const Entry& e = slots_[i];
    if (e.hash == hash && e.layout == layout && std::string_view(text_.data() + e.text_at, e.text_len) == text)
      return e.row;
  }
  return kMiss;
}

void ArgsTextCache::add(std::string_view text, const Layout& layout, uint64_t hash, uint32_t row) {
  if ((used_ + 1) * 2 > slots_.size()) {
    grow_open_addressing(
        slots_, [](const Entry& e) { return e.row == kMiss; }, [](const Entry& e) { return e.hash; });
  }
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].row != kMiss) i = (i + 1) & mask;
  slots_[i] = {hash, row, static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(text.size()), layout};
  text_.append(text);
  ++used_;
}

// Parses `[` + region + `]` from a private padded copy.
void parse_chunk(std::string_view region, bool include_python, ChunkOutput& out,
                 const std::function<void()>& copied) {
  thread_local od::parser parser;
  thread_local std::vector<char> scratch;
  const size_t len = region.size() + 2;
  scratch.resize(len + simdjson::SIMDJSON_PADDING);
  scratch[0] = '[';
  std::memcpy(scratch.data() + 1, region.data(), region.size());
  scratch[len - 1] = ']';
  std::memset(scratch.data() + len, 0, simdjson::SIMDJSON_PADDING);
  if (copied) copied();
  auto fail = [&](simdjson::error_code err, od::document& doc) {
    out.failed = true;
    out.error = simdjson::error_message(err);
    const char* loc = nullptr;
    if (doc.current_location().get(loc) == simdjson::SUCCESS && loc >= scratch.data() + 1) {
      out.error_offset = std::min<size_t>(static_cast<size_t>(loc - scratch.data() - 1), region.size());
    }
  };
  od::document doc;
  auto iterate_error = parser.iterate(scratch.data(), len, scratch.size()).get(doc);
  if (iterate_error == simdjson::UTF8_ERROR) {
    // Stage 1 validates UTF-8 for us; only a failing chunk pays for repair.
    repair_utf8(scratch.data(), len);  // names with invalid bytes become '?': keep the event
    ++out.stats.invalid_utf8_chunks;
    iterate_error = parser.iterate(scratch.data(), len, scratch.size()).get(doc);
  }
  if (iterate_error) {
    out.failed = true;
    out.error = simdjson::error_message(iterate_error);
    return;
  }
  od::array arr;
  if (auto err = doc.get_array().get(arr)) return fail(err, doc);
  // Kineto events average ~330 bytes here; reserving for more than fit costs
  // address space only (untouched pages), while growing by doubling copies and
  // leaves the old blocks resident.
  out.events.reserve(region.size() / 200);
  for (auto element : arr) {
    od::object obj;
    if (auto err = element.get_object().get(obj)) {
      if (err == simdjson::INCORRECT_TYPE) {
        ++out.stats.events_seen;
        ++out.stats.malformed_events;
        ++out.stats.non_object_events;
        continue;
      }
      return fail(err, doc);
    }
    ++out.stats.events_seen;
    RawEvent ev;
    bool keep = true;
    if (auto err = read_event(obj, include_python, ev, keep)) return fail(err, doc);
    if (!keep) {
      ++out.stats.python_function_skipped;
      continue;
    }
    commit_event(ev, out);
  }
  const char* rest = nullptr;
  if (doc.current_location().get(rest) == simdjson::SUCCESS) {
    out.failed = true;
    out.error = "unexpected content after an event";
    out.error_offset = region.size();
  }
}

namespace {

std::vector<ChunkOutput> parse_plan(std::string_view text, const ChunkPlan& plan,
                                    const IngestOptions& options) {
  std::vector<ChunkOutput> outputs(plan.chunks.size());
  unsigned threads = options.threads ? options.threads : default_thread_count();
  parallel_for(plan.chunks.size(), threads, [&](size_t i) {
    auto [b, e] = plan.chunks[i];
    parse_chunk(text.substr(b, e - b), options.include_python_functions, outputs[i]);
  });
  return outputs;
}

const ChunkOutput* first_failure(const std::vector<ChunkOutput>& outputs) {
  for (const auto& o : outputs)
    if (o.failed) return &o;
  return nullptr;
}

}  // namespace

namespace {

// `owned`, when given, is `buffer` itself: released once the chunks are parsed
// so that the JSON text and the merged tables are never in memory together.
Trace parse_kineto_impl(const PaddedBuffer& buffer, PaddedBuffer* owned, const std::string& origin,
                        const IngestOptions& options) {
  std::string_view text = buffer.view();
  EventArrayLocation where;
  if (!locate_event_array(text, where)) {
    throw Error(ErrorKind::kBadFormat, "not a PyTorch profiler trace: no \"traceEvents\" array",
                origin, std::nullopt,
                "export traces with torch.profiler (prof.export_chrome_trace or "
                "tensorboard_trace_handler), or pass a rocprofv3 JSON/CSV");
  }
  ChunkPlan plan = plan_chunks_fast(text, where.open, options.chunk_bytes);
  std::vector<ChunkOutput> outputs;
  if (plan.closed) outputs = parse_plan(text, plan, options);
  return finish_kineto(text, where, std::move(plan), std::move(outputs), owned, origin, options);
}

}  // namespace

Trace finish_kineto(std::string_view text, const EventArrayLocation& where, ChunkPlan plan,
                    std::vector<ChunkOutput> outputs, PaddedBuffer* owned, const std::string& origin,
                    const IngestOptions& options) {
  if (!plan.closed || first_failure(outputs)) {
    // A fast cut landed inside a string or nested value, or the JSON is bad:
    // redo with exact boundaries; a failure now is a real error to report.
    plan = plan_chunks_exact(text, where.open, options.chunk_bytes);
    if (!plan.closed) {
      throw Error(ErrorKind::kBadFormat, "the traceEvents array never ends: the file is truncated",
                  origin, plan.scan_stopped_at,
                  "the trace was cut short (profiler killed, or copy interrupted); re-export it");
    }
    outputs = parse_plan(text, plan, options);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].failed) {
        throw Error(ErrorKind::kBadFormat, "malformed JSON in traceEvents (" + outputs[i].error + ")",
                    origin, plan.chunks[i].first + outputs[i].error_offset,
                    "the event near this offset is not valid JSON; check the file with "
                    "`python -m json.tool`");
      }
    }
  }

  Trace top = read_top_level(text, where, plan.close, origin);
  // The JSON text and the merged tables are never in memory together.
  if (owned) *owned = PaddedBuffer{};
  ChunkMerge merged;
  size_t total = 0;
  for (const auto& o : outputs) total += o.events.size();
  merged.reserve(total);
  for (auto& o : outputs) merged.add(std::move(o));
  outputs.clear();
  return assemble_kineto(std::move(top), std::move(merged), where);
}

Trace read_top_level(std::string_view text, const EventArrayLocation& where, size_t close,
                     const std::string& origin) {
  Trace top;
  top.path = origin;
  top.format = TraceFormat::kKineto;
  top.stats.raw_bytes = text.size();
  read_kineto_top_level(text, where, close, origin, top);
  return top;
}

void ChunkMerge::reserve(size_t rows) { trace_.events.reserve(rows); }

void ChunkMerge::add(ChunkOutput&& o) {
  std::vector<StringId> remap(o.strings.size());
  for (StringId id = 0; id < o.strings.size(); ++id)
    remap[id] = trace_.strings.intern(o.strings.view(id), o.strings.hash_of(id));
  trace_.events.append(o.events, remap, &op_index_);
  for (FlowEvent f : o.flows) {
    f.pid = remap_thread_key(f.pid, remap);
    f.tid = remap_thread_key(f.tid, remap);
    trace_.flows.push_back(f);
  }
  names_.merge(o.names, remap);
  auto& s = trace_.stats;
  s.events_seen += o.stats.events_seen;
  s.python_function_skipped += o.stats.python_function_skipped;
  s.metadata_events += o.stats.metadata_events;
  s.malformed_events += o.stats.malformed_events;
  s.non_object_events += o.stats.non_object_events;
  s.invalid_utf8_chunks += o.stats.invalid_utf8_chunks;
  o = ChunkOutput{};  // the chunk's memory goes back for the next chunks
}

Trace assemble_kineto(Trace top, ChunkMerge&& merged, const EventArrayLocation& where) {
  Trace trace = std::move(top);
  const std::string& origin = trace.path;
  const size_t raw_bytes = trace.stats.raw_bytes;
  trace.strings = std::move(merged.trace_.strings);
  trace.events = std::move(merged.trace_.events);
  trace.flows = std::move(merged.trace_.flows);
  trace.stats = merged.trace_.stats;
  trace.stats.raw_bytes = raw_bytes;
  KinetoNames names = std::move(merged.names_);
  merged = ChunkMerge{};
#ifdef __GLIBC__
  // The chunk tables were many small blocks in the parser threads' arenas:
  // hand what they left back to the kernel.
  malloc_trim(0);
#endif
  trace.stats.events_kept = trace.events.size();
  index_op_arguments(trace.events, trace.strings);
  // A JSON array with no object in it (HTA's memory_timeline.raw is
  // [[ts, action, bytes, device], ...]) is some other file, not an empty trace.
  // Objects without ts (TraceLens' execution_details.json beside vLLM capture
  // traces) stay an empty trace, as before, so a folder holding one still runs.
  if (trace.stats.events_seen > 0 && trace.stats.non_object_events == trace.stats.events_seen) {
    throw Error(ErrorKind::kBadFormat,
                "not a PyTorch profiler trace: none of the " + std::to_string(trace.stats.events_seen) +
                    " elements of the event array is an object",
                origin, where.open,
                "export traces with torch.profiler (prof.export_chrome_trace or "
                "tensorboard_trace_handler), or pass a rocprofv3 JSON/CSV");
  }
  names.apply(trace);
  magpie_phase::mark("op args indexed");
  if (trace.stats.invalid_utf8_chunks) {
    trace.warnings.push_back(
        "invalid UTF-8 in event text: the bad bytes were replaced by '?' so the events are kept");
  }
  if (trace.stats.malformed_events) {
    trace.warnings.push_back(std::to_string(trace.stats.malformed_events) +
                             " trace events had no timestamp or were not objects and were skipped");
  }
  return trace;
}

Trace parse_kineto(const PaddedBuffer& doc, const std::string& origin, const IngestOptions& options) {
  return parse_kineto_impl(doc, nullptr, origin, options);
}

Trace parse_kineto(PaddedBuffer&& doc, const std::string& origin, const IngestOptions& options) {
  return parse_kineto_impl(doc, &doc, origin, options);
}

}  // namespace magpie::trace
