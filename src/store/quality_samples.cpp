#include "store/quality_samples.hpp"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.hpp"
#include "core/sha256.hpp"

namespace magpie::store {

std::string quality_task_from_file_name(const std::string& file_name) {
  std::string s = file_name;
  if (s.starts_with("samples_")) s = s.substr(8);
  if (s.ends_with(".jsonl")) s = s.substr(0, s.size() - 6);
  static const std::regex timestamp(R"(_\d{4}-\d{2}-\d{2}T[0-9.\-]+$)");
  return std::regex_replace(s, timestamp, "");
}

namespace {

constexpr std::array kPreferredMetrics = {"acc", "exact_match", "acc_norm", "pass@1"};

std::string doc_id_of(const nlohmann::json& line) {
  const auto& id = line["doc_id"];
  return id.is_string() ? id.get<std::string>() : id.dump();
}

std::string pick_metric(const nlohmann::json& line, const std::filesystem::path& file, size_t line_no) {
  auto listed = line.find("metrics");
  if (listed != line.end() && listed->is_array()) {
    for (const char* m : kPreferredMetrics)
      for (const auto& name : *listed)
        if (name.is_string() && name.get<std::string>() == m) return m;
  }
  for (const char* m : kPreferredMetrics)
    if (line.contains(m)) return m;
  throw Error(ErrorKind::kBadFormat,
              fmt::format("line {}: no 0/1 metric (acc, exact_match, acc_norm, pass@1) to compare", line_no),
              file.string(), std::nullopt,
              "the paired test compares right/wrong items: run a task scored by acc, exact_match, acc_norm or pass@1");
}

}  // namespace

QualitySamples read_quality_samples(const std::filesystem::path& file, const std::string& metric,
                                    const std::string& filter) {
  std::ifstream in(file);
  if (!in)
    throw Error(ErrorKind::kNotFound, "cannot open lm-eval samples file", file.string(), std::nullopt,
                "pass a samples_<task>_<time>.jsonl file that lm-eval wrote with --log_samples");
  QualitySamples out;
  out.file = file;
  out.task = quality_task_from_file_name(file.filename().string());
  out.metric = metric;
  out.filter = filter;
  std::string text;
  size_t line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object() || !line.contains("doc_id"))
      throw Error(ErrorKind::kBadFormat, fmt::format("line {}: not an lm-eval sample (a JSON object with doc_id)", line_no),
                  file.string());
    std::string line_filter = line.value("filter", std::string("none"));
    if (out.filter.empty()) out.filter = line_filter;
    if (line_filter != out.filter) continue;
    if (out.metric.empty()) out.metric = pick_metric(line, file, line_no);
    auto value = line.find(out.metric);
    if (value == line.end())
      throw Error(ErrorKind::kBadFormat, fmt::format("line {}: no \"{}\" value", line_no, out.metric), file.string());
    bool correct = false;
    if (value->is_boolean()) {
      correct = value->get<bool>();
    } else if (value->is_number() && (value->get<double>() == 0 || value->get<double>() == 1)) {
      correct = value->get<double>() == 1;
    } else {
      throw Error(ErrorKind::kBadFormat,
                  fmt::format("line {}: {} = {} is not 0 or 1; the paired test compares right/wrong items",
                              line_no, out.metric, value->dump()),
                  file.string(), std::nullopt, "compare a 0/1 metric such as acc or exact_match");
    }
    std::string id = doc_id_of(line);
    QualitySample sample{correct, line.value("doc_hash", std::string())};
    if (!out.items.emplace(id, std::move(sample)).second)
      throw Error(ErrorKind::kBadFormat, fmt::format("line {}: doc_id {} appears twice for filter {}", line_no, id, out.filter),
                  file.string());
  }
  if (out.items.empty())
    throw Error(ErrorKind::kBadFormat, "no samples in the file", file.string(), std::nullopt,
                "run lm-eval with --log_samples");
  return out;
}

QualityComparison compare_quality_samples(const QualitySamples& baseline, const QualitySamples& candidate,
                                          double confidence) {
  auto refuse = [&](const std::string& what) {
    return Error(ErrorKind::kUsage,
                 fmt::format("cannot pair {} with {}: {}", baseline.file.string(), candidate.file.string(), what),
                 {}, std::nullopt, "compare two runs of the same lm-eval task, metric and filter");
  };
  if (baseline.task != candidate.task)
    throw refuse(fmt::format("different tasks ({} vs {})", baseline.task, candidate.task));
  if (baseline.metric != candidate.metric)
    throw refuse(fmt::format("different metrics ({} vs {})", baseline.metric, candidate.metric));
  if (baseline.filter != candidate.filter)
    throw refuse(fmt::format("different filters ({} vs {})", baseline.filter, candidate.filter));
  QualityComparison out;
  out.task = baseline.task;
  out.metric = baseline.metric;
  out.filter = baseline.filter;
  out.baseline_file = baseline.file;
  out.candidate_file = candidate.file;
  stats::PairedCounts counts;
  for (const auto& [id, b] : baseline.items) {
    auto c = candidate.items.find(id);
    if (c == candidate.items.end()) {
      out.only_in_baseline.push_back(id);
      continue;
    }
    if (!b.doc_hash.empty() && !c->second.doc_hash.empty() && b.doc_hash != c->second.doc_hash)
      throw refuse(fmt::format("doc_id {} is a different item in each (doc_hash differs)", id));
    if (b.correct && c->second.correct)
      ++counts.both_right;
    else if (!b.correct && !c->second.correct)
      ++counts.both_wrong;
    else if (b.correct)
      ++counts.baseline_only;
    else
      ++counts.candidate_only;
  }
  for (const auto& [id, c] : candidate.items)
    if (!baseline.items.contains(id)) out.only_in_candidate.push_back(id);
  if (counts.pairs() == 0) throw refuse("no doc_id is in both");
  out.paired = stats::compare_paired_accuracy(counts, confidence);
  return out;
}

namespace {

// task -> its sample file, from a workspace's quality_gate receipts; nullopt: no gate.
std::optional<std::map<std::string, std::filesystem::path>> gate_samples(const std::filesystem::path& ws,
                                                                         std::vector<std::string>& warnings) {
  std::ifstream in(ws / "benchmark_report.json");
  if (!in) return std::nullopt;
  nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
  if (report.is_discarded() || !report.is_object() || !report.contains("quality_gate") ||
      !report["quality_gate"].is_object())
    return std::nullopt;
  std::map<std::string, std::filesystem::path> out;
  for (const auto& r : report["quality_gate"].value("sample_artifact_receipts", nlohmann::json::array())) {
    if (!r.is_object() || !r.contains("path") || !r["path"].is_string()) continue;
    std::filesystem::path file = ws / r["path"].get<std::string>();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
      warnings.push_back(fmt::format("quality: {} is listed in the report but missing; not compared", file.string()));
      continue;
    }
    if (r.contains("sha256") && r["sha256"].is_string() && file_sha256(file) != r["sha256"].get<std::string>()) {
      warnings.push_back(fmt::format(
          "quality: {} no longer matches its sha256 receipt (changed after the run); not compared", file.string()));
      continue;
    }
    out.emplace(quality_task_from_file_name(file.filename().string()), file);
  }
  return out;
}

}  // namespace

std::vector<QualityComparison> compare_quality_gates(const std::filesystem::path& baseline_workspace,
                                                     const std::filesystem::path& candidate_workspace,
                                                     std::vector<std::string>& warnings, double confidence) {
  auto base = gate_samples(baseline_workspace, warnings);
  auto cand = gate_samples(candidate_workspace, warnings);
  if (!base && !cand) return {};
  if (!base || !cand) {
    warnings.push_back(fmt::format("quality: only {} has an accuracy gate (quality_gate); quality not compared",
                                   (base ? baseline_workspace : candidate_workspace).string()));
    return {};
  }
  std::vector<QualityComparison> out;
  for (const auto& [task, file] : *base) {
    auto it = cand->find(task);
    if (it == cand->end()) {
      warnings.push_back(fmt::format("quality: task {} of {} is not in {}", task, baseline_workspace.string(),
                                     candidate_workspace.string()));
      continue;
    }
    out.push_back(compare_quality_samples(read_quality_samples(file), read_quality_samples(it->second), confidence));
    if (!out.back().only_in_baseline.empty() || !out.back().only_in_candidate.empty())
      warnings.push_back(fmt::format("quality: task {}: {} items only in the baseline, {} only in the candidate "
                                     "(not paired, not compared)",
                                     task, out.back().only_in_baseline.size(), out.back().only_in_candidate.size()));
  }
  for (const auto& [task, file] : *cand)
    if (!base->contains(task))
      warnings.push_back(fmt::format("quality: task {} of {} is not in {}", task, candidate_workspace.string(),
                                     baseline_workspace.string()));
  return out;
}

}  // namespace magpie::store
