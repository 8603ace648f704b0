#pragma once
// Operations served beside others (changes mode, tiers/main_memory_writes.hpp and
// tiers/nvm_direct_writes.hpp; the buffer manager's are alike), those run again exclusively
// because they needed more, and optimistic leaf reads a change spoilt: counted per thread slot
// (common/thread_slot.hpp: add_in_own_slot), a cache line each, so that threads share no written
// line for them.
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
  // One of those run again would have split, merged or made a new root.
  void add_structure_retried() { add_in_own_slot(slots_[thread_slot()].structure_retried, 1); }
  // A leaf split beside the changes (main-memory: common/structure_version.hpp).
  void add_split_beside() { add_in_own_slot(slots_[thread_slot()].splits_beside, 1); }
  // An undo step of an abort beside the changes, or one that needed more (the abort's rest
  // ran exclusively).
  void add_undo_step(bool retried) {
    Slot& mine = slots_[thread_slot()];
    add_in_own_slot(retried ? mine.undo_steps_retried : mine.undo_steps_beside, 1);
  }
  void add_leaf_reads_retried(std::uint64_t reads) {
    if (reads != 0) add_in_own_slot(slots_[thread_slot()].leaf_reads_retried, reads);
  }
  // Into total's changes_beside, changes_retried (and structure_retried), splits_beside,
  // leaf_reads_retried and the undo steps'.
  void add_to(Counters& total) const {
    for (const Slot& slot : slots_) {
      total.changes_beside += slot.beside.load(std::memory_order_relaxed);
      total.changes_retried += slot.retried.load(std::memory_order_relaxed);
      total.structure_retried += slot.structure_retried.load(std::memory_order_relaxed);
      total.splits_beside += slot.splits_beside.load(std::memory_order_relaxed);
      total.leaf_reads_retried += slot.leaf_reads_retried.load(std::memory_order_relaxed);
      total.undo_steps_beside += slot.undo_steps_beside.load(std::memory_order_relaxed);
      total.undo_steps_retried += slot.undo_steps_retried.load(std::memory_order_relaxed);
    }
  }
  // Counters with only those set.
  Counters counters() const {
    Counters total;
    add_to(total);
    return total;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> beside{0};
    std::atomic<std::uint64_t> retried{0};
    std::atomic<std::uint64_t> structure_retried{0};
    std::atomic<std::uint64_t> splits_beside{0};
    std::atomic<std::uint64_t> leaf_reads_retried{0};
    std::atomic<std::uint64_t> undo_steps_beside{0};
    std::atomic<std::uint64_t> undo_steps_retried{0};
  };
  std::array<Slot, kThreadSlots> slots_;
};

}  // namespace tristore
