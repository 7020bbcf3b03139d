#include "serve/benchmark_config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/config_keys.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "serve/benchmark_keys.hpp"
#include "serve/engine_command.hpp"
#include "serve/engine_precision.hpp"
#include "serve/sessions.hpp"
#include "serve/workload.hpp"

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

// Every value of the benchmark YAML is read here: a value of the wrong type or
// range names the file, line:column, the key path as written, what was
// expected and what was seen (config_value_error: exit 2), instead of
// yaml-cpp's "bad conversion" under a guessed key.
class Values {
 public:
  explicit Values(std::string origin) : origin_(std::move(origin)) {}

  // `map` is the mapping at `path` ("benchmark.gap_analysis", or "" at the top).
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static bool has(const YAML::Node& map, const char* key) { return map[key] && !map[key].IsNull(); }

  [[noreturn]] void fail(const YAML::Node& n, const std::string& path, const std::string& expected,
                         const std::string& fix = {}) const {
    std::string seen = n.IsScalar()    ? n.Scalar()
                       : n.IsSequence() ? "a list"
                       : n.IsMap()      ? "a mapping"
                                        : "nothing";
    const auto mark = n.Mark();
    throw config_value_error({origin_, mark.line + 1, mark.column + 1}, path, expected, seen, fix);
  }

  // A mapping section (absent or empty: an empty node).
  YAML::Node section(const YAML::Node& map, const std::string& path, const char* key) const {
    if (!has(map, key)) return YAML::Node();
    YAML::Node n = map[key];
    if (!n.IsMap()) fail(n, join(path, key), "a mapping of keys", "indent the keys under it");
    return n;
  }

  std::string text(const YAML::Node& map, const std::string& path, const char* key,
                   const std::string& fallback) const {
    if (!has(map, key)) return fallback;
    YAML::Node n = map[key];
    if (!n.IsScalar()) fail(n, join(path, key), "a single value");
    return n.Scalar();
  }

  bool boolean(const YAML::Node& map, const std::string& path, const char* key, bool fallback) const {
    if (!has(map, key)) return fallback;
    YAML::Node n = map[key];
    bool v = fallback;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
      fail(n, join(path, key), "true or false");
    return v;
  }

  double number(const YAML::Node& map, const std::string& path, const char* key, double fallback,
                NumberKind kind) const {
    if (!has(map, key)) return fallback;
    return number_at(map[key], join(path, key), kind);
  }
  double number_at(const YAML::Node& n, const std::string& path, NumberKind kind) const {
    std::optional<double> v = n.IsScalar() ? parse_number(n.Scalar(), kind) : std::nullopt;
    if (!v) fail(n, path, describe(kind));
    return *v;
  }
  int64_t integer(const YAML::Node& map, const std::string& path, const char* key, int64_t fallback,
                  NumberKind kind) const {
    return static_cast<int64_t>(number(map, path, key, static_cast<double>(fallback), kind));
  }

  // A YAML list of strings, or one comma-separated string.
  std::vector<std::string> strings(const YAML::Node& map, const std::string& path, const char* key,
                                   std::vector<std::string> fallback) const {
    if (!has(map, key)) return fallback;
    YAML::Node n = map[key];
    std::vector<std::string> out;
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) {
        if (!n[i].IsScalar())
          fail(n[i], fmt::format("{}[{}]", join(path, key), i), "a string");
        out.push_back(n[i].Scalar());
      }
      return out;
    }
    if (!n.IsScalar()) fail(n, join(path, key), "a list of strings or one comma-separated string");
    std::stringstream ss(n.Scalar());
    std::string item;
    while (std::getline(ss, item, ',')) {
      while (!item.empty() && item.front() == ' ') item.erase(item.begin());
      while (!item.empty() && item.back() == ' ') item.pop_back();
      if (!item.empty()) out.push_back(item);
    }
    return out;
  }

  // Magpie's env-style workload keys (envs:, sweep_matrix.cases): a number
  // where the key takes one, checked here where the file and line are known.
  std::string env_value(const YAML::Node& n, const std::string& path, const std::string& key) const {
    if (n.IsNull()) return "";
    if (!n.IsScalar()) fail(n, path, "a single value");
    if (auto kind = env_number_kind(key); kind && !parse_number(n.Scalar(), *kind))
      fail(n, path, describe(*kind));
    return n.Scalar();
  }

 private:
  std::string origin_;
};

std::string env_key_of(const YAML::Node& key_node) { return upper(key_node.Scalar()); }

TraceLensSettings parse_tracelens(const YAML::Node& t, const std::string& path, const Values& v,
                                  const std::string& origin) {
  TraceLensSettings s;
  s.analysis_mode = v.text(t, path, "analysis_mode", s.analysis_mode);
  if (s.analysis_mode == "classic") s.analysis_mode = "pytorch";
  if (s.analysis_mode != "inference" && s.analysis_mode != "pytorch")
    v.fail(t["analysis_mode"], Values::join(path, "analysis_mode"), "inference or pytorch (classic)");
  for (const auto& name : v.strings(t, path, "analysis_stages", {})) {
    if (name == "all") {
      s.analysis_stages.clear();
      break;
    }
    auto stage = analysis::parse_stage(name);
    if (!stage)
      throw bad(origin,
                fmt::format("{}.analysis_stages: unknown stage '{}' (use all, "
                            "prefilldecode, decode, prefill or pd, mixed, prefill_decode, "
                            "decode_only, prefill_only)",
                            path, name));
    if (std::find(s.analysis_stages.begin(), s.analysis_stages.end(), *stage) ==
        s.analysis_stages.end())
      s.analysis_stages.push_back(*stage);
  }
  s.num_steps = v.integer(t, path, "num_steps", s.num_steps, NumberKind::kNonNegativeInt);
  // The public tool's older spelling: export_csv / export_excel booleans.
  if (!Values::has(t, "export_format") && (Values::has(t, "export_csv") || Values::has(t, "export_excel"))) {
    const bool csv = v.boolean(t, path, "export_csv", false), excel = v.boolean(t, path, "export_excel", false);
    s.export_format = csv && excel ? "both" : excel ? "excel" : "csv";
  }
  s.export_format = v.text(t, path, "export_format", s.export_format);
  if (s.export_format != "csv" && s.export_format != "excel" && s.export_format != "both")
    v.fail(t["export_format"], Values::join(path, "export_format"), "csv, excel or both");
  s.gpu_arch_config = v.text(t, path, "gpu_arch_config", "");
  s.perf_report_enabled = v.boolean(t, path, "perf_report_enabled", true);
  if (Values::has(t, "multi_rank_report_enabled"))
    s.multi_rank_report_enabled = v.boolean(t, path, "multi_rank_report_enabled", false);
  return s;
}

}  // namespace

std::optional<double> parse_number(const std::string& text, NumberKind kind) {
  std::string t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(t.begin());
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  std::string lower = t;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (kind == NumberKind::kRate && (lower == "inf" || lower == "infinity"))
    return std::numeric_limits<double>::infinity();
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  const bool integer = v == std::floor(v);
  switch (kind) {
    case NumberKind::kNonNegative: return v >= 0 ? std::optional(v) : std::nullopt;
    case NumberKind::kPositive:
    case NumberKind::kRate: return v > 0 ? std::optional(v) : std::nullopt;
    case NumberKind::kPositiveInt: return integer && v >= 1 && v < 9e15 ? std::optional(v) : std::nullopt;
    case NumberKind::kNonNegativeInt: return integer && v >= 0 && v < 9e15 ? std::optional(v) : std::nullopt;
    case NumberKind::kPercent: return v >= 0 && v <= 100 ? std::optional(v) : std::nullopt;
    case NumberKind::kRangeRatio: return v >= 0 && v < 1 ? std::optional(v) : std::nullopt;
    case NumberKind::kPort: return integer && v >= 1 && v <= 65535 ? std::optional(v) : std::nullopt;
    case NumberKind::kTokenId:
      return integer && v >= 1 && v <= std::numeric_limits<int32_t>::max() ? std::optional(v) : std::nullopt;
  }
  return std::nullopt;
}

std::string describe(NumberKind kind) {
  switch (kind) {
    case NumberKind::kNonNegative: return "a number of 0 or more";
    case NumberKind::kPositive: return "a number above 0";
    case NumberKind::kPositiveInt: return "a positive integer";
    case NumberKind::kNonNegativeInt: return "an integer of 0 or more";
    case NumberKind::kPercent: return "a percentage from 0 to 100";
    case NumberKind::kRangeRatio: return "a ratio from 0 up to (not including) 1";
    case NumberKind::kPort: return "a port number from 1 to 65535";
    case NumberKind::kTokenId: return "a token id from 1 to 2147483647";
    case NumberKind::kRate: return "requests/s above 0, or inf";
  }
  return "a number";
}

std::optional<NumberKind> env_number_kind(const std::string& key) {
  if (key == "CONC" || key == "ISL" || key == "OSL" || key == "NUM_PROMPTS" || key == "TP")
    return NumberKind::kPositiveInt;
  if (key == "RANDOM_RANGE_RATIO") return NumberKind::kRangeRatio;
  if (key == "PORT") return NumberKind::kPort;
  if (key == "REQUEST_RATE") return NumberKind::kRate;
  if (key == "SEED") return NumberKind::kNonNegativeInt;
  if (key == "GPU_MEMORY_UTILIZATION" || key == "GPU_MEM_UTIL") return NumberKind::kPositive;
  return std::nullopt;
}

namespace {

// A comma list of numbers of one kind ("1,2,inf", "4,8"), each through parse_number.
std::vector<double> parse_list(const std::string& s, const char* what, NumberKind kind) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    auto v = parse_number(item, kind);
    if (!v) throw config_value_error({}, what, describe(kind) + " (a comma list may hold several)", item);
    out.push_back(*v);
  }
  if (out.empty()) throw config_value_error({}, what, describe(kind), s);
  return out;
}

// An env-style value: checked where it was read (YAML, flags); a config built
// in code (MCP) is checked here, the same way.
double env_number(const std::string& key, const std::string& text, const std::string& where = "envs") {
  const NumberKind kind = env_number_kind(key).value_or(NumberKind::kNonNegative);
  auto v = parse_number(text, kind);
  if (!v) throw config_value_error({where}, key, describe(kind), text);
  return *v;
}

}  // namespace

std::vector<double> parse_double_list(const std::string& s, const char* what) {
  return parse_list(s, what, NumberKind::kRate);
}

std::vector<int64_t> parse_int_list(const std::string& s, const char* what) {
  std::vector<int64_t> out;
  for (double d : parse_list(s, what, NumberKind::kPositiveInt)) out.push_back(static_cast<int64_t>(d));
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

namespace {

// A flag's or --env's value for an env-style key, refused as a YAML value is.
void check_env_value(const std::string& flag, const std::string& key, const std::string& value) {
  auto kind = env_number_kind(key);
  if (!kind || parse_number(value, *kind)) return;
  const char* example = *kind == NumberKind::kPort ? "8000" : *kind == NumberKind::kRangeRatio ? "0.5" : "8";
  throw config_value_error({flag}, key, describe(*kind), value,
                           flag == "--env" ? fmt::format("e.g. --env {}={}", key, example)
                                           : fmt::format("e.g. {} {}", flag, example));
}

}  // namespace

std::optional<int> BenchmarkConfig::port() const {
  const std::string text = env("PORT");
  if (text.empty()) return std::nullopt;
  auto v = parse_number(text, NumberKind::kPort);
  if (!v) throw config_value_error({"envs"}, "PORT", describe(NumberKind::kPort), text, "e.g. PORT: 8000");
  return static_cast<int>(*v);
}

int64_t BenchmarkConfig::tensor_parallel() const {
  const std::string text = env("TP", "1");
  auto v = parse_number(text, NumberKind::kPositiveInt);
  if (!v) throw config_value_error({"envs"}, "TP", describe(NumberKind::kPositiveInt), text, "e.g. TP: 2");
  return static_cast<int64_t>(*v);
}

std::string BenchmarkConfig::resolved_run_kind() const {
  if (run_kind != "auto") return run_kind;
  return torch_profiler || system_profiler || tracelens ? "diagnostic" : "measurement";
}

std::vector<WorkloadCase> BenchmarkConfig::cases() const {
  WorkloadCase base;
  // A concurrency ramp's case is named (and warmed up) by the ramp's peak.
  base.concurrency = client.concurrency_ramp ? ramp_peak_concurrency(*client.concurrency_ramp)
                                             : static_cast<int64_t>(env_number("CONC", env("CONC", "32")));
  base.input_len = static_cast<int64_t>(env_number("ISL", env("ISL", "1024")));
  base.output_len = static_cast<int64_t>(env_number("OSL", env("OSL", "512")));
  base.range_ratio = env_number("RANDOM_RANGE_RATIO", env("RANDOM_RANGE_RATIO", "0.5"));
  base.input_len_given = !env("ISL").empty();
  base.output_len_given = !env("OSL").empty();
  base.range_ratio_given = !env("RANDOM_RANGE_RATIO").empty();
  bool explicit_prompts = !env("NUM_PROMPTS").empty();
  base.num_prompts_given = explicit_prompts;
  auto num_prompts_for = [&](const WorkloadCase& c) {
    return explicit_prompts ? static_cast<int64_t>(env_number("NUM_PROMPTS", env("NUM_PROMPTS")))
                            : c.concurrency * 10;
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
      for (const auto& kv : m) {
        const std::string& k = kv.first;
        auto number = [&] { return env_number(k, kv.second, "sweep_matrix.cases"); };
        if (k == "CONC")
          c.concurrency = static_cast<int64_t>(number());
        else if (k == "ISL")
          c.input_len = static_cast<int64_t>(number()), c.input_len_given = true;
        else if (k == "OSL")
          c.output_len = static_cast<int64_t>(number()), c.output_len_given = true;
        else if (k == "NUM_PROMPTS")
          c.num_prompts = static_cast<int64_t>(number()), case_prompts = true, c.num_prompts_given = true;
        else if (k == "RANDOM_RANGE_RATIO")
          c.range_ratio = number(), c.range_ratio_given = true;
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
  const bool wrapped = root.IsMap() && root["benchmark"];
  YAML::Node b = wrapped ? root["benchmark"] : root;
  if (!b.IsMap()) throw bad(origin, "expected a `benchmark:` mapping");
  // Key paths as written: "benchmark.gap_analysis.top_k" under the wrapper, "gap_analysis.top_k" without.
  const std::string top = wrapped ? "benchmark" : "";
  auto at = [&top](const std::string& key) { return Values::join(top, key); };
  const Values v(origin);
  BenchmarkConfig c;
  c.config_yaml = text;
  KeyCheck keys = check_benchmark_keys(root, origin);
  c.unknown_keys = keys.unknown;
  c.warnings.insert(c.warnings.end(), keys.unknown.begin(), keys.unknown.end());
  c.warnings.insert(c.warnings.end(), keys.not_applied.begin(), keys.not_applied.end());
  c.framework = v.text(b, top, "framework", c.framework);
  c.model = v.text(b, top, "model", "");
  c.precision = v.text(b, top, "precision", c.precision);
  c.precision_given = Values::has(b, "precision");
  c.run_mode = v.text(b, top, "run_mode", c.run_mode);
  c.run_kind = v.text(b, top, "run_kind", c.run_kind);
  c.docker_image = v.text(b, top, "docker_image", "");
  c.gpu_arch = v.text(b, top, "gpu_arch", "");
  c.timeout_seconds = v.number(b, top, "timeout_seconds", c.timeout_seconds, NumberKind::kNonNegative);
  c.hf_cache_path = v.text(b, top, "hf_cache_path", "");
  c.endpoint = v.text(b, top, "endpoint", "");
  if (auto e = v.section(b, top, "envs"); e.IsMap())
    for (auto it : e)
      c.envs[env_key_of(it.first)] =
          v.env_value(it.second, Values::join(at("envs"), it.first.Scalar()), env_key_of(it.first));
  if (auto q = v.section(b, top, "quality"); q.IsMap()) {
    const auto p = at("quality");
    auto& o = c.quality;
    if (Values::has(q, "enabled")) o.enabled = v.boolean(q, p, "enabled", false);
    o.tasks = v.strings(q, p, "tasks", {});
    if (Values::has(q, "limit")) o.limit = v.integer(q, p, "limit", 1, NumberKind::kPositiveInt);
    if (Values::has(q, "num_fewshot")) o.num_fewshot = v.integer(q, p, "num_fewshot", 0, NumberKind::kNonNegativeInt);
    if (Values::has(q, "num_concurrent"))
      o.num_concurrent = v.integer(q, p, "num_concurrent", 1, NumberKind::kPositiveInt);
    if (Values::has(q, "timeout_s")) o.timeout_s = v.number(q, p, "timeout_s", 0, NumberKind::kPositive);
    o.task_dir = v.text(q, p, "task_dir", "");
    o.lm_eval = v.text(q, p, "lm_eval", "");
    o.model_type = v.text(q, p, "model", "");
    if (!o.model_type.empty() && o.model_type != "local-completions" && o.model_type != "local-chat-completions")
      v.fail(q["model"], Values::join(p, "model"), "local-completions or local-chat-completions");
  }
  if (auto s = v.section(b, top, "server_lifecycle"); s.IsMap()) {
    const auto p = at("server_lifecycle");
    c.server_ready_timeout_s =
        v.number(s, p, "server_ready_timeout_s", c.server_ready_timeout_s, NumberKind::kNonNegative);
    c.lifecycle.enabled = v.boolean(s, p, "enabled", c.lifecycle.enabled);
    c.lifecycle.force_reuse = v.boolean(s, p, "force_reuse", c.lifecycle.force_reuse);
    c.lifecycle.cleanup = v.boolean(s, p, "cleanup", c.lifecycle.cleanup);
  }
  if (auto g = v.section(b, top, "gpu_selection"); g.IsMap()) {
    const auto p = at("gpu_selection");
    GpuSelectionConfig sel;
    sel.auto_select = v.boolean(g, p, "auto", sel.auto_select);
    sel.min_free_memory_gb =
        v.number(g, p, "min_free_memory_gb", sel.min_free_memory_gb, NumberKind::kNonNegative);
    if (Values::has(g, "count")) sel.count = v.integer(g, p, "count", 1, NumberKind::kPositiveInt);
    if (Values::has(g, "candidates")) {
      auto cand = g["candidates"];
      const auto cp = Values::join(p, "candidates");
      if (cand.IsSequence()) {  // [0, 2]
        for (size_t i = 0; i < cand.size(); ++i)
          sel.candidates.push_back(static_cast<int>(
              v.number_at(cand[i], fmt::format("{}[{}]", cp, i), NumberKind::kNonNegativeInt)));
      } else {  // "0,2"
        for (const auto& item : v.strings(g, p, "candidates", {})) {
          if (!parse_number(item, NumberKind::kNonNegativeInt))
            v.fail(cand, cp, "GPU indices: a list [0, 2] or \"0,2\"");
          sel.candidates.push_back(static_cast<int>(*parse_number(item, NumberKind::kNonNegativeInt)));
        }
      }
    }
    c.gpu_selection = sel;
  }
  if (auto g = v.section(b, top, "gap_analysis"); g.IsMap()) {
    const auto p = at("gap_analysis");
    c.gap.find_kernel_sources = v.boolean(g, p, "find_kernel_sources", false);
    c.gap.kernel_source_repos = v.strings(g, p, "kernel_source_repos", {});
    c.gap.auto_clone_repos = v.boolean(g, p, "auto_clone_repos", c.gap.auto_clone_repos);
    c.gap.repos_base_dir = v.text(g, p, "repos_base_dir", "");
    c.gap.enabled = v.boolean(g, p, "enabled", c.gap.enabled);
    c.gap.start_pct = v.number(g, p, "trace_start_pct", 0, NumberKind::kPercent);
    c.gap.end_pct = v.number(g, p, "trace_end_pct", 100, NumberKind::kPercent);
    c.gap.top_k = static_cast<size_t>(v.integer(g, p, "top_k", 20, NumberKind::kPositiveInt));
    c.gap.min_duration_us = v.number(g, p, "min_duration_us", 0, NumberKind::kNonNegative);
    c.gap.categories = v.strings(g, p, "categories", c.gap.categories);
    c.gap.ignore_categories = v.strings(g, p, "ignore_categories", c.gap.ignore_categories);
  }
  if (auto pr = v.section(b, top, "profiler"); pr.IsMap()) {
    const auto p = at("profiler");
    if (auto t = v.section(pr, p, "torch_profiler"); t.IsMap()) {
      const auto tp = Values::join(p, "torch_profiler");
      c.torch_profiler = v.boolean(t, tp, "enabled", false);
      auto& ts = c.torch_profiler_settings;
      ts.num_profiles = v.integer(t, tp, "num_profiles", ts.num_profiles, NumberKind::kPositiveInt);
      ts.num_steps = v.integer(t, tp, "num_steps", ts.num_steps, NumberKind::kNonNegativeInt);
      ts.interval_seconds = v.number(t, tp, "interval_seconds", ts.interval_seconds, NumberKind::kNonNegative);
      ts.capture_timeout_seconds =
          v.number(t, tp, "capture_timeout_seconds", ts.capture_timeout_seconds, NumberKind::kNonNegative);
      ts.flush_timeout_seconds =
          v.number(t, tp, "flush_timeout_seconds", ts.flush_timeout_seconds, NumberKind::kPositive);
    }
    if (auto t = v.section(pr, p, "system_profiler"); t.IsMap()) {
      const auto sp = Values::join(p, "system_profiler");
      c.system_profiler = v.boolean(t, sp, "enabled", false);
      // A string ("--cuda-graph-trace=node --delay 5") or a list of arguments.
      if (auto a = t["profile_args"]; a && a.IsSequence())
        c.system_profiler_args = v.strings(t, sp, "profile_args", {});
      else if (Values::has(t, "profile_args"))
        c.system_profiler_args = split_args(v.text(t, sp, "profile_args", ""));
    }
    if (auto t = v.section(pr, p, "tracelens"); t.IsMap()) {
      const auto tp = Values::join(p, "tracelens");
      c.tracelens = v.boolean(t, tp, "enabled", false);
      c.tracelens_settings = parse_tracelens(t, tp, v, origin);
    }
    if (auto t = v.section(pr, p, "gpu_monitor"); t.IsMap()) {
      const auto gp = Values::join(p, "gpu_monitor");
      c.gpu_monitor.enabled = v.boolean(t, gp, "enabled", false);
      c.gpu_monitor.interval_s =
          v.number(t, gp, "interval_sec", c.gpu_monitor.interval_s, NumberKind::kPositive);
    }
  } else {
    c.warnings.push_back(
        "no `profiler:` section: running clean (Magpie would enable the torch profiler)");
  }
  if (auto s = v.section(b, top, "sweep_matrix"); s.IsMap()) {
    const auto p = at("sweep_matrix");
    c.on_failure = v.text(s, p, "on_failure", c.on_failure);
    // The public tool's place for the readiness limit; server_lifecycle's wins when both are given.
    if (!Values::has(v.section(b, top, "server_lifecycle"), "server_ready_timeout_s"))
      c.server_ready_timeout_s =
          v.number(s, p, "server_ready_timeout_s", c.server_ready_timeout_s, NumberKind::kNonNegative);
    if (Values::has(s, "cases")) {
      auto cases = s["cases"];
      const auto cp = Values::join(p, "cases");
      if (!cases.IsSequence()) v.fail(cases, cp, "a list of cases, e.g. - {CONC: 4, ISL: 128}");
      for (size_t i = 0; i < cases.size(); ++i) {
        auto item = cases[i];
        const auto ip = fmt::format("{}[{}]", cp, i);
        if (!item.IsMap()) v.fail(item, ip, "a mapping such as {CONC: 4, ISL: 128}");
        std::map<std::string, std::string> m;
        for (auto kv : item)
          m[env_key_of(kv.first)] =
              v.env_value(kv.second, Values::join(ip, kv.first.Scalar()), env_key_of(kv.first));
        c.sweep_cases.push_back(std::move(m));
      }
    }
  }
  if (auto cl = v.section(b, top, "client"); cl.IsMap()) {  // ours
    const auto p = at("client");
    auto& o = c.client;
    auto api = v.text(cl, p, "api", "completions");
    if (api != "completions" && api != "chat") v.fail(cl["api"], Values::join(p, "api"), "completions or chat");
    o.api = api == "chat" ? ApiKind::kChat : ApiKind::kCompletions;
    o.dataset = v.text(cl, p, "dataset", o.dataset);
    o.dataset_path = v.text(cl, p, "dataset_path", "");
    if (Values::has(cl, "request_rate")) {
      auto r = cl["request_rate"];
      const auto rp = Values::join(p, "request_rate");
      if (!r.IsScalar()) v.fail(r, rp, "requests/s above 0, or a list like 1,2,inf");
      for (const auto& item : v.strings(cl, p, "request_rate", {}))
        if (!parse_number(item, NumberKind::kRate)) v.fail(r, rp, "requests/s above 0, or a list like 1,2,inf");
      o.request_rates = parse_double_list(r.Scalar(), "client.request_rate");
    }
    o.burstiness = v.number(cl, p, "burstiness", o.burstiness, NumberKind::kPositive);
    o.warmups = v.integer(cl, p, "warmups", o.warmups, NumberKind::kNonNegativeInt);
    o.duration_s = v.number(cl, p, "duration_s", 0, NumberKind::kNonNegative);
    o.seed = static_cast<uint64_t>(v.integer(cl, p, "seed", 0, NumberKind::kNonNegativeInt));
    o.prefix_len = v.integer(cl, p, "prefix_len", 0, NumberKind::kNonNegativeInt);
    o.prefix_pool = v.integer(cl, p, "prefix_pool", 0, NumberKind::kNonNegativeInt);
    if (Values::has(cl, "prefix_reuse")) {
      o.prefix_reuse = v.number(cl, p, "prefix_reuse", 1.0, NumberKind::kNonNegative);
      if (o.prefix_reuse > 1) v.fail(cl["prefix_reuse"], Values::join(p, "prefix_reuse"), "a fraction in [0, 1]");
      o.prefix_reuse_given = true;
    }
    if (Values::has(cl, "token_id_max")) {
      o.token_id_max =
          static_cast<int32_t>(v.integer(cl, p, "token_id_max", o.token_id_max, NumberKind::kTokenId));
      o.token_id_max_given = true;
    }
    o.request_timeout_s = v.number(cl, p, "request_timeout_s", o.request_timeout_s, NumberKind::kPositive);
    o.served_model_name = v.text(cl, p, "served_model_name", "");
    if (Values::has(cl, "slo")) {
      auto slo_text = v.text(cl, p, "slo", "");
      try {
        o.slo_terms = parse_slo(slo_text, Values::join(p, "slo"));
      } catch (const Error&) {
        v.fail(cl["slo"], Values::join(p, "slo"), "terms like \"ttft_p99<=2s,tpot_p50<=50ms\" (METRIC ttft|tpot|itl|e2el, STAT pNN|median|mean, LIMIT with ms, s or us)");
      }
    }
    if (Values::has(cl, "slo_ttft_ms")) o.slo.ttft_ms = v.number(cl, p, "slo_ttft_ms", 0, NumberKind::kPositive);
    if (Values::has(cl, "slo_tpot_ms")) o.slo.tpot_ms = v.number(cl, p, "slo_tpot_ms", 0, NumberKind::kPositive);
    if (Values::has(cl, "slo_e2el_ms")) o.slo.e2el_ms = v.number(cl, p, "slo_e2el_ms", 0, NumberKind::kPositive);
    auto& se = o.sessions;
    se.turns = v.integer(cl, p, "turns", se.turns, NumberKind::kPositiveInt);
    se.system_prompt_len = v.integer(cl, p, "system_prompt_len", se.system_prompt_len, NumberKind::kNonNegativeInt);
    if (Values::has(cl, "think_time")) {
      se.think_time = v.text(cl, p, "think_time", se.think_time);
      try {
        (void)parse_think_time(se.think_time, Values::join(p, "think_time"));
      } catch (const Error&) {
        v.fail(cl["think_time"], Values::join(p, "think_time"),
               "seconds: 0.5 (constant), exp:0.5 (exponential mean) or uniform:0.2,0.8");
      }
    }
    se.header = v.text(cl, p, "session_header", se.header);
    se.concurrency = v.integer(cl, p, "session_concurrency", se.concurrency, NumberKind::kPositiveInt);
    se.num_sessions = v.integer(cl, p, "num_sessions", se.num_sessions, NumberKind::kPositiveInt);
    o.trace_speedup = v.number(cl, p, "trace_speedup", o.trace_speedup, NumberKind::kPositive);
    if (auto ag = v.section(cl, p, "agent"); ag.IsMap()) {
      const auto ap = Values::join(p, "agent");
      auto& a = o.agent;
      a.given = true;
      a.context_len = v.integer(ag, ap, "context_len", a.context_len, NumberKind::kPositiveInt);
      a.tool_result_len = v.integer(ag, ap, "tool_result_len", a.tool_result_len, NumberKind::kPositiveInt);
      a.tool_call_len = v.integer(ag, ap, "tool_call_len", a.tool_call_len, NumberKind::kPositiveInt);
      a.subagents = v.integer(ag, ap, "subagents", a.subagents, NumberKind::kNonNegativeInt);
      a.subagent_turns = v.integer(ag, ap, "subagent_turns", a.subagent_turns, NumberKind::kPositiveInt);
      a.spawn_after_turn = v.integer(ag, ap, "spawn_after_turn", a.spawn_after_turn, NumberKind::kNonNegativeInt);
      a.range_ratio = v.number(ag, ap, "range_ratio", a.range_ratio, NumberKind::kRangeRatio);
    }
    // A ramp that does not parse: the YAML's line, and the accepted form.
    auto ramp = [&](const char* key, LoadRamp (*parse)(const std::string&, const std::string&), const char* unit,
                    std::optional<LoadRamp>& out) {
      if (!Values::has(cl, key)) return;
      try {
        out = parse(v.text(cl, p, key, ""), Values::join(p, key));
      } catch (const Error&) {
        v.fail(cl[key], Values::join(p, key),
               fmt::format("linear:FROM,TO,SECONDS[,WINDOWS] or steps:FROM,TO,SECONDS,N ({})", unit));
      }
    };
    ramp("rate_ramp", parse_rate_ramp, "rates in req/s", o.rate_ramp);
    ramp("concurrency_ramp", parse_concurrency_ramp, "requests in flight, whole numbers >= 1", o.concurrency_ramp);
    if (auto se_node = v.section(cl, p, "search"); se_node.IsMap()) {
      const auto sp = Values::join(p, "search");
      SloSearchSettings ss;
      auto var = v.text(se_node, sp, "variable", "request_rate");
      if (var != "request_rate" && var != "concurrency")
        v.fail(se_node["variable"], Values::join(sp, "variable"), "request_rate or concurrency");
      ss.variable = var == "concurrency" ? SearchVariable::kConcurrency : SearchVariable::kRequestRate;
      for (const char* key : {"min", "max"})
        if (!Values::has(se_node, key))
          v.fail(se_node, Values::join(sp, key), "the search range's low and high ends (min: and max:)",
                 "e.g. search: {variable: request_rate, min: 1, max: 64}");
      ss.min = v.number(se_node, sp, "min", 0, NumberKind::kPositive);
      ss.max = v.number(se_node, sp, "max", 0, NumberKind::kPositive);
      ss.step = v.number(se_node, sp, "step", 0, NumberKind::kPositive);
      ss.repeats = v.integer(se_node, sp, "repeats", ss.repeats, NumberKind::kPositiveInt);
      ss.max_repeats = v.integer(se_node, sp, "max_repeats", std::max(ss.repeats, ss.max_repeats), NumberKind::kPositiveInt);
      ss.noise = v.number(se_node, sp, "noise", ss.noise, NumberKind::kNonNegative);
      ss.max_probes = v.integer(se_node, sp, "max_probes", ss.max_probes, NumberKind::kPositiveInt);
      ss.max_time_s = v.number(se_node, sp, "max_time_s", ss.max_time_s, NumberKind::kNonNegative);
      check_search(ss, fmt::format("{}: {}", origin, sp));
      o.search = ss;
    }
  }
  // The public tool's env names for two client knobs (checked as numbers above); client: wins.
  const YAML::Node client_section = v.section(b, top, "client");
  if (auto rate = c.env("REQUEST_RATE"); !rate.empty() && !Values::has(client_section, "request_rate"))
    c.client.request_rates = parse_double_list(rate, "envs.REQUEST_RATE");
  if (auto seed = c.env("SEED"); !seed.empty() && !Values::has(client_section, "seed"))
    c.client.seed = static_cast<uint64_t>(*parse_number(seed, NumberKind::kNonNegativeInt));
  return c;
}

BenchmarkConfig load_benchmark_yaml(const std::filesystem::path& path) {
  auto buf = read_file(path);
  return parse_benchmark_yaml(std::string(buf.view()), path.string());
}

namespace {

// The public tool's names for a client-only run (its wrapper script reads them
// from `envs:` or the environment): BENCHMARK_BASE_URL is the server to load,
// MAGPIE_BENCHMARK_BACKEND / MAGPIE_BENCHMARK_ENDPOINT pick completions or chat.
// A value in envs (YAML or --env) wins over the process environment; an explicit
// endpoint / --endpoint / --api wins over both.
std::string client_name(const BenchmarkConfig& c, const char* key) {
  if (auto v = c.env(key); !v.empty()) return v;
  const char* e = std::getenv(key);
  return e ? e : "";
}

void apply_client_only_names(BenchmarkConfig& c, bool endpoint_given, bool api_given) {
  if (auto url = client_name(c, "BENCHMARK_BASE_URL"); !url.empty() && !endpoint_given && c.endpoint.empty())
    c.endpoint = url;
  if (api_given) return;
  std::optional<ApiKind> by_backend, by_path;
  const auto backend = client_name(c, "MAGPIE_BENCHMARK_BACKEND");
  if (backend == "openai-chat")
    by_backend = ApiKind::kChat;
  else if (backend == "openai" || backend == "vllm" || backend == "sglang" || backend == "atom")
    by_backend = ApiKind::kCompletions;
  else if (!backend.empty())
    throw config_value_error({"MAGPIE_BENCHMARK_BACKEND"}, "MAGPIE_BENCHMARK_BACKEND",
                             "openai-chat (chat completions) or openai, vllm, sglang, atom (completions)", backend);
  const auto path = client_name(c, "MAGPIE_BENCHMARK_ENDPOINT");
  if (path == "/v1/chat/completions")
    by_path = ApiKind::kChat;
  else if (path == "/v1/completions")
    by_path = ApiKind::kCompletions;
  else if (!path.empty())
    throw config_value_error({"MAGPIE_BENCHMARK_ENDPOINT"}, "MAGPIE_BENCHMARK_ENDPOINT",
                             "/v1/completions or /v1/chat/completions", path);
  if (by_backend && by_path && *by_backend != *by_path)
    throw Error(ErrorKind::kUsage,
                fmt::format("MAGPIE_BENCHMARK_BACKEND={} and MAGPIE_BENCHMARK_ENDPOINT={} disagree", backend, path),
                "", std::nullopt, "use openai-chat with /v1/chat/completions, openai with /v1/completions");
  if (by_backend) c.client.api = *by_backend;
  else if (by_path) c.client.api = *by_path;
}

}  // namespace

namespace {

// What a ramp (rate, or concurrency) cannot be combined with; empty: nothing.
std::string ramp_clash(const BenchmarkConfig& c, bool concurrency) {
  const auto& o = c.client;
  const auto& kind = workload_kind(o.dataset);
  if (o.search) return "--search (it sets each probe's load)";
  if (concurrency && o.rate_ramp) return "--rate-ramp (one ramp per case)";
  if (o.duration_s > 0) return "--duration (the ramp's SECONDS bound the case)";
  if (concurrency && !c.env("NUM_PROMPTS").empty()) return "--num-prompts (the ramp's SECONDS bound the case)";
  if (concurrency && (!c.env("CONC").empty() || !c.concurrency_sweep.empty() || !c.sweep_cases.empty()))
    return "--concurrency (CONC; the ramp sets it)";
  if (o.request_rates.size() != 1 || std::isfinite(o.request_rates.front()))
    return concurrency ? "--request-rate (a concurrency ramp refills each freed slot at once)"
                       : "--request-rate (the ramp sets the rate)";
  if (kind.fixed_schedule) return "dataset " + o.dataset + " (its timestamps set the schedule)";
  if (kind.sessions)
    return "dataset " + o.dataset +
           (concurrency ? " (turns follow replies; --session-concurrency caps sessions)"
                        : " (turns follow replies, not a schedule)");
  return {};
}

// A ramp sets the load itself; the search varies one case against --slo.
// Checked where the flags are applied (exit 2).
void check_load_shape(const BenchmarkConfig& c) {
  for (const auto* ramp : {&c.client.rate_ramp, &c.client.concurrency_ramp}) {
    if (!*ramp) continue;
    const bool concurrency = (*ramp)->concurrency;
    if (auto clash = ramp_clash(c, concurrency); !clash.empty())
      throw Error(ErrorKind::kUsage,
                  fmt::format("{} '{}' cannot be combined with {}", concurrency ? "--concurrency-ramp" : "--rate-ramp",
                              (*ramp)->text, clash),
                  "", std::nullopt, "drop one of them");
  }
  if (!c.client.search) return;
  const char* what = to_string(c.client.search->variable);
  if (c.client.slo_terms.empty())
    throw Error(ErrorKind::kUsage, fmt::format("the SLO search ({}) needs SLOs to meet", what), "", std::nullopt,
                "add --slo \"ttft_p99<=2s,tpot_p50<=50ms\" (client.slo in the YAML)");
  const size_t ncases = c.cases().size();
  if (ncases != 1)
    throw Error(ErrorKind::kUsage,
                fmt::format("the SLO search ({}) varies one case, and {} were given (a concurrency or rate "
                            "list, or sweep_matrix cases)",
                            what, ncases),
                "", std::nullopt, "give one --concurrency and one --request-rate");
  if (c.client.search->variable == SearchVariable::kRequestRate &&
      (c.client.dataset == "mooncake" || c.client.dataset == "timed_jsonl"))
    throw Error(ErrorKind::kUsage,
                fmt::format("a request-rate search cannot vary dataset {}: its timestamps set the rate",
                            c.client.dataset),
                "", std::nullopt, "search concurrency, or scale the trace with --trace-speedup");
}

}  // namespace

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
    const std::string key = upper(kv.substr(0, eq));
    check_env_value("--env", key, kv.substr(eq + 1));
    c.envs[key] = kv.substr(eq + 1);
  }
  // The flags that set env-style keys, checked as the YAML's values are.
  if (!from_yaml) {
    if (f.tp) check_env_value("--tp", "TP", *f.tp);
    if (f.input_len) check_env_value("--input-len", "ISL", *f.input_len);
    if (f.output_len) check_env_value("--output-len", "OSL", *f.output_len);
  }
  if (f.num_prompts) check_env_value("--num-prompts", "NUM_PROMPTS", *f.num_prompts);
  if (f.range_ratio) check_env_value("--range-ratio", "RANDOM_RANGE_RATIO", *f.range_ratio);
  c.engine_extra_args.insert(c.engine_extra_args.end(), f.extra_engine_args.begin(),
                             f.extra_engine_args.end());
  auto& o = c.client;
  if (f.request_rate) o.request_rates = parse_double_list(*f.request_rate, "--request-rate");
  if (f.burstiness) o.burstiness = *f.burstiness;
  if (f.warmups) o.warmups = *f.warmups;
  if (f.duration) o.duration_s = *f.duration;
  if (f.seed) o.seed = *f.seed;
  if (f.prefix_len) o.prefix_len = *f.prefix_len;
  if (f.prefix_pool) o.prefix_pool = *f.prefix_pool;
  if (f.prefix_reuse) {
    if (!(*f.prefix_reuse >= 0 && *f.prefix_reuse <= 1))
      throw config_value_error({"--prefix-reuse"}, "prefix_reuse", "a fraction in [0, 1]",
                               fmt::format("{}", *f.prefix_reuse));
    o.prefix_reuse = *f.prefix_reuse;
    o.prefix_reuse_given = true;
  }
  if (f.token_id_max) {
    if (!parse_number(std::to_string(*f.token_id_max), NumberKind::kTokenId))
      throw config_value_error({"--token-id-max"}, "token_id_max", describe(NumberKind::kTokenId),
                               std::to_string(*f.token_id_max));
    o.token_id_max = static_cast<int32_t>(*f.token_id_max);
    o.token_id_max_given = true;
  }
  if (f.request_timeout) o.request_timeout_s = *f.request_timeout;
  if (f.profile_num_prompts) o.profile_num_prompts = *f.profile_num_prompts;
  if (f.served_model_name) o.served_model_name = *f.served_model_name;
  if (f.dataset) o.dataset = *f.dataset;
  if (f.dataset_path) o.dataset_path = *f.dataset_path;
  if (f.api) o.api = *f.api == "chat" ? ApiKind::kChat : ApiKind::kCompletions;
  if (f.slo) o.slo_terms = parse_slo(*f.slo, "--slo");
  if (f.search || f.search_range || f.search_step || f.search_noise || f.search_max_time || f.search_repeats ||
      f.search_max_repeats || f.search_max_probes) {
    SloSearchSettings ss = o.search.value_or(SloSearchSettings{});
    if (f.search) {
      if (*f.search != "request_rate" && *f.search != "concurrency")
        throw config_value_error({"--search"}, "--search", "request_rate or concurrency", *f.search);
      ss.variable = *f.search == "concurrency" ? SearchVariable::kConcurrency : SearchVariable::kRequestRate;
    } else if (!o.search) {
      throw Error(ErrorKind::kUsage, "the --search-* options tune an SLO search, and none was asked for", "",
                  std::nullopt, "add --search request_rate (or concurrency) --search-range MIN:MAX");
    }
    if (f.search_range) {
      auto colon = f.search_range->find(':');
      std::optional<double> lo, hi;
      if (colon != std::string::npos) {
        lo = parse_number(f.search_range->substr(0, colon), NumberKind::kNonNegative);
        hi = parse_number(f.search_range->substr(colon + 1), NumberKind::kNonNegative);
      }
      if (!lo || !hi)
        throw config_value_error({"--search-range"}, "--search-range", "MIN:MAX, two numbers (e.g. 1:64)",
                                 *f.search_range);
      ss.min = *lo;
      ss.max = *hi;
    } else if (!o.search) {
      throw Error(ErrorKind::kUsage, "--search needs --search-range MIN:MAX: the values it may probe", "",
                  std::nullopt, "e.g. --search request_rate --search-range 1:64");
    }
    if (f.search_step) ss.step = *f.search_step;
    if (f.search_noise) ss.noise = *f.search_noise;
    if (f.search_max_time) ss.max_time_s = *f.search_max_time;
    if (f.search_repeats) {
      ss.repeats = *f.search_repeats;
      if (!f.search_max_repeats) ss.max_repeats = std::max(ss.max_repeats, ss.repeats);
    }
    if (f.search_max_repeats) ss.max_repeats = *f.search_max_repeats;
    if (f.search_max_probes) ss.max_probes = *f.search_max_probes;
    check_search(ss, f.search_range ? "--search-range" : "--search");
    o.search = ss;
  }
  if (f.rate_ramp) o.rate_ramp = parse_rate_ramp(*f.rate_ramp, "--rate-ramp");
  if (f.concurrency_ramp) o.concurrency_ramp = parse_concurrency_ramp(*f.concurrency_ramp, "--concurrency-ramp");
  if (f.slo_ttft_ms) o.slo.ttft_ms = *f.slo_ttft_ms;
  if (f.slo_tpot_ms) o.slo.tpot_ms = *f.slo_tpot_ms;
  if (f.slo_e2el_ms) o.slo.e2el_ms = *f.slo_e2el_ms;
  auto positive = [](const std::optional<int64_t>& v, const char* flag, bool zero_ok) {
    if (v && (*v < 0 || (*v == 0 && !zero_ok)))
      throw config_value_error({flag}, flag, zero_ok ? "a non-negative integer" : "a positive integer",
                               std::to_string(*v));
  };
  positive(f.turns, "--turns", false);
  positive(f.system_prompt_len, "--system-prompt-len", true);
  positive(f.session_concurrency, "--session-concurrency", false);
  positive(f.num_sessions, "--num-sessions", false);
  if (f.turns) o.sessions.turns = *f.turns;
  if (f.system_prompt_len) o.sessions.system_prompt_len = *f.system_prompt_len;
  if (f.session_concurrency) o.sessions.concurrency = *f.session_concurrency;
  if (f.num_sessions) o.sessions.num_sessions = *f.num_sessions;
  if (f.think_time) {
    (void)parse_think_time(*f.think_time, "--think-time");
    o.sessions.think_time = *f.think_time;
  }
  if (f.session_header) o.sessions.header = *f.session_header;
  if (f.trace_speedup) {
    if (!(*f.trace_speedup > 0) || std::isinf(*f.trace_speedup))
      throw config_value_error({"--trace-speedup"}, "--trace-speedup", "a number above 0",
                               fmt::format("{}", *f.trace_speedup));
    o.trace_speedup = *f.trace_speedup;
  }
  apply_client_only_names(c, f.endpoint.has_value(), f.api.has_value());
  check_load_shape(c);
}

QualitySettings BenchmarkConfig::quality_settings() const {
  QualitySettings s;
  const auto run_eval = env("RUN_EVAL");
  if (!run_eval.empty()) {
    std::string lower = run_eval;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (lower == "true" || lower == "1" || lower == "yes" || lower == "on")
      s.requested = true;
    else if (lower != "false" && lower != "0" && lower != "no" && lower != "off")
      throw config_value_error({"envs.RUN_EVAL"}, "envs.RUN_EVAL", "true or false", run_eval);
  }
  if (quality.enabled) s.requested = *quality.enabled;
  if (!quality.tasks.empty()) {
    s.tasks = quality.tasks;
  } else if (auto t = env("MAGPIE_EVAL_TASKS"); !t.empty()) {
    s.tasks.clear();
    std::stringstream ss(t);
    for (std::string item; std::getline(ss, item, ',');)
      if (item.find_first_not_of(' ') != std::string::npos)
        s.tasks.push_back(item.substr(item.find_first_not_of(' '), item.find_last_not_of(' ') - item.find_first_not_of(' ') + 1));
  }
  if (quality.limit) {
    s.limit = quality.limit;
  } else if (auto l = env("MAGPIE_EVAL_LIMIT"); !l.empty()) {
    auto n = parse_number(l, NumberKind::kPositiveInt);
    if (!n) throw config_value_error({"envs.MAGPIE_EVAL_LIMIT"}, "envs.MAGPIE_EVAL_LIMIT", describe(NumberKind::kPositiveInt), l);
    s.limit = static_cast<int64_t>(*n);
  }
  s.num_fewshot = quality.num_fewshot;
  s.task_dir = quality.task_dir.empty() ? env("EVAL_TASKS_DIR") : quality.task_dir;
  s.model_type = !quality.model_type.empty()          ? quality.model_type
                 : client.api == ApiKind::kChat ? "local-chat-completions"
                                                : "local-completions";
  s.lm_eval = quality.lm_eval;
  if (quality.num_concurrent) s.num_concurrent = *quality.num_concurrent;
  if (quality.timeout_s) s.timeout_s = *quality.timeout_s;
  if (s.requested && !s.task_dir.empty() && !std::filesystem::is_directory(s.task_dir))
    throw Error(ErrorKind::kNotFound, fmt::format("quality.task_dir {} is not a folder", s.task_dir), s.task_dir,
                std::nullopt, "point it at a folder of lm-eval task YAML files (lm_eval --include_path)");
  return s;
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
  (void)check_workload_knobs(c.client, c.cases());  // a knob the workload cannot honour is refused
  if (!known_precision(c.precision))
    throw Error(ErrorKind::kUsage,
                fmt::format("precision '{}': use fp8, fp16, bf16, fp4, mxfp4, mxfp8 or w4a16", c.precision));
  if (c.timeout_seconds < 0)
    throw Error(ErrorKind::kUsage, fmt::format("timeout_seconds {}: use 0 (none) or more", c.timeout_seconds));
  (void)c.cases();  // parses every number
  (void)c.quality_settings();
}

}  // namespace magpie::serve
