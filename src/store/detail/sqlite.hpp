#pragma once
// The results store's one database interface: a connection and prepared
// statements that throw magpie::Error naming the database on failure. Two
// backends: a SQLite file (the default; thin RAII over the C API here) and a
// PostgreSQL server for a store shared by many hosts (postgres.hpp), chosen
// by the location: a postgresql:// URL or a file path.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace magpie::store::detail {

class Statement;
class PgConnection;
class PgStatement;

class Database {
 public:
  // Opens (creating) the file; sets busy_timeout, WAL and foreign keys. A
  // postgresql:// URL connects to that server instead (busy_timeout unused:
  // writers queue on a lock the server holds).
  static Database open(const std::filesystem::path& path, int busy_timeout_ms);
  Database() = default;
  ~Database();
  Database(Database&& o) noexcept;
  Database& operator=(Database&& o) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  int64_t last_insert_id() const;
  int changes() const;  // rows changed by the last statement
  // The file, or the URL without its password.
  const std::filesystem::path& path() const { return path_; }
  bool is_postgres() const { return pg_ != nullptr; }
  // Rolls back an open transaction, never throwing (a destructor's cleanup).
  void rollback_quietly() noexcept;
  // Throws Error(kUnreadable/kBadFormat) with the message of `rc`, the path and `what` failed.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  // Sets WAL journaling, waiting out other processes creating the same file;
  // returns the journal mode SQLite reports.
  std::string switch_to_wal(int busy_timeout_ms);

  friend class Statement;
  sqlite3* db_ = nullptr;
  std::unique_ptr<PgConnection> pg_;
  std::filesystem::path path_;
};

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* stmt);
  Statement(const Database& db, std::unique_ptr<PgStatement> pg);
  ~Statement();
  Statement(Statement&& o) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;

  // 1-based parameter index, as SQLite counts.
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  // Steps once: true while a row is available, false when done.
  bool step();
  void run() {
    while (step()) {
    }
  }
  void reset();

  int64_t column_int(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  bool column_is_null(int col) const;

 private:
  const Database* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::unique_ptr<PgStatement> pg_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when not committed. IMMEDIATE takes
// the write lock up front, so two writers wait on busy_timeout instead of
// deadlocking on a read-to-write upgrade. On PostgreSQL the same: BEGIN and a
// transaction-scoped advisory lock, so writers from many hosts run one at a
// time (a check-then-insert cannot race) and the schema is created once.
class WriteTransaction {
 public:
  explicit WriteTransaction(Database& db);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace magpie::store::detail
