#pragma once
// Reads beside each other, while the database latch is held shared
// (engine/operation_latch.hpp): no writer runs, so pages change only by what the buffer
// manager does to serve a miss. A fix follows a swizzled swip or finds a DRAM frame in the
// page table; a read returns bytes already resident in a full frame or a mini page. Nothing
// is fixed and nothing shared is written on that path but a frame's referenced bit
// (FrameHeader::mark_referenced), so that the clock sees these reads too; fixes are counted
// per thread (BufferManager::add_resident_reads).
//
// What is missing (a page not in DRAM, a swip to swizzle, a line to load) the buffer manager
// serves, one miss at a time (BufferManager::fix_for_reader, read_for_reader), while other
// readers go on. A frame this reader holds may be let go meanwhile (evicted, replaced by a
// larger mini page, promoted): it stays readable until the reader leaves, and its next miss
// finds the page's frame anew. When no frame can be had without waiting for readers to
// leave, NotResident is thrown and the caller runs the read again under the exclusive latch.
//
// It models PageAccess for the B-tree's reading functions; the changing ones (allocate_page,
// write, move_swips, swip_of, free_page) must never be called and throw std::logic_error.
#include <cstddef>
#include <cstdint>

#include "common/types.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/frame.hpp"
#include "tiers/pages_stay_put.hpp"
#include "tiers/swip.hpp"

namespace tristore {

class ResidentReads : public PagesStayPut<ResidentReads> {
 public:
  static constexpr const char* kName = "ResidentReads";
  // Not an Error: the read is run again under the exclusive latch, never reported.
  using NotResident = BufferManager::RetryExclusively;

  class Guard {
   public:
    Guard() = default;
    PageId page_id() const { return frame_->page_id; }
    // The hot path, inline as the buffer manager's make_resident is (the binary search of a
    // node calls it once per probe): a full frame whose lines are all resident (in DRAM,
    // nearly every one), tested once at the fix; then resident lines of a full frame. The
    // rest out of line.
    [[gnu::always_inline]] const std::byte* read(std::uint32_t offset, std::uint32_t length) const {
      if (whole_ != nullptr) [[likely]]
        return whole_ + offset;
      if (!frame_->is_mini()) {
        const FullFrame* full = reinterpret_cast<const FullFrame*>(frame_);
        if (full->is_resident(offset / kCacheLineSize, (offset + length - 1) / kCacheLineSize))
            [[likely]]
          return full->data + offset;
      }
      // By value, not through `this`: the guard stays in registers on the hot path.
      const Served served = read_cold(manager_, frame_, offset, length);
      frame_ = served.frame;
      whole_ = data_if_whole(frame_);
      return served.bytes;
    }
    std::byte* whole_page() const { return const_cast<std::byte*>(read(0, kPageSize)); }
    [[noreturn]] std::byte* write(std::uint32_t, std::uint32_t) const { refuse("write"); }
    [[noreturn]] void mark_dirty(std::uint32_t, std::uint32_t) const { refuse("mark_dirty"); }

   private:
    friend class ResidentReads;
    // A frame's bytes stay resident and in place while a reader is inside (lines are only
    // added; a frame let go is retired until the readers leave), so a page found whole stays
    // whole for the guard's life.
    Guard(BufferManager* manager, FrameHeader* frame)
        : manager_(manager), frame_(frame), whole_(data_if_whole(frame)) {}

    // The bytes, and the frame the reader follows from now on.
    struct Served {
      const std::byte* bytes;
      FrameHeader* frame;
    };
    [[gnu::noinline]] static Served read_cold(BufferManager* manager, FrameHeader* frame,
                                              std::uint32_t offset, std::uint32_t length) {
      if (const std::byte* bytes = resident_bytes(frame, offset, length)) return {bytes, frame};
      if (const std::byte* bytes = manager->append_for_reader(frame, offset, length))
        return {bytes, frame};
      BufferManager::prefetch_for_reader(frame, offset, length);
      const std::byte* bytes = manager->read_for_reader(frame, offset, length);
      return {bytes, frame};
    }

    BufferManager* manager_ = nullptr;
    // The frame the reader follows: a miss may move it to the page's newer frame.
    mutable FrameHeader* frame_ = nullptr;
    // frame_'s data when it is a full frame with every line resident, else null.
    mutable const std::byte* whole_ = nullptr;
  };

  explicit ResidentReads(BufferManager& manager) : manager_(manager) {}
  // Counts this object's fixes into the manager's per-thread counters.
  ~ResidentReads() { manager_.add_resident_reads(swizzled_hits_, page_table_lookups_); }
  ResidentReads(const ResidentReads&) = delete;
  ResidentReads& operator=(const ResidentReads&) = delete;

  [[gnu::always_inline]] Guard fix(Swip& swip, Guard* parent) {
    const Swip seen = Swip::load(swip);  // a miss may swizzle it: read it once
    if (!seen.is_swizzled()) [[unlikely]]
      return fix_unswizzled(seen, swip, parent);
    ++swizzled_hits_;
    FrameHeader* frame = seen.frame<FrameHeader>();
    frame->mark_referenced();
    return Guard(&manager_, frame);
  }

 private:
  [[gnu::noinline]] Guard fix_unswizzled(Swip seen, Swip& swip, Guard* parent) {
    FrameHeader* parent_frame = parent != nullptr ? parent->frame_ : nullptr;
    FrameHeader* frame = manager_.frame_in_dram(seen.page_id());
    // A swip the buffer manager would swizzle goes to it once, so that later reads skip the
    // page table.
    if (frame == nullptr || manager_.would_swizzle(swip, frame, parent_frame))
      return Guard(&manager_, manager_.fix_for_reader(swip, parent_frame));
    ++page_table_lookups_;
    frame->mark_referenced();
    return Guard(&manager_, frame);
  }

  BufferManager& manager_;
  std::uint64_t swizzled_hits_ = 0;
  std::uint64_t page_table_lookups_ = 0;
};

}  // namespace tristore
