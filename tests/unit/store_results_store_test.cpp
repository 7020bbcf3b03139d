#include <cerrno>
#include <cstdio>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "store/detail/sqlite.hpp"
#include "store/results_store.hpp"
#include "store/run_environment.hpp"
#include "store/run_recorder.hpp"
#include "store/workspace_import.hpp"

namespace magpie::store {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("magpie_store_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

int64_t count_rows(const fs::path& db, const char* sql) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, sql, -1, &st, nullptr);
  int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(h);
  return n;
}

std::string integrity(const fs::path& db) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, nullptr);
  std::string out = sqlite3_step(st) == SQLITE_ROW
                        ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0))
                        : "?";
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

TEST(StoreResultsStore, EnumNamesRoundTrip) {
  for (auto k : {RunKind::kAnalyze, RunKind::kCompare, RunKind::kBenchmark, RunKind::kGapAnalysis,
                 RunKind::kTraceLens})
    EXPECT_EQ(run_kind_from_string(to_string(k)), k);
  for (auto s : {RunStatus::kRunning, RunStatus::kSucceeded, RunStatus::kFailed,
                 RunStatus::kCancelled, RunStatus::kIncomplete})
    EXPECT_EQ(run_status_from_string(to_string(s)), s);
  EXPECT_FALSE(run_kind_from_string("serve"));
  EXPECT_FALSE(run_status_from_string("ok"));
  EXPECT_EQ(to_string(RunKind::kGapAnalysis), "gap_analysis");
}

TEST(StoreResultsStore, DefaultPathFollowsTheEnvironment) {
  const char* old = std::getenv("MAGPIE_RESULTS_DB");
  std::string saved = old ? old : "";
  ::setenv("MAGPIE_RESULTS_DB", "/tmp/x/results.db", 1);
  EXPECT_EQ(ResultsStore::default_path(), fs::path("/tmp/x/results.db"));
  ::unsetenv("MAGPIE_RESULTS_DB");
  EXPECT_EQ(ResultsStore::default_path().filename(), "results.db");
  EXPECT_EQ(ResultsStore::default_path().parent_path().filename(), ".magpie");
  if (old) ::setenv("MAGPIE_RESULTS_DB", saved.c_str(), 1);
}

TEST(StoreResultsStore, BeginFinishGetListAndFilters) {
  auto d = temp_dir("basic");
  auto db = ResultsStore::open(d / "nested" / "dir" / "results.db");  // creates the directories
  EXPECT_TRUE(fs::exists(d / "nested" / "dir" / "results.db"));
  fs::create_directories(d / "ws1");
  RunStart s;
  s.kind = RunKind::kBenchmark;
  s.command_line = "magpie benchmark vllm -m x";
  s.config_hash = hash_config("model: x\n");
  s.workspace = (d / "ws1").string() + "/";  // trailing slash: normalised away
  s.gpu = "NVIDIA H200";
  int64_t a = db.begin(s);
  auto running = db.get(a);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->status, RunStatus::kRunning);
  EXPECT_EQ(running->pid, ::getpid());
  EXPECT_EQ(running->host, host_name());
  EXPECT_TRUE(running->finished_at.empty());
  EXPECT_EQ(running->started_at.size(), 24u);  // 2026-12-03T07:55:27.123Z
  EXPECT_EQ(running->started_at.back(), 'Z');
  EXPECT_EQ(running->config_hash, hash_config("model: x\n"));
  EXPECT_EQ(running->config_hash.size(), 16u);
  db.finish(a, RunStatus::kSucceeded,
            {{"request_throughput", 12.5}, {"ttft_p99_ms", 80}, {"nan", NAN}});
  s.kind = RunKind::kCompare;
  s.workspace.clear();
  int64_t b = db.begin(s);
  db.finish(b, RunStatus::kFailed, {}, "kernel 1 did not compile");

  auto ra = db.get(a);
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->status, RunStatus::kSucceeded);
  EXPECT_EQ(ra->metrics.size(), 2u);  // NaN is not stored
  EXPECT_DOUBLE_EQ(ra->metrics["request_throughput"], 12.5);
  EXPECT_EQ(ra->workspace, fs::weakly_canonical(d / "ws1").string());
  EXPECT_FALSE(ra->finished_at.empty());
  EXPECT_EQ(ra->gpu, "NVIDIA H200");
  EXPECT_EQ(ra->face, "cli");

  auto all = db.list({});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, b);  // newest first
  EXPECT_EQ(db.list({.kind = RunKind::kBenchmark}).size(), 1u);
  EXPECT_EQ(db.list({.status = RunStatus::kFailed}).front().error, "kernel 1 did not compile");
  EXPECT_EQ(db.list({.limit = 1}).size(), 1u);
  EXPECT_TRUE(db.list({.kind = RunKind::kTraceLens}).empty());
  EXPECT_FALSE(db.get(9999));

  // Found by any spelling of the same folder.
  auto by_ws = db.find_by_workspace(d / "nested" / ".." / "ws1");
  ASSERT_TRUE(by_ws);
  EXPECT_EQ(by_ws->id, a);

  try {
    db.finish(9999, RunStatus::kSucceeded, {});
    FAIL() << "finish of an unknown id must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("results.db"), std::string::npos);
  }
  EXPECT_THROW(db.finish(a, RunStatus::kRunning, {}), Error);
}

TEST(StoreResultsStore, DeletedWorkspaceIsMissingNotDropped) {
  auto d = temp_dir("missing");
  auto db = ResultsStore::open(d / "results.db");
  fs::create_directories(d / "ws");
  int64_t id = db.begin({.kind = RunKind::kAnalyze, .workspace = (d / "ws").string()});
  db.finish(id, RunStatus::kSucceeded, {});
  EXPECT_TRUE(db.get(id)->workspace_exists);
  fs::remove_all(d / "ws");
  auto r = db.get(id);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->workspace_exists);
  EXPECT_EQ(db.list({}).size(), 1u);
  EXPECT_FALSE(db.list({}).front().workspace_exists);
}

TEST(StoreResultsStore, WorkspaceSetAfterBegin) {
  auto d = temp_dir("setws");
  auto db = ResultsStore::open(d / "results.db");
  int64_t id = db.begin({.kind = RunKind::kBenchmark});
  db.update_workspace(id, d / "later", "MI300X");
  EXPECT_EQ(db.get(id)->gpu, "MI300X");
  EXPECT_EQ(db.find_by_workspace(d / "later")->id, id);
  EXPECT_THROW(db.update_workspace(424242, d), Error);
}

TEST(StoreResultsStore, GitCommitOfTheWorkingDir) {
  auto d = temp_dir("git");
  EXPECT_EQ(git_commit(d), "");  // not a repository
  EXPECT_EQ(git_commit(d / "nope"), "");
  EXPECT_EQ(git_commit(""), "");
  if (std::system("git --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "git not installed";
  std::string cmd =
      "cd " + d.string() +
      " && git init -q && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m x";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string c = git_commit(d);
  EXPECT_EQ(c.size(), 40u) << c;
  auto db = ResultsStore::open(d / "results.db");
  int64_t id = db.begin({.kind = RunKind::kTraceLens, .working_dir = d.string()});
  EXPECT_EQ(db.get(id)->git_commit, c);
}

TEST(StoreResultsStore, ErrorsNameTheFileAndWhatToDo) {
  auto d = temp_dir("errors");
  write(d / "not_a_db", std::string(4096, 'x'));
  try {
    ResultsStore::open(d / "not_a_db");
    FAIL() << "a non-database file must not open";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("not_a_db"), std::string::npos);
    EXPECT_NE(e.hint().find("move it aside"), std::string::npos);
  }
  // A store written by a newer schema is refused, not silently misread.
  { auto db = ResultsStore::open(d / "newer.db"); }
  sqlite3* h = nullptr;
  sqlite3_open((d / "newer.db").c_str(), &h);
  sqlite3_exec(h, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  try {
    ResultsStore::open(d / "newer.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos);
  }
  EXPECT_THROW(ResultsStore::open(""), Error);
}

TEST(StoreResultsStore, SchemaIsVersionedAndReopenIsIdempotent) {
  auto d = temp_dir("schema");
  { auto db = ResultsStore::open(d / "r.db"); }
  { auto db = ResultsStore::open(d / "r.db"); }
  EXPECT_EQ(count_rows(d / "r.db", "SELECT version FROM schema_version"),
            ResultsStore::kSchemaVersion);
  EXPECT_EQ(count_rows(d / "r.db", "SELECT count(*) FROM schema_version"), 1);
  EXPECT_EQ(
      count_rows(d / "r.db", "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"),
      1);
}

// Several threads, each with its own store, plus several sharing one: every
// write lands, nothing is corrupted.
TEST(StoreResultsStore, ConcurrentThreadsNeverLoseOrCorrupt) {
  auto d = temp_dir("threads");
  const fs::path path = d / "results.db";
  auto shared = ResultsStore::open(path);
  constexpr int kThreads = 6, kRuns = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::optional<ResultsStore> own;
        if (t % 2 == 0) own.emplace(ResultsStore::open(path));
        ResultsStore& db = own ? *own : shared;
        for (int i = 0; i < kRuns; ++i) {
          int64_t id =
              db.begin({.kind = RunKind::kAnalyze, .command_line = "t" + std::to_string(t)});
          db.finish(id, RunStatus::kSucceeded, {{"thread", double(t)}, {"i", double(i)}});
          if (i % 5 == 0) (void)db.list({.limit = 5});
        }
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(shared.list({.limit = 0}).size(), static_cast<size_t>(kThreads * kRuns));
  EXPECT_EQ(count_rows(path, "SELECT count(*) FROM run_metrics"), 2 * kThreads * kRuns);
  EXPECT_EQ(integrity(path), "ok");
}

// Several processes opening a fresh store at once (schema creation races too) and writing.
TEST(StoreResultsStore, ConcurrentProcessesNeverLoseOrCorrupt) {
  auto d = temp_dir("procs");
  const fs::path path = d / "results.db";
  constexpr int kProcs = 5, kRuns = 30;
  // The children wait on a pipe and are released together, so their first
  // opens (which switch the new file to WAL) really do race.
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char byte;
      while (::read(gate[0], &byte, 1) < 0 && errno == EINTR) {
      }
      int rc = 0;
      try {
        auto db = ResultsStore::open(path);
        for (int i = 0; i < kRuns; ++i) {
          int64_t id =
              db.begin({.kind = RunKind::kBenchmark, .command_line = "p" + std::to_string(p)});
          db.finish(id, i % 3 ? RunStatus::kSucceeded : RunStatus::kFailed, {{"i", double(i)}});
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", p, e.what());  // why, when this ever fails
        rc = 1;
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // end of file: every child starts now
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto db = ResultsStore::open(path);
  auto all = db.list({.limit = 0});
  EXPECT_EQ(all.size(), static_cast<size_t>(kProcs * kRuns));
  std::set<int64_t> pids;
  for (const auto& r : all) {
    pids.insert(r.pid);
    EXPECT_NE(r.status, RunStatus::kRunning);
  }
  EXPECT_EQ(pids.size(), static_cast<size_t>(kProcs));
  EXPECT_EQ(integrity(path), "ok");
}

// A new file whose lock another connection holds: the WAL switch waits for it,
// and past the busy timeout fails naming the file and what to do.
TEST(StoreResultsStore, WalSwitchWaitsForTheLockThenNamesTheFile) {
  auto d = temp_dir("walwait");
  const fs::path path = d / "results.db";
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "CREATE TABLE t (x); BEGIN EXCLUSIVE", nullptr, nullptr, nullptr),
            SQLITE_OK);

  try {
    (void)detail::Database::open(path, 200);
    ADD_FAILURE() << "opened a store whose lock another connection holds";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnreadable);
    EXPECT_NE(std::string(e.what()).find("WAL"), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), path.string());
    EXPECT_NE(e.hint().find("stuck magpie process"), std::string::npos) << e.hint();
  }

  // Released while the opener waits: the open succeeds in WAL mode.
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  });
  auto db = detail::Database::open(path, 30000);
  release.join();
  auto mode = db.prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.column_text(0), "wal");
  sqlite3_close(holder);
}

// A real child begins a run and is SIGKILLed: the next open marks the run
// incomplete; a run of a live process stays running.
TEST(StoreResultsStore, KilledProcessLeavesAnIncompleteRun) {
  auto d = temp_dir("killed");
  const fs::path path = d / "results.db";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    int64_t id = -1;
    try {
      auto db = ResultsStore::open(path);
      id =
          db.begin({.kind = RunKind::kBenchmark, .command_line = "magpie benchmark vllm (doomed)"});
    } catch (...) {
    }
    (void)!::write(fds[1], &id, sizeof id);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  int64_t id = -1;
  ASSERT_EQ(::read(fds[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  ::close(fds[0]);
  ASSERT_GT(id, 0);
  {
    // While the child lives its run is running, and our own stays running too.
    auto db = ResultsStore::open(path);
    EXPECT_EQ(db.get(id)->status, RunStatus::kRunning);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto db = ResultsStore::open(path);
  int64_t mine = db.begin({.kind = RunKind::kAnalyze});
  auto r = db.get(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, RunStatus::kIncomplete);
  EXPECT_FALSE(r->finished_at.empty());
  EXPECT_NE(r->error.find(std::to_string(pid)), std::string::npos) << r->error;
  auto again = ResultsStore::open(path);
  EXPECT_EQ(again.get(mine)->status, RunStatus::kRunning);  // this process is alive
  EXPECT_EQ(again.reap_incomplete(), 0u);
}

TEST(StoreResultsStore, RecorderRecordsAndNeverThrows) {
  auto d = temp_dir("recorder");
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  int64_t finished_id = 0, abandoned_id = 0;
  {
    RunRecorder rec({.kind = RunKind::kGapAnalysis, .face = "mcp"}, warn, d / "r.db");
    ASSERT_TRUE(rec.id());
    finished_id = *rec.id();
    rec.set_workspace(d / "gap_analysis");
    rec.finish(RunStatus::kSucceeded, {{"num_ranks", 2}});
  }
  {
    RunRecorder rec({.kind = RunKind::kTraceLens}, warn, d / "r.db");
    abandoned_id = rec.id().value_or(0);
  }
  auto db = ResultsStore::open(d / "r.db");
  EXPECT_EQ(db.get(finished_id)->status, RunStatus::kSucceeded);
  EXPECT_EQ(db.get(finished_id)->face, "mcp");
  EXPECT_EQ(db.get(abandoned_id)->status, RunStatus::kFailed);
  EXPECT_TRUE(warnings.empty());
  // An unusable store: a warning, no exception, the run goes on.
  write(d / "blocker", "a file where a directory should be");
  RunRecorder broken({.kind = RunKind::kAnalyze}, warn, d / "blocker" / "r.db");
  EXPECT_FALSE(broken.id());
  broken.finish(RunStatus::kSucceeded);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("blocker"), std::string::npos);
}

TEST(StoreResultsStore, ImportIndexesWorkspacesOnceFromTheirReports) {
  auto d = temp_dir("import");
  const fs::path out = d / "results";
  write(out / "benchmark_vllm_20260101_000000" / "benchmark_report.json",
        R"({"success": true, "complete": true, "execution_time": 42.0, "errors": [],
            "throughput": {"request_throughput": 3.5, "output_throughput": 420.0, "completed_requests": 100,
                           "failed_requests": 0, "duration_seconds": 28.6},
            "latency": {"ttft": {"mean_ms": 50.0, "median_ms": 45.0, "p99_ms": 120.0}}})");
  write(out / "benchmark_vllm_20260101_000000" / "config.yaml", "model: m\n");
  write(out / "benchmark_vllm_20260102_000000" / "benchmark_report.json",
        R"({"success": false, "complete": false, "errors": ["server died during case c1"]})");
  write(out / "compare_20260101_000000" / "compare_report.json",
        R"({"mode": "compare", "summary": [
              {"kernel_id": "naive", "compiling_state": "SUCCESS", "correctness_state": "SUCCESS",
               "performance_state": "SUCCESS", "score": 1.0, "performance_summary": {"median_us": 10.0}},
              {"kernel_id": "tiled", "compiling_state": "SUCCESS", "correctness_state": "SUCCESS",
               "performance_state": "SUCCESS", "score": 2.0, "performance_summary": {"median_us": 5.0}}],
            "results": {"verdicts": [{"kernel_id": "naive", "role": "baseline"},
                                     {"kernel_id": "tiled", "speedup": 2.0, "verdict": "FASTER"}], "winner": 1}})");
  write(out / "analyze_vadd_20260101_000000" / "analyze_report.json",
        R"({"mode": "analyze", "summary": [{"kernel_id": "vadd", "compiling_state": "FAILED",
            "correctness_state": "SKIPPED", "performance_state": "SKIPPED", "score": 0}],
            "results": [{"errors": ["nvcc: not found"], "extra": {"kernel_id": "vadd"}}]})");
  write(out / "gap_analysis" / "gap_analysis.json",
        R"({"total_duration_us": 1234.5, "num_ranks": 1, "top_kernels": [{}, {}], "errors": []})");
  write(out / "tracelens" / "tracelens_manifest.json",
        R"({"output_files": ["a.csv", "b.csv", "m.json"], "errors": [], "timing_s": {"total": 1.5},
            "stage_results": {"decode": {"summary": {"kernel_time_us": 250.0}}}})");
  write(out / "benchmark_half_written" / "benchmark_report.json", "{\"success\": tr");
  write(out / "notes" / "readme.txt", "not a workspace");

  EXPECT_EQ(find_workspaces(out).size(), 7u);
  auto db = ResultsStore::open(d / "results.db");
  EXPECT_EQ(db.import_workspaces(out), 6u);                   // the half-written report is skipped
  EXPECT_EQ(db.import_workspaces(out), 0u);                   // already indexed
  EXPECT_EQ(db.import_workspaces(out / "gap_analysis"), 0u);  // a workspace itself
  EXPECT_THROW(db.import_workspaces(d / "nope"), Error);

  auto bench = db.find_by_workspace(out / "benchmark_vllm_20260101_000000");
  ASSERT_TRUE(bench);
  EXPECT_EQ(bench->kind, RunKind::kBenchmark);
  EXPECT_EQ(bench->status, RunStatus::kSucceeded);
  EXPECT_EQ(bench->face, "import");
  EXPECT_DOUBLE_EQ(bench->metrics["request_throughput"], 3.5);
  EXPECT_DOUBLE_EQ(bench->metrics["ttft.p99_ms"], 120.0);
  EXPECT_DOUBLE_EQ(bench->metrics["duration_seconds"], 28.6);
  EXPECT_EQ(bench->config_hash, hash_config("model: m\n"));
  auto start = parse_iso_utc(bench->started_at), end = parse_iso_utc(bench->finished_at);
  ASSERT_TRUE(start && end);
  EXPECT_NEAR(*end - *start, 42.0, 1.0);

  auto died = db.find_by_workspace(out / "benchmark_vllm_20260102_000000");
  EXPECT_EQ(died->status, RunStatus::kIncomplete);
  EXPECT_NE(died->error.find("server died"), std::string::npos);

  auto cmp = db.find_by_workspace(out / "compare_20260101_000000");
  EXPECT_EQ(cmp->kind, RunKind::kCompare);
  EXPECT_DOUBLE_EQ(cmp->metrics["tiled.median_ns"], 5000.0);
  EXPECT_DOUBLE_EQ(cmp->metrics["all_correct"], 1.0);
  EXPECT_DOUBLE_EQ(cmp->metrics["tiled.speedup"], 2.0);
  EXPECT_DOUBLE_EQ(cmp->metrics["winner_index"], 1.0);

  auto an = db.find_by_workspace(out / "analyze_vadd_20260101_000000");
  EXPECT_EQ(an->status, RunStatus::kFailed);
  EXPECT_EQ(an->error, "vadd: nvcc: not found");
  EXPECT_DOUBLE_EQ(an->metrics["all_correct"], 0.0);

  auto gap = db.find_by_workspace(out / "gap_analysis");
  EXPECT_EQ(gap->kind, RunKind::kGapAnalysis);
  EXPECT_DOUBLE_EQ(gap->metrics["top_kernels"], 2.0);
  auto tl = db.find_by_workspace(out / "tracelens");
  EXPECT_EQ(tl->kind, RunKind::kTraceLens);
  EXPECT_EQ(tl->status, RunStatus::kSucceeded);
  EXPECT_DOUBLE_EQ(tl->metrics["decode_kernel_time_us"], 250.0);
  EXPECT_DOUBLE_EQ(tl->metrics["stages"], 1.0);
  EXPECT_EQ(db.list({.kind = RunKind::kBenchmark}).size(), 2u);
}

// Gap analysis writes a folder per run and links gap_analysis to the newest:
// import takes each run folder once and skips the link; a folder moved on disk
// takes its rows along (move_workspace).
TEST(StoreResultsStore, GapRunFoldersImportOnceAndMoveWithTheirRows) {
  auto d = temp_dir("gap_runs");
  const fs::path out = d / "out";
  const std::string report = R"({"total_duration_us": 5.0, "num_ranks": 1, "top_kernels": [{}], "errors": []})";
  write(out / "gap_analysis_20260101_000000" / "gap_analysis.json", report);
  write(out / "gap_analysis_20260101_000000_2" / "gap_analysis.json", report);
  fs::create_directory_symlink("gap_analysis_20260101_000000_2", out / "gap_analysis");
  EXPECT_EQ(find_workspaces(out).size(), 2u);
  auto db = ResultsStore::open(d / "results.db");
  EXPECT_EQ(db.import_workspaces(out), 2u);
  EXPECT_EQ(db.import_workspaces(out / "gap_analysis"), 0u);  // the link: its run is known
  auto run = db.find_by_workspace(out / "gap_analysis_20260101_000000");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->kind, RunKind::kGapAnalysis);

  fs::rename(out / "gap_analysis_20260101_000000", out / "moved");
  EXPECT_EQ(db.move_workspace(out / "gap_analysis_20260101_000000", out / "moved"), 1u);
  auto moved = db.find_by_workspace(out / "moved");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->id, run->id);
  fs::remove_all(d);
}

TEST(StoreResultsStore, IsoTimesRoundTrip) {
  auto now = iso_utc_now();
  auto t = parse_iso_utc(now);
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t, static_cast<double>(std::time(nullptr)), 5.0);
  EXPECT_FALSE(parse_iso_utc("yesterday"));
  EXPECT_EQ(*parse_iso_utc("1970-01-01T00:01:00Z"), 60.0);
}

}  // namespace
}  // namespace magpie::store

namespace magpie::store {
namespace {

TEST(StoreResultsStore, MetadataIsStoredMergedAndMigratedInto) {
  auto d = temp_dir("metadata");
  // A version-1 file (before run_metadata) keeps its runs and gains the table.
  {
    sqlite3* h = nullptr;
    sqlite3_open((d / "v1.db").c_str(), &h);
    sqlite3_exec(h,
                 "CREATE TABLE schema_version (version INTEGER NOT NULL);"
                 "INSERT INTO schema_version VALUES (1);"
                 "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
                 "status TEXT NOT NULL, face TEXT NOT NULL DEFAULT 'cli', command_line TEXT NOT NULL "
                 "DEFAULT '', config_hash TEXT NOT NULL DEFAULT '', git_commit TEXT NOT NULL DEFAULT "
                 "'', gpu TEXT NOT NULL DEFAULT '', workspace TEXT NOT NULL DEFAULT '', error TEXT "
                 "NOT NULL DEFAULT '', started_at TEXT NOT NULL, finished_at TEXT NOT NULL DEFAULT "
                 "'', pid INTEGER NOT NULL DEFAULT 0, pid_start_ticks INTEGER, host TEXT NOT NULL "
                 "DEFAULT '');"
                 "CREATE TABLE run_metrics (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE "
                 "CASCADE, name TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (run_id, name)) "
                 "WITHOUT ROWID;"
                 "INSERT INTO runs (kind, status, started_at) VALUES ('benchmark', 'succeeded', "
                 "'2026-01-01T00:00:00.000Z');",
                 nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  auto db = ResultsStore::open(d / "v1.db");
  EXPECT_EQ(count_rows(d / "v1.db", "SELECT version FROM schema_version"), ResultsStore::kSchemaVersion);
  auto old = db.get(1);
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->metadata.empty());

  RunRecord r;
  r.kind = RunKind::kGapAnalysis;
  r.status = RunStatus::kSucceeded;
  r.workspace = (d / "ws").string();
  r.metadata = {{"ray_job_id", "magpie-x-1"}, {"ray_cluster", "http://127.0.0.1:8265"}};
  auto id = db.insert_finished(r);
  ASSERT_TRUE(id);
  db.set_metadata(*id, {{"ray_status", "SUCCEEDED"}, {"ray_cluster", "http://head:8265"}});
  auto got = db.get(*id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->metadata, (std::map<std::string, std::string>{{"ray_job_id", "magpie-x-1"},
                                                               {"ray_cluster", "http://head:8265"},
                                                               {"ray_status", "SUCCEEDED"}}));
  EXPECT_EQ(db.list({}).front().metadata.at("ray_job_id"), "magpie-x-1");
  EXPECT_THROW(db.set_metadata(9999, {{"k", "v"}}), Error);
}

}  // namespace
}  // namespace magpie::store
