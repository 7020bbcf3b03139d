#include "analysis/trace_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "analysis/critical_path_graph.hpp"
#include "trace/trace_links.hpp"

namespace magpie::analysis {

using trace::Category;

namespace {

bool is_op(Category c) { return c == Category::kCpuOp || c == Category::kUserAnnotation; }
bool alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string normalised_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  int depth = 0;  // inside template arguments
  for (size_t i = 0; i < name.size();) {
    const char c = name[i];
    if (c == '<') {
      if (depth++ == 0) out += '<';
      ++i;
      continue;
    }
    if (c == '>' && depth > 0) {
      if (--depth == 0) out += '>';
      ++i;
      continue;
    }
    if (depth > 0) {
      ++i;
      continue;
    }
    if (alnum(c)) {
      size_t j = i;
      size_t digits = 0;
      while (j < name.size() && alnum(name[j])) digits += digit(name[j++]) ? 1 : 0;
      const std::string_view token = name.substr(i, j - i);
      if (token.size() >= 16 && digits > 0 && digits < token.size()) {
        out += '*';  // a hash: compiled-graph ids, cache keys
      } else {
        for (size_t k = 0; k < token.size();) {
          if (digit(token[k])) {  // a whole run: "sm90" keeps it, "_0" and "#3" read N
            const size_t run = k;
            while (k < token.size() && digit(token[k])) ++k;
            if (run > 0 && alpha(token[run - 1]))
              out.append(token.substr(run, k - run));
            else
              out += 'N';
          } else {
            out += token[k++];
          }
        }
      }
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

const char* to_string(DiffStatus s) {
  switch (s) {
    case DiffStatus::kUnchanged: return "unchanged";
    case DiffStatus::kChanged: return "changed";
    case DiffStatus::kAdded: return "added";
    case DiffStatus::kRemoved: return "removed";
    case DiffStatus::kMoved: return "moved";
  }
  return "unchanged";
}

size_t TraceDiff::count_ops(DiffStatus s) const {
  return static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [s](const auto& r) { return r.status == s; }));
}
size_t TraceDiff::count_kernels(DiffStatus s) const {
  return static_cast<size_t>(
      std::count_if(kernels.begin(), kernels.end(), [s](const auto& r) { return r.status == s; }));
}

namespace {

// One trace's ops and GPU work grouped by place, and its critical path.
struct Side {
  struct Place {
    std::string name, parent, shapes;
    int depth = 0;
    size_t calls = 0;
    int64_t host_ns = 0, gpu_ns = 0;
    size_t first = 0;  // order of first appearance
  };
  struct KernelGroup {
    std::string name, op;
    size_t calls = 0;
    int64_t gpu_ns = 0;
    size_t first = 0;
  };
  std::map<std::string, Place> places;          // key: parent \x1f name \x1f shapes
  std::map<std::string, KernelGroup> kernels;  // key: op key \x1f name
  size_t shaped_ops = 0;
  SideSummary summary;
  CriticalPathReport report;
  std::vector<NameShare> step_ops;  // path time per op name on the median iteration's path
};

std::string input_dims(const trace::Trace& t, size_t row) {
  const auto& e = t.events;
  if (e.category[row] != Category::kCpuOp || e.detail[row] == trace::kNoDetail ||
      e.detail[row] >= e.op_details.size())
    return {};
  return std::string(t.str(e.op_details[e.detail[row]].input_dims));
}

bool has_dims(const trace::Trace& t, size_t row) {
  const auto& e = t.events;
  return e.category[row] == Category::kCpuOp && e.detail[row] != trace::kNoDetail &&
         e.detail[row] < e.op_details.size() && e.op_details[e.detail[row]].input_dims != trace::kEmptyString;
}

// Normalised names by string id: each distinct name is normalised once.
class NameCache {
 public:
  explicit NameCache(const trace::Trace& t) : t_(t) {}
  const std::string& operator()(trace::StringId id) {
    auto [it, fresh] = names_.try_emplace(id);
    if (fresh) it->second = normalised_name(t_.str(id));
    return it->second;
  }

 private:
  const trace::Trace& t_;
  std::unordered_map<trace::StringId, std::string> names_;
};

// The innermost op (cpu_op or annotation) at or above a CPU row.
int32_t op_at_or_above(const trace::Trace& t, const trace::TraceLinks& links, int32_t r) {
  while (r >= 0 && !is_op(t.events.category[static_cast<size_t>(r)])) r = links.parent[static_cast<size_t>(r)];
  return r;
}

void collect(const trace::Trace& t, bool use_shapes, Side& side) {
  const auto& e = t.events;
  const trace::TraceLinks& links = trace::links_of(t);
  const size_t n = e.size();
  // Each op row's place: its parent's path and its own normalised name.
  std::vector<int32_t> place_of(n, -1);  // index into keys
  std::vector<std::string> keys, paths;  // per place id: map key, "parent > name" path
  std::vector<int> depth_of;
  std::vector<Side::Place*> place_list;  // per place id
  std::unordered_map<std::string, int32_t> id_of_key;
  NameCache norm(t);
  std::vector<int32_t> chain;
  std::vector<int64_t> gpu_of_row(n, 0);
  // GPU work, charged to its launching op and every op around it.
  for (size_t r = 0; r < n; ++r) {
    if (!trace::is_gpu_activity(e.category[r])) continue;
    ++side.summary.gpu_events;
    side.summary.gpu_ns += e.dur_ns[r];
    int32_t op = trace::launching_op(t, links, r);
    if (op < 0 && links.launch_of[r] >= 0) op = op_at_or_above(t, links, links.launch_of[r]);
    for (int32_t o = op; o >= 0; o = op_at_or_above(t, links, links.parent[static_cast<size_t>(o)]))
      gpu_of_row[static_cast<size_t>(o)] += e.dur_ns[r];
  }
  auto place = [&](int32_t row) -> int32_t {
    chain.clear();
    for (int32_t r = row; r >= 0 && place_of[static_cast<size_t>(r)] < 0;
         r = op_at_or_above(t, links, links.parent[static_cast<size_t>(r)]))
      chain.push_back(r);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const auto r = static_cast<size_t>(*it);
      const int32_t up = op_at_or_above(t, links, links.parent[r]);
      const std::string parent = up < 0 ? std::string() : paths[static_cast<size_t>(place_of[static_cast<size_t>(up)])];
      const std::string& name = norm(e.name[r]);
      const std::string shapes = use_shapes ? input_dims(t, r) : std::string();
      std::string key = parent + '\x1f' + name + '\x1f' + shapes;
      auto [at, fresh] = id_of_key.try_emplace(key, static_cast<int32_t>(keys.size()));
      if (fresh) {
        keys.push_back(key);
        paths.push_back(parent.empty() ? name : parent + " > " + name);
        depth_of.push_back(up < 0 ? 0 : depth_of[static_cast<size_t>(place_of[static_cast<size_t>(up)])] + 1);
        Side::Place p;
        p.name = std::string(t.name(r));
        p.parent = parent;
        p.shapes = input_dims(t, r);
        p.depth = depth_of.back();
        p.first = side.places.size();
        place_list.push_back(&side.places.emplace(key, std::move(p)).first->second);
      }
      place_of[r] = at->second;
    }
    return row < 0 ? -1 : place_of[static_cast<size_t>(row)];
  };
  for (size_t r = 0; r < n; ++r) {
    if (!is_op(e.category[r]) || e.phase[r] != trace::Phase::kComplete) continue;
    ++side.summary.ops;
    if (has_dims(t, r)) ++side.shaped_ops;
    const int32_t id = place(static_cast<int32_t>(r));
    auto& p = *place_list[static_cast<size_t>(id)];
    ++p.calls;
    p.host_ns += e.dur_ns[r];
    p.gpu_ns += gpu_of_row[r];
  }
  for (size_t r = 0; r < n; ++r) {
    if (!trace::is_gpu_activity(e.category[r])) continue;
    int32_t op = trace::launching_op(t, links, r);
    if (op < 0 && links.launch_of[r] >= 0) op = op_at_or_above(t, links, links.launch_of[r]);
    if (op >= 0 && (!is_op(e.category[static_cast<size_t>(op)]) || e.phase[static_cast<size_t>(op)] != trace::Phase::kComplete))
      op = -1;
    const int32_t id = op < 0 ? -1 : place(op);
    const std::string op_key = id < 0 ? std::string("(no op)") : keys[static_cast<size_t>(id)];
    auto [it, fresh] = side.kernels.try_emplace(op_key + '\x1f' + norm(e.name[r]));
    auto& k = it->second;
    if (fresh) {
      k.name = std::string(t.name(r));
      k.op = id < 0 ? std::string("(no op)") : paths[static_cast<size_t>(id)];
      k.first = side.kernels.size();
    }
    ++k.calls;
    k.gpu_ns += e.dur_ns[r];
  }
}

void summarise_path(const trace::Trace& t, Side& side, std::vector<std::string>& warnings, const char* which) {
  const trace::TraceLinks& links = trace::links_of(t);
  const DependencyGraph g = build_dependency_graph(t, links);
  std::vector<std::string> window_warnings;
  const auto windows = path_windows(t, links, g, window_warnings);
  side.report = analyze_critical_path(t, links, g, windows);
  auto& s = side.summary;
  s.path = t.path;
  s.rank = t.rank;
  for (const auto& d : t.devices)
    if (!d.name.empty()) {
      s.device = d.name;
      break;
    }
  s.bound = side.report.bound;
  const auto& paths = side.report.paths;
  if (paths.empty() || paths[0].length_ns() <= 0) {
    warnings.push_back(fmt::format("{} ({}): no critical path (an empty window): the end-to-end change is not "
                                   "explained for it",
                                   which, t.path));
    return;
  }
  s.window_ns = paths[0].length_ns();
  s.window = paths[0].by_category;
  s.iterations = paths.size() - 1;
  if (s.iterations == 0) return;
  // The median iteration (the lower middle one for an even count) and its
  // breakdown, which sums to its length; the mean beside it.
  std::vector<size_t> by_length;
  int64_t total = 0;
  for (size_t i = 1; i < paths.size(); ++i) {
    by_length.push_back(i);
    total += paths[i].length_ns();
  }
  std::stable_sort(by_length.begin(), by_length.end(),
                   [&](size_t x, size_t y) { return paths[x].length_ns() < paths[y].length_ns(); });
  const CriticalPath& median = paths[by_length[(by_length.size() - 1) / 2]];
  s.median_step_ns = median.length_ns();
  s.median_step = median.label;
  s.step = median.by_category;
  std::map<std::string, NameShare> ops;
  for (const auto& piece : median.pieces) {
    auto& o = ops[node_name(t, g, piece.node)];
    o.path_ns += piece.end_ns - piece.start_ns;
    if (piece.node != kNoNode && g.kind[static_cast<size_t>(piece.node)] == NodeKind::kGpu)
      o.path_gpu_ns += piece.end_ns - piece.start_ns;
  }
  for (auto& [name, o] : ops) {
    o.name = name;
    side.step_ops.push_back(std::move(o));
  }
  s.mean_step_ns = total / static_cast<int64_t>(by_length.size());
}

void fill_before(KernelDiffRow& row, const Side::KernelGroup& k) {
  row.name_before = k.name;
  row.op_before = k.op;
  row.calls_before = k.calls;
  row.gpu_before_ns = k.gpu_ns;
}
void fill_after(KernelDiffRow& row, const Side::KernelGroup& k) {
  row.name_after = k.name;
  row.op_after = k.op;
  row.calls_after = k.calls;
  row.gpu_after_ns = k.gpu_ns;
}

bool changed(int64_t a, int64_t b, const TraceDiffOptions& o) {
  const int64_t d = std::llabs(b - a);
  return d > o.changed_min_ns && static_cast<double>(d) > o.changed_fraction * static_cast<double>(std::max(a, b));
}

int64_t change_of(const OpDiffRow& r) {
  return std::max(std::llabs(r.host_after_ns - r.host_before_ns), std::llabs(r.gpu_after_ns - r.gpu_before_ns));
}

std::vector<PathShareDelta> share_deltas(const std::vector<NameShare>& before, const std::vector<NameShare>& after) {
  std::map<std::string, PathShareDelta> m;
  for (const auto& s : before) {
    auto& d = m[normalised_name(s.name)];
    if (d.name.empty()) d.name = s.name;
    d.path_before_ns += s.path_ns;
    d.gpu_before_ns += s.kernel_ns;
  }
  for (const auto& s : after) {
    auto& d = m[normalised_name(s.name)];
    if (d.name.empty()) d.name = s.name;
    d.path_after_ns += s.path_ns;
    d.gpu_after_ns += s.kernel_ns;
  }
  std::vector<PathShareDelta> v;
  for (auto& [key, d] : m) v.push_back(std::move(d));
  std::stable_sort(v.begin(), v.end(), [](const PathShareDelta& a, const PathShareDelta& b) {
    return std::llabs(a.delta_ns()) > std::llabs(b.delta_ns());
  });
  return v;
}

}  // namespace

TraceDiff diff_traces(const trace::Trace& before, const trace::Trace& after, const TraceDiffOptions& options) {
  TraceDiff d;
  Side b, a;
  summarise_path(before, b, d.warnings, "BEFORE");
  summarise_path(after, a, d.warnings, "AFTER");
  // Shapes decide a match only when both sides recorded them.
  size_t shaped_b = 0, shaped_a = 0;
  for (size_t r = 0; r < before.events.size(); ++r) shaped_b += has_dims(before, r);
  for (size_t r = 0; r < after.events.size(); ++r) shaped_a += has_dims(after, r);
  d.shapes_used = shaped_b > 0 && shaped_a > 0;
  if (!d.shapes_used && (shaped_b > 0 || shaped_a > 0))
    d.warnings.push_back(fmt::format(
        "{} recorded no input shapes (record_shapes=False): ops are matched by name and place in the op "
        "tree only; record both with record_shapes=True to tell calls of different shapes apart",
        shaped_b == 0 ? "BEFORE" : "AFTER"));
  collect(before, d.shapes_used, b);
  collect(after, d.shapes_used, a);
  d.before = b.summary;
  d.after = a.summary;

  if (d.before.rank >= 0 && d.after.rank >= 0 && d.before.rank != d.after.rank)
    d.warnings.push_back(fmt::format("the traces are of different ranks ({} and {}): a rank's work can differ "
                                     "from another's by design, not by the change",
                                     d.before.rank, d.after.rank));
  if (!d.before.device.empty() && !d.after.device.empty() && d.before.device != d.after.device)
    d.warnings.push_back(fmt::format("the traces ran on different GPUs ({} and {}): GPU times compare the "
                                     "hardware as well as the change",
                                     d.before.device, d.after.device));
  if ((d.before.gpu_events == 0) != (d.after.gpu_events == 0))
    d.warnings.push_back(fmt::format("{} has no GPU work (a CPU-only trace) and the other has: every kernel "
                                     "shows as {}, and GPU times of ops compare against nothing",
                                     d.before.gpu_events == 0 ? "BEFORE" : "AFTER",
                                     d.before.gpu_events == 0 ? "added" : "removed"));
  if (d.before.ops == 0 || d.after.ops == 0)
    d.warnings.push_back(fmt::format("{} has no CPU ops: there is no op tree to match",
                                     d.before.ops == 0 ? "BEFORE" : "AFTER"));
  if ((d.before.iterations == 0) != (d.after.iterations == 0))
    d.warnings.push_back(fmt::format("only {} has iteration annotations (ProfilerStep#N or step annotations): "
                                     "compare the whole window",
                                     d.before.iterations ? "BEFORE" : "AFTER"));
  else if (d.before.iterations != d.after.iterations)
    d.warnings.push_back(fmt::format("BEFORE has {} iterations and AFTER {}: the median iterations may be of "
                                     "different phases (warm-up, prefill, decode)",
                                     d.before.iterations, d.after.iterations));

  // Ops: union of places, in BEFORE's order, then AFTER's new ones.
  std::vector<std::pair<size_t, std::string>> order;
  for (const auto& [key, p] : b.places) order.emplace_back(p.first, key);
  std::vector<std::pair<size_t, std::string>> fresh;
  for (const auto& [key, p] : a.places)
    if (!b.places.count(key)) fresh.emplace_back(p.first, key);
  std::sort(order.begin(), order.end());
  std::sort(fresh.begin(), fresh.end());
  order.insert(order.end(), fresh.begin(), fresh.end());
  for (const auto& [first, key] : order) {
    OpDiffRow row;
    const auto ib = b.places.find(key), ia = a.places.find(key);
    const Side::Place& any = ib != b.places.end() ? ib->second : ia->second;
    row.parent = any.parent;
    row.shapes = any.shapes;
    row.depth = any.depth;
    if (ib != b.places.end()) {
      row.name_before = ib->second.name;
      row.calls_before = ib->second.calls;
      row.host_before_ns = ib->second.host_ns;
      row.gpu_before_ns = ib->second.gpu_ns;
    }
    if (ia != a.places.end()) {
      row.name_after = ia->second.name;
      row.calls_after = ia->second.calls;
      row.host_after_ns = ia->second.host_ns;
      row.gpu_after_ns = ia->second.gpu_ns;
    }
    row.paired_calls = std::min(row.calls_before, row.calls_after);
    row.status = row.calls_before == 0 ? DiffStatus::kAdded
                 : row.calls_after == 0 ? DiffStatus::kRemoved
                 : (row.calls_before != row.calls_after || changed(row.host_before_ns, row.host_after_ns, options) ||
                    changed(row.gpu_before_ns, row.gpu_after_ns, options))
                     ? DiffStatus::kChanged
                     : DiffStatus::kUnchanged;
    d.ops.push_back(std::move(row));
  }
  std::stable_sort(d.ops.begin(), d.ops.end(),
                   [](const OpDiffRow& x, const OpDiffRow& y) { return change_of(x) > change_of(y); });

  // Kernels: matched by launching place and name; then unmatched ones of one
  // name pair up across places (moved).
  std::vector<KernelDiffRow> removed;
  std::vector<const Side::KernelGroup*> added;
  std::vector<std::pair<size_t, std::string>> korder;
  for (const auto& [key, k] : b.kernels) korder.emplace_back(k.first, key);
  std::sort(korder.begin(), korder.end());
  for (const auto& [first, key] : korder) {
    KernelDiffRow row;
    fill_before(row, b.kernels.at(key));
    const auto ia = a.kernels.find(key);
    if (ia == a.kernels.end()) {
      row.status = DiffStatus::kRemoved;
      removed.push_back(std::move(row));
      continue;
    }
    fill_after(row, ia->second);
    row.status = row.calls_before != row.calls_after || changed(row.gpu_before_ns, row.gpu_after_ns, options)
                     ? DiffStatus::kChanged
                     : DiffStatus::kUnchanged;
    d.kernels.push_back(std::move(row));
  }
  korder.clear();
  for (const auto& [key, k] : a.kernels)
    if (!b.kernels.count(key)) korder.emplace_back(k.first, key);
  std::sort(korder.begin(), korder.end());
  for (const auto& [first, key] : korder) added.push_back(&a.kernels.at(key));
  std::vector<bool> taken(added.size(), false);
  for (auto& r : removed) {
    const std::string name = normalised_name(r.name_before);
    for (size_t i = 0; i < added.size(); ++i) {
      if (taken[i] || normalised_name(added[i]->name) != name) continue;
      taken[i] = true;
      fill_after(r, *added[i]);
      r.status = DiffStatus::kMoved;
      break;
    }
    d.kernels.push_back(std::move(r));
  }
  for (size_t i = 0; i < added.size(); ++i) {
    if (taken[i]) continue;
    KernelDiffRow row;
    fill_after(row, *added[i]);
    row.status = DiffStatus::kAdded;
    d.kernels.push_back(std::move(row));
  }
  std::stable_sort(d.kernels.begin(), d.kernels.end(), [](const KernelDiffRow& x, const KernelDiffRow& y) {
    return std::llabs(x.gpu_after_ns - x.gpu_before_ns) > std::llabs(y.gpu_after_ns - y.gpu_before_ns);
  });

  d.path_ops = share_deltas(b.report.ops, a.report.ops);
  d.path_kernels = share_deltas(b.report.kernels, a.report.kernels);
  if (d.before.iterations && d.after.iterations) d.path_ops_step = share_deltas(b.step_ops, a.step_ops);
  return d;
}

}  // namespace magpie::analysis
