#pragma once
// lm-eval's per-item results (samples_<task>_<timestamp>.jsonl: one JSON object
// per item and filter, with doc_id, filter, doc_hash and one value per metric)
// read, paired by item between two runs, and compared with the exact McNemar
// test (core/paired_accuracy.hpp). Items are keyed by (doc_id, filter): a
// generate_until task with two answer extractors scores each item twice.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/paired_accuracy.hpp"

namespace magpie::store {

struct QualitySample {
  bool correct = false;
  std::string doc_hash;  // "" when the file has none
};

struct QualitySamples {
  std::filesystem::path file;
  std::string task;    // from the file name
  std::string metric;  // the metric read (acc, exact_match, ...)
  std::string filter;  // the filter read ("none", "strict-match", ...)
  std::map<std::string, QualitySample> items;  // by doc_id
};

// Task name from lm-eval's sample file name: samples_<task>_<ISO timestamp>.jsonl
// ("samples_arc_easy_2026-01-02T03-04-05.678901.jsonl" -> "arc_easy"); without a
// timestamp, everything between "samples_" and ".jsonl".
std::string quality_task_from_file_name(const std::string& file_name);

// Reads one metric of one filter. metric "": the first of acc, exact_match,
// acc_norm, pass@1 the lines list in "metrics"; filter "": the first filter in
// the file. A metric value must be 0 or 1 (true/false): kBadFormat otherwise,
// naming the line. Throws kNotFound / kBadFormat naming the file and line.
QualitySamples read_quality_samples(const std::filesystem::path& file, const std::string& metric = "",
                                    const std::string& filter = "");

struct QualityComparison {
  std::string task, metric, filter;
  std::filesystem::path baseline_file, candidate_file;
  stats::PairedAccuracy paired;
  std::vector<std::string> only_in_baseline, only_in_candidate;  // unpaired doc_ids
};

// Pairs by doc_id. Refused (kUsage): different task names, different metrics or
// filters, a doc_id whose doc_hash differs (different items under one id), or
// no doc_id in common. Unpaired doc_ids are listed, not compared.
QualityComparison compare_quality_samples(const QualitySamples& baseline, const QualitySamples& candidate,
                                          double confidence = 0.95);

// Two serving workspaces' accuracy gates (benchmark_report.json quality_gate):
// each task whose sample file both list is compared. A sample file whose
// sha256 no longer matches its receipt, or a task only one side scored, is a
// warning and not compared; neither side having a gate returns nothing.
std::vector<QualityComparison> compare_quality_gates(const std::filesystem::path& baseline_workspace,
                                                     const std::filesystem::path& candidate_workspace,
                                                     std::vector<std::string>& warnings,
                                                     double confidence = 0.95);

}  // namespace magpie::store
