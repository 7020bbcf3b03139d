#pragma once
// `magpie mcp`: Magpie's tools for AI agents over the Model Context Protocol,
// on stdio (default) or Streamable HTTP; the server is src/mcp.
#include <CLI/CLI.hpp>
#include <string>

namespace magpie::app {

class McpCommand {
 public:
  void register_with(CLI::App& app);
  bool parsed() const { return sub_ && sub_->parsed(); }
  int run(bool verbose);

 private:
  int run_stdio(bool verbose);
  int run_http(bool verbose);
  CLI::App* sub_ = nullptr;
  CLI::Option* http_opt_ = nullptr;
  std::string http_;
  std::string token_;
  size_t max_jobs_ = 1;
};

}  // namespace magpie::app
