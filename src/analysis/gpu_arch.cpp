#include "analysis/gpu_arch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace magpie::analysis {
namespace {

using Peaks = std::map<std::string, double>;

GpuArch make_arch(std::string name, std::string vendor, int major, int minor, int sms,
                  double bw_tbps, double mem_gb, Peaks matrix, Peaks vector,
                  std::vector<std::string> aliases) {
  GpuArch a;
  a.name = std::move(name);
  a.vendor = std::move(vendor);
  a.compute_major = major;
  a.compute_minor = minor;
  a.sm_count = sms;
  a.mem_bw_tbps = bw_tbps;
  a.mem_gb = mem_gb;
  a.matrix_tflops = std::move(matrix);
  a.vector_tflops = std::move(vector);
  a.aliases = std::move(aliases);
  return a;
}

std::vector<GpuArch> make_builtin_table() {
  // Dense (no sparsity) datasheet peaks. NVIDIA datasheets print tensor-core
  // numbers "with sparsity"; those are halved here. Precisions a datasheet
  // does not state are left out rather than guessed.
  return {
      // NVIDIA A100 80GB SXM datasheet: FP64 9.7, FP64 TC 19.5, FP32 19.5,
      // TF32 156, BF16/FP16 312, INT8 624; 2,039 GB/s; 108 SMs, sm_80.
      make_arch("A100", "nvidia", 8, 0, 108, 2.039, 80,
                {{"bf16", 312}, {"fp16", 312}, {"tf32", 156}, {"int8", 624}, {"fp64", 19.5}},
                {{"fp32", 19.5}, {"fp64", 9.7}},
                {"A100 SXM", "A100 SXM4", "A100-SXM4-80GB", "A100 SXM 80GB", "sm_80"}),
      // NVIDIA H100 SXM datasheet: FP64 34, FP64 TC 67, FP32 67, TF32 494.5,
      // BF16/FP16 989, FP8/INT8 1979 (dense); 3.35 TB/s; 80 GB; 132 SMs, sm_90.
      make_arch("H100", "nvidia", 9, 0, 132, 3.35, 80,
                {{"bf16", 989},
                 {"fp16", 989},
                 {"tf32", 494.5},
                 {"fp8", 1979},
                 {"int8", 1979},
                 {"fp64", 67}},
                {{"fp32", 67}, {"fp64", 34}}, {"H100 SXM", "H100 SXM5", "H100 SXM5 80GB", "sm_90"}),
      // NVIDIA H200 SXM datasheet: same compute as H100 SXM; 4.8 TB/s; 141 GB.
      make_arch("H200", "nvidia", 9, 0, 132, 4.8, 141,
                {{"bf16", 989},
                 {"fp16", 989},
                 {"tf32", 494.5},
                 {"fp8", 1979},
                 {"int8", 1979},
                 {"fp64", 67}},
                {{"fp32", 67}, {"fp64", 34}}, {"H200 SXM", "H200 SXM 141GB", "sm_90"}),
      // NVIDIA HGX B200 datasheet, per GPU (8-GPU totals / 8, sparse / 2):
      // BF16/FP16 2250, TF32 1125, FP8/INT8 4500, FP64 37; 8 TB/s; 180 GB;
      // 148 SMs, sm_100. The datasheet gives no FP32 non-tensor figure.
      make_arch("B200", "nvidia", 10, 0, 148, 8.0, 180,
                {{"bf16", 2250},
                 {"fp16", 2250},
                 {"tf32", 1125},
                 {"fp8", 4500},
                 {"int8", 4500},
                 {"fp64", 37}},
                {{"fp64", 37}}, {"B200 HGX", "HGX B200", "DGX B200", "sm_100"}),
      // AMD Instinct MI300X datasheet: FP16/BF16 1307.4, FP8/INT8 2614.9,
      // TF32 653.7, FP32 matrix 163.4, FP64 matrix 163.4, FP32 vector 163.4,
      // FP64 vector 81.7; 5.3 TB/s; 192 GB; 304 CUs, gfx942.
      make_arch("MI300X", "amd", 9, 4, 304, 5.3, 192,
                {{"bf16", 1307.4},
                 {"fp16", 1307.4},
                 {"fp8", 2614.9},
                 {"int8", 2614.9},
                 {"tf32", 653.7},
                 {"fp32", 163.4},
                 {"fp64", 163.4}},
                {{"fp32", 163.4}, {"fp64", 81.7}}, {"Instinct MI300X", "MI300X OAM", "gfx942"}),
      // AMD Instinct MI325X datasheet: MI300X compute; 6 TB/s; 256 GB; 304 CUs.
      // gfx942 stays an MI300X alias only (the more common part).
      make_arch("MI325X", "amd", 9, 4, 304, 6.0, 256,
                {{"bf16", 1307.4},
                 {"fp16", 1307.4},
                 {"fp8", 2614.9},
                 {"int8", 2614.9},
                 {"tf32", 653.7},
                 {"fp32", 163.4},
                 {"fp64", 163.4}},
                {{"fp32", 163.4}, {"fp64", 81.7}}, {"Instinct MI325X", "MI325X OAM"}),
      // AMD Instinct MI350X datasheet: FP16/BF16 2307, FP8/INT8 4614,
      // FP32 matrix/vector 144.2, FP64 matrix/vector 72.1 (no TF32);
      // 8 TB/s; 288 GB; 256 CUs, gfx950.
      make_arch("MI350X", "amd", 9, 5, 256, 8.0, 288,
                {{"bf16", 2307},
                 {"fp16", 2307},
                 {"fp8", 4614},
                 {"int8", 4614},
                 {"fp32", 144.2},
                 {"fp64", 72.1}},
                {{"fp32", 144.2}, {"fp64", 72.1}}, {"Instinct MI350X", "gfx950"}),
      // AMD Instinct MI355X datasheet: FP16/BF16 2516.6, FP8/INT8 5033.2,
      // FP32 matrix/vector 157.3, FP64 matrix/vector 78.6; 8 TB/s; 288 GB;
      // 256 CUs, gfx950.
      make_arch("MI355X", "amd", 9, 5, 256, 8.0, 288,
                {{"bf16", 2516.6},
                 {"fp16", 2516.6},
                 {"fp8", 5033.2},
                 {"int8", 5033.2},
                 {"fp32", 157.3},
                 {"fp64", 78.6}},
                {{"fp32", 157.3}, {"fp64", 78.6}}, {"Instinct MI355X", "gfx950"}),
  };
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// "H200 SXM" and "h200-sxm" compare equal: lowercase, letters and digits only.
std::string normalise(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (is_alnum(c)) out.push_back(lower(c));
  }
  return out;
}

bool iequal_at(std::string_view hay, size_t pos, std::string_view needle) {
  for (size_t i = 0; i < needle.size(); ++i) {
    if (lower(hay[pos + i]) != lower(needle[i])) return false;
  }
  return true;
}

// Whole-word, case-insensitive: "H200" is in "NVIDIA H200" but not in "GH200".
bool contains_word(std::string_view hay, std::string_view needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  for (size_t pos = 0; pos + needle.size() <= hay.size(); ++pos) {
    if (!iequal_at(hay, pos, needle)) continue;
    const bool left_ok = pos == 0 || !is_alnum(hay[pos - 1]);
    const size_t end = pos + needle.size();
    const bool right_ok = end == hay.size() || !is_alnum(hay[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// Indices of table entries whose name or alias appears as a word in `text`;
// only the longest matching spelling wins ("H100 NVL" over "H100").
std::vector<size_t> match_by_words(std::string_view text, const std::vector<GpuArch>& table) {
  std::vector<size_t> best;
  size_t best_len = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    size_t len = 0;
    auto consider = [&](const std::string& token) {
      if (token.size() > len && contains_word(text, token)) len = token.size();
    };
    consider(table[i].name);
    for (const auto& alias : table[i].aliases) consider(alias);
    if (len == 0) continue;
    if (len > best_len) {
      best_len = len;
      best = {i};
    } else if (len == best_len) {
      best.push_back(i);
    }
  }
  return best;
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

// PCIe and NVL boards share the name but not the clocks, power or memory:
// the variant `text` names when `arch` does not describe it.
std::optional<std::string_view> unlisted_variant(std::string_view text, const GpuArch& arch) {
  for (std::string_view variant : {"PCIe", "NVL"}) {
    if (!contains_word(text, variant)) continue;
    bool listed = contains_word(arch.name, variant);
    for (const auto& alias : arch.aliases) listed = listed || contains_word(alias, variant);
    if (!listed) return variant;
  }
  return std::nullopt;
}

constexpr double kMemoryTolerance = 0.15;  // 80 GB parts report ~79 GiB; 40 GB ones are far off

ArchPick pick_by_name(std::string_view device_name, int64_t mem_bytes,
                      const std::vector<GpuArch>& table) {
  const auto hits = match_by_words(device_name, table);
  if (hits.empty()) {
    return {std::nullopt,
            fmt::format("unknown GPU '{}': not in the arch table; pass --gpu-arch NAME or "
                        "--gpu-arch-file",
                        device_name)};
  }
  size_t pick = hits.front();
  if (hits.size() > 1) {
    auto by_mem = nearest_by_memory(hits, table, mem_bytes);
    if (!by_mem) {
      return {std::nullopt, fmt::format("GPU '{}' matches several arch entries ({}); pass "
                                        "--gpu-arch NAME",
                                        device_name, names_of(hits, table))};
    }
    pick = *by_mem;
  }
  const GpuArch& arch = table[pick];
  if (auto variant = unlisted_variant(device_name, arch)) {
    return {std::nullopt,
            fmt::format("GPU '{}' is a {} variant; the {} entry describes the SXM/OAM part. "
                        "Pass --gpu-arch-file with its peaks (or --gpu-arch {} to accept them)",
                        device_name, *variant, arch.name, arch.name)};
  }
  if (mem_bytes > 0 && arch.mem_gb > 0 &&
      std::fabs(gib(mem_bytes) - arch.mem_gb) > kMemoryTolerance * arch.mem_gb) {
    return {std::nullopt,
            fmt::format("GPU '{}' has {:.1f} GiB but the {} entry describes a {:g} GB part "
                        "(a different variant); pass --gpu-arch-file with its peaks",
                        device_name, gib(mem_bytes), arch.name, arch.mem_gb)};
  }
  return {arch, fmt::format("device name '{}' matched {}", device_name, arch.name)};
}

ArchPick pick_by_properties(int major, int minor, int sms, int64_t mem_bytes,
                            const std::vector<GpuArch>& table) {
  if (major <= 0 && sms <= 0) {
    return {std::nullopt, "no device name or compute properties in the trace; pass --gpu-arch"};
  }
  std::vector<size_t> hits;
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& a = table[i];
    if (a.compute_major == major && a.compute_minor == minor && a.sm_count == sms) {
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
  auto hits = match_by_normalised_name(name_or_alias, table);
  if (hits.empty()) {
    // Vendor prefixes users copy from nvidia-smi / rocm-smi.
    std::string q = normalise(name_or_alias);
    for (std::string_view prefix : {"nvidia", "amdinstinct", "amd", "instinct"}) {
      if (q.rfind(prefix, 0) == 0) {
        q = q.substr(prefix.size());
        break;
      }
    }
    hits = match_by_normalised_name(q, table);
  }
  if (hits.empty()) hits = match_by_words(name_or_alias, table);  // "NVIDIA H100 80GB HBM3"
  if (hits.size() != 1 || unlisted_variant(name_or_alias, table[hits.front()])) {
    return std::nullopt;
  }
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
      continue;
    }
    GpuArch added;
    added.name = name;
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
  for (char c : kineto_dtype) d.push_back(lower(c));
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
