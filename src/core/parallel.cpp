#include "core/parallel.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace magpie {

unsigned default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(n)));
  std::atomic<size_t> next{0};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        next = n;  // stop handing out work
      }
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  pool.clear();  // joins
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace magpie
