#include "kernel/gpu_settings.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"
#include "kernel/gpu_info.hpp"
#include "kernel/process_runner.hpp"

namespace magpie::kernel {

namespace fs = std::filesystem;

namespace {

struct SmiResult {
  bool ok = false;
  std::string output;
};

SmiResult nvidia_smi(const std::vector<std::string>& args) {
  ProcessSpec spec;
  spec.argv = {"nvidia-smi"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(60);
  spec.log_path =
      fs::temp_directory_path() / ("magpie-nvidia-smi-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(reinterpret_cast<uintptr_t>(&spec)) + ".log");
  ProcessResult r = run_process(spec);
  SmiResult out{r.ok(), log_tail(spec.log_path, 1000)};
  std::error_code ec;
  fs::remove(spec.log_path, ec);
  if (!r.ok() && out.output.empty()) out.output = r.describe();
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string query(int device, const std::string& field) {
  SmiResult r = nvidia_smi(
      {"-i", std::to_string(device), "--query-gpu=" + field, "--format=csv,noheader,nounits"});
  return r.ok ? trim(r.output) : "";
}

std::string join(const std::vector<std::string>& v) {
  std::string s = "nvidia-smi";
  for (const auto& a : v) s += " " + a;
  return s;
}

}  // namespace

GpuSettingsOutcome configure_gpus(const GpuSettingsRequest& req) {
  if (find_on_path("nvidia-smi").empty())
    throw Error(ErrorKind::kNotFound,
                "configure_gpu needs an NVIDIA GPU with nvidia-smi on PATH; this machine has none",
                {}, std::nullopt,
                "run Magpie on the GPU host; setting clocks and power limits also needs root "
                "(or persistence mode and sudo rights for nvidia-smi)");
  if (!req.reset && !req.power_limit_watts && !req.gpu_clock_mhz && !req.mem_clock_mhz)
    throw Error(ErrorKind::kUsage, "nothing to configure", {}, std::nullopt,
                "give power_limit_watts, gpu_clock_mhz, mem_clock_mhz, or reset: true");

  GpuSettingsOutcome out;
  out.devices = req.device_ids;
  if (out.devices.empty()) {
    SmiResult r = nvidia_smi({"--query-gpu=index", "--format=csv,noheader"});
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
      if (!trim(line).empty()) out.devices.push_back(std::stoi(trim(line)));
    if (out.devices.empty()) {
      out.error = "nvidia-smi lists no GPU: " + trim(r.output);
      return out;
    }
  }

  struct Undo {
    size_t step;
    std::vector<std::string> args;
  };
  std::vector<Undo> undo;
  auto run_step = [&](int device, const std::string& setting, std::vector<std::string> args,
                      std::optional<std::vector<std::string>> undo_args) {
    args.insert(args.begin(), {"-i", std::to_string(device)});
    SmiResult r = nvidia_smi(args);
    out.steps.push_back({device, setting, join(args), r.ok, trim(r.output), false});
    if (r.ok && undo_args) {
      undo_args->insert(undo_args->begin(), {"-i", std::to_string(device)});
      undo.push_back({out.steps.size() - 1, *undo_args});
    }
    return r.ok;
  };

  bool ok = true;
  for (int d : out.devices) {
    if (req.reset) {
      ok = run_step(d, "reset_gpu_clock", {"-rgc"}, std::nullopt) &&
           run_step(d, "reset_mem_clock", {"-rmc"}, std::nullopt);
      std::string def = query(d, "power.default_limit");
      if (ok && !def.empty()) ok = run_step(d, "reset_power_limit", {"-pl", def}, std::nullopt);
    }
    if (ok && req.power_limit_watts) {
      std::string before = query(d, "power.limit");
      std::ostringstream w;
      w << std::lround(*req.power_limit_watts);
      ok = run_step(
          d, "power_limit_watts", {"-pl", w.str()},
          before.empty() ? std::nullopt : std::optional<std::vector<std::string>>({"-pl", before}));
    }
    if (ok && req.gpu_clock_mhz) {
      std::string c = std::to_string(*req.gpu_clock_mhz);
      ok = run_step(d, "gpu_clock_mhz", {"-lgc", c + "," + c}, std::vector<std::string>{"-rgc"});
    }
    if (ok && req.mem_clock_mhz) {
      std::string c = std::to_string(*req.mem_clock_mhz);
      ok = run_step(d, "mem_clock_mhz", {"-lmc", c + "," + c}, std::vector<std::string>{"-rmc"});
    }
    if (!ok) break;
  }
  if (ok) {
    out.applied = true;
    return out;
  }
  const GpuSettingStep& failed = out.steps.back();
  out.error = "device " + std::to_string(failed.device) + ": `" + failed.command +
              "` failed: " + failed.output +
              (failed.output.find("ermission") != std::string::npos || ::geteuid() != 0
                   ? " (clock and power changes need root)"
                   : "");
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
    SmiResult r = nvidia_smi(it->args);
    out.steps[it->step].rolled_back = r.ok;
  }
  out.rolled_back = !undo.empty();
  return out;
}

}  // namespace magpie::kernel
