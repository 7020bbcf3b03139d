// Which commands go to Ray and how the node's command line is built
// (jobs::plan_ray_job), and batch files (jobs::load_batch_entries).
#include "jobs/ray_jobs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace magpie::jobs {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("magpie_ray_jobs_test_" + name + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(PlanRayJob, EnvironmentRaySendsTheCommandWithAbsolutePathsAndNoOutputFlag) {
  fs::path d = temp_dir("plan");
  fs::create_directories(d / "traces");
  fs::path cwd = fs::current_path();
  fs::current_path(d);
  DispatchInput in{"benchmark", {"--trace-dir", "traces", "--top-k", "5", "-o", "out"}, "ray", ""};
  auto plan = plan_ray_job(in);
  fs::current_path(cwd);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->magpie_args.front(), "benchmark");
  EXPECT_TRUE(has(plan->magpie_args, (d / "traces").string()));
  EXPECT_TRUE(has(plan->magpie_args, "5"));  // not a path here: left alone
  EXPECT_FALSE(has(plan->magpie_args, "-o"));
  EXPECT_EQ(plan->local_output_dir, "out");
}

TEST(PlanRayJob, LocalOrNoEnvironmentRunsHere) {
  EXPECT_FALSE(plan_ray_job({"benchmark", {"--trace-dir", "x"}, "", ""}));
  EXPECT_FALSE(plan_ray_job({"benchmark", {"--trace-dir", "x"}, "local", ""}));
  EXPECT_FALSE(plan_ray_job({"results", {"list"}, "", ""}));
  EXPECT_THROW(plan_ray_job({"mcp", {}, "ray", ""}), Error);
}

TEST(PlanRayJob, BenchmarkYamlWithRunModeRayGoesToItsClusterAndRunsLocalOnTheNode) {
  fs::path d = temp_dir("yaml");
  write(d / "b.yaml",
        "benchmark:\n  framework: vllm\n  model: m\n  run_mode: ray\n"
        "  ray_config: {cluster_address: 'http://head:8265', entrypoint_num_gpus: 1, run_mode: "
        "docker}\n");
  auto plan = plan_ray_job({"benchmark", {"-b", (d / "b.yaml").string()}, "", ""});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->cluster.cluster_address, "http://head:8265");
  EXPECT_EQ(plan->cluster.entrypoint_num_gpus, 1.0);
  auto& a = plan->magpie_args;
  auto it = std::find(a.begin(), a.end(), "--run-mode");
  ASSERT_NE(it, a.end());
  EXPECT_EQ(*(it + 1), "docker");
  EXPECT_NE(plan->config_text.find("run_mode: ray"), std::string::npos);
  // --run-mode ray on the command line is replaced, not passed on.
  plan = plan_ray_job({"benchmark", {"vllm", "-m", "m", "--run-mode", "ray"}, "", ""});
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::count(plan->magpie_args.begin(), plan->magpie_args.end(), "ray"), 0);
}

TEST(PlanRayJob, KernelYamlWithRayConfigOrSchedulerRay) {
  fs::path d = temp_dir("kernel");
  write(d / "k.yaml",
        "kernel: {id: a, type: pytorch}\nray_config: {shared_storage_path: /mnt/s}\n");
  write(d / "s.yaml", "kernel: {id: a, type: pytorch}\nscheduler: {environment: ray}\n");
  write(d / "l.yaml", "kernel: {id: a, type: pytorch}\n");
  auto plan = plan_ray_job({"compare", {"-k", (d / "k.yaml").string()}, "", ""});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->cluster.shared_storage_path, "/mnt/s");
  EXPECT_TRUE(plan_ray_job({"analyze", {"-k", (d / "s.yaml").string()}, "", ""}));
  EXPECT_FALSE(plan_ray_job({"analyze", {"-k", (d / "l.yaml").string()}, "", ""}));
  EXPECT_FALSE(plan_ray_job({"analyze", {"-k", (d / "k.yaml").string()}, "local", ""}));
}

TEST(BatchEntries, ConfigsCommandsAndUniqueNames) {
  fs::path d = temp_dir("batch");
  write(d / "a.yaml", "benchmark:\n  framework: vllm\n  model: m\n");
  fs::create_directories(d / "traces");
  write(d / "batch.yaml",
        "batch:\n  - a.yaml\n  - {config: a.yaml}\n"
        "  - {name: gap, command: [benchmark, --trace-dir, traces, -o, elsewhere]}\n");
  auto entries = load_batch_entries({(d / "batch.yaml").string()});
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "a");
  EXPECT_EQ(entries[1].name, "a_2");
  EXPECT_EQ(entries[0].magpie_args.at(2), fs::absolute(d / "a.yaml").lexically_normal().string());
  EXPECT_EQ(entries[2].name, "gap");
  EXPECT_TRUE(has(entries[2].magpie_args, (d / "traces").string()));  // relative to the batch file
  EXPECT_FALSE(has(entries[2].magpie_args, "-o"));  // each run gets its own folder
  // A benchmark YAML alone is a batch of one; anything else is a clear error.
  EXPECT_EQ(load_batch_entries({(d / "a.yaml").string()}).size(), 1u);
  write(d / "bad.yaml", "nothing: here\n");
  EXPECT_THROW(load_batch_entries({(d / "bad.yaml").string()}), Error);
  write(d / "missing.yaml", "batch: [nope.yaml]\n");
  EXPECT_THROW(load_batch_entries({(d / "missing.yaml").string()}), Error);
}

}  // namespace
}  // namespace magpie::jobs

namespace magpie::ray {
namespace {

// The follower hands out each whole line once, holds an unfinished line back
// until its newline (or finish), and starts over when the log is not a
// continuation of the one it saw.
TEST(LogFollower, WholeNewLinesOnce) {
  JobsClient client(ClusterAddress{});  // take() never talks to it
  LogFollower f(client, "job");
  EXPECT_EQ(f.take(""), "");
  EXPECT_EQ(f.take("a\nb"), "a\n");
  EXPECT_EQ(f.take("a\nb"), "");
  EXPECT_EQ(f.take("a\nbc\nd\n"), "bc\nd\n");
  EXPECT_EQ(f.take("a\nbc\nd\n"), "");
  EXPECT_EQ(f.take("x\n"), "x\n");  // a different log: from its start
}

}  // namespace
}  // namespace magpie::ray
