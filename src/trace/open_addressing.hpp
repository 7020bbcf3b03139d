#pragma once
// Linear-probing tables of the trace library (StringPool's index, a chunk's
// argument-text cache) keep their full hash in each slot: growing one moves
// the slots into a table of twice the size without hashing anything again.
#include <cstddef>
#include <utility>
#include <vector>

namespace magpie::trace {

// `slots` moved into a table of twice its size (a power of two); `is_free`
// tells an empty slot, `hash_of` a slot's stored hash.
template <class Slot, class IsFree, class HashOf>
void grow_open_addressing(std::vector<Slot>& slots, IsFree is_free, HashOf hash_of) {
  std::vector<Slot> bigger(slots.size() * 2);
  const size_t mask = bigger.size() - 1;
  for (const Slot& slot : slots) {
    if (is_free(slot)) continue;
    size_t i = hash_of(slot) & mask;
    while (!is_free(bigger[i])) i = (i + 1) & mask;
    bigger[i] = slot;
  }
  slots = std::move(bigger);
}

}  // namespace magpie::trace
