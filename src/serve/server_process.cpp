#include "serve/server_process.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace magpie::serve {

ServerProcess::~ServerProcess() {
  if (child_.pid() > 0 && !child_.exited()) shutdown(std::chrono::seconds(5));
}

void ServerProcess::start(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::filesystem::path& log_path) {
  if (argv.empty()) throw Error(ErrorKind::kInternal, "empty server command");
  {
    // A log that cannot be opened is the user's path, not a missing engine.
    std::ofstream probe(log_path, std::ios::app);
    if (!probe) throw Error(ErrorKind::kUnreadable, "cannot open server log", log_path.string());
  }
  ChildSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.log_path = log_path;
  // If magpie dies without stopping it (SIGKILL), the engine gets SIGTERM
  // instead of holding the GPU and the port. (Linux delivers this when the
  // forking thread ends; jobs stop their engine before their thread ends.)
  spec.parent_death_signal = true;
  spec.default_signals = true;
  if (int err = child_.start(spec); err != 0) {
    throw Error(ErrorKind::kNotFound,
                fmt::format("cannot start '{}': {}", argv.front(), std::strerror(err)), "",
                std::nullopt, "is the engine installed and on PATH?");
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
