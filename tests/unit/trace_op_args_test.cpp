// Op arguments parsed once at ingest: one OpDetail per distinct argument set,
// each with its parsed form, on the shared H200 trace (recorded with shapes).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <tuple>

#include "trace/kineto_reader.hpp"
#include "trace/op_args.hpp"
#include "trace/trace_links.hpp"
#include "trace/trace_loader.hpp"

namespace magpie::trace {
namespace {

namespace fs = std::filesystem;

const fs::path kH200 =
    fs::path(MAGPIE_SHARED_TRACES) / "h200/llama_4layer_bs16_prompt1024_decode16.json.gz";

TEST(OpArgs, ParsersReadKinetoArrays) {
  auto dims = parse_input_dims("[[16, 1024, 4096], [4096, 4096], [], null, [[1, 2], [3]]]");
  ASSERT_TRUE(dims);
  EXPECT_EQ(*dims, (OpDims{{16, 1024, 4096}, {4096, 4096}, {}, {}, {}}));
  EXPECT_FALSE(parse_input_dims("[[1, 2], oops]"));
  EXPECT_FALSE(parse_input_dims(""));
  EXPECT_EQ(parse_input_types(R"(["c10::BFloat16", "", "Scalar", null])"),
            (std::vector<std::string>{"c10::BFloat16", "", "Scalar", ""}));
  EXPECT_TRUE(parse_input_types("[1, 2]").empty());
}

TEST(OpArgs, EachDistinctArgumentSetIsKeptOnceAndParsed) {
  if (!fs::exists(kH200)) GTEST_SKIP() << kH200 << " is absent (../shared/traces not checked out)";
  Trace t = load_trace(kH200, {});
  const auto& e = t.events;
  size_t ops_with_args = 0;
  std::set<size_t> used;
  for (size_t r = 0; r < e.size(); ++r) {
    if (e.detail[r] == kNoDetail || is_gpu_activity(e.category[r]) || is_launch_api(e.category[r]))
      continue;
    ++ops_with_args;
    used.insert(e.detail[r]);
  }
  ASSERT_GT(ops_with_args, 1000u);
  // Far fewer argument sets than ops, every one used, none twice.
  EXPECT_LT(e.op_details.size() * 10, ops_with_args);
  EXPECT_EQ(used.size(), e.op_details.size());
  std::set<std::tuple<StringId, StringId, StringId, StringId>> texts;
  size_t with_dims = 0;
  for (const OpDetail& o : e.op_details) {
    EXPECT_TRUE(
        texts.insert({o.input_dims, o.input_type, o.concrete_inputs, o.input_strides}).second);
    // The parsed form is what the parsers give for the text.
    EXPECT_EQ(o.args.dims, parse_input_dims(t.str(o.input_dims)));
    EXPECT_EQ(o.args.types, parse_input_types(t.str(o.input_type)));
    EXPECT_EQ(o.args.concrete, parse_input_types(t.str(o.concrete_inputs)));
    with_dims += o.args.dims.has_value();
  }
  EXPECT_GT(with_dims, 0u);
}

TEST(TraceLinks, BuiltOnceByTheIngest) {
  if (!fs::exists(kH200)) GTEST_SKIP() << kH200 << " is absent (../shared/traces not checked out)";
  Trace t = load_trace(kH200, {});
  ASSERT_TRUE(t.links);
  const TraceLinks* built = t.links.get();
  EXPECT_EQ(&links_of(t), built);  // read, not rebuilt
  const TraceLinks again = link_trace(t);
  EXPECT_EQ(again.launch_of, built->launch_of);
  EXPECT_EQ(again.parent, built->parent);
  EXPECT_GT(built->summary.linked_gpu_events, 0u);
}

}  // namespace
}  // namespace magpie::trace
