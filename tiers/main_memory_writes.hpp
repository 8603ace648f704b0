#pragma once
// main-memory's changes of single leaf entries side by side, as tiers/resident_writes.hpp is
// the buffer manager's: while the database latch is held for changes
// (engine/operation_latch.hpp) no exclusive holder and no reader outside a transaction runs,
// so leaf entries change, and inner nodes only in leaf splits (below). Inner nodes are read
// without a latch; leaves are latched in the latch word main-memory keeps for each page
// (shared for a scan's copy, exclusive to change). A lookup reads its leaf optimistically
// instead (read_leaf), against the word's version, and writes nothing shared. A thread holds
// at most one leaf latch at a time, but a split: it latches the parent and the new leaf too,
// which nobody else latches (no descent latches an inner node, and the new leaf is reached
// only after the split), so the latches cannot deadlock.
//
// A leaf whose parent has room splits beside the changes (BTree::insert_splitting_leaf_beside):
// under the tree's structure version (common/structure_version.hpp), which every descent here
// checks, the parent latched exclusive here (latch_parent), the new leaf allocated latched
// (allocate_page) and linked with swips moved a word at a time, so that a descent reading a swip
// once (fix) never reads one half written. Any other split or merge, or a new root, throws
// RetryExclusively before anything is changed, and the caller runs the operation again under
// the exclusive latch. free_page must never be reached (merges refuse first:
// refuse_structure_change) and throws std::logic_error.
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
    // Only a page latched exclusive: the leaf of a change, or a split's three.
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

  // The swip read once, whole: a split beside may be moving it (move_swips).
  Guard fix(Swip& swip, Guard*) { return Guard(Swip::load(swip).frame<std::byte>()); }

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
  // A leaf split beside the changes, under the tree's structure version (BTree): its parent
  // latched exclusive (no descent beside latches an inner node, so it waits for nothing), the
  // new leaf allocated latched, swips moved and linked a word at a time.
  void latch_parent(Guard& parent) { parent.latch_.lock(memory_.latch_word(parent.page_), true); }
  Guard allocate_page() {
    Guard page(memory_.allocate());
    page.latch_.lock(memory_.latch_word(page.page_), true);
    return page;
  }
  void move_swips(Guard& to, std::uint32_t offset, Guard*, Swip* swips, std::uint32_t count) {
    assert(to.latch_.exclusive());
    Swip::move_within_page(reinterpret_cast<Swip*>(to.page_ + offset), swips, count,
                           [](std::uint32_t, Swip) {});
  }
  Swip swip_of(const Guard& guard) { return Swip::from_frame(guard.page_); }
  void add_split_beside() { memory_.add_split_beside(); }

  // Any other split, a merge or a new root: the exclusive latch's.
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
