#pragma once
// Series, histories and checks (store/series.hpp) as text, JSON, and the
// files CI systems read: JUnit XML (a regression is a failed test case), a
// GitHub Actions job summary (Markdown), Bencher Metric Format JSON and CSV.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/series.hpp"

namespace magpie::store {

nlohmann::json to_json(const SeriesSummary& series);
nlohmann::json to_json(const SeriesHistory& history);
nlohmann::json to_json(const CheckResult& result);

std::string series_text(const std::vector<SeriesSummary>& series);
std::string history_text(const SeriesHistory& history);
std::string check_text(const CheckResult& result);

// One test case per series and metric checked; a regression since `since`
// fails it, with the change in the failure message.
std::string check_junit(const CheckResult& result);
// Markdown for $GITHUB_STEP_SUMMARY: the verdict, then the changes.
std::string check_github_summary(const CheckResult& result);
// Bencher Metric Format: {"<series label> [id]": {"<metric>": {"value", "lower_value",
// "upper_value"}}} for each series' latest point (bencher run --adapter json).
std::string check_bmf(const CheckResult& result);
// One row per change found: series, metric, kind, commit, date, before, after, change, p.
std::string check_csv(const CheckResult& result);

}  // namespace magpie::store
