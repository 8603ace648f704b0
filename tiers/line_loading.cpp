// BufferManager (tiers/buffer_manager.hpp): loading pages and cache lines into DRAM from NVM
// and SSD, mini pages, and their promotion to full frames.
#include "tiers/buffer_manager.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "tiers/poison.hpp"

namespace tristore {

FrameHeader* BufferManager::load_from_nvm(PageId page_id, std::byte* slot) {
  // 1. The slot's content, checked against its checksum once per open (the lines loaded later
  //    come from NVM one by one, too late to check the page whole).
  const SlotId slot_id = nvm_->slot_of(slot);
  if (!nvm_->content_checked(slot_id)) nvm_->check_content(slot_id);
  // 2. A frame; the slot must not be chosen as an NVM victim while DRAM makes room.
  loading_slot_ = slot_id;
  FrameHeader* frame;
  try {
    frame = mini_pages_ ? &allocate_mini()->header : &allocate_full()->header;
  } catch (...) {
    loading_slot_ = ~SlotId{0};
    throw;
  }
  loading_slot_ = ~SlotId{0};
  nvm_referenced_[slot_id] = 1;
  frame->page_id = page_id;
  frame->nvm = slot;
  // 3. Cache-line-grained: nothing loaded yet. Page-grained: the whole page now.
  if (mini_pages_) {
    ++counters_.mini_pages_created;
  } else if (!cache_line_grained_) {
    FullFrame* full = as_full(frame);
    unpoison_bytes(full->data, kPageSize);
    nvm_device_->read(full->data, slot, kPageSize);
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
  const std::size_t slot = mini->find(first);
  const std::size_t last_slot = slot + (last - first);  // lines are sorted and unique
  if (last_slot < mini->header.mini_count && mini->slots[last_slot] == last &&
      mini->full == nullptr)
    return mini->data + slot * kCacheLineSize + offset % kCacheLineSize;
  return make_resident_mini(mini, offset, length);
}

std::byte* BufferManager::make_resident_mini(MiniPage* mini, std::uint32_t offset,
                                             std::uint32_t length) {
  if (mini->full != nullptr) return make_resident(&mini->full->header, offset, length);
  const std::size_t first = offset / kCacheLineSize;
  const std::size_t last = (offset + length - 1) / kCacheLineSize;
  // 1. Too many lines for the 16 slots: promote, then serve from the full frame.
  const std::size_t count = mini->header.mini_count;
  std::array<std::uint8_t, MiniPage::kSlots + 1> missing;
  std::size_t missing_count = 0;
  for (std::size_t line = first; line <= last && count + missing_count <= MiniPage::kSlots; ++line)
    if (mini->find(line) == MiniPage::kSlots)
      missing[missing_count++] = static_cast<std::uint8_t>(line);
  if (count + missing_count > MiniPage::kSlots)
    return make_resident(&promote(mini)->header, offset, length);
  // 2. Readers beside this one may be reading the mini page: a larger copy replaces it, so
  //    that no line they see moves. Alone, the lines are added in place.
  MiniPage* target = sharing_ ? replace_mini(mini) : mini;
  // 3. Merge the missing lines into the sorted slots from the back, so that every resident
  //    line moves up before its place is overwritten; then load the new lines.
  const std::size_t new_count = count + missing_count;
  if (target == mini)
    unpoison_bytes(mini->data + count * kCacheLineSize, missing_count * kCacheLineSize);
  else
    unpoison_bytes(target->data, new_count * kCacheLineSize);
  std::uint16_t dirty = 0;
  std::ptrdiff_t old_slot = static_cast<std::ptrdiff_t>(count) - 1;
  std::ptrdiff_t next_missing = static_cast<std::ptrdiff_t>(missing_count) - 1;
  for (std::size_t slot = new_count; slot-- > 0;) {
    const bool take_old =
        next_missing < 0 || (old_slot >= 0 && mini->slots[old_slot] > missing[next_missing]);
    if (take_old) {
      if (target != mini || static_cast<std::size_t>(old_slot) != slot) {
        std::memcpy(target->data + slot * kCacheLineSize, mini->data + old_slot * kCacheLineSize,
                    kCacheLineSize);
        target->slots[slot] = mini->slots[old_slot];
      }
      if (mini->header.mini_dirty & (1u << old_slot))
        dirty = static_cast<std::uint16_t>(dirty | (1u << slot));
      --old_slot;
    } else {
      target->slots[slot] = missing[next_missing--];
      nvm_device_->read(target->data + slot * kCacheLineSize,
                        target->header.nvm + std::size_t{target->slots[slot]} * kCacheLineSize,
                        kCacheLineSize);
    }
  }
  target->header.mini_count = static_cast<std::uint8_t>(new_count);
  target->header.mini_dirty = dirty;
  // 4. The copy becomes the page's frame: the page table and the owning swip lead to it.
  if (target != mini) {
    page_table_.insert_or_assign(mini->header.page_id, &target->header);
    if (target->header.has(frame_flag::kSwizzled))
      Swip::store(*owning_swip(&target->header), Swip::from_frame(&target->header));
  }
  const std::size_t slot = target->find(first);
  return target->data + slot * kCacheLineSize + offset % kCacheLineSize;
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
  from.set(frame_flag::kReplaced);
  from.bump_version();
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
  for (std::size_t slot = 0; slot < from.mini_count; ++slot) {
    const std::size_t line = mini->slots[slot];
    unpoison_bytes(full->data + line * kCacheLineSize, kCacheLineSize);
    std::memcpy(full->data + line * kCacheLineSize, mini->data + slot * kCacheLineSize,
                kCacheLineSize);
    full->resident.set(line);
    if (from.mini_dirty & (1u << slot)) full->dirty.set(line);
  }
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
  from.bump_version();
  ++counters_.mini_page_promotions;
  return full;
}

void BufferManager::release_promoted(MiniPage* mini) {
  if (mini->full != nullptr) --mini->full->header.fix_count;  // not when replaced by a copy
  if (mini->header.fix_count == 0) release_frame(&mini->header);
}

}  // namespace tristore
