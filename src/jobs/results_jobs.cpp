#include "jobs/results_jobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace magpie::jobs {

namespace fs = std::filesystem;
using store::ResultsStore;
using store::RunRecord;

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

fs::path store_path(const fs::path& given) { return given.empty() ? ResultsStore::default_path() : given; }

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t a = 0, b; a <= text.size(); a = b + 1) {
    b = text.find(',', a);
    if (b == std::string::npos) b = text.size();
    if (b > a) parts.push_back(text.substr(a, b - a));
  }
  return parts;
}

}  // namespace

std::vector<RunRecord> list_runs(const ResultsListRequest& request) {
  store::RunFilter filter;
  if (!request.kind.empty()) {
    filter.kind = store::run_kind_from_string(request.kind);
    if (!filter.kind)
      throw Error(ErrorKind::kUsage, fmt::format("unknown run kind '{}'", request.kind), "", std::nullopt,
                  "use analyze, compare, benchmark, gap_analysis or tracelens");
  }
  if (!request.status.empty()) {
    filter.status = store::run_status_from_string(request.status);
    if (!filter.status)
      throw Error(ErrorKind::kUsage, fmt::format("unknown run status '{}'", request.status), "",
                  std::nullopt, "use running, succeeded, failed, cancelled or incomplete");
  }
  filter.limit = request.limit;
  return ResultsStore::open(store_path(request.store)).list(filter);
}

ResultsDiffOutcome diff_runs(const ResultsDiffRequest& request) {
  const auto& targets = request.targets;
  const auto& labels = request.labels;
  if (!labels.empty() && labels.size() != targets.size()) {
    throw Error(ErrorKind::kUsage, fmt::format("{} labels for {} runs", labels.size(), targets.size()), "",
                std::nullopt, "give one label per run: --label base,new");
  }
  ResultsDiffOutcome out;
  std::optional<ResultsStore> db;
  auto open_db = [&]() -> ResultsStore& {
    if (!db) db.emplace(ResultsStore::open(store_path(request.store)));
    return *db;
  };
  // One run: its workspace, and its record when the store knows it.
  struct Resolved {
    fs::path workspace;
    std::optional<RunRecord> record;
  };
  auto resolve = [&](const std::string& t) {
    std::error_code ec;
    if (all_digits(t) && !fs::is_directory(t, ec)) {
      auto r = open_db().get(std::stoll(t));
      if (!r)
        throw Error(ErrorKind::kNotFound, fmt::format("no run {} in the results store", t),
                    db->path().string(), std::nullopt, "`magpie results list` shows the ids");
      if (!r->workspace_exists)
        throw Error(ErrorKind::kNotFound, fmt::format("run {}'s workspace is gone", t), r->workspace);
      return Resolved{r->workspace, r};
    }
    Resolved found{t, std::nullopt};
    if (!request.no_repeats && !request.ops) {
      try {  // a workspace the store recorded may have repeats there
        found.record = open_db().find_by_workspace(t);
      } catch (const Error&) {  // no store to ask: the diff works without it
      }
    }
    return found;
  };
  std::vector<store::DiffInput> inputs;
  std::vector<std::optional<RunRecord>> records;  // each side's first run, when recorded
  std::vector<int64_t> named;                     // every run id named in the request
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::vector<std::string> parts = split_commas(targets[i]);
    if (parts.empty())
      throw Error(ErrorKind::kUsage, fmt::format("empty run '{}'", targets[i]), "", std::nullopt,
                  "give run ids or workspaces; repeats of one config joined by commas: 3,5");
    store::DiffInput in{labels.empty() ? "" : labels[i], {}};
    for (size_t k = 0; k < parts.size(); ++k) {
      auto r = resolve(parts[k]);
      if (r.record) named.push_back(r.record->id);
      if (k == 0) {
        in.workspace = r.workspace;
        if (in.label.empty() && all_digits(parts[0]) && r.record) in.label = fmt::format("#{}", r.record->id);
        records.push_back(r.record);
        if (request.aa) in.config_key = "aa";
      } else {
        in.repeats.push_back(r.workspace);
      }
    }
    inputs.push_back(std::move(in));
  }
  // A side named by one recorded run takes the store's repeats of it (runs named elsewhere in
  // the diff excluded), so the run-to-run noise is measured whenever it can be. Not when two
  // sides share a repeat key: the store cannot tell an A/A pair from a change it cannot see (an
  // engine rebuilt under the same command), so which runs belong to which side is unknown.
  std::vector<std::string> keys;
  for (const auto& r : records) keys.push_back(r ? store::repeat_key(*r) : "");
  if (!request.no_repeats && !request.ops) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!keys[i].empty() && std::count(keys.begin(), keys.end(), keys[i]) > 1) {
        out.notes.push_back(fmt::format(
            "note: run #{} has the same command, config hash, git commit, GPU and host as another "
            "run of this diff: not pooled with repeats. If nothing changed between them this is "
            "an A/A pair (--aa measures the run-to-run noise from it); if something changed that "
            "the command does not show, give repeats of each side: A1,A2 B1,B2",
            records[i]->id));
        continue;
      }
      // Kernel compares interleave baseline and candidate within one run: no pooling there.
      if (!inputs[i].repeats.empty() || !records[i] || records[i]->kind != store::RunKind::kBenchmark) continue;
      std::string ids;
      for (const auto& r : store::find_repeats(*db, *records[i])) {
        if (std::find(named.begin(), named.end(), r.id) != named.end()) continue;
        inputs[i].repeats.push_back(r.workspace);
        ids += fmt::format("{}#{}", ids.empty() ? "" : ", ", r.id);
      }
      if (!ids.empty())
        out.notes.push_back(fmt::format(
            "{} #{}: pooled with its repeats {} (same config hash, git commit, GPU and host; "
            "--no-repeats to diff the named runs only)",
            i == 0 ? "baseline" : "candidate", records[i]->id, ids));
    }
  }
  bool ops = request.ops;
  if (!ops && std::all_of(inputs.begin(), inputs.end(), [](const auto& in) {
        return store::diff_workspace_kind(in.workspace) == store::WorkspaceKind::kOther &&
               !store::find_op_tables(in.workspace).empty();
      }))
    ops = true;  // gap analysis / TraceLens folders: the side-by-side is the only diff they have
  if (ops) {
    out.ops = store::compare_op_tables(inputs);
    return out;
  }
  store::DiffSettings settings;
  if (request.threshold) settings.verdict.threshold = settings.kernel_verdict.threshold = *request.threshold;
  if (request.resamples) settings.verdict.resamples = settings.kernel_verdict.resamples = *request.resamples;
  if (request.run_noise) settings.run_noise = *request.run_noise;
  out.diff = store::diff_reports(inputs, settings);
  for (const auto& c : out.diff->serving)
    for (const auto& m : c.metrics) out.regression = out.regression || m.verdict == stats::Verdict::kSlower;
  for (const auto& k : out.diff->kernels) out.regression = out.regression || k.verdict == stats::Verdict::kSlower;
  // Faster but answering worse is a regression too (the paired quality comparison).
  for (const auto& q : out.diff->quality)
    out.regression = out.regression || q.comparison.paired.verdict == stats::QualityVerdict::kWorse;
  return out;
}

}  // namespace magpie::jobs
