#include "store/run_environment.hpp"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace magpie::store {

namespace {

std::string iso_from_time(std::time_t t, int millis) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  if (millis < 0) return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", tm, millis);
}

}  // namespace

std::string iso_utc_now() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  return iso_from_time(static_cast<std::time_t>(ms / 1000), static_cast<int>(ms % 1000));
}

std::string iso_utc(std::filesystem::file_time_type t) {
  auto sys = std::chrono::file_clock::to_sys(t);
  return iso_from_time(std::chrono::system_clock::to_time_t(sys), -1);
}

std::optional<double> parse_iso_utc(std::string_view iso) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  std::string text(iso);
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &s) != 6)
    return std::nullopt;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = 0;
  return static_cast<double>(timegm(&tm)) + s;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::optional<int64_t> process_start_ticks(int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) {
      try {
        return std::stoll(field);
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

bool process_alive(int64_t pid, std::optional<int64_t> start_ticks) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  if (start_ticks) {
    auto now = process_start_ticks(pid);
    if (now && *now != *start_ticks) return false;  // the pid was reused
  }
  return true;
}

std::string git_commit(const std::filesystem::path& dir) {
  if (dir.empty()) return {};
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::string dir_text = dir.string();
  std::vector<std::string> args{"git", "-C", dir_text, "rev-parse", "--verify", "--quiet", "HEAD"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[256];
    ssize_t n;
    while ((n = ::read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  if (rc != 0) return {};
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (text.size() < 40 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    return {};
  return text;
}

std::string hash_config(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace magpie::store
