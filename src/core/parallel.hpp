#pragma once
#include <cstddef>
#include <functional>

namespace magpie {

// Number of worker threads to use by default: hardware threads, at least 1.
unsigned default_thread_count();

// Runs fn(i) for i in [0, n) on up to `threads` threads (work-stealing by an
// atomic counter). The first exception thrown by any fn is rethrown here after
// all workers stop.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn);

}  // namespace magpie
