#include "trace/kineto_reader.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "trace/trace_links.hpp"

namespace magpie::trace {
namespace {

PaddedBuffer buffer_of(std::string_view s) {
  PaddedBuffer b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

Trace parse(std::string_view json, size_t chunk_bytes = 64, bool python = false) {
  IngestOptions o;
  o.chunk_bytes = chunk_bytes;  // tiny chunks: exercise the splitter on small inputs
  o.threads = 2;
  o.include_python_functions = python;
  return parse_kineto(buffer_of(json), "test.json", o);
}

TEST(ParseUsToNs, KeepsNanosecondDigitsOfEpochTimestamps) {
  int64_t ns = 0;
  ASSERT_TRUE(parse_us_to_ns("1773709742341309.550", ns));
  EXPECT_EQ(ns, 1773709742341309550);
  ASSERT_TRUE(parse_us_to_ns("12", ns));
  EXPECT_EQ(ns, 12000);
  ASSERT_TRUE(parse_us_to_ns("0.0015", ns));  // 1.5 ns rounds half up
  EXPECT_EQ(ns, 2);
  ASSERT_TRUE(parse_us_to_ns("1.5e3", ns));
  EXPECT_EQ(ns, 1500000);
  ASSERT_TRUE(parse_us_to_ns("-3.25", ns));
  EXPECT_EQ(ns, -3250);
  EXPECT_FALSE(parse_us_to_ns("abc", ns));
  EXPECT_FALSE(parse_us_to_ns("", ns));
  // Beyond ±4e18 ns (fuzzer: an exponent rounded to INT64_MIN made gap
  // analysis' window overflow): not a time, so two times never overflow.
  EXPECT_FALSE(parse_us_to_ns("-9.3e15", ns));
  EXPECT_FALSE(parse_us_to_ns("1e300", ns));
  EXPECT_FALSE(parse_us_to_ns("9223372036854775", ns));
  ASSERT_TRUE(parse_us_to_ns("3999999999999999.999", ns));
  EXPECT_EQ(ns, 3999999999999999999);
  // Kineto's own forms (the one-pass path) and their edges.
  const std::pair<std::string_view, int64_t> kWritten[] = {
      {"5346202264316.344", 5346202264316344}, {"1.", 1000},        {"12\"", 12000},
      {"0.0004", 0},   {"0.0005", 1},    {"7.1234567", 7123},  {"7.1235", 7124},
      {"123456789012345.5", 123456789012345500}, {"1234567890123456.5", 1234567890123456500},
      {"12 ", 12000},  {"12,", 12000},   {"0", 0},             {"\"3.5\"", 3500}};
  for (const auto& [text, want] : kWritten) {
    ASSERT_TRUE(parse_us_to_ns(text, ns)) << text;
    EXPECT_EQ(ns, want) << text;
  }
  // Past 15 integer digits the general parser decides (the fuzzer found the
  // one-pass loop overflowing on a 19-digit time before it gave up).
  for (std::string_view bad : {"12 3", "12x", "1.2.3", "4000000000000001", "4458676983423141924.5",
                               "16827256666666666666666"})
    EXPECT_FALSE(parse_us_to_ns(bad, ns)) << bad;
}

constexpr std::string_view kSmallTrace = R"({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0,
                        "numSms": 132, "totalGlobalMem": 150109880320, "warpSize": 32}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "python_function", "name": "forward", "pid": 10, "tid": 10, "ts": 99, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 100, "dur": 20,
     "args": {"External id": 7, "Input Dims": [[16, 64], [64, 32]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
     "ts": 105, "dur": 5, "args": {"correlation": 42, "External id": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 110.5, "dur": 3.25,
     "args": {"correlation": 42, "External id": 7, "device": 0, "stream": 7, "grid": [4, 2, 1],
              "block": [128, 1, 1], "registers per thread": 96, "shared memory": 1024,
              "Comms Id": 18446744073709551615}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 10, "tid": 10,
     "ts": 130, "dur": 5, "args": {"correlation": 50}},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 140, "dur": 1, "args": {"correlation": 50}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 141, "dur": 1, "args": {"correlation": 50}},
    {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 142, "dur": 1, "args": {"correlation": 50}},
    {"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "args": {"name": "python3"}},
    {"ph": "X", "cat": "user_annotation", "name": "step", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 90, "dur": 100},
    {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 10, "tid": 10, "ts": 101, "s": "t"},
    {"name": "no_cat_no_ph", "pid": 10, "tid": 10, "ts": 102},
    {"ph": "X", "cat": "cpu_op", "name": "no_ts", "pid": 10, "tid": 10},
    {"ph": "s", "cat": "ac2g", "id": 42, "pid": 10, "tid": 10, "ts": 105, "name": "ac2g"},
    {"ph": "f", "cat": "ac2g", "id": 42, "pid": 0, "tid": 7, "ts": 110.5, "name": "ac2g", "bp": "e"}
  ],
  "traceName": "x.json",
  "baseTimeNanoseconds": 1700000000000000000
})";

TEST(KinetoReader, ReadsColumnsMetadataAndQuirks) {
  Trace t = parse(kSmallTrace);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.rank_source, RankSource::kTrace);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.base_time_ns, 1700000000000000000);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.process_names.at(10), "python3");
  EXPECT_EQ(t.stats.python_function_skipped, 1u);
  EXPECT_EQ(t.stats.malformed_events, 1u);  // the event without ts
  EXPECT_EQ(t.flows.size(), 2u);
  // 15 elements: 1 python skipped, 1 metadata, 1 without ts, 2 flows → 10 rows.
  EXPECT_EQ(t.stats.events_seen, 15u);
  ASSERT_EQ(t.events.size(), 10u);

  size_t gemm = 0;
  while (t.name(gemm) != "gemm_kernel") ++gemm;
  const auto& e = t.events;
  EXPECT_EQ(e.category[gemm], Category::kKernel);
  EXPECT_EQ(e.ts_ns[gemm], 110500);
  EXPECT_EQ(e.dur_ns[gemm], 3250);
  EXPECT_EQ(e.correlation[gemm], 42);
  EXPECT_EQ(e.external_id[gemm], 7);
  EXPECT_EQ(e.stream[gemm], 7);
  EXPECT_EQ(e.device[gemm], 0);
  ASSERT_NE(e.detail[gemm], kNoDetail);
  const auto& k = e.kernel_details[e.detail[gemm]];
  EXPECT_EQ(k.grid[0], 4);
  EXPECT_EQ(k.block[0], 128);
  EXPECT_EQ(k.registers_per_thread, 96);

  size_t mm = 0;
  while (t.name(mm) != "aten::mm") ++mm;
  ASSERT_NE(e.detail[mm], kNoDetail);
  EXPECT_EQ(t.str(e.op_details[e.detail[mm]].input_dims), "[[16, 64], [64, 32]]");

  size_t span = 0;
  while (t.name(span) != "step") ++span;
  EXPECT_LT(e.pid[span], 0);  // string pid
  EXPECT_EQ(t.str(static_cast<StringId>(-1 - e.pid[span])), "Spans");

  size_t nocat = 0;
  while (t.name(nocat) != "no_cat_no_ph") ++nocat;
  EXPECT_EQ(e.category[nocat], Category::kUnknown);
  EXPECT_EQ(e.phase[nocat], Phase::kInstant);
}

// Every args key the reader takes, each with a value of its own: the keys are
// told apart by length first, and a key filed under the wrong length would be
// skipped silently (the collective sizes once were).
TEST(KinetoReader, ReadsEveryArgumentKey) {
  constexpr std::string_view kJson = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"External id": 11, "device": 2, "stream": 13, "correlation": 14, "grid": [15, 16, 17],
              "block": [18, 19, 20], "registers per thread": 21, "shared memory": 22, "graph node id": 23,
              "Collective name": "allreduce", "In msg nelems": 24, "Out msg nelems": 25, "Group size": 26,
              "dtype": "BFloat16", "Process Group Name": "pg7", "queued": 0, "Ev Idx": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 9, "dur": 1,
     "args": {"correlation": 14, "kernel": "my_kernel", "Graph node id": 27}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 8, "dur": 1,
     "args": {"correlation": 15, "graph_node_id": 28, "grid": [1, 1, 1]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 20,
     "args": {"External id": 11, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"],
              "Concrete Inputs": ["", ""], "Input Strides": [[3, 1], [4, 1]]}},
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "worker"}}
  ]})";
  Trace t = parse(kJson, 1 << 20);
  ASSERT_EQ(t.events.size(), 4u);
  const auto& e = t.events;
  auto row_of = [&](std::string_view name) {
    size_t r = 0;
    while (r < e.size() && t.name(r) != name) ++r;
    return r;
  };
  const size_t k = row_of("ncclDevKernel_AllReduce");
  ASSERT_LT(k, e.size());
  EXPECT_EQ(e.external_id[k], 11);
  EXPECT_EQ(e.device[k], 2);
  EXPECT_EQ(e.stream[k], 13);
  EXPECT_EQ(e.correlation[k], 14);
  ASSERT_NE(e.detail[k], kNoDetail);
  const KernelDetail& kd = e.kernel_details[e.detail[k]];
  EXPECT_EQ(kd.grid, (std::array<int32_t, 3>{15, 16, 17}));
  EXPECT_EQ(kd.block, (std::array<int32_t, 3>{18, 19, 20}));
  EXPECT_EQ(kd.registers_per_thread, 21);
  EXPECT_EQ(kd.shared_memory, 22);
  EXPECT_EQ(kd.graph_node_id, 23);
  EXPECT_EQ(t.str(kd.collective), "allreduce");
  const CollectiveArgs* c = e.collective_of(static_cast<uint32_t>(k));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(t.str(c->name), "allreduce");
  EXPECT_EQ(c->in_nelems, 24);
  EXPECT_EQ(c->out_nelems, 25);
  EXPECT_EQ(c->group_size, 26);
  EXPECT_EQ(t.str(c->dtype), "BFloat16");
  EXPECT_EQ(t.str(c->group), "pg7");

  const size_t hip = row_of("hipLaunchKernel");
  ASSERT_NE(e.detail[hip], kNoDetail);
  EXPECT_EQ(t.str(e.kernel_details[e.detail[hip]].kernel), "my_kernel");
  EXPECT_EQ(e.kernel_details[e.detail[hip]].graph_node_id, 27);
  const size_t graph = row_of("cudaGraphLaunch");
  ASSERT_NE(e.detail[graph], kNoDetail);
  EXPECT_EQ(e.kernel_details[e.detail[graph]].graph_node_id, 28);

  const size_t mm = row_of("aten::mm");
  ASSERT_NE(e.detail[mm], kNoDetail);
  const OpDetail& op = e.op_details[e.detail[mm]];
  EXPECT_EQ(t.str(op.input_dims), "[[2, 3], [3, 4]]");
  EXPECT_EQ(t.str(op.input_type), R"(["float", "float"])");
  EXPECT_EQ(t.str(op.concrete_inputs), R"(["", ""])");
  EXPECT_EQ(t.str(op.input_strides), "[[3, 1], [4, 1]]");
  EXPECT_EQ(t.process_names.at(1), "worker");
}

// Ops share one argument-set entry when their arrays are equal, whether the
// text that holds them is equal (the chunk's text cache) or only the arrays
// are (keys in another order); different arrays never share one.
TEST(KinetoReader, EqualArgumentSetsShareOneEntry) {
  constexpr std::string_view kJson = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
     "args": {"Input Dims": [[2, 3]], "Input type": ["float"], "Concrete Inputs": [""]}},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
     "args": {"Input Dims": [[2, 3]], "Input type": ["float"], "Concrete Inputs": [""]}},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3, "dur": 1,
     "args": {"Input Dims": [[2, 4]], "Input type": ["float"], "Concrete Inputs": [""]}},
    {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 4, "dur": 1,
     "args": {"Input type": ["float"], "Input Dims": [[2, 3]], "Concrete Inputs": [""]}},
    {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": 5, "dur": 1,
     "args": {"Input Dims": [[2, 3]], "Input type": ["float"], "Concrete Inputs": ["1"]}},
    {"ph": "X", "cat": "cpu_op", "name": "f", "pid": 1, "tid": 1, "ts": 6, "dur": 1,
     "args": {"Input Dims": [[2, 3]], "Input type": ["float"]}}
  ]})";
  for (size_t chunk : {size_t{1} << 20, size_t{64}}) {
    Trace t = parse(kJson, chunk);
    ASSERT_EQ(t.events.size(), 6u);
    const auto& e = t.events;
    auto detail = [&](size_t r) { return e.op_details.at(e.detail.at(r)); };
    auto same = [&](size_t x, size_t y) { return e.detail[x] == e.detail[y]; };
    EXPECT_TRUE(same(0, 1));
    EXPECT_TRUE(same(0, 3));
    EXPECT_FALSE(same(0, 2));
    EXPECT_FALSE(same(0, 4));
    EXPECT_FALSE(same(0, 5));
    EXPECT_EQ(e.op_details.size(), 4u);
    EXPECT_EQ(t.str(detail(2).input_dims), "[[2, 4]]");
    EXPECT_EQ(t.str(detail(4).concrete_inputs), R"(["1"])");
    EXPECT_EQ(t.str(detail(5).concrete_inputs), "");
    EXPECT_EQ(t.str(detail(3).input_type), R"(["float"])");
  }
}

TEST(KinetoReader, SameResultForEveryChunkSize) {
  Trace a = parse(kSmallTrace, 1);
  Trace b = parse(kSmallTrace, 1 << 20);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t r = 0; r < a.events.size(); ++r) {
    EXPECT_EQ(a.name(r), b.name(r));
    EXPECT_EQ(a.events.ts_ns[r], b.events.ts_ns[r]);
  }
}

TEST(KinetoReader, LinksGraphLaunchToEveryReplayedKernel) {
  Trace t = parse(kSmallTrace);
  TraceLinks links = link_trace(t);
  EXPECT_EQ(links.summary.gpu_events, 4u);
  EXPECT_EQ(links.summary.linked_gpu_events, 4u);
  EXPECT_EQ(links.summary.graph_launches, 1u);
  EXPECT_EQ(links.summary.graph_kernels, 3u);
  EXPECT_EQ(links.summary.max_kernels_per_graph_launch, 3u);
  size_t gemm = 0;
  while (t.name(gemm) != "gemm_kernel") ++gemm;
  int32_t op = launching_op(t, links, gemm);
  ASSERT_GE(op, 0);
  EXPECT_EQ(t.name(static_cast<size_t>(op)), "aten::mm");
}

TEST(KinetoReader, CutsThatLandInsideStringsFallBackToExactSplitting) {
  // Event names containing the boundary pattern `},{` fool the fast splitter.
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < 50; ++i) {
    if (i) json += ",";
    json += R"({"ph": "X", "cat": "kernel", "name": "weird},{\"name\": [{}],{", "pid": 0, "tid": 1, "ts": )" +
            std::to_string(i) + R"(, "dur": 1, "args": {"nested": [{"a": 1},{"b": 2}]}})";
  }
  json += "]}";
  Trace t = parse(json, 16);
  ASSERT_EQ(t.events.size(), 50u);
  EXPECT_EQ(t.name(0), "weird},{\"name\": [{}],{");
}

TEST(KinetoReader, InvalidUtf8IsRepairedNotFatal) {
  std::string json = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"bad\xff\xfe name\", "
                     "\"pid\": 0, \"tid\": 1, \"ts\": 1, \"dur\": 2}]}";
  Trace t = parse(json);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.name(0), "bad?? name");
  EXPECT_FALSE(t.warnings.empty());
}

TEST(KinetoReader, BareArrayIsAccepted) {
  Trace t = parse(R"([{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1, "dur": 2}])");
  EXPECT_EQ(t.events.size(), 1u);
}

TEST(KinetoReader, MalformedJsonNamesFileAndOffset) {
  std::string json = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2 oops}]})";
  try {
    parse(json);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_EQ(e.file(), "test.json");
    ASSERT_TRUE(e.byte_offset().has_value());
    EXPECT_GT(*e.byte_offset(), 60u);
    EXPECT_LE(*e.byte_offset(), json.size());
  }
}

TEST(KinetoReader, TruncatedArrayIsReportedAsTruncated) {
  std::string json = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},
    {"ph": "X", "cat": "kernel", "na)";
  try {
    parse(json);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
}

TEST(KinetoReader, NonTraceJsonIsBadFormat) {
  try {
    parse(R"({"a": 1})");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("traceEvents"), std::string::npos);
  }
}

// HTA's tests/data/memory_analysis/memory_timeline.raw.gz is a bare JSON array
// of [ts, action, bytes, device] rows: it parsed as an empty trace, so
// `magpie tracelens` wrote empty reports and exited 0.
TEST(KinetoReader, ArrayWithoutEventObjectsIsBadFormat) {
  for (size_t chunk : {size_t{16}, size_t{1} << 20}) {
    try {
      parse(R"([[-1, 1, 37888, 7], [-1, 1, 512, 7], [12, 2, 512, 7]])", chunk);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
      EXPECT_EQ(e.file(), "test.json");
      EXPECT_NE(std::string(e.what()).find("none of the 3 elements"), std::string::npos) << e.what();
    }
  }
  // One real event among them keeps the trace; the rest are counted as malformed.
  Trace t = parse(R"([[1, 2], {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1, "dur": 2}])");
  EXPECT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.stats.malformed_events, 1u);
  EXPECT_NO_THROW(parse(R"({"traceEvents": []})"));
  // Objects without ts (TraceLens' execution_details.json, found in vLLM
  // capture_traces/ folders) stay an empty trace: a folder run must not fail on it.
  Trace details = parse(R"([{"file": "bs_32_rank0.json.gz", "batch_size": 32, "mode": "FULL"}])");
  EXPECT_EQ(details.events.size(), 0u);
  EXPECT_EQ(details.stats.malformed_events, 1u);
}

// Kineto ids come in every shape: HTA's public NCCL trace has negative tids,
// other tools write strings, ids beyond int64 or floats. Each must ingest,
// keep its identity across chunk merges, and never index out of range.
constexpr std::string_view kIdShapesTrace = R"({"traceEvents": [
  {"ph": "M", "name": "thread_name", "pid": 2910249, "tid": -549452224, "args": {"name": "neg thread"}},
  {"ph": "M", "name": "process_name", "pid": -7, "tid": 0, "args": {"name": "neg process"}},
  {"ph": "M", "name": "process_name", "pid": "Spans", "tid": 0, "args": {"name": "span process"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 2910249, "tid": -549452224, "ts": 100, "dur": 20,
   "args": {"External id": 7}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 2910249, "tid": -549452224,
   "ts": 105, "dur": 5, "args": {"correlation": 18446744073709551610, "External id": 7}},
  {"ph": "s", "id": 18446744073709551610, "pid": 2910249, "tid": -549452224, "ts": 105, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 18446744073709551610, "pid": 0, "tid": 7, "ts": 110, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 110, "dur": 3,
   "args": {"correlation": 18446744073709551610, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "op_neg_pid", "pid": -7, "tid": -1, "ts": 200, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "op_huge_pid", "pid": 18446744073709551615, "tid": 99999999999999999999, "ts": 201, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "op_float_pid", "pid": 12.5, "tid": 3, "ts": 202, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "op_string_pid", "pid": "Spans", "tid": "-5", "ts": 203, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "op_empty_pid", "pid": "", "tid": "", "ts": 204, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "op_no_pid", "ts": 205, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k_string_pid", "pid": "GPU 0", "tid": "stream 7", "ts": 206, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k_neg_pid", "pid": -3, "tid": -9, "ts": 207, "dur": 1}
]})";

TEST(KinetoReader, IdsOfEveryShapeKeepTheirIdentity) {
  for (size_t chunk : {size_t{48}, size_t{200}, size_t{1} << 20}) {
    Trace t = parse(kIdShapesTrace, chunk);
    ASSERT_EQ(t.events.size(), 11u) << "chunk " << chunk;
    auto row_of = [&](std::string_view name) {
      for (size_t r = 0; r < t.events.size(); ++r)
        if (t.name(r) == name) return r;
      ADD_FAILURE() << name << " not found";
      return size_t{0};
    };
    auto pid = [&](std::string_view name) { return t.thread_key_text(t.events.pid[row_of(name)]); };
    auto tid = [&](std::string_view name) { return t.thread_key_text(t.events.tid[row_of(name)]); };
    EXPECT_EQ(pid("aten::mm"), "2910249");
    EXPECT_EQ(tid("aten::mm"), "-549452224");
    EXPECT_EQ(pid("op_neg_pid"), "-7");
    EXPECT_EQ(tid("op_neg_pid"), "-1");
    EXPECT_EQ(pid("op_huge_pid"), "18446744073709551615");
    EXPECT_EQ(tid("op_huge_pid"), "99999999999999999999");
    EXPECT_EQ(pid("op_float_pid"), "12.5");
    EXPECT_EQ(pid("op_string_pid"), "Spans");
    EXPECT_EQ(tid("op_string_pid"), "-5");
    EXPECT_EQ(pid("op_empty_pid"), "");
    EXPECT_EQ(pid("op_no_pid"), "0");
    // Same text, same key: the string pid and the metadata's string pid meet.
    EXPECT_EQ(t.events.pid[row_of("op_string_pid")], t.events.pid[row_of("op_string_pid")]);
    EXPECT_EQ(t.thread_names.at({t.events.pid[row_of("aten::mm")], t.events.tid[row_of("aten::mm")]}),
              "neg thread");
    EXPECT_EQ(t.process_names.at(t.events.pid[row_of("op_neg_pid")]), "neg process");
    EXPECT_EQ(t.process_names.at(t.events.pid[row_of("op_string_pid")]), "span process");
    // GPU rows whose pid is no device index fall on device 0, never a CPU row's -1.
    EXPECT_EQ(t.events.device[row_of("k_string_pid")], 0);
    EXPECT_EQ(t.events.device[row_of("k_neg_pid")], 0);
    // Flow ends keep their (negative) thread keys, decodable in the merged pool.
    ASSERT_EQ(t.flows.size(), 2u);
    EXPECT_EQ(t.thread_key_text(t.flows[0].tid), "-549452224");
    // A correlation id above int64 still links the launch on the negative tid
    // to its kernel and the kernel to the op.
    TraceLinks links = link_trace(t);
    size_t kernel = row_of("gemm");
    EXPECT_EQ(links.launch_of[kernel], static_cast<int32_t>(row_of("cudaLaunchKernel")));
    EXPECT_EQ(launching_op(t, links, kernel), static_cast<int32_t>(row_of("aten::mm")));
  }
}

// The op tree's parents do not depend on how a thread's ops are ordered in
// the file: one ascending run (a profiler writes ops in time order), several
// runs (cycles or copies one after another: merged), and a shuffle (many runs:
// sorted outright) give the same tree, equal to the innermost enclosing op
// found by brute force. Equal starts: the longer op is the parent.
TEST(KinetoReader, OpTreeIsTheSameForAnyOrderOfAThreadsOps) {
  struct Op {
    int64_t ts, dur;
  };
  std::vector<Op> ops;
  for (int64_t copy = 0; copy < 5; ++copy) {  // five copies of a nested step
    int64_t base = copy * 1000;
    for (Op o : {Op{0, 100}, Op{0, 40}, Op{10, 20}, Op{12, 5}, Op{50, 30}, Op{55, 10}, Op{90, 5}})
      ops.push_back({base + o.ts, o.dur});
  }
  auto json_of = [&](const std::vector<size_t>& order) {
    std::string j = R"({"traceEvents": [)";
    for (size_t k = 0; k < order.size(); ++k) {
      const Op& o = ops[order[k]];
      if (k) j += ',';
      j += R"({"ph":"X","cat":"cpu_op","name":"op)" + std::to_string(order[k]) + R"(","pid":1,"tid":2,"ts":)" +
           std::to_string(o.ts) + R"(,"dur":)" + std::to_string(o.dur) + "}";
    }
    return j + "]}";
  };
  // Brute force: the shortest op that contains this one and starts no later
  // (on equal start and length, the one written first is the parent).
  auto expected_parent = [&](size_t i) -> int64_t {
    int64_t best = -1;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (k == i) continue;
      bool contains = ops[k].ts <= ops[i].ts && ops[k].ts + ops[k].dur >= ops[i].ts + ops[i].dur;
      bool outer = ops[k].ts < ops[i].ts || ops[k].dur > ops[i].dur;
      if (!contains || !outer) continue;
      if (best < 0 || ops[k].dur < ops[static_cast<size_t>(best)].dur) best = static_cast<int64_t>(k);
    }
    return best;
  };
  std::vector<size_t> in_order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) in_order[i] = i;
  std::vector<size_t> copies_reversed;  // five runs, the later copies first
  for (int64_t copy = 4; copy >= 0; --copy)
    for (size_t i = 0; i < 7; ++i) copies_reversed.push_back(static_cast<size_t>(copy) * 7 + i);
  std::vector<size_t> shuffled = in_order;
  for (size_t i = 0; i < shuffled.size(); ++i) std::swap(shuffled[i], shuffled[(i * 17 + 5) % shuffled.size()]);
  for (const auto& order : {in_order, copies_reversed, shuffled}) {
    Trace t = parse(json_of(order), 1 << 20);
    TraceLinks links = link_trace(t);
    ASSERT_EQ(t.events.size(), ops.size());
    for (size_t r = 0; r < t.events.size(); ++r) {
      size_t op = std::stoul(std::string(t.name(r)).substr(2));
      int64_t want = expected_parent(op);
      int32_t got = links.parent[r];
      std::string got_name = got < 0 ? "none" : std::string(t.name(static_cast<size_t>(got)));
      EXPECT_EQ(got_name, want < 0 ? "none" : "op" + std::to_string(want)) << "op" << op;
    }
  }
}

}  // namespace
}  // namespace magpie::trace
