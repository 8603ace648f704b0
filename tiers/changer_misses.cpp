// BufferManager (tiers/buffer_manager.hpp): misses of changes beside each other, which hold
// the database latch for changes (tiers/resident_writes.hpp), served under the miss latch
// while the other changes go on. A page not in DRAM is loaded into a free frame, and a swip
// swizzled; a mini page whose lines do not simply append is sorted into a copy or promoted,
// under its frame latch, the new frame latched before anything leads to it. While few slabs
// are free, a miss evicts ahead (tiers/dram_eviction.cpp: victims latched first, without
// waiting), and what is let go waits until the changes inside then have left
// (tiers/retired_frames.hpp): where no frame is free yet, the change brings its path in as a
// reader and tries beside again.
#include "tiers/buffer_manager.hpp"
#include "tiers/serving_miss.hpp"

namespace tristore {

FrameHeader* BufferManager::fix_beside_changes(Swip& swip, FrameHeader* parent) {
  PageLoad load;  // a read of the page whole (SSD, NVM), outside the miss latch
  for (bool counted = false;; counted = true) {
    if (load.frame != nullptr) await_page_load(load);
    const ServingMiss serving(*this, &BufferManager::changing_);
    if (!counted) ++counters_.changer_misses;
    if (load.mine) finish_page_load(load);
    load = PageLoad{};
    // 1. Another miss may have swizzled the swip since the changer looked.
    const Swip seen = Swip::load(swip);
    if (seen.is_swizzled()) return seen.frame<FrameHeader>();
    // 2. The page's frame: found, loaded from NVM into a free frame, or (the next round)
    //    read from SSD outside the latch. No free frame: RetryExclusively.
    FrameHeader* child = find_or_load(seen.page_id(), &load);
    if (child == nullptr) continue;
    // 3. Swizzled as a fix would (swizzle decides), a root swip or one in a live full frame
    //    that no thread holds exclusively: a leaf split beside the changes (changer_splits.cpp)
    //    holds its parent so while it moves the parent's swips. Changers read the swip once and
    //    atomically; the parent's write-back waits for the miss latch.
    if (swizzling_) {
      FullFrame* holder = parent != nullptr ? holding_full_frame(parent) : nullptr;
      if (parent == nullptr)
        swizzle(swip, child, nullptr);
      else if (holder != nullptr && is_live(&holder->header) &&
               !holder->header.latched_exclusively())
        swizzle(swip, child, &holder->header);
    }
    return child;
  }
}

BufferManager::Served BufferManager::load_beside_changes(FrameHeader* frame, std::uint32_t offset,
                                                         std::uint32_t length, bool latched) {
  const ServingMiss serving(*this, &BufferManager::changing_);
  // 1. The frame, latched against changes (the caller's leaf, or tried here: a miss never
  //    waits for a frame latch), and still the page's.
  if (!latched && !frame->try_latch_exclusive()) return {};
  Served served{nullptr, frame};
  if (!frame->has(frame_flag::kLetGo) && is_live(frame)) {
    ++counters_.changer_misses;
    // 2. The lines: a copy or a full frame may take the page over, latched by this thread.
    //    No frame free: nothing changed.
    const PageId page_id = frame->page_id;
    try {
      Guard pinned = pin(frame);  // a mini page let go goes when its pins do
      served.bytes = make_resident(frame, offset, length);
    } catch (const RetryExclusively&) {
    } catch (...) {  // an Error: the latches taken here go
      auto* now = static_cast<FrameHeader*>(*page_table_.find(page_id));
      if (now != frame) now->unlatch_exclusive();
      if (!latched) frame->unlatch_exclusive();
      throw;
    }
    served.frame = static_cast<FrameHeader*>(*page_table_.find(page_id));
  }
  // 3. The caller's latch moves with the page. A changer that was waiting for the old frame
  //    finds it let go.
  if (served.frame != frame) frame->unlatch_exclusive();
  if (!latched) served.frame->unlatch_exclusive();
  return served;
}

}  // namespace tristore
