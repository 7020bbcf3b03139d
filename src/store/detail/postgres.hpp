#pragma once
// Thin RAII over libpq: the PostgreSQL side of detail::Database/Statement
// (sqlite.hpp), so the results store runs the same SQL on either backend.
// Statements are written with SQLite's ?N parameters; they become $N here.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// libpq's handles (libpq-fe.h names them PGconn and PGresult), declared here
// so that including this header needs no libpq headers.
struct pg_conn;
struct pg_result;

namespace magpie::store::detail {

// True for postgresql:// and postgres:// URLs (what selects this backend).
bool is_postgres_url(std::string_view text);
// The URL with any password left out, for messages: postgresql://user@host:port/db.
std::string redact_postgres_url(std::string_view url);

class PgConnection {
 public:
  // Connects; throws Error(kUsage) for a malformed URL, Error(kUnreachable)
  // when the server refuses or cannot be reached, naming the redacted URL.
  explicit PgConnection(const std::string& url);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  void exec(std::string_view sql);
  // Rows changed by the last statement, and the id the last INSERT drew from a sequence.
  int changes() const { return changes_; }
  int64_t last_insert_id();
  const std::string& display() const { return display_; }
  pg_conn* handle() const { return conn_; }
  // Throws the Error for a failed result (kNotFound for a missing table,
  // kUnreachable for a lost connection) and clears it.
  [[noreturn]] void fail(pg_result* result, std::string_view what);
  void set_changes(const pg_result* result);

 private:
  pg_conn* conn_ = nullptr;
  std::string display_;
  int changes_ = 0;
};

class PgStatement {
 public:
  PgStatement(PgConnection& conn, std::string_view sql);
  ~PgStatement();
  PgStatement(const PgStatement&) = delete;
  PgStatement& operator=(const PgStatement&) = delete;

  void bind(int index, std::optional<std::string> text, unsigned type_oid);
  bool step();
  void reset();
  std::string column_text(int col) const;
  bool column_is_null(int col) const;

 private:
  PgConnection& conn_;
  std::string sql_;  // with $N parameters
  std::vector<std::optional<std::string>> params_;
  std::vector<unsigned> types_;
  pg_result* result_ = nullptr;
  int row_ = -1;
};

}  // namespace magpie::store::detail
