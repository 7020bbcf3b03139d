#include "kernel/kernel_config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/config_keys.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::kernel {

namespace fs = std::filesystem;

KernelType parse_kernel_type(std::string_view text, const std::string& origin) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "hip") return KernelType::kHip;
  if (t == "cuda") return KernelType::kCuda;
  if (t == "pytorch" || t == "torch" || t == "py") return KernelType::kPytorch;
  if (t == "triton") return KernelType::kTriton;
  throw Error(ErrorKind::kUsage, fmt::format("unknown kernel type '{}'", text), origin, std::nullopt,
              "use one of hip, cuda, pytorch (or torch, py), triton");
}

const char* to_string(KernelType type) {
  switch (type) {
    case KernelType::kHip: return "hip";
    case KernelType::kCuda: return "cuda";
    case KernelType::kPytorch: return "pytorch";
    case KernelType::kTriton: return "triton";
  }
  return "hip";
}

namespace {

// Context for error messages: the file and the dotted key being read.
struct Reader {
  std::string origin;
  fs::path base_dir;
  const VarLookup& lookup;
  std::vector<std::string>& warnings;
  std::vector<std::string>& unknown;

  [[noreturn]] void fail(const std::string& key, const std::string& what, const std::string& fix) const {
    throw Error(ErrorKind::kUsage, fmt::format("key '{}': {}", key, what), origin, std::nullopt, fix);
  }

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(key, "expected a string or number", "write a single value");
    return n.Scalar();
  }
  std::string text(const YAML::Node& n, const std::string& key) const {
    return expand_vars(scalar(n, key), lookup);
  }
  template <class T>
  T number(const YAML::Node& n, const std::string& key) const {
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, fmt::format("'{}' is not a number", n.IsScalar() ? n.Scalar() : "(not a scalar)"),
           "write a plain number, e.g. 300");
    }
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    try {
      return n.as<bool>();
    } catch (const YAML::Exception&) {
      fail(key, "expected true or false", "write true or false");
    }
  }
  std::vector<std::string> strings(const YAML::Node& n, const std::string& key) const {
    std::vector<std::string> out;
    if (n.IsScalar()) {
      out.push_back(text(n, key));
    } else if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) out.push_back(text(n[i], fmt::format("{}[{}]", key, i)));
    } else if (!n.IsNull()) {
      fail(key, "expected a string or a list of strings", "e.g. [a.cu, b.cu]");
    }
    return out;
  }
  fs::path path(const YAML::Node& n, const std::string& key, const fs::path& base) const {
    fs::path p = text(n, key);
    return p.is_absolute() ? p : (base / p).lexically_normal();
  }

  CommandList commands(const YAML::Node& n, const std::string& key) const {
    CommandList out;
    if (n.IsNull()) return out;
    if (n.IsScalar()) {
      auto argv = split_command(text(n, key));
      if (!argv.empty()) out.push_back(std::move(argv));
      return out;
    }
    if (!n.IsSequence()) fail(key, "expected a command", "write a string, a list of strings, or a list of lists");
    bool any_list = false, any_scalar = false;
    for (const auto& item : n) (item.IsSequence() ? any_list : any_scalar) = true;
    if (any_list && any_scalar) {
      fail(key, "mixes strings and lists", "write one command as a list of strings, or several as a list of lists");
    }
    if (any_scalar) {
      Command argv;
      for (size_t i = 0; i < n.size(); ++i) argv.push_back(text(n[i], fmt::format("{}[{}]", key, i)));
      out.push_back(std::move(argv));
      return out;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      Command argv;
      for (size_t j = 0; j < n[i].size(); ++j) {
        argv.push_back(text(n[i][j], fmt::format("{}[{}][{}]", key, i, j)));
      }
      if (!argv.empty()) out.push_back(std::move(argv));
    }
    return out;
  }

  void warn_unknown(const YAML::Node& map, const std::string& where, const std::set<std::string>& known) const {
    for (const auto& kv : map) {
      auto k = kv.first.Scalar();
      if (!known.contains(k)) {
        unknown.push_back(unknown_key_message(origin, where, k, {known.begin(), known.end()}));
        warnings.push_back(unknown.back());
      }
    }
  }

  BenchTarget bench_target(const YAML::Node& n, const std::string& key) const {
    if (!n.IsMap()) fail(key, "expected a map", "write {module: my_kernel, callable: run, get_inputs: get_inputs}");
    BenchTarget t;
    if (n["module"]) t.module = text(n["module"], key + ".module");
    if (n["callable"]) t.callable = text(n["callable"], key + ".callable");
    if (n["get_inputs"]) t.get_inputs = text(n["get_inputs"], key + ".get_inputs");
    if (t.module.empty() || t.callable.empty()) {
      fail(key, "needs both 'module' and 'callable'", "e.g. {module: softmax_triton, callable: softmax}");
    }
    return t;
  }

  KernelSpec kernel(const YAML::Node& n, const std::string& key) const {
    if (!n.IsMap()) fail(key, "expected a map with at least 'type'", "see docs/KERNEL_EVALUATION.md");
    warn_unknown(n, key + ".",
                 {"id", "type", "source_files", "working_dir", "env", "testcase_command", "compile_command",
                  "prof_command", "bench_target", "get_inputs_func", "get_init_inputs_func", "min_bytes",
                  "min_flops", "name"});
    KernelSpec k;
    if (n["id"]) k.id = text(n["id"], key + ".id");
    if (n["type"]) k.type = parse_kernel_type(scalar(n["type"], key + ".type"), origin);
    k.working_dir = n["working_dir"] ? path(n["working_dir"], key + ".working_dir", base_dir) : base_dir;
    if (n["source_files"]) {
      for (const auto& s : strings(n["source_files"], key + ".source_files")) {
        fs::path p = s;
        k.source_files.push_back(p.is_absolute() ? p : (k.working_dir / p).lexically_normal());
      }
    }
    if (n["env"]) {
      if (!n["env"].IsMap()) fail(key + ".env", "expected a map", "write env: {NAME: value}");
      for (const auto& kv : n["env"]) k.env[kv.first.Scalar()] = text(kv.second, key + ".env." + kv.first.Scalar());
    }
    if (n["testcase_command"]) k.testcase_command = commands(n["testcase_command"], key + ".testcase_command");
    if (n["compile_command"]) k.compile_command = commands(n["compile_command"], key + ".compile_command");
    if (n["prof_command"]) k.prof_command = commands(n["prof_command"], key + ".prof_command");
    if (n["bench_target"]) k.bench_target = bench_target(n["bench_target"], key + ".bench_target");
    if (n["get_inputs_func"]) k.get_inputs_func = text(n["get_inputs_func"], key + ".get_inputs_func");
    if (n["get_init_inputs_func"]) k.get_init_inputs_func = text(n["get_init_inputs_func"], key + ".get_init_inputs_func");
    if (n["min_bytes"]) k.min_bytes = number<double>(n["min_bytes"], key + ".min_bytes");
    if (n["min_flops"]) k.min_flops = number<double>(n["min_flops"], key + ".min_flops");
    return k;
  }

  void performance(const YAML::Node& n, PerformanceSettings& p) const {
    const std::string key = "performance";
    if (!n.IsMap()) fail(key, "expected a map", "e.g. performance: {timeout_seconds: 300}");
    warn_unknown(n, "performance.",
                 {"backend", "timeout_seconds", "ncu", "rocprof_compute", "metrix", "ncu_pass", "rounds",
                  "min_rounds", "max_rounds",
                  "threshold", "bootstrap_resamples", "bootstrap_seed", "confidence", "peak_tbps", "peak_tflops",
                  "floor_tolerance", "cupti_kind"});
    if (n["backend"]) {
      p.backend = scalar(n["backend"], key + ".backend");
      if (p.backend != "rocprof_compute" && p.backend != "ncu" && p.backend != "metrix") {
        fail(key + ".backend", fmt::format("unknown backend '{}'", p.backend), "use rocprof_compute, ncu or metrix");
      }
    }
    if (n["timeout_seconds"]) p.timeout_seconds = number<int>(n["timeout_seconds"], key + ".timeout_seconds");
    if (const auto ncu = n["ncu"]; ncu && ncu.IsMap()) {
      if (ncu["args"]) p.ncu_args = strings(ncu["args"], key + ".ncu.args");
      if (ncu["metrics"]) p.ncu_metrics = strings(ncu["metrics"], key + ".ncu.metrics");
    }
    if (n["ncu_pass"]) p.ncu_pass = boolean(n["ncu_pass"], key + ".ncu_pass");
    if (n["rounds"]) {
      p.rounds = number<int>(n["rounds"], key + ".rounds");
      p.rounds_exact = true;
    }
    if (n["min_rounds"]) p.min_rounds = number<int>(n["min_rounds"], key + ".min_rounds");
    if (n["max_rounds"]) p.max_rounds = number<int>(n["max_rounds"], key + ".max_rounds");
    if (p.min_rounds < 1) fail(key + ".min_rounds", "must be at least 1", "e.g. min_rounds: 3");
    if (p.max_rounds < p.min_rounds)
      fail(key + ".max_rounds", "must be at least min_rounds", "e.g. max_rounds: 10");
    if (n["threshold"]) p.threshold = number<double>(n["threshold"], key + ".threshold");
    if (n["bootstrap_resamples"]) p.bootstrap_resamples = number<int>(n["bootstrap_resamples"], key + ".bootstrap_resamples");
    if (n["bootstrap_seed"]) p.bootstrap_seed = number<uint64_t>(n["bootstrap_seed"], key + ".bootstrap_seed");
    if (n["confidence"]) p.confidence = number<double>(n["confidence"], key + ".confidence");
    if (n["peak_tbps"]) p.peak_tbps = number<double>(n["peak_tbps"], key + ".peak_tbps");
    if (n["peak_tflops"]) p.peak_tflops = number<double>(n["peak_tflops"], key + ".peak_tflops");
    if (n["floor_tolerance"]) p.floor_tolerance = number<double>(n["floor_tolerance"], key + ".floor_tolerance");
    if (n["cupti_kind"]) {
      p.cupti_kind = scalar(n["cupti_kind"], key + ".cupti_kind");
      if (p.cupti_kind != "auto" && p.cupti_kind != "concurrent" && p.cupti_kind != "serial") {
        fail(key + ".cupti_kind", fmt::format("unknown CUPTI kind '{}'", p.cupti_kind),
             "use auto (a probe round decides), concurrent or serial");
      }
    }
    if (p.rounds < 1) fail(key + ".rounds", "must be at least 1", "e.g. rounds: 5");
    if (p.threshold < 0 || p.threshold >= 1) fail(key + ".threshold", "must be in [0, 1)", "e.g. threshold: 0.02 for ±2%");
    if (p.timeout_seconds <= 0) fail(key + ".timeout_seconds", "must be positive", "e.g. 300");
  }

  void correctness(const YAML::Node& n, CorrectnessSettings& c) const {
    const std::string key = "correctness";
    if (!n.IsMap()) fail(key, "expected a map", "e.g. correctness: {backend: testcase}");
    warn_unknown(n, "correctness.", {"backend", "accordo", "timeout_seconds", "seeds", "atol", "rtol", "equal_nan"});
    if (n["backend"]) {
      c.backend = scalar(n["backend"], key + ".backend");
      if (c.backend != "testcase" && c.backend != "accordo") {
        fail(key + ".backend", fmt::format("unknown backend '{}'", c.backend), "use testcase or accordo");
      }
    }
    auto tolerances = [&](const YAML::Node& m, const std::string& k) {
      if (m["atol"]) c.atol = number<double>(m["atol"], k + ".atol"), c.tolerances_set = true;
      if (m["rtol"]) c.rtol = number<double>(m["rtol"], k + ".rtol"), c.tolerances_set = true;
      if (m["equal_nan"]) c.equal_nan = boolean(m["equal_nan"], k + ".equal_nan");
    };
    if (const auto a = n["accordo"]; a && a.IsMap()) {
      tolerances(a, key + ".accordo");
      if (a["timeout_seconds"]) c.accordo_timeout_seconds = number<int>(a["timeout_seconds"], key + ".accordo.timeout_seconds");
    }
    tolerances(n, key);
    if (n["timeout_seconds"]) c.timeout_seconds = number<int>(n["timeout_seconds"], key + ".timeout_seconds");
    if (n["seeds"]) c.seeds = number<int>(n["seeds"], key + ".seeds");
    if (c.seeds < 1) fail(key + ".seeds", "must be at least 1", "e.g. seeds: 3");
  }

  std::vector<int> int_list(const YAML::Node& n, const std::string& key) const {
    std::vector<int> out;
    auto add = [&](const std::string& item, const std::string& where) {
      try {
        size_t used = 0;
        int v = std::stoi(item, &used);
        if (used != item.size() || v < 0) throw std::invalid_argument(item);
        out.push_back(v);
      } catch (const std::exception&) {
        fail(where, fmt::format("'{}' is not a GPU index", item), "write indices as magpie --gpu-info lists them, e.g. [0, 2]");
      }
    };
    if (n.IsScalar()) {  // "0,2" as well as [0, 2]
      std::string text = n.Scalar(), item;
      for (char ch : text + ",") {
        if (ch == ',') {
          if (!item.empty()) add(item, key);
          item.clear();
        } else if (ch != ' ') {
          item.push_back(ch);
        }
      }
    } else if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) add(scalar(n[i], fmt::format("{}[{}]", key, i)), fmt::format("{}[{}]", key, i));
    } else if (!n.IsNull()) {
      fail(key, "expected a list of GPU indices", "e.g. candidates: [0, 1]");
    }
    return out;
  }

  gpu::GpuSelectionConfig gpu_selection(const YAML::Node& n) const {
    const std::string key = "gpu_selection";
    gpu::GpuSelectionConfig g;
    g.count = 1;  // one GPU per kernel run unless asked for more
    if (n.IsNull()) return g;
    if (!n.IsMap()) fail(key, "expected a map", "e.g. gpu_selection: {count: 1, min_free_memory_gb: 8}");
    warn_unknown(n, "gpu_selection.", {"auto", "min_free_memory_gb", "count", "candidates", "wait_sec"});
    if (n["auto"]) g.auto_select = boolean(n["auto"], key + ".auto");
    if (n["min_free_memory_gb"]) g.min_free_memory_gb = number<double>(n["min_free_memory_gb"], key + ".min_free_memory_gb");
    if (n["count"] && !n["count"].IsNull()) g.count = number<int64_t>(n["count"], key + ".count");
    if (n["candidates"]) g.candidates = int_list(n["candidates"], key + ".candidates");
    if (n["wait_sec"]) g.wait_s = number<double>(n["wait_sec"], key + ".wait_sec");
    if (*g.count < 1) fail(key + ".count", "must be at least 1", "e.g. count: 1");
    if (g.min_free_memory_gb < 0) fail(key + ".min_free_memory_gb", "must not be negative", "e.g. 8");
    if (g.wait_s < 0) fail(key + ".wait_sec", "must not be negative", "0 fails at once when other runs hold the GPUs");
    return g;
  }

  void gpu_monitor(const YAML::Node& n, gpu::GpuMonitorConfig& m) const {
    const std::string key = "gpu_monitor";
    if (n.IsNull()) return;
    if (!n.IsMap()) fail(key, "expected a map", "e.g. gpu_monitor: {enabled: true, interval_sec: 0.5}");
    warn_unknown(n, "gpu_monitor.", {"enabled", "interval_sec"});
    if (n["enabled"]) m.enabled = boolean(n["enabled"], key + ".enabled");
    if (n["interval_sec"]) m.interval_s = number<double>(n["interval_sec"], key + ".interval_sec");
    if (!(m.interval_s > 0)) fail(key + ".interval_sec", "must be above 0", "e.g. interval_sec: 0.5");
  }

  void latency(const YAML::Node& n, LatencySettings& l) const {
    const std::string key = "latency";
    if (!n.IsMap()) fail(key, "expected a map", "e.g. latency: {enabled: true}");
    warn_unknown(n, "latency.",
                 {"enabled", "method", "primary_metric", "rep_ms", "n_retries", "estimate_reps", "warmup_iters",
                  "seed", "kernel_filter", "bench_target", "pythonpath", "python", "timeout_seconds", "max_noise",
                  "min_samples", "min_time_s", "max_time_s", "l2_flush"});
    if (n["enabled"]) l.enabled = boolean(n["enabled"], key + ".enabled");
    if (n["method"]) {
      l.method = scalar(n["method"], key + ".method");
      static const std::set<std::string> methods{"auto", "cuda_graph", "kernel_trace", "rocprof_timestamps", "both", "none"};
      if (!methods.contains(l.method)) {
        fail(key + ".method", fmt::format("unknown method '{}'", l.method),
             "use auto, cuda_graph, kernel_trace, rocprof_timestamps, both or none");
      }
    }
    if (n["primary_metric"]) {
      l.primary_metric = scalar(n["primary_metric"], key + ".primary_metric");
      if (l.primary_metric != "wall_median_ms" && l.primary_metric != "kernel_median_ms") {
        fail(key + ".primary_metric", fmt::format("unknown metric '{}'", l.primary_metric),
             "use wall_median_ms or kernel_median_ms");
      }
    }
    if (n["rep_ms"]) l.rep_ms = number<double>(n["rep_ms"], key + ".rep_ms");
    if (n["n_retries"]) l.n_retries = number<int>(n["n_retries"], key + ".n_retries");
    if (n["estimate_reps"]) l.estimate_reps = number<int>(n["estimate_reps"], key + ".estimate_reps");
    if (n["warmup_iters"]) l.warmup_iters = number<int>(n["warmup_iters"], key + ".warmup_iters");
    if (n["seed"]) l.seed = number<uint64_t>(n["seed"], key + ".seed");
    if (n["kernel_filter"]) l.kernel_filter = scalar(n["kernel_filter"], key + ".kernel_filter");
    if (n["bench_target"]) l.bench_target = bench_target(n["bench_target"], key + ".bench_target");
    if (n["pythonpath"]) {
      for (const auto& p : strings(n["pythonpath"], key + ".pythonpath")) {
        fs::path pp = p;
        l.pythonpath.push_back((pp.is_absolute() ? pp : base_dir / pp).lexically_normal().string());
      }
    }
    if (n["python"]) {
      // A bare name is looked up on PATH; a path with a folder is the YAML's, like pythonpath.
      l.python = text(n["python"], key + ".python");
      fs::path py = l.python;
      if (l.python.find('/') != std::string::npos && !py.is_absolute()) l.python = (base_dir / py).lexically_normal().string();
    }
    if (n["timeout_seconds"]) l.timeout_seconds = number<int>(n["timeout_seconds"], key + ".timeout_seconds");
    if (n["max_noise"]) l.max_noise = number<double>(n["max_noise"], key + ".max_noise");
    if (n["min_samples"]) l.min_samples = number<int>(n["min_samples"], key + ".min_samples");
    if (n["min_time_s"]) l.min_time_s = number<double>(n["min_time_s"], key + ".min_time_s");
    if (n["max_time_s"]) l.max_time_s = number<double>(n["max_time_s"], key + ".max_time_s");
    if (n["l2_flush"]) l.l2_flush = boolean(n["l2_flush"], key + ".l2_flush");
  }
};

}  // namespace

KernelConfig parse_kernel_config(std::string_view yaml_text, const std::string& origin, const fs::path& base_dir,
                                 const VarLookup& lookup) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw Error(ErrorKind::kBadFormat,
                fmt::format("invalid YAML at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1, e.msg),
                origin, std::nullopt, "fix the YAML syntax (indentation, quotes, colons)");
  }
  if (!root.IsMap()) {
    throw Error(ErrorKind::kBadFormat, "expected a YAML map at the top level", origin, std::nullopt,
                "start with 'kernel:' or 'kernels:'");
  }
  KernelConfig cfg;
  cfg.origin = origin;
  Reader r{origin, base_dir, lookup, cfg.warnings, cfg.unknown_keys};
  r.warn_unknown(root, "", {"kernel", "kernels", "performance", "correctness", "latency", "scheduler", "ray_config",
                            "gpu_selection", "gpu_monitor"});
  if (auto k = root["kernel"]) cfg.kernels.push_back(r.kernel(k, "kernel"));
  if (auto ks = root["kernels"]) {
    if (!ks.IsSequence()) r.fail("kernels", "expected a list of kernel entries", "write kernels: [- id: a ...]");
    for (size_t i = 0; i < ks.size(); ++i) cfg.kernels.push_back(r.kernel(ks[i], fmt::format("kernels[{}]", i)));
  }
  if (cfg.kernels.empty()) {
    throw Error(ErrorKind::kUsage, "no kernels: the file has neither 'kernel:' nor 'kernels:'", origin, std::nullopt,
                "add 'kernel: {id: mine, type: cuda, testcase_command: ...}'");
  }
  if (auto p = root["performance"]) r.performance(p, cfg.performance);
  if (auto c = root["correctness"]) r.correctness(c, cfg.correctness);
  if (auto l = root["latency"]) r.latency(l, cfg.latency);
  if (auto g = root["gpu_selection"]) cfg.gpu_selection = r.gpu_selection(g);
  if (auto g = root["gpu_monitor"]) r.gpu_monitor(g, cfg.gpu_monitor);
  if (auto s = root["scheduler"]; s && s.IsMap() && s["environment"]) cfg.environment = r.scalar(s["environment"], "scheduler.environment");
  if (root["ray_config"]) cfg.environment = "ray";
  // ray: the CLI submits the run as a Ray job (src/jobs/ray_jobs.*); a node runs it with -e local.
  if (cfg.environment != "local" && cfg.environment != "ray") {
    cfg.warnings.push_back(fmt::format("{}: environment '{}' is not supported yet; running locally", origin, cfg.environment));
  }
  std::set<std::string> ids;
  for (const auto& k : cfg.kernels) {
    if (!ids.insert(k.id).second) {
      throw Error(ErrorKind::kUsage, fmt::format("duplicate kernel id '{}'", k.id), origin, std::nullopt,
                  "give each entry a distinct 'id'");
    }
  }
  return cfg;
}

KernelConfig load_kernel_config(const fs::path& path, const VarLookup& lookup) {
  auto buf = read_file(path);
  fs::path base = fs::absolute(path).parent_path();
  return parse_kernel_config(buf.view(), path.string(), base, lookup);
}

}  // namespace magpie::kernel
