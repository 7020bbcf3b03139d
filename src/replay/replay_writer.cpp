#include "replay/replay_writer.hpp"

#include <fmt/format.h>

#include <system_error>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::replay {
namespace fs = std::filesystem;
namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

nlohmann::json cost_json(const OpCost& c) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : c.kernels) {
    kernels.push_back({{"name", k.name},
                       {"count", k.count},
                       {"total_us", us(k.total_ns)},
                       {"mean_us", k.count ? us(k.total_ns) / static_cast<double>(k.count) : 0.0}});
  }
  return {{"calls", c.calls},
          {"calls_with_gpu_work", c.calls_with_gpu_work},
          {"kernel_count", c.kernel_count},
          {"gpu_total_us", us(c.total_ns)},
          {"gpu_mean_us_per_call", c.mean_ns_per_call() / 1e3},
          {"cpu_total_us", us(c.cpu_total_ns)},
          {"kernels", kernels}};
}

nlohmann::json signature_json(const OpSignature& s) {
  return {{"name", s.name},
          {"input_dims", s.input_dims},
          {"input_type", s.input_type},
          {"input_strides", s.input_strides},
          {"concrete_inputs", s.concrete_inputs}};
}

std::string md_cell(std::string s) {
  for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  return s;
}

std::string short_name(const std::string& s, size_t n = 90) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "…";
}

}  // namespace

std::string compare_yaml_text(const ReplayTarget& t, std::string_view trace_name,
                              const std::string& working_dir) {
  std::string dir =
      working_dir.empty() ? "" : fmt::format("    working_dir: \"{}\"\n", working_dir);
  // The roofline floor: a median below it (× floor_tolerance) is rejected as impossible.
  if (t.min_bytes > 0) dir += fmt::format("    min_bytes: {:.0f}\n", t.min_bytes);
  if (t.min_flops > 0) dir += fmt::format("    min_flops: {:.0f}\n", t.min_flops);
  return fmt::format(
      "# magpie compare -k compare.yaml      (or: magpie analyze -k compare.yaml)\n"
      "# Written by `magpie replay` from {trace}: {name}, rank {rank} by GPU time.\n"
      "# baseline.py calls the recorded op; candidate.py starts as a copy of it:\n"
      "# edit its `replay`. The candidate takes baseline.get_inputs, so it always\n"
      "# sees the recorded shapes, strides and dtypes.\n"
      "kernels:\n"
      "  - id: baseline\n"
      "    type: pytorch\n{dir}"
      "    bench_target: {{module: baseline, callable: replay, get_inputs: get_inputs}}\n"
      "  - id: candidate\n"
      "    type: pytorch\n{dir}"
      "    bench_target: {{module: candidate, callable: replay, get_inputs: "
      "\"baseline:get_inputs\"}}\n"
      "correctness:\n"
      "  seeds: 3\n"
      "performance:\n"
      "  min_rounds: 3    # then more until the verdict is settled, at most max_rounds;\n"
      "  max_rounds: 10   # `rounds: N` (or --rounds N) for exactly N\n"
      "latency:\n"
      "  min_time_s: 0.3   # per round; a replayed op is one call of at most a few ms\n"
      "  max_time_s: 3\n",
      fmt::arg("trace", trace_name), fmt::arg("name", t.signature.name), fmt::arg("rank", t.rank),
      fmt::arg("dir", dir));
}

nlohmann::json note_json(const ReplayTarget& t) {
  nlohmann::json args = nlohmann::json::array();
  for (const auto& a : t.arguments) {
    nlohmann::json j{{"kind", to_string(a.kind)}};
    if (a.kind == ArgumentKind::kTensor || a.kind == ArgumentKind::kNumber) {
      j["shape"] = a.tensor.shape;
      j["strides"] = a.tensor.strides;
      j["dtype"] = a.tensor.torch_dtype;
    } else if (a.kind == ArgumentKind::kTensorList) {
      j["tensors"] = nlohmann::json::array();
      for (const auto& e : a.tensors)
        j["tensors"].push_back(
            {{"shape", e.shape}, {"strides", e.strides}, {"dtype", e.torch_dtype}});
    } else if (a.kind == ArgumentKind::kScalar) {
      j["value"] = a.scalar.text;
    } else if (a.kind == ArgumentKind::kScalarList) {
      std::vector<std::string> v;
      for (const auto& s : a.list) v.push_back(s.text);
      j["value"] = v;
    }
    args.push_back(std::move(j));
  }
  return {{"rank", t.rank},
          {"slug", t.slug},
          {"op", t.signature.name},
          {"family", to_string(t.op->family)},
          {"signature", signature_json(t.signature)},
          {"arguments", args},
          {"described", describe_arguments(t.arguments)},
          {"cost", cost_json(t.cost)},
          {"share_of_trace_gpu_time", t.share_of_gpu_time},
          {"roofline_floor", {{"min_bytes", t.min_bytes}, {"min_flops", t.min_flops}}},
          {"runs_on_cpu", t.runs_on_cpu},
          {"cpu_reason", t.runs_on_cpu ? nlohmann::json(nullptr) : nlohmann::json(t.cpu_reason)},
          {"notes", t.notes}};
}

std::string note_markdown(const ReplayTarget& t, std::string_view trace_name) {
  std::string s =
      fmt::format("# {} (rank {} by GPU time in {})\n\n", t.signature.name, t.rank, trace_name);
  s += fmt::format("Arguments: `{}`\n\n", describe_arguments(t.arguments));
  s += "| what the trace says | value |\n| --- | ---: |\n";
  s += fmt::format(
      "| calls | {} |\n| calls that launched GPU work | {} |\n| GPU events (kernels, copies, sets) "
      "| {} |\n",
      t.cost.calls, t.cost.calls_with_gpu_work, t.cost.kernel_count);
  s += fmt::format("| GPU time, total | {:.1f} µs |\n| GPU time per call (mean) | {:.2f} µs |\n",
                   us(t.cost.total_ns), t.cost.mean_ns_per_call() / 1e3);
  s += fmt::format(
      "| share of the trace's GPU time | {:.2f}% |\n| host time of the calls | {:.1f} µs |\n\n",
      100 * t.share_of_gpu_time, us(t.cost.cpu_total_ns));
  if (!t.cost.kernels.empty()) {
    s += "| kernel | count | total µs | mean µs |\n| --- | ---: | ---: | ---: |\n";
    for (const auto& k : t.cost.kernels) {
      s += fmt::format("| `{}` | {} | {:.1f} | {:.2f} |\n", md_cell(short_name(k.name, 120)),
                       k.count, us(k.total_ns),
                       k.count ? us(k.total_ns) / static_cast<double>(k.count) : 0.0);
    }
    s += "\n";
  }
  if (!t.notes.empty()) {
    s += "Assumptions of the replay:\n\n";
    for (const auto& n : t.notes) s += "- " + n + "\n";
    s += "\n";
  }
  s += t.runs_on_cpu ? "Runs on CPU torch too (for a correctness check without a GPU).\n"
                     : fmt::format("GPU only: {}.\n", t.cpu_reason);
  s += "\nCompare a candidate: edit `candidate.py`, then `magpie compare -k compare.yaml`.\n";
  return s;
}

nlohmann::json skipped_json(const SkippedOp& k) {
  return {{"rank", k.rank},
          {"op", k.signature.name},
          {"signature", signature_json(k.signature)},
          {"cost", cost_json(k.cost)},
          {"reason", k.reason}};
}

nlohmann::json outcome_json(const ReplayOutcome& o, const ReplayFiles* files) {
  nlohmann::json targets = nlohmann::json::array();
  for (size_t i = 0; i < o.targets.size(); ++i) {
    auto j = note_json(o.targets[i]);
    if (files && i < files->targets.size()) {
      const auto& f = files->targets[i];
      j["files"] = {{"dir", f.dir.string()},
                    {"baseline", f.baseline.string()},
                    {"candidate", f.candidate.string()},
                    {"compare_yaml", f.compare_yaml.string()},
                    {"note_md", f.note_md.string()},
                    {"note_json", f.note_json.string()},
                    {"candidate_kept", f.candidate_kept}};
    }
    targets.push_back(std::move(j));
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& k : o.skipped) skipped.push_back(skipped_json(k));
  nlohmann::json j{{"trace", o.trace_path},
                   {"selection", o.selection},
                   {"trace_gpu_us", us(o.trace_gpu_ns)},
                   {"unattributed_gpu_us", us(o.unattributed_ns)},
                   {"graph_replayed_gpu_events", o.graph_replayed_kernels},
                   {"ranked_by_host_time", o.ranked_by_host_time},
                   {"targets", targets},
                   {"skipped", skipped},
                   {"warnings", o.warnings}};
  if (files) j["output_dir"] = files->dir.string();
  if (o.critical_path) {
    j["critical_path"] = analysis::to_json(*o.critical_path);
    j["recommendations"] = j["critical_path"]["recommendations"];
    nlohmann::json ranked = nlohmann::json::array();
    int e2e = 0;
    for (const auto& r : o.by_end_to_end_gain) {
      ranked.push_back({{"e2e_rank", ++e2e},
                        {"kernel_time_rank", r.kernel_rank},
                        {"op", r.op},
                        {"input_dims", r.arguments},
                        {"gpu_us", us(r.kernel_ns)},
                        {"e2e_gain_bound_us", r.gain_ns ? nlohmann::json(us(*r.gain_ns)) : nlohmann::json()}});
    }
    j["by_end_to_end_gain"] = std::move(ranked);
  }
  return j;
}

namespace {

// What sets end-to-end time and what to do first, before the kernel-time table.
std::string end_to_end_markdown(const ReplayOutcome& o) {
  if (!o.critical_path) return "";
  const auto& cp = *o.critical_path;
  const auto recs = analysis::rank_recommendations(cp);
  std::string s = fmt::format("Critical path: {}.\n\n", analysis::headline(cp));
  if (!recs.empty() && recs.front().kind != "kernel") {
    s += "**This trace is host-bound: fix the host side first; a faster kernel buys little end to end.**\n\n";
    for (const auto& r : recs) {
      if (r.kind == "kernel") continue;
      s += fmt::format("- `{}`: predicted gain {:.1f} µs ({:.1f}%) — {}\n", r.target, us(r.gain_ns), r.gain_pct,
                       r.fix);
    }
    s += "\n";
  }
  s += "Selected ops by predicted end-to-end gain (a bound: the GPU work of every call of the op name at zero), kernel-time rank "
       "beside:\n\n| e2e rank | op | arguments | e2e gain µs (op name) | kernel-time rank | GPU µs |\n"
       "| ---: | --- | --- | ---: | ---: | ---: |\n";
  int e2e = 0;
  for (const auto& r : o.by_end_to_end_gain) {
    s += fmt::format("| {} | `{}` | `{}` | {} | {} | {:.1f} |\n", ++e2e, r.op, md_cell(short_name(r.arguments, 60)),
                     r.gain_ns ? fmt::format("{:.1f}", us(*r.gain_ns)) : std::string("-"), r.kernel_rank,
                     us(r.kernel_ns));
  }
  return s + "\nBy kernel time:\n\n";
}

}  // namespace

std::string summary_markdown(const ReplayOutcome& o) {
  std::string s =
      fmt::format("# magpie replay of {}\n\nSelection: {}. GPU time in the trace: {:.1f} µs",
                  fs::path(o.trace_path).filename().string(), o.selection, us(o.trace_gpu_ns));
  s += o.unattributed_ns
           ? fmt::format(" ({:.1f} µs with no CPU op found).\n\n", us(o.unattributed_ns))
           : ".\n\n";
  s += end_to_end_markdown(o);
  s += "| rank | op | arguments | calls | GPU µs | µs/call | share | host µs | replay |\n";
  s += "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n";
  size_t ti = 0, si = 0;
  while (ti < o.targets.size() || si < o.skipped.size()) {
    const bool take_target = si >= o.skipped.size() ||
                             (ti < o.targets.size() && o.targets[ti].rank < o.skipped[si].rank);
    if (take_target) {
      const auto& t = o.targets[ti++];
      s += fmt::format(
          "| {} | `{}` | `{}` | {} | {:.1f} | {:.2f} | {:.1f}% | {:.1f} | [{}/]({}/note.md){} |\n",
          t.rank, t.signature.name, md_cell(short_name(describe_arguments(t.arguments))),
          t.cost.calls, us(t.cost.total_ns), t.cost.mean_ns_per_call() / 1e3,
          100 * t.share_of_gpu_time, us(t.cost.cpu_total_ns), t.slug, t.slug,
          t.runs_on_cpu ? "" : " (GPU only)");
    } else {
      const auto& k = o.skipped[si++];
      s += fmt::format(
          "| {} | `{}` | `{}` | {} | {:.1f} | {:.2f} | {:.1f}% | {:.1f} | not replayed: {} |\n",
          k.rank, k.signature.name, md_cell(short_name(k.signature.input_dims)), k.cost.calls,
          us(k.cost.total_ns), k.cost.mean_ns_per_call() / 1e3,
          o.trace_gpu_ns
              ? 100.0 * static_cast<double>(k.cost.total_ns) / static_cast<double>(o.trace_gpu_ns)
              : 0.0,
          us(k.cost.cpu_total_ns), md_cell(k.reason));
    }
  }
  for (const auto& w : o.warnings) s += "\nWarning: " + w + "\n";
  return s;
}

ReplayFiles write_replay(const ReplayOutcome& o, const fs::path& output_dir) {
  ReplayFiles files;
  files.dir = output_dir;
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  if (ec) {
    throw Error(ErrorKind::kUnreadable,
                fmt::format("cannot create the output folder: {}", ec.message()),
                output_dir.string(), std::nullopt, "pass a writable -o DIR");
  }
  const std::string trace_name = fs::path(o.trace_path).filename().string();
  for (const auto& t : o.targets) {
    TargetFiles f;
    f.slug = t.slug;
    f.dir = output_dir / t.slug;
    fs::create_directories(f.dir, ec);
    if (ec) {
      throw Error(ErrorKind::kUnreadable, fmt::format("cannot create a folder: {}", ec.message()),
                  f.dir.string());
    }
    f.baseline = f.dir / "baseline.py";
    f.candidate = f.dir / "candidate.py";
    f.compare_yaml = f.dir / "compare.yaml";
    f.note_md = f.dir / "note.md";
    f.note_json = f.dir / "note.json";
    write_file_atomic(f.baseline, t.module_text);
    // Never overwrite a candidate the user may have edited.
    f.candidate_kept = fs::exists(f.candidate);
    if (!f.candidate_kept) write_file_atomic(f.candidate, t.module_text);
    write_file_atomic(f.compare_yaml, compare_yaml_text(t, trace_name));
    write_file_atomic(f.note_md, note_markdown(t, trace_name));
    write_file_atomic(f.note_json, note_json(t).dump(2) + "\n");
    files.targets.push_back(std::move(f));
  }
  files.summary_md = output_dir / "replay.md";
  files.summary_json = output_dir / "replay.json";
  write_file_atomic(files.summary_md, summary_markdown(o));
  write_file_atomic(files.summary_json, outcome_json(o, &files).dump(2) + "\n");
  return files;
}

}  // namespace magpie::replay
