#include "store/results_store.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <span>
#include <unordered_map>

#include "core/error.hpp"
#include "store/detail/postgres.hpp"
#include "store/detail/sqlite.hpp"
#include "store/run_environment.hpp"
#include "store/workspace_import.hpp"

namespace magpie::store {

namespace fs = std::filesystem;
using detail::Database;
using detail::Statement;
using detail::WriteTransaction;

namespace {

constexpr int kBusyTimeoutMs = 30000;

// migrations[v] takes the schema from version v to v + 1. Append, never edit.
constexpr const char* kMigrations[] = {
    // 0 → 1: runs and their metrics.
    R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  face TEXT NOT NULL DEFAULT 'cli',
  command_line TEXT NOT NULL DEFAULT '',
  config_hash TEXT NOT NULL DEFAULT '',
  git_commit TEXT NOT NULL DEFAULT '',
  gpu TEXT NOT NULL DEFAULT '',
  workspace TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start_ticks INTEGER,
  host TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_workspace ON runs(workspace);
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE run_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
)sql",
    // 1 → 2: free-form facts about a run, e.g. the Ray job and cluster that ran it.
    R"sql(
CREATE TABLE run_metadata (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
)sql",
};
static_assert(std::size(kMigrations) == ResultsStore::kSchemaVersion);

// The same schema in PostgreSQL's dialect, version for version. Append, never edit.
constexpr const char* kPostgresMigrations[] = {
    // 0 → 1: runs and their metrics.
    R"sql(
CREATE TABLE runs (
  id BIGSERIAL PRIMARY KEY,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  face TEXT NOT NULL DEFAULT 'cli',
  command_line TEXT NOT NULL DEFAULT '',
  config_hash TEXT NOT NULL DEFAULT '',
  git_commit TEXT NOT NULL DEFAULT '',
  gpu TEXT NOT NULL DEFAULT '',
  workspace TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL DEFAULT '',
  pid BIGINT NOT NULL DEFAULT 0,
  pid_start_ticks BIGINT,
  host TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_workspace ON runs(workspace);
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE run_metrics (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (run_id, name)
);
)sql",
    // 1 → 2: free-form facts about a run.
    R"sql(
CREATE TABLE run_metadata (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
)sql",
};
static_assert(std::size(kPostgresMigrations) == ResultsStore::kSchemaVersion);

// LIMIT for "no limit" that both SQLite and PostgreSQL accept.
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

constexpr const char* kColumns =
    "id, kind, status, face, command_line, config_hash, git_commit, gpu, workspace, error, "
    "started_at, "
    "finished_at, pid, host";

void migrate(Database& db) {
  WriteTransaction tx(db);
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  int version = 0;
  bool has_row = false;
  {
    auto q = db.prepare("SELECT version FROM schema_version");
    if (q.step()) {
      version = static_cast<int>(q.column_int(0));
      has_row = true;
    }
  }
  if (version > ResultsStore::kSchemaVersion) {
    throw Error(
        ErrorKind::kBadFormat,
        fmt::format("results store has schema version {}, newer than this magpie knows ({})",
                    version, ResultsStore::kSchemaVersion),
        db.path().string(), std::nullopt,
        "use a newer magpie, or point MAGPIE_RESULTS_DB at another store");
  }
  const auto& migrations = db.is_postgres() ? kPostgresMigrations : kMigrations;
  for (int v = version; v < ResultsStore::kSchemaVersion; ++v) db.exec(migrations[v]);
  // A store at this version must hold every table; say which one is gone
  // here rather than fail on the first query that needs it.
  for (const char* table : {"runs", "run_metrics", "run_metadata"}) {
    auto q = db.prepare(db.is_postgres()
                            ? "SELECT 1 WHERE to_regclass(?1) IS NOT NULL"
                            : "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    q.bind(1, std::string_view(table));
    if (!q.step()) {
      throw Error(ErrorKind::kNotFound,
                  fmt::format("results store at schema version {} has no table {}", version, table),
                  db.path().string(), std::nullopt,
                  "restore the store from a backup, or point MAGPIE_RESULTS_DB at a new store "
                  "(a new file, or an empty PostgreSQL database) and re-index workspaces with "
                  "`magpie results import DIR`");
    }
  }
  if (!has_row) {
    db.prepare("INSERT INTO schema_version (version) VALUES (?1)")
        .bind(1, int64_t{ResultsStore::kSchemaVersion})
        .run();
  } else if (version != ResultsStore::kSchemaVersion) {
    db.prepare("UPDATE schema_version SET version = ?1")
        .bind(1, int64_t{ResultsStore::kSchemaVersion})
        .run();
  }
  tx.commit();
}

RunRecord read_row(const Statement& q, bool check_workspace) {
  RunRecord r;
  r.id = q.column_int(0);
  r.kind = run_kind_from_string(q.column_text(1)).value_or(RunKind::kBenchmark);
  r.status = run_status_from_string(q.column_text(2)).value_or(RunStatus::kIncomplete);
  r.face = q.column_text(3);
  r.command_line = q.column_text(4);
  r.config_hash = q.column_text(5);
  r.git_commit = q.column_text(6);
  r.gpu = q.column_text(7);
  r.workspace = q.column_text(8);
  r.error = q.column_text(9);
  r.started_at = q.column_text(10);
  r.finished_at = q.column_text(11);
  r.pid = q.column_int(12);
  r.host = q.column_text(13);
  std::error_code ec;
  r.workspace_exists = !check_workspace || r.workspace.empty() || fs::exists(r.workspace, ec);
  return r;
}

void write_metrics(Database& db, int64_t id, const std::map<std::string, double>& metrics) {
  db.prepare("DELETE FROM run_metrics WHERE run_id = ?1").bind(1, id).run();
  auto ins = db.prepare("INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)");
  for (const auto& [name, value] : metrics) {
    if (!std::isfinite(value))
      continue;  // SQLite stores NaN as NULL; a missing metric says the same
    ins.bind(1, id).bind(2, name).bind(3, value).run();
    ins.reset();
  }
}

void merge_metadata(Database& db, int64_t id, const std::map<std::string, std::string>& metadata) {
  auto ins = db.prepare(
      "INSERT INTO run_metadata (run_id, key, value) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value");
  for (const auto& [key, value] : metadata) {
    ins.bind(1, id).bind(2, key).bind(3, value).run();
    ins.reset();
  }
}

}  // namespace

std::string_view to_string(RunKind kind) {
  switch (kind) {
    case RunKind::kAnalyze:
      return "analyze";
    case RunKind::kCompare:
      return "compare";
    case RunKind::kBenchmark:
      return "benchmark";
    case RunKind::kGapAnalysis:
      return "gap_analysis";
    case RunKind::kTraceLens:
      return "tracelens";
  }
  return "benchmark";
}

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kSucceeded:
      return "succeeded";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kCancelled:
      return "cancelled";
    case RunStatus::kIncomplete:
      return "incomplete";
  }
  return "incomplete";
}

std::optional<RunKind> run_kind_from_string(std::string_view text) {
  for (auto k : {RunKind::kAnalyze, RunKind::kCompare, RunKind::kBenchmark, RunKind::kGapAnalysis,
                 RunKind::kTraceLens})
    if (to_string(k) == text) return k;
  if (text == "gap" || text == "gap-analysis") return RunKind::kGapAnalysis;
  return std::nullopt;
}

std::optional<RunStatus> run_status_from_string(std::string_view text) {
  for (auto s : {RunStatus::kRunning, RunStatus::kSucceeded, RunStatus::kFailed,
                 RunStatus::kCancelled, RunStatus::kIncomplete})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

std::string normalize_workspace(const fs::path& path) {
  if (path.empty()) return {};
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) p = fs::absolute(path).lexically_normal();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

struct ResultsStore::Impl {
  Database db;
  std::string host = host_name();
  // One connection per store, used by one thread at a time; other stores (in
  // this or other processes) have their own connections and meet in SQLite's locks.
  std::mutex mutex;

  std::vector<RunRecord> query(std::string_view where_and_order,
                               const std::vector<std::string>& text_params, int64_t limit,
                               bool check_workspaces = true, bool with_metrics = true) {
    auto q = db.prepare(fmt::format("SELECT {} FROM runs {} LIMIT ?{}", kColumns, where_and_order,
                                    text_params.size() + 1));
    for (size_t i = 0; i < text_params.size(); ++i) q.bind(static_cast<int>(i + 1), text_params[i]);
    q.bind(static_cast<int>(text_params.size() + 1), limit);
    std::vector<RunRecord> out;
    while (q.step()) out.push_back(read_row(q, check_workspaces));
    attach(out, with_metrics, true);
    return out;
  }

  // Reads the metrics and/or metadata of `runs` (replacing what they hold).
  // Many runs in a few queries, not two a run: on a PostgreSQL store across a
  // network each query is a round trip.
  void attach(std::span<RunRecord> runs, bool metrics, bool metadata) {
    auto read = [&](const std::string& where, auto&& find) {
      if (metrics) {
        auto m = db.prepare(fmt::format("SELECT run_id, name, value FROM run_metrics {}", where));
        while (m.step())
          if (RunRecord* r = find(m.column_int(0))) r->metrics[m.column_text(1)] = m.column_double(2);
      }
      if (metadata) {
        auto d = db.prepare(fmt::format("SELECT run_id, key, value FROM run_metadata {}", where));
        while (d.step())
          if (RunRecord* r = find(d.column_int(0))) r->metadata[d.column_text(1)] = d.column_text(2);
      }
    };
    constexpr size_t kIdsPerQuery = 500;
    if (runs.size() > kIdsPerQuery) {
      // Most of the store (`series`, `check`, `site` read every run): one range scan of each
      // table's primary key, rows of runs not asked for skipped, costs a third of the
      // IN-list probes (docs/PERFORMANCE.md, "Results store: site and history").
      int64_t lo = runs.front().id, hi = runs.front().id;
      std::unordered_map<int64_t, RunRecord*> by_id;
      by_id.reserve(runs.size());
      for (auto& r : runs) {
        lo = std::min(lo, r.id);
        hi = std::max(hi, r.id);
        by_id[r.id] = &r;
      }
      if (static_cast<double>(hi - lo + 1) <= 4.0 * static_cast<double>(runs.size())) {
        read(fmt::format("WHERE run_id BETWEEN {} AND {}", lo, hi), [&](int64_t id) {
          auto it = by_id.find(id);
          return it == by_id.end() ? nullptr : it->second;
        });
        return;
      }
    }
    for (size_t begin = 0; begin < runs.size(); begin += kIdsPerQuery) {
      const size_t end = std::min(runs.size(), begin + kIdsPerQuery);
      std::map<int64_t, RunRecord*> by_id;
      std::string ids;
      for (size_t i = begin; i < end; ++i) {
        by_id[runs[i].id] = &runs[i];
        ids += fmt::format("{}{}", ids.empty() ? "" : ",", runs[i].id);
      }
      read(fmt::format("WHERE run_id IN ({})", ids), [&](int64_t id) { return by_id.at(id); });
    }
  }
};

ResultsStore::ResultsStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ResultsStore::ResultsStore(ResultsStore&&) noexcept = default;
ResultsStore& ResultsStore::operator=(ResultsStore&&) noexcept = default;
ResultsStore::~ResultsStore() = default;

const fs::path& ResultsStore::path() const { return impl_->db.path(); }

fs::path ResultsStore::default_path() {
  if (const char* env = std::getenv("MAGPIE_RESULTS_DB"); env && *env) return env;
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (!home || !*home) {
    throw Error(ErrorKind::kUsage,
                "cannot place the results store: neither HOME nor a passwd home is set", "",
                std::nullopt, "set MAGPIE_RESULTS_DB=/path/to/results.db");
  }
  return fs::path(home) / ".magpie" / "results.db";
}

ResultsStore ResultsStore::open(const fs::path& path) {
  if (path.empty()) {
    throw Error(ErrorKind::kUsage, "results store path is empty", "", std::nullopt,
                "unset MAGPIE_RESULTS_DB to use ~/.magpie/results.db, or set it to a file path");
  }
  std::error_code ec;
  if (!detail::is_postgres_url(path.native()) && path.has_parent_path() &&
      !fs::is_directory(path.parent_path(), ec)) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) {
      throw Error(ErrorKind::kUnreadable,
                  fmt::format("cannot create the results store's directory: {}", ec.message()),
                  path.string(), std::nullopt,
                  "create it, or point MAGPIE_RESULTS_DB at a writable location");
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->db = Database::open(path, kBusyTimeoutMs);
  migrate(impl->db);
  ResultsStore store(std::move(impl));
  store.reap_incomplete();
  return store;
}

size_t ResultsStore::reap_incomplete() {
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  struct Candidate {
    int64_t id, pid;
    std::optional<int64_t> ticks;
  };
  std::vector<Candidate> dead;
  {
    auto q = db.prepare(
        "SELECT id, pid, pid_start_ticks FROM runs WHERE status = 'running' AND host = ?1");
    q.bind(1, impl_->host);
    while (q.step()) {
      Candidate c{q.column_int(0), q.column_int(1), std::nullopt};
      if (!q.column_is_null(2)) c.ticks = q.column_int(2);
      if (!process_alive(c.pid, c.ticks)) dead.push_back(c);
    }
  }
  if (dead.empty()) return 0;
  size_t marked = 0;
  WriteTransaction tx(db);
  auto upd = db.prepare(
      "UPDATE runs SET status = 'incomplete', finished_at = ?1, "
      "error = CASE WHEN error = '' THEN ?2 ELSE error || '; ' || ?2 END "
      "WHERE id = ?3 AND status = 'running'");
  const std::string now = iso_utc_now();
  for (const auto& c : dead) {
    upd.bind(1, now)
        .bind(2, fmt::format("process {} on {} ended before the run finished (killed or crashed)",
                             c.pid, impl_->host))
        .bind(3, c.id)
        .run();
    marked += static_cast<size_t>(db.changes());
    upd.reset();
  }
  tx.commit();
  return marked;
}

int64_t ResultsStore::begin(const RunStart& start) {
  // Outside the lock: git may take a few milliseconds.
  const std::string commit = git_commit(start.working_dir);
  const int64_t pid = ::getpid();
  const auto ticks = process_start_ticks(pid);
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  WriteTransaction tx(db);
  auto ins = db.prepare(
      "INSERT INTO runs (kind, status, face, command_line, config_hash, git_commit, gpu, "
      "workspace, started_at, "
      "pid, pid_start_ticks, host) VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
      "?11)");
  ins.bind(1, to_string(start.kind))
      .bind(2, start.face)
      .bind(3, start.command_line)
      .bind(4, start.config_hash)
      .bind(5, commit)
      .bind(6, start.gpu)
      .bind(7, normalize_workspace(start.workspace))
      .bind(8, iso_utc_now())
      .bind(9, pid)
      .bind(10, ticks.value_or(-1))
      .bind(11, impl_->host);
  ins.run();
  int64_t id = db.last_insert_id();
  tx.commit();
  return id;
}

void ResultsStore::finish(int64_t id, RunStatus status,
                          const std::map<std::string, double>& metrics, const std::string& error) {
  if (status == RunStatus::kRunning) {
    throw Error(ErrorKind::kUsage,
                fmt::format("run {}: finish() needs a final status, not running", id),
                path().string());
  }
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  WriteTransaction tx(db);
  db.prepare("UPDATE runs SET status = ?1, finished_at = ?2, error = ?3 WHERE id = ?4")
      .bind(1, to_string(status))
      .bind(2, iso_utc_now())
      .bind(3, error)
      .bind(4, id)
      .run();
  if (db.changes() == 0) {
    throw Error(ErrorKind::kNotFound, fmt::format("no run with id {} in the results store", id),
                path().string(), std::nullopt, "`magpie results list` shows the ids");
  }
  write_metrics(db, id, metrics);
  tx.commit();
}

size_t ResultsStore::move_workspace(const fs::path& from, const fs::path& to) {
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  WriteTransaction tx(db);
  db.prepare("UPDATE runs SET workspace = ?1 WHERE workspace = ?2")
      .bind(1, normalize_workspace(to))
      .bind(2, fs::absolute(from).lexically_normal().string())
      .run();
  const auto n = static_cast<size_t>(db.changes());
  tx.commit();
  return n;
}

void ResultsStore::update_workspace(int64_t id, const fs::path& workspace, const std::string& gpu) {
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  WriteTransaction tx(db);
  db.prepare(
        "UPDATE runs SET workspace = ?1, gpu = CASE WHEN ?2 = '' THEN gpu ELSE ?2 END WHERE id = "
        "?3")
      .bind(1, normalize_workspace(workspace))
      .bind(2, gpu)
      .bind(3, id)
      .run();
  if (db.changes() == 0) {
    throw Error(ErrorKind::kNotFound, fmt::format("no run with id {} in the results store", id),
                path().string());
  }
  tx.commit();
}

std::vector<RunRecord> ResultsStore::list(const RunFilter& filter) const {
  std::string where = "WHERE 1 = 1";
  std::vector<std::string> params;
  if (filter.kind) {
    params.emplace_back(to_string(*filter.kind));
    where += fmt::format(" AND kind = ?{}", params.size());
  }
  if (filter.status) {
    params.emplace_back(to_string(*filter.status));
    where += fmt::format(" AND status = ?{}", params.size());
  }
  std::lock_guard lock(impl_->mutex);
  return impl_->query(where + " ORDER BY id DESC", params,
                      filter.limit == 0 ? kNoLimit : static_cast<int64_t>(filter.limit),
                      filter.check_workspaces, filter.with_metrics);
}

void ResultsStore::read_metrics(std::span<RunRecord> runs) const {
  for (auto& r : runs) r.metrics.clear();
  std::lock_guard lock(impl_->mutex);
  impl_->attach(runs, true, false);
}

std::optional<RunRecord> ResultsStore::get(int64_t id) const {
  std::lock_guard lock(impl_->mutex);
  auto rows = impl_->query(fmt::format("WHERE id = {}", id), {}, 1);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<RunRecord> ResultsStore::find_by_workspace(const fs::path& workspace) const {
  std::lock_guard lock(impl_->mutex);
  auto rows =
      impl_->query("WHERE workspace = ?1 ORDER BY id DESC", {normalize_workspace(workspace)}, 1);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<int64_t> ResultsStore::insert_finished(const RunRecord& r, bool unless_indexed) {
  return insert_unless(r, unless_indexed ? Skip::kWorkspaceIndexed : Skip::kNever);
}

size_t ResultsStore::copy_runs_from(const ResultsStore& source) {
  auto runs = source.list({.limit = 0});
  std::reverse(runs.begin(), runs.end());  // oldest first: new ids keep the order
  size_t added = 0;
  for (const auto& r : runs)
    if (insert_unless(r, Skip::kSameRun)) ++added;
  return added;
}

std::optional<int64_t> ResultsStore::insert_unless(const RunRecord& r, Skip skip) {
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  WriteTransaction tx(db);
  if (skip == Skip::kWorkspaceIndexed) {
    auto q = db.prepare("SELECT 1 FROM runs WHERE workspace = ?1 LIMIT 1");
    q.bind(1, normalize_workspace(r.workspace));
    if (q.step()) return std::nullopt;
  } else if (skip == Skip::kSameRun) {
    auto q = db.prepare(
        "SELECT 1 FROM runs WHERE kind = ?1 AND started_at = ?2 AND host = ?3 AND pid = ?4 AND "
        "command_line = ?5 AND workspace = ?6 LIMIT 1");
    q.bind(1, to_string(r.kind))
        .bind(2, r.started_at)
        .bind(3, r.host)
        .bind(4, r.pid)
        .bind(5, r.command_line)
        .bind(6, normalize_workspace(r.workspace));
    if (q.step()) return std::nullopt;
  }
  auto ins = db.prepare(
      "INSERT INTO runs (kind, status, face, command_line, config_hash, git_commit, gpu, "
      "workspace, error, "
      "started_at, finished_at, pid, host) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
      "?12, ?13)");
  ins.bind(1, to_string(r.kind))
      .bind(2, to_string(r.status))
      .bind(3, r.face)
      .bind(4, r.command_line)
      .bind(5, r.config_hash)
      .bind(6, r.git_commit)
      .bind(7, r.gpu)
      .bind(8, normalize_workspace(r.workspace))
      .bind(9, r.error)
      .bind(10, r.started_at.empty() ? iso_utc_now() : r.started_at)
      .bind(11, r.finished_at)
      .bind(12, r.pid)
      .bind(13, r.host);
  ins.run();
  int64_t id = db.last_insert_id();
  write_metrics(db, id, r.metrics);
  merge_metadata(db, id, r.metadata);
  tx.commit();
  return id;
}

void ResultsStore::set_metadata(int64_t id, const std::map<std::string, std::string>& metadata) {
  std::lock_guard lock(impl_->mutex);
  auto& db = impl_->db;
  WriteTransaction tx(db);
  {
    auto q = db.prepare("SELECT 1 FROM runs WHERE id = ?1");
    q.bind(1, id);
    if (!q.step())
      throw Error(ErrorKind::kNotFound, fmt::format("no run with id {} in the results store", id),
                  path().string());
  }
  merge_metadata(db, id, metadata);
  tx.commit();
}

size_t ResultsStore::import_workspaces(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorKind::kNotFound, "no such directory to import workspaces from", dir.string(),
                std::nullopt, "pass the -o/--output-dir of earlier magpie runs");
  }
  size_t added = 0;
  for (const auto& ws : find_workspaces(dir)) {
    if (find_by_workspace(ws)) continue;  // cheap pre-check: no report parsing for known ones
    auto record = read_workspace(ws);
    if (!record) continue;
    if (insert_finished(*record, true)) ++added;
  }
  return added;
}

std::string repeat_key(const RunRecord& run) {
  if (run.config_hash.empty() || run.command_line.empty()) return "";
  return fmt::format("{}|{}|{}|{}|{}|{}", to_string(run.kind), run.config_hash, run.command_line,
                     run.git_commit, run.gpu, run.host);
}

std::vector<RunRecord> find_repeats(const ResultsStore& store, const RunRecord& run) {
  std::vector<RunRecord> out;
  const std::string key = repeat_key(run);
  if (key.empty()) return out;
  for (auto& r : store.list({.kind = run.kind, .status = RunStatus::kSucceeded, .limit = 0}))
    if (r.id != run.id && r.workspace_exists && !r.workspace.empty() && repeat_key(r) == key)
      out.push_back(std::move(r));
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace magpie::store
