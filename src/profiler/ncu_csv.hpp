#pragma once
// Nsight Compute adapter: the command line for a metrics pass, and a parser
// for `ncu --csv --page raw` output, which arrives mixed with ==PROF== lines
// and the application's own stdout.
#include <map>
#include <string>
#include <string_view>
#include <vector>



namespace magpie::profiler {

// gpu__time_duration.sum, DRAM bytes, and the FP32/FP16 instruction counts
// that give FLOPs (fadd + fmul + 2·ffma).
const std::vector<std::string>& default_ncu_metrics();

// ncu --clock-control none --csv --page raw --print-units base --metrics M [extra] -- <app argv>
std::vector<std::string> ncu_command(const std::vector<std::string>& app, const std::vector<std::string>& metrics,
                            const std::vector<std::string>& extra_args = {});

struct NcuKernel {
  std::string kernel_name;
  int64_t id = 0;
  std::string block_size, grid_size;
  std::map<std::string, double> metrics;  // base units: ns, bytes, counts
};

// Throws Error(kBadFormat) when a header is found but rows do not match it;
// returns an empty list when the output holds no CSV at all.
std::vector<NcuKernel> parse_ncu_csv(std::string_view output, const std::string& origin);

// Derived figures over all kernels: total time, DRAM bytes, FLOPs.
struct NcuTotals {
  double time_ns = 0;
  double dram_bytes = 0;
  double flops = 0;
  size_t kernels = 0;
};
NcuTotals ncu_totals(const std::vector<NcuKernel>& kernels);

}  // namespace magpie::profiler
