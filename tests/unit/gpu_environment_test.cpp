// The report environment block: which GPUs a run used (visibility mask or an
// explicit list), their datasheet entries, the recorded variables, the
// caller's model/image slots, and the build's version and commit.
#include <gtest/gtest.h>

#include "gpu/environment.hpp"
#include "kernel/report_json.hpp"

namespace magpie::gpu {
namespace {

SystemStatus two_h200s() {
  SystemStatus s;
  s.vendor = "NVIDIA";
  s.driver_version = "580.95.05";
  s.cuda_version = "13.0";
  for (int i = 0; i < 2; ++i) {
    DeviceStatus d;
    d.index = i;
    d.name = "NVIDIA H200";
    d.uuid = i == 0 ? "GPU-00000000-1111-2222-3333-444444444444"
                    : "GPU-55555555-6666-7777-8888-999999999999";
    d.memory_total = 150754820096ULL;
    s.devices.push_back(d);
  }
  return s;
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(GpuEnvironment, VisibleDevicesPickTheGpusUsed) {
  auto s = make_environment({}, two_h200s(), env_of({{"CUDA_VISIBLE_DEVICES", "1"}}));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].index, 1);
  EXPECT_EQ(s.gpus[0].datasheet_entry, "H200");
  EXPECT_EQ(s.env_vars.at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_FALSE(s.env_vars.at("HIP_VISIBLE_DEVICES").has_value());
  // By UUID prefix, as CUDA accepts it.
  auto by_uuid =
      make_environment({}, two_h200s(), env_of({{"CUDA_VISIBLE_DEVICES", "GPU-00000000"}}));
  ASSERT_EQ(by_uuid.gpus.size(), 1u);
  EXPECT_EQ(by_uuid.gpus[0].index, 0);
  EXPECT_EQ(make_environment({}, two_h200s(), env_of({})).gpus.size(), 2u);
}

TEST(GpuEnvironment, ExplicitGpusVariablesAndCallerSlots) {
  EnvironmentRequest r;
  r.gpu_indices = std::vector<int>{0};
  r.env_vars = {"VLLM_USE_V1"};
  r.env_passed = {{"CUDA_VISIBLE_DEVICES", "0"}};
  r.model = "Qwen/Qwen3-8B";
  r.model_revision = "b968826d9c46dd6066d109eabc6255188de91218";
  r.image = "vllm/vllm-openai:v0.11.0";
  r.image_digest = "sha256:0123abcd";
  auto s = make_environment(r, two_h200s(), env_of({{"VLLM_USE_V1", "1"}}));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].uuid, "GPU-00000000-1111-2222-3333-444444444444");
  auto j = environment_json(s);
  EXPECT_EQ(j["env_vars"]["VLLM_USE_V1"], "1");
  EXPECT_EQ(j["env_vars"]["CUDA_VISIBLE_DEVICES"], "0");  // passed to the child, recorded as set
  EXPECT_EQ(j["model"], "Qwen/Qwen3-8B");
  EXPECT_EQ(j["model_revision"], "b968826d9c46dd6066d109eabc6255188de91218");
  EXPECT_EQ(j["image_digest"], "sha256:0123abcd");
  EXPECT_EQ(j["driver_version"], "580.95.05");
  EXPECT_EQ(j["cuda_version"], "13.0");
  EXPECT_EQ(j["gpus"][0]["datasheet_entry"], "H200");
}

TEST(GpuEnvironment, BuildVersionAndCommitFromConfigure) {
  auto s = make_environment({}, SystemStatus{}, env_of({}));
  EXPECT_FALSE(s.magpie_version.empty());
  EXPECT_NE(s.magpie_version.find('.'), std::string::npos);
  // A 40-hex commit in a git checkout (this test tree is one); "unknown" otherwise.
  EXPECT_TRUE(s.build_commit == "unknown" || s.build_commit.size() == 40) << s.build_commit;
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_FALSE(s.notes.empty());  // says why no GPU is listed
  auto j = environment_json(s);
  for (const char* key :
       {"magpie_version", "build_commit", "host", "os", "driver_version", "cuda_version", "gpus",
        "env_vars", "model", "model_revision", "image", "image_digest"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(GpuEnvironment, CaptureReadsThisMachine) {
  auto s = capture_environment();
  EXPECT_FALSE(s.host.empty());
  EXPECT_NE(s.os.find("Linux"), std::string::npos) << s.os;
}

TEST(GpuEnvironment, KernelReportsCarryTheBlockAndTheirPeaks) {
  kernel::ReportEnvironment env;
  env.environment = make_environment({}, two_h200s(), env_of({{"CUDA_VISIBLE_DEVICES", "0"}}));
  env.gpu = {"NVIDIA", "NVIDIA H200", "sm_90"};
  kernel::fill_peaks(env.gpu);
  auto j = kernel::analyze_report({}, "2026-12-03T12:00:00", &env);
  ASSERT_TRUE(j.contains("environment"));
  EXPECT_EQ(j["environment"]["gpus"].size(), 1u);
  EXPECT_EQ(j["environment"]["gpus"][0]["datasheet_entry"], "H200");
  EXPECT_EQ(j["gpu_peaks"]["memory_bandwidth_tbps"], 4.8);
  EXPECT_EQ(j["gpu_peaks"]["bf16_tflops"], 989);
  EXPECT_NE(j["gpu_peaks"]["source"].get<std::string>().find("H200"), std::string::npos);
  // Without one (callers that have none), the report is as before.
  EXPECT_FALSE(kernel::analyze_report({}, "t").contains("environment"));
}

}  // namespace
}  // namespace magpie::gpu
