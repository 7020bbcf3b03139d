#include "serve/benchmark_config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "serve/benchmark_keys.hpp"
#include "serve/engine_command.hpp"

namespace magpie::serve {

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Error bad(const std::string& origin, const std::string& what) {
  return Error(ErrorKind::kUsage, what, origin, std::nullopt,
               "see examples/benchmark.yaml for the accepted keys");
}

template <class T>
T get(const YAML::Node& n, const char* key, T fallback, const std::string& origin) {
  if (!n || !n[key] || n[key].IsNull()) return fallback;
  try {
    return n[key].as<T>();
  } catch (const YAML::Exception& e) {
    throw bad(origin, fmt::format("benchmark.{}: {}", key, e.what()));
  }
}

double to_double(const std::string& s, const char* what) {
  std::string t = s;
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "inf" || t == "infinity") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0')
    throw Error(ErrorKind::kUsage, fmt::format("{}: '{}' is not a number", what, s));
  return v;
}

int64_t to_int(const std::string& s, const char* what) {
  double v = to_double(s, what);
  if (!std::isfinite(v) || v != std::floor(v))
    throw Error(ErrorKind::kUsage, fmt::format("{}: '{}' is not an integer", what, s));
  return static_cast<int64_t>(v);
}

// A YAML list of strings, or one comma-separated string.
std::vector<std::string> string_list(const YAML::Node& n, const char* key,
                                     const std::string& origin) {
  std::vector<std::string> out;
  if (!n[key] || n[key].IsNull()) return out;
  if (n[key].IsSequence()) return get<std::vector<std::string>>(n, key, {}, origin);
  std::stringstream ss(get<std::string>(n, key, "", origin));
  std::string item;
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

TraceLensSettings parse_tracelens(const YAML::Node& t, const std::string& origin) {
  TraceLensSettings s;
  s.analysis_mode = get<std::string>(t, "analysis_mode", s.analysis_mode, origin);
  if (s.analysis_mode == "classic") s.analysis_mode = "pytorch";
  if (s.analysis_mode != "inference" && s.analysis_mode != "pytorch")
    throw bad(
        origin,
        fmt::format("profiler.tracelens.analysis_mode '{}': use inference or pytorch (classic)",
                    s.analysis_mode));
  for (const auto& name : string_list(t, "analysis_stages", origin)) {
    if (name == "all") {
      s.analysis_stages.clear();
      break;
    }
    auto stage = analysis::parse_stage(name);
    if (!stage)
      throw bad(origin,
                fmt::format("profiler.tracelens.analysis_stages: unknown stage '{}' (use all, "
                            "prefilldecode, decode, prefill or pd, mixed, prefill_decode, "
                            "decode_only, prefill_only)",
                            name));
    if (std::find(s.analysis_stages.begin(), s.analysis_stages.end(), *stage) ==
        s.analysis_stages.end())
      s.analysis_stages.push_back(*stage);
  }
  s.num_steps = get<int64_t>(t, "num_steps", s.num_steps, origin);
  if (s.num_steps < 0) throw bad(origin, "profiler.tracelens.num_steps must not be negative");
  s.export_format = get<std::string>(t, "export_format", s.export_format, origin);
  if (s.export_format != "csv" && s.export_format != "excel" && s.export_format != "both")
    throw bad(origin, fmt::format("profiler.tracelens.export_format '{}': use csv, excel or both",
                                  s.export_format));
  s.gpu_arch_config = get<std::string>(t, "gpu_arch_config", "", origin);
  s.perf_report_enabled = get<bool>(t, "perf_report_enabled", true, origin);
  if (t["multi_rank_report_enabled"] && !t["multi_rank_report_enabled"].IsNull())
    s.multi_rank_report_enabled = get<bool>(t, "multi_rank_report_enabled", false, origin);
  return s;
}

}  // namespace

std::vector<double> parse_double_list(const std::string& s, const char* what) {
  std::vector<double> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    auto comma = s.find(',', pos);
    auto item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(to_double(item, what));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, fmt::format("{}: empty list", what));
  return out;
}

std::vector<int64_t> parse_int_list(const std::string& s, const char* what) {
  std::vector<int64_t> out;
  for (double d : parse_double_list(s, what)) {
    if (!std::isfinite(d) || d != std::floor(d) || d < 1)
      throw Error(ErrorKind::kUsage, fmt::format("{}: values must be positive integers", what));
    out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

std::string WorkloadCase::label() const {
  auto s = fmt::format("CONC{}_ISL{}_OSL{}", concurrency, input_len, output_len);
  if (std::isfinite(request_rate)) s += fmt::format("_RATE{:g}", request_rate);
  return s;
}

std::string BenchmarkConfig::env(const std::string& key, const std::string& fallback) const {
  auto it = envs.find(key);
  return it == envs.end() || it->second.empty() ? fallback : it->second;
}

std::string BenchmarkConfig::resolved_run_kind() const {
  if (run_kind != "auto") return run_kind;
  return torch_profiler || system_profiler || tracelens ? "diagnostic" : "measurement";
}

std::vector<WorkloadCase> BenchmarkConfig::cases() const {
  WorkloadCase base;
  base.concurrency = to_int(env("CONC", "32"), "CONC");
  base.input_len = to_int(env("ISL", "1024"), "ISL");
  base.output_len = to_int(env("OSL", "512"), "OSL");
  base.range_ratio = to_double(env("RANDOM_RANGE_RATIO", "0.5"), "RANDOM_RANGE_RATIO");
  bool explicit_prompts = !env("NUM_PROMPTS").empty();
  auto num_prompts_for = [&](const WorkloadCase& c) {
    return explicit_prompts ? to_int(env("NUM_PROMPTS"), "NUM_PROMPTS") : c.concurrency * 10;
  };
  std::vector<WorkloadCase> out;
  auto add_rates = [&](WorkloadCase c) {
    for (double rate : client.request_rates) {
      c.request_rate = rate;
      out.push_back(c);
    }
  };
  if (!sweep_cases.empty()) {
    for (const auto& m : sweep_cases) {
      WorkloadCase c = base;
      bool case_prompts = false;
      for (const auto& [k, v] : m) {
        if (k == "CONC")
          c.concurrency = to_int(v, "sweep CONC");
        else if (k == "ISL")
          c.input_len = to_int(v, "sweep ISL");
        else if (k == "OSL")
          c.output_len = to_int(v, "sweep OSL");
        else if (k == "NUM_PROMPTS")
          c.num_prompts = to_int(v, "sweep NUM_PROMPTS"), case_prompts = true;
        else if (k == "RANDOM_RANGE_RATIO")
          c.range_ratio = to_double(v, "sweep RANDOM_RANGE_RATIO");
      }
      if (!case_prompts) c.num_prompts = num_prompts_for(c);
      add_rates(c);
    }
    return out;
  }
  std::vector<int64_t> concs =
      concurrency_sweep.empty() ? std::vector<int64_t>{base.concurrency} : concurrency_sweep;
  for (auto conc : concs) {
    WorkloadCase c = base;
    c.concurrency = conc;
    c.num_prompts = num_prompts_for(c);
    add_rates(c);
  }
  return out;
}

BenchmarkConfig parse_benchmark_yaml(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("invalid YAML: {}", e.what()), origin);
  }
  YAML::Node b = root["benchmark"] ? root["benchmark"] : root;
  if (!b.IsMap()) throw bad(origin, "expected a `benchmark:` mapping");
  BenchmarkConfig c;
  c.config_yaml = text;
  KeyCheck keys = check_benchmark_keys(root, origin);
  c.unknown_keys = keys.unknown;
  c.warnings.insert(c.warnings.end(), keys.unknown.begin(), keys.unknown.end());
  c.warnings.insert(c.warnings.end(), keys.not_applied.begin(), keys.not_applied.end());
  c.framework = get<std::string>(b, "framework", c.framework, origin);
  c.model = get<std::string>(b, "model", "", origin);
  c.precision = get<std::string>(b, "precision", c.precision, origin);
  c.precision_given = b["precision"] && !b["precision"].IsNull();
  c.run_mode = get<std::string>(b, "run_mode", c.run_mode, origin);
  c.run_kind = get<std::string>(b, "run_kind", c.run_kind, origin);
  c.docker_image = get<std::string>(b, "docker_image", "", origin);
  c.gpu_arch = get<std::string>(b, "gpu_arch", "", origin);
  c.timeout_seconds = get<double>(b, "timeout_seconds", c.timeout_seconds, origin);
  c.hf_cache_path = get<std::string>(b, "hf_cache_path", "", origin);
  c.endpoint = get<std::string>(b, "endpoint", "", origin);
  if (auto e = b["envs"]; e && e.IsMap())
    for (auto it : e)
      c.envs[upper(it.first.as<std::string>())] =
          it.second.IsNull() ? "" : it.second.as<std::string>();
  if (auto s = b["server_lifecycle"]; s && s.IsMap()) {
    c.server_ready_timeout_s =
        get<double>(s, "server_ready_timeout_s", c.server_ready_timeout_s, origin);
    c.lifecycle.enabled = get<bool>(s, "enabled", c.lifecycle.enabled, origin);
    c.lifecycle.force_reuse = get<bool>(s, "force_reuse", c.lifecycle.force_reuse, origin);
    c.lifecycle.cleanup = get<bool>(s, "cleanup", c.lifecycle.cleanup, origin);
  }
  if (auto g = b["gpu_selection"]; g && g.IsMap()) {
    GpuSelectionConfig sel;
    sel.auto_select = get<bool>(g, "auto", sel.auto_select, origin);
    sel.min_free_memory_gb = get<double>(g, "min_free_memory_gb", sel.min_free_memory_gb, origin);
    if (g["count"] && !g["count"].IsNull()) sel.count = get<int64_t>(g, "count", 1, origin);
    if (auto cand = g["candidates"]; cand && !cand.IsNull()) {
      if (cand.IsScalar())  // "0,2" as well as [0, 2]
        for (auto i : parse_int_list(cand.as<std::string>(), "gpu_selection.candidates"))
          sel.candidates.push_back(static_cast<int>(i));
      else
        sel.candidates = get<std::vector<int>>(g, "candidates", {}, origin);
    }
    c.gpu_selection = sel;
  } else if (g && !g.IsNull()) {
    throw bad(origin, "benchmark.gpu_selection: expected a mapping (auto, min_free_memory_gb, count, candidates)");
  }
  if (auto g = b["gap_analysis"]; g && g.IsMap()) {
    c.gap.find_kernel_sources = get<bool>(g, "find_kernel_sources", false, origin);
    c.gap.kernel_source_repos = string_list(g, "kernel_source_repos", origin);
    c.gap.enabled = get<bool>(g, "enabled", c.gap.enabled, origin);
    c.gap.start_pct = get<double>(g, "trace_start_pct", 0, origin);
    c.gap.end_pct = get<double>(g, "trace_end_pct", 100, origin);
    c.gap.top_k = get<size_t>(g, "top_k", 20, origin);
    c.gap.min_duration_us = get<double>(g, "min_duration_us", 0, origin);
    c.gap.categories = get<std::vector<std::string>>(g, "categories", c.gap.categories, origin);
    c.gap.ignore_categories =
        get<std::vector<std::string>>(g, "ignore_categories", c.gap.ignore_categories, origin);
  }
  if (auto p = b["profiler"]; p && p.IsMap()) {
    if (auto t = p["torch_profiler"]; t && t.IsMap())
      c.torch_profiler = get<bool>(t, "enabled", false, origin);
    if (auto t = p["system_profiler"]; t && t.IsMap()) {
      c.system_profiler = get<bool>(t, "enabled", false, origin);
      // A string ("--cuda-graph-trace=node --delay 5") or a list of arguments.
      if (auto a = t["profile_args"]; a && a.IsSequence())
        c.system_profiler_args = get<std::vector<std::string>>(t, "profile_args", {}, origin);
      else if (a)
        c.system_profiler_args = split_args(get<std::string>(t, "profile_args", "", origin));
    }
    if (auto t = p["tracelens"]; t && t.IsMap()) {
      c.tracelens = get<bool>(t, "enabled", false, origin);
      c.tracelens_settings = parse_tracelens(t, origin);
    }
    if (auto t = p["gpu_monitor"]; t && t.IsMap()) {
      c.gpu_monitor.enabled = get<bool>(t, "enabled", false, origin);
      c.gpu_monitor.interval_s = get<double>(t, "interval_sec", c.gpu_monitor.interval_s, origin);
      if (!(c.gpu_monitor.interval_s > 0))
        throw bad(origin, "benchmark.profiler.gpu_monitor.interval_sec must be above 0");
    }
  } else {
    c.warnings.push_back(
        "no `profiler:` section: running clean (Magpie would enable the torch profiler)");
  }
  if (auto s = b["sweep_matrix"]; s && s.IsMap()) {
    c.on_failure = get<std::string>(s, "on_failure", c.on_failure, origin);
    if (auto cases = s["cases"]; cases && cases.IsSequence())
      for (auto item : cases) {
        std::map<std::string, std::string> m;
        for (auto kv : item) m[upper(kv.first.as<std::string>())] = kv.second.as<std::string>();
        c.sweep_cases.push_back(std::move(m));
      }
  }
  if (auto cl = b["client"]; cl && cl.IsMap()) {  // ours
    auto& o = c.client;
    auto api = get<std::string>(cl, "api", "completions", origin);
    o.api = api == "chat" ? ApiKind::kChat : ApiKind::kCompletions;
    o.dataset = get<std::string>(cl, "dataset", o.dataset, origin);
    o.dataset_path = get<std::string>(cl, "dataset_path", "", origin);
    if (cl["request_rate"])
      o.request_rates =
          parse_double_list(cl["request_rate"].as<std::string>(), "client.request_rate");
    o.burstiness = get<double>(cl, "burstiness", o.burstiness, origin);
    o.warmups = get<int64_t>(cl, "warmups", o.warmups, origin);
    o.duration_s = get<double>(cl, "duration_s", 0, origin);
    o.seed = get<uint64_t>(cl, "seed", 0, origin);
    o.prefix_len = get<int64_t>(cl, "prefix_len", 0, origin);
    o.token_id_max = get<int32_t>(cl, "token_id_max", o.token_id_max, origin);
    o.request_timeout_s = get<double>(cl, "request_timeout_s", o.request_timeout_s, origin);
    o.served_model_name = get<std::string>(cl, "served_model_name", "", origin);
    if (cl["slo_ttft_ms"]) o.slo.ttft_ms = cl["slo_ttft_ms"].as<double>();
    if (cl["slo_tpot_ms"]) o.slo.tpot_ms = cl["slo_tpot_ms"].as<double>();
    if (cl["slo_e2el_ms"]) o.slo.e2el_ms = cl["slo_e2el_ms"].as<double>();
  }
  return c;
}

BenchmarkConfig load_benchmark_yaml(const std::filesystem::path& path) {
  auto buf = read_file(path);
  return parse_benchmark_yaml(std::string(buf.view()), path.string());
}

void apply_flags(BenchmarkConfig& c, const BenchmarkFlags& f, bool from_yaml) {
  if (f.run_mode) c.run_mode = *f.run_mode;
  if (f.run_kind) c.run_kind = *f.run_kind;
  bool magpie_flag_given = f.model || f.precision || f.concurrency || f.input_len || f.output_len ||
                           f.tp || f.torch_profiler || f.system_profiler || f.docker_image ||
                           f.timeout;
  if (from_yaml) {
    if (magpie_flag_given)
      c.warnings.push_back(
          "with --benchmark-config only --run-mode and --run-kind override the YAML; "
          "other workload flags were ignored");
    if (f.framework && *f.framework != c.framework)
      c.warnings.push_back("framework taken from the YAML, not the command line");
  } else {
    if (f.framework) c.framework = *f.framework;
    if (f.model) c.model = *f.model;
    if (f.precision) c.precision = *f.precision, c.precision_given = true;
    if (f.docker_image) c.docker_image = *f.docker_image;
    if (f.timeout) c.timeout_seconds = *f.timeout;
    if (f.torch_profiler) c.torch_profiler = *f.torch_profiler;
    if (f.system_profiler) c.system_profiler = *f.system_profiler;
    if (f.tp) c.envs["TP"] = *f.tp;
    if (f.input_len) c.envs["ISL"] = *f.input_len;
    if (f.output_len) c.envs["OSL"] = *f.output_len;
    if (f.concurrency) {
      auto concs = parse_int_list(*f.concurrency, "--concurrency");
      c.envs["CONC"] = std::to_string(concs.front());
      if (concs.size() > 1) c.concurrency_sweep = concs;
    }
  }
  // Ours: apply with or without a YAML.
  if (f.output_dir) c.output_dir = *f.output_dir;
  if (f.endpoint) c.endpoint = *f.endpoint;
  if (f.num_prompts) c.envs["NUM_PROMPTS"] = *f.num_prompts;
  if (f.range_ratio) c.envs["RANDOM_RANGE_RATIO"] = *f.range_ratio;
  if (f.max_model_len) c.envs["MAX_MODEL_LEN"] = *f.max_model_len;
  if (f.ready_timeout) c.server_ready_timeout_s = *f.ready_timeout;
  if (f.engine_executable) c.engine_executable = *f.engine_executable;
  if (f.engine_gpu) c.engine_gpu = *f.engine_gpu;
  for (const auto& kv : f.envs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos)
      throw Error(ErrorKind::kUsage, fmt::format("--env '{}': expected KEY=VALUE", kv));
    c.envs[upper(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  c.engine_extra_args.insert(c.engine_extra_args.end(), f.extra_engine_args.begin(),
                             f.extra_engine_args.end());
  auto& o = c.client;
  if (f.request_rate) o.request_rates = parse_double_list(*f.request_rate, "--request-rate");
  if (f.burstiness) o.burstiness = *f.burstiness;
  if (f.warmups) o.warmups = *f.warmups;
  if (f.duration) o.duration_s = *f.duration;
  if (f.seed) o.seed = *f.seed;
  if (f.prefix_len) o.prefix_len = *f.prefix_len;
  if (f.token_id_max) o.token_id_max = static_cast<int32_t>(*f.token_id_max);
  if (f.request_timeout) o.request_timeout_s = *f.request_timeout;
  if (f.profile_num_prompts) o.profile_num_prompts = *f.profile_num_prompts;
  if (f.served_model_name) o.served_model_name = *f.served_model_name;
  if (f.dataset) o.dataset = *f.dataset;
  if (f.dataset_path) o.dataset_path = *f.dataset_path;
  if (f.api) o.api = *f.api == "chat" ? ApiKind::kChat : ApiKind::kCompletions;
  if (f.slo_ttft_ms) o.slo.ttft_ms = *f.slo_ttft_ms;
  if (f.slo_tpot_ms) o.slo.tpot_ms = *f.slo_tpot_ms;
  if (f.slo_e2el_ms) o.slo.e2el_ms = *f.slo_e2el_ms;
}

void validate(const BenchmarkConfig& c) {
  if (c.endpoint.empty() && c.model.empty())
    throw Error(
        ErrorKind::kUsage, "a benchmark needs --benchmark-config or a framework and --model", "",
        std::nullopt,
        "example: magpie benchmark vllm --model Qwen/Qwen3-8B --concurrency 32 --run-mode local\n"
        "     or: magpie benchmark -b examples/benchmark.yaml");
  if (c.run_mode == "ray")
    throw Error(ErrorKind::kUsage,
                "run_mode ray is a Ray job: `magpie benchmark -b FILE` submits it (not with -e local), and "
                "on the node it runs as ray_config.run_mode says", "", std::nullopt,
                "drop -e local, or pass --run-mode local|docker to run here");
  if (c.run_mode != "docker" && c.run_mode != "local")
    throw Error(
        ErrorKind::kUsage,
        fmt::format("run_mode '{}' is not supported here: use docker, local or ray", c.run_mode));
  if (c.run_kind != "auto" && c.run_kind != "measurement" && c.run_kind != "diagnostic")
    throw Error(ErrorKind::kUsage,
                fmt::format("run_kind '{}': use auto, measurement or diagnostic", c.run_kind));
  if (c.framework != "vllm" && c.framework != "sglang" && c.framework != "atom")
    throw Error(ErrorKind::kUsage,
                fmt::format("framework '{}': use vllm, sglang or atom", c.framework));
  if (c.client.dataset != "random" && c.client.dataset != "sharegpt" && c.client.dataset != "jsonl")
    throw Error(ErrorKind::kUsage,
                fmt::format("dataset '{}': use random, sharegpt or jsonl", c.client.dataset));
  if (c.client.dataset != "random" && c.client.dataset_path.empty())
    throw Error(ErrorKind::kUsage,
                fmt::format("dataset {} needs --dataset-path", c.client.dataset));
  if (c.precision != "fp8" && c.precision != "fp16" && c.precision != "bf16" && c.precision != "fp4")
    throw Error(ErrorKind::kUsage, fmt::format("precision '{}': use fp8, fp16, bf16 or fp4", c.precision));
  if (c.timeout_seconds < 0)
    throw Error(ErrorKind::kUsage, fmt::format("timeout_seconds {}: use 0 (none) or more", c.timeout_seconds));
  (void)c.cases();  // parses every number
}

}  // namespace magpie::serve
