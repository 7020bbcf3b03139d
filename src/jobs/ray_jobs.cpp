#include "jobs/ray_jobs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/child_process.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "kernel/process_runner.hpp"
#include "store/results_store.hpp"
#include "store/run_environment.hpp"
#include "store/workspace_import.hpp"

namespace magpie::jobs {

namespace fs = std::filesystem;
using nlohmann::json;
using ray::JobStatus;

namespace {

constexpr size_t kTailLines = 20;

std::string read_text_file(const fs::path& path) { return std::string(read_file(path).view()); }

void write_text_file(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  write_file_atomic(path, text);
}

std::string join(const std::vector<std::string>& args) { return shell_join(args); }

fs::path self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("magpie") : p;
}

std::string make_submission_id(const std::string& label) {
  std::string clean;
  for (char c : label) clean += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '-';
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::random_device rd;
  return fmt::format("magpie-{}-{:04}{:02}{:02}-{:02}{:02}{:02}-{:06x}", clean.substr(0, 40),
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     rd() & 0xffffff);
}

bool is_output_flag(const std::string& a) { return a == "-o" || a == "--output-dir"; }

// Removes -o/--output-dir from `args`; returns its value ("./results" when absent).
std::string take_output_dir(std::vector<std::string>& args) {
  std::string out = "./results";
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_output_flag(a) && i + 1 < args.size()) {
      out = args[++i];
    } else if (a.rfind("--output-dir=", 0) == 0) {
      out = a.substr(13);
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2 && a[2] != '-') {
      out = a.substr(2);
    } else {
      kept.push_back(a);
    }
  }
  args = std::move(kept);
  return out;
}

// The job runs in another working directory: arguments naming existing
// files or folders here are made absolute (the node sees them through shared
// storage or, on a loopback cluster, as they are).
std::vector<std::string> absolute_paths(const std::vector<std::string>& args,
                                        const fs::path& base) {
  std::vector<std::string> out;
  auto fix = [&](const std::string& v) {
    if (v.empty() || v[0] == '/' || v[0] == '-') return v;
    std::error_code ec;
    fs::path p = base / v;
    if (fs::exists(p, ec)) return fs::absolute(p).lexically_normal().string();
    return v;
  };
  for (const auto& a : args) {
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      auto eq = a.find('=');
      out.push_back(a.substr(0, eq + 1) + fix(a.substr(eq + 1)));
    } else {
      out.push_back(fix(a));
    }
  }
  return out;
}

std::optional<std::string> value_of(const std::vector<std::string>& args,
                                    std::initializer_list<const char*> names) {
  for (size_t i = 0; i < args.size(); ++i)
    for (const char* n : names) {
      if (args[i] == n && i + 1 < args.size()) return args[i + 1];
      std::string eq = std::string(n) + "=";
      if (args[i].rfind(eq, 0) == 0) return args[i].substr(eq.size());
    }
  return std::nullopt;
}

YAML::Node load_yaml(const fs::path& path, std::string& text) {
  text = read_text_file(path);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("invalid YAML: {}", e.what()), path.string());
  }
}

std::string scalar_or(const YAML::Node& n, const std::string& fallback) {
  return n && n.IsScalar() ? n.Scalar() : fallback;
}

ray::JobsClient client_for(const ray::RayConfig& cluster) {
  ray::ClientOptions o;
  o.headers = cluster.headers;
  o.connect_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(cluster.connect_timeout_s * 1000));
  return ray::JobsClient(ray::resolve_cluster_address(cluster.cluster_address), o);
}

fs::path job_folder(const ray::RayConfig& cluster, const std::string& id) {
  return fs::path(cluster.shared_storage_path) / "magpie-ray" / id;
}

void check_shared_storage(const ray::RayConfig& cluster) {
  if (cluster.shared_storage_path.empty()) return;
  fs::path root = cluster.shared_storage_path;
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw Error(
        ErrorKind::kNotFound, "shared storage is missing here", root.string(), std::nullopt,
        "mount it (at the same path as on the Ray nodes) or fix ray_config.shared_storage_path");
  fs::path probe = root / fmt::format(".magpie-write-probe-{}", ::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::kUnreadable,
                fmt::format("shared storage is not writable here ({})", std::strerror(errno)),
                root.string(), std::nullopt,
                "jobs write their results there: mount it read-write or pick another "
                "ray_config.shared_storage_path");
  ::close(fd);
  fs::remove(probe, ec);
}

// Files under `dir` (relative), newest runs included, sorted.
std::vector<std::string> list_files(const fs::path& dir,
                                    std::optional<fs::file_time_type> since = std::nullopt) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec)) continue;
    if (since && it->last_write_time(ec) < *since) continue;
    out.push_back(fs::relative(it->path(), dir, ec).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void fill_from_info(RayJobOutcome& out, const ray::JobInfo& info) {
  out.status = info.status;
  out.message = info.message;
  out.exit_code = info.driver_exit_code;
  out.metadata = info.metadata;
  if (info.start_time_ms && info.end_time_ms)
    out.wall_seconds = static_cast<double>(*info.end_time_ms - *info.start_time_ms) / 1000.0;
  if (auto it = info.metadata.find("magpie_output_dir"); it != info.metadata.end())
    out.remote_output_dir = it->second;
  if (auto it = info.metadata.find("magpie_local_output_dir"); it != info.metadata.end())
    out.local_output_dir = it->second;
}

// Copies what the job wrote in shared storage to the local output folder.
void gather(RayJobOutcome& out, const ray::RayConfig& cluster, const ray::ClusterAddress& address,
            std::optional<fs::file_time_type> since) {
  std::error_code ec;
  if (out.remote_output_dir.empty()) return;
  if (!cluster.shared_storage_path.empty()) {
    if (!fs::is_directory(out.remote_output_dir, ec)) {
      out.where_results_are =
          fmt::format("the job wrote nothing to {}", out.remote_output_dir.string());
      return;
    }
    if (out.local_output_dir.empty() ||
        fs::equivalent(out.local_output_dir, out.remote_output_dir, ec)) {
      out.local_output_dir = out.remote_output_dir;
    } else {
      fs::create_directories(out.local_output_dir, ec);
      fs::copy(out.remote_output_dir, out.local_output_dir,
               fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
      // The copy follows links; a top-level link (gap_analysis -> the newest
      // gap_analysis_<time>) is put back as a link, so the gathered folder holds
      // each run once, as the node wrote it.
      if (!ec)
        for (const auto& entry : fs::directory_iterator(out.remote_output_dir, ec)) {
          std::error_code link_ec;
          if (!entry.is_symlink(link_ec)) continue;
          const fs::path local = out.local_output_dir / entry.path().filename();
          const fs::path target = fs::read_symlink(entry.path(), link_ec);
          if (link_ec) continue;
          fs::remove_all(local, link_ec);
          fs::create_directory_symlink(target, local, link_ec);
        }
      if (ec)
        throw Error(ErrorKind::kUnreadable,
                    fmt::format("cannot copy the job's results from {}: {}",
                                out.remote_output_dir.string(), ec.message()),
                    out.local_output_dir.string(), std::nullopt,
                    "check the output folder's permissions and free space");
    }
    out.files = list_files(out.remote_output_dir);
    out.collected = true;
    return;
  }
  if (address.loopback()) {  // the node is this machine: it wrote straight into the output folder
    out.local_output_dir = out.remote_output_dir;
    out.files = list_files(out.remote_output_dir, since);
    out.collected = true;
    return;
  }
  out.where_results_are = fmt::format(
      "on the node that ran the job, under {} (set ray_config.shared_storage_path to gather them "
      "here)",
      out.remote_output_dir.string());
}

void add_log(RayJobOutcome& out, const ray::JobsClient& client) {
  try {
    out.logs = client.logs(out.submission_id);
    out.logs_tail = ray::last_lines(out.logs, kTailLines);
  } catch (const Error&) {
  }
}

}  // namespace

ray::RayConfig ray_config_from_file(const fs::path& path, std::vector<std::string>& warnings) {
  std::string text;
  YAML::Node root = load_yaml(path, text);
  YAML::Node node;
  if (root && root.IsMap()) {
    if (root["ray_config"])
      node = root["ray_config"];
    else if (root["benchmark"] && root["benchmark"].IsMap() && root["benchmark"]["ray_config"])
      node = root["benchmark"]["ray_config"];
  }
  return ray::parse_ray_config(node, path.string(), warnings);
}

std::string magpie_command_for(const ray::RayConfig& cluster, const ray::ClusterAddress& address) {
  if (!cluster.magpie_command.empty()) return cluster.magpie_command;
  if (const char* env = std::getenv("MAGPIE_RAY_MAGPIE_COMMAND"); env && *env) return env;
  if (address.loopback()) return shell_quote(self_exe().string());
  return "magpie";
}

std::optional<RayJobRequest> plan_ray_job(const DispatchInput& in) {
  static const std::set<std::string> kWork = {"benchmark", "tracelens", "analyze", "compare"};
  const bool forced_local =
      in.environment == "local" || in.environment == "docker" || in.environment == "container";
  bool want_ray = in.environment == "ray";
  if (!kWork.count(in.subcommand)) {
    if (want_ray && in.subcommand != "batch")
      throw Error(ErrorKind::kUsage,
                  fmt::format("`-e ray` does not apply to `magpie {}`", in.subcommand), "",
                  std::nullopt,
                  "it runs benchmark, tracelens, analyze, compare and batch on a Ray cluster");
    return std::nullopt;
  }
  std::vector<std::string> warnings;
  ray::RayConfig cluster;
  std::string config_text, config_origin;
  if (!in.config_path.empty()) {
    cluster = ray_config_from_file(in.config_path, warnings);
    config_origin = in.config_path;
  }
  std::vector<std::string> args = in.arguments;
  bool serving_ray_mode = false;  // the benchmark's run_mode says ray: the node needs a real one
  if (in.subcommand == "benchmark") {
    if (auto b = value_of(args, {"-b", "--benchmark-config"})) {
      YAML::Node root = load_yaml(*b, config_text);
      config_origin = *b;
      YAML::Node bm = root["benchmark"] ? root["benchmark"] : root;
      if (bm.IsMap()) {
        if (scalar_or(bm["run_mode"], "") == "ray") want_ray = serving_ray_mode = true;
        if (bm["ray_config"]) cluster = ray::parse_ray_config(bm["ray_config"], *b, warnings);
      }
    }
    if (auto m = value_of(args, {"--run-mode"}); m && *m == "ray")
      want_ray = serving_ray_mode = true;
  } else if (in.subcommand == "analyze" || in.subcommand == "compare") {
    if (auto k = value_of(args, {"-k", "--kernel-config"})) {
      YAML::Node root = load_yaml(*k, config_text);
      config_origin = *k;
      if (root.IsMap()) {
        if (root["ray_config"]) {
          want_ray = true;
          cluster = ray::parse_ray_config(root["ray_config"], *k, warnings);
        }
        if (root["scheduler"] && root["scheduler"].IsMap() &&
            scalar_or(root["scheduler"]["environment"], "") == "ray")
          want_ray = true;
      }
    }
  }
  if (forced_local || !want_ray) return std::nullopt;
  RayJobRequest r;
  r.warnings = std::move(warnings);
  r.cluster = cluster;
  r.label = in.subcommand;
  r.local_output_dir = take_output_dir(args);
  if (serving_ray_mode) {
    // On the node the engine runs as ray_config.run_mode says; drop a --run-mode ray.
    std::vector<std::string> kept;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--run-mode" && i + 1 < args.size()) {
        ++i;
        continue;
      }
      if (args[i].rfind("--run-mode=", 0) == 0) continue;
      kept.push_back(args[i]);
    }
    args = std::move(kept);
    args.push_back("--run-mode");
    args.push_back(cluster.run_mode);
  }
  r.magpie_args = {in.subcommand};
  for (auto& a : absolute_paths(args, fs::current_path())) r.magpie_args.push_back(std::move(a));
  r.config_text = config_text.empty() ? join(r.magpie_args) : config_text;
  r.config_origin = config_origin;
  return r;
}

RayJobOutcome submit_ray_job(const RayJobRequest& req, const JobContext& context) {
  const ray::JobsClient client = client_for(req.cluster);
  const ray::ClusterAddress& address = client.address();
  context.report(0, std::nullopt, fmt::format("Ray: checking the cluster at {}", address.url()));
  const std::string version = client.ray_version();  // fails fast when unreachable
  check_shared_storage(req.cluster);
  RayJobOutcome out;
  out.submission_id = make_submission_id(req.label);
  out.cluster_url = address.url();
  out.local_output_dir = fs::absolute(req.local_output_dir).lexically_normal();
  out.remote_output_dir = req.cluster.shared_storage_path.empty()
                              ? out.local_output_dir
                              : job_folder(req.cluster, out.submission_id) / "output";
  std::error_code ec;
  if (!req.cluster.shared_storage_path.empty())
    fs::create_directories(out.remote_output_dir, ec);
  else if (address.loopback())
    fs::create_directories(out.local_output_dir, ec);

  std::vector<std::string> entry = req.magpie_args;
  entry.push_back("-o");
  entry.push_back(out.remote_output_dir.string());
  ray::JobSubmission job;
  job.submission_id = out.submission_id;
  // `-e local`: the node runs the command itself, whatever its YAML says.
  job.entrypoint = magpie_command_for(req.cluster, address) + " -e local " + join(entry);
  job.env_vars = req.cluster.env_vars;
  job.env_vars["MAGPIE_RAY_SUBMISSION_ID"] = out.submission_id;
  job.working_dir = req.cluster.working_dir;
  job.entrypoint_num_cpus = req.cluster.entrypoint_num_cpus;
  job.entrypoint_num_gpus = req.cluster.entrypoint_num_gpus;
  job.entrypoint_memory_bytes = req.cluster.entrypoint_memory_bytes;
  job.entrypoint_resources = req.cluster.entrypoint_resources;
  const std::string hash = store::hash_config(req.config_text);
  job.metadata = {{"magpie_label", req.label},
                  {"magpie_command", join(req.magpie_args)},
                  {"magpie_config_hash", hash},
                  {"magpie_store_id", out.submission_id},
                  {"magpie_output_dir", out.remote_output_dir.string()},
                  {"magpie_local_output_dir", out.local_output_dir.string()},
                  {"magpie_version", "0.1.0"}};
  if (!req.config_origin.empty()) job.metadata["magpie_config"] = req.config_origin;
  if (req.cluster.num_nodes)
    job.metadata["magpie_num_nodes"] = std::to_string(*req.cluster.num_nodes);
  if (req.cluster.gpus_per_node)
    job.metadata["magpie_gpus_per_node"] = std::to_string(*req.cluster.gpus_per_node);
  if (!req.cluster.shared_storage_path.empty()) {
    // The record of what was asked, beside the results.
    json record = {
        {"submission_id", out.submission_id}, {"cluster", address.url()}, {"ray_version", version},
        {"entrypoint", job.entrypoint},       {"metadata", job.metadata}, {"config_hash", hash}};
    write_text_file(job_folder(req.cluster, out.submission_id) / "request.json",
                    record.dump(2) + "\n");
    write_text_file(job_folder(req.cluster, out.submission_id) / "config.txt", req.config_text);
  }
  out.submitted_at = store::iso_utc_now();
  client.submit(job);
  out.status = JobStatus::kPending;
  out.metadata = job.metadata;
  context.report(0, std::nullopt,
                 fmt::format("Ray job {} submitted to {} (Ray {})", out.submission_id,
                             address.url(), version));
  return out;
}

RayJobOutcome finish_ray_job(const RayJobRequest& req, RayJobOutcome out,
                             const JobContext& context) {
  const ray::JobsClient client = client_for(req.cluster);
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  ray::WaitOptions wait;
  wait.pending_timeout_s = req.cluster.pending_timeout_s;
  wait.timeout_s = req.cluster.job_timeout_s;
  wait.cancel = context.cancel;
  wait.on_change = [&](const ray::JobInfo& info) {
    context.report(0, std::nullopt,
                   fmt::format("Ray job {}: {}", out.submission_id, ray::to_string(info.status)));
  };
  // The job's log, line by line while it runs (what its magpie prints on the node).
  std::optional<ray::LogFollower> follower;
  auto emit = [&](const std::string& lines) {
    if (!lines.empty()) context.log(req.label, lines);
  };
  if (context.log) {
    follower.emplace(client, out.submission_id);
    wait.max_poll = std::min(wait.max_poll, std::chrono::milliseconds(1000));
    wait.on_poll = [&](const ray::JobInfo& info) {
      if (info.status != JobStatus::kPending) emit(follower->poll());
    };
  }
  ray::JobInfo info = ray::wait_for_job(client, out.submission_id, wait);
  if (!ray::terminal(info.status)) {  // cancelled here: stop it there
    context.report(0, std::nullopt, fmt::format("Ray job {}: stopping", out.submission_id));
    try {
      client.stop(out.submission_id);
      for (int i = 0; i < 100 && !ray::terminal(info.status); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        info = client.info(out.submission_id);
      }
    } catch (const Error&) {
    }
  }
  auto local = out.local_output_dir;
  auto remote = out.remote_output_dir;
  fill_from_info(out, info);
  out.local_output_dir = local;
  out.remote_output_dir = remote;
  if (!ray::terminal(info.status)) out.status = JobStatus::kStopped;
  if (follower) emit(follower->finish());
  add_log(out, client);
  // Partial results of a failed or stopped job are gathered too.
  gather(out, req.cluster, client.address(), since);
  if (out.status == JobStatus::kSucceeded && out.collected && out.files.empty())
    out.where_results_are = fmt::format("the job succeeded but its results never appeared in {}",
                                        out.remote_output_dir.string());
  out.run_ids = record_ray_run(out, context);
  return out;
}

RayJobOutcome run_ray_job(const RayJobRequest& req, const JobContext& context) {
  RayJobOutcome submitted = submit_ray_job(req, context);
  if (req.detach) return submitted;
  return finish_ray_job(req, std::move(submitted), context);
}

RayJobOutcome ray_job_status(const ray::RayConfig& cluster, const std::string& id,
                             size_t log_lines) {
  const ray::JobsClient client = client_for(cluster);
  RayJobOutcome out;
  out.submission_id = id;
  out.cluster_url = client.address().url();
  fill_from_info(out, client.info(id));
  if (log_lines > 0) {
    add_log(out, client);
    out.logs_tail = ray::last_lines(out.logs, log_lines);
    out.logs.clear();
  }
  return out;
}

RayJobOutcome ray_job_result(const ray::RayConfig& cluster, const std::string& id,
                             const fs::path& local_output_dir, const JobContext& context) {
  const ray::JobsClient client = client_for(cluster);
  RayJobOutcome out;
  out.submission_id = id;
  out.cluster_url = client.address().url();
  fill_from_info(out, client.info(id));
  if (!local_output_dir.empty()) out.local_output_dir = fs::absolute(local_output_dir);
  add_log(out, client);
  if (ray::terminal(out.status)) {
    ray::RayConfig effective = cluster;
    // A job's own record says where it wrote; shared storage is what lies outside the local folder.
    if (effective.shared_storage_path.empty() && out.remote_output_dir != out.local_output_dir)
      effective.shared_storage_path = out.remote_output_dir.parent_path().string();
    gather(out, effective, client.address(), std::nullopt);
    out.run_ids = record_ray_run(out, context);
  }
  return out;
}

RayJobOutcome cancel_ray_job(const ray::RayConfig& cluster, const std::string& id) {
  const ray::JobsClient client = client_for(cluster);
  RayJobOutcome out;
  out.submission_id = id;
  out.cluster_url = client.address().url();
  ray::JobInfo info = client.info(id);
  if (!ray::terminal(info.status)) {
    client.stop(id);
    for (int i = 0; i < 100 && !ray::terminal(info.status); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      info = client.info(id);
    }
  }
  fill_from_info(out, info);
  return out;
}

std::vector<RayJobOutcome> list_ray_jobs(const ray::RayConfig& cluster, bool magpie_only) {
  const ray::JobsClient client = client_for(cluster);
  std::vector<RayJobOutcome> out;
  for (const auto& info : client.list()) {
    if (magpie_only && !info.metadata.count("magpie_label")) continue;
    RayJobOutcome o;
    o.submission_id = info.submission_id;
    o.cluster_url = client.address().url();
    fill_from_info(o, info);
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

store::RunStatus store_status(JobStatus s) {
  switch (s) {
    case JobStatus::kSucceeded:
      return store::RunStatus::kSucceeded;
    case JobStatus::kStopped:
      return store::RunStatus::kCancelled;
    default:
      return store::RunStatus::kFailed;
  }
}

// The kind of run a magpie command line makes ("benchmark --trace-dir …" is a gap analysis).
store::RunKind kind_of_command(const std::string& command) {
  const std::string first = command.substr(0, command.find(' '));
  if (first == "analyze") return store::RunKind::kAnalyze;
  if (first == "compare") return store::RunKind::kCompare;
  if (first == "tracelens") return store::RunKind::kTraceLens;
  if (command.find("--trace-dir") != std::string::npos) return store::RunKind::kGapAnalysis;
  return store::RunKind::kBenchmark;
}

std::string meta_of(const RayJobOutcome& o, const char* key) {
  auto it = o.metadata.find(key);
  return it == o.metadata.end() ? std::string() : it->second;
}

}  // namespace

std::vector<int64_t> record_ray_run(const RayJobOutcome& o, const JobContext& context) {
  std::vector<int64_t> ids;
  if (!context.record || !ray::terminal(o.status) || o.local_output_dir.empty()) return ids;
  std::map<std::string, std::string> meta = {{"ray_job_id", o.submission_id},
                                             {"ray_cluster", o.cluster_url},
                                             {"ray_status", ray::to_string(o.status)}};
  if (!o.remote_output_dir.empty() && o.remote_output_dir != o.local_output_dir)
    meta["ray_output_dir"] = o.remote_output_dir.string();
  const std::string command = meta_of(o, "magpie_command");
  try {
    auto db = store::ResultsStore::open(context.store_path.empty()
                                            ? store::ResultsStore::default_path()
                                            : context.store_path);
    // The workspaces this job wrote: those holding a gathered file (the output
    // folder may hold older runs too).
    std::vector<fs::path> workspaces;
    if (o.collected)
      for (const auto& ws : store::find_workspaces(o.local_output_dir)) {
        const std::string prefix = fs::relative(ws, o.local_output_dir).string();
        bool ours = prefix == "." || prefix.empty();
        for (const auto& f : o.files)
          ours = ours || f.rfind(prefix + "/", 0) == 0;
        if (ours) workspaces.push_back(ws);
      }
    const std::string host = store::host_name();
    for (const auto& ws : workspaces) {
      if (auto known = db.find_by_workspace(ws)) {
        if (known->metadata.count("ray_job_id") && known->metadata.at("ray_job_id") == o.submission_id) {
          ids.push_back(known->id);  // gathered before
          continue;
        }
        if (!known->metadata.count("ray_job_id") && known->host == host &&
            !o.submitted_at.empty() && known->started_at >= o.submitted_at) {
          db.set_metadata(known->id, meta);  // the node recorded it here itself
          ids.push_back(known->id);
          continue;
        }
      }
      auto record = store::read_workspace(ws);
      if (!record) continue;
      record->face = context.face;
      record->command_line = context.command_line.empty() ? "ray job: magpie " + command
                                                          : context.command_line;
      record->config_hash = meta_of(o, "magpie_config_hash");
      record->host = o.cluster_url;
      record->pid = 0;
      record->metadata = meta;
      // The report says how the command went; Ray says whether the job as a whole did.
      if (o.status != JobStatus::kSucceeded && record->status == store::RunStatus::kSucceeded) {
        record->status = store_status(o.status);
        record->error = ray::last_lines(o.message, 1);
      }
      if (auto id = db.insert_finished(*record)) ids.push_back(*id);
    }
    if (ids.empty()) {
      // Nothing readable came back: one row says what ran and why it has no report.
      if (auto known = db.find_by_workspace(o.local_output_dir);  // gathered before
          known && known->metadata.count("ray_job_id") &&
          known->metadata.at("ray_job_id") == o.submission_id)
        return {known->id};
      store::RunRecord r;
      r.kind = kind_of_command(command);
      r.status = o.status == JobStatus::kSucceeded ? store::RunStatus::kFailed
                                                   : store_status(o.status);
      r.face = context.face;
      r.command_line = context.command_line.empty() ? "ray job: magpie " + command
                                                    : context.command_line;
      r.config_hash = meta_of(o, "magpie_config_hash");
      r.workspace = o.local_output_dir.string();
      r.error = !o.where_results_are.empty() ? o.where_results_are : ray::last_lines(o.message, 1);
      if (!o.logs_tail.empty()) r.error += "\n" + ray::last_lines(o.logs_tail, 5);
      r.finished_at = store::iso_utc_now();
      r.started_at = o.submitted_at.empty() ? r.finished_at : o.submitted_at;
      r.host = o.cluster_url;
      r.metadata = meta;
      if (auto id = db.insert_finished(r)) ids.push_back(*id);
    }
  } catch (const std::exception& e) {
    context.report(0, std::nullopt,
                   fmt::format("warning: results store: {} (the Ray job {} goes unrecorded)",
                               e.what(), o.submission_id));
  }
  return ids;
}

int exit_code_of(const RayJobOutcome& o) {
  switch (o.status) {
    case JobStatus::kSucceeded:
      return o.collected && o.files.empty() ? 1 : 0;
    case JobStatus::kFailed:
      return o.exit_code && *o.exit_code > 0 ? *o.exit_code : 1;
    case JobStatus::kStopped:
      return exit_code_for(ErrorKind::kCancelled);
    default:
      return 0;  // submitted and detached
  }
}

std::string console_text(const RayJobOutcome& o) {
  std::string s;
  s +=
      fmt::format("Ray job {} at {}: {}", o.submission_id, o.cluster_url, ray::to_string(o.status));
  if (o.wall_seconds > 0) s += fmt::format(" in {:.1f} s", o.wall_seconds);
  if (o.status == JobStatus::kFailed && o.exit_code) s += fmt::format(" (exit {})", *o.exit_code);
  s += "\n";
  if (o.status == JobStatus::kFailed || o.status == JobStatus::kStopped) {
    if (!o.message.empty()) s += fmt::format("Ray: {}\n", ray::last_lines(o.message, 1));
    if (!o.logs_tail.empty())
      s += "last log lines:\n" + o.logs_tail + (o.logs_tail.back() == '\n' ? "" : "\n");
  }
  if (o.collected)
    s += fmt::format("Results: {} ({} files{})\n", o.local_output_dir.string(), o.files.size(),
                     o.remote_output_dir != o.local_output_dir
                         ? " gathered from " + o.remote_output_dir.string()
                         : "");
  if (!o.where_results_are.empty()) s += "Results: " + o.where_results_are + "\n";
  if (!o.run_ids.empty())
    s += fmt::format("Recorded: results store run {} (magpie results show {})\n",
                     fmt::join(o.run_ids, ", "), o.run_ids.front());
  if (o.status == JobStatus::kPending || o.status == JobStatus::kRunning)
    s += fmt::format("follow it with: ray job logs --address {} -f {}\n", o.cluster_url,
                     o.submission_id);
  return s;
}

// ---- batch ----

bool BatchOutcome::all_succeeded() const {
  for (const auto& r : runs)
    if (r.status != "SUCCEEDED" && r.status != "SUBMITTED") return false;
  return true;
}

std::vector<BatchEntry> load_batch_entries(const std::vector<std::string>& files) {
  std::vector<BatchEntry> out;
  std::set<std::string> names;
  auto add = [&](BatchEntry e) {
    std::string base = e.name;
    for (int i = 2; names.count(e.name); ++i) e.name = fmt::format("{}_{}", base, i);
    names.insert(e.name);
    out.push_back(std::move(e));
  };
  auto config_entry = [&](const fs::path& cfg, std::string name) {
    std::error_code ec;
    if (!fs::is_regular_file(cfg, ec))
      throw Error(ErrorKind::kNotFound, "benchmark config not found", cfg.string(), std::nullopt,
                  "batch entries name benchmark YAML files (relative to the batch file)");
    BatchEntry e;
    e.name = name.empty() ? cfg.stem().string() : name;
    e.magpie_args = {"benchmark", "-b", fs::absolute(cfg).lexically_normal().string()};
    e.config_text = read_text_file(cfg);
    return e;
  };
  for (const auto& file : files) {
    std::string text;
    YAML::Node root = load_yaml(file, text);
    const fs::path base = fs::absolute(file).parent_path();
    if (root.IsMap() && root["benchmark"]) {
      add(config_entry(file, ""));
      continue;
    }
    YAML::Node list = root.IsMap() ? root["batch"] : root;
    if (!list || !list.IsSequence())
      throw Error(
          ErrorKind::kUsage, "not a batch file: expected `batch:` with a list, or a benchmark YAML",
          file, std::nullopt,
          "write batch: [bench_a.yaml, {name: gap, command: [benchmark, --trace-dir, traces]}]");
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node& item = list[i];
      if (item.IsScalar()) {
        add(config_entry(base / item.Scalar(), ""));
      } else if (item.IsMap() && item["config"]) {
        add(config_entry(base / item["config"].Scalar(), scalar_or(item["name"], "")));
      } else if (item.IsMap() && item["command"] && item["command"].IsSequence()) {
        BatchEntry e;
        std::vector<std::string> args;
        for (const auto& a : item["command"]) args.push_back(a.Scalar());
        if (args.empty())
          throw Error(ErrorKind::kUsage, fmt::format("batch[{}].command is empty", i), file);
        take_output_dir(args);  // each run gets its own folder
        e.magpie_args = absolute_paths(args, base);
        e.name = scalar_or(item["name"], fmt::format("{}_{}", args[0], i));
        e.config_text = join(e.magpie_args);
        add(std::move(e));
      } else {
        throw Error(ErrorKind::kUsage,
                    fmt::format("batch[{}]: expected a config path, {{config: PATH}} or "
                                "{{name: N, command: [ARGS]}}",
                                i),
                    file);
      }
    }
  }
  if (out.empty())
    throw Error(ErrorKind::kRejected, "the batch has no runs", files.empty() ? "" : files.front());
  return out;
}

namespace {

// A benchmark entry whose YAML says run_mode ray needs the node's mode.
std::vector<std::string> node_args(const BatchEntry& e, const ray::RayConfig* cluster) {
  std::vector<std::string> args = e.magpie_args;
  if (!args.empty() && args[0] == "benchmark" && !value_of(args, {"--trace-dir"}) &&
      !value_of(args, {"--run-mode"})) {
    if (auto b = value_of(args, {"-b", "--benchmark-config"})) {
      std::string text;
      YAML::Node root = load_yaml(*b, text);
      YAML::Node bm = root["benchmark"] ? root["benchmark"] : root;
      if (bm.IsMap() && scalar_or(bm["run_mode"], "") == "ray") {
        args.push_back("--run-mode");
        args.push_back(cluster ? cluster->run_mode : "local");
      }
    }
  }
  return args;
}

BatchRunResult run_local_entry(const BatchEntry& e, const fs::path& out_dir,
                               const JobContext& context) {
  BatchRunResult r;
  r.name = e.name;
  r.output_dir = fs::absolute(out_dir / e.name);
  std::error_code ec;
  fs::create_directories(r.output_dir, ec);
  kernel::ProcessSpec spec;
  spec.argv = {self_exe().string(), "-e", "local"};
  for (const auto& a : node_args(e, nullptr)) spec.argv.push_back(a);
  spec.argv.push_back("-o");
  spec.argv.push_back(r.output_dir.string());
  spec.timeout = std::chrono::hours(24 * 7);
  spec.log_path = r.output_dir / "magpie.log";
  spec.cancel = context.cancel;
  kernel::ProcessResult p = kernel::run_process(spec);
  r.wall_seconds = p.wall_seconds;
  r.exit_code = p.exit_code;
  if (p.ok()) {
    r.status = "SUCCEEDED";
  } else {
    r.status = p.cancelled ? "STOPPED" : "FAILED";
    if (p.cancelled) r.exit_code = exit_code_for(ErrorKind::kCancelled);
    r.error = fmt::format("{}; log {}:\n{}", p.describe(), spec.log_path.string(),
                          kernel::log_tail(spec.log_path, 1500));
  }
  return r;
}

BatchRunResult run_ray_entry(const BatchEntry& e, const BatchRequest& req,
                             const JobContext& context) {
  BatchRunResult r;
  r.name = e.name;
  RayJobRequest job;
  job.cluster = *req.ray;
  job.label = e.name;
  job.magpie_args = node_args(e, &*req.ray);
  job.local_output_dir = req.output_dir / e.name;
  job.config_text = e.config_text;
  job.detach = req.detach;
  RayJobOutcome o = submit_ray_job(job, context);
  r.submission_id = o.submission_id;
  r.output_dir = o.local_output_dir;
  if (req.detach) {
    r.status = "SUBMITTED";
    return r;
  }
  o = finish_ray_job(job, std::move(o), context);
  r.run_ids = o.run_ids;
  r.status = ray::to_string(o.status);
  r.exit_code = exit_code_of(o);
  r.wall_seconds = o.wall_seconds;
  if (o.collected) r.output_dir = o.local_output_dir;
  if (r.exit_code != 0) {
    if (o.status == JobStatus::kSucceeded) r.status = "FAILED";
    r.error = ray::last_lines(o.message, 1);
    if (!o.where_results_are.empty())
      r.error += (r.error.empty() ? "" : "; ") + o.where_results_are;
    if (!o.logs_tail.empty()) r.error += "\n" + ray::last_lines(o.logs_tail, 10);
  }
  return r;
}

void write_summary(BatchOutcome& out, const fs::path& dir) {
  json runs = json::array();
  std::string csv = "name,status,exit_code,wall_seconds,submission_id,output_dir\n";
  for (const auto& r : out.runs) {
    runs.push_back({{"name", r.name},
                    {"status", r.status},
                    {"exit_code", r.exit_code},
                    {"wall_seconds", r.wall_seconds},
                    {"submission_id", r.submission_id},
                    {"output_dir", r.output_dir.string()},
                    {"run_ids", r.run_ids},
                    {"error", r.error}});
    csv += fmt::format("{},{},{},{:.2f},{},{}\n", r.name, r.status, r.exit_code, r.wall_seconds,
                       r.submission_id, r.output_dir.string());
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  out.summary_json = dir / "batch_summary.json";
  out.summary_csv = dir / "batch_summary.csv";
  write_text_file(out.summary_json,
                  json({{"runs", runs}, {"all_succeeded", out.all_succeeded()}}).dump(2) + "\n");
  write_text_file(out.summary_csv, csv);
}

}  // namespace

BatchOutcome run_batch(const BatchRequest& req, const JobContext& context) {
  if (req.ray) {  // one clear error before anything is submitted
    client_for(*req.ray).ray_version();
    check_shared_storage(*req.ray);
  }
  BatchOutcome out;
  out.runs.resize(req.entries.size());
  const size_t n = req.entries.size();
  size_t workers = req.workers == 0 ? n : std::min(req.workers, n);
  std::mutex mu;
  size_t next = 0, finished = 0;
  auto worker = [&] {
    while (true) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= n) return;
        i = next++;
      }
      const BatchEntry& e = req.entries[i];
      BatchRunResult r;
      if (context.cancelled()) {
        r.name = e.name;
        r.status = "STOPPED";
        r.exit_code = exit_code_for(ErrorKind::kCancelled);
        r.error = "not started: the batch was cancelled";
      } else {
        try {
          r = req.ray ? run_ray_entry(e, req, context)
                      : run_local_entry(e, req.output_dir, context);
        } catch (const Error& err) {
          r.name = e.name;
          r.status = "ERROR";
          r.exit_code = exit_code_for(err.kind());
          r.error = err.what();
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      out.runs[i] = std::move(r);
      ++finished;
      context.report(
          static_cast<double>(finished), static_cast<double>(n),
          fmt::format("batch: {} {} ({}/{})", out.runs[i].name, out.runs[i].status, finished, n));
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 0; t < workers; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  write_summary(out, req.output_dir);
  return out;
}

std::string console_text(const BatchOutcome& out) {
  size_t w = 4;
  for (const auto& r : out.runs) w = std::max(w, r.name.size());
  std::string s = fmt::format("{:<{}}  {:<9}  {:>4}  {:>9}  {}\n", "name", w, "status", "exit",
                              "time (s)", "output");
  for (const auto& r : out.runs) {
    s += fmt::format("{:<{}}  {:<9}  {:>4}  {:>9.1f}  {}{}\n", r.name, w, r.status, r.exit_code,
                     r.wall_seconds, r.output_dir.string(),
                     r.submission_id.empty() ? "" : "  [" + r.submission_id + "]");
  }
  for (const auto& r : out.runs)
    if (!r.error.empty()) s += fmt::format("\n{} {}: {}\n", r.name, r.status, r.error);
  s += fmt::format("\nSummary: {} and {}\n", out.summary_json.string(), out.summary_csv.string());
  return s;
}

}  // namespace magpie::jobs
