#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "trace/rocprof_reader.hpp"

namespace magpie::trace {
namespace {

const std::filesystem::path kSharedSample =
    std::filesystem::path(MAGPIE_SHARED_TRACES) / "public/rocprof__908_results.json.gz";
const std::filesystem::path kFixtures =
    std::filesystem::path(MAGPIE_SOURCE_DIR) / "tests/data/rocprof";

PaddedBuffer padded(std::string_view text) {
  PaddedBuffer b(text.size());
  std::memcpy(b.data(), text.data(), text.size());
  return b;
}

std::string file_text(const std::filesystem::path& p) { return std::string(read_file(p).view()); }

int64_t total_duration(const Trace& t) {
  return std::accumulate(t.events.dur_ns.begin(), t.events.dur_ns.end(), int64_t{0});
}

// Runs `fn`, expecting Error(kBadFormat); returns what() for further checks.
template <class Fn>
std::string bad_format_message(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no Error thrown";
  return {};
}

TEST(RocprofSniff, RecognisesBothFormats) {
  EXPECT_TRUE(looks_like_rocprof_json(R"({"rocprofiler-sdk-tool":[{"metadata":{}}]})"));
  EXPECT_FALSE(looks_like_rocprof_json(R"({"traceEvents":[]})"));
  EXPECT_TRUE(looks_like_rocprof_csv(
      "\"Kind\",\"Agent_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\"\n1,2,3,4,5\n"));
  // The words must be in the header line, not somewhere later.
  EXPECT_FALSE(looks_like_rocprof_csv("a,b\n\"Kernel_Name\",\"Start_Timestamp\"\n"));
}

// Expected numbers from an independent Python pass over the same file (run in /work/shared):
// python3 -c "import json,gzip,collections as C;
// r=json.load(gzip.open('traces/public/rocprof__908_results.json.gz'))['rocprofiler-sdk-tool'][0];
// k={s['kernel_id']:s['formatted_kernel_name'] for s in r['kernel_symbols']};
// d=r['buffer_records']['kernel_dispatch']; t=C.Counter();
// n=C.Counter(k[x['dispatch_info']['kernel_id']] for x in d);
// [t.update({k[x['dispatch_info']['kernel_id']]: x['end_timestamp']-x['start_timestamp']}) for x in
// d]; top=t.most_common(1)[0]; print(len(d), sum(t.values()), len(t), top, n[top[0]],
// n.most_common(1)[0][1])" → 43915 4441741378 80
// ('ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)', 4158756678) 1310 5450
TEST(RocprofJson, SharedSampleMatchesPython) {
  if (!std::filesystem::exists(kSharedSample)) GTEST_SKIP() << "missing " << kSharedSample;
  PaddedBuffer buf = read_maybe_gzip(kSharedSample);
  Trace t = parse_rocprof_json(buf, kSharedSample.string());

  EXPECT_EQ(t.format, TraceFormat::kRocprofJson);
  EXPECT_EQ(t.rank, -1);
  ASSERT_EQ(t.events.size(), 43915u);
  EXPECT_EQ(t.stats.events_seen, 43915u);
  EXPECT_EQ(t.stats.events_kept, 43915u);
  EXPECT_EQ(t.stats.raw_bytes, buf.size());
  EXPECT_EQ(total_duration(t), 4441741378);

  std::map<std::string_view, std::pair<int64_t, int64_t>> by_name;  // calls, ns
  for (size_t i = 0; i < t.events.size(); ++i) {
    auto& [calls, ns] = by_name[t.name(i)];
    ++calls;
    ns += t.events.dur_ns[i];
  }
  EXPECT_EQ(by_name.size(), 80u);
  const auto& nccl = by_name["ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"];
  EXPECT_EQ(nccl.first, 1310);
  EXPECT_EQ(nccl.second, 4158756678);
  int64_t most_calls = 0;
  for (const auto& [name, v] : by_name) most_calls = std::max(most_calls, v.first);
  EXPECT_EQ(most_calls, 5450);

  // First record: kernel_id 8 on agent handle 37946 (gpu_index 0), stream handle 0.
  EXPECT_EQ(t.name(0), "__amd_rocclr_copyBuffer");
  EXPECT_EQ(t.str(t.events.cat_name[0]), "kernel");
  EXPECT_EQ(t.events.category[0], Category::kKernel);
  EXPECT_EQ(t.events.phase[0], Phase::kComplete);
  EXPECT_EQ(t.events.ts_ns[0], 63857982592000);
  EXPECT_EQ(t.events.dur_ns[0], 2840);
  EXPECT_EQ(t.events.correlation[0], 1);
  EXPECT_EQ(t.events.device[0], 0);
  EXPECT_EQ(t.events.pid[0], 0);
  EXPECT_EQ(t.events.stream[0], 0);
  ASSERT_NE(t.events.detail[0], kNoDetail);
  const KernelDetail& k = t.events.kernel_details[t.events.detail[0]];
  EXPECT_EQ(k.block, (std::array<int32_t, 3>{512, 1, 1}));
  EXPECT_EQ(k.grid, (std::array<int32_t, 3>{1, 1, 1}));  // 512 work-items = 1 block
  EXPECT_EQ(k.registers_per_thread, 8);

  ASSERT_EQ(t.devices.size(), 8u);
  EXPECT_EQ(t.devices[0].id, 0);
  EXPECT_EQ(t.devices[7].id, 7);
  EXPECT_EQ(t.devices[0].name, "AMD Instinct MI350X");
  EXPECT_EQ(t.devices[0].compute_major, 9);
  EXPECT_EQ(t.devices[0].compute_minor, 5);
  EXPECT_EQ(t.devices[0].num_sms, 256);
  EXPECT_EQ(t.devices[0].warp_size, 64);
  EXPECT_EQ(t.devices[0].total_global_mem, 309220868096);
  for (int32_t d : t.events.device) ASSERT_EQ(d, 0);
}

// A hand-made file exercising what the shared sample lacks: records before
// symbols, agents without gpu_index, copies, host API records, a bad record.
constexpr std::string_view kSmallJson = R"({"rocprofiler-sdk-tool":[{
  "buffer_records":{
    "kernel_dispatch":[
      {"correlation_id":{"internal":7,"external":3},"start_timestamp":1000,"end_timestamp":1500,
       "dispatch_info":{"agent_id":{"handle":22},"queue_id":{"handle":4},"kernel_id":5,
         "group_segment_size":64,"workgroup_size":{"x":256,"y":1,"z":1},
         "grid_size":{"x":1000,"y":2,"z":1}}},
      {"correlation_id":{"internal":8,"external":0},"start_timestamp":2000,"end_timestamp":1999,
       "dispatch_info":{"agent_id":{"handle":22},"queue_id":{"handle":4},"kernel_id":5}},
      {"correlation_id":{"internal":9,"external":0},"start_timestamp":3000,"end_timestamp":3010,
       "dispatch_info":{"agent_id":{"handle":11},"queue_id":{"handle":2},"kernel_id":99,
         "workgroup_size":{"x":64,"y":1,"z":1},"grid_size":{"x":64,"y":1,"z":1}}}],
    "memory_copy":[
      {"operation":3,"correlation_id":{"internal":10,"external":0},"start_timestamp":4000,
       "end_timestamp":4100,"dst_agent_id":{"handle":1},"src_agent_id":{"handle":22},
       "bytes":4096}],
    "hip_api":[{"a":1},{"a":2}],
    "hsa_api":[]},
  "kernel_symbols":[{"kernel_id":5,"kernel_name":"_Z3addPfS_.kd",
    "demangled_kernel_name":"add(float*, float*).kd","formatted_kernel_name":"",
    "arch_vgpr_count":10,"accum_vgpr_count":4}],
  "agents":[
    {"id":{"handle":1},"type":1,"node_id":0,"name":"EPYC"},
    {"id":{"handle":22},"type":2,"node_id":2,"name":"gfx942","product_name":"",
     "cu_count":304,"gfx_target_version":90402},
    {"id":{"handle":11},"type":2,"node_id":1,"name":"gfx942","product_name":"AMD Instinct MI300X"}]
}]})";

TEST(RocprofJson, ResolvesNamesDevicesAndCopiesInAnyOrder) {
  PaddedBuffer buf = padded(kSmallJson);
  Trace t = parse_rocprof_json(buf, "small.json");
  ASSERT_EQ(t.events.size(), 3u);  // the dispatch that ends before it starts is dropped
  EXPECT_EQ(t.stats.events_seen, 6u);
  EXPECT_EQ(t.stats.malformed_events, 1u);

  // GPUs numbered by node id: handle 11 (node 1) → 0, handle 22 (node 2) → 1.
  EXPECT_EQ(t.name(0), "add(float*, float*)");  // demangled, ".kd" stripped
  EXPECT_EQ(t.events.device[0], 1);
  EXPECT_EQ(t.events.stream[0], 4);  // no stream_id: the queue
  EXPECT_EQ(t.events.tid[0], 4);
  EXPECT_EQ(t.events.correlation[0], 7);
  EXPECT_EQ(t.events.external_id[0], 3);
  const KernelDetail& k = t.events.kernel_details[t.events.detail[0]];
  EXPECT_EQ(k.grid, (std::array<int32_t, 3>{4, 2, 1}));  // ceil(1000 / 256)
  EXPECT_EQ(k.shared_memory, 64);
  EXPECT_EQ(k.registers_per_thread, 14);

  EXPECT_EQ(t.name(1), "kernel_id 99");
  EXPECT_EQ(t.events.device[1], 0);
  EXPECT_EQ(t.events.external_id[1], kNoValue);

  EXPECT_EQ(t.name(2), "Memcpy DtoH");
  EXPECT_EQ(t.events.category[2], Category::kGpuMemcpy);
  EXPECT_EQ(t.str(t.events.cat_name[2]), "gpu_memcpy");
  EXPECT_EQ(t.events.device[2], 1);  // the GPU end of the copy
  EXPECT_EQ(t.events.detail[2], kNoDetail);

  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[0].name, "AMD Instinct MI300X");
  EXPECT_EQ(t.devices[1].name, "gfx942");  // empty product_name falls back to name
  EXPECT_EQ(t.devices[1].compute_major, 9);
  EXPECT_EQ(t.devices[1].compute_minor, 4);
  EXPECT_EQ(t.devices[1].num_sms, 304);

  std::string warnings;
  for (const auto& w : t.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("skipped 2 rocprofv3 hip_api records"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("kernel_id missing"), std::string::npos) << warnings;
}

TEST(RocprofJson, TruncatedFileIsBadFormatWithFileAndOffset) {
  std::string_view cut = kSmallJson.substr(0, 400);
  PaddedBuffer buf = padded(cut);
  try {
    parse_rocprof_json(buf, "/traces/cut_results.json");
    FAIL() << "no Error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("cut_results.json"), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
  std::string msg = bad_format_message([] {
    PaddedBuffer b =
        padded(R"({"rocprofiler-sdk-tool":[{"agents":[{"id":{"handle":1},"type":}]}]})");
    parse_rocprof_json(b, "broken.json");
  });
  EXPECT_NE(msg.find("broken.json (byte "), std::string::npos) << msg;
}

TEST(RocprofJson, OtherJsonIsBadFormat) {
  std::string msg = bad_format_message([] {
    PaddedBuffer b = padded(R"({"traceEvents":[]})");
    parse_rocprof_json(b, "kineto.json");
  });
  EXPECT_NE(msg.find("rocprofiler-sdk-tool"), std::string::npos) << msg;
  msg = bad_format_message([] {
    PaddedBuffer b = padded(R"({"rocprofiler-sdk-tool":[]} trailing)");
    parse_rocprof_json(b, "trailing.json");
  });
  EXPECT_NE(msg.find("trailing.json"), std::string::npos) << msg;
}

// Expected values from Python's csv module on the fixture (run in tests/data/rocprof):
// python3 -c "import csv; r=list(csv.DictReader(open('908_kernel_trace.csv'))); print(len(r),
// sum(int(x['End_Timestamp'])-int(x['Start_Timestamp']) for x in r))" → 10 128681
TEST(RocprofCsv, FixtureWithAgentInfo) {
  Trace t = parse_rocprof_csv(file_text(kFixtures / "908_kernel_trace.csv"), "kernel_trace.csv",
                              file_text(kFixtures / "908_agent_info.csv"));
  EXPECT_EQ(t.format, TraceFormat::kRocprofCsv);
  ASSERT_EQ(t.events.size(), 10u);
  EXPECT_EQ(t.stats.events_seen, 10u);
  EXPECT_EQ(total_duration(t), 128681);
  EXPECT_EQ(
      t.name(4),
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)");
  EXPECT_EQ(t.name(3), "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(t.events.correlation[3], 2650);
  EXPECT_EQ(t.events.stream[3], 565);  // Stream_Id, not Queue_Id 20
  EXPECT_EQ(t.events.ts_ns[3], 63861843088486);
  EXPECT_EQ(t.events.dur_ns[3], 70280);
  const KernelDetail& k = t.events.kernel_details[t.events.detail[3]];
  EXPECT_EQ(k.block, (std::array<int32_t, 3>{256, 1, 1}));
  EXPECT_EQ(k.grid, (std::array<int32_t, 3>{104, 1, 1}));  // 26624 / 256
  EXPECT_EQ(k.shared_memory, 37664);
  EXPECT_EQ(k.registers_per_thread, 92);
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(t.events.device[i], 0);  // "Agent 2" is the first GPU
    EXPECT_EQ(t.events.category[i], Category::kKernel);
  }
  ASSERT_EQ(t.devices.size(), 8u);
  EXPECT_EQ(t.devices[0].name, "AMD Instinct MI350X");
  EXPECT_EQ(t.devices[0].num_sms, 256);
  EXPECT_EQ(t.devices[0].compute_minor, 5);
  EXPECT_TRUE(t.warnings.empty());
}

TEST(RocprofCsv, FixtureWithoutAgentInfoWarns) {
  Trace t = parse_rocprof_csv(file_text(kFixtures / "908_kernel_trace.csv"), "kernel_trace.csv");
  ASSERT_EQ(t.events.size(), 10u);
  EXPECT_EQ(t.events.device[0], 0);
  EXPECT_TRUE(t.devices.empty());
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("agent_info"), std::string::npos);
}

TEST(RocprofCsv, QuotingAndOlderLayouts) {
  // Older rocprofv3: bare agent numbers, no Stream_Id; columns in another order;
  // CRLF line ends; a doubled quote and a line break inside quoted names.
  std::string csv =
      "\"Kernel_Name\",\"Start_Timestamp\",\"End_Timestamp\",\"Agent_Id\",\"Queue_Id\","
      "\"Correlation_Id\"\r\n"
      "\"f<a, \"\"b\"\">(int, int)\",100,150,4,1,1\r\n"
      "\"two\nlines\",200,260,5,1,2\r\n"
      "\r\n"
      "plain,300,301,4,2,3";
  Trace t = parse_rocprof_csv(csv, "old.csv");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.name(0), "f<a, \"b\">(int, int)");
  EXPECT_EQ(t.name(1), "two\nlines");
  EXPECT_EQ(t.name(2), "plain");
  EXPECT_EQ(t.events.dur_ns[1], 60);
  EXPECT_EQ(t.events.device[0], 0);
  EXPECT_EQ(t.events.device[1], 1);
  EXPECT_EQ(t.events.stream[2], 2);
  EXPECT_EQ(t.events.detail[0] != kNoDetail, true);
}

TEST(RocprofCsv, MissingColumnIsNamed) {
  std::string msg = bad_format_message([] {
    parse_rocprof_csv(
        "\"Kind\",\"Agent_Id\",\"Kernel_Name\",\"Correlation_Id\",\"End_Timestamp\"\n"
        "\"KERNEL_DISPATCH\",\"Agent 2\",\"k\",1,5\n",
        "no_start.csv");
  });
  EXPECT_NE(msg.find("Start_Timestamp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_start.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 1"), std::string::npos) << msg;
}

TEST(RocprofCsv, BadRowsNameTheLine) {
  const std::string header =
      "\"Agent_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";
  std::string msg = bad_format_message([&] {
    parse_rocprof_csv(header + "\"Agent 2\",\"k\",1,10,20\n\"Agent 2\",\"k\",2,x30,40\n", "n.csv");
  });
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Start_Timestamp"), std::string::npos) << msg;
  // An unquoted comma in a name shifts the columns.
  msg = bad_format_message(
      [&] { parse_rocprof_csv(header + "\"Agent 2\",f<a, b>,1,10,20\n", "w.csv"); });
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  msg = bad_format_message(
      [&] { parse_rocprof_csv(header + "\"Agent 2\",\"never closed,1,10,20\n", "q.csv"); });
  EXPECT_NE(msg.find("never ends"), std::string::npos) << msg;
  msg = bad_format_message([] { parse_rocprof_csv("", "empty.csv"); });
  EXPECT_NE(msg.find("empty.csv"), std::string::npos) << msg;
}

}  // namespace
}  // namespace magpie::trace
