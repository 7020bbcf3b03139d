#include "serve/endpoint.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"

namespace magpie::serve {

Endpoint Endpoint::parse(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return Error(ErrorKind::kUsage, fmt::format("bad endpoint URL '{}': {}", url, why), "",
                 std::nullopt, "example: --endpoint http://127.0.0.1:8000");
  };
  std::string_view rest = url;
  if (rest.starts_with("https://")) throw bad("https is not supported");
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  Endpoint ep;
  auto slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    // A URL ending in /v1 names the API root; targets add /v1 themselves.
    if (path.ends_with("/v1")) path.remove_suffix(3);
    ep.base_path = std::string(path);
  }
  auto colon = hostport.rfind(':');
  if (colon == std::string_view::npos) {
    ep.host = std::string(hostport);
    ep.port = 80;
  } else {
    ep.host = std::string(hostport.substr(0, colon));
    auto port = hostport.substr(colon + 1);
    unsigned value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || p != port.data() + port.size() || value == 0 || value > 65535)
      throw bad("port must be 1-65535");
    ep.port = static_cast<uint16_t>(value);
  }
  if (ep.host.empty()) throw bad("missing host");
  if (ep.host.front() == '[' && ep.host.back() == ']')
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  return ep;
}

std::string Endpoint::url() const { return fmt::format("http://{}:{}{}", host, port, base_path); }

}  // namespace magpie::serve
