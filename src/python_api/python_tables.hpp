#pragma once
// Tables the Python API hands back: named columns built in C++ from a job's
// typed result (no analysis here), then turned into NumPy arrays (numbers,
// no copy) and lists (text) that Magpie/api.py puts into a pandas DataFrame.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>

#include "analysis/gap_analysis.hpp"
#include "analysis/gpu_timeline.hpp"
#include "store/op_table_compare.hpp"
#include "trace/trace.hpp"

namespace magpie::python_api {

struct Column {
  std::string name;
  std::variant<std::vector<int64_t>, std::vector<double>, std::vector<std::string>> values;
};
using Table = std::vector<Column>;

// {name: numpy.ndarray | list[str]}, in column order; needs the GIL.
nanobind::dict to_python(Table&& table);

// Kernels, memory copies and sets: one row per GPU activity event.
Table kernel_table(const trace::Trace& trace);
// cpu_op events: one row each.
Table op_table(const trace::Trace& trace);
// One row: the GPU timeline's parts (gap analysis's per-rank `timeline`).
Table timeline_table(const analysis::GpuTimeline& timeline);
// gap_analysis.csv's rows and columns (numbers unrounded), without source columns.
Table gap_kernel_table(const analysis::GapAnalysisResult& result);
// One row per rank: its trace, kernel time and GPU timeline.
Table gap_rank_table(const analysis::GapAnalysisResult& result);

// `results diff --ops`: op_table_csv's rows and columns, numbers unrounded; a
// cell absent from a workspace's table is NaN (its calls column then is float).
Table op_comparison_table(const store::OpTableComparison& table);

}  // namespace magpie::python_api
