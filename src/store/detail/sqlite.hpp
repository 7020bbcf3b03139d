#pragma once
// Thin RAII over the SQLite C API: a connection and prepared statements that
// throw magpie::Error naming the database file on failure.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace magpie::store::detail {

class Statement;

class Database {
 public:
  // Opens (creating) the file; sets busy_timeout, WAL and foreign keys.
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
  const std::filesystem::path& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  // Throws Error(kUnreadable/kBadFormat) with the message of `rc`, the path and `what` failed.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  // Sets WAL journaling, waiting out other processes creating the same file;
  // returns the journal mode SQLite reports.
  std::string switch_to_wal(int busy_timeout_ms);

  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
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
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when not committed. IMMEDIATE takes
// the write lock up front, so two writers wait on busy_timeout instead of
// deadlocking on a read-to-write upgrade.
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
