#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace magpie {

void advise_huge_pages(const void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (data == nullptr || bytes < kHugePageAdviceMin) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t from = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t to = (begin + bytes) & ~(kHuge - 1);
  // Failure only means 4 KB pages, as without the advice.
  if (to > from) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace magpie
