#pragma once
// Flags of `magpie benchmark` for serving runs (docs/MAGPIE_COMPATIBILITY.md §1 plus ours), and
// the entry that turns them into a serve::run_benchmark call.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "serve/benchmark_config.hpp"

namespace magpie::app {

class ServeOptions {
 public:
  void register_with(CLI::App* sub);
  // Exit code: 0 when the report says success, 1 otherwise.
  int run(const std::string& framework, const std::string& output_dir, bool output_dir_given,
          bool verbose, bool html = false) const;
  // Global flags: `-e docker|container` and `--docker-image` (before the subcommand).
  void set_globals(std::string environment, std::string docker_image) {
    global_environment_ = std::move(environment);
    global_docker_image_ = std::move(docker_image);
  }

 private:
  serve::BenchmarkFlags collect(const std::string& framework, const std::string& output_dir,
                                bool output_dir_given) const;
  template <class T>
  CLI::Option* add(CLI::App* sub, const char* name, T& value, const char* help, const char* group);

  std::string config_path_;
  std::string global_environment_, global_docker_image_;
  std::string model_, precision_, run_mode_, run_kind_, docker_image_, endpoint_, concurrency_,
      input_len_, output_len_, tp_, request_rate_, num_prompts_, dataset_, dataset_path_, api_,
      range_ratio_, max_model_len_, served_model_name_, engine_executable_;
  double timeout_ = 0, burstiness_ = 1, duration_ = 0, slo_ttft_ = 0, slo_tpot_ = 0, slo_e2el_ = 0,
         request_timeout_ = 0, ready_timeout_ = 0;
  int64_t warmups_ = 0, prefix_len_ = 0, prefix_pool_ = 0, token_id_max_ = 0, profile_num_prompts_ = 0;
  int64_t turns_ = 0, system_prompt_len_ = 0, session_concurrency_ = 0, num_sessions_ = 0;
  std::string think_time_, session_header_, slo_;
  std::string search_, search_range_, rate_ramp_, concurrency_ramp_;
  double search_step_ = 0, search_noise_ = 0, search_max_time_ = 0;
  int64_t search_repeats_ = 0, search_max_repeats_ = 0, search_max_probes_ = 0;
  double trace_speedup_ = 1, prefix_reuse_ = 1;
  uint64_t seed_ = 0;
  bool torch_profiler_ = false, system_profiler_ = false, cpu_engine_ = false;
  bool strict_ = false;
  std::vector<std::string> engine_args_, envs_;
  std::vector<std::pair<CLI::Option*, void*>> options_;
  CLI::Option* find(const void* field) const;
};

}  // namespace magpie::app
