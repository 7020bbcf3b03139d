#include "store/detail/postgres.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <cctype>

#include "core/error.hpp"

namespace magpie::store::detail {

namespace {

// ?N (SQLite) -> $N (PostgreSQL). The store's SQL has no '?' inside string literals.
std::string to_dollar_params(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] == '?' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1])))
      out += '$';
    else
      out += sql[i];
  }
  return out;
}

std::string first_line(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s;
}

void ignore_notice(void*, const char*) {}  // "relation already exists, skipping" and the like

constexpr const char* kUrlHint =
    "MAGPIE_RESULTS_DB takes postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE, or a file path "
    "for SQLite";

}  // namespace

bool is_postgres_url(std::string_view text) {
  return text.starts_with("postgresql://") || text.starts_with("postgres://");
}

std::string redact_postgres_url(std::string_view url) {
  const std::string text(url);
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(text.c_str(), &err);
  if (!opts) {
    if (err) PQfreemem(err);
    // Unparseable: drop everything between "://" and the last '@' that could hold a password.
    const auto scheme = text.find("://");
    const auto at = text.rfind('@');
    if (scheme == std::string::npos || at == std::string::npos || at < scheme) return text;
    return text.substr(0, scheme + 3) + "***" + text.substr(at);
  }
  std::string user, host, port, dbname;
  for (auto* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string_view key = o->keyword;
    if (key == "user") user = o->val;
    if (key == "host") host = o->val;
    if (key == "port") port = o->val;
    if (key == "dbname") dbname = o->val;
  }
  PQconninfoFree(opts);
  return fmt::format("postgresql://{}{}{}{}/{}", user, user.empty() ? "" : "@", host,
                     port.empty() ? "" : ":" + port, dbname);
}

PgConnection::PgConnection(const std::string& url) : display_(redact_postgres_url(url)) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (!opts) {
    std::string why = first_line(err);
    if (err) PQfreemem(err);
    throw Error(ErrorKind::kUsage, fmt::format("results store URL is not valid: {}", why),
                display_, std::nullopt, kUrlHint);
  }
  PQconninfoFree(opts);
  // A server that does not answer fails in 10 s rather than the system's TCP
  // timeout (minutes), so a run that records itself is not held up; the URL's
  // own connect_timeout, given after ours, wins.
  const char* keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "magpie", url.c_str(), nullptr};
  conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
    std::string why = conn_ ? first_line(PQerrorMessage(conn_)) : "out of memory";
    throw Error(ErrorKind::kUnreachable,
                fmt::format("cannot connect to the PostgreSQL results store: {}", why), display_,
                std::nullopt,
                "check that the server runs and accepts connections at that host and port, and "
                "the user, password and database name (psql with the same URL shows the same); "
                "or unset MAGPIE_RESULTS_DB to use the local SQLite store");
  }
  PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
}

PgConnection::~PgConnection() {
  if (conn_) PQfinish(conn_);
}

void PgConnection::fail(PGresult* result, std::string_view what) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state ? state : "";
  std::string why = first_line(result ? PQresultErrorMessage(result) : PQerrorMessage(conn_));
  if (why.empty()) why = first_line(PQerrorMessage(conn_));
  if (result) PQclear(result);
  if (PQstatus(conn_) != CONNECTION_OK) {
    throw Error(ErrorKind::kUnreachable,
                fmt::format("results store: lost the connection to PostgreSQL while trying to {}: {}",
                            what, why),
                display_, std::nullopt, "check the server, then retry");
  }
  if (sqlstate == "42P01") {  // undefined_table
    throw Error(ErrorKind::kNotFound,
                fmt::format("results store: a table is missing while trying to {}: {}", what, why),
                display_, std::nullopt,
                "the database holds a damaged Magpie schema: restore it from a backup, or point "
                "MAGPIE_RESULTS_DB at an empty database (createdb) and re-index workspaces with "
                "`magpie results import DIR`");
  }
  if (sqlstate.starts_with("42501")) {  // insufficient_privilege
    throw Error(ErrorKind::kUnreadable,
                fmt::format("results store: permission denied while trying to {}: {}", what, why),
                display_, std::nullopt,
                "grant the user CREATE on the database's public schema, or use a user that has it");
  }
  throw Error(ErrorKind::kInternal,
              fmt::format("results store: cannot {}: {} (SQLSTATE {})", what, why, sqlstate),
              display_);
}

void PgConnection::set_changes(const PGresult* result) {
  const char* n = PQcmdTuples(const_cast<PGresult*>(result));
  changes_ = (n && *n) ? std::atoi(n) : 0;
}

void PgConnection::exec(std::string_view sql) {
  const std::string text(sql);
  PGresult* r = PQexec(conn_, text.c_str());
  const auto status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    fail(r, fmt::format("run `{}`", text.substr(0, 60)));
  set_changes(r);
  PQclear(r);
}

int64_t PgConnection::last_insert_id() {
  // lastval() is per session: other writers' inserts do not move it.
  PGresult* r = PQexec(conn_, "SELECT lastval()");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) fail(r, "read the id of a new run");
  const int64_t id = std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10);
  PQclear(r);
  return id;
}

PgStatement::PgStatement(PgConnection& conn, std::string_view sql)
    : conn_(conn), sql_(to_dollar_params(sql)) {}

PgStatement::~PgStatement() {
  if (result_) PQclear(result_);
}

void PgStatement::bind(int index, std::optional<std::string> text, unsigned type_oid) {
  const auto i = static_cast<size_t>(index - 1);
  if (params_.size() <= i) {
    params_.resize(i + 1);
    types_.resize(i + 1, 0);
  }
  params_[i] = std::move(text);
  types_[i] = type_oid;
}

bool PgStatement::step() {
  if (!result_) {
    std::vector<const char*> values;
    values.reserve(params_.size());
    for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
    std::vector<Oid> types(types_.begin(), types_.end());
    result_ = PQexecParams(conn_.handle(), sql_.c_str(), static_cast<int>(values.size()),
                           types.data(), values.data(), nullptr, nullptr, 0);
    const auto status = PQresultStatus(result_);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      PGresult* failed = result_;
      result_ = nullptr;
      conn_.fail(failed, fmt::format("run `{}`", sql_.substr(0, 60)));
    }
    conn_.set_changes(result_);
    row_ = -1;
  }
  ++row_;
  return row_ < PQntuples(result_);
}

void PgStatement::reset() {
  if (result_) PQclear(result_);
  result_ = nullptr;
  row_ = -1;
}

std::string PgStatement::column_text(int col) const {
  if (!result_ || PQgetisnull(result_, row_, col)) return {};
  return std::string(PQgetvalue(result_, row_, col),
                     static_cast<size_t>(PQgetlength(result_, row_, col)));
}

bool PgStatement::column_is_null(int col) const {
  return !result_ || PQgetisnull(result_, row_, col);
}

}  // namespace magpie::store::detail
