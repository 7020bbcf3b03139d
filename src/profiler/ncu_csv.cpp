#include "profiler/ncu_csv.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "core/error.hpp"
#include "profiler/csv_line.hpp"

namespace magpie::profiler {

const std::vector<std::string>& default_ncu_metrics() {
  static const std::vector<std::string> m{
      "gpu__time_duration.sum",
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
  };
  return m;
}

std::vector<std::string> ncu_command(const std::vector<std::string>& app, const std::vector<std::string>& metrics,
                            const std::vector<std::string>& extra_args) {
  std::string joined;
  for (const auto& m : metrics.empty() ? default_ncu_metrics() : metrics) {
    joined += (joined.empty() ? "" : ",") + m;
  }
  // --clock-control none: measure the card as we find it (never lock clocks).
  std::vector<std::string> cmd{"ncu", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
                      "--metrics", joined};
  cmd.insert(cmd.end(), extra_args.begin(), extra_args.end());
  cmd.emplace_back("--");
  cmd.insert(cmd.end(), app.begin(), app.end());
  return cmd;
}

namespace {

// Scale to base units in case --print-units base was not honoured.
double unit_scale(const std::string& unit) {
  if (unit == "usecond" || unit == "us") return 1e3;
  if (unit == "msecond" || unit == "ms") return 1e6;
  if (unit == "second" || unit == "s") return 1e9;
  if (unit == "Kbyte" || unit == "KB") return 1e3;
  if (unit == "Mbyte" || unit == "MB") return 1e6;
  if (unit == "Gbyte" || unit == "GB") return 1e9;
  return 1;
}

bool parse_number(std::string text, double& out) {
  std::string clean;
  for (char c : text) {
    if (c != ',' && c != ' ') clean += c;
  }
  if (clean.empty()) return false;
  char* end = nullptr;
  out = std::strtod(clean.c_str(), &end);
  return end != nullptr && *end == '\0';
}

}  // namespace

std::vector<NcuKernel> parse_ncu_csv(std::string_view output, const std::string& origin) {
  std::vector<NcuKernel> out;
  std::vector<std::string> header, units;
  size_t pos = 0, line_no = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.rfind("==PROF==", 0) == 0 || line.empty() || line[0] != '"') continue;  // app output, ncu notes
    auto fields = split_csv_line(line);
    if (header.empty()) {
      if (!fields.empty() && fields[0] == "ID") header = fields;
      continue;
    }
    if (fields.size() != header.size()) {
      throw Error(ErrorKind::kBadFormat,
                  fmt::format("ncu CSV line {} has {} fields, the header has {}", line_no, fields.size(), header.size()),
                  origin, std::nullopt, "run ncu with --csv --page raw and do not mix two reports in one file");
    }
    if (fields[0].empty()) {  // the units row
      units = fields;
      continue;
    }
    NcuKernel k;
    double id = 0;
    if (parse_number(fields[0], id)) k.id = static_cast<int64_t>(id);
    for (size_t i = 1; i < header.size(); ++i) {
      const auto& h = header[i];
      if (h == "Kernel Name") {
        k.kernel_name = fields[i];
      } else if (h == "Block Size") {
        k.block_size = fields[i];
      } else if (h == "Grid Size") {
        k.grid_size = fields[i];
      } else if (h.find("__") != std::string::npos) {
        double v = 0;
        if (parse_number(fields[i], v)) k.metrics[h] = v * (i < units.size() ? unit_scale(units[i]) : 1.0);
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

NcuTotals ncu_totals(const std::vector<NcuKernel>& kernels) {
  NcuTotals t;
  auto get = [](const NcuKernel& k, const char* name) {
    auto it = k.metrics.find(name);
    return it == k.metrics.end() ? 0.0 : it->second;
  };
  for (const auto& k : kernels) {
    ++t.kernels;
    t.time_ns += get(k, "gpu__time_duration.sum");
    t.dram_bytes += get(k, "dram__bytes_read.sum") + get(k, "dram__bytes_write.sum");
    t.flops += get(k, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum") +
               get(k, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum") +
               2 * get(k, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") +
               get(k, "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum") +
               get(k, "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum") +
               2 * get(k, "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum");
  }
  return t;
}

}  // namespace magpie::profiler
