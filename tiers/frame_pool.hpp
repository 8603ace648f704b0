#pragma once
// The DRAM budget as a hard limit: one anonymous mapping of budget / 16512 slabs. A slab holds
// either one full frame (128 B header + 16 KiB) or 15 mini pages (15 x 1088 = 16320 B), so full
// frames plus mini pages never exceed the budget. One slab size instead of two fixed pools
// lets the mix of full and mini pages follow the workload; the price is that a full frame
// needs a whole slab, which the DRAM clock frees by evicting a cold mini slab at once.
//
// Memory that holds no page content (free slabs, free mini slots, and later the non-resident
// lines of a frame) is poisoned in debug builds (tiers/poison.hpp).
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tiers/frame.hpp"

namespace tristore {

class FramePool {
 public:
  static constexpr std::size_t kSlabBytes = sizeof(FullFrame);
  static constexpr std::size_t kMinisPerSlab = kSlabBytes / sizeof(MiniPage);
  static_assert(kMinisPerSlab == 15);
  static constexpr std::uint16_t kAllMinis = (1u << kMinisPerSlab) - 1;
  enum class SlabKind : std::uint8_t { kFree, kFull, kMini };

  explicit FramePool(std::uint64_t budget_bytes);  // Error when fewer than kMinSlabs fit
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  static constexpr std::size_t kMinSlabs = 4;

  std::size_t slab_count() const { return slabs_.size(); }
  SlabKind kind(std::size_t slab) const { return slabs_[slab].kind; }
  std::uint16_t minis_in_use(std::size_t slab) const { return slabs_[slab].minis_in_use; }
  FullFrame* full_frame(std::size_t slab) const {
    return reinterpret_cast<FullFrame*>(base_ + slab * kSlabBytes);
  }
  MiniPage* mini_page(std::size_t slab, std::size_t index) const {
    return reinterpret_cast<MiniPage*>(base_ + slab * kSlabBytes + index * sizeof(MiniPage));
  }

  // nullptr when no slab (or, for a mini page, no free mini slot) is free: evict, then retry.
  FullFrame* try_allocate_full();
  MiniPage* try_allocate_mini();
  void release(FrameHeader* frame);

  std::uint64_t budget_bytes() const { return budget_bytes_; }
  std::uint64_t bytes_in_use() const {
    return full_frames_ * sizeof(FullFrame) + mini_pages_ * sizeof(MiniPage);
  }
  std::size_t frames_in_use() const { return full_frames_ + mini_pages_; }
  std::size_t free_slabs() const { return free_slabs_.size(); }

 private:
  struct Slab {
    SlabKind kind = SlabKind::kFree;
    std::uint16_t minis_in_use = 0;  // bit i: mini page i is allocated
    bool listed = false;             // on partial_minis_ (at most once, so the list stays bounded)
  };
  std::size_t slab_of(const void* p) const {
    return static_cast<std::size_t>(static_cast<const std::byte*>(p) - base_) / kSlabBytes;
  }
  std::size_t take_free_slab();  // slab_count() when none
  void list_partial(std::size_t slab) {
    if (slabs_[slab].listed) return;
    slabs_[slab].listed = true;
    partial_minis_.push_back(static_cast<std::uint32_t>(slab));
  }

  std::uint64_t budget_bytes_;
  std::byte* base_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  std::vector<Slab> slabs_;
  std::vector<std::uint32_t> free_slabs_;  // a stack
  std::vector<std::uint32_t>
      partial_minis_;  // mini slabs that may have a free slot (checked lazily)
  std::size_t full_frames_ = 0;
  std::size_t mini_pages_ = 0;
};

}  // namespace tristore
