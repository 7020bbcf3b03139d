#include "kernel/evaluator.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <tuple>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "kernel/failure_cause.hpp"
#include "kernel/process_runner.hpp"
#include "kernel/verdict.hpp"
#include "profiler/ncu_csv.hpp"

namespace magpie::kernel {

namespace fs = std::filesystem;

namespace {

// The kernels a harness says it timed: the Python harness lists them in
// crosscheck.kernels; a user harness names one in kernel_name (docs/MAGPIE_COMPATIBILITY.md §8).
// Names are not split on commas: template arguments contain them.
std::vector<std::string> timed_kernel_names(const LatencyReport& lat) {
  const auto& p = lat.payload;
  if (p.is_object() && p.contains("crosscheck") && p["crosscheck"].is_object()) {
    const auto& listed = p["crosscheck"].value("kernels", nlohmann::json::array());
    if (listed.is_array() && !listed.empty()) {
      std::vector<std::string> names;
      for (const auto& n : listed)
        if (n.is_string()) names.push_back(n.get<std::string>());
      return names;
    }
  }
  if (lat.kernel_name.empty()) return {};
  return {lat.kernel_name};
}

// The violated timing-integrity rules a harness reports, as
// {"integrity": {"violations": [{"rule", "detail"}]}} (ours does; a user's may).
std::vector<IntegrityViolation> integrity_violations(const nlohmann::json& p) {
  std::vector<IntegrityViolation> out;
  if (!p.is_object() || !p.contains("integrity") || !p["integrity"].is_object()) return out;
  const auto& v = p["integrity"].value("violations", nlohmann::json::array());
  if (!v.is_array()) return out;
  for (const auto& x : v) {
    if (!x.is_object()) continue;
    out.push_back({x.value("rule", std::string("unnamed")), x.value("detail", std::string())});
  }
  return out;
}

// Count and thread blocks of the kernels a harness timed (`names`, each a name
// or a prefix of the full signature; all when empty), never the harness's own
// L2-flush and spin kernels. They size CUPTI's two overheads.
std::pair<size_t, double> timed_kernel_shape(const std::vector<profiler::KernelRecord>& kernels,
                                             const std::vector<std::string>& names) {
  size_t count = 0;
  double blocks = 0;
  for (const auto& k : kernels) {
    if (k.name.find("spin_kernel") != std::string::npos || k.name.find("flush_l2_by_reading") != std::string::npos)
      continue;
    bool listed_here = names.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& n) {
                         return k.name.compare(0, n.size(), n) == 0;
                       });
    if (!listed_here) continue;
    ++count;
    blocks += static_cast<double>(std::max<int64_t>(k.grid[0], 1)) * std::max<int64_t>(k.grid[1], 1) *
              std::max<int64_t>(k.grid[2], 1);
  }
  return {count, blocks};
}

fs::path self_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path{} : p.parent_path();
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

std::chrono::milliseconds seconds(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }

// Sets a stage's one-line reason once: the first failure is the cause.
void set_cause(StageResult& stage, std::string cause, std::string fix = {}) {
  if (!stage.cause.empty() || cause.empty()) return;
  stage.cause = std::move(cause);
  stage.fix = std::move(fix);
}

// What a failed command was, for fix_for: the interpreter it ran, and whether
// it was the built-in harness.
FailureContext failure_context(const Command& argv, const char* stage) {
  FailureContext c;
  c.stage = stage;
  if (argv.empty()) return c;
  const std::string name = fs::path(argv[0]).filename().string();
  if (name.rfind("python", 0) == 0) {
    c.interpreter = argv[0];
    if (argv[0].find('/') == std::string::npos) c.interpreter_path = find_on_path(argv[0]);
  }
  for (size_t i = 1; i + 1 < argv.size(); ++i)
    if (argv[i] == "-m" && argv[i + 1] == "magpie_bench") c.harness = true;
  return c;
}

// Magpie's arch variables left as written after expansion in an option
// (`-arch=${MAGPIE_CUDA_ARCH}`): nvcc would get them literally ("Unsupported
// gpu architecture"). A shell script's `$MAGPIE_GPU_ARCH` is the shell's to test.
std::optional<std::string> unresolved_magpie_variable(const Command& argv) {
  for (const char* name : {"MAGPIE_CUDA_ARCH", "MAGPIE_GPU_ARCH"}) {
    for (const auto& a : argv) {
      if (a.empty() || a.front() != '-') continue;
      if (a.find(fmt::format("${{{}}}", name)) != std::string::npos ||
          a.find(fmt::format("${}", name)) != std::string::npos)
        return std::string(name);
    }
  }
  return std::nullopt;
}

// Runs the commands of one stage in order into `log`; false at the first failure,
// whose one-line cause and fix go to stage.cause / stage.fix.
bool run_all(const CommandList& cmds, const fs::path& cwd, const std::map<std::string, std::string>& env,
             double timeout_s, StageResult& stage, const std::atomic<bool>* cancel, const char* stage_name) {
  // Second expansion, at run time: $MAGPIE_KERNEL_DIR and friends exist only now.
  VarLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
    if (auto it = env.find(name); it != env.end()) return it->second;
    return environment_lookup()(name);
  };
  for (const auto& raw : cmds) {
    Command argv;
    for (const auto& a : raw) argv.push_back(expand_vars(a, lookup));
    if (cancel && cancel->load()) {
      stage.errors.push_back("cancelled before `" + join_command(argv) + "` started");
      set_cause(stage, "cancelled");
      return false;
    }
    if (auto name = unresolved_magpie_variable(argv)) {
      std::string cause = fmt::format("${{{}}} is not set: no GPU was found to take the architecture from", *name);
      std::string fix = fix_for(cause, failure_context(argv, stage_name));
      stage.commands.push_back(join_command(argv));
      stage.errors.push_back(fmt::format("`{}`: not run: {}; {}", join_command(argv), cause, fix));
      set_cause(stage, cause, fix);
      return false;
    }
    ProcessSpec spec{argv, cwd, env, seconds(timeout_s), stage.log, cancel};
    stage.commands.push_back(join_command(argv));
    std::error_code size_ec;
    const uintmax_t log_before = fs::exists(stage.log) ? fs::file_size(stage.log, size_ec) : 0;
    auto r = run_process(spec);
    stage.wall_seconds += r.wall_seconds;
    if (!r.ok()) {
      const bool not_found =
          r.spawn_failed && find_on_path(argv[0]).empty() && argv[0].find('/') == std::string::npos;
      std::string what = not_found ? fmt::format("{} not found on PATH", argv[0]) : r.describe();
      std::string tail = log_tail(stage.log, 1500);
      stage.errors.push_back(fmt::format("`{}`: {}; see {}\n{}", join_command(argv), what, stage.log.string(), tail));
      std::string cause = what;
      if (!(r.timed_out || r.cancelled || r.spawn_failed || r.term_signal != 0) && fs::exists(stage.log)) {
        // This command's output only, after its "$ command" line: the log holds the stage's earlier commands too.
        std::string output(read_file(stage.log).view());
        size_t from = static_cast<size_t>(size_ec ? 0 : log_before) + shell_join(argv).size() + 3;
        if (output.size() > 64 * 1024) from = std::max(from, output.size() - 64 * 1024);
        output.erase(0, std::min(from, output.size()));
        if (auto c = cause_from_output(output); !c.empty()) cause = c;
      }
      set_cause(stage, cause, fix_for(cause, failure_context(argv, stage_name)));
      return false;
    }
  }
  return true;
}

std::string target_spec(const BenchTarget& t) { return t.module + ":" + t.callable; }

std::string inputs_spec(const KernelSpec& k) {
  const auto& f = !k.get_inputs_func.empty() ? k.get_inputs_func : k.bench_target.get_inputs;
  return f.find(':') != std::string::npos ? f : k.bench_target.module + ":" + f;
}

}  // namespace

fs::path default_python_dir() {
  if (auto v = env_or("MAGPIE_PYTHON_DIR", ""); !v.empty()) return v;
  for (auto p : {self_dir() / "../share/magpie/python", self_dir() / "../../python"}) {
    if (fs::exists(p / "magpie_bench")) return fs::weakly_canonical(p);
  }
#ifdef MAGPIE_PYTHON_SOURCE_DIR
  return MAGPIE_PYTHON_SOURCE_DIR;
#else
  return {};
#endif
}

fs::path default_cupti_lib() {
  if (auto v = env_or("MAGPIE_CUPTI_LIB", ""); !v.empty()) return v;
  for (auto p : {self_dir() / "libmagpie_cupti.so", self_dir() / "../lib/libmagpie_cupti.so",
                 self_dir() / "../../src/profiler/libmagpie_cupti.so"}) {
    if (fs::exists(p)) return fs::weakly_canonical(p);
  }
#ifdef MAGPIE_CUPTI_LIB_PATH
  if (fs::exists(MAGPIE_CUPTI_LIB_PATH)) return MAGPIE_CUPTI_LIB_PATH;
#endif
  return {};
}

std::string oldest_sm_arch(std::string_view text) {
  int best = -1;
  size_t at = 0;
  while ((at = text.find("compute_", at)) != std::string_view::npos) {
    at += 8;
    int v = 0;
    size_t digits = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && digits < 4) {
      v = v * 10 + (text[at++] - '0');
      ++digits;
    }
    if (digits > 0 && (best < 0 || v < best)) best = v;
  }
  return best < 0 ? std::string() : fmt::format("sm_{}", best);
}

std::string default_cuda_arch() {
  static const std::string arch = [] {
    if (find_on_path("nvcc").empty()) return std::string();
    ProcessSpec spec{{"nvcc", "--list-gpu-arch"}, {}, {}, std::chrono::seconds(30), {}, nullptr};
    spec.capture_output = true;
    auto r = run_process(spec);
    return r.ok() ? oldest_sm_arch(r.output) : std::string();
  }();
  return arch;
}

std::string harness_python(const LatencySettings& latency) {
  if (auto v = env_or("MAGPIE_PYTHON", ""); !v.empty()) return v;
  return latency.python.empty() ? std::string("python3") : latency.python;
}

VarLookup magpie_lookup(const GpuInfo& gpu, const fs::path& workspace) {
  auto base = environment_lookup();
  return [base, gpu, workspace](const std::string& name) -> std::optional<std::string> {
    if (auto v = base(name)) return v;
    if (name == "MAGPIE_CUDA_ARCH" || name == "MAGPIE_GPU_ARCH") {
      if (!gpu.arch.empty()) return gpu.arch;
    }
    if (name == "MAGPIE_WORKSPACE" && !workspace.empty()) return workspace.string();
    return std::nullopt;
  };
}

Evaluator::Evaluator(EvaluatorOptions options) : opt_(std::move(options)) {}

Evaluator::~Evaluator() { release_workers(); }

void Evaluator::release_worker(const Evaluation& e) const {
  auto it = workers_.find(e.spec.id);
  if (it == workers_.end()) return;
  if (it->second.worker) {
    it->second.worker->ask_exit();
    retiring_.push_back(std::move(it->second.worker));
  }
  workers_.erase(it);
}

void Evaluator::release_workers() const {
  for (auto& [id, slot] : workers_)
    if (slot.worker) slot.worker->ask_exit();  // all wind down at once, then each is reaped
  workers_.clear();
  retiring_.clear();
}

int Evaluator::worker_starts(const Evaluation& e) const {
  auto it = workers_.find(e.spec.id);
  return it == workers_.end() || !it->second.worker ? 0 : it->second.worker->starts();
}

bool Evaluator::cupti_applies(const Evaluation& e) const {
  return opt_.check_performance && opt_.performance_unavailable.empty() && !opt_.cupti_lib.empty() &&
         e.spec.type != KernelType::kHip && e.spec.prof_command.empty();
}

std::string Evaluator::initial_kind() const {
  const auto& configured = opt_.performance.cupti_kind;
  return configured == "auto" ? "concurrent" : configured;  // auto: the first round runs with concurrent
}

Command Evaluator::worker_launch(Evaluation& e, const std::string& want, std::map<std::string, std::string>& env) const {
  // The CUPTI library is loaded at the process's start: another kind needs a new worker.
  env = env_for(e);
  const fs::path jsonl = e.dir / "kernels_worker.jsonl";
  fs::remove(jsonl);
  if (!want.empty()) {
    env["CUDA_INJECTION64_PATH"] = opt_.cupti_lib.string();
    env["MAGPIE_CUPTI_OUTPUT"] = jsonl.string();
    env["MAGPIE_CUPTI_KIND"] = want;
  }
  return harness_command(e, "worker", {});
}

void Evaluator::prestart_workers(std::vector<Evaluation>& evals, const std::string& cupti_kind) const {
  if (!opt_.harness_worker) return;
  for (auto& e : evals) {
    if (e.spec.bench_target.empty() || !is_python_type(e.spec.type) || !e.spec.compile_command.empty()) continue;
    if (!e.dir.empty() && !e.correct()) continue;  // checked and failed: never asked again
    if (e.dir.empty()) {
      e.dir = opt_.workspace / e.spec.id;  // as prepare() makes it
      fs::create_directories(e.dir);
    }
    const std::string want = cupti_applies(e) ? (cupti_kind.empty() ? initial_kind() : cupti_kind) : std::string();
    auto& slot = workers_[e.spec.id];
    if (slot.worker && slot.worker->alive() && slot.cupti_kind == want) continue;
    if (switch_cupti_kind(slot, want)) continue;
    if (!slot.worker) slot.worker = std::make_unique<HarnessWorker>();
    std::map<std::string, std::string> env;
    const Command argv = worker_launch(e, want, env);
    slot.command = join_command(argv) + "  # harness worker" + (want.empty() ? "" : ", CUPTI " + want);
    slot.worker->launch(argv, e.spec.working_dir, env, e.dir / "harness_worker.log", e.dir);
    slot.cupti_kind = want;  // a failed launch is not alive: worker_for starts it again and says why
  }
}

HarnessWorker* Evaluator::worker_for(Evaluation& e, const std::string& cupti_kind, StageResult& st) const {
  auto& slot = workers_[e.spec.id];
  const std::string want = cupti_applies(e) ? cupti_kind : std::string();
  // Starting (imports, context, compilation) was part of every run before: the longer timeout bounds it.
  const double start_s = std::max<double>(opt_.correctness.timeout_seconds, opt_.performance.timeout_seconds);
  const fs::path log = e.dir / "harness_worker.log";
  WorkerReply r;
  Command argv;
  if (switch_cupti_kind(slot, want)) return slot.worker.get();
  if (slot.worker && slot.worker->alive() && slot.cupti_kind == want) {
    if (!slot.worker->launched()) return slot.worker.get();
    st.commands.push_back(slot.command);  // launched by prestart_workers: wait for it here
    r = slot.worker->await_ready(seconds(start_s), opt_.cancel);
    argv = {opt_.python, "-m", "magpie_bench"};
  } else {
    if (!slot.worker) slot.worker = std::make_unique<HarnessWorker>();
    std::map<std::string, std::string> env;
    argv = worker_launch(e, want, env);
    st.commands.push_back(join_command(argv) + "  # harness worker" + (want.empty() ? "" : ", CUPTI " + want));
    r = slot.worker->start(argv, e.spec.working_dir, env, log, e.dir, seconds(start_s), opt_.cancel);
  }
  st.wall_seconds += r.wall_seconds;
  if (!r.ok) {
    std::string cause = r.failure;
    if (!r.timed_out && !r.cancelled && r.failure.find("ended (") != std::string::npos)
      if (auto c = cause_from_output(log_tail(log, 64 * 1024)); !c.empty()) cause = c;
    st.errors.push_back(fmt::format("harness worker did not start: {}; see {}\n{}", r.failure, log.string(),
                                    log_tail(log, 1500)));
    set_cause(st, cause, fix_for(cause, failure_context(argv, "correctness")));
    workers_.erase(e.spec.id);
    return nullptr;
  }
  slot.cupti_kind = want;
  return slot.worker.get();
}

bool Evaluator::switch_cupti_kind(WorkerSlot& slot, const std::string& want) const {
  // Only a started, idle worker already under CUPTI, asked for the other kind.
  if (!slot.worker || !slot.worker->alive() || slot.worker->launched() || slot.cupti_kind.empty() || want.empty() ||
      slot.cupti_kind == want)
    return false;
  auto r = slot.worker->request({{"op", "cupti_kind"}, {"kind", want}}, std::chrono::seconds(30), opt_.cancel);
  if (!r.ok || !r.answer.value("ok", false)) return false;  // the caller restarts it under `want`
  slot.cupti_kind = want;
  slot.command += ", switched to CUPTI " + want;
  return true;
}

bool Evaluator::ask_worker(Evaluation& e, const nlohmann::json& req, const std::string& cupti_kind,
                           double timeout_s, StageResult& st, const char* stage_name, nlohmann::json& answer) const {
  HarnessWorker* w = worker_for(e, cupti_kind, st);
  if (w == nullptr) return false;
  const fs::path log = w->log();
  std::error_code ec;
  const uintmax_t log_before = fs::exists(log) ? fs::file_size(log, ec) : 0;
  const std::string what = fmt::format("harness worker request {}", req.dump());
  st.commands.push_back(what);
  auto r = w->request(req, seconds(timeout_s), opt_.cancel);
  st.wall_seconds += r.wall_seconds;
  if (!r.ok) {
    // Dead, hung or cancelled: this implementation's worker only. The next request starts a new one.
    std::string cause = r.failure;
    if (!r.timed_out && !r.cancelled) {
      std::string output(read_file(log).view());
      output.erase(0, std::min(static_cast<size_t>(ec ? 0 : log_before), output.size()));
      if (auto c = cause_from_output(output); !c.empty()) cause = c + " (" + r.failure + ")";
    }
    st.errors.push_back(fmt::format("`{}`: {}; see {}\n{}", what, r.failure, log.string(), log_tail(log, 1500)));
    set_cause(st, cause, fix_for(cause, failure_context({opt_.python, "-m", "magpie_bench"}, stage_name)));
    workers_.erase(e.spec.id);
    return false;
  }
  if (!r.answer.value("ok", false)) {
    // The user's code raised inside the worker; the worker itself is fine.
    std::string err = r.answer.value("error", std::string("the request failed"));
    st.errors.push_back(fmt::format("`{}`: {}; see {}", what, err, log.string()));
    set_cause(st, err, fix_for(err, failure_context({opt_.python, "-m", "magpie_bench"}, stage_name)));
    return false;
  }
  answer = std::move(r.answer);
  return true;
}

std::map<std::string, std::string> Evaluator::env_for(const Evaluation& e) const {
  std::map<std::string, std::string> env = e.spec.env;
  for (const auto& [name, value] : opt_.gpu_env) env[name] = value;  // the locked GPUs, whatever the kernel says
  if (!opt_.gpu.arch.empty()) {
    env.emplace("MAGPIE_CUDA_ARCH", opt_.gpu.arch);
    env.emplace("MAGPIE_GPU_ARCH", opt_.gpu.arch);
  } else if (e.spec.type == KernelType::kCuda && std::getenv("MAGPIE_CUDA_ARCH") == nullptr) {
    // No GPU to take it from: nvcc's own default target, so a build still links (compile() notes it).
    if (auto arch = default_cuda_arch(); !arch.empty()) env.emplace("MAGPIE_CUDA_ARCH", arch);
  }
  env["MAGPIE_KERNEL_DIR"] = e.dir.string();
  env["MAGPIE_KERNEL_ID"] = e.spec.id;
  if (e.spec.type == KernelType::kCuda && !e.spec.source_files.empty() && e.spec.compile_command.empty()) {
    env["MAGPIE_BINARY"] = (e.dir / e.spec.source_files.front().stem()).string();
  }
  std::string pp;
  auto add = [&pp](const std::string& p) {
    if (!p.empty()) pp += (pp.empty() ? "" : ":") + p;
  };
  add(opt_.python_dir.string());
  add(e.spec.working_dir.string());
  if (opt_.baseline != nullptr) add(opt_.baseline->working_dir.string());
  for (const auto& p : opt_.latency.pythonpath) add(p);
  add(env_or("PYTHONPATH", ""));
  env["PYTHONPATH"] = pp;
  env["PYTHONUNBUFFERED"] = "1";
  // Magpie's latency contract: how long one timed repetition should run
  // (latency.rep_ms / --latency-rep-ms), for a harness that sizes its timing loop.
  env["MAGPIE_LATENCY_REP_MS"] = fmt::format("{:g}", opt_.latency.rep_ms);
  return env;
}

void Evaluator::prepare(Evaluation& e) const {
  e.dir = opt_.workspace / e.spec.id;
  fs::create_directories(e.dir);
  e.compiling.log = e.dir / "compile.log";
  e.correctness.log = e.dir / "correctness.log";
  e.performance.log = e.dir / "performance.log";
  compile(e);
  if (e.compiling.state != StageState::kSuccess) {
    e.correctness.errors.push_back("skipped: compilation failed");
    e.performance.errors.push_back("skipped: compilation failed");
    return;
  }
  check_correctness(e);
  if (!e.correct()) e.performance.errors.push_back("skipped: correctness did not succeed");
  // A worker that will not be asked again gives its GPU memory back now.
  if (!e.correct() || !opt_.check_performance || !opt_.performance_unavailable.empty()) release_worker(e);
}

void Evaluator::compile(Evaluation& e) const {
  auto& st = e.compiling;
  auto env = env_for(e);
  CommandList cmds = e.spec.compile_command;
  if (cmds.empty() && !is_python_type(e.spec.type) && !e.spec.source_files.empty()) {
    Command argv;
    fs::path out = e.dir / e.spec.source_files.front().stem();
    if (e.spec.type == KernelType::kCuda) {
      argv = {"nvcc", "-O3", "-lineinfo"};
      if (opt_.gpu.arch.rfind("sm_", 0) == 0) argv.push_back("-arch=" + opt_.gpu.arch);
      else st.notes.push_back("no NVIDIA GPU detected and MAGPIE_GPU_ARCH unset: nvcc's default target used");
    } else {
      if (find_on_path("hipcc").empty()) {
        st.state = StageState::kFailed;
        st.errors.push_back("hipcc not found on PATH: install ROCm (hipcc) or pass --compile-cmd / compile_command");
        set_cause(st, "hipcc not found on PATH", "install ROCm (hipcc) or pass --compile-cmd / compile_command");
        e.errors.insert(e.errors.end(), st.errors.begin(), st.errors.end());
        return;
      }
      argv = {"hipcc", "-O3"};
      if (opt_.gpu.arch.rfind("gfx", 0) == 0) argv.push_back("--offload-arch=" + opt_.gpu.arch);
    }
    argv.insert(argv.end(), {"-o", out.string()});
    for (const auto& s : e.spec.source_files) argv.push_back(s.string());
    cmds.push_back(std::move(argv));
  }
  if (opt_.gpu.arch.empty()) {
    if (auto it = env.find("MAGPIE_CUDA_ARCH"); it != env.end() && std::getenv("MAGPIE_CUDA_ARCH") == nullptr) {
      for (const auto& c : cmds) {
        auto names_it = [](const std::string& a) { return a.find("MAGPIE_CUDA_ARCH") != std::string::npos; };
        if (std::none_of(c.begin(), c.end(), names_it)) continue;
        st.notes.push_back(fmt::format(
            "no GPU found: ${{MAGPIE_CUDA_ARCH}} = {}, the oldest target this nvcc builds (its default; newer GPUs run "
            "it through PTX); set MAGPIE_GPU_ARCH=sm_XX to build for a given GPU",
            it->second));
        break;
      }
    }
  }
  if (cmds.empty()) {
    st.state = StageState::kSuccess;
    st.notes.push_back(is_python_type(e.spec.type) ? "no build step: Python implementation"
                                                   : "no build step: no compile_command and no source_files");
    return;
  }
  bool ok = run_all(cmds, e.spec.working_dir, env, opt_.performance.timeout_seconds, st, opt_.cancel, "compile");
  st.state = ok ? StageState::kSuccess : StageState::kFailed;
  e.errors.insert(e.errors.end(), st.errors.begin(), st.errors.end());
}

Command Evaluator::harness_command(const Evaluation& e, const std::string& mode, const fs::path& json_out) const {
  const auto& c = opt_.correctness;
  const auto& l = opt_.latency;
  Command argv{opt_.python, "-m", "magpie_bench", mode, "--target", target_spec(e.spec.bench_target),
               "--target-dir", e.spec.working_dir.string(), "--inputs", inputs_spec(e.spec), "--seed",
               std::to_string(l.seed)};
  if (!json_out.empty()) argv.insert(argv.end(), {"--json", json_out.string()});
  if (!e.spec.get_init_inputs_func.empty()) argv.insert(argv.end(), {"--init-inputs", e.spec.get_init_inputs_func});
  // Both modes compare against the baseline: check on fresh seeds, time in its
  // integrity spot checks (outputs of timed calls on refilled inputs).
  if (opt_.baseline != nullptr && opt_.baseline->id != e.spec.id && !opt_.baseline->bench_target.empty()) {
    argv.insert(argv.end(), {"--baseline", target_spec(opt_.baseline->bench_target), "--baseline-dir",
                             opt_.baseline->working_dir.string()});
  }
  if (c.tolerances_set) {
    argv.insert(argv.end(), {"--atol", fmt::format("{}", c.atol), "--rtol", fmt::format("{}", c.rtol)});
  }
  // A worker serves both: it gets both sets of settings.
  if (mode == "check" || mode == "worker") {
    argv.insert(argv.end(), {"--seeds", std::to_string(c.seeds)});
    if (c.equal_nan) argv.emplace_back("--equal-nan");
  }
  if (mode != "check") {
    argv.insert(argv.end(), {"--max-noise", fmt::format("{}", l.max_noise), "--min-samples",
                             std::to_string(l.min_samples), "--min-time", fmt::format("{}", l.min_time_s),
                             "--max-time", fmt::format("{}", l.max_time_s), "--warmup",
                             std::to_string(l.warmup_iters)});
    if (!l.l2_flush) argv.emplace_back("--no-l2-flush");
  }
  return argv;
}

void Evaluator::check_correctness(Evaluation& e) const {
  auto& st = e.correctness;
  auto env = env_for(e);
  bool has_target = !e.spec.bench_target.empty() && is_python_type(e.spec.type);
  bool ok = true;
  std::vector<std::string> scope;
  if (has_target) {
    fs::path json_out = e.dir / "correctness.json";
    if (opt_.harness_worker) {
      fs::remove(json_out);
      if (e.spec.testcase_command.empty()) st.log = e.dir / "harness_worker.log";  // where its output goes
      nlohmann::json seeds = nlohmann::json::array(), answer;
      for (int i = 0; i < opt_.correctness.seeds; ++i) seeds.push_back(opt_.latency.seed + static_cast<uint64_t>(i));
      ok = ask_worker(e, {{"op", "check"}, {"json", json_out.string()}, {"seeds", seeds}}, initial_kind(),
                      opt_.correctness.timeout_seconds, st, "correctness", answer);
    } else {
      ok = run_all({harness_command(e, "check", json_out)}, e.spec.working_dir, env,
                   opt_.correctness.timeout_seconds, st, opt_.cancel, "correctness");
    }
    try {
      e.correctness_detail = nlohmann::json::parse(read_file(json_out).view());
      const size_t first_json_error = st.errors.size();
      for (const auto& err : e.correctness_detail.value("errors", std::vector<std::string>{})) st.errors.push_back(err);
      scope.push_back(e.correctness_detail.value("scope", "numerical check"));
      if (e.correctness_detail.value("finiteness_only", false)) {
        bool is_baseline = opt_.baseline != nullptr && opt_.baseline->id == e.spec.id;
        st.notes.push_back(is_baseline ? "this is the baseline the others are checked against; itself checked only "
                                         "for finiteness (no NaN/Inf) and input immutability"
                                       : "no baseline: only finiteness (no NaN/Inf) and input immutability were checked");
      }
      if (!e.correctness_detail.value("success", false) && st.errors.size() > first_json_error)
        set_cause(st, st.errors[first_json_error]);
      ok = ok && e.correctness_detail.value("success", false);
    } catch (const std::exception& ex) {
      if (ok) {
        st.errors.push_back(fmt::format("harness wrote no readable {}: {}", json_out.string(), ex.what()));
        set_cause(st, st.errors.back());
      }
      ok = false;
    }
  }
  if (ok && !e.spec.testcase_command.empty()) {
    ok = run_all(e.spec.testcase_command, e.spec.working_dir, env, opt_.correctness.timeout_seconds, st, opt_.cancel,
                 "correctness");
    scope.push_back("testcase exit status");
  }
  if (!has_target && e.spec.testcase_command.empty()) {
    st.state = StageState::kSkipped;
    st.errors.push_back("nothing to check: give a testcase_command (--testcase) or a bench_target");
    e.errors.insert(e.errors.end(), st.errors.begin(), st.errors.end());
    return;
  }
  for (size_t i = 0; i < scope.size(); ++i) e.correctness_scope += (i ? " + " : "") + scope[i];
  st.state = ok ? StageState::kSuccess : StageState::kFailed;
  e.errors.insert(e.errors.end(), st.errors.begin(), st.errors.end());
}

std::string Evaluator::why_no_cupti(const Evaluation& e) const {
  if (!opt_.check_performance) return "performance not measured (--no-perf)";
  if (!opt_.performance_unavailable.empty()) return "performance not measured: " + opt_.performance_unavailable;
  if (!e.correct()) return "not measured: correctness did not succeed";
  if (opt_.cupti_lib.empty()) return "no CUPTI library (no NVIDIA GPU, or libmagpie_cupti.so not found)";
  if (e.spec.type == KernelType::kHip) return "HIP kernel: CUPTI does not apply";
  if (!e.spec.prof_command.empty()) return "prof_command replaces the profiled run";
  return "";
}

void Evaluator::measure_round(Evaluation& e, int round, const std::string& cupti_kind) const {
  std::string kind = cupti_kind.empty() ? opt_.performance.cupti_kind : cupti_kind;
  run_round(e, round, false, kind == "auto" ? "concurrent" : kind);
}

bool Evaluator::measure_probe(Evaluation& e) const { return run_round(e, -1, true, "concurrent"); }

bool Evaluator::run_round(Evaluation& e, int round, bool probe, const std::string& cupti_kind) const {
  if (!e.correct() || !opt_.check_performance || !opt_.performance_unavailable.empty()) return false;
  auto& st = e.performance;
  auto env = env_for(e);
  RoundMeasurement m;
  m.round = round;
  m.probe = probe;
  // The probe's files must not collide with round 0's.
  const std::string label = probe ? "probe" : fmt::format("r{}", round);
  const std::string what = probe ? "probe round" : fmt::format("round {}", round);
  bool has_target = !e.spec.bench_target.empty() && is_python_type(e.spec.type);
  CommandList cmds;
  if (!e.spec.prof_command.empty()) {
    cmds = e.spec.prof_command;  // the user's profiler replaces ours
  } else if (has_target) {
    cmds.push_back(harness_command(e, "time", e.dir / fmt::format("timing_{}.json", label)));
  } else {
    cmds = e.spec.testcase_command;
  }
  if (cmds.empty()) {
    if (round == 0) st.errors.push_back("nothing to time: give a testcase_command, prof_command or bench_target");
    return false;
  }
  if (why_no_cupti(e).empty()) {
    m.cupti_jsonl = e.dir / fmt::format("kernels_{}.jsonl", label);
    m.cupti_kind = cupti_kind;
    fs::remove(m.cupti_jsonl);
    env["CUDA_INJECTION64_PATH"] = opt_.cupti_lib.string();
    env["MAGPIE_CUPTI_OUTPUT"] = m.cupti_jsonl.string();
    env["MAGPIE_CUPTI_KIND"] = cupti_kind;
  }
  StageResult round_stage;
  round_stage.log = e.dir / fmt::format("performance_{}.log", label);
  fs::remove(round_stage.log);
  bool ok = false;
  if (opt_.harness_worker && has_target && e.spec.prof_command.empty()) {
    // The same seed's inputs every round (as a new process had), a new spot-check
    // seed per round: a cache one round filled never matches the next one's checks.
    nlohmann::json answer;
    const nlohmann::json req{{"op", "time"},
                             {"seed", opt_.latency.seed},
                             {"spot_seed", opt_.latency.seed + 7919 * static_cast<uint64_t>(round + 2)},
                             {"cupti_output", m.cupti_jsonl.string()}};
    ok = ask_worker(e, req, m.cupti_kind, opt_.performance.timeout_seconds, round_stage, "performance", answer);
    if (ok) {
      write_file_atomic(round_stage.log, fmt::format("$ harness worker request: {}\n{} {}\n", req.dump(),
                                                     kLatencyPrefix, answer.value("latency", nlohmann::json{}).dump()));
    }
  } else {
    ok = run_all(cmds, e.spec.working_dir, env, opt_.performance.timeout_seconds, round_stage, opt_.cancel,
                 "performance");
  }
  st.commands.insert(st.commands.end(), round_stage.commands.begin(), round_stage.commands.end());
  st.wall_seconds += round_stage.wall_seconds;
  m.wall_seconds = round_stage.wall_seconds;
  if (!ok) {
    for (auto& err : round_stage.errors) st.errors.push_back(fmt::format("{}: {}", what, err));
    set_cause(st, round_stage.cause, round_stage.fix);
    e.rounds.push_back(std::move(m));
    return false;
  }
  std::string output(read_file(round_stage.log).view());
  std::vector<std::string> timed_names;  // what the harness says it timed, if it says
  if (opt_.check_latency) {
    if (auto lat = parse_latency_output(output)) {
      timed_names = timed_kernel_names(*lat);
      if (!probe) e.latency_report = *lat;  // the report is the last measured round's
      m.integrity_violations = integrity_violations(lat->payload);
      if (lat->success) {
        m.source = "latency_json" + (lat->mode.empty() ? std::string() : ":" + lat->mode);
        for (double ms : lat->samples_ms) m.samples_ns.push_back(ms * 1e6);
      } else {
        // The harness spoke but its line failed: never substitute the process's
        // busy time or wall clock for the samples it meant to give.
        st.errors.push_back(fmt::format("{}: {} line unusable: {}", what, kLatencyPrefix, lat->error));
        set_cause(st, lat->error, fix_for(lat->error, {"performance", {}, {}, has_target}));
        e.rounds.push_back(std::move(m));
        return false;
      }
    }
  }
  if (!m.cupti_jsonl.empty()) {
    auto trace = profiler::read_cupti_jsonl(m.cupti_jsonl);
    // All kernels, not only kernel_filter's: concurrency anywhere is what serializing would change.
    m.cross_stream_overlap_ns = profiler::cross_stream_overlap_ns(trace.kernels);
    auto kept = profiler::filter_by_name(trace.kernels, opt_.latency.kernel_filter);
    std::tie(m.timed_kernels, m.timed_blocks) = timed_kernel_shape(kept, timed_names);
    m.cupti_kernels = kept.size();
    m.cupti_busy_ns = profiler::busy_union_ns(kept);
    if (!probe) e.kernels.insert(e.kernels.end(), kept.begin(), kept.end());
    if (m.samples_ns.empty() && m.cupti_busy_ns > 0) {
      m.source = "cupti_busy_union";
      m.samples_ns.push_back(static_cast<double>(m.cupti_busy_ns));
    }
  }
  if (m.samples_ns.empty()) {
    m.source = "process_wall";
    m.samples_ns.push_back(m.wall_seconds * 1e9);
  }
  e.rounds.push_back(std::move(m));
  return true;
}

void Evaluator::ncu_pass(Evaluation& e) const {
  if (!opt_.performance.ncu_pass || e.spec.testcase_command.empty()) return;
  if (find_on_path("ncu").empty()) {
    e.performance.notes.push_back("ncu pass requested but ncu is not on PATH");
    return;
  }
  StageResult st;
  st.log = e.dir / "ncu.log";
  fs::remove(st.log);
  auto cmd = profiler::ncu_command(e.spec.testcase_command.back(), opt_.performance.ncu_metrics,
                                   opt_.performance.ncu_args);
  if (!run_all({cmd}, e.spec.working_dir, env_for(e), opt_.performance.timeout_seconds * 4.0, st, opt_.cancel, "ncu")) {
    e.performance.notes.push_back("ncu pass failed: " + (st.errors.empty() ? std::string() : st.errors.front()));
    return;
  }
  auto kernels = profiler::parse_ncu_csv(read_file(st.log).view(), st.log.string());
  auto totals = profiler::ncu_totals(kernels);
  auto& s = e.ncu_summary;
  s["ncu_kernels"] = {{"value", totals.kernels}, {"unit", "count"}};
  s["gpu_time_duration_sum"] = {{"value", totals.time_ns}, {"unit", "ns"}};
  s["dram_bytes"] = {{"value", totals.dram_bytes}, {"unit", "bytes"}};
  s["flops"] = {{"value", totals.flops}, {"unit", "flop"}};
  if (totals.time_ns > 0) {
    double tbps = totals.dram_bytes / totals.time_ns / 1e3;
    double tflops = totals.flops / totals.time_ns / 1e3;
    s["achieved_tbps"] = {{"value", tbps}, {"unit", "TB/s"}};
    s["achieved_tflops"] = {{"value", tflops}, {"unit", "TFLOP/s"}};
    if (opt_.gpu.peak_tbps > 0) {
      s["achieved_tbps"]["peak"] = opt_.gpu.peak_tbps;
      s["achieved_tbps"]["pct_of_peak"] = 100 * tbps / opt_.gpu.peak_tbps;
    }
  }
  nlohmann::json per_kernel = nlohmann::json::array();
  for (const auto& k : kernels) per_kernel.push_back({{"kernel_name", k.kernel_name}, {"metrics", k.metrics}});
  write_file_atomic(e.dir / "ncu_kernels.json", per_kernel.dump(2));
}

namespace {

// Timing integrity: work that is skipped or served from a cache shows as timed
// windows without GPU work. Such an implementation is rejected, never ranked
// with a number. Returns the rule that fired, or nothing.
std::optional<std::string> no_gpu_work(const Evaluation& e) {
  size_t windows = 0, empty_windows = 0, rounds = 0, rounds_without_kernels = 0;
  for (const auto& m : e.rounds) {
    if (m.probe) continue;
    ++rounds;
    if (m.source.rfind("latency_json", 0) == 0) {
      windows += m.samples_ns.size();
      for (double ns : m.samples_ns) empty_windows += ns <= 0;
    }
    // With the CUPTI library loaded, every kernel on every stream is seen.
    if (!m.cupti_jsonl.empty() && m.cupti_kernels == 0) ++rounds_without_kernels;
  }
  if (empty_windows > 0) {
    return fmt::format(
        "no GPU work measured in {} of {} timed windows (0 ns): cached or skipped computation? "
        "Not ranked (rule: empty timed window)",
        empty_windows, windows);
  }
  // The harness's spot checks (python/magpie_bench/integrity.py), any round.
  for (const auto& m : e.rounds) {
    if (m.probe || m.integrity_violations.empty()) continue;
    const auto& v = m.integrity_violations.front();
    return fmt::format("timing integrity, round {}: {}. Not ranked (rule: {})", m.round, v.detail, v.rule);
  }
  if (rounds > 0 && rounds_without_kernels == rounds) {
    return fmt::format(
        "no GPU work measured: CUPTI saw no kernel in any of the {} performance run(s), although the "
        "library was loaded; cached or skipped computation, or work on the CPU? Not ranked (rule: no "
        "kernels in the timed runs)",
        rounds);
  }
  return std::nullopt;
}

}  // namespace

void Evaluator::finish(Evaluation& e) const {
  auto& st = e.performance;
  if (!opt_.check_performance) {
    st.state = StageState::kSkipped;
    if (e.correct()) st.notes.push_back("performance not measured (--no-perf)");
  } else if (!opt_.performance_unavailable.empty()) {
    st.state = StageState::kSkipped;
    if (e.correct()) {
      st.cause = "not measured: " + opt_.performance_unavailable;
      st.fix = "run on a machine with a GPU, or pass --no-perf to check correctness only";
      st.notes.push_back("performance " + st.cause);
    }
  } else if (e.correct()) {
    auto samples = e.samples_ns();
    st.state = samples.empty() ? StageState::kFailed : StageState::kSuccess;
    if (samples.empty() && st.errors.empty()) st.errors.push_back("no timing samples");
    double peak_bw = opt_.performance.peak_tbps > 0 ? opt_.performance.peak_tbps : opt_.gpu.peak_tbps;
    double peak_fl = opt_.performance.peak_tflops > 0 ? opt_.performance.peak_tflops : opt_.gpu.peak_tflops;
    double floor = 0;
    if (e.spec.min_bytes > 0 && peak_bw > 0) floor = std::max(floor, e.spec.min_bytes / (peak_bw * 1e3));
    if (e.spec.min_flops > 0 && peak_fl > 0) floor = std::max(floor, e.spec.min_flops / (peak_fl * 1e3));
    e.floor_ns = floor;
    if (auto why = no_gpu_work(e)) {
      st.state = StageState::kFailed;
      st.errors.push_back(*why);
      st.cause = *why;  // a rejection outweighs a failed round
      st.fix.clear();
    } else if (!samples.empty() && floor > 0 && median_of(samples) < floor * opt_.performance.floor_tolerance) {
      st.state = StageState::kFailed;
      st.errors.push_back(fmt::format(
          "median {:.3f} us is below the roofline floor {:.3f} us ({} bytes at {} TB/s, {} FLOP at {} TFLOP/s): "
          "physically impossible, so the timing misses work (another stream? cached result?)",
          median_of(samples) / 1e3, floor / 1e3, e.spec.min_bytes, peak_bw, e.spec.min_flops, peak_fl));
      st.cause = st.errors.back();
      st.fix.clear();
    }
    if (st.state == StageState::kFailed && !st.errors.empty()) set_cause(st, st.errors.back());
    if (st.state == StageState::kSuccess) ncu_pass(e);
    e.errors.insert(e.errors.end(), st.errors.begin(), st.errors.end());
  } else {
    st.state = StageState::kSkipped;
  }
  auto& lat = e.latency;
  if (!opt_.check_latency || !e.latency_report) {
    lat.state = StageState::kSkipped;
  } else {
    lat.state = e.latency_report->success ? StageState::kSuccess : StageState::kFailed;
    if (!e.latency_report->success) lat.errors.push_back(e.latency_report->error);
  }
  std::ofstream(e.performance.log) << fmt::format("rounds: {}\n", e.rounds.size());
}

}  // namespace magpie::kernel
