#include "python_tables.hpp"

#include <fmt/format.h>

#include <nanobind/ndarray.h>

#include <limits>

#include "sources/kernel_name.hpp"

namespace magpie::python_api {

namespace nb = nanobind;

namespace {

template <class T>
nb::object numpy_column(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner));
}

nb::object list_column(const std::vector<std::string>& values) {
  nb::list out;
  for (const auto& v : values) out.append(nb::str(v.data(), v.size()));
  return out;
}

std::string dims_text(const std::array<int32_t, 3>& d) { return fmt::format("[{}, {}, {}]", d[0], d[1], d[2]); }

}  // namespace

nb::dict to_python(Table&& table) {
  nb::dict out;
  for (auto& column : table) {
    nb::object values = std::visit(
        [](auto& v) -> nb::object {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::vector<std::string>>) return list_column(v);
          else return numpy_column(std::move(v));
        },
        column.values);
    out[nb::str(column.name.data(), column.name.size())] = values;
  }
  return out;
}

Table kernel_table(const trace::Trace& trace) {
  const auto& e = trace.events;
  std::vector<int64_t> ts, dur, device, stream, correlation, external_id;
  std::vector<std::string> name, category, grid, block;
  for (size_t r = 0; r < e.size(); ++r) {
    if (!trace::is_gpu_activity(e.category[r])) continue;
    ts.push_back(e.ts_ns[r]);
    dur.push_back(e.dur_ns[r]);
    name.emplace_back(trace.name(r));
    category.emplace_back(trace.str(e.cat_name[r]));
    device.push_back(e.device[r]);
    stream.push_back(e.stream[r]);
    correlation.push_back(e.correlation[r]);
    external_id.push_back(e.external_id[r]);
    const bool has_detail = e.detail[r] != trace::kNoDetail && e.category[r] == trace::Category::kKernel;
    grid.push_back(has_detail ? dims_text(e.kernel_details[e.detail[r]].grid) : "");
    block.push_back(has_detail ? dims_text(e.kernel_details[e.detail[r]].block) : "");
  }
  return {{"ts_ns", std::move(ts)},           {"dur_ns", std::move(dur)},
          {"name", std::move(name)},          {"category", std::move(category)},
          {"device", std::move(device)},      {"stream", std::move(stream)},
          {"correlation", std::move(correlation)}, {"external_id", std::move(external_id)},
          {"grid", std::move(grid)},          {"block", std::move(block)}};
}

Table op_table(const trace::Trace& trace) {
  const auto& e = trace.events;
  std::vector<int64_t> ts, dur, external_id;
  std::vector<std::string> name, pid, tid, input_dims;
  for (size_t r = 0; r < e.size(); ++r) {
    if (e.category[r] != trace::Category::kCpuOp) continue;
    ts.push_back(e.ts_ns[r]);
    dur.push_back(e.dur_ns[r]);
    name.emplace_back(trace.name(r));
    pid.push_back(trace.thread_key_text(e.pid[r]));
    tid.push_back(trace.thread_key_text(e.tid[r]));
    external_id.push_back(e.external_id[r]);
    const uint32_t d = e.detail[r];
    input_dims.emplace_back(d != trace::kNoDetail && d < e.op_details.size()
                                ? trace.str(e.op_details[d].input_dims)
                                : std::string_view{});
  }
  return {{"ts_ns", std::move(ts)},   {"dur_ns", std::move(dur)},           {"name", std::move(name)},
          {"pid", std::move(pid)},    {"tid", std::move(tid)},              {"external_id", std::move(external_id)},
          {"input_dims", std::move(input_dims)}};
}

Table timeline_table(const analysis::GpuTimeline& t) {
  auto one = [](double v) { return std::vector<double>{v}; };
  return {{"span_us", one(t.span_us)},
          {"busy_us", one(t.busy_us)},
          {"idle_us", one(t.idle_us)},
          {"computation_us", one(t.computation_us)},
          {"exposed_communication_us", one(t.exposed_communication_us)},
          {"exposed_memcpy_us", one(t.exposed_memcpy_us)}};
}

Table gap_kernel_table(const analysis::GapAnalysisResult& result) {
  const auto rows = analysis::make_rows(result.merged, result.total_duration_us, result.config.top_k);
  std::vector<std::string> name, shapes, normalized, category, launching_op;
  std::vector<int64_t> calls;
  std::vector<double> total, avg, pct, median, min, max, stddev, cumulative;
  for (const auto& r : rows) {
    name.push_back(r.name);
    calls.push_back(static_cast<int64_t>(r.calls));
    total.push_back(r.total_us);
    avg.push_back(r.avg_us);
    pct.push_back(r.pct_total);
    shapes.push_back(r.input_shapes);
    normalized.push_back(r.parsed.normalized);
    category.emplace_back(sources::to_string(r.parsed.category));
    median.push_back(r.median_us);
    min.push_back(r.min_us);
    max.push_back(r.max_us);
    stddev.push_back(r.std_us);
    cumulative.push_back(r.cumulative_pct);
    launching_op.push_back(r.launching_op);
  }
  // gap_analysis.csv's headers (analysis/gap_analysis_report.cpp), so a
  // DataFrame and the CSV read by pandas line up column for column.
  return {{"Name", std::move(name)},
          {"Calls", std::move(calls)},
          {std::string(analysis::total_time_column(analysis::time_basis(result))), std::move(total)},
          {"Avg time (us)", std::move(avg)},
          {"% Total", std::move(pct)},
          {"Input Shapes", std::move(shapes)},
          {"Normalized Name", std::move(normalized)},
          {"Category", std::move(category)},
          {"Median (us)", std::move(median)},
          {"Min (us)", std::move(min)},
          {"Max (us)", std::move(max)},
          {"Std (us)", std::move(stddev)},
          {"Cumulative %", std::move(cumulative)},
          {"Launching Op", std::move(launching_op)}};
}

Table gap_rank_table(const analysis::GapAnalysisResult& result) {
  std::vector<int64_t> rank, cycle, device_events, host_events;
  std::vector<std::string> trace_file;
  std::vector<double> total, span, busy, idle, computation, comm, memcpy;
  for (const auto& r : result.ranks) {
    rank.push_back(r.rank);
    cycle.push_back(r.cycle);
    trace_file.push_back(r.trace_file);
    total.push_back(r.total_duration_us);
    device_events.push_back(static_cast<int64_t>(r.device_events));
    host_events.push_back(static_cast<int64_t>(r.host_events));
    span.push_back(r.timeline.span_us);
    busy.push_back(r.timeline.busy_us);
    idle.push_back(r.timeline.idle_us);
    computation.push_back(r.timeline.computation_us);
    comm.push_back(r.timeline.exposed_communication_us);
    memcpy.push_back(r.timeline.exposed_memcpy_us);
  }
  return {{"rank", std::move(rank)},
          {"cycle", std::move(cycle)},
          {"trace_file", std::move(trace_file)},
          {"total_duration_us", std::move(total)},
          {"device_events", std::move(device_events)},
          {"host_events", std::move(host_events)},
          {"span_us", std::move(span)},
          {"busy_us", std::move(busy)},
          {"idle_us", std::move(idle)},
          {"computation_us", std::move(computation)},
          {"exposed_communication_us", std::move(comm)},
          {"exposed_memcpy_us", std::move(memcpy)}};
}

Table op_comparison_table(const store::OpTableComparison& t) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> section, name;
  for (const auto& r : t.rows) {
    section.push_back(r.section);
    name.push_back(r.name);
  }
  Table out{{"section", std::move(section)}, {"name", std::move(name)}};
  for (size_t w = 0; w < t.labels.size(); ++w) {
    std::vector<double> time, share, delta, delta_pct;
    std::vector<int64_t> calls;
    std::vector<double> calls_or_nan;
    bool all_present = true;
    for (const auto& r : t.rows) {
      const auto& c = r.cells[w];
      all_present = all_present && c.has_value();
      time.push_back(c ? c->time_us : nan);
      calls.push_back(c ? c->calls : 0);
      calls_or_nan.push_back(c ? static_cast<double>(c->calls) : nan);
      share.push_back(c ? c->share_pct : nan);
      const double base = r.cells[0] ? r.cells[0]->time_us : 0;  // as op_table_csv
      delta.push_back((c ? c->time_us : 0) - base);
      delta_pct.push_back(base > 0 && c ? (c->time_us - base) / base * 100 : nan);
    }
    const std::string& label = t.labels[w];
    out.push_back({label + " time_us", std::move(time)});
    if (all_present) out.push_back({label + " calls", std::move(calls)});
    else out.push_back({label + " calls", std::move(calls_or_nan)});
    out.push_back({label + " share_pct", std::move(share)});
    if (w > 0) {
      out.push_back({label + " delta_us", std::move(delta)});
      out.push_back({label + " delta_pct", std::move(delta_pct)});
    }
  }
  return out;
}

}  // namespace magpie::python_api
