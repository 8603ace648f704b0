// BufferManager (tiers/buffer_manager.hpp): loading pages and cache lines into DRAM from NVM
// and SSD, mini pages, and their promotion to full frames.
#include "tiers/buffer_manager.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "tiers/poison.hpp"

namespace tristore {

FrameHeader* BufferManager::frame_for_nvm_slot(PageId page_id, std::byte* slot, bool mini) {
  // 1. Cache-line-grained: the slot's content, checked against its checksum once per open (the
  //    lines loaded later come from NVM one by one, too late to check the page whole). A
  //    page-grained tier checks its copy instead (copy_nvm_page).
  const SlotId slot_id = nvm_->slot_of(slot);
  if (cache_line_grained_ && !nvm_->content_checked(slot_id)) nvm_->check_content(slot_id);
  // 2. A frame; the slot must not be chosen as an NVM victim while DRAM makes room.
  loading_slot_ = slot_id;
  FrameHeader* frame;
  try {
    frame = mini ? &allocate_mini()->header : &allocate_full()->header;
  } catch (...) {
    loading_slot_ = ~SlotId{0};
    throw;
  }
  loading_slot_ = ~SlotId{0};
  nvm_referenced_[slot_id] = 1;
  frame->page_id = page_id;
  frame->nvm = slot;
  return frame;
}

FrameHeader* BufferManager::load_from_nvm(PageId page_id, std::byte* slot) {
  FrameHeader* frame = frame_for_nvm_slot(page_id, slot, mini_pages_);
  // Cache-line-grained: nothing loaded yet. Page-grained: the whole page now.
  if (mini_pages_) {
    ++counters_.mini_pages_created;
  } else if (!cache_line_grained_) {
    FullFrame* full = as_full(frame);
    unpoison_bytes(full->data, kPageSize);
    try {
      copy_nvm_page(full);
    } catch (...) {
      release_frame(frame);
      throw;
    }
    full->mark_all_resident();
  }
  page_table_.insert_or_assign(page_id, frame);
  return frame;
}

FrameHeader* BufferManager::load_from_ssd(PageId page_id) {
  FullFrame* frame = allocate_full();
  unpoison_bytes(frame->data, kPageSize);
  try {
    ssd_->read(page_id, frame->data);
  } catch (...) {
    pool_.release(&frame->header);
    throw;
  }
  frame->header.page_id = page_id;
  frame->mark_all_resident();
  page_table_.insert_or_assign(page_id, &frame->header);
  return &frame->header;
}

std::byte* BufferManager::load_full_lines(FullFrame* frame, std::size_t first, std::size_t last) {
  assert(frame->header.nvm != nullptr && "a page that is not NVM-backed is always resident");
  // Missing runs in [first, last], each read from NVM in one call (counted and charged there).
  std::size_t line = frame->resident.next_clear(first);
  while (line <= last) {
    const std::size_t end = std::min(frame->resident.next_set(line), last + 1);
    std::byte* target = frame->data + line * kCacheLineSize;
    const std::size_t bytes = (end - line) * kCacheLineSize;
    unpoison_bytes(target, bytes);
    nvm_device_->read(target, frame->header.nvm + line * kCacheLineSize, bytes);
    frame->resident.set(line, end - 1);
    line = end < kLinesPerPage ? frame->resident.next_clear(end) : kLinesPerPage;
  }
  if (frame->resident.full()) frame->mark_all_resident();
  return frame->data;
}

std::byte* BufferManager::make_resident_cold(FrameHeader* frame, std::uint32_t offset,
                                             std::uint32_t length) {
  const std::size_t first = offset / kCacheLineSize;
  const std::size_t last = (offset + length - 1) / kCacheLineSize;
  if (!frame->is_mini()) return load_full_lines(as_full(frame), first, last) + offset;
  MiniPage* mini = as_mini(frame);
  const std::size_t slot = mini->find_run(first, last);
  if (slot != MiniPage::kSlots && mini->full == nullptr)
    return mini->data + slot * kCacheLineSize + offset % kCacheLineSize;
  return make_resident_mini(mini, offset, length);
}

std::byte* BufferManager::make_resident_mini(MiniPage* mini, std::uint32_t offset,
                                             std::uint32_t length) {
  if (mini->full != nullptr) return make_resident(&mini->full->header, offset, length);
  const std::size_t first = offset / kCacheLineSize;
  const std::size_t last = (offset + length - 1) / kCacheLineSize;
  // 1. Too many lines for the 16 slots: promote, then serve from the full frame.
  const std::size_t count = mini->count();
  std::size_t missing = 0;
  for (std::size_t line = first; line <= last && count + missing <= MiniPage::kSlots; ++line)
    missing += mini->find(line) == MiniPage::kSlots;
  if (count + missing > MiniPage::kSlots) {
    FullFrame* full = promote(mini);
    if (!sharing_) return make_resident(&full->header, offset, length);
    // Published: readers beside may append to it already.
    full->header.latch_appends();
    std::byte* bytes = make_resident(&full->header, offset, length);  // no allocation: no throw
    full->header.unlatch_appends();
    return bytes;
  }
  // 2. None of the read's lines here: they are appended in order, after the lines readers may
  //    be reading, which stay where they are. Bytes and slots first, then the count.
  if (missing == last - first + 1) {
    std::byte* bytes = mini->data + count * kCacheLineSize;
    unpoison_bytes(bytes, missing * kCacheLineSize);
    nvm_device_->read(bytes, mini->header.nvm + first * kCacheLineSize, missing * kCacheLineSize);
    for (std::size_t line = first; line <= last; ++line)
      mini->set_line_at(count + (line - first), line);
    mini->set_count(count + missing);
    return bytes + offset % kCacheLineSize;
  }
  // 3. Some here, not all in a run: the lines are put in order, in a copy that replaces the
  //    mini page while readers or changes may be beside (no line they see moves), else in
  //    place.
  MiniPage* target = sharing_ || changing_ ? replace_mini(mini) : mini;
  sort_lines_with(mini, target, first, last);
  // 4. The copy becomes the page's frame: the page table and the owning swip lead to it.
  if (target != mini) {
    page_table_.insert_or_assign(mini->header.page_id, &target->header);
    if (target->header.has(frame_flag::kSwizzled))
      Swip::store(*owning_swip(&target->header), Swip::from_frame(&target->header));
  }
  const std::size_t slot = target->find_run(first, last);
  assert(slot != MiniPage::kSlots);
  return target->data + slot * kCacheLineSize + offset % kCacheLineSize;
}

void BufferManager::sort_lines_with(MiniPage* from, MiniPage* to, std::size_t first,
                                    std::size_t last) {
  // 1. Every line the mini page has, with [first, last], in ascending order (16 at most).
  struct Line {
    std::uint8_t line;
    std::uint8_t slot;  // in `from`, or kSlots: to be loaded
  };
  std::array<Line, MiniPage::kSlots> lines;
  std::size_t count = 0;
  for (std::size_t slot = 0; slot < from->count(); ++slot)
    lines[count++] = {static_cast<std::uint8_t>(from->line_at(slot)),
                      static_cast<std::uint8_t>(slot)};
  for (std::size_t line = first; line <= last; ++line)
    if (from->find(line) == MiniPage::kSlots)
      lines[count++] = {static_cast<std::uint8_t>(line), MiniPage::kSlots};
  std::sort(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(count),
            [](const Line& a, const Line& b) { return a.line < b.line; });
  // 2. In place, the resident lines are copied out first.
  alignas(64) std::array<std::byte, MiniPage::kSlots * kCacheLineSize> saved;
  const std::byte* source = from->data;
  if (to == from) {
    std::memcpy(saved.data(), from->data, from->count() * kCacheLineSize);
    source = saved.data();
  }
  unpoison_bytes(to->data, count * kCacheLineSize);
  // 3. Each line into its slot, with its dirty bit; the missing ones from NVM.
  std::uint16_t dirty = 0;
  for (std::size_t slot = 0; slot < count; ++slot) {
    std::byte* bytes = to->data + slot * kCacheLineSize;
    if (lines[slot].slot == MiniPage::kSlots) {
      nvm_device_->read(bytes, to->header.nvm + std::size_t{lines[slot].line} * kCacheLineSize,
                        kCacheLineSize);
    } else {
      std::memcpy(bytes, source + std::size_t{lines[slot].slot} * kCacheLineSize, kCacheLineSize);
      if (from->header.mini_dirty & (1u << lines[slot].slot))
        dirty = static_cast<std::uint16_t>(dirty | (1u << slot));
    }
    to->set_line_at(slot, lines[slot].line);
  }
  to->header.mini_dirty = dirty;
  to->set_count(count);
}

MiniPage* BufferManager::replace_mini(MiniPage* mini) {
  assert(mini->header.fix_count > 0 && "the mini page must stay while its copy is made");
  // 1. An empty mini page (eviction cannot pick the old one: it is fixed).
  MiniPage* copy = allocate_mini();
  // 2. It takes over the page: its id, its NVM slot, its owning swip (stored by the caller,
  //    once the lines are in) and its clock bit. The old one leaves when its fixes do.
  FrameHeader& from = mini->header;
  FrameHeader& to = copy->header;
  to.page_id = from.page_id;
  to.nvm = from.nvm;
  constexpr std::uint8_t kOwnership = frame_flag::kSwizzled | frame_flag::kOwnerIsRoot;
  if (from.has(frame_flag::kSwizzled)) {
    to.owner = from.owner;
    to.swip_offset = from.swip_offset;
    to.set(static_cast<std::uint8_t>(from.flags.load(std::memory_order_relaxed) & kOwnership));
    from.clear(kOwnership);
  }
  to.set(frame_flag::kReferenced);
  if (changing_) latch_made_beside_changes(to);
  from.set(frame_flag::kReplaced);
  from.bump_version_keeping_latch();
  ++counters_.mini_page_copies;
  return copy;
}

FullFrame* BufferManager::promote(MiniPage* mini) {
  assert(mini->full == nullptr && mini->header.fix_count > 0);
  // 1. An empty full frame (eviction cannot pick the mini page: it is fixed).
  FullFrame* full = allocate_full();
  FrameHeader& from = mini->header;
  full->header.page_id = from.page_id;
  full->header.nvm = from.nvm;
  // 2. Copy the resident lines with their dirty bits.
  for (std::size_t slot = 0; slot < mini->count(); ++slot) {
    const std::size_t line = mini->line_at(slot);
    unpoison_bytes(full->data + line * kCacheLineSize, kCacheLineSize);
    std::memcpy(full->data + line * kCacheLineSize, mini->data + slot * kCacheLineSize,
                kCacheLineSize);
    full->resident.set(line);
    if (from.mini_dirty & (1u << slot)) full->dirty.set(line);
  }
  // A mini page keeps no round: its dirty lines count as older than any.
  full->dirty_round = 0;
  if (changing_) latch_made_beside_changes(full->header);
  // 3. The page table and the owning swip now lead to the full frame.
  page_table_.insert_or_assign(from.page_id, &full->header);
  if (from.has(frame_flag::kSwizzled)) {
    full->header.owner = from.owner;
    full->header.swip_offset = from.swip_offset;
    full->header.set(static_cast<std::uint8_t>(from.flags.load(std::memory_order_relaxed) &
                                               (frame_flag::kSwizzled | frame_flag::kOwnerIsRoot)));
    Swip::store(*owning_swip(&full->header), Swip::from_frame(&full->header));
    from.clear(frame_flag::kSwizzled | frame_flag::kOwnerIsRoot);
  }
  // 4. The mini page forwards until its last guard leaves; its fixes pin the full frame.
  full->header.fix_count = from.fix_count;
  full->header.set(frame_flag::kReferenced);
  std::atomic_ref<FullFrame*>(mini->full).store(full, std::memory_order_release);
  from.set(frame_flag::kPromoted);
  from.bump_version_keeping_latch();
  ++counters_.mini_page_promotions;
  return full;
}

void BufferManager::release_promoted(MiniPage* mini) {
  if (mini->full != nullptr) --mini->full->header.fix_count;  // not when replaced by a copy
  if (mini->header.fix_count == 0) release_frame(&mini->header);
}

}  // namespace tristore
