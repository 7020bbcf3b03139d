// libFuzzer target for trace ingest and the analyses on it (trace_fuzz_target.cpp).
//
// A structure-aware mutator: an input that is a JSON trace (plain or gzip) is
// parsed, one to three edits are made to values inside valid events (ids and
// correlation, ph phases, ts/dur timestamps, nesting and overlap, pid/tid,
// op and kernel args, collective args, flow pairs, metadata, distributedInfo,
// deviceProperties), and it is written back as JSON (gzip again when it came
// gzipped). Byte-level mutation still runs: for one call in four, and for
// any input that is not a JSON trace. Crossover splices events of one trace
// into another. Byte-level bugs (truncation, bad UTF-8, escapes) come from
// the default mutator; logic bugs deep in the analyses need inputs that stay
// valid JSON, which random byte flips almost never produce.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/gzip.hpp"
#include "trace_fuzz_target.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using json = nlohmann::ordered_json;
using Rng = std::mt19937_64;

// Deeper than any real trace; nlohmann's dump recurses, so deep nests are
// left to the byte-level mutator.
constexpr int kMaxDepth = 48;

bool shallow(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

struct Doc {
  json doc;
  bool gzipped = false;
};

std::optional<Doc> parse(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Doc d;
  std::string text;
  if (magpie::is_gzip(bytes)) {
    try {
      magpie::PaddedBuffer plain = magpie::gunzip(bytes, "fuzz.json.gz");
      text.assign(plain.view());
    } catch (const magpie::Error&) {
      return std::nullopt;
    }
    d.gzipped = true;
  } else {
    text.assign(bytes);
  }
  if (!shallow(text)) return std::nullopt;
  d.doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (d.doc.is_discarded()) return std::nullopt;
  const bool trace = (d.doc.is_object() && d.doc.contains("traceEvents") && d.doc["traceEvents"].is_array()) ||
                     d.doc.is_array();
  if (!trace) return std::nullopt;
  return d;
}

std::string gzip(const std::string& text) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&zs, text.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

size_t emit(const Doc& d, uint8_t* data, size_t max_size) {
  std::string text = d.doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (d.gzipped) text = gzip(text);
  if (text.empty() || text.size() > max_size) return 0;
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

json& events_of(json& doc) { return doc.is_array() ? doc : doc["traceEvents"]; }

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& options) {
  return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
}

size_t below(Rng& rng, size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0; }
bool coin(Rng& rng, int one_in) { return below(rng, static_cast<size_t>(one_in)) == 0; }

// Values Kineto writes, and the edges of what it could write.
const std::vector<std::string> kPhases = {"X", "X", "X", "B", "E", "i", "I", "s", "f", "t", "M", "C", "b", "e", "", "XX"};
const std::vector<std::string> kCategories = {
    "kernel", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cpu_op", "cpu_op",
    "user_annotation", "gpu_user_annotation", "python_function", "ac2g", "fwdbwd", "Trace",
    "cpu_instant_event", "cuda_profiler_range", "Kernel", "gpu", "Memcpy", "Runtime", ""};
const std::vector<std::string> kNames = {
    "aten::mm", "aten::addmm", "aten::linear", "aten::bmm", "aten::matmul", "aten::add", "aten::mul",
    "aten::copy_", "aten::embedding", "aten::_scaled_dot_product_flash_attention", "aten::layer_norm",
    "aten::convolution", "aten::softmax", "aten::sum", "aten::empty", "vllm::unified_attention",
    "_C::rms_norm", "_moe_C::topk_softmax", "ProfilerStep#3", "execute_context_0(1)_generation_0(0)",
    "execute_context_1(128)_generation_3(3)", "decode", "prefill", "step",
    "cudaLaunchKernel", "cudaLaunchKernelExC", "hipLaunchKernel", "hipExtModuleLaunchKernel",
    "cuLaunchKernel", "cudaGraphLaunch", "hipGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync",
    "cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate", "cudaDeviceSynchronize",
    "cudaStreamSynchronize", "cudaEventRecord", "cudaStreamWaitEvent",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "ncclDevKernel_SendRecv(ncclDevComm*)",
    "nccl:all_reduce", "nccl:all_gather", "nccl:reduce_scatter", "nccl:send", "record_param_comms",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T1, T2)",
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "sm90_xmma_gemm_bf16bf16_bf16f32",
    "triton_poi_fused_add_cos_sin_0", "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1",
    "Cijk_Alik_Bljk_HHS_BH_MT128x128x32", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)",
    "Memcpy DtoD (Device -> Device)", "process_name", "thread_name", "process_sort_index",
    "thread_sort_index", "process_labels", "", "x"};
const std::vector<std::string> kDtypes = {"float", "c10::BFloat16", "c10::Half", "long int", "int",
                                          "bool", "double", "unsigned char", "c10::Float8_e4m3fn",
                                          "ScalarList", "Scalar", "TensorList", "", "GenericList"};
const std::vector<std::string> kCollectives = {"allreduce", "all_reduce", "allgather", "all_gather",
                                               "_allgather_base", "reduce_scatter", "_reduce_scatter_base",
                                               "broadcast", "send", "recv", "all_to_all", "alltoall_base",
                                               "barrier", "gather", "scatter", "reduce", ""};
const std::vector<std::string> kCommDtypes = {"Float", "BFloat16", "Half", "Int", "Long", "Byte", "Char",
                                              "Double", "Bool", "Float8_e4m3fn", "", "Unknown"};

json random_int(Rng& rng) {
  switch (below(rng, 10)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return std::numeric_limits<int64_t>::max();
    case 3: return std::numeric_limits<int64_t>::min();
    case 4: return std::numeric_limits<uint64_t>::max();
    case 5: return static_cast<int64_t>(1) << 31;
    case 6: return std::to_string(below(rng, 100));  // a number written as a string
    case 7: return 1.5;
    default: return static_cast<int64_t>(below(rng, 64));
  }
}

// A time in µs as Kineto writes it (number with ns decimals), or an edge.
json random_time(Rng& rng, const json& near) {
  double base = near.is_number() ? near.get<double>() : 1.0e6;
  switch (below(rng, 12)) {
    case 0: return 0;
    case 1: return -base;
    case 2: return 9.3e15;  // µs: overflows int64 ns
    case 3: return 1e300;
    case 4: return "1e3";
    case 5: return std::to_string(base);  // string-typed time
    case 6: return nullptr;
    case 7: return base + 0.0005;  // rounding at the ns digit
    case 8: return static_cast<int64_t>(base);
    default: return base + std::uniform_real_distribution<double>(-50, 50)(rng);
  }
}

json random_dims(Rng& rng) {
  json dims = json::array();
  const size_t n = below(rng, 5);
  for (size_t i = 0; i < n; ++i) {
    json shape = json::array();
    const size_t rank = below(rng, 6);
    for (size_t j = 0; j < rank; ++j) {
      switch (below(rng, 8)) {
        case 0: shape.push_back(0); break;
        case 1: shape.push_back(-1); break;
        case 2: shape.push_back(static_cast<int64_t>(1) << 40); break;
        case 3: shape.push_back(std::numeric_limits<int64_t>::max()); break;
        default: shape.push_back(static_cast<int64_t>(1) << below(rng, 13)); break;
      }
    }
    if (coin(rng, 8)) shape = json::array({json::array()});  // a tensor list
    dims.push_back(std::move(shape));
  }
  return dims;
}

// A random value to plant anywhere.
json random_value(Rng& rng) {
  switch (below(rng, 8)) {
    case 0: return nullptr;
    case 1: return true;
    case 2: return json::array();
    case 3: return json::object();
    case 4: return pick(rng, kNames);
    case 5: return random_dims(rng);
    default: return random_int(rng);
  }
}

// The index of a random object event, or none.
std::optional<size_t> random_event(Rng& rng, const json& events) {
  if (events.empty()) return std::nullopt;
  for (int tries = 0; tries < 8; ++tries) {
    size_t i = below(rng, events.size());
    if (events[i].is_object()) return i;
  }
  return std::nullopt;
}

json& args_of(json& ev) {
  if (!ev.contains("args") || !ev["args"].is_object()) ev["args"] = json::object();
  return ev["args"];
}

// One edit. Returns false when it could not apply (no events, ...).
bool mutate_once(json& doc, Rng& rng) {
  json& events = events_of(doc);
  if (!events.is_array()) return false;
  auto at = random_event(rng, events);
  auto other = random_event(rng, events);
  switch (below(rng, 20)) {
    case 0:  // phase
      if (!at) return false;
      events[*at]["ph"] = pick(rng, kPhases);
      return true;
    case 1:  // category
      if (!at) return false;
      events[*at]["cat"] = pick(rng, kCategories);
      return true;
    case 2:  // name
      if (!at) return false;
      events[*at]["name"] = pick(rng, kNames);
      return true;
    case 3: {  // ts: an edge, or another event's
      if (!at) return false;
      json& ev = events[*at];
      ev["ts"] = (other && coin(rng, 2)) ? events[*other].value("ts", json(0)) : random_time(rng, ev.value("ts", json()));
      return true;
    }
    case 4: {  // dur
      if (!at) return false;
      json& ev = events[*at];
      if (coin(rng, 6)) {
        ev.erase("dur");
      } else {
        json d = random_time(rng, ev.value("dur", json(10.0)));
        if (coin(rng, 3) && d.is_number()) d = std::abs(d.get<double>()) / 1e3;  // keep it small
        ev["dur"] = std::move(d);
      }
      return true;
    }
    case 5: {  // nest `at` inside `other` (same thread), or overlap its end
      if (!at || !other || *at == *other) return false;
      json& parent = events[*other];
      json& child = events[*at];
      if (!parent.value("ts", json()).is_number() || !parent.value("dur", json()).is_number()) return false;
      const double ts = parent["ts"].get<double>();
      const double dur = parent["dur"].get<double>();
      child["pid"] = parent.value("pid", json(0));
      child["tid"] = parent.value("tid", json(0));
      if (coin(rng, 2)) {
        child["ts"] = ts + dur * 0.25;
        child["dur"] = dur * 0.5;
      } else {  // starts inside, ends outside: not a tree
        child["ts"] = ts + dur * 0.5;
        child["dur"] = dur;
      }
      return true;
    }
    case 6: {  // ids: collide with another event's, or an edge value
      if (!at) return false;
      static const std::vector<std::string> kIdKeys = {"correlation", "External id", "Python id",
                                                       "Python parent id", "Ev Idx", "Record function id",
                                                       "Sequence number", "Fwd thread id"};
      json& args = args_of(events[*at]);
      const std::string key = pick(rng, kIdKeys);
      if (other && coin(rng, 2)) {
        const json& oargs = events[*other].value("args", json::object());
        args[key] = oargs.is_object() ? oargs.value(key, oargs.value("correlation", json(1))) : json(1);
      } else {
        args[key] = random_int(rng);
      }
      return true;
    }
    case 7:  // the flow id
      if (!at) return false;
      events[*at]["id"] = (other && coin(rng, 2)) ? events[*other].value("id", json(1)) : random_int(rng);
      return true;
    case 8: {  // pid / tid
      if (!at) return false;
      json& ev = events[*at];
      const char* key = coin(rng, 2) ? "pid" : "tid";
      switch (below(rng, 4)) {
        case 0: ev[key] = other ? events[*other].value(key, json(0)) : json(0); break;
        case 1: ev[key] = "Spans"; break;
        case 2: ev[key] = -static_cast<int64_t>(below(rng, 1000)) - 1; break;
        default: ev[key] = random_int(rng); break;
      }
      return true;
    }
    case 9: {  // op args
      if (!at) return false;
      json& args = args_of(events[*at]);
      switch (below(rng, 4)) {
        case 0: args["Input Dims"] = random_dims(rng); break;
        case 1: {
          json types = json::array();
          for (size_t i = below(rng, 5); i > 0; --i) types.push_back(pick(rng, kDtypes));
          args["Input type"] = std::move(types);
          break;
        }
        case 2: {
          json concrete = json::array();
          for (size_t i = below(rng, 5); i > 0; --i)
            concrete.push_back(pick(rng, std::vector<std::string>{"", "1", "-1", "[1, 2]", "True", "0.5", "[]"}));
          args["Concrete Inputs"] = std::move(concrete);
          break;
        }
        default: args["Input Strides"] = random_dims(rng); break;
      }
      return true;
    }
    case 10: {  // kernel args
      if (!at) return false;
      json& args = args_of(events[*at]);
      static const std::vector<std::string> kKeys = {"grid", "block", "stream", "device", "graph node id",
                                                     "registers per thread", "shared memory", "kernel",
                                                     "context", "queued", "blocks per SM", "warps per SM"};
      const std::string key = pick(rng, kKeys);
      if (key == "grid" || key == "block") {
        args[key] = json::array({random_int(rng), random_int(rng), random_int(rng)});
      } else if (key == "kernel") {
        args[key] = pick(rng, kNames);
      } else {
        args[key] = random_int(rng);
      }
      return true;
    }
    case 11: {  // collective args
      if (!at) return false;
      json& args = args_of(events[*at]);
      switch (below(rng, 6)) {
        case 0: args["Collective name"] = pick(rng, kCollectives); break;
        case 1: args["In msg nelems"] = random_int(rng); break;
        case 2: args["Out msg nelems"] = random_int(rng); break;
        case 3: args["Group size"] = random_int(rng); break;
        case 4: args["dtype"] = pick(rng, kCommDtypes); break;
        default: args["Process Group Name"] = pick(rng, std::vector<std::string>{"0", "1", "default_pg", ""}); break;
      }
      return true;
    }
    case 12:  // duplicate an event (same ids: duplicates happen in merged traces)
      if (!at) return false;
    {
      json copy = events[*at];
      events.insert(events.begin() + static_cast<std::ptrdiff_t>(below(rng, events.size() + 1)), std::move(copy));
      return true;
    }
    case 13:  // delete one
      if (!at) return false;
      events.erase(events.begin() + static_cast<std::ptrdiff_t>(*at));
      return true;
    case 14:  // reorder
      if (!at || !other) return false;
      std::swap(events[*at], events[*other]);
      return true;
    case 15: {  // a flow pair from `at` to `other` (ac2g links launches to kernels)
      if (!at || !other) return false;
      const json id = coin(rng, 3) ? random_int(rng) : json(static_cast<int64_t>(below(rng, 1 << 20)));
      json s = {{"ph", "s"}, {"id", id}, {"pid", events[*at].value("pid", json(0))},
                {"tid", events[*at].value("tid", json(0))}, {"ts", events[*at].value("ts", json(0))},
                {"cat", "ac2g"}, {"name", "ac2g"}};
      json f = {{"ph", "f"}, {"id", id}, {"pid", events[*other].value("pid", json(0))},
                {"tid", events[*other].value("tid", json(0))}, {"ts", events[*other].value("ts", json(0))},
                {"cat", "ac2g"}, {"name", "ac2g"}, {"bp", "e"}};
      events.push_back(std::move(s));
      events.push_back(std::move(f));
      return true;
    }
    case 16: {  // metadata: names of processes and threads
      json m = {{"ph", "M"}, {"name", pick(rng, std::vector<std::string>{"process_name", "thread_name", "process_labels", "process_sort_index"})},
                {"pid", at ? events[*at].value("pid", json(0)) : json(0)},
                {"tid", at ? events[*at].value("tid", json(0)) : json(0)},
                {"args", {{"name", pick(rng, std::vector<std::string>{"python3", "stream 7", "RANK 1 - GPU 3", "GPU 0", "", "CUDA HW"})}}}};
      events.insert(events.begin(), std::move(m));
      return true;
    }
    case 17: {  // top level: distributedInfo, deviceProperties, base time
      if (!doc.is_object()) return false;
      switch (below(rng, 4)) {
        case 0: doc["distributedInfo"] = {{"rank", random_int(rng)}, {"world_size", random_int(rng)}, {"backend", "nccl"}}; break;
        case 1: {
          json dev = {{"id", random_int(rng)},
                      {"name", pick(rng, std::vector<std::string>{"NVIDIA H100 80GB HBM3", "NVIDIA H200", "AMD Instinct MI300X", "", "NVIDIA A100-SXM4-80GB", "Tesla T4"})},
                      {"computeMajor", random_int(rng)}, {"computeMinor", random_int(rng)},
                      {"numSms", random_int(rng)}, {"totalGlobalMem", random_int(rng)}, {"warpSize", random_int(rng)}};
          if (!doc.contains("deviceProperties") || !doc["deviceProperties"].is_array()) doc["deviceProperties"] = json::array();
          doc["deviceProperties"].push_back(std::move(dev));
          break;
        }
        case 2: doc["baseTimeNanoseconds"] = random_int(rng); break;
        default: doc[pick(rng, std::vector<std::string>{"displayTimeUnit", "schemaVersion", "traceName"})] = random_value(rng); break;
      }
      return true;
    }
    case 18: {  // a random value in a random field of an event or its args
      if (!at) return false;
      json& target = coin(rng, 2) ? events[*at] : args_of(events[*at]);
      if (target.empty() || !target.is_object()) return false;
      auto it = target.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(below(rng, target.size())));
      it.value() = random_value(rng);
      return true;
    }
    default: {  // a GPU event and its launch, sharing a correlation id
      if (!at) return false;
      json launch = events[*at];
      launch["cat"] = "cuda_runtime";
      launch["name"] = pick(rng, std::vector<std::string>{"cudaLaunchKernel", "cudaGraphLaunch", "hipLaunchKernel", "cudaMemsetAsync"});
      launch["ph"] = "X";
      const json corr = random_int(rng);
      args_of(launch)["correlation"] = corr;
      json kernel = launch;
      kernel["cat"] = pick(rng, std::vector<std::string>{"kernel", "gpu_memset", "gpu_memcpy"});
      kernel["name"] = pick(rng, kNames);
      kernel["pid"] = 0;
      kernel["tid"] = 7;
      args_of(kernel)["stream"] = 7;
      events.push_back(std::move(launch));
      events.push_back(std::move(kernel));
      return true;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  magpie::fuzz::run_trace_input(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  if (!coin(rng, 4)) {
    if (auto d = parse(data, size)) {
      const size_t edits = 1 + below(rng, 3);
      size_t done = 0;
      for (int tries = 0; tries < 8 && done < edits; ++tries) done += mutate_once(d->doc, rng) ? 1 : 0;
      if (done) {
        if (size_t n = emit(*d, data, max_size)) return n;
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

// Splices a run of events from the second trace into the first.
extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2,
                                            size_t size2, uint8_t* out, size_t max_out_size,
                                            unsigned int seed) {
  Rng rng(seed);
  auto a = parse(data1, size1);
  auto b = parse(data2, size2);
  if (!a || !b) return 0;
  json& into = events_of(a->doc);
  const json& from = events_of(b->doc);
  if (!into.is_array() || !from.is_array() || from.empty()) return 0;
  const size_t first = below(rng, from.size());
  const size_t count = 1 + below(rng, std::min<size_t>(16, from.size() - first));
  auto pos = into.begin() + static_cast<std::ptrdiff_t>(below(rng, into.size() + 1));
  into.insert(pos, from.begin() + static_cast<std::ptrdiff_t>(first),
              from.begin() + static_cast<std::ptrdiff_t>(first + count));
  return emit(*a, out, max_out_size);
}
