#include "kernel/workspace.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <ctime>

namespace magpie::kernel {

namespace {
std::tm now_local() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}
}  // namespace

std::string local_timestamp() { return fmt::format("{:%Y%m%d_%H%M%S}", now_local()); }

std::string iso_timestamp() { return fmt::format("{:%Y-%m-%dT%H:%M:%S}", now_local()); }

std::filesystem::path make_workspace(const std::filesystem::path& parent, const std::string& name) {
  // Absolute: the commands that write into it run in other folders.
  const auto output_dir = std::filesystem::absolute(parent).lexically_normal();
  auto dir = output_dir / name;
  for (int i = 2; std::filesystem::exists(dir); ++i) dir = output_dir / fmt::format("{}_{}", name, i);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace magpie::kernel
