#pragma once
// Transparent huge pages for large buffers that are filled once, front to back
// (event columns, link tables): their pages fault 2 MB at a time instead of
// 4 KB. On the 220 MB bench trace this took about 5 thousand of 45 thousand
// faults and 1-2% of the CPU time (docs/PERFORMANCE.md, "Seventh session").
// Only the 2 MB-aligned part of a range can take huge pages; where the kernel
// has THP off, the advice is a no-op.
#include <cstddef>
#include <vector>

namespace magpie {

// Small ranges are left alone: a huge page there would only add resident memory.
inline constexpr size_t kHugePageAdviceMin = size_t{4} << 20;

void advise_huge_pages(const void* data, size_t bytes);

// Reserves `n` elements and advises the new storage when it is large. Call it
// on an empty vector, before anything is written, or the advice comes too late
// for the pages already touched.
template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  if (v.capacity() * sizeof(T) >= kHugePageAdviceMin) advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace magpie
