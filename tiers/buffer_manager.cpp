#include "tiers/buffer_manager.hpp"

#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "common/page_format.hpp"
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
  if (options.nvm != nullptr && options.ssd != nullptr &&
      options.admission_set_size > AdmissionSet::kMaxEntriesPerNvmSlot * options.nvm->slot_count())
    fail("admission set of {} entries: at most {} per NVM slot ({} slots)",
         options.admission_set_size, AdmissionSet::kMaxEntriesPerNvmSlot,
         options.nvm->slot_count());
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
      // Every page in the table has an NVM slot or a full frame (a mini page's page has a
      // slot, which is not evicted while the page is in DRAM), so slabs plus slots bound it.
      page_table_(pool_.slab_count() + (nvm_ != nullptr ? nvm_->slot_count() : 0)),
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
    if (void* const* other = page_table_.find(header.page_id)) {
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
  FullFrame* frame = make_page();
  page_table_.insert_or_assign(frame->header.page_id, &frame->header);
  return pin(&frame->header);
}

FullFrame* BufferManager::make_page() {
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
      nvm_->claim_for_new_page(*slot, page_id);
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
  frame->mark_all_resident();
  frame->dirty_all = true;
  frame->dirty_round = write_back_round_.load(std::memory_order_acquire);
  return frame;
}

FrameHeader* BufferManager::find_or_load(PageId page_id, PageLoad* beside) {
  // A DRAM frame, an NVM slot (transition 2) or only on SSD (transition 1).
  ++counters_.page_table_lookups;
  void* const* entry = page_table_.find(page_id);
  if (entry != nullptr && (nvm_ == nullptr || !nvm_->in_slot_area(*entry))) {
    auto* frame = static_cast<FrameHeader*>(*entry);
    if (frame->has(frame_flag::kLoading)) [[unlikely]] {
      // Only readers and changes share the database latch with a read under way, and they
      // wait for it.
      assert(beside != nullptr && "a page read outside the exclusive latch");
      *beside = PageLoad{as_full(frame), false, {}};
      return nullptr;
    }
    return frame;
  }
  if (entry != nullptr) {
    // Cache-line-grained: an empty frame. Page-grained: the copy runs outside the miss latch
    // too, as an SSD read does.
    auto* slot = static_cast<std::byte*>(*entry);
    if (beside == nullptr || cache_line_grained_) return load_from_nvm(page_id, slot);
    *beside = PageLoad{begin_page_load(page_id, slot), true, {}};
    return nullptr;
  }
  if (ssd_ == nullptr) fail("page {} does not exist (not in any NVM slot)", page_id);
  if (beside == nullptr) return load_from_ssd(page_id);
  *beside = PageLoad{begin_page_load(page_id, nullptr), true, {}};
  return nullptr;
}

BufferManager::Guard BufferManager::fix_through_table(Swip& swip, Guard* parent, bool may_swizzle) {
  // 1. Find the page, loaded into DRAM if need be.
  FrameHeader* frame = find_or_load(swip.page_id(), nullptr);
  // 2. Fix it, then swizzle the swip so the next fix skips the table.
  Guard guard = pin(frame);
  if (swizzling_ && may_swizzle) swizzle(swip, frame, parent != nullptr ? parent->frame_ : nullptr);
  return guard;
}

BufferManager::Guard BufferManager::fix_page(PageId page_id) {
  Swip swip = Swip::from_page_id(page_id);
  return fix_through_table(swip, nullptr, false);
}

BufferManager::Guard BufferManager::install_page(PageId page_id, const std::byte* image) {
  // 1. The page's DRAM frame, or a new full frame backed by its NVM slot if it has one.
  if (ssd_ != nullptr) claim_ssd_page(page_id);
  void* const* entry = page_table_.find(page_id);
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
    full->mark_all_resident();
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

std::uint64_t BufferManager::give_back_pages(std::span<const PageId> pages) {
  std::vector<SlotId> slots;
  std::uint64_t given_back = 0;
  for (const PageId page_id : pages) {
    bool had_any = false;
    // 1. Its page table entry: an NVM slot, or a DRAM frame (and the frame's slot).
    if (void* const* entry = page_table_.find(page_id)) {
      had_any = true;
      if (nvm_ != nullptr && nvm_->in_slot_area(*entry)) {
        slots.push_back(nvm_->slot_of(*entry));
      } else {
        auto* frame = static_cast<FrameHeader*>(*entry);
        if (frame->fix_count != 0 || frame->has(frame_flag::kSwizzled))
          fail("restart: page {}, in no tree, is still fixed or swizzled", page_id);
        if (frame->nvm != nullptr) slots.push_back(nvm_->slot_of(frame->nvm));
        frame->bump_version();
        pool_.release(frame);
      }
      page_table_.erase(page_id);
    }
    admission_set_.take(page_id);
    // 2. Its SSD page, should the last sync have left it allocated.
    if (ssd_ != nullptr && ssd_->is_allocated(page_id)) {
      ssd_->free(page_id);
      had_any = true;
    }
    given_back += had_any ? 1 : 0;
  }
  if (!slots.empty()) nvm_->free_slots(slots);
  return given_back;
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
    guard.whole_ = nullptr;
  }
  if (frame->fix_count != 1)
    fail("free_page: page {} is still fixed by another guard", frame->page_id);
  if (!frame->is_mini() && as_full(frame)->swizzled_children != 0)
    fail("free_page: page {} still has swizzled children", frame->page_id);
  // 2. Detach from the owning swip (the caller removes or overwrites it).
  if (frame->has(frame_flag::kSwizzled)) {
    Swip* swip = owning_swip(frame);
    if (*swip == Swip::from_frame(frame)) Swip::store(*swip, Swip::from_page_id(frame->page_id));
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

Counters BufferManager::counters() const {
  Counters total = counters_;
  for (const ThreadReads& reads : thread_reads_) {
    total.swizzled_hits += reads.swizzled_hits.load(std::memory_order_relaxed);
    total.page_table_lookups += reads.page_table_lookups.load(std::memory_order_relaxed);
    total.reader_appends += reads.appends.load(std::memory_order_relaxed);
    total.leaf_reads_retried += reads.leaf_reads_retried.load(std::memory_order_relaxed);
  }
  total.reader_load_waits += reader_load_waits();
  changes_beside_.add_to(total);
  if (nvm_ != nullptr) total += nvm_->device().counters();
  if (ssd_ != nullptr) total += ssd_->counters();
  return total;
}

std::uint64_t BufferManager::reader_load_waits() const {
  std::uint64_t total = 0;
  for (const ThreadReads& reads : thread_reads_)
    total += reads.load_waits.load(std::memory_order_relaxed);
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
