// BufferManager (tiers/buffer_manager.hpp): misses of readers that hold the database latch
// shared (tiers/resident_reads.hpp). Lines that simply append to a frame are copied in beside
// other readers and other appends (one append per frame at a time); every other miss is
// served one at a time, under the miss latch, while the other readers go on.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "tiers/buffer_manager.hpp"
#include "tiers/poison.hpp"
#include "tiers/serving_miss.hpp"

namespace tristore {

bool BufferManager::is_live(const FrameHeader* frame) const {
  void* const* entry = page_table_.find(frame->page_id);
  return entry != nullptr && *entry == frame;
}

FrameHeader* BufferManager::fix_for_reader(Swip& swip, FrameHeader* parent) {
  PageLoad load;  // a read of the page whole (SSD, NVM), outside the miss latch
  for (bool counted = false;; counted = true) {
    if (load.frame != nullptr) await_page_load(load);
    const ServingMiss serving(*this, &BufferManager::sharing_);
    if (!counted) ++counters_.reader_misses;
    try {
      if (load.mine) finish_page_load(load);
      load = PageLoad{};
      // 1. Another miss may have swizzled the swip since the reader looked.
      const Swip seen = Swip::load(swip);
      if (seen.is_swizzled()) return seen.frame<FrameHeader>();
      // 2. The parent (or the full frame its promotion made) stays while its child is loaded.
      //    A parent let go meanwhile holds bytes that are no page's any more: its swip is
      //    followed, not swizzled, and the parent is not fixed (it is not reused meanwhile).
      FullFrame* holder = parent != nullptr ? holding_full_frame(parent) : nullptr;
      FrameHeader* page_frame = holder != nullptr ? &holder->header : parent;
      const bool parent_live = page_frame != nullptr && is_live(page_frame);
      Guard parent_guard = parent_live ? pin(page_frame) : Guard();
      const bool may_swizzle = parent == nullptr || (holder != nullptr && parent_live);
      // 3. The child, unless it is (or is now to be) read from SSD: that read runs outside the
      //    latch, and the next round finds the page in DRAM.
      FrameHeader* child = find_or_load(seen.page_id(), &load);
      if (child == nullptr) continue;
      Guard guard = pin(child);  // unfixed on return: readers hold no fixes
      if (swizzling_ && may_swizzle) swizzle(swip, child, parent_live ? page_frame : nullptr);
      return child;
    } catch (const RetryExclusively&) {
      ++counters_.reader_retries;
      throw;
    }
  }
}

const std::byte* BufferManager::read_for_reader(FrameHeader*& frame, std::uint32_t offset,
                                                std::uint32_t length) {
  PageLoad load;  // a read of the page whole (SSD, NVM), outside the miss latch
  for (;;) {
    if (load.frame != nullptr) await_page_load(load);
    const ServingMiss serving(*this, &BufferManager::sharing_);
    try {
      if (load.mine) finish_page_load(load);
      load = PageLoad{};
      // 1. The page's frame now: the reader's may have been evicted, replaced or promoted
      //    (and the page read from SSD outside the latch, as a fix does).
      const PageId page_id = frame->page_id;
      FrameHeader* current = find_or_load(page_id, &load);
      if (current == nullptr) continue;
      // 2. No append beside this one on the same frame. One under way (its thread may have
      //    lost its core) is not waited for with the miss latch held: step out, come back.
      if (!current->try_latch_appends()) continue;
      ++counters_.reader_misses;
      // 3. Its lines, loaded if missing; a mini page may give way to a copy or a full frame,
      //    which the page table then names.
      const std::byte* bytes;
      {
        Guard guard = pin(current);
        try {
          bytes = make_resident(current, offset, length);
        } catch (...) {
          current->unlatch_appends();
          throw;
        }
        current->unlatch_appends();
      }
      frame = static_cast<FrameHeader*>(*page_table_.find(page_id));
      return bytes;
    } catch (const RetryExclusively&) {
      ++counters_.reader_retries;
      throw;
    }
  }
}

const std::byte* BufferManager::append_for_reader(FrameHeader* frame, std::uint32_t offset,
                                                  std::uint32_t length) {
  if (!appends_beside() || frame->nvm == nullptr ||
      frame->has(frame_flag::kLetGo | frame_flag::kLoading))
    return nullptr;
  if (!frame->try_latch_appends()) return nullptr;  // another append to it: take turns there
  const std::byte* bytes = append_lines(frame, offset, length);
  frame->unlatch_appends();
  return bytes;
}

const std::byte* BufferManager::append_beside_changes(FrameHeader* frame, std::uint32_t offset,
                                                      std::uint32_t length, bool latched) {
  // The append latch would race a changer's plain stores to the word (FrameHeader): the frame
  // latch keeps appends apart from changes, from a checkpoint's write-back (which may give a
  // page its NVM slot) and from each other.
  if (!appends_beside()) return nullptr;
  if (!latched && !frame->try_latch_exclusive()) return nullptr;
  const std::byte* bytes =
      frame->nvm == nullptr || frame->has(frame_flag::kLetGo | frame_flag::kLoading)
          ? nullptr
          : append_lines(frame, offset, length);
  if (!latched) frame->unlatch_exclusive();
  return bytes;
}

// The caller holds the frame's append latch, or its exclusive latch.
const std::byte* BufferManager::append_lines(FrameHeader* frame, std::uint32_t offset,
                                             std::uint32_t length) {
  const std::size_t first = offset / kCacheLineSize;
  const std::size_t last = (offset + length - 1) / kCacheLineSize;
  const std::byte* bytes = nullptr;
  std::size_t loaded = 0;
  // 1. Copy the lines in where readers do not look yet: past a mini page's count (only when
  //    none of them is there: a run of their own), or into a full frame's non-resident lines.
  MiniPage* mini = frame->is_mini() ? as_mini(frame) : nullptr;
  FullFrame* full = mini == nullptr ? as_full(frame) : nullptr;
  std::size_t count = 0;
  if (mini != nullptr) {
    count = mini->count();
    bool none_here = count + (last - first + 1) <= MiniPage::kSlots;
    for (std::size_t line = first; line <= last && none_here; ++line)
      none_here = mini->find(line) == MiniPage::kSlots;
    if (none_here) {
      std::byte* target = mini->data + count * kCacheLineSize;
      loaded = last - first + 1;
      unpoison_bytes(target, loaded * kCacheLineSize);
      nvm_device_->read(target, frame->nvm + first * kCacheLineSize, loaded * kCacheLineSize);
      for (std::size_t line = first; line <= last; ++line)
        mini->set_line_at(count + (line - first), line);
      bytes = target + offset % kCacheLineSize;
    }
  } else {
    for (std::size_t line = full->resident.next_clear(first); line <= last;) {
      const std::size_t run = std::min(full->resident.next_set(line), last + 1) - line;
      assert(run >= 1 && line + run <= kLinesPerPage);
      const std::size_t bytes_in_run = std::min(run, kLinesPerPage - line) * kCacheLineSize;
      unpoison_bytes(full->data + line * kCacheLineSize, bytes_in_run);
      nvm_device_->read(full->data + line * kCacheLineSize, frame->nvm + line * kCacheLineSize,
                        bytes_in_run);
      loaded += run;
      line += run;
      line = line < kLinesPerPage ? full->resident.next_clear(line) : kLinesPerPage;
    }
    bytes = full->data + offset;
  }
  // 2. The frame must still be the page's after the copy: then its NVM slot held this page all
  //    along (a slot is not evicted while its page is in DRAM). A frame let go meanwhile (its
  //    slot may since hold another page) gets nothing: the miss latch serves the read.
  //    (x86 keeps the copy's loads before the page table's; the compiler is told so.)
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (bytes == nullptr || frame_in_dram(frame->page_id) != frame) return nullptr;
  // 3. Show the lines: the count, or the resident bits, after the bytes.
  if (mini != nullptr) {
    mini->set_count(count + loaded);
  } else {
    full->resident.set(first, last);
    if (full->resident.full()) full->mark_all_resident();
  }
  add_in_own_slot(thread_reads_[thread_slot()].appends, 1);
  return bytes;
}

}  // namespace tristore
