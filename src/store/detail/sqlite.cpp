#include "store/detail/sqlite.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "store/detail/postgres.hpp"

namespace magpie::store::detail {

namespace {

ErrorKind kind_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorKind::kUnreadable;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorKind::kBadFormat;
    default:
      return ErrorKind::kInternal;
  }
}

std::string hint_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return "check that the directory exists and is writable, or point MAGPIE_RESULTS_DB at a "
             "writable file";
    case SQLITE_FULL:
    case SQLITE_IOERR:
      return "check free disk space and the file system, or point MAGPIE_RESULTS_DB elsewhere";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process held the write lock past the busy timeout; retry, or look for a "
             "stuck magpie process";
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return "the file is not a Magpie results store (or is damaged): move it aside and a new one "
             "is created; `magpie results import DIR` re-indexes workspaces";
    default:
      return "";
  }
}

}  // namespace

Database Database::open(const std::filesystem::path& path, int busy_timeout_ms) {
  Database d;
  if (is_postgres_url(path.native())) {
    d.pg_ = std::make_unique<PgConnection>(path.native());
    d.path_ = d.pg_->display();
    return d;
  }
  d.path_ = path;
  int rc =
      sqlite3_open_v2(path.c_str(), &d.db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) d.fail(rc, "open the results store");
  sqlite3_extended_result_codes(d.db_, 1);
  sqlite3_busy_timeout(d.db_, busy_timeout_ms);
  // WAL: readers never block the writer and a crash mid-write leaves the
  // database intact. NORMAL sync is durable across process crashes in WAL.
  const std::string got = d.switch_to_wal(busy_timeout_ms);
  if (got != "wal") {
    throw Error(ErrorKind::kUnreadable,
                fmt::format("results store could not switch to WAL journaling (got '{}')", got),
                path.string(), std::nullopt,
                "keep the store on a local file system (WAL needs shared memory), or set "
                "MAGPIE_RESULTS_DB");
  }
  d.exec("PRAGMA synchronous=NORMAL");
  d.exec("PRAGMA foreign_keys=ON");
  return d;
}

std::string Database::switch_to_wal(int busy_timeout_ms) {
  // On a fresh file the switch upgrades a shared lock to an exclusive one.
  // When several processes create the store at once, SQLite answers BUSY
  // at once instead of calling the busy handler (waiting could deadlock), so
  // the wait is ours: retry with a short, growing sleep until the timeout.
  // Once one process has switched, the mode is stored in the file and every
  // later open sees "wal" without taking a write lock.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, "PRAGMA journal_mode=WAL", -1, &stmt, nullptr);
    std::string mode;
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(stmt);
      if (rc == SQLITE_ROW) {
        const auto* p = sqlite3_column_text(stmt, 0);
        mode = p ? reinterpret_cast<const char*>(p) : "";
        rc = SQLITE_OK;
      }
    }
    sqlite3_finalize(stmt);
    if (rc == SQLITE_OK || rc == SQLITE_DONE) return mode;
    const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (!busy || std::chrono::steady_clock::now() + pause > deadline) {
      fail(rc, "switch to WAL journaling");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& o) noexcept
    : db_(o.db_), pg_(std::move(o.pg_)), path_(std::move(o.path_)) {
  o.db_ = nullptr;
}

Database& Database::operator=(Database&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close_v2(db_);
    db_ = o.db_;
    pg_ = std::move(o.pg_);
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

void Database::fail(int rc, std::string_view what) const {
  std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw Error(kind_for(rc), fmt::format("results store: cannot {}: {}", what, detail),
              path_.string(), std::nullopt, hint_for(rc));
}

void Database::exec(std::string_view sql) {
  if (pg_) return pg_->exec(sql);
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, fmt::format("run `{}`", text.substr(0, 60)));
}

Statement Database::prepare(std::string_view sql) {
  if (pg_) return Statement(*this, std::make_unique<PgStatement>(*pg_, sql));
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc, fmt::format("prepare `{}`", sql.substr(0, 60)));
  return Statement(*this, stmt);
}

int64_t Database::last_insert_id() const {
  return pg_ ? pg_->last_insert_id() : sqlite3_last_insert_rowid(db_);
}
int Database::changes() const { return pg_ ? pg_->changes() : sqlite3_changes(db_); }

void Database::rollback_quietly() noexcept {
  if (pg_) {
    PQclear(PQexec(pg_->handle(), "ROLLBACK"));
  } else if (db_) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Statement::Statement(const Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}

Statement::Statement(const Database& db, std::unique_ptr<PgStatement> pg)
    : db_(&db), pg_(std::move(pg)) {}

Statement::Statement(Statement&& o) noexcept
    : db_(o.db_), stmt_(o.stmt_), pg_(std::move(o.pg_)) {
  o.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

// PostgreSQL type OIDs for the bound values (pg_type.h): text, int8, float8.
constexpr unsigned kPgText = 25, kPgInt8 = 20, kPgFloat8 = 701;

Statement& Statement::bind(int index, std::string_view text) {
  if (pg_) {
    pg_->bind(index, std::string(text), kPgText);
    return *this;
  }
  int rc =
      sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_->fail(rc, "bind a value");
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  if (pg_) {
    pg_->bind(index, std::to_string(value), kPgInt8);
    return *this;
  }
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_->fail(rc, "bind a value");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (pg_) {
    pg_->bind(index, fmt::format("{}", value), kPgFloat8);  // shortest text that reads back exact
    return *this;
  }
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) db_->fail(rc, "bind a value");
  return *this;
}

bool Statement::step() {
  if (pg_) return pg_->step();
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(rc, "run a statement");
}

void Statement::reset() {
  if (pg_) return pg_->reset();
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::column_int(int col) const {
  if (pg_) return std::strtoll(pg_->column_text(col).c_str(), nullptr, 10);
  return sqlite3_column_int64(stmt_, col);
}
double Statement::column_double(int col) const {
  if (pg_) return std::strtod(pg_->column_text(col).c_str(), nullptr);
  return sqlite3_column_double(stmt_, col);
}
bool Statement::column_is_null(int col) const {
  if (pg_) return pg_->column_is_null(col);
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

std::string Statement::column_text(int col) const {
  if (pg_) return pg_->column_text(col);
  const auto* p = sqlite3_column_text(stmt_, col);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

// Any fixed key works; all Magpie writers to one database take the same one.
constexpr int64_t kPgWriteLock = 0x4d61677069650001;  // "Magpie" 1

WriteTransaction::WriteTransaction(Database& db) : db_(db) {
  if (!db_.is_postgres()) {
    db_.exec("BEGIN IMMEDIATE");
    return;
  }
  db_.exec("BEGIN");
  try {
    db_.exec(fmt::format("SELECT pg_advisory_xact_lock({})", kPgWriteLock));
  } catch (...) {
    db_.rollback_quietly();
    throw;
  }
}

WriteTransaction::~WriteTransaction() {
  if (!done_) db_.rollback_quietly();
}

void WriteTransaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace magpie::store::detail
