#pragma once
// Operations served beside others (changes mode, tiers/resident_writes.hpp and
// tiers/main_memory_writes.hpp), and those run again exclusively because they needed more:
// counted per thread slot (common/thread_slot.hpp: add_in_own_slot), a cache line each, so
// that threads share no written line for them.
#include <array>
#include <atomic>
#include <cstdint>

#include "common/counters.hpp"
#include "common/thread_slot.hpp"

namespace tristore {

class ChangesBesideCounts {
 public:
  void add(bool retried) {
    Slot& mine = slots_[thread_slot()];
    add_in_own_slot(retried ? mine.retried : mine.beside, 1);
  }
  // Into total's changes_beside and changes_retried.
  void add_to(Counters& total) const {
    for (const Slot& slot : slots_) {
      total.changes_beside += slot.beside.load(std::memory_order_relaxed);
      total.changes_retried += slot.retried.load(std::memory_order_relaxed);
    }
  }
  // Counters with only those two set.
  Counters counters() const {
    Counters total;
    add_to(total);
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> beside{0};
    std::atomic<std::uint64_t> retried{0};
  };
  std::array<Slot, kThreadSlots> slots_;
};

}  // namespace tristore
