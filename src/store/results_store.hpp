#pragma once
// The results store: one SQLite file (WAL, busy timeout, versioned schema), or
// a PostgreSQL database shared by many hosts (same schema), that records every
// analyze, compare, benchmark, gap analysis and TraceLens run, from the CLI or
// the MCP server, so an agent can find, list and diff past runs.
//
// Default location ~/.magpie/results.db, or $MAGPIE_RESULTS_DB (a file path or
// a postgresql:// URL; detail/sqlite.hpp and detail/postgres.hpp). Several
// processes and threads may record at once: writes are short IMMEDIATE
// transactions that wait on the busy timeout, never interleave. A run is a row
// in kRunning from begin() until finish(); a process killed in between leaves
// the row in kRunning, and the next open() on the same host marks it kIncomplete.
// docs/RESULTS.md has the schema and the commands.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::store {

enum class RunKind { kAnalyze, kCompare, kBenchmark, kGapAnalysis, kTraceLens };
enum class RunStatus { kRunning, kSucceeded, kFailed, kCancelled, kIncomplete };

// "analyze", "compare", "benchmark", "gap_analysis", "tracelens".
std::string_view to_string(RunKind kind);
// "running", "succeeded", "failed", "cancelled", "incomplete".
std::string_view to_string(RunStatus status);
std::optional<RunKind> run_kind_from_string(std::string_view text);
std::optional<RunStatus> run_status_from_string(std::string_view text);

struct RunStart {
  RunKind kind = RunKind::kBenchmark;
  std::string face = "cli";  // cli | mcp
  std::string command_line;
  std::string config_hash;  // e.g. hash_config(config_yaml) (run_environment.hpp)
  std::string workspace;
  std::string gpu;
  std::string working_dir;  // the git commit is looked up from here
};

struct RunRecord {
  int64_t id = 0;
  RunKind kind = RunKind::kBenchmark;
  RunStatus status = RunStatus::kRunning;
  std::string face, command_line, config_hash, git_commit, gpu, workspace, error;
  std::string started_at, finished_at;  // ISO-8601 UTC; finished_at empty while running
  int64_t pid = 0;
  std::string host;
  std::map<std::string, double> metrics;
  // Facts about where the run ran, e.g. ray_job_id and ray_cluster for a Ray job.
  std::map<std::string, std::string> metadata;
  bool workspace_exists =
      true;  // filled from disk when read; a deleted workspace is kept, marked missing
};

struct RunFilter {
  std::optional<RunKind> kind;
  std::optional<RunStatus> status;
  size_t limit = 20;  // 0 = no limit
  // false: workspace_exists is left true, no stat a run (series read thousands of runs).
  bool check_workspaces = true;
  // false: metrics left empty, for read_metrics to fill for the runs that need them.
  bool with_metrics = true;
};

class ResultsStore {
 public:
  static constexpr int kSchemaVersion = 2;

  // $MAGPIE_RESULTS_DB, or ~/.magpie/results.db ($HOME, else the passwd entry).
  static std::filesystem::path default_path();
  // Creates the parent directories and the schema (migrating an older one);
  // marks kRunning rows whose process is gone from this host as kIncomplete.
  // Throws magpie::Error naming the path on failure.
  static ResultsStore open(const std::filesystem::path& path);

  ResultsStore(ResultsStore&&) noexcept;
  ResultsStore& operator=(ResultsStore&&) noexcept;
  ~ResultsStore();

  // Records a run in kRunning (with this process's pid and host, the time, and
  // the git commit of start.working_dir); returns its id.
  int64_t begin(const RunStart& start);
  // Sets the final status, finished time, metrics (replacing any) and error.
  // Throws Error(kNotFound) for an unknown id.
  void finish(int64_t id, RunStatus status, const std::map<std::string, double>& metrics,
              const std::string& error = "");
  // Sets the workspace (and the GPU, when not empty) of a run begun before its
  // workspace existed. Throws Error(kNotFound) for an unknown id.
  void update_workspace(int64_t id, const std::filesystem::path& workspace,
                        const std::string& gpu = "");
  // Points every run recorded at `from` at `to` (a folder moved on disk, as
  // gap analysis moves an older Magpie's fixed gap_analysis/ folder); returns how many.
  size_t move_workspace(const std::filesystem::path& from, const std::filesystem::path& to);

  // Newest first.
  std::vector<RunRecord> list(const RunFilter& filter) const;
  std::optional<RunRecord> get(int64_t id) const;
  // Reads (replaces) the metrics of runs listed without them (RunFilter::with_metrics).
  void read_metrics(std::span<RunRecord> runs) const;
  // The newest run whose workspace is `workspace` (compared as absolute, normalised paths).
  std::optional<RunRecord> find_by_workspace(const std::filesystem::path& workspace) const;

  // Indexes existing workspaces under `dir` (and `dir` itself if it is one):
  // analyze_*, compare_*, benchmark_*, gap_analysis_* folders, gap_analysis/
  // (an older Magpie's folder; a link to a run folder is skipped) and
  // tracelens/ folders, read from their report files. Skips workspaces already indexed;
  // returns how many were added. Throws Error(kNotFound) if `dir` does not exist.
  size_t import_workspaces(const std::filesystem::path& dir);
  // Records one already-finished run as it is (import's building block); with
  // `unless_indexed`, atomically skips it (nullopt) when its workspace is known.
  std::optional<int64_t> insert_finished(const RunRecord& record, bool unless_indexed = false);

  // Copies every run of `source` (another store: a file or a PostgreSQL URL)
  // into this one, oldest first, with its metrics and metadata; runs get new
  // ids here. A run already here (same kind, start time, host, pid, command
  // line and workspace) is skipped, so an interrupted copy can simply be rerun.
  // Each run is one transaction. Returns how many were added.
  size_t copy_runs_from(const ResultsStore& source);

  // Adds (or replaces) metadata keys of a run. Throws Error(kNotFound) for an unknown id.
  void set_metadata(int64_t id, const std::map<std::string, std::string>& metadata);

  // Marks kRunning rows of dead processes on this host kIncomplete; returns how many.
  size_t reap_incomplete();

  const std::filesystem::path& path() const;

 private:
  struct Impl;
  enum class Skip { kNever, kWorkspaceIndexed, kSameRun };
  explicit ResultsStore(std::unique_ptr<Impl> impl);
  // Inserts `record` as it is, in one transaction that first checks `skip`.
  std::optional<int64_t> insert_unless(const RunRecord& record, Skip skip);
  std::unique_ptr<Impl> impl_;
};

// What makes two runs repeats of one config: kind, config hash, the whole
// command line, git commit, GPU and host ("" when the run has no config hash
// or command line: it repeats nothing). What the store cannot see (an engine
// rebuilt outside the repository, a YAML file edited under the same command
// line) is not in the key: results diff prints which runs it pooled.
std::string repeat_key(const RunRecord& run);
// Succeeded runs with `run`'s repeat_key whose workspace still exists, oldest
// first, `run` itself left out.
std::vector<RunRecord> find_repeats(const ResultsStore& store, const RunRecord& run);

// Absolute, lexically normalised, without a trailing slash: how workspaces are keyed.
std::string normalize_workspace(const std::filesystem::path& path);

}  // namespace magpie::store
