#pragma once
// Page access for the main-memory architecture, the in-memory ceiling: every page is a 16 KiB
// slot of one DRAM arena, swips always hold pointers, and a guard is nothing but the page
// address. Volatile: nothing reaches a file. The arena asks for transparent huge pages, as the
// buffer manager's frame pool does, so both pay the same for address translation.
// Beside the arena, a latch word per page, a cache line apart, for changes of leaf entries side
// by side (tiers/main_memory_writes.hpp), and per-thread counts of those changes.
#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/changes_beside_counts.hpp"
#include "common/error.hpp"
#include "common/page_format.hpp"
#include "common/spin_latch.hpp"
#include "common/structure_version.hpp"
#include "common/types.hpp"
#include "tiers/latch_words.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class MainMemoryAccess {
 public:
  class Guard {
   public:
    Guard() = default;
    PageId page_id() const { return reinterpret_cast<const PageHeader*>(page_)->page_id; }
    const std::byte* read(std::uint32_t offset, std::uint32_t) const { return page_ + offset; }
    std::byte* write(std::uint32_t offset, std::uint32_t) const { return page_ + offset; }
    std::byte* whole_page() const { return page_; }
    void mark_dirty(std::uint32_t, std::uint32_t) const {}

   private:
    friend class MainMemoryAccess;
    explicit Guard(std::byte* page) : page_(page) {}
    std::byte* page_ = nullptr;
  };

  // Reserves (does not touch) the budget's address range, and its latch words'.
  explicit MainMemoryAccess(std::uint64_t dram_budget_bytes)
      : budget_(dram_budget_bytes),
        capacity_(pages_in(dram_budget_bytes)),
        arena_(map_arena(capacity_)),
        latches_(capacity_, "main-memory") {}
  MainMemoryAccess(const MainMemoryAccess&) = delete;
  MainMemoryAccess& operator=(const MainMemoryAccess&) = delete;
  ~MainMemoryAccess() { munmap(arena_, capacity_ * kPageSize); }

  // The latch word of the page at `page` (tiers/main_memory_writes.hpp); zero: unlatched.
  std::uint64_t& latch_word(const std::byte* page) {
    return latches_[static_cast<std::uint64_t>(page - arena_) / kPageSize];
  }
  // An operation in a transaction served beside others, or run again exclusively because it
  // needed more (as BufferManager::add_change_beside); counted per thread.
  void add_change_beside(bool retried) { changes_beside_.add(retried); }
  void add_structure_retried() { changes_beside_.add_structure_retried(); }
  void add_undo_step_beside(bool retried) { changes_beside_.add_undo_step(retried); }
  // Optimistic leaf reads beside changes that a change spoilt, counted per thread.
  void add_leaf_reads_retried(std::uint64_t reads) {
    changes_beside_.add_leaf_reads_retried(reads);
  }
  // The structure version of the tree whose root swip is at `root` (common/structure_version.hpp):
  // every handle of the tree checks the same one. Asked when a handle is made.
  StructureVersion& structure_version(const Swip* root) {
    const std::lock_guard lock(allocation_latch_);
    return structure_versions_[root];
  }
  // A leaf split beside changes, counted per thread.
  void add_split_beside() { changes_beside_.add_split_beside(); }
  Counters counters() const { return changes_beside_.counters(); }

  Guard allocate_page() { return Guard(allocate()); }
  // A zeroed page with a new id. Leaf splits beside changes allocate side by side
  // (tiers/main_memory_writes.hpp), so under a latch of its own.
  std::byte* allocate() {
    const std::lock_guard lock(allocation_latch_);
    std::byte* page;
    if (!free_pages_.empty()) {
      page = free_pages_.back();
      free_pages_.pop_back();
    } else {
      if (used_ == capacity_)
        fail("main-memory: data exceeds the DRAM budget ({} MiB)", budget_ >> 20);
      page = arena_ + used_++ * kPageSize;
    }
    std::memset(page, 0, kPageSize);
    reinterpret_cast<PageHeader*>(page)->page_id = next_page_id_++;
    return page;
  }

  Guard fix(Swip& swip, Guard*) { return Guard(swip.frame<std::byte>()); }

  void move_swips(Guard& to, std::uint32_t offset, Guard*, Swip* swips, std::uint32_t count) {
    std::memmove(to.page_ + offset, swips, count * sizeof(Swip));
  }

  Swip swip_of(const Guard& guard) { return Swip::from_frame(guard.page_); }

  void free_page(Guard&& guard) {
    const std::lock_guard lock(allocation_latch_);
    free_pages_.push_back(std::exchange(guard.page_, nullptr));
  }

  std::uint64_t bytes_in_use() const {
    const std::lock_guard lock(allocation_latch_);
    return (used_ - free_pages_.size()) * kPageSize;
  }
  std::uint64_t budget_bytes() const { return budget_; }

 private:
  static std::uint64_t pages_in(std::uint64_t budget) {
    if (budget < kPageSize) fail("main-memory: a DRAM budget of {} bytes holds no page", budget);
    return budget / kPageSize;
  }
  static std::byte* map_arena(std::uint64_t pages) {
    const std::uint64_t bytes = pages * kPageSize;
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED)
      fail("main-memory: cannot map {} bytes: {}", bytes, std::strerror(errno));
    madvise(memory, bytes, MADV_HUGEPAGE);
    return static_cast<std::byte*>(memory);
  }

  std::uint64_t budget_;
  std::uint64_t capacity_;  // pages
  std::byte* arena_;
  LatchWords latches_;  // one per page of the arena
  mutable SpinLatch allocation_latch_;
  std::uint64_t used_ = 0;  // pages handed out from the arena's start, freed ones included
  std::vector<std::byte*> free_pages_;
  PageId next_page_id_ = 0;
  std::unordered_map<const Swip*, StructureVersion> structure_versions_;  // by root swip
  ChangesBesideCounts changes_beside_;
};

}  // namespace tristore
