#pragma once
// main-memory's changes of single leaf entries side by side, as tiers/resident_writes.hpp is
// the buffer manager's: while the database latch is held for changes
// (engine/operation_latch.hpp) no exclusive holder and no reader outside a transaction runs,
// so only leaf entries change. Inner nodes are read without a latch; leaves are latched in
// the latch word main-memory keeps for each page (shared for a scan's copy, exclusive to
// change). A lookup reads its leaf optimistically instead (read_leaf), against the word's
// version, and writes nothing shared. A thread holds at most one leaf latch at a time, so the
// latches cannot deadlock.
//
// A split or merge throws RetryExclusively before anything is changed, and the caller runs the
// operation again under the exclusive latch. allocate_page, move_swips, swip_of and free_page
// must never be reached (the B-tree refuses first: refuse_structure_change) and throw
// std::logic_error.
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/page_format.hpp"
#include "common/shared_spin_latch_hold.hpp"
#include "common/types.hpp"
#include "tiers/main_memory_access.hpp"
#include "tiers/optimistic_leaf_read.hpp"
#include "tiers/pages_stay_put.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class MainMemoryWrites : public PagesStayPut<MainMemoryWrites> {
 public:
  static constexpr const char* kName = "MainMemoryWrites";
  // Not an Error: the operation runs again under the exclusive latch, never reported.
  struct RetryExclusively {};

  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept = default;
    Guard& operator=(Guard&& other) noexcept = default;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    PageId page_id() const { return reinterpret_cast<const PageHeader*>(page_)->page_id; }
    const std::byte* read(std::uint32_t offset, std::uint32_t) const { return page_ + offset; }
    // Only the leaf latched for its change.
    std::byte* write(std::uint32_t offset, std::uint32_t) const {
      assert(latch_.exclusive());
      return page_ + offset;
    }
    std::byte* whole_page() const { return page_; }
    void mark_dirty(std::uint32_t, std::uint32_t) const { assert(latch_.exclusive()); }

   private:
    friend class MainMemoryWrites;
    explicit Guard(std::byte* page) : page_(page) {}

    std::byte* page_ = nullptr;
    SharedSpinLatchHold latch_;  // the leaf's, once latch_leaf took it
  };

  explicit MainMemoryWrites(MainMemoryAccess& memory) : memory_(memory) {}
  ~MainMemoryWrites() { memory_.add_leaf_reads_retried(leaf_reads_retried_); }
  MainMemoryWrites(const MainMemoryWrites&) = delete;
  MainMemoryWrites& operator=(const MainMemoryWrites&) = delete;

  Guard fix(Swip& swip, Guard*) { return Guard(swip.frame<std::byte>()); }

  // A leaf the B-tree is about to read, or to change.
  void latch_leaf(Guard& leaf, bool for_change) {
    leaf.latch_.lock(memory_.latch_word(leaf.page_), for_change);
  }
  // Runs read() on a leaf that no latch_leaf latched, without a latch: again while a change
  // ran beside it, after a few tries under the shared latch (tiers/optimistic_leaf_read.hpp).
  template <typename Read>
  auto read_leaf(Guard& leaf, Read&& read) {
    return optimistic_leaf_read(memory_.latch_word(leaf.page_), leaf_reads_retried_, read,
                                [&] { latch_leaf(leaf, false); });
  }
  // A split, a merge or a new root: the exclusive latch's.
  [[noreturn]] void refuse_structure_change() {
    structure_refused_ = true;
    throw RetryExclusively{};
  }
  bool structure_refused() const { return structure_refused_; }

 private:
  MainMemoryAccess& memory_;
  std::uint64_t leaf_reads_retried_ = 0;
  bool structure_refused_ = false;
};

}  // namespace tristore
