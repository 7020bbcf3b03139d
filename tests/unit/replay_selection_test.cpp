// Op selection, cost attribution, module generation and the files written,
// on a small Kineto trace whose op events carry args copied from real traces
// (H200 Llama, H100 BERT), and on the real H200 trace when it is present.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "replay/bench_module.hpp"
#include "replay/replay.hpp"
#include "replay/replay_writer.hpp"
#include "trace/kineto_reader.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::replay {
namespace {

namespace fs = std::filesystem;

// ts/dur in µs. Host thread 1; kernels on stream 7.
constexpr std::string_view kTrace = R"({"traceEvents": [
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":0,"dur":100,"args":{"External id":1,"Concrete Inputs":["","",""],"Input type":["c10::BFloat16","c10::BFloat16",""],"Input Strides":[[4096,4096,1],[4096,1],[]],"Input Dims":[[16,1,4096],[4096,4096],[]]}},
{"ph":"X","cat":"cpu_op","name":"aten::t","pid":1,"tid":1,"ts":2,"dur":5,"args":{"External id":2,"Concrete Inputs":[""],"Input type":["c10::BFloat16"],"Input Strides":[[4096,1]],"Input Dims":[[4096,4096]]}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":20,"dur":70,"args":{"External id":3,"Concrete Inputs":["",""],"Input type":["c10::BFloat16","c10::BFloat16"],"Input Strides":[[4096,1],[1,4096]],"Input Dims":[[16,4096],[4096,4096]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":30,"dur":5,"args":{"External id":3,"correlation":101}},
{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32","pid":0,"tid":7,"ts":200,"dur":50,"args":{"External id":3,"device":0,"stream":7,"correlation":101}},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":300,"dur":100,"args":{"External id":4,"Concrete Inputs":["","",""],"Input type":["c10::BFloat16","c10::BFloat16",""],"Input Strides":[[4096,4096,1],[4096,1],[]],"Input Dims":[[16,1,4096],[4096,4096],[]]}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":320,"dur":70,"args":{"External id":5,"Concrete Inputs":["",""],"Input type":["c10::BFloat16","c10::BFloat16"],"Input Strides":[[4096,1],[1,4096]],"Input Dims":[[16,4096],[4096,4096]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":330,"dur":5,"args":{"External id":5,"correlation":102}},
{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32","pid":0,"tid":7,"ts":400,"dur":40,"args":{"External id":5,"device":0,"stream":7,"correlation":102}},
{"ph":"X","cat":"cpu_op","name":"aten::scaled_dot_product_attention","pid":1,"tid":1,"ts":500,"dur":100,"args":{"External id":6,"Concrete Inputs":["","","","","0.","True","0.088388347648318447","True"],"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","","Scalar","Scalar","Scalar","Scalar"],"Input Strides":[[4194304,128,4096,1],[1048576,131072,128,1],[1048576,131072,128,1],[],[],[],[],[]],"Input Dims":[[16,32,1024,128],[16,8,1024,128],[16,8,1024,128],[],[],[],[],[]]}},
{"ph":"X","cat":"cpu_op","name":"aten::_scaled_dot_product_cudnn_attention","pid":1,"tid":1,"ts":505,"dur":90,"args":{"External id":7,"Concrete Inputs":["","","","","False","0.","True","False","0.088388347648318447"],"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","","Scalar","Scalar","Scalar","Scalar","Scalar"],"Input Strides":[[4194304,128,4096,1],[1048576,131072,128,1],[1048576,131072,128,1],[],[],[],[],[],[]],"Input Dims":[[16,32,1024,128],[16,8,1024,128],[16,8,1024,128],[],[],[],[],[],[]]}},
{"ph":"X","cat":"cpu_op","name":"aten::_cudnn_attention_forward","pid":1,"tid":1,"ts":510,"dur":80,"args":{"External id":8,"Concrete Inputs":["","","","","","","1024","1024","False","0.","True","False","0.088388347648318447"],"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","","","","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar","Scalar"],"Input Strides":[[4194304,128,4096,1],[1048576,131072,128,1],[1048576,131072,128,1],[],[],[],[],[],[],[],[],[],[]],"Input Dims":[[16,32,1024,128],[16,8,1024,128],[16,8,1024,128],[],[],[],[],[],[],[],[],[],[]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":520,"dur":5,"args":{"External id":8,"correlation":103}},
{"ph":"X","cat":"kernel","name":"cudnn_generated_fort_native_sdpa_sm90_flash_fprop","pid":0,"tid":7,"ts":600,"dur":85,"args":{"External id":8,"device":0,"stream":7,"correlation":103}},
{"ph":"X","cat":"cpu_op","name":"aten::all","pid":1,"tid":1,"ts":700,"dur":10,"args":{"External id":9,"Concrete Inputs":[""],"Input type":["bool"],"Input Strides":[[141,1]],"Input Dims":[[1,141]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":702,"dur":2,"args":{"External id":9,"correlation":104}},
{"ph":"X","cat":"kernel","name":"reduce_kernel_all","pid":0,"tid":7,"ts":710,"dur":5,"args":{"External id":9,"device":0,"stream":7,"correlation":104}},
{"ph":"X","cat":"cpu_op","name":"aten::cat","pid":1,"tid":1,"ts":800,"dur":20,"args":{"External id":10,"Concrete Inputs":["","-1"],"Input type":["TensorList","Scalar"],"Input Strides":[[[65536,1,1024],[65536,1,1024]],[]],"Input Dims":[[[1,1024,64],[1,1024,64]],[]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":805,"dur":2,"args":{"External id":10,"correlation":105}},
{"ph":"X","cat":"kernel","name":"void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 3, 64, 64>","pid":0,"tid":7,"ts":820,"dur":10,"args":{"External id":10,"device":0,"stream":7,"correlation":105}},
{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":900,"dur":30,"args":{"External id":11,"Concrete Inputs":["","","-1","False","False"],"Input type":["c10::BFloat16","long int","Scalar","Scalar","Scalar"],"Input Strides":[[4096,1],[1,1],[],[],[]],"Input Dims":[[32000,4096],[16,1],[],[],[]]}},
{"ph":"X","cat":"cpu_op","name":"aten::index_select","pid":1,"tid":1,"ts":905,"dur":20,"args":{"External id":12,"Concrete Inputs":["","0",""],"Input type":["c10::BFloat16","Scalar","long int"],"Input Strides":[[4096,1],[],[1]],"Input Dims":[[32000,4096],[],[16]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":910,"dur":2,"args":{"External id":12,"correlation":106}},
{"ph":"X","cat":"kernel","name":"indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>","pid":0,"tid":7,"ts":930,"dur":7,"args":{"External id":12,"device":0,"stream":7,"correlation":106}},
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1000,"dur":10,"args":{"External id":13,"Concrete Inputs":["","","1"],"Input type":["long int","long int","Scalar"],"Input Strides":[[1],[],[]],"Input Dims":[[1024],[],[]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1002,"dur":2,"args":{"External id":13,"correlation":107}},
{"ph":"X","cat":"kernel","name":"vectorized_elementwise_kernel_add_long","pid":0,"tid":7,"ts":1010,"dur":3,"args":{"External id":13,"device":0,"stream":7,"correlation":107}}
]})";

trace::Trace load_snippet() {
  PaddedBuffer b(kTrace.size());
  std::memcpy(b.data(), kTrace.data(), kTrace.size());
  trace::IngestOptions o;
  o.threads = 1;
  return trace::parse_kineto(b, "snippet.json", o);
}

ReplayRequest top(int k) {
  ReplayRequest r;
  r.top_k = k;
  return r;
}

const ReplayTarget* target_named(const ReplayOutcome& o, std::string_view name) {
  for (const auto& t : o.targets) {
    if (t.signature.name == name) return &t;
  }
  return nullptr;
}

TEST(ReplaySelection, TopKRanksOpsByAttributedGpuTimeAndListsTheUnreplayable) {
  const auto trace = load_snippet();
  const auto o = plan_replay(trace, top(10));
  EXPECT_EQ(o.trace_gpu_ns, (50 + 40 + 85 + 5 + 10 + 7 + 3) * 1000);
  // mm (2 calls, 90 µs) > cudnn attention (85) > cat (10) > index_select (7) > all (5) > add (3)
  ASSERT_EQ(o.targets.size(), 4u);
  EXPECT_EQ(o.targets[0].signature.name, "aten::mm");
  EXPECT_EQ(o.targets[0].rank, 1);
  EXPECT_EQ(o.targets[0].slug, "01_aten_mm");
  EXPECT_EQ(o.targets[0].cost.calls, 2);
  EXPECT_EQ(o.targets[0].cost.kernel_count, 2);
  EXPECT_EQ(o.targets[0].cost.total_ns, 90000);
  EXPECT_DOUBLE_EQ(o.targets[0].cost.mean_ns_per_call(), 45000);
  ASSERT_EQ(o.targets[0].cost.kernels.size(), 1u);
  EXPECT_EQ(o.targets[0].cost.kernels[0].count, 2);
  // the kernel was launched by _cudnn_attention_forward (not in the table): the replayed op is its
  // parent
  EXPECT_EQ(o.targets[1].signature.name, "aten::_scaled_dot_product_cudnn_attention");
  EXPECT_FALSE(o.targets[1].runs_on_cpu);
  EXPECT_NE(o.targets[1].cpu_reason.find("CUDA"), std::string::npos);
  EXPECT_EQ(o.targets[2].signature.name, "aten::cat");
  EXPECT_EQ(o.targets[3].signature.name,
            "aten::index_select");  // embedding's kernel belongs to its leaf
  ASSERT_EQ(o.skipped.size(), 2u);
  EXPECT_EQ(o.skipped[0].signature.name, "aten::all");
  EXPECT_EQ(o.skipped[0].rank, 5);
  EXPECT_NE(o.skipped[0].reason.find("not in the replay table"), std::string::npos);
  EXPECT_EQ(o.skipped[1].signature.name, "aten::add");
  EXPECT_NE(o.skipped[1].reason.find("no floating-point tensor input"), std::string::npos);
}

TEST(ReplaySelection, CpuOnlyTraceRanksInnermostReplayableOpsByHostTime) {
  // the same events without the GPU side, as a CPU run records them
  std::string cpu;
  std::istringstream lines{std::string(kTrace)};
  for (std::string line; std::getline(lines, line);) {
    if (line.find(R"("cat":"kernel")") == std::string::npos) cpu += line + "\n";
  }
  PaddedBuffer b(cpu.size());
  std::memcpy(b.data(), cpu.data(), cpu.size());
  const auto trace = trace::parse_kineto(b, "cpu.json", trace::IngestOptions{});
  const auto o = plan_replay(trace, top(3));
  EXPECT_TRUE(o.ranked_by_host_time);
  EXPECT_EQ(o.trace_gpu_ns, 0);
  ASSERT_EQ(o.targets.size(), 3u);
  // mm 2 × 70 µs; cuDNN attention 90 µs (sdpa and linear hold a replayable op: not counted twice);
  // cat 20
  EXPECT_EQ(o.targets[0].signature.name, "aten::mm");
  EXPECT_EQ(o.targets[0].cost.cpu_total_ns, 140000);
  EXPECT_EQ(o.targets[1].signature.name, "aten::_scaled_dot_product_cudnn_attention");
  EXPECT_NE(o.selection.find("host time"), std::string::npos);
}

TEST(ReplaySelection, TopKCutsAtK) {
  const auto o = plan_replay(load_snippet(), top(2));
  EXPECT_EQ(o.targets.size(), 2u);
  EXPECT_TRUE(o.skipped.empty());
}

TEST(ReplaySelection, OpByNameTakesTheKernelsOfItsWholeSubtree) {
  auto r = top(0);
  r.ops.push_back(parse_op_query("linear"));
  const auto o = plan_replay(load_snippet(), r);
  ASSERT_EQ(o.targets.size(), 1u);
  EXPECT_EQ(o.targets[0].signature.name, "aten::linear");
  EXPECT_EQ(o.targets[0].cost.total_ns, 90000);
  EXPECT_EQ(o.targets[0].cost.calls, 2);
}

TEST(ReplaySelection, OpWithShapesAndUnknownOps) {
  auto r = top(0);
  r.ops.push_back(parse_op_query("aten::mm:[[16,4096],[4096,4096]]"));
  EXPECT_EQ(plan_replay(load_snippet(), r).targets.size(), 1u);
  r.ops = {parse_op_query("aten::mm:[[4096,4096]]")};
  try {
    plan_replay(load_snippet(), r);
    FAIL() << "expected kNotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("aten::mm"), std::string::npos);
  }
  // a view is selected by name and listed with its reason, never dropped
  r.ops = {parse_op_query("aten::t")};
  const auto o = plan_replay(load_snippet(), r);
  ASSERT_EQ(o.skipped.size(), 1u);
  EXPECT_NE(o.skipped[0].reason.find("a view"), std::string::npos);
  EXPECT_THROW(plan_replay(load_snippet(), top(0)), Error);
  EXPECT_THROW(parse_op_query("aten::mm[[1]]"), Error);
  EXPECT_EQ(parse_op_query("mm").name, "aten::mm");
}

TEST(ReplayBenchModule, WritesRecordedLayoutsBoundsAndCallStyle) {
  const auto o = plan_replay(load_snippet(), top(10));
  const auto* mm = target_named(o, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_NE(mm->module_text.find(
                R"(("tensor", dict(shape=[4096, 4096], stride=[1, 4096], dtype="bfloat16")))"),
            std::string::npos)
      << mm->module_text;
  EXPECT_NE(mm->module_text.find("OP = \"mm\""), std::string::npos);
  // roofline floor: A, B read once and C written once; 2·M·N·K FLOPs
  EXPECT_DOUBLE_EQ(mm->min_bytes, 2.0 * (16 * 4096 + 4096 * 4096 + 16 * 4096));
  EXPECT_DOUBLE_EQ(mm->min_flops, 2.0 * 16 * 4096 * 4096);
  EXPECT_NE(compare_yaml_text(*mm, "t.json").find("min_flops: 536870912"), std::string::npos);
  const auto* sel = target_named(o, "aten::index_select");
  ASSERT_NE(sel, nullptr);
  // indices bounded by the indexed dimension of the weight
  EXPECT_NE(sel->module_text.find(R"(dict(shape=[16], stride=[1], dtype="int64", high=32000))"),
            std::string::npos)
      << sel->module_text;
  const auto* cat = target_named(o, "aten::cat");
  ASSERT_NE(cat, nullptr);
  // element dtype is not recorded: taken from the kernel's 4-byte OpaqueType, and said so
  EXPECT_NE(cat->module_text.find(R"(dtype="float32")"), std::string::npos);
  ASSERT_FALSE(cat->notes.empty());
  EXPECT_NE(cat->notes[0].find("TensorList"), std::string::npos);
  const auto* attn = target_named(o, "aten::_scaled_dot_product_cudnn_attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_NE(attn->module_text.find("FIRST_OUTPUT_ONLY = True"), std::string::npos);
  EXPECT_EQ(attn->min_bytes, 0);  // causal attention: no floor
  EXPECT_EQ(compare_yaml_text(*attn, "t.json").find("min_bytes"), std::string::npos);
  EXPECT_NE(attn->module_text.find("(\"scalar\", 0.088388347648318447)"), std::string::npos);
}

ReplayTarget target_for(std::string_view name, std::string_view dims, std::string_view types,
                        std::string_view strides, std::string_view concrete) {
  ReplayTarget t;
  t.signature.name = std::string(name);
  t.op = find_op(name);
  auto p = parse_op_arguments({dims, types, strides, concrete});
  EXPECT_EQ(p.error, "");
  t.arguments = p.arguments;
  return t;
}

TEST(ReplayBenchModule, InPlaceCopyAndToBecomeCallsThatLeaveInputsAlone) {
  // aten::copy_(float32 dst, bfloat16 src) from the H200 trace
  auto copy = target_for("aten::copy_", "[[16, 1024, 4096], [16, 1024, 4096], []]",
                         R"(["float", "c10::BFloat16", "Scalar"])",
                         "[[4194304, 4096, 1], [4194304, 4096, 1], []]", R"(["", "", "False"])");
  ASSERT_FALSE(prepare_target(copy));
  auto text = bench_module_text(copy, "t.json");
  EXPECT_NE(text.find("(\"dst\", dict(shape=[16, 1024, 4096]"), std::string::npos);
  EXPECT_NE(text.find("out.copy_(inputs[0])"), std::string::npos);
  // aten::to(bf16 → float32): dtype code 6 in the recorded to.device overload
  auto to =
      target_for("aten::to", "[[1, 64, 1], [], [], [], [], []]",
                 R"(["c10::BFloat16", "", "Scalar", "Scalar", "Scalar", ""])",
                 "[[64, 1, 1], [], [], [], [], []]", R"(["", "", "6", "False", "False", ""])");
  ASSERT_FALSE(prepare_target(to));
  EXPECT_NE(bench_module_text(to, "t.json").find("_to_copy(inputs[0], dtype=torch.float32)"),
            std::string::npos);
  // aten::add_ replays as aten::add
  auto add = target_for("aten::add_", "[[1, 141, 512], [1, 141, 512], []]",
                        R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])",
                        "[[72192, 512, 1], [72192, 512, 1], []]", R"(["", "", "1"])");
  ASSERT_FALSE(prepare_target(add));
  EXPECT_NE(bench_module_text(add, "t.json").find("OP = \"add\""), std::string::npos);
  // a to() that moves devices only has nothing to replay
  auto move =
      target_for("aten::to", "[[4], [], [], [], []]", R"(["float", "", "Scalar", "Scalar", ""])",
                 "[[1], [], [], [], []]", R"(["", "", "False", "False", ""])");
  auto why = prepare_target(move);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("device move"), std::string::npos);
  EXPECT_EQ(scalar_type_name(15), "bfloat16");
}

TEST(ReplayWriter, WritesEveryFileAndKeepsAnEditedCandidate) {
  const auto o = plan_replay(load_snippet(), top(10));
  const fs::path dir =
      fs::temp_directory_path() / ("magpie_replay_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto files = write_replay(o, dir);
  ASSERT_EQ(files.targets.size(), o.targets.size());
  for (const auto& f : files.targets) {
    for (const auto& p : {f.baseline, f.candidate, f.compare_yaml, f.note_md, f.note_json})
      EXPECT_TRUE(fs::exists(p)) << p;
  }
  std::ifstream yaml(files.targets[0].compare_yaml);
  std::stringstream ys;
  ys << yaml.rdbuf();
  EXPECT_NE(ys.str().find("get_inputs: \"baseline:get_inputs\""), std::string::npos);
  std::ifstream md(files.summary_md);
  std::stringstream ms;
  ms << md.rdbuf();
  EXPECT_NE(ms.str().find("not replayed: no floating-point tensor input"), std::string::npos);
  {
    std::ofstream edit(files.targets[0].candidate);
    edit << "# edited\n";
  }
  files = write_replay(o, dir);
  EXPECT_TRUE(files.targets[0].candidate_kept);
  std::ifstream kept(files.targets[0].candidate);
  std::string first;
  std::getline(kept, first);
  EXPECT_EQ(first, "# edited");
  const auto j = outcome_json(o, &files);
  EXPECT_EQ(j["targets"].size(), o.targets.size());
  EXPECT_EQ(j["skipped"][0]["op"], "aten::all");
  fs::remove_all(dir);
}

TEST(ReplayRealTrace, H200LlamaTopOpsAreConsistent) {
  const fs::path path =
      fs::path(MAGPIE_SHARED_TRACES) / "h200" / "llama_4layer_bs16_prompt1024_decode16.json.gz";
  if (!fs::exists(path))
    GTEST_SKIP() << path << " is absent: no shared trace collection on this machine";
  ReplayRequest r = top(20);
  r.trace_path = path;
  const auto o = run_replay(r);
  EXPECT_EQ(o.targets.size() + o.skipped.size(), 20u);
  int64_t previous = INT64_MAX;
  for (const auto& t : o.targets) {
    int64_t sum = 0;
    for (const auto& k : t.cost.kernels) sum += k.total_ns;
    EXPECT_EQ(sum, t.cost.total_ns) << t.slug;
    EXPECT_LE(t.cost.total_ns, previous) << t.slug;
    previous = t.cost.total_ns;
    EXPECT_GT(t.cost.calls, 0) << t.slug;
    EXPECT_FALSE(t.module_text.empty());
  }
  // the prefill attention is among the top ops, replayed as recorded (cuDNN), GPU only
  const auto* attn = target_named(o, "aten::_scaled_dot_product_cudnn_attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_FALSE(attn->runs_on_cpu);
  EXPECT_EQ(o.targets.front().signature.name, "aten::mm");
}

}  // namespace
}  // namespace magpie::replay
