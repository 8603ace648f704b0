#include "tiers/buffer_manager.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "nvm/nvm_page_checksum.hpp"
#include "tiers/poison.hpp"

namespace tristore {
namespace {

BufferManagerOptions normalised(BufferManagerOptions options) {
  if (options.nvm == nullptr && options.ssd == nullptr)
    fail("buffer manager needs an NVM tier, an SSD page file, or both");
  if (options.nvm == nullptr || options.ssd == nullptr) {
    // basic-nvm and ssd-bm are page-grained with a page table only (docs/design.md section 5).
    options.cache_line_grained = false;
    options.mini_pages = false;
    options.swizzling = false;
  }
  if (!options.cache_line_grained) options.mini_pages = false;
  return options;
}

std::size_t nvm_eviction_batch(const BufferManagerOptions& options) {
  if (options.nvm == nullptr) return 0;
  if (options.nvm_eviction_batch != 0) return options.nvm_eviction_batch;
  return std::max<std::size_t>(1, std::min<std::size_t>(32, options.nvm->slot_count() / 8));
}

std::size_t admission_capacity(const BufferManagerOptions& options) {
  if (options.nvm == nullptr || options.ssd == nullptr) return 0;
  return options.admission_set_size != 0 ? options.admission_set_size : options.nvm->slot_count();
}

Lsn page_lsn(const std::byte* page) {
  Lsn lsn;
  std::memcpy(&lsn, page + offsetof(PageHeader, lsn), sizeof(lsn));
  return lsn;
}

// Every frame in use, promoted mini pages included (their full frames come on their own).
template <typename Visit>
void for_each_frame(FramePool& pool, Visit&& visit) {
  for (std::size_t slab = 0; slab < pool.slab_count(); ++slab) {
    if (pool.kind(slab) == FramePool::SlabKind::kFull) {
      visit(&pool.full_frame(slab)->header);
    } else if (pool.kind(slab) == FramePool::SlabKind::kMini) {
      for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i)
        if (pool.minis_in_use(slab) & (1u << i)) visit(&pool.mini_page(slab, i)->header);
    }
  }
}

}  // namespace

BufferManager::BufferManager(const BufferManagerOptions& options)
    : options_(normalised(options)),
      nvm_(options_.nvm),
      ssd_(options_.ssd),
      nvm_device_(nvm_ != nullptr ? &nvm_->device() : nullptr),
      cache_line_grained_(options_.cache_line_grained),
      mini_pages_(options_.mini_pages),
      swizzling_(options_.swizzling),
      pool_(options_.dram_bytes),
      page_table_(nvm_ != nullptr ? nvm_->slots_in_use() : 0),
      admission_set_(admission_capacity(options_)),
      nvm_eviction_batch_(nvm_eviction_batch(options_)) {
  if (nvm_ == nullptr) return;
  nvm_victims_.reserve(nvm_eviction_batch_);
  // Restart: every occupied slot header names a page that lives in NVM (NvmTier::open has
  // already picked each header's intact version).
  nvm_referenced_.assign(nvm_->slot_count(), 0);
  std::vector<SlotId> stale;
  for (SlotId slot = 0; slot < nvm_->slot_count(); ++slot) {
    const NvmSlotHeader& header = nvm_->header(slot);
    if (header.is_free()) continue;
    if (ssd_ == nullptr && header.page_id != slot)
      fail("NVM slot {} holds page {}: a basic-nvm page must live in the slot of its id", slot,
           header.page_id);
    // Never two slots for one page in normal operation; should there be two, the newer wins
    // and the older slot is freed (the clock would never pick it).
    if (void** other = page_table_.find(header.page_id)) {
      const SlotId other_slot = nvm_->slot_of(*other);
      if (nvm_->header(other_slot).lsn >= header.lsn) {
        stale.push_back(slot);
        continue;
      }
      stale.push_back(other_slot);
    }
    page_table_.insert_or_assign(header.page_id, nvm_->slot(slot));
  }
  if (!stale.empty()) nvm_->free_slots(stale);
}

BufferManager::Guard BufferManager::allocate_page() {
  // 1. A frame first, so that a failing allocation of a page id leaks nothing.
  FullFrame* frame = allocate_full();
  PageId page_id;
  try {
    if (ssd_ != nullptr) {
      page_id = ssd_->allocate();
    } else {
      const std::optional<SlotId> slot = nvm_->allocate_slot();
      if (!slot)
        fail("NVM full: all {} slots hold pages (basic-nvm keeps every page in NVM)",
             nvm_->slot_count());
      page_id = *slot;
      nvm_->write_header(*slot, page_id, 0, false);
      frame->header.nvm = nvm_->slot(*slot);
    }
  } catch (...) {
    pool_.release(&frame->header);
    throw;
  }
  // 2. A zeroed page carrying its id, fully resident and dirty: it exists nowhere else yet.
  unpoison_bytes(frame->data, kPageSize);
  std::memset(frame->data, 0, kPageSize);
  PageHeader header{};
  header.page_id = page_id;
  std::memcpy(frame->data, &header, sizeof(header));
  frame->header.page_id = page_id;
  frame->resident_all = true;
  frame->dirty_all = true;
  page_table_.insert_or_assign(page_id, &frame->header);
  return pin(&frame->header);
}

BufferManager::Guard BufferManager::fix_through_table(Swip& swip, Guard* parent, bool may_swizzle) {
  // 1. Find the page: a DRAM frame, an NVM slot (transition 2) or only on SSD (transition 1).
  const PageId page_id = swip.page_id();
  ++counters_.page_table_lookups;
  FrameHeader* frame;
  void** entry = page_table_.find(page_id);
  if (entry != nullptr && (nvm_ == nullptr || !nvm_->in_slot_area(*entry))) {
    frame = static_cast<FrameHeader*>(*entry);
  } else if (entry != nullptr) {
    frame = load_from_nvm(page_id, static_cast<std::byte*>(*entry));
  } else {
    if (ssd_ == nullptr) fail("page {} does not exist (not in any NVM slot)", page_id);
    frame = load_from_ssd(page_id);
  }
  // 2. Fix it, then swizzle the swip so the next fix skips the table.
  Guard guard = pin(frame);
  if (swizzling_ && may_swizzle) swizzle(swip, frame, parent);
  return guard;
}

BufferManager::Guard BufferManager::fix_page(PageId page_id) {
  Swip swip = Swip::from_page_id(page_id);
  return fix_through_table(swip, nullptr, false);
}

BufferManager::Guard BufferManager::install_page(PageId page_id, const std::byte* image) {
  // 1. The page's DRAM frame, or a new full frame backed by its NVM slot if it has one.
  if (ssd_ != nullptr) claim_ssd_page(page_id);
  void** entry = page_table_.find(page_id);
  FrameHeader* frame;
  if (entry != nullptr && (nvm_ == nullptr || !nvm_->in_slot_area(*entry))) {
    frame = static_cast<FrameHeader*>(*entry);
  } else {
    FullFrame* full = allocate_full();
    entry = page_table_.find(page_id);  // making room may have moved the page
    if (entry != nullptr && nvm_ != nullptr && nvm_->in_slot_area(*entry)) {
      full->header.nvm = static_cast<std::byte*>(*entry);
      nvm_->mark_content_checked(nvm_->slot_of(full->header.nvm));  // replaced whole below
    } else if (ssd_ == nullptr) {
      pool_.release(&full->header);
      fail("redo: page {} has no NVM slot", page_id);
    }
    unpoison_bytes(full->data, kPageSize);
    full->header.page_id = page_id;
    full->resident_all = true;
    page_table_.insert_or_assign(page_id, &full->header);
    frame = &full->header;
  }
  // 2. The image, dirty as a whole.
  Guard guard = pin(frame);
  std::memcpy(whole_page(frame), image, kPageSize);
  mark_dirty(frame, 0, kPageSize);
  return guard;
}

void BufferManager::claim_ssd_page(PageId page_id) {
  // Allocation is durable only at sync: a page allocated after it is claimed again. allocate()
  // gives the lowest free id, so the ids below page_id it hands out are given back.
  if (ssd_->is_allocated(page_id)) return;
  std::vector<PageId> below;
  for (PageId id = ssd_->allocate(); id != page_id; id = ssd_->allocate()) {
    if (id > page_id) {
      ssd_->free(id);
      break;
    }
    below.push_back(id);
  }
  for (PageId id : below) ssd_->free(id);
}

Lsn BufferManager::write_back_lsn(FrameHeader* frame) const {
  constexpr Lsn kUnknown = ~Lsn{0};
  if (frame->is_mini()) {
    const MiniPage* mini = as_mini(frame);
    if (frame->mini_count == 0 || mini->slots[0] != 0) return kUnknown;
    return page_lsn(mini->data);
  }
  const FullFrame* full = as_full(frame);
  return full->is_resident(0, 0) ? page_lsn(full->data) : kUnknown;
}

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
    full->resident_all = true;
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
  frame->resident_all = true;
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
  if (frame->resident.full()) frame->resident_all = true;
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
  // 2. Merge the missing lines into the sorted slots from the back, so that every resident
  //    line moves up before its place is overwritten; then load the new lines.
  const std::size_t new_count = count + missing_count;
  unpoison_bytes(mini->data + count * kCacheLineSize, missing_count * kCacheLineSize);
  std::uint16_t dirty = 0;
  std::ptrdiff_t old_slot = static_cast<std::ptrdiff_t>(count) - 1;
  std::ptrdiff_t next_missing = static_cast<std::ptrdiff_t>(missing_count) - 1;
  for (std::size_t slot = new_count; slot-- > 0;) {
    const bool take_old =
        next_missing < 0 || (old_slot >= 0 && mini->slots[old_slot] > missing[next_missing]);
    if (take_old) {
      if (static_cast<std::size_t>(old_slot) != slot) {
        std::memcpy(mini->data + slot * kCacheLineSize, mini->data + old_slot * kCacheLineSize,
                    kCacheLineSize);
        mini->slots[slot] = mini->slots[old_slot];
      }
      if (mini->header.mini_dirty & (1u << old_slot))
        dirty = static_cast<std::uint16_t>(dirty | (1u << slot));
      --old_slot;
    } else {
      mini->slots[slot] = missing[next_missing--];
      nvm_device_->read(mini->data + slot * kCacheLineSize,
                        mini->header.nvm + std::size_t{mini->slots[slot]} * kCacheLineSize,
                        kCacheLineSize);
    }
  }
  mini->header.mini_count = static_cast<std::uint8_t>(new_count);
  mini->header.mini_dirty = dirty;
  const std::size_t slot = mini->find(first);
  return mini->data + slot * kCacheLineSize + offset % kCacheLineSize;
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
    full->header.set(static_cast<std::uint8_t>(
        from.flags.load(std::memory_order_relaxed) &
        (frame_flag::kSwizzled | frame_flag::kOwnerIsRoot)));
    *owning_swip(&full->header) = Swip::from_frame(&full->header);
    from.clear(frame_flag::kSwizzled | frame_flag::kOwnerIsRoot);
  }
  // 4. The mini page forwards until its last guard leaves; its fixes pin the full frame.
  full->header.fix_count = from.fix_count;
  full->header.set(frame_flag::kReferenced);
  mini->full = full;
  from.set(frame_flag::kPromoted);
  from.bump_version();
  ++counters_.mini_page_promotions;
  return full;
}

void BufferManager::release_promoted(MiniPage* mini) {
  --mini->full->header.fix_count;
  if (mini->header.fix_count == 0) pool_.release(&mini->header);
}

Swip* BufferManager::owning_swip(FrameHeader* frame) const {
  assert(frame->has(frame_flag::kSwizzled));
  if (frame->has(frame_flag::kOwnerIsRoot)) return frame->owner.root_swip;
  return reinterpret_cast<Swip*>(frame->owner.parent->data + frame->swip_offset);
}

void BufferManager::swizzle(Swip& swip, FrameHeader* child, Guard* parent) {
  // Only one swip owns a page, and only a full frame (whose bytes never move) may hold a
  // swizzled swip: a mini page's children stay unswizzled until it is promoted.
  if (child->has(frame_flag::kSwizzled)) return;
  auto* address = reinterpret_cast<std::byte*>(&swip);
  if (parent == nullptr) {
    child->owner.root_swip = &swip;
    child->set(frame_flag::kOwnerIsRoot);
  } else {
    FrameHeader* parent_frame = parent->frame_;
    if (parent_frame->is_mini()) {
      if (as_mini(parent_frame)->full == nullptr) return;
      parent_frame = &as_mini(parent_frame)->full->header;
    }
    FullFrame* full = as_full(parent_frame);
    if (address < full->data || address + sizeof(Swip) > full->data + kPageSize) return;
    child->owner.parent = full;
    child->swip_offset = static_cast<std::uint16_t>(address - full->data);
    ++full->swizzled_children;
  }
  child->set(frame_flag::kSwizzled);
  swip = Swip::from_frame(child);
}

void BufferManager::unswizzle(FrameHeader* frame) {
  Swip* swip = owning_swip(frame);
  assert(swip->is_swizzled() && swip->frame<FrameHeader>() == frame);
  *swip = Swip::from_page_id(frame->page_id);  // restores the bytes the page had: not dirty
  if (!frame->has(frame_flag::kOwnerIsRoot)) --frame->owner.parent->swizzled_children;
  frame->owner.parent = nullptr;
  frame->clear(frame_flag::kSwizzled | frame_flag::kOwnerIsRoot);
}

void BufferManager::move_swips(Guard& destination, std::uint32_t offset, Guard* source_parent,
                               Swip* swips, std::uint32_t count) {
  (void)source_parent;  // the children's headers know their owners
  if (count == 0) return;
  // 1. Swips live only on full frames, whose bytes never move: promote a mini destination.
  //    This may evict; evictions unswizzle through the (stable) source locations first.
  FrameHeader* frame = destination.frame_;
  if (frame->is_mini())
    frame =
        &(as_mini(frame)->full != nullptr ? as_mini(frame)->full : promote(as_mini(frame)))->header;
  FullFrame* target = as_full(frame);
  const std::uint32_t bytes = count * static_cast<std::uint32_t>(sizeof(Swip));
  std::byte* out = make_resident(frame, offset, bytes);
  mark_dirty(frame, offset, bytes);
  // 2. Copy out (the ranges may overlap), retarget swizzled children, copy in.
  std::array<Swip, kPageSize / sizeof(Swip)> moved;
  std::memcpy(moved.data(), swips, bytes);
  // (All-zero bytes, e.g. the untouched tail of a swip array, are no pointer.)
  auto points_to_frame = [](Swip swip) { return swip.is_swizzled() && swip.raw() != 0; };
  for (std::uint32_t i = 0; i < count; ++i) {
    if (!points_to_frame(moved[i])) continue;
    FrameHeader* child = moved[i].frame<FrameHeader>();
    if (!child->has(frame_flag::kOwnerIsRoot)) --child->owner.parent->swizzled_children;
    child->owner.parent = target;
    child->swip_offset = static_cast<std::uint16_t>(offset + i * sizeof(Swip));
    child->clear(frame_flag::kOwnerIsRoot);
    ++target->swizzled_children;
  }
  std::memcpy(out, moved.data(), bytes);
  // 3. Vacated source swips must not keep a pointer that could leave DRAM: restore page ids.
  for (std::uint32_t i = 0; i < count; ++i) {
    auto* source = reinterpret_cast<std::byte*>(swips + i);
    if (!points_to_frame(moved[i]) || (source >= out && source < out + bytes)) continue;
    const Swip page_id = Swip::from_page_id(moved[i].frame<FrameHeader>()->page_id);
    std::memcpy(source, &page_id, sizeof(page_id));
  }
}

Swip BufferManager::swip_of(const Guard& guard) const {
  return Swip::from_page_id(guard.page_id());
}

void BufferManager::free_page(Guard&& guard) {
  // 1. Resolve a promoted mini page to its full frame; this guard must be the only fix.
  FrameHeader* frame = guard.frame_;
  if (frame->is_mini() && as_mini(frame)->full != nullptr) {
    FullFrame* full = as_mini(frame)->full;
    guard.release();
    ++full->header.fix_count;
    frame = &full->header;
  } else {
    guard.frame_ = nullptr;
  }
  if (frame->fix_count != 1)
    fail("free_page: page {} is still fixed by another guard", frame->page_id);
  if (!frame->is_mini() && as_full(frame)->swizzled_children != 0)
    fail("free_page: page {} still has swizzled children", frame->page_id);
  // 2. Detach from the owning swip (the caller removes or overwrites it).
  if (frame->has(frame_flag::kSwizzled)) {
    Swip* swip = owning_swip(frame);
    if (*swip == Swip::from_frame(frame)) *swip = Swip::from_page_id(frame->page_id);
    if (!frame->has(frame_flag::kOwnerIsRoot)) --frame->owner.parent->swizzled_children;
    frame->clear(frame_flag::kSwizzled | frame_flag::kOwnerIsRoot);
  }
  // 3. Give back the page's homes and its frame.
  const PageId page_id = frame->page_id;
  if (frame->nvm != nullptr) nvm_->free_slot(nvm_->slot_of(frame->nvm));
  if (ssd_ != nullptr) ssd_->free(page_id);
  page_table_.erase(page_id);
  admission_set_.take(page_id);
  frame->fix_count = 0;
  frame->bump_version();
  pool_.release(frame);
}

FullFrame* BufferManager::allocate_full() {
  for (;;) {
    if (FullFrame* frame = pool_.try_allocate_full()) return frame;
    if (!evict_for(Need::kFullFrame))
      fail("DRAM buffer pool exhausted: all {} frames are fixed or hold swizzled children",
           pool_.slab_count());
  }
}

MiniPage* BufferManager::allocate_mini() {
  for (;;) {
    if (MiniPage* mini = pool_.try_allocate_mini()) return mini;
    if (!evict_for(Need::kAnything))
      fail("DRAM buffer pool exhausted: all {} frames are fixed or hold swizzled children",
           pool_.slab_count());
  }
}

bool BufferManager::evictable(FrameHeader* frame) const {
  if (frame->fix_count != 0 || frame->has(frame_flag::kPromoted)) return false;
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
      evict(frame);
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
      } else if (need == Need::kAnything) {
        evict(frame);
        return true;
      }
    }
    if (need == Need::kFullFrame && all_cold) {
      for (std::size_t i = 0; i < FramePool::kMinisPerSlab; ++i)
        if (pool_.minis_in_use(slab) & (1u << i)) evict(&pool_.mini_page(slab, i)->header);
      return true;
    }
  }
  return false;
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
  // 3. Free the frame.
  ++counters_.dram_evictions;
  frame->bump_version();
  pool_.release(frame);
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
    const MiniPage* mini = as_mini(frame);
    for (std::size_t i = 0; i < frame->mini_count; ++i)
      if (frame->mini_dirty & (1u << i))
        add_lines(mini->data + i * kCacheLineSize, mini->slots[i], 1);
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

std::byte* BufferManager::admit_to_nvm(PageId page_id, const std::byte* page, bool dirty_vs_ssd) {
  // A free slot is written whole, then its header: no staging, as nothing there is in use.
  const std::optional<SlotId> slot_id = take_nvm_slot();
  if (!slot_id) return nullptr;
  std::byte* slot = nvm_->slot(*slot_id);
  nvm_device_->write(slot, page, kPageSize);
  nvm_device_->persist(slot, kPageSize);
  nvm_->write_header(*slot_id, page_id, page_lsn(page), dirty_vs_ssd, nvm_page_checksum(page));
  nvm_referenced_[*slot_id] = 1;
  ++counters_.nvm_admissions;
  return slot;
}

void BufferManager::write_to_ssd(PageId page_id, const std::byte* page) {
  if (options_.double_write != nullptr)
    options_.double_write->stage_ssd_page(page_id, page_lsn(page), page);
  ssd_->write(page_id, page);
}

void BufferManager::sync_ssd() {
  ssd_->sync();
  if (options_.double_write != nullptr) options_.double_write->ssd_synced();
}

bool BufferManager::should_admit(PageId page_id) {
  const std::uint64_t unreserved_in_use = nvm_->slots_in_use() + nvm_reserved_slots_;
  if (options_.admit_while_nvm_has_free_slots && unreserved_in_use < nvm_->slot_count()) {
    admission_set_.take(page_id);
    ++admission_stats_.admitted_to_free_slot;
    return true;
  }
  if (admission_set_.take(page_id)) {
    ++admission_stats_.admitted_from_set;
    return true;
  }
  return false;
}

std::optional<SlotId> BufferManager::take_nvm_slot() {
  // The slots of an eviction round are reserved for the next admissions: were they free to
  // all, the free-slot rule (meant for warm-up) would admit every page after each round.
  if (nvm_->slots_in_use() + nvm_reserved_slots_ >= nvm_->slot_count()) {
    if (nvm_reserved_slots_ == 0) nvm_reserved_slots_ = evict_nvm_pages(nvm_eviction_batch_);
    if (nvm_reserved_slots_ == 0) return std::nullopt;
    --nvm_reserved_slots_;
  }
  return nvm_->allocate_slot();
}

std::size_t BufferManager::evict_nvm_pages(std::size_t count) {
  // Transition 6, for up to `count` pages at once.
  if (nvm_ == nullptr || ssd_ == nullptr || count == 0) return 0;
  // 1. Victims: clock over slots with second chance, skipping free slots, pages in DRAM now
  //    (their slot backs them) and the slot being loaded. Back at the first victim, every
  //    slot has been seen since: stop before picking one twice.
  const auto slots = static_cast<SlotId>(nvm_->slot_count());
  std::vector<SlotId>& victims = nvm_victims_;
  victims.clear();
  for (std::size_t step = 0; step < 2 * std::size_t{slots} + 1 && victims.size() < count; ++step) {
    const SlotId slot_id = nvm_hand_;
    if (!victims.empty() && slot_id == victims.front()) break;
    nvm_hand_ = slot_id + 1 == slots ? 0 : slot_id + 1;
    const NvmSlotHeader& header = nvm_->header(slot_id);
    if (header.is_free() || slot_id == loading_slot_) continue;
    void** entry = page_table_.find(header.page_id);
    if (entry == nullptr || *entry != nvm_->slot(slot_id)) continue;
    if (nvm_referenced_[slot_id] != 0) {
      nvm_referenced_[slot_id] = 0;
      continue;
    }
    victims.push_back(slot_id);
  }
  // 2. The pages SSD lacks go there, made durable by one sync before any slot is freed: an
  //    NVM copy may hold changes older than the last checkpoint, which the log no longer has.
  bool wrote = false;
  for (const SlotId slot_id : victims) {
    const NvmSlotHeader& header = nvm_->header(slot_id);
    if (!header.dirty_vs_ssd()) continue;
    // Checked first: SSD would give a corrupt page a checksum of its own.
    if (!nvm_->content_checked(slot_id)) nvm_->check_content(slot_id);
    nvm_device_->charge_read(nvm_->slot(slot_id), kPageSize);
    ssd_->write(header.page_id, nvm_->slot(slot_id));
    wrote = true;
  }
  if (wrote) sync_ssd();
  // 3. Only now the slots go (their headers persisted free, one fence for all).
  for (const SlotId slot_id : victims) page_table_.erase(nvm_->header(slot_id).page_id);
  nvm_->free_slots(victims);
  counters_.nvm_evictions += victims.size();
  return victims.size();
}

void BufferManager::flush_all() {
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

void BufferManager::write_back_all() {
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
  // 2. Each dirty page to its home, the log first (write-ahead rule): an NVM-backed page its
  //    dirty lines to its slot, any other page the whole page to SSD. Then it is clean.
  for_each_frame(pool_, [&](FrameHeader* frame) {
    if (frame->has(frame_flag::kPromoted)) return;
    if (frame->is_mini()) {
      if (frame->mini_dirty == 0) return;
      if (options_.before_write_back) options_.before_write_back(write_back_lsn(frame));
      persist_dirty_lines(frame, {}, nullptr);
      frame->mini_dirty = 0;
      return;
    }
    FullFrame* full = as_full(frame);
    if (!full->dirty_all && full->dirty.none()) return;
    if (options_.before_write_back) options_.before_write_back(write_back_lsn(frame));
    if (frame->nvm != nullptr) {
      persist_dirty_lines(frame, swips_of(full), scratch.data());
    } else {
      // A page that never was in NVM goes to a free NVM slot while the free-slot policy
      // admits there (it stays in DRAM, now backed by its slot: later checkpoints write its
      // dirty lines only; no NVM page is evicted for it), else whole to SSD.
      assert(full->resident_all && full->dirty_all && ssd_ != nullptr);
      const std::byte* page =
          unswizzled_lines(full, 0, kLinesPerPage, swips_of(full), scratch.data());
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
  });
  // 3. One SSD sync for the page writes (also making allocations and frees durable), then
  //    checksums for the NVM pages written line by line since the last checkpoint.
  if (ssd_ != nullptr) sync_ssd();
  if (nvm_ != nullptr) nvm_->seal_pages();
}

Counters BufferManager::counters() const {
  Counters total = counters_;
  for (const ThreadReads& reads : thread_reads_) {
    total.swizzled_hits += reads.swizzled_hits.load(std::memory_order_relaxed);
    total.page_table_lookups += reads.page_table_lookups.load(std::memory_order_relaxed);
  }
  if (nvm_ != nullptr) total += nvm_->device().counters();
  if (ssd_ != nullptr) total += ssd_->counters();
  return total;
}

BufferMemoryUsage BufferManager::memory_usage() const {
  BufferMemoryUsage usage;
  usage.dram_bytes_used = pool_.bytes_in_use();
  usage.dram_budget_bytes = pool_.budget_bytes();
  usage.page_table_bytes = page_table_.memory_bytes();
  usage.admission_set_bytes = admission_set_.memory_bytes();
  usage.nvm_slots_used = nvm_ != nullptr ? nvm_->slots_in_use() : 0;
  return usage;
}

BufferManager::Location BufferManager::location(PageId page_id) const {
  const void* const* entry = page_table_.find(page_id);
  if (entry == nullptr)
    return ssd_ != nullptr && ssd_->is_allocated(page_id) ? Location::kSsd : Location::kNowhere;
  if (nvm_ != nullptr && nvm_->in_slot_area(*entry)) return Location::kNvm;
  return static_cast<const FrameHeader*>(*entry)->is_mini() ? Location::kDramMini
                                                            : Location::kDramFull;
}

}  // namespace tristore
