#pragma once
// MCP over stdio: one JSON-RPC message per line in, one per line out. Every
// write to `out` goes through one mutex (workers report progress and results
// concurrently); logs belong on stderr, never on `out`.
#include <iosfwd>

#include "mcp/protocol.hpp"

namespace magpie::mcp {

// Serves one session until `in` ends (the client closed stdin) or `out`
// fails; then cancels what is in flight and waits for it. Returns 0, or 1
// when `out` failed (the client went away).
int serve_stdio(std::istream& in, std::ostream& out, Session& session);

}  // namespace magpie::mcp
