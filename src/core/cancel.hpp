#pragma once
// Cancellation of long work: a flag that the face sets (Ctrl-C, an MCP
// notifications/cancelled, a KeyboardInterrupt in Python) and the work checks
// at its own steps (per file, per chunk, per phase), where it can stop and
// leave nothing half written.
#include <atomic>
#include <string>

#include "core/error.hpp"

namespace magpie {

// Throws Error(kCancelled, "<what> cancelled") once `flag` is set; a null flag never is.
inline void throw_if_cancelled(const std::atomic<bool>* flag, const std::string& what) {
  if (flag && flag->load(std::memory_order_relaxed)) throw Error(ErrorKind::kCancelled, what + " cancelled");
}

}  // namespace magpie
