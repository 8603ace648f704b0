#pragma once
// Page access for the main-memory architecture, the in-memory ceiling: every page is a 16 KiB
// aligned DRAM allocation, swips always hold pointers, and a guard is nothing but the page
// address. Volatile: nothing reaches a file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_set>
#include <utility>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "common/types.hpp"
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

  explicit MainMemoryAccess(std::uint64_t dram_budget_bytes) : budget_(dram_budget_bytes) {}
  MainMemoryAccess(const MainMemoryAccess&) = delete;
  MainMemoryAccess& operator=(const MainMemoryAccess&) = delete;
  ~MainMemoryAccess() {
    for (std::byte* page : pages_) std::free(page);
  }

  Guard allocate_page() {
    if ((pages_.size() + 1) * kPageSize > budget_)
      fail("main-memory: data exceeds the DRAM budget ({} MiB)", budget_ >> 20);
    auto* page = static_cast<std::byte*>(std::aligned_alloc(kPageSize, kPageSize));
    if (page == nullptr) throw std::bad_alloc();
    std::memset(page, 0, kPageSize);
    reinterpret_cast<PageHeader*>(page)->page_id = next_page_id_++;
    pages_.insert(page);
    return Guard(page);
  }

  Guard fix(Swip& swip, Guard*) { return Guard(swip.frame<std::byte>()); }

  void move_swips(Guard& to, std::uint32_t offset, Guard*, Swip* swips, std::uint32_t count) {
    std::memmove(to.page_ + offset, swips, count * sizeof(Swip));
  }

  Swip swip_of(const Guard& guard) { return Swip::from_frame(guard.page_); }

  void free_page(Guard&& guard) {
    pages_.erase(guard.page_);
    std::free(guard.page_);
    guard.page_ = nullptr;
  }

  std::uint64_t bytes_in_use() const { return pages_.size() * kPageSize; }
  std::uint64_t budget_bytes() const { return budget_; }

 private:
  std::uint64_t budget_;
  PageId next_page_id_ = 0;
  std::unordered_set<std::byte*> pages_;  // to free them all when the database closes
};

}  // namespace tristore
