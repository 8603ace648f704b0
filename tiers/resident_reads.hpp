#pragma once
// Reads of pages the buffer manager already holds in DRAM, writing nothing shared, so that
// several threads may run them at once while the database latch is held shared
// (engine/operation_latch.hpp). A fix follows a swizzled swip or finds a DRAM frame in the
// page table; a read returns bytes already resident in a full frame or a mini page. Whatever
// would change the buffer (a load from NVM or SSD, a swizzle, a promotion) throws NotResident
// instead: the caller runs the read again under the exclusive latch, through the
// BufferManager itself. Nothing is fixed: no frame can leave DRAM while the latch is held
// shared. The only write is a frame's referenced bit (FrameHeader::mark_referenced), so that
// the clock sees these reads too; fixes are counted per thread (BufferManager::add_resident_reads).
//
// It models PageAccess for the B-tree's reading functions; the changing ones (allocate_page,
// write, move_swips, swip_of, free_page) must never be called and throw std::logic_error.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "common/types.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class ResidentReads {
 public:
  struct NotResident {};  // not an Error: the read is retried, never reported

  class Guard {
   public:
    Guard() = default;
    PageId page_id() const { return frame_->page_id; }
    [[gnu::always_inline]] const std::byte* read(std::uint32_t offset, std::uint32_t length) const {
      return ResidentReads::read(frame_, offset, length);
    }
    std::byte* whole_page() const {
      const FullFrame* full = holding_full_frame(frame_);
      if (full == nullptr || !full->resident_all) not_resident();
      return const_cast<std::byte*>(full->data);
    }
    [[noreturn]] std::byte* write(std::uint32_t, std::uint32_t) const { refuse("write"); }
    [[noreturn]] void mark_dirty(std::uint32_t, std::uint32_t) const { refuse("mark_dirty"); }

   private:
    friend class ResidentReads;
    explicit Guard(FrameHeader* frame) : frame_(frame) {}
    FrameHeader* frame_ = nullptr;
  };

  explicit ResidentReads(BufferManager& manager) : manager_(manager) {}
  // Counts this object's fixes into the manager's per-thread counters.
  ~ResidentReads() { manager_.add_resident_reads(swizzled_hits_, page_table_lookups_); }
  ResidentReads(const ResidentReads&) = delete;
  ResidentReads& operator=(const ResidentReads&) = delete;

  [[gnu::always_inline]] Guard fix(Swip& swip, Guard* parent) {
    if (!swip.is_swizzled()) [[unlikely]]
      return fix_unswizzled(swip, parent);
    ++swizzled_hits_;
    FrameHeader* frame = swip.frame<FrameHeader>();
    frame->mark_referenced();
    return Guard(frame);
  }

  [[noreturn]] Guard allocate_page() { refuse("allocate_page"); }
  [[noreturn]] void move_swips(Guard&, std::uint32_t, Guard*, Swip*, std::uint32_t) {
    refuse("move_swips");
  }
  [[noreturn]] Swip swip_of(const Guard&) { refuse("swip_of"); }
  [[noreturn]] void free_page(Guard&&) { refuse("free_page"); }

 private:
  [[gnu::noinline]] Guard fix_unswizzled(Swip& swip, Guard* parent) {
    ++page_table_lookups_;
    FrameHeader* frame = manager_.frame_in_dram(swip.page_id());
    // A swip the buffer manager would swizzle goes to it once, so that later reads skip the
    // page table.
    if (frame == nullptr ||
        manager_.would_swizzle(swip, frame, parent != nullptr ? parent->frame_ : nullptr))
      not_resident();
    frame->mark_referenced();
    return Guard(frame);
  }

  // The hot path, inline as the buffer manager's make_resident is (the binary search of a
  // node calls it once per probe); mini pages out of line.
  [[gnu::always_inline]] static const std::byte* read(FrameHeader* frame, std::uint32_t offset,
                                                      std::uint32_t length) {
    if (!frame->is_mini()) [[likely]] {
      const FullFrame* full = reinterpret_cast<const FullFrame*>(frame);
      if (full->is_resident(offset / kCacheLineSize, (offset + length - 1) / kCacheLineSize))
          [[likely]]
        return full->data + offset;
    }
    return read_cold(frame, offset, length);
  }

  [[gnu::noinline]] static const std::byte* read_cold(FrameHeader* frame, std::uint32_t offset,
                                                      std::uint32_t length) {
    const std::size_t first = offset / kCacheLineSize;
    const std::size_t last = (offset + length - 1) / kCacheLineSize;
    if (const FullFrame* full = holding_full_frame(frame)) {  // or a promoted mini page
      if (full->is_resident(first, last)) return full->data + offset;
      not_resident();
    }
    const MiniPage* mini = as_mini(frame);
    // The lines sit in consecutive slots when all are there (sorted, unique).
    const std::size_t slot = mini->find(first);
    const std::size_t last_slot = slot + (last - first);
    if (last_slot < mini->header.mini_count && mini->slots[last_slot] == last)
      return mini->data + slot * kCacheLineSize + offset % kCacheLineSize;
    not_resident();
  }

  [[noreturn, gnu::cold, gnu::noinline]] static void not_resident() { throw NotResident{}; }

  [[noreturn]] static void refuse(const char* what) {
    throw std::logic_error(std::string("ResidentReads::") + what + ": a read-only access");
  }

  BufferManager& manager_;
  std::uint64_t swizzled_hits_ = 0;
  std::uint64_t page_table_lookups_ = 0;
};

}  // namespace tristore
