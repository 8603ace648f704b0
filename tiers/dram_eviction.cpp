// BufferManager (tiers/buffer_manager.hpp): frames for pages, and DRAM eviction (a clock over
// slabs of frames; paper Figure 6, transitions 3 to 5).
#include "tiers/buffer_manager.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace tristore {

// Beside readers, and beside changes, evicted frames come back only after a grace period,
// which a thread that lost its core stretches. So while few slabs are free, a miss evicts a
// batch ahead for the misses to come, keeping up to kFramesInFlight (at most an eighth of the
// pool, at least one batch) retired. Beside changes, a victim is latched first, without
// waiting: a frame a change holds (its leaf, latched until its change is logged) is passed
// over, and a change that latches a frame evicted meanwhile finds it let go
// (tiers/resident_writes.hpp).
constexpr std::size_t kEvictionsAhead = 16;
constexpr std::size_t kFreeSlabsKept = 2;
constexpr std::size_t kFramesInFlight = 256;

template <typename Frame, typename TryAllocate>
Frame* BufferManager::allocate(Need need, TryAllocate&& try_allocate) {
  const bool beside = sharing_ || (changing_ && changers_ != nullptr);
  if (beside && pool_.free_slabs() <= kFreeSlabsKept) evict_ahead(need);
  for (;;) {
    if (Frame* frame = try_allocate()) return frame;
    if (reclaim_retired() > 0) continue;
    if (sharing_ || changing_) throw RetryExclusively{};
    if (!evict_for(need))
      fail("DRAM buffer pool exhausted: all {} frames are fixed or hold swizzled children",
           pool_.slab_count());
  }
}

void BufferManager::evict_ahead(Need need) {
  const std::size_t in_flight =
      std::max(kEvictionsAhead, std::min(kFramesInFlight, pool_.slab_count() / 8));
  for (std::size_t evicted = 0;
       evicted < kEvictionsAhead && retired_.size() < in_flight && evict_for(need); ++evicted) {
  }
}

FullFrame* BufferManager::allocate_full() {
  return allocate<FullFrame>(Need::kFullFrame, [this] { return pool_.try_allocate_full(); });
}

MiniPage* BufferManager::allocate_mini() {
  return allocate<MiniPage>(Need::kAnything, [this] { return pool_.try_allocate_mini(); });
}

void BufferManager::release_frame(FrameHeader* frame) {
  if (changing_)
    retired_.retire_beside_changes(frame);
  else if (sharing_)
    retired_.retire(frame);
  else
    pool_.release(frame);
}

std::size_t BufferManager::reclaim_retired() {
  if (retired_.empty()) return 0;
  return retired_.reclaim(readers_, changers_, changing_,
                          [this](FrameHeader* frame) { pool_.release(frame); });
}

bool BufferManager::evictable(FrameHeader* frame) const {
  if (frame->fix_count != 0 || frame->has(frame_flag::kLetGo)) return false;
  return frame->is_mini() || as_full(frame)->swizzled_children == 0;
}

bool BufferManager::evict_for(Need need) {
  // Clock over slabs: the first sweep may only clear second-chance bits, the second finds a
  // victim unless every frame is fixed or has swizzled children. A full frame needs a whole
  // slab, so a mini slab is then evicted at once, and only when all its pages are cold.
  using SlabKind = FramePool::SlabKind;
  const std::size_t slabs = pool_.slab_count();
  for (std::size_t step = 0; step < 2 * slabs + 1; ++step) {
    const std::size_t slab = dram_hand_;
    dram_hand_ = slab + 1 == slabs ? 0 : slab + 1;
    if (pool_.kind(slab) == SlabKind::kFull) {
      FrameHeader* frame = &pool_.full_frame(slab)->header;
      if (!evictable(frame)) continue;
      if (frame->has(frame_flag::kReferenced)) {
        frame->clear(frame_flag::kReferenced);
        continue;
      }
      if (!latch_victim(frame)) continue;
      evict_latched(frame);
      return true;
    }
    if (pool_.kind(slab) != SlabKind::kMini) continue;
    bool all_cold = true;
    for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i) {
      if (!(pool_.minis_in_use(slab) & (1u << i))) continue;
      FrameHeader* frame = &pool_.mini_page(slab, i)->header;
      if (!evictable(frame)) {
        all_cold = false;
      } else if (frame->has(frame_flag::kReferenced)) {
        frame->clear(frame_flag::kReferenced);
        all_cold = false;
      } else if (need == Need::kAnything && latch_victim(frame)) {
        evict_latched(frame);
        return true;
      }
    }
    if (need == Need::kFullFrame && all_cold) {
      // Every mini page of the slab latched, or none evicted.
      std::uint32_t latched = 0;
      for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i)
        if ((pool_.minis_in_use(slab) & (1u << i)) &&
            latch_victim(&pool_.mini_page(slab, i)->header))
          latched |= 1u << i;
      if (latched != pool_.minis_in_use(slab)) {
        for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i)
          if (latched & (1u << i)) unlatch_victim(&pool_.mini_page(slab, i)->header);
        continue;
      }
      for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i) {
        if (!(latched & (1u << i))) continue;
        latched &= ~(1u << i);
        try {
          evict_latched(&pool_.mini_page(slab, i)->header);
        } catch (...) {  // the others stay as they are, let go
          for (std::size_t j = i + 1; j < FramePool::kMinisPerSlab; ++j)
            if (latched & (1u << j)) unlatch_victim(&pool_.mini_page(slab, j)->header);
          throw;
        }
      }
      return true;
    }
  }
  return false;
}

// Beside changes, the frame latch, tried; elsewhere nothing (readers and the exclusive
// latch's holder take none).
bool BufferManager::latch_victim(FrameHeader* frame) {
  return !changing_ || frame->try_latch_exclusive();
}

void BufferManager::unlatch_victim(FrameHeader* frame) {
  if (changing_) frame->unlatch_exclusive();
}

// The victim let go also when its write-back throws (an I/O error, a simulated crash): a frame
// left latched would keep every later change of its page, an abort's undo too, waiting for ever.
void BufferManager::evict_latched(FrameHeader* frame) {
  try {
    evict(frame);
  } catch (...) {
    unlatch_victim(frame);
    throw;
  }
  unlatch_victim(frame);
}

void BufferManager::evict(FrameHeader* frame) {
  assert(evictable(frame));
  // 1. No swizzled pointer to the frame may survive it.
  if (frame->has(frame_flag::kSwizzled)) unswizzle(frame);
  // 2. Write it down: NVM-backed pages stay in their slot (dirty lines only), others face
  //    the admission decision. The log first (write-ahead rule).
  if (options_.before_write_back) options_.before_write_back(write_back_lsn(frame));
  if (frame->nvm != nullptr)
    write_back_to_nvm(frame);
  else
    evict_unbacked(as_full(frame));
  // 3. Free the frame (after a grace period, if readers may be looking at it).
  ++counters_.dram_evictions;
  frame->bump_version_keeping_latch();
  release_frame(frame);
}

void BufferManager::evict_unbacked(FullFrame* frame) {
  assert(frame->resident_all);
  const PageId page_id = frame->header.page_id;
  // Transition 4: admitted to NVM, the whole page (it was never NVM-backed).
  if (nvm_ != nullptr && should_admit(page_id)) {
    if (std::byte* slot = admit_to_nvm(page_id, frame->data, frame->dirty_all)) {
      page_table_.insert_or_assign(page_id, slot);
      return;
    }
  }
  // Transition 5: denied (or NVM held only pages now in DRAM): to SSD, only if dirty.
  if (nvm_ != nullptr) {
    ++counters_.nvm_admissions_denied;
    admission_set_.insert(page_id);
  }
  if (frame->dirty_all) write_to_ssd(page_id, frame->data);
  page_table_.erase(page_id);
}

}  // namespace tristore
