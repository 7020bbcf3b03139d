#pragma once
// Magpie's work on a Ray cluster (docs/RAY.md). A command that does work
// (benchmark, including --trace-dir gap analysis; tracelens; analyze;
// compare) becomes one Ray job whose entrypoint runs the same `magpie` command
// on a node with `-e local`; the CLI waits with progress and then gathers the
// result files from shared storage. `magpie batch` fans many runs out, here or
// on the cluster. The kernels of one compare stay in one job: their
// interleaved rounds must share one GPU.
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_context.hpp"
#include "ray/jobs_client.hpp"
#include "ray/ray_config.hpp"

namespace magpie::jobs {

// What the CLI's global flags and a subcommand's own arguments say about
// where a command runs.
struct DispatchInput {
  std::string subcommand;              // "benchmark", "analyze", ...
  std::vector<std::string> arguments;  // the subcommand's arguments as typed (after its name)
  std::string environment;             // -e: "" | local | docker | container | ray
  std::string config_path;             // -c: a YAML whose ray_config applies to every command
};

// One Ray job that runs a magpie command.
struct RayJobRequest {
  ray::RayConfig cluster;
  std::string label;                       // the subcommand, or a batch entry's name
  std::vector<std::string> magpie_args;    // subcommand and arguments, paths absolute, no -o
  std::filesystem::path local_output_dir;  // where the results end up here
  std::string config_text;                 // the config the job runs (hashed into the metadata)
  std::string config_origin;               // its file, for messages
  bool detach = false;                     // submit and return without waiting
  std::vector<std::string> warnings;       // unknown ray_config keys, for the caller to print
};

struct RayJobOutcome {
  std::string submission_id;
  std::string cluster_url;
  ray::JobStatus status = ray::JobStatus::kUnknown;
  std::string message;           // Ray's words
  std::optional<int> exit_code;  // the magpie command's exit status on the node
  std::string logs_tail;         // the job's last log lines
  std::string logs;              // the whole log (what the command printed)
  std::filesystem::path
      remote_output_dir;  // where the job wrote (shared storage, or the node's disk)
  std::filesystem::path local_output_dir;  // where the files are here once gathered
  std::vector<std::string> files;          // gathered files, relative to local_output_dir
  bool collected = false;
  std::string where_results_are;  // when not gathered: where to look
  std::map<std::string, std::string> metadata;
  double wall_seconds = 0;
  std::string submitted_at;       // ISO-8601 UTC, when submitted from here
  std::vector<int64_t> run_ids;   // rows of the local results store holding its workspaces
};

// Decides whether a command goes to Ray: `-e ray`, a benchmark YAML with
// run_mode ray, `--run-mode ray`, or a kernel YAML with ray_config /
// scheduler.environment ray. nullopt = run here. Throws Error(kUsage) for a
// subcommand that cannot run on Ray.
std::optional<RayJobRequest> plan_ray_job(const DispatchInput& input);

// Submits, waits (progress through `context`; Ctrl-C stops the job unless
// detached), and gathers the results. Throws Error(kUnreachable) when the
// cluster does not answer.
RayJobOutcome run_ray_job(const RayJobRequest& request, const JobContext& context);
RayJobOutcome submit_ray_job(const RayJobRequest& request, const JobContext& context);
// Waits for a submitted job and gathers its results.
RayJobOutcome finish_ray_job(const RayJobRequest& request, RayJobOutcome submitted,
                             const JobContext& context);

// Status, result (logs and gathered files), cancel and list of jobs on a cluster.
RayJobOutcome ray_job_result(const ray::RayConfig& cluster, const std::string& submission_id,
                             const std::filesystem::path& local_output_dir,
                             const JobContext& context);
RayJobOutcome ray_job_status(const ray::RayConfig& cluster, const std::string& submission_id,
                             size_t log_lines);
RayJobOutcome cancel_ray_job(const ray::RayConfig& cluster, const std::string& submission_id);
std::vector<RayJobOutcome> list_ray_jobs(const ray::RayConfig& cluster, bool magpie_only);

// Records a finished job's gathered workspaces in the local results store
// (when context.record), as local runs are recorded, with the Ray job id,
// cluster, status and remote folder as metadata; a job that left no
// readable report is recorded as one failed run. Idempotent: gathering the
// same job again adds nothing. A node sharing this store (a loopback
// cluster) already recorded its run: that row gets the metadata instead.
// Returns the run ids; a store that cannot be written costs a warning.
std::vector<int64_t> record_ray_run(const RayJobOutcome& outcome, const JobContext& context);

// The exit code a finished job maps to: 0 on success, the command's own code
// when it failed, 130 when stopped.
int exit_code_of(const RayJobOutcome& outcome);
std::string console_text(const RayJobOutcome& outcome);

// ---- magpie batch ----

struct BatchEntry {
  std::string name;                      // unique; names its output folder
  std::vector<std::string> magpie_args;  // e.g. {"benchmark", "-b", "/abs/cfg.yaml"}
  std::string config_text;
};

struct BatchRequest {
  std::vector<BatchEntry> entries;
  std::filesystem::path output_dir = "./results";
  size_t workers = 1;                 // runs at once
  std::optional<ray::RayConfig> ray;  // set = on the cluster
  bool detach = false;                // Ray: submit and return
};

struct BatchRunResult {
  std::string name;
  std::string status;  // SUCCEEDED | FAILED | STOPPED | SUBMITTED | ERROR
  int exit_code = 0;
  std::filesystem::path output_dir;
  std::string submission_id;  // Ray runs
  double wall_seconds = 0;
  std::string error;  // the failure, with the log tail
  std::vector<int64_t> run_ids;  // Ray runs: rows in the local results store
};

struct BatchOutcome {
  std::vector<BatchRunResult> runs;
  std::filesystem::path summary_json, summary_csv;
  bool all_succeeded() const;
};

// Reads batch files: each is a benchmark YAML (one run), or a list under
// `batch:` of config paths and {name, command: [magpie args]} entries.
std::vector<BatchEntry> load_batch_entries(const std::vector<std::string>& files);
BatchOutcome run_batch(const BatchRequest& request, const JobContext& context);
std::string console_text(const BatchOutcome& outcome);

// The cluster settings of a config YAML's ray_config (benchmark or kernel file,
// or -c), with RAY_ADDRESS when none names the cluster; warnings to `warnings`.
ray::RayConfig ray_config_from_file(const std::filesystem::path& path,
                                    std::vector<std::string>& warnings);

// The magpie binary a node runs: ray_config.magpie_command, else this binary
// on a loopback cluster, else `magpie` on the node's PATH.
std::string magpie_command_for(const ray::RayConfig& cluster, const ray::ClusterAddress& address);

}  // namespace magpie::jobs
