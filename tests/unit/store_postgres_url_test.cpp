// The PostgreSQL URL helpers: which locations select the PostgreSQL backend,
// and that messages never carry a password (the server itself is exercised by
// tests/e2e/test_results_postgres.py).
#include <gtest/gtest.h>

#include "store/detail/postgres.hpp"

namespace magpie::store::detail {
namespace {

TEST(StorePostgresUrl, SelectsTheBackendByScheme) {
  EXPECT_TRUE(is_postgres_url("postgresql://u@h/db"));
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("/home/u/.magpie/results.db"));
  EXPECT_FALSE(is_postgres_url("postgresql.db"));
  EXPECT_FALSE(is_postgres_url("host=h dbname=db"));  // keyword form: not a URL, a file name
}

TEST(StorePostgresUrl, RedactionDropsThePasswordKeepsTheRest) {
  EXPECT_EQ(redact_postgres_url("postgresql://magpie:s3cret@db.example:5433/results"),
            "postgresql://magpie@db.example:5433/results");
  EXPECT_EQ(redact_postgres_url("postgres://magpie:s3cret@db.example/results?sslmode=require"),
            "postgresql://magpie@db.example/results");
  // Percent-encoded characters in the password, and a password given as an option.
  const std::string encoded = redact_postgres_url("postgresql://u:p%40ss%3Aw@h/db");
  EXPECT_EQ(encoded, "postgresql://u@h/db");
  EXPECT_EQ(redact_postgres_url("postgresql://u@h/db?password=s3cret"), "postgresql://u@h/db");
  // Unparseable: everything before the last '@' after the scheme is hidden.
  const std::string bad = redact_postgres_url("postgresql://u:s3cret@h/db?nosuch=1");
  EXPECT_EQ(bad.find("s3cret"), std::string::npos) << bad;
  EXPECT_NE(bad.find("@h/db"), std::string::npos) << bad;
}

}  // namespace
}  // namespace magpie::store::detail
