// BufferManager (tiers/buffer_manager.hpp): writing dirty pages and lines back to NVM and
// SSD (staged in the double-write area first), for eviction, checkpoints and close.
#include "tiers/buffer_manager.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "nvm/nvm_page_checksum.hpp"

namespace tristore {

namespace {

// Every frame in use, promoted mini pages included (their full frames come on their own);
// not frames retired and waiting for readers to leave.
template <typename Visit>
void for_each_frame(FramePool& pool, Visit&& visit) {
  auto visit_held = [&](FrameHeader* frame) {
    if (!frame->has(frame_flag::kRetired)) visit(frame);
  };
  for (std::size_t slab = 0; slab < pool.slab_count(); ++slab) {
    if (pool.kind(slab) == FramePool::SlabKind::kFull) {
      visit_held(&pool.full_frame(slab)->header);
    } else if (pool.kind(slab) == FramePool::SlabKind::kMini) {
      for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i)
        if (pool.minis_in_use(slab) & (1u << i)) visit_held(&pool.mini_page(slab, i)->header);
    }
  }
}

}  // namespace

Lsn BufferManager::write_back_lsn(FrameHeader* frame) const {
  constexpr Lsn kUnknown = ~Lsn{0};
  if (frame->is_mini()) {
    const MiniPage* mini = as_mini(frame);
    const std::size_t slot = mini->find(0);
    if (slot == MiniPage::kSlots) return kUnknown;
    return page_lsn(mini->data + slot * kCacheLineSize);
  }
  const FullFrame* full = as_full(frame);
  return full->is_resident(0, 0) ? page_lsn(full->data) : kUnknown;
}

void BufferManager::write_back_to_nvm(FrameHeader* frame) {
  assert(frame->is_mini() || as_full(frame)->swizzled_children == 0);
  persist_dirty_lines(frame, {}, nullptr);
  // The page table now leads to the slot.
  const SlotId slot_id = nvm_->slot_of(frame->nvm);
  nvm_referenced_[slot_id] = 1;
  page_table_.insert_or_assign(frame->page_id, frame->nvm);
}

bool BufferManager::persist_dirty_lines(FrameHeader* frame, std::span<const SwizzledSwip> swips,
                                        std::byte* scratch) {
  const std::lock_guard writing(write_back_latch_);
  std::byte* slot = frame->nvm;
  // 1. The dirty lines (the whole page when it is dirty as a whole), swips as page ids.
  std::uint32_t count = 0;
  auto add_lines = [&](const std::byte* from, std::size_t first_line, std::size_t lines) {
    for (std::size_t i = 0; i < lines; ++i, ++count) {
      write_back_indices_[count] = static_cast<std::uint8_t>(first_line + i);
      write_back_lines_[count] = from + i * kCacheLineSize;
    }
  };
  if (frame->is_mini()) {
    // In line order (the slots are in load order): line 0, which carries the LSN, first.
    const MiniPage* mini = as_mini(frame);
    std::array<std::uint8_t, MiniPage::kSlots> dirty_slots;
    std::size_t dirty = 0;
    for (std::size_t i = 0; i < mini->count(); ++i)
      if (frame->mini_dirty & (1u << i)) dirty_slots[dirty++] = static_cast<std::uint8_t>(i);
    std::sort(dirty_slots.begin(), dirty_slots.begin() + static_cast<std::ptrdiff_t>(dirty),
              [&](std::uint8_t a, std::uint8_t b) { return mini->line_at(a) < mini->line_at(b); });
    for (std::size_t i = 0; i < dirty; ++i)
      add_lines(mini->data + dirty_slots[i] * kCacheLineSize, mini->line_at(dirty_slots[i]), 1);
  } else {
    const FullFrame* full = as_full(frame);
    if (full->dirty_all) {
      assert(full->resident_all);
      add_lines(unswizzled_lines(full, 0, kLinesPerPage, swips, scratch), 0, kLinesPerPage);
    } else {
      full->dirty.for_each_run([&](std::size_t line, std::size_t lines) {
        add_lines(unswizzled_lines(full, line, lines, swips, scratch), line, lines);
      });
    }
  }
  const bool wrote = count > 0;
  // 2. Staged first (a torn write in place is mended from there), at the LSN they carry.
  if (wrote && options_.double_write != nullptr) {
    Lsn lsn;
    if (write_back_indices_[0] == 0)
      std::memcpy(&lsn, write_back_lines_[0] + offsetof(PageHeader, lsn), sizeof(lsn));
    else
      lsn = page_lsn(slot);
    options_.double_write->stage_nvm_lines(nvm_->slot_of(slot), frame->page_id, lsn,
                                           {write_back_indices_.data(), count},
                                           {write_back_lines_.data(), count});
  }
  // 3. The page's checksum after the write: from DRAM when it holds the whole page, else
  //    updated from the old content of the lines written (read from NVM now), if the slot
  //    had one; else none (seal_pages gives one at the next checkpoint).
  std::optional<std::uint32_t> new_checksum;
  if (wrote) {
    const NvmSlotHeader& header = nvm_->header(nvm_->slot_of(slot));
    if (!frame->is_mini() && as_full(frame)->resident_all) {
      new_checksum =
          nvm_page_checksum(unswizzled_lines(as_full(frame), 0, kLinesPerPage, swips, scratch));
    } else if (header.has_page_checksum()) {
      std::uint32_t checksum = header.page_checksum;
      std::byte old_line[kCacheLineSize];
      for (std::uint32_t i = 0; i < count; ++i) {
        const std::size_t line = write_back_indices_[i];
        nvm_device_->read(old_line, slot + line * kCacheLineSize, kCacheLineSize);
        checksum = nvm_page_checksum_update(checksum, line, old_line, write_back_lines_[i]);
      }
      new_checksum = checksum;
    }
  }
  // 4. In place, runs of adjacent lines at once.
  for (std::uint32_t i = 0; i < count;) {
    std::uint32_t run = 1;
    while (i + run < count && write_back_indices_[i + run] == write_back_indices_[i] + run &&
           write_back_lines_[i + run] == write_back_lines_[i] + run * kCacheLineSize)
      ++run;
    std::byte* to = slot + std::size_t{write_back_indices_[i]} * kCacheLineSize;
    nvm_device_->write(to, write_back_lines_[i], run * kCacheLineSize);
    nvm_device_->flush(to, run * kCacheLineSize);
    i += run;
  }
  // 5. Make them durable; the slot header records the LSN, that SSD is now behind, and the
  //    checksum. A crash before the header leaves the old checksum over new lines, but also
  //    the staged copy, from which restart mends the page and its header.
  if (wrote) {
    nvm_device_->fence();
    const SlotId slot_id = nvm_->slot_of(slot);
    const NvmSlotHeader& header = nvm_->header(slot_id);
    const Lsn lsn = page_lsn(slot);
    const bool behind_ssd = ssd_ != nullptr;
    std::optional<std::uint32_t> checksum = new_checksum;
    // basic-nvm: a page never leaves its slot, so its header keeps the LSN of its allocation.
    const bool lsn_matters = ssd_ != nullptr;
    const bool checksum_changed = header.has_page_checksum() != checksum.has_value() ||
                                  (checksum && header.page_checksum != *checksum);
    if ((lsn_matters && header.lsn != lsn) || header.dirty_vs_ssd() != behind_ssd ||
        checksum_changed)
      nvm_->write_header(slot_id, frame->page_id, lsn_matters ? lsn : header.lsn, behind_ssd,
                         checksum);
    // 6. Lines and header durable: the staged copy may go.
    if (options_.double_write != nullptr) options_.double_write->nvm_lines_written();
  }
  return wrote;
}

const std::byte* BufferManager::unswizzled_lines(const FullFrame* frame, std::size_t first_line,
                                                 std::size_t lines,
                                                 std::span<const SwizzledSwip> swips,
                                                 std::byte* scratch) {
  const std::size_t begin = first_line * kCacheLineSize;
  const std::size_t end = begin + lines * kCacheLineSize;
  auto inside = [&](const SwizzledSwip& swip) {
    return swip.offset < end && swip.offset + sizeof(Swip) > begin;
  };
  if (std::none_of(swips.begin(), swips.end(), inside)) return frame->data + begin;
  // A swip may straddle the run's edge: only its bytes inside the run are copied.
  std::memcpy(scratch + begin, frame->data + begin, end - begin);
  for (const SwizzledSwip& swip : swips) {
    if (!inside(swip)) continue;
    std::array<std::byte, sizeof(Swip)> bytes;
    const Swip id = Swip::from_page_id(swip.child);
    std::memcpy(bytes.data(), &id, sizeof(id));
    for (std::size_t i = 0; i < sizeof(Swip); ++i)
      if (swip.offset + i >= begin && swip.offset + i < end) scratch[swip.offset + i] = bytes[i];
  }
  return scratch + begin;
}

void BufferManager::write_to_ssd(PageId page_id, const std::byte* page) {
  const std::lock_guard writing(write_back_latch_);
  if (options_.double_write != nullptr)
    options_.double_write->stage_ssd_page(page_id, page_lsn(page), page);
  ssd_->write_behind(page_id, page);
}

void BufferManager::sync_ssd() {
  const std::lock_guard writing(write_back_latch_);
  sync_ssd_latched();
}

void BufferManager::sync_ssd_latched() {
  ssd_->sync();
  if (options_.double_write != nullptr) options_.double_write->ssd_synced();
}

void BufferManager::flush_all() {
  // 0. Frames retired by readers' misses go back first (no reader is beside this call).
  reclaim_retired();
  assert(retired_.empty());
  // 1. Evict in passes: each pass frees the frames without swizzled children, which unswizzles
  //    their parents for the next pass.
  bool progress = true;
  while (pool_.frames_in_use() > 0 && progress) {
    progress = false;
    for_each_frame(pool_, [&](FrameHeader* frame) {
      if (frame->fix_count != 0) fail("flush_all: page {} is still fixed", frame->page_id);
      if (!evictable(frame)) return;
      evict(frame);
      progress = true;
    });
  }
  assert(pool_.frames_in_use() == 0);
  // 2. Make SSD writes and allocations durable; checksums for the pages written line by line.
  if (ssd_ != nullptr) sync_ssd();
  if (nvm_ != nullptr) nvm_->seal_pages();
}

std::vector<BufferManager::SwizzledSwip> BufferManager::swizzled_swips_by_parent() {
  std::vector<SwizzledSwip> swips;
  for_each_frame(pool_, [&](FrameHeader* frame) {
    if (frame->has(frame_flag::kSwizzled) && !frame->has(frame_flag::kOwnerIsRoot))
      swips.push_back({frame->owner.parent, frame->swip_offset, frame->page_id});
  });
  std::sort(swips.begin(), swips.end(), [](const SwizzledSwip& a, const SwizzledSwip& b) {
    return std::less<>{}(a.parent, b.parent);
  });
  return swips;
}

void BufferManager::write_back_all(bool earlier_rounds_only,
                                   const std::function<void()>& before_sync) {
  // 1. The swizzled swips of each parent frame, from their children's headers: no page may
  //    reach NVM or SSD with a DRAM pointer in it.
  const std::vector<SwizzledSwip> swips = swizzled_swips_by_parent();
  auto swips_of = [&](FullFrame* full) -> std::span<const SwizzledSwip> {
    const auto first = std::lower_bound(
        swips.begin(), swips.end(), full,
        [](const SwizzledSwip& swip, const FullFrame* p) { return std::less<>{}(swip.parent, p); });
    auto last = first;
    while (last != swips.end() && last->parent == full) ++last;
    assert(static_cast<std::size_t>(last - first) == full->swizzled_children);
    return {first, last};
  };
  std::vector<std::byte> scratch(kPageSize);
  // 2. Each dirty page to its home (write_back_dirty); with earlier_rounds_only, not the full
  //    frames first dirtied in this round (their changes are logged after the checkpoint began).
  const std::uint32_t round = write_back_round_.load(std::memory_order_relaxed);
  for_each_frame(pool_, [&](FrameHeader* frame) {
    if (frame->has(frame_flag::kPromoted)) return;
    if (earlier_rounds_only && !frame->is_mini() && as_full(frame)->dirty_round >= round) return;
    write_back_dirty(frame,
                     frame->is_mini() ? std::span<const SwizzledSwip>{} : swips_of(as_full(frame)),
                     scratch.data());
  });
  // 3. The caller's step, then one SSD sync for the page writes (also making allocations,
  //    frees and the metadata durable), with no other sync between them (the caller's step
  //    writes metadata that this sync must make durable at once with the bitmaps), then
  //    checksums for the NVM pages written line by line since the last checkpoint.
  {
    const std::lock_guard writing(write_back_latch_);
    if (before_sync) before_sync();
    if (ssd_ != nullptr) sync_ssd_latched();
  }
  if (nvm_ != nullptr) nvm_->seal_pages();
}

void BufferManager::begin_write_back_round() {
  // Release: a changer that sees the new round dirties its frame after the record the caller
  // appended before this call (BufferManager::mark_dirty).
  write_back_round_.fetch_add(1, std::memory_order_release);
  write_back_cursor_ = 0;
}

bool BufferManager::write_back_beside(std::size_t max_pages) {
  // Changes mode: frames are taken and let go (a change's miss, tiers/changer_misses.cpp:
  // evicted, moved, an SSD read failed) under the miss latch, and come back to the pool only
  // once this checkpoint, a change inside, has left; changers change full frames and mini
  // pages, each under its frame latch. The pool's slabs, a frame's state and its swips are
  // read under the miss latch too, as misses change them.
  const std::uint32_t round = write_back_round_.load(std::memory_order_relaxed);
  std::size_t written = 0;
  // A full frame first dirtied before this round (one with swizzled children waits for the
  // checkpoint's exclusive end), or a mini page (it has no round) whenever it is dirty.
  using SlabKind = FramePool::SlabKind;
  constexpr std::size_t kFull = FramePool::kMinisPerSlab;  // in place of a mini page's index
  auto frame_at = [&](std::size_t slab, std::size_t mini) {
    return mini == kFull ? &pool_.full_frame(slab)->header : &pool_.mini_page(slab, mini)->header;
  };
  // In use and staying so while the changes run: not let go (a frame retired earlier goes back
  // to the pool when a miss reclaims it) and not being read from SSD (a failed read lets its
  // frame go). Asked when a slab's frames are listed and again before each is written.
  auto stays_in_use = [&](std::size_t slab, std::size_t mini) {
    const bool in_use = mini == kFull ? pool_.kind(slab) == SlabKind::kFull
                                      : pool_.kind(slab) == SlabKind::kMini &&
                                            (pool_.minis_in_use(slab) & (1u << mini));
    return in_use && !frame_at(slab, mini)->has(frame_flag::kLetGo | frame_flag::kLoading);
  };
  auto to_write = [&](std::size_t slab, std::size_t mini) {
    if (!stays_in_use(slab, mini)) return false;
    if (mini != kFull) return true;
    const FullFrame* full = pool_.full_frame(slab);
    return full->swizzled_children == 0 && full->dirty_round < round;
  };
  // Under its frame latch (a changer may hold it), then the miss latch, checked again there: a
  // miss never waits for a frame latch while it holds the miss latch, so the two cannot
  // deadlock. Where it can (writes_back_beside_misses), the frame is written once the miss
  // latch is let go again: held latched, it stays in use and as it is (no eviction, load or
  // promotion takes a latched frame, and no miss swizzles a swip into it), and a frame without
  // swizzled children needs no swip read.
  auto write_back_latched = [&](std::size_t slab, std::size_t mini) {
    FrameHeader* frame = frame_at(slab, mini);
    frame->latch_exclusive();
    try {
      bool beside_misses = false;
      {
        const std::lock_guard serving(miss_latch_);
        if (to_write(slab, mini)) {
          if (writes_back_beside_misses(frame))
            beside_misses = true;
          else
            written += write_back_dirty(frame, {}, nullptr) ? 1 : 0;
        }
      }
      if (beside_misses) written += write_back_dirty(frame, {}, nullptr) ? 1 : 0;
    } catch (...) {
      frame->unlatch_exclusive();
      throw;
    }
    frame->unlatch_exclusive();
  };
  const std::size_t last_slab = std::min(pool_.slab_count(), write_back_cursor_ + kSlabsPerBatch);
  std::array<std::size_t, FramePool::kMinisPerSlab> in_use;
  for (; write_back_cursor_ < last_slab && written < max_pages; ++write_back_cursor_) {
    const std::size_t slab = write_back_cursor_;
    std::size_t count = 0;
    {
      const std::lock_guard serving(miss_latch_);
      for (std::size_t mini = 0; mini <= kFull; ++mini)
        if (stays_in_use(slab, mini)) in_use[count++] = mini;
    }
    for (std::size_t i = 0; i < count; ++i) write_back_latched(slab, in_use[i]);
  }
  return write_back_cursor_ >= pool_.slab_count();
}

bool BufferManager::write_back_dirty(FrameHeader* frame, std::span<const SwizzledSwip> swips,
                                     std::byte* scratch) {
  // The log first (write-ahead rule): an NVM-backed page its dirty lines to its slot, any
  // other page the whole page to SSD. Then it is clean.
  if (frame->is_mini()) {
    if (frame->mini_dirty == 0) return false;
    if (options_.before_write_back) options_.before_write_back(write_back_lsn(frame));
    persist_dirty_lines(frame, {}, nullptr);
    frame->mini_dirty = 0;
    return true;
  }
  FullFrame* full = as_full(frame);
  if (!full->dirty_all && full->dirty.none()) return false;
  if (options_.before_write_back) options_.before_write_back(write_back_lsn(frame));
  if (frame->nvm != nullptr) {
    persist_dirty_lines(frame, swips, scratch);
  } else {
    // A page that never was in NVM goes to a free NVM slot while the free-slot policy
    // admits there (it stays in DRAM, now backed by its slot: later checkpoints write its
    // dirty lines only; no NVM page is evicted for it), else whole to SSD.
    assert(full->resident_all && full->dirty_all && ssd_ != nullptr);
    const std::byte* page = unswizzled_lines(full, 0, kLinesPerPage, swips, scratch);
    std::byte* slot = nullptr;
    if (nvm_ != nullptr && options_.admit_while_nvm_has_free_slots &&
        nvm_->slots_in_use() + nvm_reserved_slots_ < nvm_->slot_count())
      slot = admit_to_nvm(frame->page_id, page, true);
    if (slot != nullptr)
      frame->nvm = slot;
    else
      write_to_ssd(frame->page_id, page);
  }
  full->dirty_all = false;
  full->dirty.clear_all();
  return true;
}

}  // namespace tristore
