// The multi-rank collective report: NCCL's bandwidth formulas, the message and
// group sizes read from collective args or from the c10d op, and the
// cross-rank matching (slowest rank, wait, skew). Real traces: HTA's two-rank
// sample (tests/data) and its NCCL collectives trace (../shared/traces);
// expected numbers are worked out by hand from the events quoted in comments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "analysis/collective_report.hpp"
#include "core/file_io.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::analysis {
namespace {

namespace fs = std::filesystem;

trace::Trace parse(const std::string& json, const std::string& name) {
  PaddedBuffer b(json.size());
  std::memcpy(b.data(), json.data(), json.size());
  return trace::parse_kineto(b, name, {});
}

void collect(const trace::Trace& t, int rank, CollectiveCollection& c) {
  collect_collectives(t, trace::link_trace(t), rank, c);
}

const CollectiveSizeRow* find_row(const std::vector<CollectiveSizeRow>& rows, CollectiveKind kind,
                                  int64_t bytes, int rank = -1) {
  for (const auto& r : rows) {
    if (r.kind == kind && r.message_bytes == bytes && r.rank == rank) return &r;
  }
  return nullptr;
}

TEST(CollectiveFormulas, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllToAll, 64), 63.0 / 64);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kSendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 0), 0.0);
}

TEST(CollectiveFormulas, KindsFromArgsOpsAndKernelNames) {
  EXPECT_EQ(collective_kind_from_name("allreduce"), CollectiveKind::kAllReduce);
  EXPECT_EQ(collective_kind_from_name("_allgather_base"), CollectiveKind::kAllGather);
  EXPECT_EQ(collective_kind_from_name("_reduce_scatter_base"), CollectiveKind::kReduceScatter);
  EXPECT_EQ(collective_kind_from_name("c10d::alltoall_base_"), CollectiveKind::kAllToAll);
  EXPECT_EQ(collective_kind_from_name("send"), CollectiveKind::kSendRecv);
  EXPECT_EQ(collective_kind_from_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),
            CollectiveKind::kSendRecv);
  EXPECT_EQ(collective_kind_from_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
            CollectiveKind::kReduceScatter);
  EXPECT_EQ(collective_kind_from_name("ncclKernel_Broadcast_RING_LL_Sum_int8_t"),
            CollectiveKind::kBroadcast);
  EXPECT_EQ(collective_kind_from_name("record_param_comms"), std::nullopt);
  EXPECT_EQ(dtype_bytes("Float"), 4);
  EXPECT_EQ(dtype_bytes("BFloat16"), 2);
  EXPECT_EQ(dtype_bytes("c10::Half"), 2);
  EXPECT_EQ(dtype_bytes("long int"), 8);
  EXPECT_EQ(dtype_bytes("unsigned char"), 1);
  EXPECT_EQ(dtype_bytes("Scalar"), 0);
}

// One all_reduce kernel with Kineto ≥ 2.1 args, `dur` us long, starting at `ts`.
std::string allreduce_rank(int rank, double ts, double dur) {
  return fmt::format(
      R"J({{"distributedInfo":{{"rank":{0},"world_size":4}},"traceEvents":[)J"
      R"J({{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)","pid":0,"tid":7,"ts":{1},"dur":{2},)J"
      R"J("args":{{"device":0,"stream":7,"correlation":5,"Collective name":"allreduce","In msg nelems":1048576,"Out msg nelems":1048576,"Group size":2,"dtype":"BFloat16","Process Group Name":"0"}}}},)J"
      R"J({{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":8,"ts":{1},"dur":{3},"args":{{"device":0,"stream":8,"correlation":6}}}}]}})J",
      rank, ts, dur, dur / 2);
}

TEST(CollectiveReport, MatchesCallsAcrossRanksAndNamesTheSlowest) {
  CollectiveCollection c;
  // Rank 0 arrives first and waits: 400 us; rank 1 arrives 300 us later: 100 us.
  collect(parse(allreduce_rank(0, 1000, 400), "r0"), 0, c);
  collect(parse(allreduce_rank(1, 1300, 100), "r1"), 1, c);
  CollectiveReport rep = make_collective_report(std::move(c));
  ASSERT_EQ(rep.summary.size(), 1u);
  const auto& row = rep.summary[0];
  EXPECT_EQ(row.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(row.message_bytes, 1048576 * 2);  // nelems × 2 bytes (BFloat16)
  EXPECT_EQ(row.group_size, 2);               // the arg, not distributedInfo's 4
  EXPECT_EQ(row.calls, 2u);
  EXPECT_DOUBLE_EQ(row.mean_us, 250.0);
  EXPECT_EQ(row.matched_instances, 1u);
  EXPECT_DOUBLE_EQ(row.transfer_us, 100.0);
  EXPECT_DOUBLE_EQ(row.wait_us, 300.0);
  EXPECT_DOUBLE_EQ(row.start_skew_us, 300.0);
  EXPECT_EQ(row.slowest_rank, 0);
  EXPECT_EQ(row.fastest_rank, 1);
  // algBW = 2 MiB / 100 us; busBW = algBW · 2(n-1)/n = algBW for n = 2.
  EXPECT_NEAR(row.algbw_transfer_gbps, 2097152.0 / 100e-6 / 1e9, 1e-9);
  EXPECT_NEAR(row.busbw_transfer_gbps, row.algbw_transfer_gbps, 1e-9);
  // Per rank: half the collective hidden under the gemm (dur/2 on another stream).
  ASSERT_EQ(rep.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(rep.ranks[0].communication_us, 400.0);
  EXPECT_DOUBLE_EQ(rep.ranks[0].exposed_communication_us, 200.0);
  const auto tables = collective_tables(rep);
  ASSERT_EQ(tables.size(), 4u);
  EXPECT_EQ(tables[0].name, "collective_summary");
  EXPECT_EQ(tables[0].rows.size(), 1u);
  EXPECT_EQ(tables[1].rows.size(), 2u);  // one row per rank
}

TEST(CollectiveReport, UnevenCallCountsAreNotMatched) {
  CollectiveCollection c;
  collect(parse(allreduce_rank(0, 1000, 400), "r0"), 0, c);
  CollectiveReport rep = make_collective_report(std::move(c));
  ASSERT_EQ(rep.summary.size(), 1u);
  EXPECT_EQ(rep.summary[0].matched_instances, 0u);
  EXPECT_DOUBLE_EQ(rep.summary[0].algbw_gbps, 2097152.0 / 400e-6 / 1e9);
}

// HTA's sampled two-rank job: old traces (no collective args) whose NCCL
// kernels are all "SendRecv"; the c10d op that launched each one names the
// collective and, recorded with shapes, its size.
TEST(CollectiveReport, HtaTwoRankSampleFromC10dOps) {
  const fs::path dir = fs::path(MAGPIE_SOURCE_DIR) / "tests/data/public_traces/hta__trace_filter";
  CollectiveCollection c;
  for (int rank : {0, 1}) {
    trace::Trace t = trace::load_trace(dir / fmt::format("sampled_rank-{}.json.gz", rank), {});
    ASSERT_EQ(t.rank, rank);
    collect(t, rank, c);
  }
  CollectiveReport rep = make_collective_report(std::move(c));
  EXPECT_EQ(rep.calls.size(), 20u);
  // c10d::_allgather_base_ with Input Dims [[1073741824], [16777216]] signed char:
  // 1 GiB out, 16 MiB in → group of 64. Kernel times: rank 0 42496 and 63644 us,
  // rank 1 42744 and 62163 us.
  const CollectiveSizeRow* ag = find_row(rep.summary, CollectiveKind::kAllGather, 1073741824);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->group_size, 64);
  EXPECT_EQ(ag->calls, 4u);
  EXPECT_EQ(ag->matched_instances, 2u);
  const double transfer = (42496.0 + 62163.0) / 2;  // the faster rank of each instance
  EXPECT_DOUBLE_EQ(ag->transfer_us, transfer);
  const double algbw = 1073741824.0 / (transfer * 1e-6) / 1e9;  // ≈ 20.52 GB/s
  EXPECT_NEAR(ag->algbw_transfer_gbps, algbw, 1e-9);
  EXPECT_NEAR(ag->busbw_transfer_gbps, algbw * 63.0 / 64.0, 1e-9);
  EXPECT_DOUBLE_EQ(ag->wait_us, ((42744.0 - 42496.0) + (63644.0 - 62163.0)) / 2);
  EXPECT_EQ(ag->slowest_rank, 0);  // 42496 + 63644 > 42744 + 62163
  // c10d::alltoall_base_ [[382132224], [419430400]] bytes: the larger message;
  // group size from distributedInfo (world_size 128).
  const CollectiveSizeRow* a2a = find_row(rep.per_rank, CollectiveKind::kAllToAll, 419430400, 0);
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(a2a->group_size, 128);
  EXPECT_EQ(a2a->calls, 2u);
  EXPECT_DOUBLE_EQ(a2a->mean_us, (62783.0 + 67827.0) / 2);
  // all_reduce_ on a TensorList has no size: counted, bandwidth left empty, said so.
  const CollectiveSizeRow* ar = find_row(rep.summary, CollectiveKind::kAllReduce, -1);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->calls, 8u);
  EXPECT_EQ(ar->algbw_gbps, 0.0);
  ASSERT_FALSE(rep.warnings.empty());
  EXPECT_NE(rep.warnings[0].find("8 collective kernel(s) have no message size"), std::string::npos);
}

// HTA's NCCL trace (Kineto ≥ 2.1): every NCCL kernel carries its args.
TEST(CollectiveReport, HtaNcclCollectivesFromKernelArgs) {
  const fs::path f = fs::path(MAGPIE_SHARED_TRACES) / "public/hta__nccl_collectives.json.gz";
  if (!fs::exists(f)) GTEST_SKIP() << f << " is absent: no shared trace collection on this machine";
  trace::Trace t = trace::load_trace(f, {});
  CollectiveCollection c;
  collect(t, 0, c);
  CollectiveReport rep = make_collective_report(std::move(c));
  EXPECT_EQ(rep.calls.size(), 21u);  // 15 all_reduce + 6 broadcast kernels
  // all_reduce of 2049000 Float (8196000 bytes), group 2, kernels of
  // 3306.963, 2520.607 and 5993.392 us.
  const CollectiveSizeRow* ar = find_row(rep.summary, CollectiveKind::kAllReduce, 8196000);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->group_size, 2);
  EXPECT_EQ(ar->dtype, "Float");
  EXPECT_EQ(ar->calls, 3u);
  const double mean = (3306.963 + 2520.607 + 5993.392) / 3;
  EXPECT_NEAR(ar->mean_us, mean, 1e-6);
  EXPECT_NEAR(ar->algbw_gbps, 8196000.0 / (mean * 1e-6) / 1e9, 1e-6);  // ≈ 2.08 GB/s
  EXPECT_NEAR(ar->busbw_gbps, ar->algbw_gbps * 2.0 * (2 - 1) / 2, 1e-9);
  // broadcast of 53120 Float: 30.975, 30.848, 29.184 us; busBW = algBW.
  const CollectiveSizeRow* bc = find_row(rep.summary, CollectiveKind::kBroadcast, 53120 * 4);
  ASSERT_NE(bc, nullptr);
  EXPECT_EQ(bc->calls, 3u);
  EXPECT_NEAR(bc->busbw_gbps, 212480.0 / ((30.975 + 30.848 + 29.184) / 3 * 1e-6) / 1e9, 1e-6);
}

}  // namespace
}  // namespace magpie::analysis
