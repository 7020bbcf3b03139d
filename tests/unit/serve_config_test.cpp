// Benchmark config: Magpie's YAML keys and flag precedence, datasets, engine
// and docker command construction, Prometheus parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "serve/benchmark_config.hpp"
#include "serve/dataset.hpp"
#include "serve/docker_cli.hpp"
#include "serve/docker_command.hpp"
#include "serve/endpoint.hpp"
#include "serve/engine_command.hpp"
#include "serve/engine_launcher.hpp"
#include "serve/prometheus_scrape.hpp"
#include "serve/request_builder.hpp"

namespace magpie::serve {
namespace {

const char* kYaml = R"(
benchmark:
  framework: sglang
  model: Qwen/Qwen3-8B
  run_mode: local
  envs:
    tp: 2
    CONC: 16
    ISL: 256
    OSL: 64
    EXTRA_SGLANG_ARGS: "--mem-fraction-static 0.8"
    HIP_VISIBLE_DEVICES: "0,1"
  profiler:
    torch_profiler:
      enabled: true
  gap_analysis:
    top_k: 5
  sweep_matrix:
    cases:
      - {CONC: 4, ISL: 128, OSL: 32}
      - {CONC: 8, NUM_PROMPTS: 10}
    on_failure: abort
)";

TEST(BenchmarkConfig, MagpieYaml) {
  auto c = parse_benchmark_yaml(kYaml, "test.yaml");
  EXPECT_EQ(c.framework, "sglang");
  EXPECT_EQ(c.envs.at("TP"), "2");  // keys upper-cased
  EXPECT_TRUE(c.torch_profiler);
  EXPECT_EQ(c.resolved_run_kind(), "diagnostic");
  EXPECT_EQ(c.gap.top_k, 5u);
  auto cases = c.cases();
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].concurrency, 4);
  EXPECT_EQ(cases[0].input_len, 128);
  EXPECT_EQ(cases[0].num_prompts, 40);  // CONC×10
  EXPECT_EQ(cases[1].input_len, 256);
  EXPECT_EQ(cases[1].num_prompts, 10);
  EXPECT_EQ(c.on_failure, "abort");
}

TEST(BenchmarkConfig, NoProfilerSectionMeansCleanRun) {
  auto c = parse_benchmark_yaml("benchmark:\n  model: m\n", "t");
  EXPECT_FALSE(c.torch_profiler);
  EXPECT_EQ(c.resolved_run_kind(), "measurement");
  EXPECT_FALSE(c.warnings.empty());
}

TEST(BenchmarkConfig, WithYamlOnlyRunModeAndKindOverride) {
  auto c = parse_benchmark_yaml(kYaml, "t");
  BenchmarkFlags f;
  f.run_mode = "docker";
  f.run_kind = "measurement";
  f.model = "other";
  f.concurrency = "99";
  f.endpoint = "http://127.0.0.1:9";
  apply_flags(c, f, true);
  EXPECT_EQ(c.run_mode, "docker");
  EXPECT_EQ(c.run_kind, "measurement");
  EXPECT_EQ(c.model, "Qwen/Qwen3-8B");
  EXPECT_EQ(c.envs.at("CONC"), "16");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:9");  // ours apply either way
  EXPECT_FALSE(c.warnings.empty());
}

TEST(BenchmarkConfig, InlineFlagsAndSweeps) {
  BenchmarkConfig c;
  BenchmarkFlags f;
  f.framework = "vllm";
  f.model = "m";
  f.concurrency = "2,4";
  f.request_rate = "1.5,inf";
  f.num_prompts = "6";
  apply_flags(c, f, false);
  validate(c);
  auto cases = c.cases();
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].concurrency, 2);
  EXPECT_DOUBLE_EQ(cases[0].request_rate, 1.5);
  EXPECT_TRUE(std::isinf(cases[1].request_rate));
  EXPECT_EQ(cases[3].concurrency, 4);
  EXPECT_EQ(cases[3].num_prompts, 6);
  EXPECT_EQ(cases[2].label(), "CONC4_ISL1024_OSL512_RATE1.5");
}

TEST(BenchmarkConfig, MissingModelIsAUsageError) {
  BenchmarkConfig c;
  EXPECT_THROW(validate(c), Error);
}

TEST(BenchmarkConfig, MisspelledKeysAreNamedWithTheNearestKnownKey) {
  auto c = parse_benchmark_yaml(R"(benchmark:
  model: m
  gpu_selecton: {count: 1}
  profiler:
    torch_profilr: {enabled: true}
  sweep_matrix:
    cases:
      - {CONC: 4, ISLL: 8}
)", "b.yaml");
  ASSERT_EQ(c.unknown_keys.size(), 3u);
  EXPECT_EQ(c.unknown_keys[0], "b.yaml: unknown key 'benchmark.gpu_selecton' ignored (did you mean 'gpu_selection'?)");
  EXPECT_EQ(c.unknown_keys[1],
            "b.yaml: unknown key 'benchmark.profiler.torch_profilr' ignored (did you mean 'torch_profiler'?)");
  EXPECT_EQ(c.unknown_keys[2], "b.yaml: unknown key 'benchmark.sweep_matrix.cases[0].ISLL' ignored (did you mean 'ISL'?)");
  // Each unknown key is also a warning; the run still parses.
  for (const auto& u : c.unknown_keys)
    EXPECT_NE(std::find(c.warnings.begin(), c.warnings.end(), u), c.warnings.end()) << u;
  EXPECT_FALSE(c.torch_profiler);
}

TEST(BenchmarkConfig, MagpieKeysWithoutEffectSaySo) {
  auto c = parse_benchmark_yaml(R"(benchmark:
  model: m
  gpu_selection: {count: 1}
  server_lifecycle: {cleanup: false}
  profiler:
    torch_profiler: {enabled: true}
    gpu_monitor: {enabled: true}
)", "b.yaml");
  EXPECT_TRUE(c.unknown_keys.empty());
  auto says = [&](const std::string& key) {
    for (const auto& w : c.warnings)
      if (w.find(key + ": not applicable here") != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(says("benchmark.server_lifecycle.cleanup"));  // applied now (docker mode)
  EXPECT_FALSE(c.lifecycle.cleanup);
  // Applied now: no warning, and the config carries them.
  EXPECT_FALSE(says("benchmark.gpu_selection"));
  EXPECT_FALSE(says("benchmark.profiler.gpu_monitor"));
  EXPECT_FALSE(says("benchmark.profiler.torch_profiler"));
  EXPECT_TRUE(c.torch_profiler);
  ASSERT_TRUE(c.gpu_selection.has_value());
  EXPECT_EQ(c.gpu_selection->count, 1);
  EXPECT_TRUE(c.gpu_monitor.enabled);
  EXPECT_DOUBLE_EQ(c.gpu_monitor.interval_s, 2.0);
}

TEST(BenchmarkConfig, GpuAndLifecycleKeysAreRead) {
  auto c = parse_benchmark_yaml(R"(benchmark:
  model: m
  precision: bf16
  timeout_seconds: 90
  gpu_selection: {auto: false, min_free_memory_gb: 20, candidates: [2, 3]}
  server_lifecycle: {enabled: false, force_reuse: true, server_ready_timeout_s: 30}
  profiler:
    gpu_monitor: {enabled: true, interval_sec: 0.25}
)", "b.yaml");
  EXPECT_TRUE(c.precision_given);
  EXPECT_EQ(c.precision, "bf16");
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 90);
  ASSERT_TRUE(c.gpu_selection.has_value());
  EXPECT_FALSE(c.gpu_selection->auto_select);
  EXPECT_DOUBLE_EQ(c.gpu_selection->min_free_memory_gb, 20);
  EXPECT_FALSE(c.gpu_selection->count.has_value());
  EXPECT_EQ(c.gpu_selection->candidates, (std::vector<int>{2, 3}));
  EXPECT_FALSE(c.lifecycle.enabled);
  EXPECT_TRUE(c.lifecycle.force_reuse);
  EXPECT_DOUBLE_EQ(c.server_ready_timeout_s, 30);
  EXPECT_DOUBLE_EQ(c.gpu_monitor.interval_s, 0.25);
  // Without the key the default precision is only echoed, never turned into flags.
  EXPECT_FALSE(parse_benchmark_yaml("benchmark: {model: m}", "b.yaml").precision_given);
  EXPECT_THROW(parse_benchmark_yaml("benchmark: {model: m, profiler: {gpu_monitor: {interval_sec: 0}}}", "b.yaml"),
               Error);
  auto bad = parse_benchmark_yaml("benchmark: {model: m, precision: int3}", "b.yaml");
  EXPECT_THROW(validate(bad), Error);
}

TEST(BenchmarkConfig, ShippedExampleHasNoUnknownKeys) {
  auto c = load_benchmark_yaml(std::filesystem::path(MAGPIE_SOURCE_DIR) / "examples/benchmark.yaml");
  EXPECT_TRUE(c.unknown_keys.empty()) << c.unknown_keys.front();
}

TEST(EngineCommand, MagpieLaunchLines) {
  EngineSpec s;
  s.model = "M";
  s.port = 8123;
  s.tp = 2;
  s.max_model_len = "4096";
  s.extra_args = split_args("--enforce-eager --x 'a b'");
  EXPECT_EQ(
      shell_join(engine_argv(s)),
      "vllm serve M --host 127.0.0.1 --port 8123 --tensor-parallel-size 2 --gpu-memory-utilization "
      "0.95 --max-model-len 4096 --trust-remote-code --enforce-eager --x 'a b'");
  s.framework = Framework::kSglang;
  s.extra_args.clear();
  EXPECT_EQ(shell_join(engine_argv(s)),
            "python3 -m sglang.launch_server --model-path M --host 127.0.0.1 --port 8123 "
            "--trust-remote-code --tensor-parallel-size 2");
  s.framework = Framework::kAtom;
  EXPECT_EQ(shell_join(engine_argv(s)),
            "python3 -m atom.entrypoints.openai_server --model M -tp 2 --server-port 8123");
  EXPECT_EQ(profiler_dir_env(Framework::kAtom), "ATOM_TORCH_PROFILER_DIR");
}

TEST(DockerCommand, NvidiaAndAmd) {
  DockerSpec d;
  d.image = "vllm/vllm-openai:latest";
  d.container_name = "magpie-vllm-8000";
  d.env = {{"VLLM_TORCH_PROFILER_DIR", "/ws/torch_trace"}};
  d.volumes = {{"/root/.cache/huggingface", "/root/.cache/huggingface"}};
  d.engine_argv = {"vllm", "serve", "M", "--port", "8000"};
  EXPECT_EQ(
      shell_join(docker_run_argv(d)),
      "docker run --rm --init --name magpie-vllm-8000 --network host --ipc host --shm-size 32g --gpus all "
      "-v /root/.cache/huggingface:/root/.cache/huggingface -e "
      "VLLM_TORCH_PROFILER_DIR=/ws/torch_trace "
      "--entrypoint vllm vllm/vllm-openai:latest serve M --port 8000");
  // A gpu_selection: only those GPUs go into the container, renumbered there from 0.
  auto selected = d;
  selected.env["CUDA_VISIBLE_DEVICES"] = "2,3";
  selected.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  auto argv = docker_run_argv(selected);
  auto gpus = std::find(argv.begin(), argv.end(), "--gpus");
  ASSERT_NE(gpus, argv.end());
  EXPECT_EQ(*(gpus + 1), "\"device=2,3\"");
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "CUDA_VISIBLE_DEVICES=2,3"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "VLLM_TORCH_PROFILER_DIR=/ws/torch_trace"), argv.end());
  d.vendor = vendor_for_arch("gfx942");
  d.env["HIP_VISIBLE_DEVICES"] = "1";  // AMD: the variable itself does the selecting
  auto amd = shell_join(docker_run_argv(d));
  EXPECT_NE(amd.find("-e HIP_VISIBLE_DEVICES=1"), std::string::npos);
  EXPECT_NE(amd.find("--device /dev/kfd --device /dev/dri"), std::string::npos);
  EXPECT_EQ(amd.find("--gpus"), std::string::npos);
  EXPECT_EQ(default_image(Framework::kVllm, "gfx950"), "vllm/vllm-openai-rocm:latest");
  EXPECT_EQ(default_image(Framework::kAtom, "gfx942"), "rocm/atom:latest");
  EXPECT_THROW(default_image(Framework::kAtom, "sm_90"), Error);
  EXPECT_EQ(docker_stop_argv("c").back(), "c");
}

TEST(DockerCommand, LabelsLookupAndRemoval) {
  DockerSpec d;
  d.image = "img";
  d.container_name = "magpie-vllm-8000";
  d.vendor = GpuVendor::kNone;
  d.labels = {{kLabelEngine, "vllm"}, {kLabelPort, "8000"}};
  d.engine_argv = {"/venv/bin/vllm", "serve", "M"};
  EXPECT_EQ(shell_join(docker_run_argv(d)),
            "docker run --rm --init --name magpie-vllm-8000 --label magpie.engine=vllm --label "
            "magpie.port=8000 --network host --ipc host --shm-size 32g --entrypoint /venv/bin/vllm "
            "img serve M");
  EXPECT_EQ(shell_join(docker_ps_argv({{kLabelEngine, "vllm"}, {kLabelModel, "m/x"}})),
            "docker ps --filter status=running --filter label=magpie.engine=vllm --filter "
            "label=magpie.model=m/x --format '{{.Names}}\t{{.Image}}\t{{.Label \"magpie.port\"}}'");
  EXPECT_EQ(shell_join(docker_rm_argv("c")), "docker rm --force c");
  EXPECT_EQ(docker_inspect_argv("c").back(), "c");
  auto found = parse_running_containers("magpie-vllm-8000\timg:1\t8000\nother\timg\t\n\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "magpie-vllm-8000");
  EXPECT_EQ(found[0].image, "img:1");
  EXPECT_EQ(found[0].port, 8000);
  EXPECT_EQ(found[1].port, 0);  // no magpie.port label: not reusable
}

TEST(EngineLauncher, DockerPlanLabelsAndCpuEngine) {
  BenchmarkConfig c;
  c.framework = "vllm";
  c.model = "tiny";
  c.run_mode = "docker";
  c.docker_image = "magpie-e2e/vllm-cpu:1";
  c.engine_gpu = false;
  c.lifecycle.cleanup = false;
  c.envs["PORT"] = "18556";
  auto ws = std::filesystem::temp_directory_path() / "magpie_plan_docker_test";
  auto plan = plan_launch(c, ws);
  auto cmd = shell_join(plan.argv);
  EXPECT_EQ(plan.container_name, "magpie-vllm-18556");
  EXPECT_FALSE(plan.cleanup);
  EXPECT_EQ(cmd.find("--gpus"), std::string::npos) << cmd;  // a CPU engine gets no GPU flags
  EXPECT_NE(cmd.find("--label magpie.engine=vllm --label magpie.model=tiny --label magpie.port=18556"),
            std::string::npos)
      << cmd;
  EXPECT_NE(cmd.find("--label magpie.workspace=" + ws.string()), std::string::npos) << cmd;
  c.engine_gpu = true;
  EXPECT_NE(shell_join(plan_launch(c, ws).argv).find("--gpus all"), std::string::npos);
}

TEST(EngineLauncher, PlanSetsProfilerDirPortAndEnv) {
  auto c = parse_benchmark_yaml(kYaml, "t");
  c.envs["PORT"] = "18555";
  auto ws = std::filesystem::temp_directory_path() / "magpie_plan_test";
  auto plan = plan_launch(c, ws);
  EXPECT_EQ(plan.mode, "local");
  EXPECT_EQ(plan.endpoint.port, 18555);
  EXPECT_EQ(plan.env.at("SGLANG_TORCH_PROFILER_DIR"), (ws / "torch_trace").string());
  EXPECT_EQ(plan.env.at("HIP_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(plan.env.count("CONC"), 0u);  // workload knobs are not server env
  EXPECT_EQ(plan.argv.back(), "0.8");
  c.run_mode = "docker";
  c.gpu_arch = "gfx942";
  auto d = plan_launch(c, ws);
  EXPECT_EQ(d.argv.front(), "docker");
  EXPECT_EQ(d.image, "lmsysorg/sglang:latest-rocm");
}

TEST(Endpoint, Parse) {
  auto e = Endpoint::parse("http://localhost:8001/v1");
  EXPECT_EQ(e.host, "localhost");
  EXPECT_EQ(e.port, 8001);
  EXPECT_EQ(e.target("/v1/completions"), "/v1/completions");
  EXPECT_EQ(Endpoint::parse("http://h:1/proxy/").target("/health"), "/proxy/health");
  EXPECT_THROW(Endpoint::parse("https://h:1"), Error);
  EXPECT_THROW(Endpoint::parse("http://h:99999"), Error);
}

TEST(Dataset, RandomLengthsPrefixAndIds) {
  RandomDatasetOptions o;
  o.num_prompts = 200;
  o.input_len = 100;
  o.output_len = 20;
  o.range_ratio = 0.5;
  o.prefix_len = 7;
  o.token_id_max = 500;
  auto ps = random_dataset(o);
  ASSERT_EQ(ps.size(), 200u);
  for (const auto& p : ps) {
    EXPECT_GE(p.prompt_len, 7 + 50);
    EXPECT_LE(p.prompt_len, 7 + 150);
    EXPECT_EQ(static_cast<size_t>(p.prompt_len), p.token_ids.size());
    EXPECT_GE(p.output_len, 10);
    EXPECT_LE(p.output_len, 30);
    for (auto id : p.token_ids) EXPECT_LT(id, 500);
    EXPECT_TRUE(
        std::equal(ps[0].token_ids.begin(), ps[0].token_ids.begin() + 7, p.token_ids.begin()));
  }
  o.range_ratio = 0;
  for (const auto& p : random_dataset(o)) EXPECT_EQ(p.prompt_len, 107);
}

TEST(Dataset, ShareGptAndJsonl) {
  auto dir = std::filesystem::temp_directory_path();
  auto sg = dir / "magpie_sharegpt_test.json";
  std::ofstream(sg)
      << R"([{"conversations":[{"from":"human","value":"Tell me a story about a cat please"},
    {"from":"gpt","value":"Once upon a time there was a cat who liked to sleep all day long."}]},
    {"conversations":[{"from":"human","value":"x"}]}])";
  auto ps = sharegpt_dataset(sg, {});
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].text.substr(0, 4), "Tell");
  auto jl = dir / "magpie_jsonl_test.jsonl";
  std::ofstream(jl)
      << "{\"prompt\": \"hello\", \"output_len\": 7}\n\n{\"prompt_token_ids\": [1,2,3]}\n";
  auto js = jsonl_dataset(jl, {});
  ASSERT_EQ(js.size(), 2u);
  EXPECT_EQ(js[0].output_len, 7);
  EXPECT_EQ(js[1].prompt_len, 3);
  std::ofstream(jl) << "not json\n";
  EXPECT_THROW(jsonl_dataset(jl, {}), Error);
}

TEST(RequestBuilder, CompletionAndChatBodies) {
  Prompt p;
  p.token_ids = {5, 6, 7};
  p.prompt_len = 3;
  p.output_len = 9;
  RequestOptions o;
  o.model = "m";
  auto c = nlohmann::json::parse(build_request_body(p, o));
  EXPECT_EQ(c["prompt"], nlohmann::json::array({5, 6, 7}));
  EXPECT_EQ(c["max_tokens"], 9);
  EXPECT_TRUE(c["stream"].get<bool>());
  EXPECT_TRUE(c["stream_options"]["include_usage"].get<bool>());
  EXPECT_TRUE(c["ignore_eos"].get<bool>());
  o.api = ApiKind::kChat;
  auto ch = nlohmann::json::parse(build_request_body(p, o));
  EXPECT_EQ(ch["messages"][0]["content"], "5 6 7");
  EXPECT_EQ(endpoint_path(ApiKind::kChat), "/v1/chat/completions");
}

TEST(Prometheus, ParsesTextFormat) {
  auto s = parse_prometheus_text(
      "# HELP vllm:num_requests_running Number\n# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"a b\"} 3.0\n"
      "vllm:generation_tokens_total{model_name=\"m\"} 1.5e3 1700000000\n"
      "process_open_fds 12\n");
  EXPECT_EQ(s.at("vllm:num_requests_running{engine=\"0\",model_name=\"a b\"}"), 3.0);
  EXPECT_EQ(s.at("vllm:generation_tokens_total{model_name=\"m\"}"), 1500.0);
  EXPECT_EQ(s.at("process_open_fds"), 12.0);
  PrometheusScrape b, a;
  b.ok = a.ok = true;
  b.samples = {{"vllm:x_total", 10}};
  a.samples = {{"vllm:x_total", 25}, {"other", 1}};
  auto j = prometheus_summary(b, a, "vllm:");
  EXPECT_EQ(j["delta"]["vllm:x_total"], 15.0);
  EXPECT_FALSE(j["after"].contains("other"));
}

}  // namespace
}  // namespace magpie::serve
