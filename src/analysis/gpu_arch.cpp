#include "analysis/gpu_arch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "gpu/datasheet.hpp"
#include "gpu/name_match.hpp"

namespace magpie::analysis {
namespace {

using Peaks = std::map<std::string, double>;
// The roofline's view of one datasheet entry: per device (an MI250X GCD is
// half its package), peaks keyed by precision.
GpuArch from_spec(const gpu::GpuSpec& s) {
  const double per = s.devices_per_package > 1 ? 1.0 / s.devices_per_package : 1.0;
  GpuArch a;
  a.name = s.name;
  a.vendor = std::string(gpu::to_string(s.vendor));
  a.compute_major = s.compute_major;
  a.compute_minor = s.compute_minor;
  a.sm_count = static_cast<int>(s.compute_units.value * per + 0.5);
  a.mem_bw_tbps = s.memory_bandwidth_tbps.value * per;
  a.mem_gb = s.memory_gb.value * per;
  for (const auto& p : s.peaks) {
    auto& into = p.unit == gpu::ExecUnit::kMatrix ? a.matrix_tflops : a.vector_tflops;
    into[std::string(gpu::to_string(p.precision))] = p.tflops.value * per;
  }
  a.aliases = s.aliases;
  a.board_variant = !s.variant_of.empty();
  a.source = "Magpie datasheet";
  return a;
}

std::vector<GpuArch> make_builtin_table() {
  std::vector<GpuArch> out;
  for (const auto& s : gpu::datasheet()) out.push_back(from_spec(s));
  return out;
}

std::string normalise(std::string_view s) { return gpu::normalise_name(s); }
using gpu::gib;

std::vector<gpu::NameCandidate> candidates_of(const std::vector<GpuArch>& table) {
  std::vector<gpu::NameCandidate> out;
  out.reserve(table.size());
  for (const auto& a : table) out.push_back({a.name, &a.aliases, a.mem_gb});
  return out;
}

std::vector<size_t> match_by_normalised_name(std::string_view query,
                                             const std::vector<GpuArch>& table) {
  std::vector<size_t> hits;
  const std::string q = normalise(query);
  if (q.empty()) return hits;
  for (size_t i = 0; i < table.size(); ++i) {
    bool hit = normalise(table[i].name) == q;
    for (const auto& alias : table[i].aliases) hit = hit || normalise(alias) == q;
    if (hit) hits.push_back(i);
  }
  return hits;
}

std::string names_of(const std::vector<size_t>& idx, const std::vector<GpuArch>& table) {
  std::string out;
  for (size_t i : idx) {
    if (!out.empty()) out += ", ";
    out += table[i].name;
  }
  return out;
}

// Among candidates, the one whose stated memory is nearest the device's;
// nullopt when memory is unknown or two candidates tie.
std::optional<size_t> nearest_by_memory(const std::vector<size_t>& idx,
                                        const std::vector<GpuArch>& table, int64_t mem_bytes) {
  if (mem_bytes <= 0) return std::nullopt;
  const double have = gib(mem_bytes);
  std::optional<size_t> best;
  double best_gap = 0;
  bool tie = false;
  for (size_t i : idx) {
    const double gap = std::fabs(table[i].mem_gb - have);
    if (!best || gap < best_gap - 1e-9) {
      best = i;
      best_gap = gap;
      tie = false;
    } else if (std::fabs(gap - best_gap) <= 1e-9) {
      tie = true;
    }
  }
  if (tie) return std::nullopt;
  return best;
}

ArchPick pick_by_name(std::string_view device_name, int64_t mem_bytes,
                      const std::vector<GpuArch>& table) {
  auto m = gpu::match_device_name(device_name, mem_bytes, candidates_of(table),
                                  "pass --gpu-arch NAME or --gpu-arch-file with its peaks");
  if (!m.index) return {std::nullopt, m.reason};
  return {table[*m.index], m.reason};
}
ArchPick pick_by_properties(int major, int minor, int sms, int64_t mem_bytes,
                            const std::vector<GpuArch>& table) {
  if (major <= 0 && sms <= 0) {
    return {std::nullopt, "no device name or compute properties in the trace; pass --gpu-arch"};
  }
  std::vector<size_t> hits;
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& a = table[i];
    // Boards told apart from a sibling only by name (H200 NVL) never match here.
    if (!a.board_variant && a.compute_major == major && a.compute_minor == minor &&
        a.sm_count == sms) {
      hits.push_back(i);
    }
  }
  const std::string props = fmt::format("compute {}.{} with {} SMs/CUs", major, minor, sms);
  if (hits.empty()) {
    return {std::nullopt, fmt::format("unnamed GPU with {} is not in the arch table; pass "
                                      "--gpu-arch NAME or --gpu-arch-file",
                                      props)};
  }
  if (hits.size() == 1) {
    return {table[hits.front()], fmt::format("{} matched {}", props, table[hits.front()].name)};
  }
  auto by_mem = nearest_by_memory(hits, table, mem_bytes);
  if (!by_mem) {
    return {std::nullopt,
            fmt::format("{} matches {} and memory does not tell them apart; pass --gpu-arch NAME",
                        props, names_of(hits, table))};
  }
  return {table[*by_mem], fmt::format("{} matches {}; picked {} by memory ({:.1f} GiB)", props,
                                      names_of(hits, table), table[*by_mem].name, gib(mem_bytes))};
}

// ---- arch file ----------------------------------------------------------

using nlohmann::json;

[[noreturn]] void bad_field(const std::string& origin, const std::string& entry,
                            const std::string& field, const std::string& what) {
  throw Error(ErrorKind::kBadFormat,
              fmt::format("GPU arch file: {}: field '{}' {}", entry, field, what), origin,
              std::nullopt, "see docs/PERF_MODELS.md (GPU arch files) for the accepted keys");
}

double number_field(const json& v, const std::string& origin, const std::string& entry,
                    const std::string& field) {
  if (!v.is_number()) bad_field(origin, entry, field, "must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) bad_field(origin, entry, field, "must be a finite number >= 0");
  return d;
}

int int_field(const json& v, const std::string& origin, const std::string& entry,
              const std::string& field) {
  if (!v.is_number_integer()) bad_field(origin, entry, field, "must be an integer");
  const auto i = v.get<int64_t>();
  if (i < 0 || i > 1'000'000) bad_field(origin, entry, field, "is out of range");
  return static_cast<int>(i);
}

std::string string_field(const json& v, const std::string& origin, const std::string& entry,
                         const std::string& field) {
  if (!v.is_string()) bad_field(origin, entry, field, "must be a string");
  return v.get<std::string>();
}

void merge_peaks(Peaks& into, const json& v, const std::string& origin, const std::string& entry,
                 const std::string& field) {
  if (!v.is_object()) bad_field(origin, entry, field, "must be an object of precision: TFLOP/s");
  for (const auto& [key, val] : v.items()) {
    into[key] = number_field(val, origin, entry, field + "." + key);
  }
}

void add_alias(GpuArch& arch, const std::string& alias) {
  if (alias.empty()) return;
  const std::string n = normalise(alias);
  if (normalise(arch.name) == n) return;
  for (const auto& a : arch.aliases) {
    if (normalise(a) == n) return;
  }
  arch.aliases.push_back(alias);
}

// Applies one file entry's fields onto `arch` (a copy of a base entry or a blank).
void apply_entry(GpuArch& arch, const json& e, const std::string& origin,
                 const std::string& entry) {
  for (const auto& [key, v] : e.items()) {
    if (key == "name") continue;  // matched by the caller
    if (key == "vendor") {
      arch.vendor = string_field(v, origin, entry, key);
    } else if (key == "compute_major") {
      arch.compute_major = int_field(v, origin, entry, key);
    } else if (key == "compute_minor") {
      arch.compute_minor = int_field(v, origin, entry, key);
    } else if (key == "sm_count" || key == "num_cus") {
      arch.sm_count = int_field(v, origin, entry, key);
    } else if (key == "mem_bw_tbps") {
      arch.mem_bw_tbps = number_field(v, origin, entry, key);
    } else if (key == "mem_bw_gbps") {  // TraceLens
      arch.mem_bw_tbps = number_field(v, origin, entry, key) / 1000.0;
    } else if (key == "mem_gb" || key == "memory_gb") {
      arch.mem_gb = number_field(v, origin, entry, key);
    } else if (key == "matrix_tflops") {
      merge_peaks(arch.matrix_tflops, v, origin, entry, key);
    } else if (key == "vector_tflops") {
      merge_peaks(arch.vector_tflops, v, origin, entry, key);
    } else if (key == "max_achievable_tflops") {  // TraceLens: {"matrix_bf16": ..}
      if (!v.is_object()) bad_field(origin, entry, key, "must be an object");
      for (const auto& [spec, val] : v.items()) {
        const std::string field = key + "." + spec;
        const double tflops = number_field(val, origin, entry, field);
        if (spec.rfind("matrix_", 0) == 0) {
          arch.matrix_tflops[spec.substr(7)] = tflops;
        } else if (spec.rfind("vector_", 0) == 0) {
          arch.vector_tflops[spec.substr(7)] = tflops;
        } else {
          bad_field(origin, entry, field, "must start with 'matrix_' or 'vector_'");
        }
      }
    } else if (key == "aliases") {
      if (!v.is_array()) bad_field(origin, entry, key, "must be a list of strings");
      for (const auto& a : v) add_alias(arch, string_field(a, origin, entry, key + "[]"));
    } else if (key == "arch" || key == "gfx_arch") {  // TraceLens: "gfx942"
      add_alias(arch, string_field(v, origin, entry, key));
    }
    // Other keys (TraceLens's freq_mhz, tdp_w, _reference, ...) carry nothing
    // the roofline uses; they are accepted and ignored.
  }
}

}  // namespace

const std::vector<GpuArch>& builtin_gpu_archs() {
  static const std::vector<GpuArch> table = make_builtin_table();
  return table;
}

ArchPick pick_gpu_arch(std::string_view device_name, int compute_major, int compute_minor,
                       int sm_count, int64_t total_global_mem_bytes,
                       const std::vector<GpuArch>& table) {
  // Trim: some runtimes pad the name.
  while (!device_name.empty() && std::isspace(static_cast<unsigned char>(device_name.back()))) {
    device_name.remove_suffix(1);
  }
  while (!device_name.empty() && std::isspace(static_cast<unsigned char>(device_name.front()))) {
    device_name.remove_prefix(1);
  }
  if (!device_name.empty()) return pick_by_name(device_name, total_global_mem_bytes, table);
  return pick_by_properties(compute_major, compute_minor, sm_count, total_global_mem_bytes, table);
}

std::optional<GpuArch> find_gpu_arch(std::string_view name_or_alias,
                                     const std::vector<GpuArch>& table) {
  auto hits = gpu::match_user_name(name_or_alias, candidates_of(table));
  if (hits.size() != 1) return std::nullopt;
  return table[hits.front()];
}

std::vector<GpuArch> parse_gpu_arch_json(std::string_view json_text, const std::string& origin,
                                         std::vector<GpuArch> base) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw Error(ErrorKind::kBadFormat, fmt::format("GPU arch file is not valid JSON: {}", e.what()),
                origin, static_cast<uint64_t>(e.byte));
  }
  std::vector<const json*> entries;
  if (doc.is_array()) {
    for (const auto& e : doc) entries.push_back(&e);
  } else {
    entries.push_back(&doc);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& e = *entries[i];
    const std::string where = fmt::format("entry {}", i);
    if (!e.is_object()) bad_field(origin, where, "(entry)", "must be a JSON object");
    if (!e.contains("name")) bad_field(origin, where, "name", "is required");
    const std::string name = string_field(e.at("name"), origin, where, "name");
    if (normalise(name).empty()) bad_field(origin, where, "name", "must not be empty");
    const std::string entry = fmt::format("entry {} ('{}')", i, name);

    auto existing = match_by_normalised_name(name, base);
    if (existing.size() > 1) {
      bad_field(origin, entry, "name",
                fmt::format("is ambiguous: matches {}", names_of(existing, base)));
    }
    if (existing.size() == 1) {
      apply_entry(base[existing.front()], e, origin, entry);
      base[existing.front()].source += ", overridden by " + origin;
      continue;
    }
    GpuArch added;
    added.name = name;
    added.source = origin;
    apply_entry(added, e, origin, entry);
    if (added.mem_bw_tbps <= 0) {
      bad_field(origin, entry, "mem_bw_tbps",
                "(or TraceLens's 'mem_bw_gbps') is required for a new GPU and must be > 0");
    }
    base.push_back(std::move(added));
  }
  return base;
}

std::vector<GpuArch> load_gpu_arch_file(const std::filesystem::path& path,
                                        std::vector<GpuArch> base) {
  const PaddedBuffer buf = read_file(path);
  return parse_gpu_arch_json(buf.view(), path.string(), std::move(base));
}

std::optional<std::string> precision_key(std::string_view kineto_dtype) {
  std::string d;
  for (char c : kineto_dtype) d.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (d == "c10::bfloat16") return "bf16";
  if (d == "c10::half") return "fp16";
  if (d == "float") return "fp32";
  if (d == "double") return "fp64";
  if (d.rfind("c10::float8_", 0) == 0) return "fp8";
  if (d.rfind("c10::float4_", 0) == 0) return "fp4";
  if (d == "signed char") return "int8";
  return std::nullopt;
}

std::string compute_spec(std::string_view kineto_dtype, bool matrix) {
  auto key = precision_key(kineto_dtype);
  if (!key) return {};
  return (matrix ? "matrix_" : "vector_") + *key;
}

std::optional<double> peak_tflops(const GpuArch& arch, std::string_view kineto_dtype, bool matrix) {
  auto key = precision_key(kineto_dtype);
  if (!key) return std::nullopt;
  const Peaks& primary = matrix ? arch.matrix_tflops : arch.vector_tflops;
  if (auto it = primary.find(*key); it != primary.end()) return it->second;
  const bool sub_fp32 = *key == "bf16" || *key == "fp16" || *key == "fp8" || *key == "fp4";
  if ((matrix && *key == "fp32") || (!matrix && sub_fp32)) {
    if (auto it = arch.vector_tflops.find("fp32"); it != arch.vector_tflops.end()) {
      return it->second;
    }
  }
  return std::nullopt;
}

}  // namespace magpie::analysis
