#pragma once
// Where a server listens: parsed once from --endpoint or built from the
// launcher's host and port. Only plain http is supported (load tests target
// local or in-cluster servers; TLS would measure the TLS stack).
#include <cstdint>
#include <string>
#include <string_view>

namespace magpie::serve {

struct Endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  std::string base_path;  // prefix before /v1/..., without a trailing '/'

  // "http://host:port[/prefix]"; throws Error(kUsage) on anything else.
  static Endpoint parse(std::string_view url);
  std::string url() const;
  std::string target(std::string_view path) const { return base_path + std::string(path); }
};

}  // namespace magpie::serve
