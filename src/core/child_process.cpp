#include "core/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace magpie {

namespace {

// Everything the child needs, built before fork: only async-signal-safe calls after it.
struct ChildPlan {
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  std::vector<char*> argv;
};

ChildPlan plan(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& env) {
  ChildPlan p;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto name = kv.substr(0, kv.find('='));
    if (!env.contains(std::string(name))) p.env_storage.emplace_back(kv);
  }
  for (const auto& [k, v] : env) p.env_storage.push_back(k + "=" + v);
  for (auto& s : p.env_storage) p.envp.push_back(s.data());
  p.envp.push_back(nullptr);
  for (const auto& a : argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  return p;
}

void write_str(int fd, const char* s) { (void)!::write(fd, s, std::strlen(s)); }

[[noreturn]] void child_fail(int err_fd, const char* what, const char* arg) {
  int err = errno;
  write_str(STDERR_FILENO, what);
  if (arg != nullptr) write_str(STDERR_FILENO, arg);
  write_str(STDERR_FILENO, "\n");
  (void)!::write(err_fd, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) terminate_group(std::chrono::seconds(5));
}

int ChildProcess::start(const ChildSpec& spec) {
  if (spec.argv.empty()) return EINVAL;
  const std::string log = spec.log_path.empty() ? std::string("/dev/null") : spec.log_path.string();
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return errno;
  // Exec failures come back through a CLOEXEC pipe: it closes unread on success.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(log_fd);
    return err;
  }
  ChildPlan p = plan(spec.argv, spec.env);
  const std::string cwd = spec.cwd.string();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(log_fd);
    ::close(fds[0]);
    ::close(fds[1]);
    return err;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // own group, so a kill reaches the children it forks
    if (spec.parent_death_signal) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);  // magpie died before prctl took effect
    }
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (spec.default_signals) {
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGPIPE, SIG_DFL);
    }
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      child_fail(fds[1], "magpie: cannot change to the working directory ", cwd.c_str());
    }
    ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
    child_fail(fds[1], "magpie: command not found or not executable: ", p.argv[0]);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with an early signal
  ::close(fds[1]);
  ::close(log_fd);
  int err = 0;
  ssize_t n = ::read(fds[0], &err, sizeof err);
  ::close(fds[0]);
  pid_ = pid;
  exited_ = false;
  if (n == sizeof err) {
    ::waitpid(pid, &status_, 0);
    exited_ = true;
    return err != 0 ? err : ENOEXEC;
  }
  return 0;
}

bool ChildProcess::running() {
  if (pid_ <= 0 || exited_) return false;
  pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) exited_ = true;
  return !exited_;
}

std::string ChildProcess::exit_status() const {
  if (!exited_) return {};
  if (WIFEXITED(status_)) return fmt::format("exit {}", WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return fmt::format("killed by signal {}", WTERMSIG(status_));
  return "ended";
}

void ChildProcess::kill_group() {
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
}

void ChildProcess::terminate_group(std::chrono::milliseconds grace, Wait wait) {
  if (pid_ <= 0) return;
  // The group outlives its leader when workers linger: signal it either way.
  ::kill(-pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    running();
    if (exited_ && (wait == Wait::kLeader || ::kill(-pid_, 0) != 0)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (exited_ && wait == Wait::kWholeGroup && ::kill(-pid_, 0) != 0) return;
  ::kill(-pid_, SIGKILL);
  if (!exited_) {
    ::waitpid(pid_, &status_, 0);
    exited_ = true;
  }
}

std::string ProcessResult::describe() const {
  if (spawn_failed) return "could not start (exit 127)";
  if (timed_out)
    return fmt::format("timed out after {:.1f} s (process group killed)", wall_seconds);
  if (cancelled)
    return fmt::format("cancelled after {:.1f} s (process group killed)", wall_seconds);
  if (term_signal != 0)
    return fmt::format("killed by signal {} ({})", term_signal, strsignal(term_signal));
  return fmt::format("exit {}", exit_code);
}

namespace {

uintmax_t file_size_or_zero(const std::filesystem::path& p) {
  std::error_code ec;
  auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

std::string read_from(const std::filesystem::path& p, uintmax_t offset) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult r;
  auto t0 = std::chrono::steady_clock::now();
  if (spec.argv.empty()) {
    r.spawn_failed = true;
    return r;
  }
  // Captured output goes through a file: no pipe to drain while waiting.
  std::filesystem::path capture_file;
  ChildSpec child;
  child.argv = spec.argv;
  child.cwd = spec.cwd;
  child.env = spec.env;
  child.log_path = spec.log_path;
  child.parent_death_signal = spec.parent_death_signal;
  uintmax_t log_start = 0;
  if (spec.capture_output) {
    if (spec.log_path.empty()) {
      char tmpl[] = "/tmp/magpie-capture-XXXXXX";
      int fd = ::mkstemp(tmpl);
      if (fd >= 0) {
        ::close(fd);
        capture_file = tmpl;
        child.log_path = capture_file;
      }
    }
  }
  if (!spec.log_path.empty()) {
    // The log shows what ran, pasteable into a shell, before what it printed.
    std::ofstream(spec.log_path, std::ios::app) << "$ " << shell_join(spec.argv) << "\n";
    log_start = file_size_or_zero(spec.log_path);
  }
  ChildProcess proc;
  if (proc.start(child) != 0) {
    r.spawn_failed = true;
    r.exit_code = 127;
  } else {
    auto deadline = t0 + spec.timeout;
    auto sleep = std::chrono::milliseconds(1);
    while (proc.running()) {
      const bool cancelled = spec.cancel != nullptr && spec.cancel->load();
      if (cancelled || std::chrono::steady_clock::now() >= deadline) {
        r.timed_out = !cancelled;
        r.cancelled = cancelled;
        proc.terminate_group(std::chrono::seconds(2), ChildProcess::Wait::kLeader);
        break;
      }
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::milliseconds(20));
    }
    // Leftover background children of the command die with it.
    proc.kill_group();
    const int status = proc.wait_status();
    if (!r.timed_out && !r.cancelled) {
      if (WIFEXITED(status)) {
        r.exit_code = WEXITSTATUS(status);
        if (r.exit_code == 127) r.spawn_failed = true;
      } else if (WIFSIGNALED(status)) {
        r.term_signal = WTERMSIG(status);
      }
    }
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (spec.capture_output) {
    r.output = read_from(child.log_path, log_start);
    if (!capture_file.empty()) {
      std::error_code ec;
      std::filesystem::remove(capture_file, ec);
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

std::string shell_quote(std::string_view arg) {
  // An allowlist, not a list of dangerous characters: anything else (a backtick,
  // `!`, `~`, `#`, braces, a newline) is quoted, so the text pastes back as one word.
  constexpr std::string_view kPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+";
  if (!arg.empty() && arg.find_first_not_of(kPlain) == std::string_view::npos) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    auto p = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

}  // namespace magpie
