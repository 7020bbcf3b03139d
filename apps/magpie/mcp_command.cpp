#include "mcp_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ext/stdio_filebuf.h>
#include <iostream>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "mcp/http_transport.hpp"
#include "mcp/job_runner.hpp"
#include "mcp/protocol.hpp"
#include "mcp/stdio_transport.hpp"
#include "mcp/tools.hpp"

namespace magpie::app {

namespace {

constexpr const char* kHelp =
    "Serve Magpie's tools (analyze, compare, benchmark, gap_analysis, tracelens, results, ...)\n"
    "to an AI agent over the Model Context Protocol.\n\n"
    "stdio (the agent starts magpie itself):\n"
    "  Claude Code:  claude mcp add magpie -- /path/to/magpie mcp\n"
    "  any client's mcpServers JSON:\n"
    "    {\"mcpServers\": {\"magpie\": {\"command\": \"/path/to/magpie\", \"args\": "
    "[\"mcp\"]}}}\n\n"
    "Streamable HTTP (one server, several agents):\n"
    "  magpie mcp --http 8765                  # http://127.0.0.1:8765/mcp\n"
    "  magpie mcp --http 0.0.0.0:8765 --token T   # other hosts; clients send\n"
    "                                             # 'Authorization: Bearer T'\n"
    "  Claude Code:  claude mcp add --transport http magpie http://127.0.0.1:8765/mcp \\\n"
    "                  [--header 'Authorization: Bearer T']\n"
    "  ($MAGPIE_HOST / $MAGPIE_PORT choose the address when --http has none.)\n\n"
    "Long tools (benchmark, analyze, compare, gap_analysis, tracelens) run at most --max-jobs\n"
    "at once; the rest queue. Runs are recorded in the results store ($MAGPIE_RESULTS_DB, else\n"
    "~/.magpie/results.db). Logs go to stderr (-v: every call). docs/MCP.md has an example call\n"
    "per tool.";

void log_line(const std::string& line) {
  static std::mutex m;
  std::lock_guard lock(m);
  std::cerr << "magpie mcp: " << line << std::endl;
}

// SIGINT/SIGTERM: a handler writes to a pipe and a thread acts on it. (Blocking
// the signals and calling sigwait would leave them blocked in every child
// we start, and engines must still stop on SIGTERM.)
int g_signal_pipe[2] = {-1, -1};
extern "C" void on_stop_signal(int sig) {
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_signal_pipe[1], &b, 1);
}

void on_stop_signals(std::function<void(int)> action) {
  if (::pipe(g_signal_pipe) != 0) return;
  ::fcntl(g_signal_pipe[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(g_signal_pipe[1], F_SETFD, FD_CLOEXEC);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::thread([action = std::move(action)] {
    unsigned char sig = 0;
    if (::read(g_signal_pipe[0], &sig, 1) == 1) action(sig);
  }).detach();
}

mcp::ServerOptions server_options(bool verbose) {
  mcp::ServerOptions o;
  o.instructions =
      "Magpie benchmarks LLM inference servers (benchmark), evaluates GPU kernels (analyze, "
      "compare), and explains profiler traces (gap_analysis, tracelens). Runs are recorded; "
      "list_benchmark_results / get_benchmark_result / compare_benchmark_reports read them back.";
  if (verbose)
    o.log = log_line;
  else
    o.log = [](const std::string&) {};
  return o;
}

}  // namespace

void McpCommand::register_with(CLI::App& app) {
  sub_ = app.add_subcommand("mcp", kHelp);
  http_opt_ = sub_->add_option("--http", http_,
                               "Serve Streamable HTTP on [HOST:]PORT instead of stdio (default "
                               "$MAGPIE_HOST:$MAGPIE_PORT, else 127.0.0.1:8765)")
                  ->expected(0, 1);
  sub_->add_option("--token", token_,
                   "Bearer token HTTP clients must send (required off loopback; default "
                   "$MAGPIE_MCP_TOKEN)");
  sub_->add_option("--max-jobs", max_jobs_, "Long tool calls run at once; the rest queue")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

int McpCommand::run(bool verbose) {
  // A client that goes away must end the server through a failed write, not SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  if (token_.empty())
    if (const char* t = std::getenv("MAGPIE_MCP_TOKEN")) token_ = t;
  return http_opt_->count() > 0 ? run_http(verbose) : run_stdio(verbose);
}

int McpCommand::run_stdio(bool verbose) {
  // The protocol owns stdout. Keep it on a private descriptor and point fd 1
  // at stderr, so nothing else (a library's print, a child process) can
  // interleave bytes into the message stream.
  std::cout.flush();
  int protocol_fd = ::dup(STDOUT_FILENO);
  if (protocol_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    throw Error(ErrorKind::kInternal, "cannot set up stdout for the MCP stream");
  ::fcntl(protocol_fd, F_SETFD, FD_CLOEXEC);
  __gnu_cxx::stdio_filebuf<char> buf(protocol_fd, std::ios::out);
  std::ostream out(&buf);

  mcp::ToolRegistry tools = mcp::magpie_tools();
  mcp::JobRunner jobs(max_jobs_);
  mcp::Session session(tools, jobs, server_options(verbose));
  on_stop_signals([&session](int sig) {
    log_line("signal " + std::to_string(sig) + ": cancelling running jobs");
    session.cancel_all("server stopping");
    session.wait_idle(std::chrono::seconds(60));
    std::_Exit(128 + sig);
  });
  if (verbose) log_line("serving " + std::to_string(tools.tools().size()) + " tools on stdio");
  int rc = mcp::serve_stdio(std::cin, out, session);
  jobs.shutdown();
  return rc;
}

int McpCommand::run_http(bool verbose) {
  mcp::HttpOptions h;
  const char* env_host = std::getenv("MAGPIE_HOST");
  const char* env_port = std::getenv("MAGPIE_PORT");
  if (env_host && *env_host) h.host = env_host;
  std::string port_text = env_port && *env_port ? env_port : "";
  if (!http_.empty()) {
    auto colon = http_.rfind(':');
    bool bracketed_v6 = !http_.empty() && http_.front() == '[' && http_.back() == ']';
    if (colon != std::string::npos && !bracketed_v6) {
      h.host = http_.substr(0, colon);
      port_text = http_.substr(colon + 1);
    } else if (http_.find_first_not_of("0123456789") == std::string::npos) {
      port_text = http_;
    } else {
      h.host = http_;
    }
  }
  if (!port_text.empty()) {
    char* end = nullptr;
    long p = std::strtol(port_text.c_str(), &end, 10);
    if (*end != '\0' || p < 0 || p > 65535)
      throw Error(ErrorKind::kUsage, "--http: not a port: '" + port_text + "'", {}, std::nullopt,
                  "use --http [HOST:]PORT, e.g. --http 127.0.0.1:8765");
    h.port = static_cast<uint16_t>(p);
  }
  h.token = token_;
  h.log = log_line;  // the HTTP face always says where it listens and refusals

  mcp::ToolRegistry tools = mcp::magpie_tools();
  mcp::JobRunner jobs(max_jobs_);
  mcp::HttpServer server(tools, jobs, server_options(verbose), h);
  on_stop_signals([&server](int sig) {
    log_line("signal " + std::to_string(sig) + ": stopping");
    server.stop();
  });
  std::string shown_host =
      h.host.find(':') != std::string::npos && h.host.front() != '[' ? "[" + h.host + "]" : h.host;
  log_line("serving " + std::to_string(tools.tools().size()) + " tools on http://" + shown_host +
           ":" + std::to_string(server.port()) + "/mcp" +
           (h.token.empty() ? "" : " (bearer token required)"));
  server.run();
  jobs.shutdown();
  return 0;
}

}  // namespace magpie::app
