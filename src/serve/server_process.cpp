#include "serve/server_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "core/error.hpp"

extern char** environ;

namespace magpie::serve {

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) shutdown(std::chrono::seconds(5));
}

void ServerProcess::start(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::filesystem::path& log_path) {
  if (argv.empty()) throw Error(ErrorKind::kInternal, "empty server command");
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw Error(ErrorKind::kUnreadable, "cannot open server log", log_path.string());
  // Report exec failures through a CLOEXEC pipe: it closes unread on success.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::kInternal, "pipe failed");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos && env.count(kv.substr(0, eq))) continue;
    env_strings.push_back(std::move(kv));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0)
    throw Error(ErrorKind::kInternal, fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    // If magpie dies without stopping it (SIGKILL), the engine gets SIGTERM
    // instead of holding the GPU and the port. (Linux delivers this when the
    // forking thread ends; jobs stop their engine before their thread ends.)
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // magpie died before prctl took effect
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    int err = errno;
    (void)!::write(fds[1], &err, sizeof err);
    ::_exit(127);
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
    throw Error(ErrorKind::kNotFound,
                fmt::format("cannot start '{}': {}", argv.front(), std::strerror(err)), "",
                std::nullopt, "is the engine installed and on PATH?");
  }
}

bool ServerProcess::running() {
  if (pid_ <= 0 || exited_) return false;
  pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) exited_ = true;
  return !exited_;
}

std::string ServerProcess::exit_status() const {
  if (!exited_) return {};
  if (WIFEXITED(status_)) return fmt::format("exit {}", WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return fmt::format("killed by signal {}", WTERMSIG(status_));
  return "ended";
}

void ServerProcess::shutdown(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  // The group outlives its leader when workers linger: signal it either way.
  ::kill(-pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    running();
    if (exited_ && ::kill(-pid_, 0) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(-pid_, SIGKILL);
  if (!exited_) {
    ::waitpid(pid_, &status_, 0);
    exited_ = true;
  }
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(ErrorKind::kInternal, "socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw Error(ErrorKind::kInternal, "cannot find a free port");
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string log_tail_lines(const std::filesystem::path& log, size_t lines) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return "(no log)";
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t take = std::min<size_t>(size, 64 * 1024);
  in.seekg(static_cast<std::streamoff>(size - take));
  std::string buf(take, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(take));
  size_t pos = buf.size();
  if (!buf.empty() && buf.back() == '\n') --pos;
  for (size_t n = 0; n < lines && pos > 0; ++n) {
    auto nl = buf.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  return buf.substr(pos == 0 ? 0 : pos + 1);
}

}  // namespace magpie::serve
