#include "ray_command.hpp"

#include <iostream>
#include <memory>
#include <mutex>

#include "command_context.hpp"
#include "core/error.hpp"
#include "jobs/ray_jobs.hpp"

namespace magpie::app {

void GlobalOptions::register_with(CLI::App& app) {
  app.add_option("-c,--config", config_path,
                 "Config YAML; its ray_config: applies to every command")
      ->check(CLI::ExistingFile);
  app.add_option("-e,--environment", environment,
                 "Where work runs: local, docker (= container) or ray (a Ray cluster: RAY_ADDRESS "
                 "or ray_config)")
      ->check(CLI::IsMember({"local", "docker", "container", "ray"}));
  app.add_option("-w,--workers", workers,
                 "Runs at once (magpie batch; default 1 here, all at once on Ray)")
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  app.add_option("--docker-image", docker_image, "Image for docker-mode serving benchmarks");
}

namespace {

jobs::JobContext cli_context(bool verbose) {
  jobs::JobContext context = command_context(verbose);
  context.cancel = &interrupt_flag();
  // Progress is a handful of status lines: always worth showing.
  context.progress = [](const jobs::Progress& p) { std::cerr << p.message << "\n"; };
  return context;
}

// One job's log goes to stdout as it comes, as if the command ran here.
void follow_on_stdout(jobs::JobContext& context) {
  context.log = [](const std::string&, const std::string& lines) { std::cout << lines << std::flush; };
}

// Several jobs at once: their lines on stderr, each tagged with its run's name
// (stdout keeps the summary table).
void follow_tagged_on_stderr(jobs::JobContext& context) {
  auto mutex = std::make_shared<std::mutex>();
  context.log = [mutex](const std::string& source, const std::string& lines) {
    std::lock_guard lock(*mutex);
    for (size_t pos = 0; pos < lines.size();) {
      size_t end = lines.find('\n', pos);
      if (end == std::string::npos) end = lines.size();
      std::cerr << "[" << source << "] " << lines.substr(pos, end - pos) << "\n";
      pos = end + 1;
    }
    std::cerr << std::flush;
  };
}

std::optional<ray::RayConfig> batch_cluster(const GlobalOptions& global) {
  if (global.environment != "ray") return std::nullopt;
  std::vector<std::string> warnings;
  ray::RayConfig cluster;
  if (!global.config_path.empty())
    cluster = jobs::ray_config_from_file(global.config_path, warnings);
  for (const auto& w : warnings) std::cerr << "warning: " << w << "\n";
  return cluster;
}

}  // namespace

std::optional<int> run_on_ray_if_asked(const CLI::App& app, const GlobalOptions& global, int argc,
                                       char** argv, bool verbose) {
  auto subs = app.get_subcommands();
  if (subs.empty()) return std::nullopt;
  jobs::DispatchInput in;
  in.subcommand = subs.front()->get_name();
  in.environment = global.environment;
  in.config_path = global.config_path;
  // Global flags come before the subcommand: what follows its name is its own.
  int i = 1;
  while (i < argc && in.subcommand != argv[i]) ++i;
  for (++i; i < argc; ++i) in.arguments.emplace_back(argv[i]);
  std::optional<jobs::RayJobRequest> request = jobs::plan_ray_job(in);
  if (!request) return std::nullopt;
  for (const auto& w : request->warnings) std::cerr << "warning: " << w << "\n";
  InterruptScope interrupts;
  jobs::JobContext context = cli_context(verbose);
  // What the command prints on the node streams here while it runs (its
  // console, line by line); then where its results are.
  follow_on_stdout(context);
  jobs::RayJobOutcome outcome = jobs::run_ray_job(*request, context);
  std::cout << jobs::console_text(outcome);
  return jobs::exit_code_of(outcome);
}

void BatchCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand(
      "batch",
      "Run many benchmark configs (and other magpie commands) as separate runs, here or on a Ray "
      "cluster (-e ray),\n"
      "and write one summary table (batch_summary.json/.csv). Each FILE is a benchmark YAML, or a "
      "list:\n"
      "  batch: [bench_a.yaml, {name: gap, command: [benchmark, --trace-dir, traces]}]\n"
      "A failed run is reported with its log tail while the others go on; Ctrl-C stops the "
      "submitted jobs.");
  sub_->add_option("files", files_, "Batch files or benchmark YAML files")
      ->required()
      ->check(CLI::ExistingFile);
  sub_->add_option("-o,--output-dir", output_dir_,
                   "Each run writes to DIR/<name>; the summary to DIR")
      ->capture_default_str();
  sub_->add_option("--parallel", parallel_, "Runs at once (as the global -w)")
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  sub_->add_flag("--detach", detach_,
                 "Ray: submit every run and return (follow with ray_task_status)");
}

int BatchCommand::run(const GlobalOptions& global, bool verbose) {
  jobs::BatchRequest req;
  req.entries = jobs::load_batch_entries(files_);
  req.output_dir = output_dir_;
  req.ray = batch_cluster(global);
  req.detach = detach_;
  req.workers = parallel_ ? parallel_ : global.workers;
  if (req.workers == 0) req.workers = req.ray ? 0 : 1;  // the cluster schedules; here one at a time
  if (detach_ && !req.ray)
    throw Error(ErrorKind::kUsage, "--detach needs a Ray cluster (-e ray)", "", std::nullopt,
                "add -e ray, or drop --detach to run here");
  InterruptScope interrupts;
  jobs::JobContext context = cli_context(verbose);
  if (req.ray) follow_tagged_on_stderr(context);
  jobs::BatchOutcome outcome = jobs::run_batch(req, context);
  std::cout << jobs::console_text(outcome);
  if (interrupt_flag().load()) return exit_code_for(ErrorKind::kCancelled);
  return outcome.all_succeeded() ? 0 : 1;
}

}  // namespace magpie::app
