#include "store/op_table_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "profiler/csv_line.hpp"
#include "report/csv_writer.hpp"

namespace magpie::store {

namespace fs = std::filesystem;

namespace {

struct Columns {
  const char* name;
  const char* time_us;
  const char* calls;
  const char* share;
  // Other names of the time column: gap analysis names it for what it
  // measures (CPU self time with --categories cpu_op, README "Gap analysis").
  std::array<const char*, 2> time_us_also{nullptr, nullptr};
};
constexpr Columns kGapColumns{"Name", "Self CUDA total (us)", "Calls", "% Total",
                              {"Self CPU total (us)", "Self total (us)"}};
constexpr Columns kTraceLensColumns{"name", "Kernel Time (µs)_sum", "calls", "Percentage (%)"};

double to_double(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stod(s);
  } catch (...) {
    return 0;
  }
}

// name → cell, in table order.
std::vector<std::pair<std::string, OpCell>> read_op_csv(const fs::path& path, const Columns& cols) {
  auto buf = read_file(path);
  std::string_view text = buf.view();
  std::vector<std::pair<std::string, OpCell>> out;
  std::vector<std::string> header;
  int i_name = -1, i_time = -1, i_calls = -1, i_share = -1;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    auto fields = profiler::split_csv_line(line);
    if (header.empty()) {
      header = fields;
      auto find = [&](const char* col) {
        auto it = std::find(header.begin(), header.end(), col);
        return it == header.end() ? -1 : static_cast<int>(it - header.begin());
      };
      i_name = find(cols.name);
      i_time = find(cols.time_us);
      for (const char* also : cols.time_us_also)
        if (i_time < 0 && also) i_time = find(also);
      i_calls = find(cols.calls);
      i_share = find(cols.share);
      if (i_name < 0 || i_time < 0) {
        throw Error(
            ErrorKind::kBadFormat,
            fmt::format("op table lacks the '{}' or '{}' column", cols.name, cols.time_us),
            path.string(), std::nullopt,
            "expected a gap_analysis.csv or TraceLens kernel_summary.csv written by magpie");
      }
      continue;
    }
    auto at = [&](int i) {
      return i >= 0 && static_cast<size_t>(i) < fields.size() ? fields[i] : std::string();
    };
    OpCell c{to_double(at(i_time)), static_cast<int64_t>(to_double(at(i_calls))),
             to_double(at(i_share))};
    out.emplace_back(at(i_name), c);
  }
  return out;
}

}  // namespace

std::vector<OpTableSource> find_op_tables(const fs::path& ws) {
  std::error_code ec;
  for (const auto& p : {ws / "gap_analysis" / "gap_analysis.csv", ws / "gap_analysis.csv"})
    if (fs::is_regular_file(p, ec)) return {{"gap_analysis", p}};
  std::vector<OpTableSource> out;
  fs::path tl = ws / "tracelens";
  if (!fs::is_directory(tl, ec) && ws.filename() == "tracelens") tl = ws;
  if (fs::is_directory(tl, ec)) {
    for (const auto& e : fs::directory_iterator(tl, ec)) {
      fs::path csv = e.path() / "kernel_summary.csv";
      if (fs::is_regular_file(csv, ec))
        out.push_back({"tracelens/" + e.path().filename().string(), csv});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.section < b.section; });
  return out;
}

OpTableComparison compare_op_tables(const std::vector<DiffInput>& inputs) {
  if (inputs.size() < 2) {
    throw Error(ErrorKind::kUsage,
                fmt::format("a side-by-side needs two or more workspaces, got {}", inputs.size()));
  }
  OpTableComparison t;
  std::vector<std::vector<OpTableSource>> sources;
  for (const auto& in : inputs) {
    auto found = find_op_tables(in.workspace);
    if (found.empty()) {
      throw Error(
          ErrorKind::kNotFound,
          "no op table in the workspace (gap_analysis/gap_analysis.csv or "
          "tracelens/*/kernel_summary.csv)",
          in.workspace.string(), std::nullopt,
          "run magpie benchmark --trace-dir (gap analysis) or magpie tracelens with -o into it");
    }
    sources.push_back(std::move(found));
    t.workspaces.push_back(in.workspace);
  }
  t.labels = diff_labels(inputs);
  for (const auto& s : sources[0]) {
    bool everywhere = std::all_of(sources.begin(), sources.end(), [&](const auto& v) {
      return std::any_of(v.begin(), v.end(), [&](const auto& o) { return o.section == s.section; });
    });
    if (everywhere)
      t.sections.push_back(s.section);
    else
      t.warnings.push_back(fmt::format("section {} is not in every workspace: skipped", s.section));
  }
  if (t.sections.empty()) {
    throw Error(ErrorKind::kUsage,
                "the workspaces share no op table (one has a gap analysis, another TraceLens?)",
                inputs[0].workspace.string());
  }
  const size_t n = inputs.size();
  for (const auto& section : t.sections) {
    std::vector<OpRow> rows;
    std::map<std::string, size_t> index;
    for (size_t w = 0; w < n; ++w) {
      auto src = std::find_if(sources[w].begin(), sources[w].end(),
                              [&](const auto& o) { return o.section == section; });
      const Columns& cols = section == "gap_analysis" ? kGapColumns : kTraceLensColumns;
      for (auto& [name, cell] : read_op_csv(src->csv, cols)) {
        auto [it, inserted] = index.emplace(name, rows.size());
        if (inserted) rows.push_back({section, name, std::vector<std::optional<OpCell>>(n)});
        auto& slot = rows[it->second].cells[w];
        if (slot) {  // the same name twice (per-shape rows): add up
          slot->time_us += cell.time_us;
          slot->calls += cell.calls;
          slot->share_pct += cell.share_pct;
        } else {
          slot = cell;
        }
      }
    }
    auto key = [](const OpRow& r) {
      for (const auto& c : r.cells)
        if (c) return c->time_us;
      return 0.0;
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const OpRow& a, const OpRow& b) {
      bool ab = a.cells[0].has_value(), bb = b.cells[0].has_value();
      if (ab != bb) return ab;  // rows of the baseline first
      return key(a) > key(b);
    });
    t.rows.insert(t.rows.end(), rows.begin(), rows.end());
  }
  return t;
}

std::string op_table_csv(const OpTableComparison& t) {
  report::CsvWriter csv;
  std::vector<std::string> header{"section", "name"};
  for (size_t w = 0; w < t.labels.size(); ++w) {
    for (const char* col : {"time_us", "calls", "share_pct"})
      header.push_back(t.labels[w] + " " + col);
    if (w > 0) {
      header.push_back(t.labels[w] + " delta_us");
      header.push_back(t.labels[w] + " delta_pct");
    }
  }
  csv.row(header);
  for (const auto& r : t.rows) {
    std::vector<std::string> f{r.section, r.name};
    const double base = r.cells[0] ? r.cells[0]->time_us : 0;
    for (size_t w = 0; w < r.cells.size(); ++w) {
      const auto& c = r.cells[w];
      if (c) {
        f.push_back(report::fixed(c->time_us, 3));
        f.push_back(std::to_string(c->calls));
        f.push_back(report::fixed(c->share_pct, 2));
      } else {
        f.insert(f.end(), {"", "", ""});
      }
      if (w > 0) {
        const double cand = c ? c->time_us : 0;
        f.push_back(report::fixed(cand - base, 3));
        f.push_back(base > 0 && c ? report::fixed((cand - base) / base * 100, 2) : "");
      }
    }
    csv.row(f);
  }
  return csv.str();
}

}  // namespace magpie::store
