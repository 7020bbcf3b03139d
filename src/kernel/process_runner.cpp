#include "kernel/process_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

extern char** environ;

namespace magpie::kernel {

std::string ProcessResult::describe() const {
  if (spawn_failed) return "could not start (exit 127)";
  if (timed_out) return fmt::format("timed out after {:.1f} s (process group killed)", wall_seconds);
  if (cancelled) return fmt::format("cancelled after {:.1f} s (process group killed)", wall_seconds);
  if (term_signal != 0) return fmt::format("killed by signal {} ({})", term_signal, strsignal(term_signal));
  return fmt::format("exit {}", exit_code);
}

namespace {

// Everything the child needs, built before fork: only async-signal-safe calls after it.
struct ChildPlan {
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  std::vector<char*> argv;
};

ChildPlan plan(const ProcessSpec& spec) {
  ChildPlan p;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto name = kv.substr(0, kv.find('='));
    if (!spec.env.contains(std::string(name))) p.env_storage.emplace_back(kv);
  }
  for (const auto& [k, v] : spec.env) p.env_storage.push_back(k + "=" + v);
  for (auto& s : p.env_storage) p.envp.push_back(s.data());
  p.envp.push_back(nullptr);
  for (const auto& a : spec.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  return p;
}

void kill_group(pid_t pgid, int sig) { ::kill(-pgid, sig); }

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult r;
  auto t0 = std::chrono::steady_clock::now();
  if (spec.argv.empty()) {
    r.spawn_failed = true;
    return r;
  }
  ChildPlan p = plan(spec);
  std::string cwd = spec.cwd.string();
  std::string log = spec.log_path.empty() ? std::string("/dev/null") : spec.log_path.string();
  if (!spec.log_path.empty()) {
    std::ofstream(spec.log_path, std::ios::app) << "$ " << join_command(spec.argv) << "\n";
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    r.spawn_failed = true;
    return r;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // own group, so a timeout can kill the testcase's children too
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      const char msg[] = "magpie: cannot change to the working directory\n";
      (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
    const char msg[] = "magpie: command not found or not executable: ";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)!::write(STDERR_FILENO, p.argv[0], std::strlen(p.argv[0]));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with an early kill
  auto deadline = t0 + spec.timeout;
  int status = 0;
  auto sleep = std::chrono::milliseconds(1);
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    const bool cancelled = spec.cancel && spec.cancel->load();
    if (cancelled || std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = !cancelled;
      r.cancelled = cancelled;
      kill_group(pid, SIGTERM);
      auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (::waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < grace) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      kill_group(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::milliseconds(20));
  }
  // Leftover background children of the testcase die with it.
  kill_group(pid, SIGKILL);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.timed_out && !r.cancelled) {
    if (WIFEXITED(status)) {
      r.exit_code = WEXITSTATUS(status);
      if (r.exit_code == 127) r.spawn_failed = true;
    } else if (WIFSIGNALED(status)) {
      r.term_signal = WTERMSIG(status);
    }
  }
  return r;
}

std::string log_tail(const std::filesystem::path& log, size_t max_bytes) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string out(size - start, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

}  // namespace magpie::kernel
