#pragma once
// main-memory's changes of single leaf entries side by side, as tiers/resident_writes.hpp is
// the buffer manager's: while the database latch is held for changes
// (engine/operation_latch.hpp) no exclusive holder and no reader outside a transaction runs,
// so only leaf entries change. Inner nodes are read without a latch; leaves are latched in
// the latch word main-memory keeps for each page (shared to read, exclusive to change). A
// thread holds at most one leaf latch at a time, so the latches cannot deadlock.
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
#include "common/shared_spin_latch.hpp"
#include "common/types.hpp"
#include "tiers/main_memory_access.hpp"
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
    Guard(Guard&& other) noexcept
        : memory_(other.memory_),
          page_(std::exchange(other.page_, nullptr)),
          latched_(std::exchange(other.latched_, Latched::kNo)) {}
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        release();
        memory_ = other.memory_;
        page_ = std::exchange(other.page_, nullptr);
        latched_ = std::exchange(other.latched_, Latched::kNo);
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { release(); }

    PageId page_id() const { return reinterpret_cast<const PageHeader*>(page_)->page_id; }
    const std::byte* read(std::uint32_t offset, std::uint32_t) const { return page_ + offset; }
    // Only the leaf latched for its change.
    std::byte* write(std::uint32_t offset, std::uint32_t) const {
      assert(latched_ == Latched::kExclusive);
      return page_ + offset;
    }
    std::byte* whole_page() const { return page_; }
    void mark_dirty(std::uint32_t, std::uint32_t) const { assert(latched_ == Latched::kExclusive); }
    void release() {
      if (page_ == nullptr) return;
      SharedSpinLatch latch(memory_->latch_word(std::exchange(page_, nullptr)));
      const Latched latched = std::exchange(latched_, Latched::kNo);
      if (latched == Latched::kExclusive)
        latch.unlock();
      else if (latched == Latched::kShared)
        latch.unlock_shared();
    }

   private:
    friend class MainMemoryWrites;
    Guard(MainMemoryAccess* memory, std::byte* page) : memory_(memory), page_(page) {}

    MainMemoryAccess* memory_ = nullptr;
    std::byte* page_ = nullptr;  // latched when latched_ says so
    enum class Latched : std::uint8_t { kNo, kShared, kExclusive } latched_ = Latched::kNo;
  };

  explicit MainMemoryWrites(MainMemoryAccess& memory) : memory_(memory) {}
  MainMemoryWrites(const MainMemoryWrites&) = delete;
  MainMemoryWrites& operator=(const MainMemoryWrites&) = delete;

  Guard fix(Swip& swip, Guard*) { return Guard(&memory_, swip.frame<std::byte>()); }

  // A leaf the B-tree is about to read, or to change.
  void latch_leaf(Guard& leaf, bool for_change) {
    assert(leaf.latched_ == Guard::Latched::kNo);
    SharedSpinLatch latch(memory_.latch_word(leaf.page_));
    if (for_change) {
      latch.lock();
      leaf.latched_ = Guard::Latched::kExclusive;
    } else {
      latch.lock_shared();
      leaf.latched_ = Guard::Latched::kShared;
    }
  }
  // A split, a merge or a new root: the exclusive latch's.
  [[noreturn]] void refuse_structure_change() { throw RetryExclusively{}; }

 private:
  MainMemoryAccess& memory_;
};

}  // namespace tristore
